"""Lists and pickers: suites and campaigns as tables whose rows are the options, saved targets."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from evalcore.access.principals import Principal
from evalcore.campaigns import list_campaigns
from evalcore.campaigns.listing import HEADLINE, CampaignRow, search_rows, suite_rows
from evalcore.store import Store
from evalcore.suites import Suite
from evalcore.targets.presets import DEFAULTS
from evalcore.targets.saved_targets import list_targets
from ui.cache import rows_of
from ui.engine import store
from ui.text import cells, fmt_value, fmt_when
from ui.widgets import remembered_select, select_next_run


def target_choices(store: Store, principal: Principal) -> dict[str, str]:
    """The principal's saved target ids with a label; "default" is the built-in default configuration."""
    choices = {DEFAULTS.name: DEFAULTS.label}
    choices.update({t.id: f"{t.name or 'unnamed'} · {t.id}" for t in list_targets(store, principal=principal)})
    return choices


def settings_cells(row_settings: dict[str, object]) -> dict[str, str]:
    """The key settings as a list shows them: text, an em dash where one does not apply (never None)."""
    return {key: "—" if value is None else str(value) for key, value in row_settings.items()}


def suite_frame(suites: list[Suite], principal: Principal) -> pd.DataFrame:
    """One line per suite: name, the dataset its configuration's knowledge base is, cases, the configuration
    (name and key settings), updated, its last campaign (status, date, headline means), id."""
    shown = {suite.id for suite in suites}
    rows = rows_of([c for c in list_campaigns(store(), principal=principal) if c.suite_id], principal)
    listed = [row for row in suite_rows(store(), principal=principal, rows=rows) if row.suite.id in shown]
    measures = [name for name in HEADLINE if any(row.last and name in row.last.headline for row in listed)]
    lines = []
    for row in listed:
        suite, run = row.suite, row.last
        lines.append({"name": suite.name, "dataset": row.dataset, "cases": len(suite.cases),
                      "configuration": row.configuration, **settings_cells(row.settings.to_dict()),
                      "updated": fmt_when(suite.updated_at),
                      "last campaign": run.campaign.status_text if run else "never run",
                      "last run": fmt_when(run.campaign.created_at) if run else "never",
                      **{name: fmt_value(run.headline.get(name) if run else None) for name in measures},
                      "id": suite.id})
    columns = ["name", "dataset", "cases", "configuration", "retriever", "reranker", "generator", "top_k", "updated",
               "last campaign", "last run", *measures, "id"]
    return pd.DataFrame(lines, columns=columns).rename(columns={"top_k": "top-k"})


def campaign_frame(rows: list[CampaignRow]) -> pd.DataFrame:
    """One line per campaign: name, dataset or suite, status, date, progress, key settings, headline means, id."""
    measures = [name for name in HEADLINE if any(name in row.headline for row in rows)]  # no empty column
    return pd.DataFrame([{
        "name": row.campaign.name, "dataset / suite": f"{row.campaign.kind} {row.source_name}",
        "status": row.campaign.status_text, "created": fmt_when(row.campaign.created_at),
        "progress": f"{row.campaign.finished}/{row.campaign.total}", **settings_cells(row.settings.to_dict()),
        **{name: fmt_value(row.headline.get(name)) for name in measures}, "cost": row.cost.text(),
        "id": row.campaign.id,
    } for row in rows], columns=["name", "dataset / suite", "status", "created", "progress", "retriever", "reranker",
                                 "generator", "top_k", *measures, "cost", "id"]).rename(columns={"top_k": "top-k"})


def row_label(row: CampaignRow) -> str:
    """A campaign in a picker: name, dataset or suite, status, date, and the id that tells twins apart."""
    c = row.campaign
    return f"{c.name} · {c.kind} {row.source_name} · {c.status_text} · {fmt_when(c.created_at)} · {c.id}"


def campaign_picker(rows: list[CampaignRow], state_key: str, key: str, label: str = "Campaign") -> str | None:
    """Search box, the campaigns as a table (sort by any column, click a row to pick it) and the picker;
    returns the picked campaign's id (None when the search matches nothing)."""
    needle = st.text_input(f"Search {label.lower()}s", key=f"{key}-search",
                           placeholder="words of the name, dataset or suite, status or settings")
    shown = search_rows(rows, needle)
    if not shown:
        st.info("No campaign matches: clear the search to see them all.")
        return None
    labels = {row.campaign.id: row_label(row) for row in shown}
    return table_picker(label, campaign_frame(shown), labels, state_key, key)


def table_picker(label: str, frame: pd.DataFrame, labels: dict[str, str], state_key: str, key: str,
                 first: str | None = None) -> str:
    """A table whose rows are the options (in the order of `labels`), then a selectbox of them (after `first`,
    an option with no row, such as a new suite); clicking a row picks it. Returns the picked option."""
    ids = list(labels)
    st.dataframe(cells(frame), hide_index=True, key=f"{key}-table",
                 on_select=lambda: _clicked(f"{key}-table", ids, state_key), selection_mode="single-row",
                 height=min(36 + 35 * len(frame), 300))
    options = [first, *ids] if first is not None else ids
    return remembered_select(label, options, state_key, format_func=lambda i: labels.get(i, i))


def _clicked(table_key: str, ids: list[str], state_key: str) -> None:
    """A row of a picker's table was clicked: its option becomes the pick."""
    rows = st.session_state[table_key].selection.rows
    if rows:
        select_next_run(state_key, ids[rows[0]])
