"""Comparisons kept in the store: computed once for a pair of campaign versions, then read back.

A kept comparison is read with nothing but the store and the records (no numpy, no measure registry: `compare A B`
prints at once); evalcore.compare.campaign_pairs finds it here, or has evalcore.compare.comparison compute it.

A row of the `comparisons` table is found by both campaigns' ids, the seed and the resamples
(its primary key: one row per pair and draw, replaced when recomputed), and it is used only when
both campaigns' results versions and the stored format still match, so a campaign whose results
change (resumed, retried, more questions finished) is compared afresh without any invalidation
step. Deleting a campaign deletes its comparisons (foreign keys, ON DELETE CASCADE).

The comparison is stored as JSON (questions, measures, warnings, notes) plus the per-measure
paired values as an .npz blob; the campaign headers are rebuilt from the campaigns themselves,
and the questions needed for an effect size are recomputed by the caller (`with_effect`).
"""

from __future__ import annotations

import io
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any

from evalcore.campaigns import Campaign
from evalcore.campaigns.records import results_version
from evalcore.compare.costs import CostDelta
from evalcore.compare.deltas import (
    CampaignHeader,
    Comparison,
    KeptQuestions,
    MeasureDelta,
    Paired,
    Summary,
    kept_questions,
)
from evalcore.compare.preference import Preference
from evalcore.errors import EvalError
from evalcore.store import Connection, Store, comparison_rows, dumps

log = logging.getLogger("evalcore.compare")

# Bump when what a stored comparison holds, or how any of its numbers is computed, changes.
# 2: the verdict basis and its reason; 3: questions carry their failure stage in each campaign and what a query
# transformation retrieved with; 4: verdicts under each measure's tolerance, and the questions each measure changed;
# 5: questions carry each judge's verdict in each campaign (the report's judge results); 6: those verdicts kept as
# one JSON text per side of a question, decoded when a face first reads them (a kept comparison reads back faster);
# 7: the questions as one line each after the rest's JSON, with their verdict counts, transitions and bases
# (KeptQuestions: read back and written out without decoding a question); 8: each line is its question's JSON with
# tabs around the verdicts' texts (written out from the whole text, no line split); 9: a judge whose model or prompt
# differs between the two is no verdict basis; 10: B − A of the cost per question.
FORMAT = 10


def key(a: Campaign, b: Campaign, seed: int, resamples: int) -> tuple[Any, ...]:
    """The values that find a stored comparison, in the order of the table's columns."""
    return (a.id, b.id, str(seed), resamples, results_version(a), results_version(b), FORMAT)


# With read_later, a kept comparison's head (all but its questions' lines: 145 kB at 10,000 questions) is read first;
# its lines and per-measure values when a face reads them (the text report reads the lines of moved questions only).
HEAD_CHARS = 1 << 18


def find(store: Store, a: Campaign, b: Campaign, *, seed: int, resamples: int,
         read_later: bool = False) -> Comparison | None:
    """The stored comparison of A and B for these versions, seed and resamples, or None.

    Its questions are KeptQuestions: decoded into records only when a face reads one. With `read_later`, only its
    head is read now; its question lines and per-measure values are read from the store when first used (`Later`)."""
    found = key(a, b, seed, resamples)
    if not read_later:
        row = comparison_rows.comparison_row(store, found)
        if row is None:
            return None
        head, _, text = row["data"].partition("\n")
        return kept_comparison(a, b, seed, resamples, head, text, row["paired"])
    start = comparison_rows.comparison_start(store, found, HEAD_CHARS)
    if start is None:
        return None
    head = start.partition("\n")[0]
    # Characters count from 1: the lines start after the head and its newline.
    return kept_comparison(a, b, seed, resamples, head, Later(store, found, "lines", len(head) + 2).text,
                           Later(store, found, "paired").blob)


def kept_comparison(a: Campaign, b: Campaign, seed: int, resamples: int, head: str, text: str | Callable[[], str],
                    paired: bytes | Callable[[], bytes]) -> Comparison:
    """A kept comparison from its head's JSON, its question lines and its per-measure values (each given, or read
    when first used)."""
    data = json.loads(head)
    questions = KeptQuestions(text, Summary.from_dict(data["summary"]))
    return Comparison(a=CampaignHeader.of(a), b=CampaignHeader.of(b), questions=questions,
                      measures=[MeasureDelta.from_dict(m) for m in data["measures"]], warnings=data["warnings"],
                      config_diff=data["config_diff"], seed=seed, resamples=resamples, notes=data["notes"],
                      effect=data["effect"], paired=Packed(paired, data["paired"]), basis=data["basis"],
                      basis_reason=data["basis_reason"],
                      cost=CostDelta.from_dict(data["cost"]) if data.get("cost") else None,
                      turns={int(qid): (name, turn) for qid, (name, turn) in data.get("turns", {}).items()},
                      # the tolerances its verdicts were decided with (a row kept before it held them: the registry's)
                      tolerances=data.get("tolerances", {}))


class Later:
    """One part of a kept comparison, read from the store when first asked for: its question `lines` (its data from
    character `start`, as `text`) or its `paired` values (as `blob`)."""

    def __init__(self, store: Store, found: tuple[Any, ...], part: str, start: int = 1) -> None:
        self.store, self.found, self.part, self.start = store, found, part, start

    def read(self) -> Any:
        """The part as stored; EvalError when the comparison was replaced since its head was read (a campaign's
        results changed meanwhile: its comparison is another one)."""
        value = (comparison_rows.comparison_paired(self.store, self.found) if self.part == "paired"
                 else comparison_rows.comparison_data_from(self.store, self.found, self.start))
        if value is None:
            raise EvalError("the kept comparison changed while it was read: a campaign's results changed meanwhile",
                            where=f"comparison of {self.found[0]} and {self.found[1]}", fix="ask for it again")
        return value

    def text(self) -> str:
        """The part as text."""
        return str(self.read())

    def blob(self) -> bytes:
        """The part as bytes."""
        return bytes(self.read())


def keep(store: Store, comparison: Comparison, a: Campaign, b: Campaign) -> None:
    """Store a comparison under its key, unless a campaign is still running (its results change by the second).

    Stored as the JSON of all but its questions, then each question's line (KeptQuestions) on a line of its own (JSON
    text has no raw newline); kept_questions(comparison.questions) writes their lines unless they are written. The
    write is queued (`Store.write_soon`: a later read of the table waits for it) and this returns at once: the
    caller writes the comparison out while the store writes its 20 MB for 10,000 questions. A write that fails
    loses only what was kept: the comparison is computed again when next asked.
    """
    if a.active or b.active:
        return
    questions = kept_questions(comparison.questions)
    head = dumps({"measures": [m.to_dict() for m in comparison.measures], "warnings": comparison.warnings,
                  "notes": comparison.notes, "config_diff": comparison.config_diff, "effect": comparison.effect,
                  "paired": list(comparison.paired), "basis": comparison.basis,
                  "basis_reason": comparison.basis_reason, "summary": questions.summary.to_dict(),
                  "cost": comparison.cost.to_dict() if comparison.cost else None,
                  "turns": {str(qid): list(place) for qid, place in comparison.turns.items()},
                  "tolerances": {name: comparison.tolerance(name) for name in questions.summary.bases
                                 if name and name != "error"}})
    data = f"{head}\n{questions.text}"
    row = (*key(a, b, comparison.seed, comparison.resamples), data, pack(comparison.paired), time.time())

    def insert(conn: Connection) -> None:
        try:
            comparison_rows.put_comparison(conn, row)
        except sqlite3.IntegrityError:
            return   # a campaign was deleted meanwhile: there is nothing to keep

    store.write_soon(insert, tables=("comparisons",)).add_done_callback(not_kept)


def not_kept(write: Future[None]) -> None:
    """Say why a comparison could not be kept (it is computed again when next asked)."""
    error = write.exception()
    if error is not None:
        log.warning("a comparison could not be kept: %s", error)


def pack(paired: Mapping[str, Paired]) -> bytes:
    """The per-measure values as an .npz archive: measure i's qids, A and B are arrays 3i, 3i + 1, 3i + 2."""
    import numpy as np  # here: reading a kept comparison back needs no arrays until its values are read

    buffer = io.BytesIO()
    np.savez(buffer, *[array for values in paired.values() for array in values])
    return buffer.getvalue()


def unpack(blob: bytes, names: list[str]) -> dict[str, Paired]:
    """pack's archive back to the per-measure values (never unpickles anything)."""
    import numpy as np

    with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
        return {name: Paired(*(arrays[f"arr_{3 * i + part}"] for part in range(3))) for i, name in enumerate(names)}


class Packed(Mapping[str, Paired]):
    """A kept comparison's per-measure values, read and unpacked from pack's archive when one is first read (the text
    report and the JSON never read them; the Compare page's plots do)."""

    def __init__(self, blob: bytes | Callable[[], bytes], names: list[str]) -> None:
        self.blob, self.names = blob, names
        self._values: dict[str, Paired] | None = None

    def values_by_name(self) -> dict[str, Paired]:
        """Every measure's values (read and unpacked on the first call)."""
        if self._values is None:
            self._values = unpack(self.blob if isinstance(self.blob, bytes) else self.blob(), self.names)
        return self._values

    def __getitem__(self, name: str) -> Paired:
        return self.values_by_name()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __len__(self) -> int:
        return len(self.names)


def find_preference(store: Store, a: Campaign, b: Campaign) -> Preference | None:
    """The newest pairwise judgement of A and B for their current results versions, or None."""
    data = comparison_rows.preference_data(store, a.id, b.id, results_version(a), results_version(b))
    return Preference.from_dict(json.loads(data)) if data is not None else None


def keep_preference(store: Store, preference: Preference, a: Campaign, b: Campaign) -> None:
    """Store a pairwise judgement under both campaigns' versions and its judge's signature (replacing an older one)."""
    row = (a.id, b.id, preference.signature, results_version(a), results_version(b), dumps(preference.to_dict()),
           preference.created_at)
    store.write(lambda conn: comparison_rows.put_preference(conn, row))
