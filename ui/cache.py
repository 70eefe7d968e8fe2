"""Engine reads cached per campaign version (or per dataset's files): aggregates, results, a page of results, the
questions' lines, summaries, list rows, datasets."""

from __future__ import annotations

import streamlit as st

from evalcore.access.principals import Principal
from evalcore.campaigns import (
    Aggregate,
    Campaign,
    QuestionResult,
    Summary,
    campaign_aggregates,
    campaign_lines,
    campaign_results,
    campaign_summary,
)
from evalcore.campaigns.listing import CampaignRow, campaign_rows
from evalcore.campaigns.records import results_version
from evalcore.campaigns.result_rows import QuestionLine
from evalcore.datasets import Dataset, DatasetStats, dataset_stats, load_dataset, resolve_dataset
from evalcore.language.text import tokenize
from ui.engine import db_path, store


def open_dataset(ref: str) -> tuple[Dataset, DatasetStats, list[int]]:
    """The dataset, its statistics and its passage lengths in tokens, cached until a file changes."""
    path = resolve_dataset(ref)
    stamp = tuple(sorted((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in path.glob("*.parquet")))
    return _open_dataset(str(path), stamp)


@st.cache_resource(show_spinner="Loading the dataset…", max_entries=8)
def _open_dataset(path: str, stamp: tuple[tuple[str, int, int], ...]) -> tuple[Dataset, DatasetStats, list[int]]:
    dataset = load_dataset(path)
    return dataset, dataset_stats(dataset), [len(tokenize(p.text)) for p in dataset.passages]


def version(campaign: Campaign) -> tuple[str, str]:
    """What changes whenever a campaign's stored results may have changed (cache key): its id and results version."""
    return (campaign.id, results_version(campaign))


def aggregates(campaign: Campaign, principal: Principal) -> dict[str, Aggregate]:
    """campaign_aggregates, re-read only when the campaign changed."""
    return _aggregates(db_path(), version(campaign), principal)


@st.cache_data(show_spinner=False, max_entries=256)
def _aggregates(db: str, version: tuple[str, str], principal: Principal) -> dict[str, Aggregate]:
    return campaign_aggregates(store(), version[0], principal=principal)


def cached_results(campaign: Campaign, principal: Principal) -> list[QuestionResult]:
    """Every stored result of a campaign, re-read only when the campaign changed (shared, never copied: the
    records are frozen)."""
    return _results(db_path(), version(campaign), principal)


@st.cache_resource(show_spinner="Reading the results…", max_entries=8)
def _results(db: str, version: tuple[str, str], principal: Principal) -> list[QuestionResult]:
    return campaign_results(store(), version[0], principal=principal)


def cached_lines(campaign: Campaign, principal: Principal) -> list[QuestionLine]:
    """Every finished question's place, id, text, answer and error (what the questions' list filters on), re-read
    only when the campaign changed (shared, never copied: the lines are frozen)."""
    return _lines(db_path(), version(campaign), principal)


@st.cache_resource(show_spinner=False, max_entries=16)
def _lines(db: str, version: tuple[str, str], principal: Principal) -> list[QuestionLine]:
    return campaign_lines(store(), version[0], principal=principal)


def results_at(campaign: Campaign, principal: Principal, positions: tuple[int, ...]) -> list[QuestionResult]:
    """The stored results of the questions at these positions (a page of the list), in question order."""
    return _results_at(db_path(), version(campaign), principal, positions)


@st.cache_resource(show_spinner=False, max_entries=16)
def _results_at(db: str, version: tuple[str, str], principal: Principal, positions: tuple[int, ...],
                ) -> list[QuestionResult]:
    return campaign_results(store(), version[0], principal=principal, positions=positions)


def summary(campaign: Campaign, principal: Principal) -> Summary:
    """campaign_summary, re-read only when the campaign changed."""
    return _summary(db_path(), version(campaign), principal)


@st.cache_data(show_spinner=False, max_entries=64)
def _summary(db: str, version: tuple[str, str], principal: Principal) -> Summary:
    return campaign_summary(store(), version[0], principal=principal)


def rows_of(campaigns: list[Campaign], principal: Principal) -> list[CampaignRow]:
    """The campaigns as list rows (dataset or suite name, key settings, headline means: kept in the store once a
    campaign has ended, one read for all)."""
    return campaign_rows(store(), principal=principal, campaigns=campaigns)
