"""Comparisons kept in the store: computed once for a pair of campaign versions, then read back.

`compare_campaigns` reads a kept comparison with nothing but the store and the records (no numpy, no measure
registry: `compare A B` prints at once); only a comparison it does not find loads evalcore.compare.comparison, which
computes it.

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
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from evalcore.access import Principal, scope
from evalcore.campaigns import Campaign, get_campaign
from evalcore.campaigns.records import results_version
from evalcore.compare import power
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
from evalcore.compare.exact import RESAMPLES
from evalcore.compare.preference import Preference
from evalcore.errors import EvalError
from evalcore.store import Connection, Store, dumps

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


def compare_campaigns(store: Store, a_id: str, b_id: str, *, seed: int = 0, resamples: int = RESAMPLES,
                      effect: float = power.EFFECT, tenant: str | None = None,
                      principal: Principal | None = None, basis: str | None = None,
                      tolerances: Mapping[str, float] | None = None) -> Comparison:
    """Compare two stored campaigns (A is the baseline, B the candidate), computed once per pair of versions.

    The comparison is kept in the store under both campaigns' ids and results versions, the seed
    and the resamples; while none of them changes it is read back, not recomputed.
    Another tenant's campaign is NotFound, as a missing one. `tolerances` re-decide the verdicts of the kept
    comparison (`Comparison.with_tolerances`).
    """
    check_draws(seed, resamples)
    effect = power.check_effect(effect)
    tenant = scope(principal, tenant)
    a, b = get_campaign(store, a_id, tenant=tenant), get_campaign(store, b_id, tenant=tenant)
    pairwise = find_preference(store, a, b)
    if basis:  # an asked basis is not the stored default: computed, not kept
        from evalcore.compare.comparison import computed

        return replace(computed(store, a, b, seed=seed, resamples=resamples, effect=effect, basis=basis,
                                tolerances=tolerances), pairwise=pairwise)
    comparison = find(store, a, b, seed=seed, resamples=resamples)
    if comparison is None:
        from evalcore.compare.comparison import computed  # the statistics (numpy), the measure registry: only now

        comparison = computed(store, a, b, seed=seed, resamples=resamples)
        keep(store, comparison, a, b)
    return replace(comparison.with_effect(effect).with_tolerances(tolerances or {}), pairwise=pairwise)


def check_draws(seed: int, resamples: int) -> None:
    """Refuse a seed numpy cannot take, or a resample count that leaves the tests nothing to draw."""
    if not isinstance(resamples, int) or resamples < 1:
        raise EvalError("resamples must be a whole number of at least 1", found=str(resamples),
                        expected=f">= 1 (default {RESAMPLES})")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise EvalError("the seed must be a whole number of at least 0", found=str(seed), expected=">= 0 (default 0)")


def key(a: Campaign, b: Campaign, seed: int, resamples: int) -> tuple[Any, ...]:
    """The values that find a stored comparison, in the order of the table's columns."""
    return (a.id, b.id, str(seed), resamples, results_version(a), results_version(b), FORMAT)


def find(store: Store, a: Campaign, b: Campaign, *, seed: int, resamples: int) -> Comparison | None:
    """The stored comparison of A and B for these versions, seed and resamples, or None.

    Its questions are KeptQuestions: decoded into records only when a face reads one."""
    rows = store.read("SELECT data, paired FROM comparisons WHERE a_id = ? AND b_id = ? AND seed = ? AND "
                      "resamples = ? AND a_version = ? AND b_version = ? AND format = ?", key(a, b, seed, resamples))
    if not rows:
        return None
    head, _, lines = rows[0]["data"].partition("\n")
    data = json.loads(head)
    questions = KeptQuestions(lines, Summary.from_dict(data["summary"]))
    return Comparison(a=CampaignHeader.of(a), b=CampaignHeader.of(b), questions=questions,
                      measures=[MeasureDelta.from_dict(m) for m in data["measures"]], warnings=data["warnings"],
                      config_diff=data["config_diff"], seed=seed, resamples=resamples, notes=data["notes"],
                      effect=data["effect"], paired=Packed(rows[0]["paired"], data["paired"]), basis=data["basis"],
                      basis_reason=data["basis_reason"],
                      cost=CostDelta.from_dict(data["cost"]) if data.get("cost") else None,
                      turns={int(qid): (name, turn) for qid, (name, turn) in data.get("turns", {}).items()},
                      tolerances=data.get("tolerances", {}))


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
            conn.execute(
                "INSERT INTO comparisons (a_id, b_id, seed, resamples, a_version, b_version, format, data, paired, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (a_id, b_id, seed, resamples) DO "
                "UPDATE SET a_version = excluded.a_version, b_version = excluded.b_version, format = excluded.format, "
                "data = excluded.data, paired = excluded.paired, created_at = excluded.created_at", row)
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
    """A kept comparison's per-measure values, unpacked from pack's archive when one is first read (the text report
    and the JSON never read them; the Compare page's plots do)."""

    def __init__(self, blob: bytes, names: list[str]) -> None:
        self.blob, self.names = blob, names
        self._values: dict[str, Paired] | None = None

    def values_by_name(self) -> dict[str, Paired]:
        """Every measure's values (unpacked on the first call)."""
        if self._values is None:
            self._values = unpack(self.blob, self.names)
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
    rows = store.read("SELECT data FROM pairwise WHERE a_id = ? AND b_id = ? AND a_version = ? AND b_version = ? "
                      "ORDER BY created_at DESC LIMIT 1", (a.id, b.id, results_version(a), results_version(b)))
    return Preference.from_dict(json.loads(rows[0]["data"])) if rows else None


def keep_preference(store: Store, preference: Preference, a: Campaign, b: Campaign) -> None:
    """Store a pairwise judgement under both campaigns' versions and its judge's signature (replacing an older one)."""
    row = (a.id, b.id, preference.signature, results_version(a), results_version(b), dumps(preference.to_dict()),
           preference.created_at)
    store.write(lambda conn: conn.execute(
        "INSERT INTO pairwise (a_id, b_id, signature, a_version, b_version, data, created_at) VALUES (?, ?, ?, ?, ?, "
        "?, ?) ON CONFLICT (a_id, b_id, signature) DO UPDATE SET a_version = excluded.a_version, "
        "b_version = excluded.b_version, data = excluded.data, created_at = excluded.created_at", row))
