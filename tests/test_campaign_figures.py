"""A campaign's figures kept once it has ended (headline means, aggregates, summary) and its questions read a page
at a time: the same values as computed from every row, recomputed when the results change."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evalcore.campaigns import (
    CampaignManager,
    campaign_aggregates,
    campaign_lines,
    campaign_results,
    campaign_summary,
    get_campaign,
    list_campaigns,
)
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.listing import COST_FIGURES, HEADLINE, headline_means, keep_ended_figures
from evalcore.campaigns.queries import PANEL_FIGURES, compute_aggregates, compute_summary
from evalcore.campaigns.recompute import recompute_abstention
from evalcore.campaigns.records import results_version
from evalcore.targets import TargetConfig
from tests.conftest import as_stored_before_packing


@pytest.fixture
def manager(tmp_path: Path):
    result = CampaignManager(tmp_path / "figures.db")
    result.after_each(keep_ended_figures)  # as the dashboard, the API and the worker do
    yield result
    result.close()


def launch(manager: CampaignManager, dataset: Path) -> str:
    campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=TargetConfig.of(
        retriever="bm25", knowledge_base=str(dataset)), cache=False))
    assert manager.wait(campaign_id, timeout=60).status == "succeeded"
    deadline = time.monotonic() + 30
    while len(kept(manager, campaign_id)) < 3 and time.monotonic() < deadline:  # kept once it ended
        time.sleep(0.05)
    assert set(kept(manager, campaign_id)) == {PANEL_FIGURES, "headline/1", COST_FIGURES}
    return campaign_id


def kept(manager: CampaignManager, campaign_id: str) -> dict[str, str]:
    rows = manager.store.read("SELECT kind, version FROM campaign_figures WHERE campaign_id = ?", (campaign_id,))
    return {row["kind"]: row["version"] for row in rows}


def forget(manager: CampaignManager, campaign_id: str) -> None:
    manager.store.write(lambda conn: conn.execute("DELETE FROM campaign_figures WHERE campaign_id = ?", (campaign_id,)))


def test_figures_are_kept_once_and_read_back_the_same(manager: CampaignManager, tiny_dataset: Path) -> None:
    campaign_id = launch(manager, tiny_dataset)
    store = manager.store
    computed = compute_aggregates(store, campaign_id)
    summary = compute_summary(store, campaign_id, computed)
    forget(manager, campaign_id)
    assert campaign_aggregates(store, campaign_id) == computed  # computed, then kept
    assert set(kept(manager, campaign_id)) == {PANEL_FIGURES}
    assert campaign_aggregates(store, campaign_id) == computed  # read back
    assert campaign_summary(store, campaign_id) == summary
    campaigns = list_campaigns(store)
    first = headline_means(store, campaigns)
    assert set(kept(manager, campaign_id)) == {PANEL_FIGURES, "headline/1"}
    assert headline_means(store, campaigns) == first
    assert first[campaign_id]


def test_changed_results_are_computed_afresh(manager: CampaignManager, tiny_dataset: Path) -> None:
    campaign_id = launch(manager, tiny_dataset)
    store = manager.store
    measure = HEADLINE[0]
    campaign_aggregates(store, campaign_id)
    headline_means(store, list_campaigns(store))

    def set_values(value: float) -> None:  # measures written to the rows' JSON column, as a recomputation does
        def write(conn) -> None:
            as_stored_before_packing(conn, "campaign_id = ?", (campaign_id,))
            conn.execute("UPDATE results SET measures = ? WHERE campaign_id = ?", (json.dumps({measure: value}),
                                                                                    campaign_id))

        store.write(write)

    # Values changed under the same results version, as a recomputation of abstention does: it forgets the figures.
    set_values(0.25)
    recompute_abstention(store, campaign_id)
    assert kept(manager, campaign_id) == {}
    assert campaign_aggregates(store, campaign_id) == compute_aggregates(store, campaign_id)
    assert headline_means(store, list_campaigns(store))[campaign_id][measure] == 0.25
    # Another results version (questions retried, resumed): the kept figures are not used, and are replaced.
    store.write(lambda conn: conn.execute("UPDATE campaigns SET ended_at = ended_at + 1 WHERE id = ?", (campaign_id,)))
    set_values(0.5)
    assert campaign_aggregates(store, campaign_id)[measure].mean == 0.5
    assert headline_means(store, list_campaigns(store))[campaign_id][measure] == 0.5
    assert set(kept(manager, campaign_id).values()) == {results_version(get_campaign(store, campaign_id))}


def test_running_campaigns_keep_no_figures(manager: CampaignManager, tiny_dataset: Path) -> None:
    campaign_id = launch(manager, tiny_dataset)
    store = manager.store
    store.write(lambda conn: conn.execute("UPDATE campaigns SET status = 'running' WHERE id = ?", (campaign_id,)))
    forget(manager, campaign_id)
    campaign_aggregates(store, campaign_id)
    headline_means(store, list_campaigns(store))
    assert kept(manager, campaign_id) == {}
    assert campaign_aggregates(store, "no-such-campaign") == {}


def test_lines_and_a_page_of_results_are_those_of_every_result(manager: CampaignManager, tiny_dataset: Path) -> None:
    campaign_id = launch(manager, tiny_dataset)
    every = campaign_results(manager.store, campaign_id)
    lines = campaign_lines(manager.store, campaign_id)
    assert [(x.position, x.qid, x.text, x.answer, x.error) for x in lines] == [
        (r.question.position, r.question.qid, r.question.text, r.outcome.answer, r.outcome.error) for r in every]
    picked = (every[-1].question.position, every[0].question.position)
    assert campaign_results(manager.store, campaign_id, positions=picked) == [every[0], every[-1]]
    assert campaign_results(manager.store, campaign_id, positions=()) == []
