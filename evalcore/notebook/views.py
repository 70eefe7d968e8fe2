"""What a notebook gets back: campaigns, comparisons and sweeps as DataFrames, Arrow tables, HTML and charts."""

from __future__ import annotations

import html
import importlib.util
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from evalcore.campaigns import (
    Campaign,
    CampaignManager,
    Summary,
    campaign_aggregates,
    campaign_diagnosis,
    campaign_results,
    campaign_summary,
    get_campaign,
)
from evalcore.campaigns.conversation_measures import campaign_conversations
from evalcore.campaigns.export import graded_marks, result_table
from evalcore.campaigns.talk_judges import judge_conversations
from evalcore.compare import Comparison, Sweep, tables
from evalcore.compare.charts import delta_figure, delta_specs, series_figure, series_spec, stage_bars, stage_bars_spec
from evalcore.compare.export_context import comparison_context, source_names, sweep_context
from evalcore.costs import cost_line, role_name
from evalcore.diagnosis import StageCounts
from evalcore.errors import EvalError
from evalcore.gates import Check, campaign_checks, gate, worse_checks
from evalcore.metrics import MEASURES, display_order, higher_is_better
from evalcore.store import Store

if TYPE_CHECKING:
    import plotly.graph_objects as go

VEGA_LITE = "application/vnd.vegalite.v5+json"
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"  # names the version; nothing is fetched
AGGREGATE_COLUMNS = ["measure", "panel", "mean", "n", "higher_is_better"]
COST_COLUMNS = ["role", "model", "prompt_tokens", "completion_tokens", "cost", "currency"]
CONVERSATION_COLUMNS = ["conversation", "turn", "qid", "question", "stage", "error", "share_passed",
                        "first_failing_turn"]
SHOWN_ROWS = 20  # rows of a table in a cell's display; the methods return them all
POLL_S = 0.5


def to_arrow(frame: pd.DataFrame) -> pa.Table:
    """An Arrow table of a frame (its columns, not its index)."""
    return pa.Table.from_pandas(frame, preserve_index=False)


@dataclass(frozen=True)
class Chart:
    """A Vega-Lite chart that Jupyter draws with its own renderer (offline: the renderer ships with it)."""

    spec: dict[str, Any]

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        width = {"width": 640} if self.spec.get("width") == "container" else {}
        return {VEGA_LITE: {"$schema": SCHEMA, **self.spec, **width}, "text/plain": f"<Chart: {self.title}>"}

    @property
    def title(self) -> str:
        """The chart's first title line."""
        title = self.spec.get("title", "")
        return str(title.get("text", "") if isinstance(title, dict) else title).split("\n")[0]


def frame_html(frame: pd.DataFrame) -> str:
    """A frame as an escaped HTML table of its first rows."""
    more = f"<p>… {len(frame) - SHOWN_ROWS} more rows</p>" if len(frame) > SHOWN_ROWS else ""
    return str(frame.head(SHOWN_ROWS).to_html(index=False, na_rep="", float_format=lambda v: f"{v:.4g}")) + more


def heading(title: str, lines: Sequence[str]) -> str:
    """An HTML heading and a few lines of escaped text."""
    return f"<h4>{html.escape(title)}</h4>" + "".join(f"<div>{html.escape(line)}</div>" for line in lines)


class CampaignView:
    """A stored campaign: its record, its per-question results, its aggregates and its summary."""

    def __init__(self, store: Store, campaign_id: str) -> None:
        self.store = store
        self.record: Campaign = get_campaign(store, campaign_id)

    @property
    def id(self) -> str:
        """The campaign's id."""
        return self.record.id

    def results(self) -> pd.DataFrame:
        """One row per finished question, with the CSV export's columns and values."""
        header, rows = result_table(campaign_results(self.store, self.id), marks=graded_marks(self.store, self.id))
        return pd.DataFrame(rows, columns=header)

    def conversations(self, *, judge: bool = False) -> pd.DataFrame:
        """One row per turn of each conversation: conversation, turn, question, stage, error, and the conversation's
        share of turns passed and first failing turn, then each conversation judge's result once asked (`judge=True`
        asks them first, with the campaign's judge model); empty when every question was asked alone."""
        if judge:
            judge_conversations(self.store, self.id)
        found_all = campaign_conversations(self.store, self.id)
        judges = sorted({name for found in found_all for name in found.judges})
        rows = [{"conversation": found.conversation, **turn.to_dict(), "share_passed": found.share_passed,
                 "first_failing_turn": found.first_failing_turn,
                 **{name: str(verdict.result) for name, verdict in found.judges.items()}}
                for found in found_all for turn in found.turns]
        return pd.DataFrame(rows, columns=[*CONVERSATION_COLUMNS, *judges])

    def aggregates(self) -> pd.DataFrame:
        """One row per measure in display order: measure, panel, mean, n (questions where present), direction."""
        means = campaign_aggregates(self.store, self.id)
        rows = [{"measure": name, "panel": getattr(MEASURES.get(name), "family", ""), "mean": value.mean,
                 "n": value.count, "higher_is_better": higher_is_better(name)}
                for name, value in sorted(means.items(), key=lambda item: display_order(item[0]))]
        return pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)

    def summary(self) -> Summary:
        """Answered and failed questions, latency, tokens, the suite measures' means."""
        return campaign_summary(self.store, self.id)

    def costs(self) -> pd.DataFrame:
        """One row per role and model: prompt and completion tokens, what they cost ("no price" is an empty cost), the
        currency."""
        rows = [{"role": role_name(use.role), "model": use.model, "prompt_tokens": use.prompt,
                 "completion_tokens": use.completion, "cost": use.cost, "currency": use.currency}
                for use in self.summary().usage]
        return pd.DataFrame(rows, columns=COST_COLUMNS)

    def chart(self) -> Chart:
        """The Campaigns page's chart: questions per failure stage (Vega-Lite)."""
        return Chart({**stage_bars_spec(self._stages()), "title": "Failure stage of each question"})

    def figure(self) -> go.Figure:
        """The same chart as a Plotly figure."""
        return stage_bars(self._stages()).update_layout(title="Failure stage of each question")

    def _stages(self) -> dict[str, StageCounts]:
        return {self.record.name: campaign_diagnosis(self.store, self.id)}

    def check(self, fail_under: Mapping[str, float], bound: str = "mean") -> list[Check]:
        """The gates `measure -> mark` on this campaign (as `run --fail-under` takes them)."""
        gates = [gate(name, mark, bound) for name, mark in fail_under.items()]
        return campaign_checks(gates, campaign_results(self.store, self.id))

    def _repr_html_(self) -> str:
        c = self.record
        lines = [f"{c.id} · {c.kind} {c.source} · {c.status_text}",
                 f"{c.finished}/{c.total} questions finished, {c.failed} failed",
                 cost_line(self.summary().usage, c.finished)]
        return heading(c.name, lines) + frame_html(self.aggregates())

    def __repr__(self) -> str:
        return f"<CampaignView {self.id} {self.record.status.value} {self.record.finished}/{self.record.total}>"


class ComparisonView:
    """Two campaigns compared: the measures' deltas, the questions' verdicts, the failure-stage transitions."""

    def __init__(self, store: Store, comparison: Comparison) -> None:
        self.comparison = comparison
        self._a, self._b = get_campaign(store, comparison.a.id), get_campaign(store, comparison.b.id)
        self._context = comparison_context(comparison, self._a, self._b, source_names(store, (self._a, self._b)))

    def measures(self) -> pd.DataFrame:
        """One row per measure: n, mean_a, mean_b, delta, ci_low, ci_high, p_value, significant, power, test."""
        return tables.measure_frame(self.comparison)

    def questions(self) -> pd.DataFrame:
        """One row per question: its verdict, the basis and its values, stages, passages that moved, answers."""
        return tables.question_frame(self.comparison.questions)

    def transitions(self) -> pd.DataFrame:
        """The failure stages of the common questions: A's per row, B's per column."""
        return tables.transition_frame(self.comparison.transitions)

    def pairwise(self) -> pd.DataFrame | None:
        """The pairwise judge's verdict per question (None when it was not asked): verdict, flipped, each order."""
        return None if self.comparison.pairwise is None else tables.pairwise_frame(self.comparison.pairwise)

    def worse(self, measures: Sequence[str] = ("headline",)) -> list[Check]:
        """One check per measure: failed when B is significantly worse than A (as `compare --fail-if-worse`)."""
        return worse_checks(self.comparison, list(measures))

    def chart(self) -> Chart:
        """The dashboard's delta chart (Vega-Lite): one panel per scale, stacked."""
        panels = [{**{key: value for key, value in spec.items() if key != "$schema"},
                   **({"width": 640} if spec.get("width") == "container" else {})}
                  for spec in delta_specs(self.comparison, self._context)]
        return Chart({"title": panels[0].pop("title", "") if panels else "", "vconcat": panels})

    def figure(self) -> go.Figure:
        """The same chart as a Plotly figure (`.show()`, `.write_html(...)`)."""
        return delta_figure(self.comparison, self._context)

    def _repr_html_(self) -> str:
        c = self.comparison
        lines = [f"A {self._a.name} ({c.a.id}) → B {self._b.name} ({c.b.id})",
                 "verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(c.verdicts.items()))
                 + f" (by {c.basis_reason})",
                 *([f"cost: {c.trade_off} ({c.cost.text()})"] if c.cost else []),
                 *(f"warning: {w}" for w in c.warnings + c.power_warnings),
                 *([c.pairwise.summary] if c.pairwise else [])]
        columns = ["measure", "n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "significant"]
        return heading("comparison", lines) + frame_html(self.measures()[columns])


class SweepView:
    """Several campaigns, one value of a key each: a table of means and the series of each measure."""

    def __init__(self, store: Store, sweep: Sweep) -> None:
        self.sweep = sweep
        campaigns = [get_campaign(store, row.id) for row in sweep.table]
        self._campaigns = {c.id: c for c in campaigns}
        self._context = sweep_context(sweep, campaigns, source_names(store, campaigns))

    def table(self) -> pd.DataFrame:
        """One row per campaign: name, id, the swept value, each measure's mean, verdicts against the baseline."""
        return tables.sweep_frame(self.sweep, self._campaigns)

    def chart(self, measure: str) -> Chart:
        """The dashboard's series of one measure over the swept values (Vega-Lite)."""
        return Chart(series_spec(self.sweep, self._series(measure), self._context))

    def figure(self, measure: str) -> go.Figure:
        """The same series as a Plotly figure."""
        return series_figure(self.sweep, self._series(measure), self._context)

    def _series(self, measure: str) -> str:
        if measure not in self.sweep.series:
            raise EvalError("no such measure in this sweep", where="measure", found=repr(measure),
                            expected=", ".join(self.sweep.series))
        return measure

    def _repr_html_(self) -> str:
        lines = [f"baseline {self.sweep.baseline}", *(f"warning: {w}" for w in self.sweep.warnings)]
        return heading(f"sweep over {self.sweep.key or '(no single key)'}", lines) + frame_html(self.table())


class RunHandle:
    """A campaign running in the background: poll it, wait for it, cancel it."""

    def __init__(self, manager: CampaignManager, campaign_id: str) -> None:
        self.manager, self.id = manager, campaign_id

    @property
    def done(self) -> bool:
        """Whether the campaign has ended (succeeded, failed, cancelled or interrupted)."""
        return not get_campaign(self.manager.store, self.id).active

    def status(self) -> Campaign:
        """The campaign's record now: status, finished, failed, progress()."""
        return get_campaign(self.manager.store, self.id)

    def wait(self, timeout: float | None = None, *, progress: bool = True) -> CampaignView:
        """Block until it ends (or timeout seconds), with a progress bar; then its results."""
        follow(self.manager, self.id, timeout, progress)
        return CampaignView(self.manager.store, self.id)

    def cancel(self) -> None:
        """Ask it to stop after the questions in flight."""
        self.manager.cancel(self.id)

    def __repr__(self) -> str:
        c = self.status()
        return f"<RunHandle {self.id} {c.status.value} {c.finished}/{c.total}>"


def follow(manager: CampaignManager, campaign_id: str, timeout: float | None, progress: bool) -> None:
    """Follow the campaign until it ends or time is up, showing finished questions on a progress bar."""
    deadline = None if timeout is None else time.monotonic() + timeout
    campaign = get_campaign(manager.store, campaign_id)
    shown = None
    with progress_bar(campaign.total, disable=not progress) as bar:
        while True:
            if (campaign.finished, campaign.failed) != shown:  # a line per change, not per poll, in a text cell
                shown = (campaign.finished, campaign.failed)
                bar.set_postfix_str(f"{campaign.failed} failed", refresh=False)
                bar.update(campaign.finished - bar.n)
            if not campaign.active or (deadline is not None and time.monotonic() >= deadline):
                return
            # Until it ends (its runner's thread joined, when it runs here), for at most a refresh of the bar.
            step = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
            campaign = manager.wait(campaign_id, timeout=step)


def progress_bar(total: int, *, disable: bool) -> Any:
    """tqdm's notebook widget when ipywidgets is installed (tqdm.auto would warn without it), else its text bar."""
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm(total=total, unit="questions", disable=disable)
