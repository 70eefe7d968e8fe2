"""What an exported chart, table or report says about where it comes from.

An export leaves the page that explained it: a chart saying "B − A" or a CSV of verdicts means
nothing a week later without the names of A and B, the questions (dataset or suite), the settings
that changed, how many questions, the test and the date. `ExportContext` holds those facts once;
the charts show them in a subtitle, CSV tables as columns after their own, files in their names.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalcore.access.principals import Principal, scope
from evalcore.campaigns import Campaign, CampaignKind
from evalcore.campaigns.listing import source_name, suite_names
from evalcore.compare.deltas import ONE_SIDED, Comparison
from evalcore.compare.pairing import Group, group_of
from evalcore.compare.sweep import Sweep
from evalcore.store import Store

SLUG_LIMIT = 24  # characters of one name in a file name (a whole name stays under 100)
VALUE_IN_NAME = 12  # characters of a changed setting's value added to a name in a file name
ID_IN_NAME = 8  # characters of a campaign's id added when two names are still the same
CHANGED_IN_CHART = 3  # changed settings a chart subtitle names before "+N more"
VALUE_IN_CHART = 40  # characters of one value in a chart subtitle
LINE_IN_CHART = 110  # characters of one subtitle line
CONTEXT_PREFIX = "context: "  # the header of a CSV's context columns: `context: A`, `context: changed`…


@dataclass(frozen=True)
class Fact:
    """One line of context: its label, its full value (one line of text) and what a chart shows of it (None:
    nothing)."""

    label: str
    value: str
    chart: str | None


def shown(label: str, value: str) -> Fact:
    """A fact charts show as it is."""
    return Fact(label, value, value)


def hidden(label: str, value: str) -> Fact:
    """A fact for CSV files and reports only."""
    return Fact(label, value, None)


@dataclass(frozen=True)
class ExportContext:
    """The facts an export carries, the stem of its file names (`<nameA>_vs_<nameB>`) and the date."""

    facts: tuple[Fact, ...]
    stem: str
    date: str  # YYYY-MM-DD

    def with_fact(self, fact: Fact) -> ExportContext:
        """The same context with this fact replacing the one of its label (or added before the date)."""
        if any(f.label == fact.label for f in self.facts):
            return replace(self, facts=tuple(fact if f.label == fact.label else f for f in self.facts))
        return replace(self, facts=(*self.facts[:-1], fact, self.facts[-1]))

    def csv_columns(self) -> dict[str, str]:
        """The columns a CSV table carries after its own, one per fact (`context: A`), the value on every row: the
        file opens as a table with no option, and a row keeps its context when sorted, filtered or concatenated."""
        return {f"{CONTEXT_PREFIX}{f.label}": f.value for f in self.facts}

    def chart_lines(self) -> list[str]:
        """The facts a chart shows, as plain text lines of at most about LINE_IN_CHART characters."""
        parts = [f"{f.label}: {cut(f.chart, VALUE_IN_CHART * 2)}" for f in self.facts if f.chart is not None]
        lines: list[str] = []
        for part in parts:
            if lines and len(lines[-1]) + len(part) + 3 <= LINE_IN_CHART:
                lines[-1] += f" · {part}"
            else:
                lines.append(part)
        return lines

    def file_stem(self, kind: str, detail: str = "") -> str:
        """A file name without its extension: `<kind>_<stem>[_<detail>]_<date>`, e.g.
        `compare_bm25_vs_hybrid_2025-06-01`."""
        return "_".join(part for part in (kind, self.stem, slug(detail), self.date) if part)


def one_line(text: object) -> str:
    """Text on one line (a CSV context line must stay one line; a chart line too)."""
    return " ".join(str(text).split())


def cut(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slug(text: str, limit: int = SLUG_LIMIT) -> str:
    """A file-name-safe, readable piece: letters and digits (any script), dots, runs of the rest as one `-`."""
    text = unicodedata.normalize("NFKC", text).casefold()
    # `_` separates the parts of a file name, so it is not kept inside one.
    cleaned = re.sub(r"[^\w.]+|_+", "-", text).strip("-.")
    return cleaned[:limit].rstrip("-.")


def value_text(value: Any) -> str:
    """A configuration value as one short line (a prompt over several lines becomes one)."""
    return "none" if value is None else one_line(value)


def changed_settings(diff: dict[str, list[Any]], limit: int | None = None) -> str:
    """`key A → B` for each differing setting (`limit` of them, then `+N more`), or `none`."""
    items = [f"{key} {value_text(a)} → {value_text(b)}" for key, (a, b) in diff.items()]
    if not items:
        return "none (same configuration)"
    if limit is not None and len(items) > limit:
        items = [*(cut(item, VALUE_IN_CHART) for item in items[:limit]), f"+{len(items) - limit} more"]
    return "; ".join(items)


def tests_used(comparison: Comparison) -> str:
    """The tests behind a comparison's significance marks, e.g. `sign-flip randomization (exact), mcnemar-exact`."""
    return ", ".join(sorted({m.test for m in comparison.measures}, reverse=True)) or "none (no measure in common)"


def comparison_context(comparison: Comparison, a: Campaign, b: Campaign, sources: dict[Group, str],
                       today: dt.date | None = None) -> ExportContext:
    """The context of a comparison of A (baseline) and B, `sources` naming each campaign's questions."""
    common = sum(q.verdict not in ONE_SIDED for q in comparison.questions)
    source_a, source_b = sources.get(group_of(a), a.source), sources.get(group_of(b), b.source)
    facts = (
        shown("A", one_line(a.name)), shown("B", one_line(b.name)),
        shown("questions", source_a if source_a == source_b else f"{source_a} (A) vs {source_b} (B)"),
        Fact("changed", changed_settings(comparison.config_diff),
             changed_settings(comparison.config_diff, CHANGED_IN_CHART)),
        shown("n", f"{common:,} questions in common"),
        Fact("test", f"{tests_used(comparison)}; * p < 0.05; 95% paired bootstrap intervals "
                     f"({comparison.resamples:,} resamples, seed {comparison.seed})", tests_used(comparison)),
        hidden("verdicts by", one_line(comparison.basis_reason or "nothing in common")),
        hidden("A id", a.id), hidden("B id", b.id),
        shown("exported", date_text(today)),
    )
    a_part, b_part = pair_parts(a, b, comparison.config_diff)
    return ExportContext(facts, f"{a_part}_vs_{b_part}", date_text(today))


def pair_slugs(a: str, b: str, limit: int = SLUG_LIMIT) -> tuple[str, str]:
    """Both names for a file name, told apart: when their first `limit` characters are the same (a sweep's
    `bm25 · … · top_k=3` and `… · top_k=10`), the end of each, where they differ, from a word's start; else
    each name whole when it fits, or its start and its end (where a sweep puts its value)."""
    whole_a, whole_b = slug(a, len(a) * 4 + 1), slug(b, len(b) * 4 + 1)
    if whole_a == whole_b or whole_a[:limit].rstrip("-.") != whole_b[:limit].rstrip("-."):
        return name_slug(whole_a, limit), name_slug(whole_b, limit)
    return tail(whole_a, limit), tail(whole_b, limit)


def name_slug(whole: str, limit: int) -> str:
    """A slug whole when it fits in `limit` characters, else its first words and its last (`topk-sweep-top-k-10`)."""
    if len(whole) <= limit or "-" not in whole:
        return whole[:limit].rstrip("-.")
    half = (limit - 1) // 2
    head = whole[:half + 1]
    head = head[:head.rfind("-")] if head.rfind("-") > 2 else head[:half]
    return f"{head.rstrip('-.')}-{tail(whole, limit - 1 - len(head.rstrip('-.')))}"


def tail(text: str, limit: int) -> str:
    """The last `limit` characters of a slug, from the start of a word when one starts in them."""
    if len(text) <= limit:
        return text
    end = text[-limit:]
    start = end.find("-")
    return end[start + 1:] if 0 <= start < len(end) - 1 else end.strip("-.")


def pair_parts(a: Campaign, b: Campaign, diff: dict[str, list[Any]]) -> tuple[str, str]:
    """The two sides of a comparison's file names: its names told apart, each with its value of a single changed
    setting when the name does not show it, then a short id when they are still the same."""
    a_part, b_part = pair_slugs(a.name, b.name)
    a_part, b_part = a_part or slug(a.id), b_part or slug(b.id)
    if len(diff) == 1:
        [(a_value, b_value)] = diff.values()
        a_part, b_part = with_value(a_part, a_value), with_value(b_part, b_value)
    if a_part == b_part:
        a_part, b_part = f"{a_part}-{slug(a.id, ID_IN_NAME)}", f"{b_part}-{slug(b.id, ID_IN_NAME)}"
    return a_part, b_part


def with_value(part: str, value: Any) -> str:
    """A name's slug ending with a setting's value, unless the name already shows it as a word."""
    shown = slug(value_text(value), VALUE_IN_NAME)
    if not shown or re.search(rf"(^|-){re.escape(shown)}($|-)", part):
        return part
    return f"{part}-{shown}"


def sweep_context(sweep: Sweep, campaigns: Sequence[Campaign], sources: dict[Group, str],
                  today: dt.date | None = None) -> ExportContext:
    """The context of a sweep: its campaigns (the first is the baseline), its questions, the key varied."""
    names = {group_of(c): sources.get(group_of(c), c.source) for c in campaigns}
    varied = sweep.key or f"several settings ({', '.join(sweep.varied) or 'none'})"
    facts = (
        shown("campaigns", " | ".join(one_line(c.name) for c in campaigns) + " (the first is the baseline)"),
        shown("questions", " vs ".join(dict.fromkeys(names.values()))),
        shown("varied", varied),
        shown("values", " | ".join(value_text(row.value) for row in sweep.table)),
        shown("n", " | ".join(f"{c.finished:,}" for c in campaigns) + " questions finished"),
        Fact("test", f"mean with its 95% bootstrap interval ({sweep.resamples:,} resamples, seed {sweep.seed}); "
                     "against the baseline: paired sign-flip randomization, McNemar for pass/fail",
             "bootstrap 95% interval of each mean"),
        hidden("ids", " | ".join(c.id for c in campaigns)),
        shown("exported", date_text(today)),
    )
    stem = f"{slug(sweep.key or 'campaigns')}_{slug(next(iter(names.values()), 'questions'))}"
    return ExportContext(facts, stem, date_text(today))


def date_text(today: dt.date | None) -> str:
    """The export's date, YYYY-MM-DD (local time)."""
    return (today or dt.datetime.now(dt.UTC).astimezone().date()).isoformat()


def source_names(store: Store, campaigns: Iterable[Campaign], *, principal: Principal | None = None,
                 tenant: str | None = None) -> dict[Group, str]:
    """How people name each group's questions: `dataset default` (the folder's name), `suite <its name>`."""
    groups = {group_of(c) for c in campaigns}
    has_suites = any(kind == CampaignKind.SUITE for kind, _ in groups)
    suites = suite_names(store, scope(principal, tenant)) if has_suites else {}
    return {(kind, source): f"{kind} {source_name(kind, source, suites)}" for kind, source in groups}
