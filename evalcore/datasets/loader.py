"""Datasets: five Parquet files (queries, corpus, answers, qrels, qas), validated whole before anything is used."""

from __future__ import annotations

import hashlib
import re
import statistics
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.datasets.conversation_checks import TurnOf, conversation_id, turn_problems
from evalcore.datasets.names import DEFAULT_DATASET
from evalcore.datasets.relevance import relevant_ids
from evalcore.errors import EvalError
from evalcore.runtime.memory import no_cycle_collection

# A checkout keeps its datasets in its dataset/ folder, the sample in dataset/samples. An installed package carries
# the sample inside it (setup.py copies it there) and finds other datasets in dataset/ under the working folder.
_INSTALLED_SAMPLE = Path(__file__).resolve().parent / DEFAULT_DATASET
if _INSTALLED_SAMPLE.is_dir():
    DATASET_ROOT, SAMPLE_FOLDER = Path("dataset"), _INSTALLED_SAMPLE
else:
    DATASET_ROOT = Path(__file__).resolve().parent.parent.parent / "dataset"
    SAMPLE_FOLDER = DATASET_ROOT / DEFAULT_DATASET
FILES = ("queries", "corpus", "answers", "qrels", "qas")
# What a dataset id is (a folder directly under the dataset root, never a path): the API takes ids of this
# shape, and an upload is saved under one (uploads-<name>).
DATASET_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# When several are present the most explicit name wins (`score` is also used for retrieval scores).
LABEL_COLUMNS = ("relevance", "label", "score")
# Ids are stored as SQLite/Parquet int64: a longer string of digits would overflow later, not here.
_INT64 = (-(2**63), 2**63 - 1)
# A dataset needs something to retrieve; questions, answers and labels may be absent (a corpus imported from
# documents has none yet: campaigns refuse it until it has questions).
_NON_EMPTY = ("corpus",)
_REQUIRED = {
    "queries": ("id", "text"),
    "corpus": ("id", "text"),
    "answers": ("id", "text"),
    "qrels": ("qid", "pid"),
    "qas": ("qid", "aid"),
}


class Passage(NamedTuple):
    """One corpus passage; `title` names the document it comes from ("" when unknown), `file_name` its file (the
    corpus's optional `file_name` column, which a corpus imported from documents has; "" when unknown)."""

    pid: int
    text: str
    title: str
    file_name: str = ""


class Question(NamedTuple):
    """One question with its graded qrels, all its reference answers and what the dataset says of answerability."""

    qid: int
    text: str
    labels: dict[int, int]
    references: tuple[str, ...]
    answerable: bool | None = None  # queries.parquet's optional `answerable` column (False: declining is right)
    checks: str = ""  # queries.parquet's optional `checks` column: exact checks as a suite's checks cell writes them
    conversation: str | None = None  # the optional `conversation` column: the conversation it is a turn of
    turn: int | None = None  # the optional `turn` column: its turn in that conversation, from 1

    @property
    def relevant(self) -> frozenset[int]:
        """Passages with a label of at least 1."""
        return frozenset(relevant_ids(self.labels))


@dataclass(frozen=True)
class Dataset:
    """A loaded, validated dataset."""

    name: str
    path: Path
    content_hash: str
    passages: tuple[Passage, ...]
    questions: tuple[Question, ...]
    has_titles: bool = False
    _by_pid: dict[int, Passage] = field(default_factory=dict, repr=False, compare=False)
    _summary: list[str] = field(default_factory=list, init=False, repr=False, compare=False)  # dataset_summary once

    def passage(self, pid: int) -> Passage:
        """The passage with this id."""
        return self._by_pid[pid]


def resolve_dataset(ref: str | Path, root: Path | None = None, *, allow_paths: bool = True) -> Path:
    """`default` is the root's samples/ folder (else the built-in sample), a bare name is a folder under the root
    (dataset/<name>), a path (when allowed) is itself. Where paths are allowed, a bare name that is no folder under
    the root but is one in the working folder is that folder (`--dataset mydata` after `ls` shows it).

    The API passes allow_paths=False: a client may only name folders directly under the root.
    """
    root = (root or DATASET_ROOT).resolve()
    text = str(ref).strip()
    if text == "default":
        return root / DEFAULT_DATASET if (root / DEFAULT_DATASET).is_dir() else SAMPLE_FOLDER.resolve()
    is_name = bool(text) and "/" not in text and "\\" not in text and text not in (".", "..")
    if is_name:
        under_root = root / text
        if allow_paths and not under_root.is_dir() and Path(text).is_dir():
            return Path(text).resolve()
        return under_root
    if allow_paths and text:
        return Path(text).expanduser().resolve()
    raise EvalError(f"dataset id {text!r} is not a folder name under the dataset root", where="dataset_id",
                    expected=f"'default' or the name of a folder directly under {root}")


ROWS_SHOWN = 20  # bad rows listed per column; the rest are counted


class _Problems:
    """Collects every problem so one check reports them all."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.lines.append(f"{where}: {message}")

    def rows(self, file: str, column: str, bad: list[tuple[int, str]]) -> bool:
        """Every bad row of a column (the first ROWS_SHOWN, then how many more); whether there was none."""
        for row, message in bad[:ROWS_SHOWN]:
            self.add(f"{file} row {row} column '{column}'", message)
        if len(bad) > ROWS_SHOWN:
            self.add(f"{file} column '{column}'", f"{len(bad) - ROWS_SHOWN} more bad rows like these "
                                                  f"({len(bad)} in all; the first {ROWS_SHOWN} are listed)")
        return not bad


def _read_table(path: Path, name: str, problems: _Problems) -> pa.Table | None:
    file = path / f"{name}.parquet"
    if not file.is_file():
        problems.add(file.name, "missing file (a dataset needs queries, corpus, answers, qrels and qas .parquet)")
        return None
    try:
        # One file, read as it is: pq.read_table goes through pyarrow.dataset, whose import loads pandas (most of a
        # second of every campaign's start) for the same table.
        with pq.ParquetFile(file) as parquet:
            table = parquet.read()
    except (pa.ArrowException, OSError, ValueError) as error:
        problems.add(file.name, f"not a readable Parquet file ({_arrow_reason(error)})")
        return None
    if name in _NON_EMPTY and table.num_rows == 0:
        problems.add(file.name, "no rows (a dataset needs at least one passage)")
    return table


def _arrow_reason(error: Exception) -> str:
    """Arrow's first sentence without the file path it repeats (the problem line names the file)."""
    text = re.sub(r"^Could not open Parquet input source '.*?': ", "", str(error).splitlines()[0])
    return text if len(text) <= 160 else text[:159] + "…"


_NARROW_UNSIGNED = frozenset({pa.uint8(), pa.uint16(), pa.uint32()})


def _int_column(table: pa.Table, file: str, column: str, problems: _Problems) -> list[int] | None:
    """Integers, or strings of digits (normalised), with every bad row named."""
    if column not in table.column_names:
        problems.add(file, f"missing column '{column}' (columns found: {', '.join(table.column_names) or 'none'})")
        return None
    kind = table.schema.field(column).type
    values = table.column(column)
    if values.null_count == 0 and (pa.types.is_signed_integer(kind) or kind in _NARROW_UNSIGNED):
        ints: list[int] = values.to_pylist()  # every row an integer in the int64 range: nothing to check by row
        return ints
    out: list[int] = []
    bad: list[tuple[int, str]] = []
    for row, value in enumerate(values.to_pylist()):
        number = None if isinstance(value, bool) else _as_int(value, kind)
        if value is None or isinstance(value, bool):
            bad.append((row, f"found {value!r}, expected an integer id"))
        elif number is None or not _INT64[0] <= number <= _INT64[1]:
            bad.append((row,
                        f"found {value!r} ({kind}), expected an int64 id or a string of digits in the int64 range"))
        else:
            out.append(number)
    return out if problems.rows(file, column, bad) else None


def _as_int(value: object, kind: pa.DataType) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    if isinstance(value, float) and value.is_integer() and pa.types.is_floating(kind):
        return int(value)
    return None


def _text_column(table: pa.Table, file: str, column: str, problems: _Problems) -> list[str] | None:
    if column not in table.column_names:
        problems.add(file, f"missing column '{column}' (columns found: {', '.join(table.column_names) or 'none'})")
        return None
    kind = table.schema.field(column).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)):
        problems.add(f"{file} column '{column}'", f"found type {kind}, expected string")
        return None
    values: list[str] = table.column(column).to_pylist()
    bad = [(row, f"found {'null' if value is None else 'empty text'}, expected non-empty text")
           for row, value in enumerate(values) if value is None or not value.strip()]
    return values if problems.rows(file, column, bad) else None


def _unique(ids: list[int], file: str, problems: _Problems) -> bool:
    seen: dict[int, int] = {}
    bad: list[tuple[int, str]] = []
    for row, value in enumerate(ids):
        if value in seen:
            bad.append((row, f"duplicate id {value} (first at row {seen[value]})"))
        else:
            seen[value] = row
    return problems.rows(file, "id", bad)


def _references(ids: list[int], known: set[int], file: str, column: str, target: str, problems: _Problems) -> bool:
    bad = [(row, f"id {value} is not in {target}") for row, value in enumerate(ids) if value not in known]
    return problems.rows(file, column, bad)


def _labels(table: pa.Table, problems: _Problems) -> list[int] | None:
    """The graded label column if there is one, else 1 for every row."""
    column = next((c for c in LABEL_COLUMNS if c in table.column_names), None)
    if column is None:
        return [1] * table.num_rows
    labels: list[int] = []
    bad: list[tuple[int, str]] = []
    for row, value in enumerate(table.column(column).to_pylist()):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            bad.append((row, f"found {value!r}, expected an integer label"))
        else:
            labels.append(value)
    return labels if problems.rows("qrels.parquet", column, bad) else None


VALIDATED_SIZE = 8
_VALIDATED: OrderedDict[tuple[str, str], Dataset] = OrderedDict()
_VALIDATED_LOCK = threading.Lock()


def _content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode())
        digest.update((path / f"{name}.parquet").read_bytes())
    return digest.hexdigest()


def load_dataset(ref: str | Path, root: Path | None = None, *, allow_paths: bool = True) -> Dataset:
    """Load and validate a dataset folder; every problem is reported at once, nothing half-loaded."""
    path = resolve_dataset(ref, root, allow_paths=allow_paths)
    if not path.is_dir():
        raise EvalError(f"no dataset folder at {path}", where=str(ref),
                        fix="give 'default', a folder name under dataset/, or a folder path")
    # Validation costs a quarter of a second at 10,000 questions: a content already validated in this
    # process is not validated again (the hash reads the files, so any change is seen).
    digest = _content_hash(path) if all((path / f"{name}.parquet").is_file() for name in FILES) else None
    with _VALIDATED_LOCK:
        known = _VALIDATED.get((str(path), digest)) if digest else None
    if known is not None:
        return known
    problems = _Problems()
    tables = {name: _read_table(path, name, problems) for name in FILES}
    parsed = _parse(tables, problems) if not problems.lines else None
    del tables  # read into Python objects: Arrow's pool keeps the freed buffers unless told (137 MB at 100,000)
    pa.default_memory_pool().release_unused()
    if problems.lines or parsed is None or digest is None:
        raise EvalError(f"invalid dataset {path}", where=str(path),
                        problems=[f"{path.name}/{line}" for line in problems.lines])
    passages, questions, has_titles = parsed
    name = path.name if path.name != DEFAULT_DATASET else "default"
    dataset = Dataset(name=name, path=path, content_hash=digest, passages=passages,
                      questions=questions, has_titles=has_titles, _by_pid={p.pid: p for p in passages})
    with _VALIDATED_LOCK:
        _VALIDATED[(str(path), digest)] = dataset
        while len(_VALIDATED) > VALIDATED_SIZE:
            _VALIDATED.popitem(last=False)
    return dataset


def _parse(tables: dict[str, pa.Table | None],
           problems: _Problems) -> tuple[tuple[Passage, ...], tuple[Question, ...], bool] | None:
    columns: dict[str, dict[str, list[Any] | None]] = {}
    for name, table in tables.items():
        if table is None:  # already reported by _read_table
            return None
        file = f"{name}.parquet"
        id_columns, text_columns = ((("id",), ("text",)) if name in ("queries", "corpus", "answers")
                                    else (_REQUIRED[name], ()))
        columns[name] = {c: _int_column(table, file, c, problems) for c in id_columns}
        columns[name].update({c: _text_column(table, file, c, problems) for c in text_columns})
    if problems.lines:  # a None column was reported
        return None
    return _check_references(cast(dict[str, dict[str, list[Any]]], columns), tables, problems)


def _check_references(columns: dict[str, dict[str, list[Any]]], tables: dict[str, pa.Table | None],
                      problems: _Problems) -> tuple[tuple[Passage, ...], tuple[Question, ...], bool] | None:
    for name in ("queries", "corpus", "answers"):
        _unique(columns[name]["id"], f"{name}.parquet", problems)
    query_ids, passage_ids, answer_ids = (set(columns[n]["id"]) for n in ("queries", "corpus", "answers"))
    _references(columns["qrels"]["qid"], query_ids, "qrels.parquet", "qid", "queries.parquet", problems)
    _references(columns["qrels"]["pid"], passage_ids, "qrels.parquet", "pid", "corpus.parquet", problems)
    _references(columns["qas"]["qid"], query_ids, "qas.parquet", "qid", "queries.parquet", problems)
    _references(columns["qas"]["aid"], answer_ids, "qas.parquet", "aid", "answers.parquet", problems)
    labels = _labels(tables["qrels"], problems)
    titles = _optional_text(tables["corpus"], "title", problems)
    files = _optional_text(tables["corpus"], "file_name", problems)
    columns["queries"]["answerable"] = _answerable(tables["queries"], problems)
    checks = _optional_text(tables["queries"], "checks", problems, "queries.parquet")
    columns["queries"]["conversation"], columns["queries"]["turn"] = _conversations(tables["queries"], problems)
    if problems.lines or labels is None or titles is None or files is None or checks is None:
        return None
    columns["queries"]["checks"] = checks
    # A dataset's tens of thousands of passages and questions hold no cycle: the collector walking them again and
    # again as they are made was 0.13 s of a CLI run's CPU on 20,000 passages and 10,000 questions.
    with no_cycle_collection():
        return _assemble(columns, labels, titles, files)


def _answerable(queries: pa.Table | None, problems: _Problems) -> list[bool | None]:
    """The optional `answerable` column of queries.parquet (true, false or null), else null for every row."""
    if queries is None or "answerable" not in queries.column_names:
        return [None] * (queries.num_rows if queries is not None else 0)
    values: list[bool | None] = queries.column("answerable").to_pylist()
    for row, value in enumerate(values):
        if value is not None and not isinstance(value, bool):
            problems.add(f"queries.parquet row {row} column 'answerable'",
                         f"found {value!r}, expected true, false or null (false marks a question to decline)")
            return []
    return values


def _conversations(queries: pa.Table | None, problems: _Problems) -> tuple[list[str | None], list[int | None]]:
    """The optional `conversation` and `turn` columns of queries.parquet, checked together (evalcore.datasets.
    conversations): null for every row without them."""
    rows = queries.num_rows if queries is not None else 0
    names = queries.column_names if queries is not None else []
    if queries is None or ("conversation" not in names and "turn" not in names):
        return [None] * rows, [None] * rows
    if "conversation" not in names or "turn" not in names:
        problems.add("queries.parquet", "a 'conversation' column needs a 'turn' column beside it, and the other way "
                                        "round (the turn numbers of each conversation, from 1)")
        return [None] * rows, [None] * rows
    conversations = [conversation_id(value) for value in queries.column("conversation").to_pylist()]
    turns: list[int | None] = []
    for row, value in enumerate(queries.column("turn").to_pylist()):
        number = None if isinstance(value, bool) or value is None else _as_int(value, queries.schema.field("turn").type)
        if value is not None and number is None:
            problems.add(f"queries.parquet row {row} column 'turn'", f"found {value!r}, expected a whole number from 1")
        turns.append(number)
    for line in turn_problems([TurnOf(f"queries.parquet row {row}", conversation, turn)
                               for row, (conversation, turn) in enumerate(zip(conversations, turns, strict=True))]):
        problems.lines.append(line)
    return conversations, turns


def _optional_text(table: pa.Table | None, column: str, problems: _Problems,
                   name: str = "corpus.parquet") -> list[str] | None:
    """An optional text column (the corpus' title and file_name, the queries' checks): "" where absent or null."""
    if table is None or column not in table.column_names:
        return [""] * (table.num_rows if table is not None else 0)
    values = table.column(column).to_pylist()
    bad = [(row, f"found {value!r}, expected text") for row, value in enumerate(values)
           if value is not None and not isinstance(value, str)]
    return [value or "" for value in values] if problems.rows(name, column, bad) else None


def _assemble(columns: dict[str, dict[str, list[Any]]], labels: list[int], titles: list[str],
              files: list[str]) -> tuple[tuple[Passage, ...], tuple[Question, ...], bool]:
    corpus = columns["corpus"]
    # Made from their fields in order (`_make`): calling a named tuple per row is most of the time here.
    passages = tuple(map(Passage._make, zip(corpus["id"], corpus["text"], titles, files, strict=False)))
    qrels: dict[int, dict[int, int]] = {}
    for qid, pid, label in zip(columns["qrels"]["qid"], columns["qrels"]["pid"], labels, strict=False):
        qrels.setdefault(qid, {})[pid] = max(label, qrels.get(qid, {}).get(pid, label))
    answer_text = dict(zip(columns["answers"]["id"], columns["answers"]["text"], strict=False))
    references: dict[int, list[str]] = {}
    for qid, aid in zip(columns["qas"]["qid"], columns["qas"]["aid"], strict=False):
        references.setdefault(qid, []).append(answer_text[aid])
    queries = columns["queries"]
    ids = queries["id"]
    questions = tuple(map(Question._make, zip(
        ids, queries["text"], [qrels.get(qid, {}) for qid in ids], [tuple(references.get(qid, ())) for qid in ids],
        queries["answerable"], queries["checks"], queries["conversation"], queries["turn"], strict=False)))
    return passages, questions, any(titles)


_ACCENTED = re.compile(r"[À-ÖØ-öø-ÿĀ-ſ]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Spread:
    """min, median and max of a length distribution (tokens)."""

    min: int
    median: float
    max: int


@dataclass(frozen=True)
class DatasetStats:
    """The five headline statistics plus what an analyst needs to trust a dataset."""

    dataset: str
    content_hash: str
    total_queries: int
    total_passages: int
    total_answers: int
    avg_relevant_per_labeled_query: float
    answered_queries: int
    labeled_queries: int
    distractor_passages: int
    label_distribution: dict[str, int]  # qrels label -> rows
    relevant_per_labeled_query: list[int]  # sorted
    passage_tokens: Spread
    question_tokens: Spread
    han_share: float  # passages with Han characters
    accented_latin_share: float  # passages with accented Latin letters
    documents: int  # distinct passage titles
    conversations: int = 0  # conversations the questions are turns of
    conversation_turns: int = 0  # questions that are a turn of one

    @property
    def unlabeled_queries(self) -> int:
        """Questions without qrels."""
        return self.total_queries - self.labeled_queries

    @property
    def queries_without_answer(self) -> int:
        """Questions without a reference answer."""
        return self.total_queries - self.answered_queries

    @property
    def answer_share(self) -> float:
        """The share of questions with a reference answer (0 without questions)."""
        return self.answered_queries / self.total_queries if self.total_queries else 0.0

    @property
    def answer_coverage(self) -> str:
        """The share of questions with a reference answer, as `62.50% (5/8)`."""
        return f"{100 * self.answer_share:.2f}% ({self.answered_queries}/{self.total_queries})"

    def summary(self) -> str:
        """One line for a run's output and the server's log: size, relevance, answers, languages."""
        return _summary_line(self.dataset, self.total_queries, self.total_passages,
                             self.avg_relevant_per_labeled_query, self.labeled_queries, self.answered_queries,
                             self.han_share, self.accented_latin_share)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "dataset": self.dataset, "content_hash": self.content_hash, "total_queries": self.total_queries,
            "total_passages": self.total_passages, "total_answers": self.total_answers,
            "avg_relevant_per_labeled_query": self.avg_relevant_per_labeled_query,
            "answer_coverage": self.answer_coverage, "labeled_queries": self.labeled_queries,
            "unlabeled_queries": self.unlabeled_queries, "queries_without_answer": self.queries_without_answer,
            "distractor_passages": self.distractor_passages, "label_distribution": self.label_distribution,
            "relevant_per_labeled_query": self.relevant_per_labeled_query,
            "passage_tokens": self.passage_tokens.__dict__, "question_tokens": self.question_tokens.__dict__,
            "language_mix": {"han": self.han_share, "accented_latin": self.accented_latin_share},
            "documents": self.documents, "conversations": self.conversations,
            "conversation_turns": self.conversation_turns,
        }


def _spread(values: list[int]) -> Spread:
    if not values:
        return Spread(0, 0.0, 0)
    return Spread(min(values), float(statistics.median(values)), max(values))


def dataset_stats(ds: Dataset) -> DatasetStats:
    """The five headline statistics plus what an analyst needs to trust a dataset."""
    from evalcore.language.text import tokenize

    labeled = [q for q in ds.questions if q.relevant]
    referenced = {pid for q in ds.questions for pid in q.labels}
    label_counts = Counter(label for q in ds.questions for label in q.labels.values())
    return DatasetStats(
        dataset=ds.name, content_hash=ds.content_hash, total_queries=len(ds.questions),
        total_passages=len(ds.passages), total_answers=sum(len(q.references) for q in ds.questions),
        avg_relevant_per_labeled_query=(sum(len(q.relevant) for q in labeled) / len(labeled)) if labeled else 0.0,
        answered_queries=sum(1 for q in ds.questions if q.references), labeled_queries=len(labeled),
        distractor_passages=sum(1 for p in ds.passages if p.pid not in referenced),
        label_distribution={str(k): label_counts[k] for k in sorted(label_counts)},
        relevant_per_labeled_query=sorted(len(q.relevant) for q in labeled),
        passage_tokens=_spread([len(tokenize(p.text)) for p in ds.passages]),
        question_tokens=_spread([len(tokenize(q.text)) for q in ds.questions]),
        han_share=_share(ds.passages, _HAN), accented_latin_share=_share(ds.passages, _ACCENTED),
        documents=len({p.title for p in ds.passages if p.title}),
        conversations=len({q.conversation for q in ds.questions if q.conversation is not None}),
        conversation_turns=sum(1 for q in ds.questions if q.conversation is not None),
    )


def dataset_summary(ds: Dataset) -> str:
    """`dataset_stats(ds).summary()` without what the line does not show: counting every passage's and question's
    tokens (which segments each Chinese passage with jieba, loading its dictionary: a second of a run's start).
    Made once per loaded dataset: a launch prints it and logs it."""
    if ds._summary:
        return ds._summary[0]
    labeled = [q for q in ds.questions if q.relevant]
    line = _summary_line(ds.name, len(ds.questions), len(ds.passages),
                         (sum(len(q.relevant) for q in labeled) / len(labeled)) if labeled else 0.0, len(labeled),
                         sum(1 for q in ds.questions if q.references), _share(ds.passages, _HAN),
                         _share(ds.passages, _ACCENTED))
    ds._summary[:] = [line]
    return line


def _summary_line(name: str, questions: int, passages: int, relevant: float, labeled: int, answered: int,
                  han: float, accented: float) -> str:
    coverage = f"{100 * (answered / questions if questions else 0.0):.2f}% ({answered}/{questions})"
    return (f"{name}: {questions} questions, {passages} passages, {relevant:.2f} relevant passages per labeled "
            f"question ({labeled} labeled), answer coverage {coverage}, languages: passages with Han {han:.0%}, "
            f"with accented Latin {accented:.0%}")


def _share(passages: tuple[Passage, ...], pattern: re.Pattern[str]) -> float:
    """The share of passages where `pattern` (Han or accented letters, neither of them ASCII) finds something; an
    ASCII passage is passed over without searching it."""
    return sum(1 for p in passages if not p.text.isascii() and pattern.search(p.text)) / len(passages) \
        if passages else 0.0
