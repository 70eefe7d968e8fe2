"""Comparison of two campaigns: per-question verdicts, per-measure deltas with uncertainty, warnings."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evalcore.compare import stats
from evalcore.errors import EvalError

# Seed 003 decides a question by the AI score, else coverage, else sources found. Dataset
# campaigns have none of these, so the ranking and answer measures decide after them.
VERDICT_BASIS = ("judge.score", "coverage", "sources_found", "ndcg@10", "rougel")
BINARY = ("sources_found", "judge.groundedness_pro")
PASS_SUFFIX = ":pass"
EPSILON = 1e-9
CAMPAIGN_FIELDS = ("id", "kind", "source", "status", "dataset_hash", "config", "total", "finished", "failed")


@dataclass
class Comparison:
    """Two campaigns side by side: verdicts per question, statistics per measure, warnings."""

    a: dict
    b: dict
    questions: list[dict]
    measures: list[dict]
    warnings: list[str]
    config_diff: dict[str, list]
    seed: int
    resamples: int
    notes: list[str] = field(default_factory=list)

    @property
    def verdicts(self) -> dict[str, int]:
        """How many questions got each verdict."""
        return dict(Counter(q["verdict"] for q in self.questions))

    def to_dict(self) -> dict:
        """JSON shape for --json, the API and the dashboard."""
        return {"a": self.a, "b": self.b, "verdicts": self.verdicts, "questions": self.questions,
                "measures": self.measures, "warnings": self.warnings, "notes": self.notes,
                "config_diff": self.config_diff, "seed": self.seed, "resamples": self.resamples}


def higher_is_better(name: str) -> bool:
    """The measure's direction from the registry (judge pass rates and unknown names: higher)."""
    from evalcore.metrics import MEASURES
    measure = MEASURES.get(name.split(PASS_SUFFIX)[0])
    return bool(getattr(measure, "higher_is_better", True))


def is_number(value: Any) -> bool:
    """A finite int or float (booleans count, as 1/0)."""
    return isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value))


def row_values(row: dict) -> dict[str, float]:
    """Every measure of a result row, judges included (`judge.X` and the pass/fail `judge.X:pass`)."""
    values = {k: float(v) for k, v in (row.get("measures") or {}).items() if is_number(v)}
    for name, verdict in (row.get("judges") or {}).items():
        if not isinstance(verdict, dict):
            continue
        if is_number(verdict.get("score")):
            values.setdefault(f"judge.{name}", float(verdict["score"]))
        if verdict.get("result") in ("pass", "fail") and f"judge.{name}" not in BINARY:
            values[f"judge.{name}{PASS_SUFFIX}"] = 1.0 if verdict["result"] == "pass" else 0.0
    return values


def question_key(row: dict) -> tuple[Any, str]:
    """Two results are the same question when their id and their text both match."""
    return (row.get("qid"), " ".join(str(row.get("question") or "").split()))


def verdict(a_row: dict, b_row: dict) -> tuple[str, str | None, float | None, float | None]:
    """(verdict, basis measure, value in A, value in B) for a question both campaigns asked."""
    a_failed, b_failed = bool(a_row.get("error")), bool(b_row.get("error"))
    if a_failed or b_failed:
        kind = "same" if a_failed == b_failed else "better" if a_failed else "worse"
        return kind, "error", None, None
    a_values, b_values = row_values(a_row), row_values(b_row)
    for basis in VERDICT_BASIS:
        if basis in a_values and basis in b_values:
            delta = b_values[basis] - a_values[basis]
            kind = "same" if abs(delta) <= EPSILON else "better" if delta > 0 else "worse"
            return kind, basis, a_values[basis], b_values[basis]
    return "unscored", None, None, None


def relevant_pids(row: dict) -> set[int]:
    """Passage ids labelled relevant (label >= 1) for this question."""
    return {int(pid) for pid, label in (row.get("relevant") or {}).items() if is_number(label) and label >= 1}


def retrieved_pids(row: dict) -> dict[int, str]:
    """Retrieved passage id -> title, in rank order."""
    return {int(r["pid"]): str(r.get("title") or "") for r in row.get("retrieved") or [] if r.get("pid") is not None}


def found_sources(row: dict) -> set[str]:
    """The expected sources that one of the retrieved sources matches (DESIGN section 3)."""
    from evalcore.metrics import sources_found
    sources = row.get("sources") or []
    return {s for s in row.get("expected_sources") or [] if sources_found([s], sources)}


def passage_changes(a_row: dict, b_row: dict) -> dict:
    """Relevant passages (and expected sources) that entered or left the retrieved list from A to B."""
    relevant = relevant_pids(a_row) | relevant_pids(b_row)
    a_top, b_top = retrieved_pids(a_row), retrieved_pids(b_row)
    titles = {**a_top, **b_top}
    entered = sorted(relevant & (b_top.keys() - a_top.keys()))
    left = sorted(relevant & (a_top.keys() - b_top.keys()))
    changes: dict[str, Any] = {"entered": [{"pid": p, "title": titles[p]} for p in entered],
               "left": [{"pid": p, "title": titles[p]} for p in left]}
    if a_row.get("expected_sources") or b_row.get("expected_sources"):
        a_found, b_found = found_sources(a_row), found_sources(b_row)
        changes["sources_entered"] = sorted(b_found - a_found)
        changes["sources_left"] = sorted(a_found - b_found)
    return changes


def question_entry(key: tuple, a_row: dict | None, b_row: dict | None) -> dict:
    """One line of the per-question table."""
    entry = {"qid": key[0], "question": (a_row or b_row or {}).get("question"),
             "answer_a": (a_row or {}).get("answer"), "answer_b": (b_row or {}).get("answer")}
    if a_row is None or b_row is None:
        return {**entry, "verdict": "new" if a_row is None else "removed", "basis": None, "a": None, "b": None}
    kind, basis, a_value, b_value = verdict(a_row, b_row)
    entry = {**entry, "verdict": kind, "basis": basis, "a": a_value, "b": b_value,
             "error_a": a_row.get("error") or None, "error_b": b_row.get("error") or None,
             "answer_changed": (a_row.get("answer") or "").strip() != (b_row.get("answer") or "").strip()}
    if basis == "error":
        # A failed question retrieved nothing: "relevant passages left" would only echo the failure.
        return {**entry, "entered": [], "left": []}
    return {**entry, **passage_changes(a_row, b_row)}


def measure_entry(name: str, pairs: list[tuple[float, float]], *, seed: int, resamples: int) -> dict:
    """Mean difference over the common questions, its 95% interval, a paired test and significance."""
    a_values, b_values = [p[0] for p in pairs], [p[1] for p in pairs]
    diffs = [b - a for a, b in pairs]
    mean_a, mean_b = sum(a_values) / len(pairs), sum(b_values) / len(pairs)
    low, high = stats.bootstrap_ci(diffs, resamples=resamples, seed=seed) or (None, None)
    p_random, method = stats.sign_flip_test(diffs, resamples=resamples, seed=seed)
    entry: dict[str, Any] = {"measure": name, "n": len(pairs), "mean_a": mean_a, "mean_b": mean_b, "delta": mean_b - mean_a,
             "ci_low": low, "ci_high": high, "p_randomization": p_random, "randomization": method,
             "higher_is_better": higher_is_better(name), "binary": is_binary(name, pairs)}
    if entry["binary"]:
        entry["mcnemar"] = stats.mcnemar_exact([a >= 0.5 for a in a_values], [b >= 0.5 for b in b_values])
        entry["p_value"], entry["test"] = entry["mcnemar"]["p_value"], "mcnemar-exact"
    else:
        entry["p_value"], entry["test"] = p_random, f"sign-flip randomization ({method})"
    entry["significant"] = entry["p_value"] < stats.ALPHA
    entry["improved"] = entry["significant"] and (entry["delta"] > 0) == entry["higher_is_better"]
    return entry


def is_binary(name: str, pairs: list[tuple[float, float]]) -> bool:
    """Pass/fail measures (McNemar applies): known binary names whose values are all 0 or 1."""
    known = name in BINARY or name.endswith(PASS_SUFFIX)
    return known and all(v in (0.0, 1.0) for pair in pairs for v in pair)


def campaign_header(campaign: dict) -> dict:
    """The fields of a campaign a comparison repeats."""
    return {k: campaign.get(k) for k in CAMPAIGN_FIELDS}


def config_diff(a: dict, b: dict) -> dict[str, list]:
    """Configuration keys whose values differ: key -> [value in A, value in B]."""
    a_config, b_config = a.get("config") or {}, b.get("config") or {}
    return {k: [a_config.get(k), b_config.get(k)] for k in sorted(a_config.keys() | b_config.keys())
            if a_config.get(k) != b_config.get(k)}


def judge_setups(rows: list[dict]) -> dict[str, set[tuple]]:
    """Judge name -> the (model, prompt hash) pairs used in these rows."""
    setups: dict[str, set[tuple]] = {}
    for row in rows:
        for name, verdict_ in (row.get("judges") or {}).items():
            if isinstance(verdict_, dict) and verdict_.get("score") is not None:
                setups.setdefault(name, set()).add((verdict_.get("model"), verdict_.get("prompt_hash")))
    return setups


def warnings_for(a: dict, b: dict, a_rows: list[dict], b_rows: list[dict], diff: dict, common: int) -> list[str]:
    """Why the comparison may not mean what it seems to mean."""
    out = []
    if len(diff) > 1:
        out.append(f"the configurations differ in {len(diff)} settings ({', '.join(diff)}): "
                   "a change cannot be attributed to one of them")
    if a.get("dataset_hash") and b.get("dataset_hash") and a["dataset_hash"] != b["dataset_hash"]:
        out.append("the dataset content differs (content hash): the questions or labels changed")
    if (a.get("kind"), a.get("source")) != (b.get("kind"), b.get("source")):
        out.append(f"different question sets ({a.get('kind')} {a.get('source')} vs {b.get('kind')} {b.get('source')})")
    a_judges, b_judges = judge_setups(a_rows), judge_setups(b_rows)
    for name in sorted(a_judges.keys() & b_judges.keys()):
        if a_judges[name] != b_judges[name]:
            out.append(f"judge {name} used a different model or prompt: its scores are not comparable")
    for side, campaign in (("A", a), ("B", b)):
        if campaign.get("status") not in (None, "succeeded"):
            out.append(f"campaign {side} ({campaign.get('id')}) is {campaign.get('status')}: results may be partial")
    if not common:
        out.append("the campaigns have no question in common (same id and same text)")
    return out


def compare_results(a_campaign: dict, a_rows: list[dict], b_campaign: dict, b_rows: list[dict], *,
                    seed: int = 0, resamples: int = stats.RESAMPLES) -> Comparison:
    """Compare two campaigns given their records and result rows (pure: no store)."""
    check_resamples(resamples)
    a_index = {question_key(r): r for r in a_rows}
    b_index = {question_key(r): r for r in b_rows}
    keys = list(a_index) + [k for k in b_index if k not in a_index]
    questions = [question_entry(k, a_index.get(k), b_index.get(k)) for k in keys]
    common = [k for k in keys if k in a_index and k in b_index]
    pairs: dict[str, list[tuple[float, float]]] = {}
    for key in common:
        a_values, b_values = row_values(a_index[key]), row_values(b_index[key])
        for name in sorted(a_values.keys() & b_values.keys()):
            pairs.setdefault(name, []).append((a_values[name], b_values[name]))
    measures = [measure_entry(n, p, seed=seed, resamples=resamples) for n, p in sorted(pairs.items())]
    diff = config_diff(a_campaign, b_campaign)
    notes = notes_for(a_campaign, b_campaign, diff, common=len(common), measured=set(pairs))
    notes += one_sided([a_index[k] for k in common], [b_index[k] for k in common], set(pairs))
    return Comparison(a=campaign_header(a_campaign), b=campaign_header(b_campaign), questions=questions,
                      measures=measures, config_diff=diff, seed=seed, resamples=resamples, notes=notes,
                      warnings=warnings_for(a_campaign, b_campaign, a_rows, b_rows, diff, len(common)))


def check_resamples(resamples: int) -> None:
    """Refuse a resample count that leaves the bootstrap and the randomization test nothing to draw."""
    if not isinstance(resamples, int) or resamples < 1:
        raise EvalError("resamples must be a whole number of at least 1", found=str(resamples),
                        expected=f">= 1 (default {stats.RESAMPLES})")


def notes_for(a: dict, b: dict, diff: dict, *, common: int, measured: set[str]) -> list[str]:
    """What the reader should know that is not a warning."""
    if a.get("id") is not None and a.get("id") == b.get("id"):
        return ["A and B are the same campaign: every question is the same, no difference can be significant"]
    notes = []
    same_questions = (a.get("kind"), a.get("source"), a.get("dataset_hash")) == (b.get("kind"), b.get("source"),
                                                                               b.get("dataset_hash"))
    if not diff and common and same_questions:
        notes.append("the configurations are identical: differences come from non-determinism")
    if common and not measured:
        notes.append("no measure is present on both sides of any common question")
    return notes


def one_sided(a_rows: list[dict], b_rows: list[dict], measured: set[str]) -> list[str]:
    """Measures present on the common questions of one campaign only (e.g. a judge run on B alone)."""
    notes = []
    for side, rows in (("A", a_rows), ("B", b_rows)):
        counts = Counter(name for row in rows for name in row_values(row) if name not in measured)
        notes += [f"{name} is measured only in {side} ({count} question(s)): not compared"
                  for name, count in sorted(counts.items())]
    return notes


def load(store: Any, campaign_id: str, tenant: str | None) -> tuple[dict, list[dict]]:
    """A campaign record and its result rows, through the campaigns module."""
    from evalcore.campaigns import campaign_results, get_campaign
    return get_campaign(store, campaign_id, tenant=tenant), campaign_results(store, campaign_id)


def compare_campaigns(store: Any, a_id: str, b_id: str, *, seed: int = 0, resamples: int = stats.RESAMPLES,
                      tenant: str | None = None) -> Comparison:
    """Compare two stored campaigns (A is the baseline, B the candidate)."""
    return compare_results(*load(store, a_id, tenant), *load(store, b_id, tenant), seed=seed, resamples=resamples)
