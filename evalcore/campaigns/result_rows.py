"""How a question's outcome is written to the store and read back, compactly and with nothing lost.

Retrieved passages repeat across the questions of a campaign (the sample's 305 passages serve
8,000 questions) and across the campaigns run on one corpus, so each distinct passage is stored once
per store (`passage_texts`, evalcore.store: found again by its content, keyed by a small
number) and a question stores its ranked list as those keys with the scores:
`{"k": [keys], "s": [scores], "st": {stage: [scores]}}`. Signatures are the same for every
question of a campaign, so they are stored once (`campaign_signatures`) and a question keeps only
those that differ. The campaign's counters move by the batch just written (reading every stored
row to count them made a campaign's cost grow with the square of its size). A re-judge
(evalcore.campaigns.rejudging) writes no answer, ranked list, context, sources or queries: reading
its rows takes them from the judged campaign's row at the same position.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple, cast

from evalcore.campaigns.records import Outcome, Question, QuestionResult, retrieved_to_json, sources_of
from evalcore.metrics.graded import current_name, stored_column, stored_values
from evalcore.runtime.memory import no_cycle_collection
from evalcore.store import (
    DICTIONARY_FROM,
    KEYS_HEAD,
    Connection,
    Row,
    Store,
    StoredPassage,
    TextDictionary,
    campaign_rows,
    dumps,
    last_dictionary,
    passage_sweeps,
    put_dictionary,
    put_passages,
    ranked_ids,
    read_passages,
    result_table,
    storable,
    stored_ids,
)
from evalcore.store.packing import (
    ANSWER,
    MARKS,
    MEASURES,
    RANKED,
    Ranked,
    deflate,
    pack_ranked,
    pack_row,
    pack_values,
    packed_answer,
    ranked_keys,
    sections,
    unpack_ranked,
    unpack_values,
)
from evalcore.store.result_table import answer_cells, packed_answers
from evalcore.targets import Retrieved

PassageKey = tuple[int | None, str, str, str]  # pid, title, text, source: a hit's fields as `_CONTENT` takes them
# A hit's passage content and its score and stages, each taken by one call in C (the content's tuple built field by
# field in Python was two fifths of ranked_of's instructions).
_CONTENT = itemgetter(*(Retrieved._fields.index(name) for name in ("pid", "title", "text", "source")))
_SCORE = itemgetter(Retrieved._fields.index("score"))
_STAGES = itemgetter(Retrieved._fields.index("stages"))


@dataclass
class Passages:
    """A writer's retrieved passages: the store's id of each passage already stored, by content, and the passages
    met in the batch being written, under keys of their own (-1, -2, ...) until the write gives them their ids."""

    by_key: dict[int, Retrieved] = field(default_factory=dict)
    keys: dict[PassageKey, int] = field(default_factory=dict)
    fresh: dict[PassageKey, int] = field(default_factory=dict)

    def key(self, hit: Retrieved, new: list[tuple[int, Retrieved]]) -> int:
        """The id of a hit's passage; a passage not stored yet gets the batch's next key and joins `new`."""
        key = self.keys.get(passage := _CONTENT(hit))
        if key is None:
            key = self.fresh.get(passage)
            if key is None:
                key = self.fresh[passage] = -1 - len(self.fresh)
                self.by_key[key] = Retrieved(hit.pid, hit.title, hit.text, 0.0, {}, hit.source)
                new.append((key, hit))
        return key

    def stored(self, ids: Mapping[int, int]) -> None:
        """The batch's passages stored under these ids (by their batch keys): known from now on (a write tried
        again gives its ids again, and they win)."""
        for content, key in self.fresh.items():
            self.keys[content] = ids[key]
            self.by_key[ids[key]] = self.by_key[key]

    def forget_gone(self, stored: set[int]) -> dict[int, Retrieved]:
        """Forget the passages known by ids no longer stored (a deleted campaign's, removed since): by their old ids
        (a passage met again is looked up by its content)."""
        gone = {key: self.by_key[key] for key in set(self.keys.values()) if key not in stored}
        if gone:
            self.keys = {content: key for content, key in self.keys.items() if key not in gone}
        return gone

    def restored(self, gone: Mapping[int, Retrieved], ids: Mapping[int, int]) -> None:
        """The forgotten passages stored again under these ids (by their old ids)."""
        for old, hit in gone.items():
            self.keys[_CONTENT(hit)] = ids[old]
            self.by_key[ids[old]] = hit

    def next_batch(self) -> None:
        """Forget the last batch's keys (its passages are known by their ids, or, when its write failed, met again
        as new)."""
        for key in self.fresh.values():
            self.by_key.pop(key, None)
        self.fresh.clear()


def ranked_by_key(store: Store, ranked: Sequence[str | bytes]) -> dict[int, Retrieved]:
    """The stored passages these ranked lists (their stored texts, or packed bytes) name, by id: those alone."""
    ids = {key for text in ranked
           if (keys := ranked_keys(text) if type(text) is bytes else ranked_ids(cast(str, text))) is not None
           for key in keys}
    return {key: Retrieved(pid, title, text, 0.0, {}, source)
            for key, pid, source, title, text in read_passages(store, ids)}


def load_signatures(store: Store, campaign_id: str) -> dict[str, str]:
    """The signatures shared by a campaign's questions (under the measures' documented names)."""
    rows = result_table.signature_rows(store, campaign_id)
    return {current_name(row["name"]): current_name(row["signature"]) for row in rows}


# How a ranked list was stored before packed rows (schema versions 16 to 27), as rows written then are read:
#   {"k": [passage keys], "f": [scores], "st": {stage: [scores] or DIGITS}}
# "f" holds float32 scores in their shortest text, read back as those values (in their float64 form, as the
# retrievers give them); any other list of scores is "s", at full float64 precision. A stage whose every score is the
# list's score rounded to DIGITS digits is that number of digits. Rows written before keep "s" and every stage's
# list. From shared passages on (schema version 25), float32 scores are "g": their 4 bytes each (little-endian) in
# base64. From schema version 26 on, a stage's list of scores of at most six decimal digits may be a text: those
# scores in millionths, as 4-byte integers (little-endian) in base64. From schema version 28 on, a new row's ranked
# list is packed (evalcore.store.packing).


def ranked_of(hits: Sequence[Retrieved], passages: Passages, new: list[tuple[int, Retrieved]]) -> Ranked:
    """A ranked list as the store packs it: passage keys (a passage new to the store under its batch key), scores and
    each stage's scores (stages in the order they appear; None where a hit has no score at that stage)."""
    stages = list(map(_STAGES, hits))
    lists = _same_stages(stages)
    if lists is None:
        lists = {}
        for position, own in enumerate(stages):
            for name, value in own.items():
                lists.setdefault(name, [None] * len(hits))[position] = value
    # Most hits' passages are stored already: found by their content at once (a new one, or a passage stored under id
    # 0, sends the list through the loop, which keys the new ones and keeps the ids found).
    known: list[int | None] = list(map(passages.keys.get, map(_CONTENT, hits)))
    keys = cast(list[int], known) if all(known) else [passages.key(hit, new) if key is None else key
                                                      for key, hit in zip(known, hits, strict=True)]
    return Ranked(keys, list(map(_SCORE, hits)), lists)


def _same_stages(stages: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]] | None:
    """Each stage's scores by name when every hit has the same stages (a retriever's), in the first hit's order; None
    when they differ. As many stages as the first hit's each, and each of its names found in every hit: the same."""
    if len(set(map(len, stages))) > 1:
        return None
    try:
        return {name: list(map(itemgetter(name), stages)) for name in (stages[0] if stages else ())}
    except KeyError:
        return None


def unpacked_floats(text: str) -> list[float]:
    """float32 scores back from their bytes in base64 ("g"), in their float64 form."""
    return _array_of("f", text).tolist()


def _array_of(typecode: str, text: str) -> array[Any]:
    """An array of that type from its bytes (little-endian) in base64."""
    values = array(typecode)
    values.frombytes(base64.b64decode(text))
    if sys.byteorder == "big":
        values.byteswap()
    return values


def unpacked_micros(text: str) -> list[float]:
    """A stage's scores back from their millionths' bytes in base64."""
    return [value / 1e6 for value in _array_of("i", text)]


def single_floats(values: Sequence[float]) -> list[float]:
    """Each value rounded to the nearest float32, in its float64 form (as numpy's float32 `tolist` gives it)."""
    return array("f", values).tolist()


def decode_ranked(text: str | bytes, passages: Mapping[int, Retrieved]) -> tuple[Retrieved, ...]:
    """The ranked list back (a list of passage objects in rows written before passages were shared; a packed one's
    bytes in rows written from schema version 28 on)."""
    if type(text) is bytes:
        ranked = unpack_ranked(text)
        return _hits(ranked.keys, ranked.scores, ranked.stages.items(), passages)
    data = json.loads(text)
    if isinstance(data, list):
        return tuple(Retrieved(h["pid"], h.get("title") or "", h.get("text") or "", h.get("score") or 0.0,
                               dict(h.get("stages") or {}), h.get("source") or "") for h in data)
    scores = data["s"] if "s" in data else unpacked_floats(data["g"]) if "g" in data else single_floats(data["f"])
    lists = []
    for name, values in data["st"].items():
        if isinstance(values, int):  # the scores rounded to that many digits
            values = [round(score, values) for score in scores]
        elif isinstance(values, str):  # the scores in millionths (unpacked_micros)
            values = unpacked_micros(values)
        lists.append((name, values))
    return _hits(data["k"], scores, lists, passages)


def _hits(keys: Sequence[int], scores: Sequence[float], lists: Iterable[tuple[str, Sequence[Any]]],
          passages: Mapping[int, Retrieved]) -> tuple[Retrieved, ...]:
    """The hits of a ranked list: each stored passage with its score and stages."""
    stages: list[dict[str, float]] = [{} for _ in scores]
    for name, values in lists:
        for position, value in enumerate(values):
            if value is not None:
                stages[position][name] = value
    # tuple.__new__ builds each hit in one step (NamedTuple._replace takes five times as long); the fields
    # after the stages (source, file name, any added later) are the stored passage's.
    new = tuple.__new__
    return tuple(new(Retrieved, (*hit[:3], score, own, *hit[5:]))
                 for hit, score, own in zip(map(passages.__getitem__, keys), scores, stages, strict=True))


def passages_of(text: str | bytes, passages: Mapping[int, Retrieved]) -> tuple[Retrieved, ...]:
    """The ranked list's passages as the campaign stored them, without this question's scores."""
    if type(text) is bytes:
        return tuple(map(passages.__getitem__, ranked_keys(text)))
    data = json.loads(text)
    if isinstance(data, list):
        return decode_ranked(text, passages)
    return tuple(map(passages.__getitem__, data["k"]))


def ranked_passages(texts: Sequence[str | bytes], passages: Mapping[int, Retrieved]) -> list[tuple[Retrieved, ...]]:
    """passages_of each text, the passage keys of every row decoded in one call (the scores after them are not read)."""
    shared = [text[len(KEYS_HEAD):text.index("]")] if type(text) is str and text.startswith(KEYS_HEAD) else None
              for text in texts]
    keys = iter(json.loads("[" + ",".join(f"[{k}]" for k in shared if k is not None) + "]"))
    return [tuple(map(passages.__getitem__, next(keys))) if k is not None else passages_of(text, passages)
            for k, text in zip(shared, texts, strict=True)]


class NotOwner(Exception):
    """The campaign was deleted or taken over by another session: this one must not write."""


class ResultWriter:
    """Writes a runner's finished questions: results, new passages, new signatures, counters; one transaction.

    A question is written once per session: an outcome that arrives again (a cluster that ran its
    task twice, after a worker died) is skipped, and the counters stay true.
    """

    def __init__(self, store: Store, campaign_id: str, owner_token: str = "", *, shared: bool = False) -> None:
        self.store, self.campaign_id, self.owner_token = store, campaign_id, owner_token
        self.shared = shared  # a re-judge: the answers are another campaign's rows, not written again
        self.passages = Passages()  # filled as passages are met: one stored before is found by its content
        self.signatures = load_signatures(store, campaign_id)
        # What new passages' texts are compressed with: the store's, or one learnt from the first batch of passages.
        self.dictionary = last_dictionary(store)
        self.written: set[int] = set()  # positions written in this session
        # The store's count of passage sweeps when this writer last checked the passages it knows by id (a write
        # finding another count checks them again: a deleted campaign's passages no campaign named are gone).
        self.sweeps = 0
        self.checked_sweeps: int | None = None

    def rows(self, finished: list[tuple[Question, Outcome]]) -> tuple[list[tuple[Any, ...]],
                                                                      list[tuple[int, StoredPassage]],
                                                                      list[tuple[str, str, str]]]:
        """The result rows, the passages (by their batch keys) and the signatures this batch adds; the rows name
        the new passages by their batch keys, which `write` replaces with the store's ids."""
        new_passages: list[tuple[int, Retrieved]] = []
        self.passages.next_batch()
        if self.checked_sweeps is not None:  # the last write checked the known passages at this count
            self.sweeps, self.checked_sweeps = self.checked_sweeps, None
        new_signatures: dict[str, str] = {}
        now, rows = time.time(), []
        fresh = {question.position: (question, o) for question, o in finished if question.position not in self.written}
        for question, o in fresh.values():
            own = {}
            for name, sig in o.signatures.items():
                shared = self.signatures.get(name)
                if shared is None:
                    self.signatures[name] = new_signatures[name] = sig
                elif shared != sig:
                    own[name] = sig
            answer, ranked, context, sources, latency, queries = self._answer_cells(o, new_passages)
            pending = Pending(ranked, pack_values(o.measures), pack_values(o.results), answer)
            cost = o.cost
            rows.append((
                self.campaign_id, question.position, question.qid, answer, "", context, sources,
                "{}", dumps(own), "{}",
                dumps({name: verdict.to_dict() for name, verdict in o.judges.items()}), latency, o.prompt_tokens,
                o.completion_tokens, *o.judge_tokens, o.error, dumps(list(o.notes)), now, o.diagnosis, queries,
                dumps([use.to_json() for use in o.usage]), cost.amount, cost.currency or None,
                dumps(o.check_results) if o.check_results else None, pending,
            ))
        if self.dictionary is None and len(new_passages) >= DICTIONARY_FROM:
            self.dictionary = TextDictionary.learnt(hit.text for _, hit in new_passages)
        if self.dictionary is not None:
            rows = [self._deflated(row, self.dictionary) for row in rows]
        passages = [(key, StoredPassage.of(hit.pid, hit.source, hit.title, hit.text, self.dictionary))
                    for key, hit in new_passages]
        return rows, passages, [(self.campaign_id, name, sig) for name, sig in new_signatures.items()]

    @staticmethod
    def _deflated(row: tuple[Any, ...], dictionary: TextDictionary) -> tuple[Any, ...]:
        """A row whose answer is packed, deflated with the store's dictionary, when that is smaller."""
        answer = row[ANSWER_COLUMN]
        if not answer:
            return row
        text = storable(answer)
        deflated = deflate(text, dictionary.data)
        if len(deflated) + ANSWER_OVERHEAD >= len(text.encode("utf-8")):
            return row
        pending: Pending = row[PACKED_COLUMN]
        return (*row[:ANSWER_COLUMN], None, *row[ANSWER_COLUMN + 1:PACKED_COLUMN],
                Pending(pending.ranked, pending.measures, pending.marks, deflated))  # _replace takes five times as long

    def _answer_cells(self, o: Outcome, new: list[tuple[int, Retrieved]]) -> tuple[Any, ...]:
        """The answer, ranked list, context, sources, response time and queries of a row; a re-judge's stay empty
        (they are the judged campaign's, read from its row)."""
        if self.shared:
            return None, None, None, "", None, "[]"
        # The stored passages keep no file name: sources with one are stored as they are.
        sources = "" if o.sources == sources_of(o.context) and not any(s.file_name for s in o.sources) \
            else dumps([source.to_dict() for source in o.sources])
        return (o.answer, ranked_of(o.retrieved, self.passages, new), dumps(self._context(o, new)), sources,
                o.latency_s, dumps(list(o.queries)))

    def _context(self, outcome: Outcome, new: list[tuple[int, Retrieved]]) -> int | list[dict[str, Any]]:
        """How many leading retrieved hits the context is, or its own hits (a results file's contexts)."""
        size = len(outcome.context)
        return size if outcome.context == outcome.retrieved[:size] else [retrieved_to_json(h) for h in outcome.context]

    def write(self, conn: Connection, rows: list[tuple[Any, ...]], passages: list[tuple[int, StoredPassage]],
              signatures: list[tuple[str, str, str]], extra: Mapping[str, Any]) -> tuple[int, int]:
        """Insert (or replace, for a retried question) and move the counters; (finished, failed) after it.

        NotOwner, writing nothing, when another session took the campaign over.
        """
        owner = campaign_rows.owner_token(conn, self.campaign_id)
        if owner is None or (self.owner_token and owner["owner_token"] != self.owner_token):
            raise NotOwner(self.campaign_id)
        positions = [row[1] for row in rows]
        before = result_table.counts_at(conn, self.campaign_id, positions)
        gone: dict[int, Retrieved] = {}
        if (sweeps := passage_sweeps(conn)) != self.sweeps:  # passages removed since: those known by id checked
            gone = self.passages.forget_gone(stored_ids(conn, self.passages.keys.values()))
            passages = [*passages, *((old, StoredPassage.of(hit.pid, hit.source, hit.title, hit.text,
                                                           self.dictionary)) for old, hit in gone.items())]
            self.checked_sweeps = sweeps  # from the next batch on (this write may be tried again)
        by_key: dict[int, int] = {}
        if passages:  # stored once for every campaign: those another campaign stored already are found
            ids = put_passages(conn, [passage for _, passage in passages])
            by_key = {key: ids[passage.digest] for key, passage in passages}
            self.passages.stored(by_key)
            self.passages.restored(gone, by_key)
        number = (put_dictionary(conn, self.dictionary) if self.dictionary is not None
                  and any(row[PACKED_COLUMN].answer.__class__ is bytes for row in rows) else None)
        rows = [(*row[:PACKED_COLUMN], row[PACKED_COLUMN].packed(by_key, number)) for row in rows]
        result_table.put_signatures(conn, signatures)
        result_table.put_results(conn, COLUMNS, rows)
        failed_now = sum(1 for row in rows if row[ERROR_COLUMN] is not None)
        counts = campaign_rows.add_counts(conn, self.campaign_id, len(rows) - before[0], failed_now - before[1],
                                          time.time(), extra.get("cache_hits", 0))
        self.written.update(positions)
        return counts


COLUMNS = ("campaign_id", "position", "qid", "answer", "retrieved", "context", "sources", "measures", "signatures",
           "results", "judges", "latency_s", "prompt_tokens", "completion_tokens", "judge_prompt_tokens",
           "judge_completion_tokens", "error", "notes", "created_at", "diagnosis", "queries", "usage", "cost",
           "currency", "check_results", "packed")
ERROR_COLUMN = COLUMNS.index("error")
ANSWER_COLUMN = COLUMNS.index("answer")
PACKED_COLUMN = COLUMNS.index("packed")
ANSWER_OVERHEAD = 4  # what packing an answer adds to its deflated text: its section's tag and length, the dictionary


class Pending(NamedTuple):
    """A row's packed value before its write: the ranked list (passages met in this batch under batch keys), measures
    and marks packed, and the answer deflated (bytes) or left in the `answer` column (text, None)."""

    ranked: Ranked | None
    measures: bytes
    marks: bytes
    answer: str | bytes | None

    def packed(self, ids: Mapping[int, int], dictionary: int | None) -> bytes:
        """The packed value, the batch's passage keys replaced by their store ids and the answer's dictionary named
        by its number."""
        parts = [(MEASURES, self.measures), (MARKS, self.marks)]
        if self.ranked is not None:
            keys = [ids.get(key, key) for key in self.ranked.keys] if ids else self.ranked.keys
            parts.append((RANKED, pack_ranked(Ranked(keys, self.ranked.scores, self.ranked.stages))))
        if type(self.answer) is bytes and dictionary is not None:
            parts.append((ANSWER, packed_answer(dictionary, self.answer)))
        return pack_row(parts)
# What a re-judge reads from the row of the campaign holding the answers it judged (the rest is its own).
SHARED_COLUMNS = ("answer", "retrieved", "context", "sources", "queries")


def answers_holder(store: Store, campaign_id: str) -> str:
    """The campaign whose rows hold this campaign's answers: its own, or the judged one's for a re-judge."""
    return campaign_rows.answers_from(store, campaign_id) or campaign_id


def read_results(store: Store, campaign_id: str, offset: int = 0, limit: int | None = None, *,
                 detail: bool = True, positions: Sequence[int] | None = None) -> list[QuestionResult]:
    """The stored result of every finished question, in question order (pending ones are absent); of the questions
    at `positions` only, when given (a page of a list).

    `detail=False` leaves out what a comparison never reads, a third of the reading: each retrieved
    passage is the campaign's stored passage without this question's scores, and the measures'
    signatures are empty.
    """
    if positions is not None and not positions:
        return []
    # The cycle collector stays paused from the query on: the rows and what is built from them hold no cycles,
    # and in a process that already holds many objects (a server, a notebook) each full collection during the
    # read would walk all of them again.
    with no_cycle_collection():
        holder = answers_holder(store, campaign_id)
        stored = result_table.results_with_questions(store, campaign_id, holder, COLUMNS, SHARED_COLUMNS, positions,
                                                     limit, offset)
        if not stored:
            return []
        rows = unpacked(store, stored)
        # A re-judge's ranked lists are the judged campaign's; a page of questions reads only the passages they rank.
        passages = ranked_by_key(store, [row["retrieved"] for row in rows])
        if not detail:
            return [QuestionResult(Question.from_row(row), Outcome.from_row(row, row["retrieved"], {}), row["attempts"])
                    for row in decoded_rows(rows, passages)]
        signatures = load_signatures(store, campaign_id)
        return [QuestionResult(Question.from_row(row), outcome_from_row(row, passages, signatures), row["attempts"])
                for row in rows]


@dataclass(frozen=True)
class QuestionLine:
    """A finished question as a list of them shows it and filters it: its place, id, text, answer and error."""

    position: int
    qid: int
    text: str
    answer: str | None
    error: str | None


def read_lines(store: Store, campaign_id: str) -> list[QuestionLine]:
    """Every finished question as a line, in question order: a few columns of each row, not its whole result."""
    holder = answers_holder(store, campaign_id)
    with no_cycle_collection():   # from the query on, as read_results
        rows = result_table.line_rows(store, campaign_id, holder)
        answers = answer_cells(store, [row["answer"] for row in rows], [row["shared_packed"] for row in rows])
        return [QuestionLine(row["position"], row["qid"], row["question"], answer, row["error"])
                for row, answer in zip(rows, answers, strict=True)]


# The JSON columns of a question and its result that a comparison reads, besides the ranked list.
JSON_COLUMNS = ("refs", "relevant", "expected_sources", "context", "sources", "judges", "notes", "queries")
STORED_VALUES = ("measures", "results")


def unpacked(store: Store, rows: list[Row]) -> list[Row | dict[str, Any]]:
    """Result rows (with `packed` and `shared_packed`) with what packed rows hold in their columns: the answer, the
    ranked list (its packed bytes, which decode_ranked reads), measures and marks (by name)."""
    if all(row["packed"] is None and row["shared_packed"] is None for row in rows):
        return list(rows)
    own = [None if row["packed"] is None else sections(row["packed"]) for row in rows]
    shared = [parts if row["shared_packed"] == row["packed"] else sections(row["shared_packed"])
              if row["shared_packed"] is not None else None for row, parts in zip(rows, own, strict=True)]
    answers = packed_answers(store, [row["answer"] for row in rows],
                             [None if parts is None else parts.get(ANSWER) for parts in shared])
    out: list[Row | dict[str, Any]] = []
    for row, answer, mine, theirs in zip(rows, answers, own, shared, strict=True):
        if mine is None and theirs is None:
            out.append(row)
            continue
        cells = dict(zip(row.keys(), cast(Iterable[Any], row), strict=True))
        cells["answer"] = answer
        if theirs is not None and (ranked := theirs.get(RANKED)) is not None:
            cells["retrieved"] = ranked
        if mine is not None:  # measures and marks written since (evalcore.campaigns.recompute) are in their columns
            if (measures := mine.get(MEASURES)) is not None:
                cells["measures"] = unpack_values(measures)
            if (marks := mine.get(MARKS)) is not None:
                cells["results"] = unpack_values(marks)
        out.append(cells)
    return out


def values_column(cells: Sequence[str | dict[str, Any] | None]) -> list[dict[str, Any] | None]:
    """stored_column of a column whose packed rows' values are read already (dicts)."""
    texts = [cell for cell in cells if not isinstance(cell, dict)]
    if len(texts) == len(cells):
        return stored_column(cast(Sequence[str | None], cells))
    decoded = iter(stored_column(texts))
    return [cell if isinstance(cell, dict) else next(decoded) for cell in cells]


def measures_column(measures: Sequence[str | None], packed: Sequence[bytes | None]) -> list[dict[str, Any] | None]:
    """Each row's measures by name: from its packed value, or its `measures` column's JSON."""
    parts = [None if value is None else sections(value).get(MEASURES) for value in packed]
    return values_column([text if part is None else unpack_values(part)
                          for text, part in zip(measures, parts, strict=True)])


def decoded_rows(rows: list[Row | dict[str, Any]], passages: Mapping[int, Retrieved]) -> list[dict[str, Any]]:
    """The rows with their JSON columns decoded column by column, each for every row in one call (a call per row and
    column takes twice as long); measures and results under their documented names, as stored_values gives them;
    the ranked list as passages_of gives it."""
    names = rows[0].keys()
    decoded = [dict(row) if isinstance(row, dict) else dict(zip(names, cast(Iterable[Any], row), strict=True))
               for row in rows]  # a row iterates its values
    for row, ranked in zip(decoded, ranked_passages([row["retrieved"] for row in rows], passages), strict=True):
        row["retrieved"] = ranked
    for column in (*JSON_COLUMNS, *STORED_VALUES):
        texts = [row[column] for row in rows]
        values = values_column(texts) if column in STORED_VALUES else json.loads(
            "[" + ",".join(text or "null" for text in texts) + "]")
        for row, value in zip(decoded, values, strict=True):
            row[column] = value
    return decoded


def outcome_from_row(row: Row | dict[str, Any], passages: Mapping[int, Retrieved],
                     signatures: Mapping[str, str]) -> Outcome:
    """An outcome from its results row, the campaign's passages and its shared signatures."""
    retrieved = decode_ranked(row["retrieved"], passages)
    own = stored_values(row["signatures"])
    measures = stored_values(row["measures"])
    return Outcome.from_row(row, retrieved, {name: own.get(name) or signatures.get(name, "") for name in measures}
                            | own)
