"""Dashboard helpers shared by the pages: engine handles, sign-in, the one error display, text, exports, uploads.

Pages stay thin: they read widgets, call the engine and render. Everything two pages need lives here.
Every stored string shown through Markdown (labels, captions, tooltips, alerts, progress text) goes
through escape_md; charts take it through chart_text; tables, st.text and st.code show it as it is.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlparse

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from evalcore.access import LOCAL, Action, LoginThrottle, Principal, is_loopback
from evalcore.campaigns import (
    Aggregate,
    Campaign,
    CampaignManager,
    QuestionResult,
    Summary,
    campaign_aggregates,
    campaign_results,
    campaign_summary,
    get_manager,
    list_campaigns,
)
from evalcore.campaigns.listing import (
    HEADLINE,
    CampaignRow,
    campaign_rows,
    headline_means,
    search_rows,
    suite_rows,
)
from evalcore.campaigns.pace import duration_text
from evalcore.compare import compare_with_previous, results_version
from evalcore.compare.charts import chart_text, stage_bars_spec  # noqa: F401 - chart_text: the one escape of chart text
from evalcore.csvcells import csv_text
from evalcore.datasets import FILES, Dataset, DatasetStats, dataset_stats, load_dataset, resolve_dataset
from evalcore.datasets.uploads import list_datasets, validate_upload  # noqa: F401 - the pages use them through ui
from evalcore.diagnosis import StageCounts
from evalcore.errors import EvalError
from evalcore.keys import (
    MAX_SECRET,
    SESSION_TTL_S,
    end_session,
    login_required,
    session_principal,
    sign_in,
    start_session,
)
from evalcore.metrics import MEASURES
from evalcore.store import Store, default_db_path
from evalcore.suites import Suite
from evalcore.targets.presets import DEFAULTS
from evalcore.targets.saved import list_targets
from evalcore.text import tokenize

T = TypeVar("T")
CHROMIUM = "/usr/bin/chromium"
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$=&])")
SESSION_TOKEN = "_session_token"  # this session's sign-in (evalcore.keys.start_session), never the API key
SESSION_COOKIE = "evalcore_session"  # the same token in the browser: a reload or a new tab stays signed in
# Failed sign-ins back off per session and per client address, across every session of this process.
THROTTLE = LoginThrottle()
REFUSED = "Sign-in refused: this key is unknown, revoked, malformed, or not allowed to open evaluations."
CREATE_KEY = "python -m evalcore keys create --tenant T --role admin --capability full-access"

if Path(CHROMIUM).exists():
    # kaleido drives a browser through choreographer, which looks here first.
    os.environ.setdefault("BROWSER_PATH", CHROMIUM)


# --- serving ------------------------------------------------------------------------------------

_NO_DELAY = threading.Event()


def no_delay() -> None:
    """Turn Nagle's algorithm off (TCP_NODELAY) on this server's listening socket and its open connections, once.

    Streamlit's server binds its own socket with protocol number 0, and asyncio only disables Nagle on
    sockets that say IPPROTO_TCP. So each response body, written after its headers, waits for the
    browser's delayed ACK: 40 ms for every script, font and message on a reused connection. A first
    visit fetches about 150 scripts over six connections: a second or more of waiting. Connections
    accepted later inherit the option from the listening socket; the ones already open (the first
    visit's own, its websocket) are set here too. Nothing to do where /dev/fd is missing (Windows).
    """
    if _NO_DELAY.is_set():
        return
    _NO_DELAY.set()
    port = st.get_option("server.port")
    try:
        descriptors = [int(name) for name in os.listdir("/dev/fd")]
    except OSError:
        return
    for fd in descriptors:
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            with socket.socket(fileno=os.dup(fd)) as sock:  # a duplicate: closing it leaves the server's open
                if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM \
                        and sock.getsockname()[1] == port:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # closed meanwhile, or not a TCP socket
            continue


# --- engine handles -----------------------------------------------------------------------------

def db_path() -> str:
    """The database this session uses (EVALCORE_DB or .evalcore/evalcore.db)."""
    return str(default_db_path().resolve())


def manager() -> CampaignManager:
    """The process-wide campaign manager for this database; each ended campaign is compared with the previous one."""
    found = get_manager(db_path())
    found.after_each(compare_with_previous)
    return found


def store() -> Store:
    """The store of this session's database, as the engine functions take it."""
    return manager().store


# --- who is signed in ---------------------------------------------------------------------------

def signed_in() -> Principal | None:
    """Who this session acts as: the local admin when no key exists, else the signed-in key (None: nobody).

    Refuses to go on when the server listens beyond this machine with no key to sign in with.
    """
    required = login_required(store())
    address = st.get_option("server.address")
    if not required and not is_loopback(address):
        st.error(f"This dashboard listens on {escape_md(address or 'every network interface')} and no API key "
                 "exists, so anyone who can reach it would be an admin. Create a key first, then sign in with it: "
                 f"`{CREATE_KEY}`. Or serve it on localhost only (`server.address` in .streamlit/config.toml).")
        st.stop()
    if not required:
        return LOCAL
    # This session's token, else the browser's (a reload or another tab): checked on every run, so a sign-out
    # anywhere, an expired session or a revoked key ends it at the next click.
    cookie = st.context.cookies.get(SESSION_COOKIE)
    token = st.session_state.get(SESSION_TOKEN) or (cookie if isinstance(cookie, str) else "")
    principal = session_principal(store(), token) if token else None
    if principal is None:
        st.session_state.pop(SESSION_TOKEN, None)
    else:
        st.session_state[SESSION_TOKEN] = token
    return principal


def session_cookie() -> None:
    """Make the browser's session cookie hold this session's token (after signed_in: none once signed out): the
    token only, never the key, for the session's lifetime, sent to this app only. Written on every run where the
    browser's cookie (as sent when this session opened) differs, so a run cut short by a page switch loses none."""
    token = st.session_state.get(SESSION_TOKEN) or ""
    cookie = st.context.cookies.get(SESSION_COOKIE)
    if token == (cookie if isinstance(cookie, str) else ""):
        return
    age = int(SESSION_TTL_S) if token else 0
    st.html(f"<script>document.cookie = {json.dumps(f'{SESSION_COOKIE}={token}')} + "
            f"'; path=/; max-age={age}; SameSite=Strict';</script>", unsafe_allow_javascript=True)


def sign_out() -> None:
    """End this session's sign-in everywhere (every tab of every browser holding its token), and clear the cookie."""
    if token := st.session_state.pop(SESSION_TOKEN, None):
        end_session(store(), token)


def sign_in_page() -> NoReturn:
    """The sign-in form alone; stops the script (nothing else is shown before a key is accepted)."""
    st.title("Sign in")
    st.caption("This dashboard asks for an API key (one from `python -m evalcore keys create`). "
               "It sees what the key's tenant owns, with the key's role.")
    with st.form("sign-in"):
        st.text_input("API key", type="password", max_chars=MAX_SECRET, key="sign-in-key",
                      autocomplete="current-password")  # a password manager may fill it
        st.form_submit_button("Sign in", type="primary", on_click=_attempt_sign_in)
    if st.session_state.pop("_refused", False):
        st.error(REFUSED)  # one message for every refusal: it never tells whether a key exists
    st.stop()


def _attempt_sign_in() -> None:
    """The form's callback (before the rerun it triggers): check the key after the back-off this session earned."""
    secret = st.session_state.pop("sign-in-key", "") or ""
    session = st.session_state.setdefault("_session", secrets.token_hex(8))
    address = f"address:{client_address()}"
    principal = THROTTLE.attempt(f"session:{session}", address, lambda: sign_in(store(), secret))
    if principal is None:
        st.session_state["_refused"] = True
    else:
        st.session_state[SESSION_TOKEN] = start_session(store(), principal)


def client_address() -> str:
    """The client's IP address as the server saw the connection ("local" when none: localhost, tests).

    Forwarded-for headers are not trusted (any client can write them); behind a proxy every client
    shares the proxy's address, and so its back-off.
    """
    address = st.context.ip_address
    return address if isinstance(address, str) and address else "local"


def identity(principal: Principal) -> None:
    """Who is signed in (sidebar), with the sign-out button; the local admin says why no sign-in was asked."""
    if principal.is_local:
        st.caption(f"Local admin of tenant {escape_md(principal.tenant)}: no API key exists, so no sign-in is asked. "
                   f"Creating one turns sign-in on: `{CREATE_KEY}`")
        return
    st.caption(f"Signed in: tenant **{escape_md(principal.tenant)}** · role **{escape_md(principal.role)}** · "
               f"capability {escape_md(principal.capability)}. This key {escape_md(principal.abilities)}.")
    st.button("Sign out", key="sign-out", on_click=sign_out, help="Ends this sign-in in every tab")


def page(text: str, needs: Action = Action.READ) -> Principal:
    """Start a page: route through app.py if needed, ask for a key if needed, check the role, show the title."""
    if "_routed" not in st.session_state:
        _route_through_app()
    principal = signed_in()
    if principal is None:
        sign_in_page()
    st.title(text)
    if (reason := principal.refusal(needs)) is not None:
        st.info(f"This page is reserved to the workspace's administrators: {escape_md(reason)}.")
        st.stop()
    if message := st.session_state.pop("_flash", None):
        st.success(escape_md(message))
    return principal


# --- errors -------------------------------------------------------------------------------------

def show_error(error: EvalError) -> None:
    """Show a user-fixable error as a readable message: what, where, found/expected, fix, every problem."""
    lines = [escape_md(error.message)]
    if error.where:
        lines.append(f"**Where:** {escape_md(error.where)}")
    if error.found is not None or error.expected is not None:
        lines.append(f"**Found:** {escape_md(str(error.found))} · **expected:** {escape_md(str(error.expected))}")
    if error.fix:
        lines.append(f"**Fix:** {escape_md(error.fix)}")
    if len(error.problems) > 1 or (error.problems and error.problems[0] != error.line()):
        lines += [f"- {escape_md(problem)}" for problem in error.problems]
    st.error("\n\n".join(lines))


@contextmanager
def guard() -> Iterator[None]:
    """Run a user action; an EvalError becomes a message instead of a traceback."""
    try:
        yield
    except EvalError as error:
        show_error(error)


def flash(message: str) -> None:
    """Show a success message after the next rerun (st.rerun would wipe one shown now)."""
    st.session_state["_flash"] = message


def _route_through_app() -> None:
    """Rerun through app.py's navigation, then come back to the page the URL names.

    Until some session has run app.py, Streamlit serves a deep link (/campaigns) straight from the
    pages/ folder (its multipage v1 mode): no app.py, so a narrow layout and a sidebar listing "app".
    """
    keep_deep_link()
    st.switch_page("app.py")


def keep_deep_link() -> None:
    """Remember the page the URL names (/campaigns), so that app.py opens it once the session may see it."""
    name = urlparse(st.context.url or "").path.rstrip("/").rsplit("/", 1)[-1]
    if name and (Path(__file__).parent / "pages" / f"{name}.py").is_file():
        st.session_state["_deep_link"] = f"pages/{name}.py"


# --- text and numbers ---------------------------------------------------------------------------

def escape_md(text: object) -> str:
    """Text shown literally by Streamlit Markdown (labels, captions, tooltips, alerts): every markup character
    is backslash-escaped (no link, image, HTML, code span, math or colour directive), newlines become spaces."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\r", " ").replace("\n", " ")


STATIC_ROWS = 20


def text_table(frame: pd.DataFrame) -> None:
    """A few rows of reading (passages, references) as a static table: long text wraps, and the browser loads
    no table grid for it. st.table renders Markdown, so every cell and header goes through escape_md. More
    than STATIC_ROWS rows go to the scrolling grid, as they are."""
    if len(frame) > STATIC_ROWS:
        st.dataframe(frame, hide_index=True)
        return
    shown = pd.DataFrame({escape_md(column): [escape_md(value) for value in frame[column]] for column in frame.columns})
    st.table(shown, hide_index=True)


def short(text: str | None, limit: int = 80) -> str:
    """One line of at most `limit` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def fmt_value(value: float | None, digits: int = 3) -> str:
    """A measure value, or an em dash when absent."""
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_when(timestamp: float | None) -> str:
    """A local date and time, or an em dash."""
    return "—" if not timestamp else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def measure_help(name: str, signature: str | None = None) -> str:
    """The hover text of a number: its formula and the signature that produced it."""
    measure = MEASURES.get(name)
    doc = getattr(measure, "doc", "") if measure else ""
    sig = signature or (getattr(measure, "signature", "") if measure else "")
    # A stored signature holds model names: escaped text, never a code span a backtick could close.
    return "\n\n".join(part for part in (doc, f"signature: {escape_md(sig)}" if sig else "") if part) or escape_md(name)


def remembered_select(label: str, options: Sequence[T], state_key: str, **kwargs: Any) -> T:
    """remembered(st.selectbox, …) over options that change (at least one): a pick that is no longer an option gives way to
    the remembered one, else to the first option.

    The widget has a key and no `index`: an `index` computed from the remembered value changes the
    widget's identity after every pick, so Streamlit dropped every second pick.
    """
    widget_key = f"{state_key}-pick"
    if st.session_state.get(widget_key) not in options:
        st.session_state.pop(widget_key, None)
        if st.session_state.get(state_key) not in options:
            st.session_state[state_key] = options[0]
    return remembered(st.selectbox, label, state_key, options[0], options=options, **kwargs)


def remembered(widget: Callable[..., Any], label: str, state_key: str, default: T, **kwargs: Any) -> T:
    """A widget (text input, checkbox, multiselect) that opens on the value remembered under state_key
    (`default` at first) and remembers each change, also across runs that do not draw it: Streamlit forgets a
    widget's value then (a section in a tab that is not open)."""
    widget_key = f"{state_key}-pick"
    if widget_key not in st.session_state:
        st.session_state[widget_key] = st.session_state.get(state_key, default)
    value: T = widget(label, key=widget_key, **kwargs)
    st.session_state[state_key] = value
    return value


def remembered_multiselect(label: str, options: Sequence[T], state_key: str, default: Sequence[T], **kwargs: Any,
                           ) -> list[T]:
    """remembered(st.multiselect, …): the remembered picks that are still options (`default` at first)."""
    st.session_state[state_key] = [o for o in st.session_state.get(state_key, default) if o in options]
    return list(remembered(st.multiselect, label, state_key, default, options=options, **kwargs))


def select_next_run(state_key: str, value: Any) -> None:
    """Make remembered_select(…, state_key) open on value at the next rerun."""
    st.session_state[state_key] = value
    st.session_state.pop(f"{state_key}-pick", None)


def index_of(options: Sequence[object], value: object) -> int:
    """The position of value in options, or 0 (the default choice) when it is not there."""
    return options.index(value) if value in options else 0


def campaign_label(campaign: Campaign) -> str:
    """How a campaign is named in pickers: name, id, status, progress."""
    return f"{campaign.name} · {campaign.id} · {campaign.status_text} · {campaign.finished}/{campaign.total}"


# --- exports ------------------------------------------------------------------------------------

def csv_bytes(frame: pd.DataFrame, context: Mapping[str, str] | None = None) -> bytes:
    """A table as UTF-8 CSV (with BOM, for spreadsheets) written by the engine's one CSV writer, with the
    context's columns after the table's own when given (ExportContext.csv_columns)."""
    frame = frame.assign(**(context or {}))
    cells = frame.astype(object).where(frame.notna(), None)
    return spreadsheet_bytes(csv_text([list(map(str, frame.columns)), *cells.itertuples(index=False, name=None)]))


def spreadsheet_bytes(text: str) -> bytes:
    """CSV text as a download: UTF-8 with a BOM, so that Excel shows accents and Chinese correctly."""
    return text.encode("utf-8-sig")


def png_bytes(figure: Any) -> bytes:
    """A Plotly figure as PNG (kaleido, headless chromium)."""
    image: bytes = figure.to_image(format="png", width=1100, height=figure.layout.height or 550, scale=2)
    return image


def html_bytes(figure: Any) -> bytes:
    """A Plotly figure as a self-contained HTML page (plotly.js inlined, works offline)."""
    document: str = figure.to_html(include_plotlyjs=True, full_html=True)
    return document.encode("utf-8")


def chart(figure: Any, name: str, key: str, spec: dict[str, Any] | list[dict[str, Any]] | None = None) -> None:
    """Show a chart with its PNG and HTML downloads as `name`.png and .html (both built only when clicked).

    `figure` is a Plotly figure, or a function making it. With a Vega-Lite `spec` of the same chart (the
    engine draws both: evalcore.compare.charts), the page shows the spec, whose script a browser loads about
    a second sooner than Plotly's, and the downloads are the Plotly figure; without one, the figure is shown.
    A list of specs is one chart drawn in panels, one under the other (the figure has them all).
    Either way the title says what it shows (names, questions, what changed, date).
    """
    make = figure if callable(figure) else lambda: figure
    if spec is not None:
        for position, panel in enumerate([spec] if isinstance(spec, dict) else spec):
            st.vega_lite_chart(spec=panel, key=f"{key}-chart" + (f"-{position}" if position else ""))
    else:
        st.plotly_chart(make(), key=f"{key}-chart", config={"toImageButtonOptions": {"filename": name}})
    left, right, _ = st.columns([1, 1, 4])
    if Path(os.environ.get("BROWSER_PATH", CHROMIUM)).exists():
        left.download_button("PNG", data=lambda: png_bytes(make()), file_name=f"{name}.png", mime="image/png",
                             key=f"{key}-png", on_click="ignore")
    else:  # kaleido renders with a local Chromium and must never download one
        left.button("PNG", key=f"{key}-png", disabled=True,
                    help="PNG export needs Chromium: `apt-get install chromium`, or set BROWSER_PATH to a Chrome binary.")
    right.download_button("HTML", data=lambda: html_bytes(make()), file_name=f"{name}.html", mime="text/html",
                          key=f"{key}-html", on_click="ignore")


def bars(frame: pd.DataFrame, title: str, share: bool = False) -> None:
    """A bar chart of a two-column table (categories, then values), categories in table order.

    Streamlit's own (Vega-Lite) chart: its script is a fraction of Plotly's, so a page's first chart shows
    a second or more sooner in a browser that has not loaded it yet. Vega shows text as text.
    """
    x, y = frame.columns[:2]
    scale = {"scale": {"domain": [0, 1]}} if share else {}
    spec = {"title": title, "mark": {"type": "bar", "tooltip": True}, "height": 260,
            "encoding": {"x": {"field": x, "type": "ordinal", "sort": None, "axis": {"labelAngle": 0}},
                         "y": {"field": y, "type": "quantitative", **scale}}}
    st.vega_lite_chart(frame.astype({x: str}), spec)


def stage_bar(counts: StageCounts, key: str) -> None:
    """One horizontal bar of the questions per failure stage, stages in their order and colours (Vega-Lite, as
    the Compare page's: the Campaigns page needs no Plotly)."""
    st.vega_lite_chart(spec=stage_bars_spec({"questions": counts}), key=key)
    st.caption(escape_md(" · ".join(f"{stage} {count:,}" for stage, count in counts.counts.items() if count)
                         + f" (of {counts.total:,} questions)"))


def histogram(values: list[int], name: str, title: str, bins: int = 30) -> None:
    """A histogram binned here (the browser gets the bins, not every value)."""
    counts, edges = np.histogram(values or [0], bins=bins)
    frame = pd.DataFrame({"from": edges[:-1], "to": edges[1:], "count": counts})
    spec = {"title": title, "mark": {"type": "bar", "tooltip": True}, "height": 260,
            "encoding": {"x": {"field": "from", "bin": {"binned": True}, "type": "quantitative", "title": name},
                         "x2": {"field": "to"}, "y": {"field": "count", "type": "quantitative", "title": "passages"}}}
    st.vega_lite_chart(frame, spec)


def table_download(frame: pd.DataFrame | pa.Table, name: str, key: str, context: Mapping[str, str] | None = None,
                   ) -> None:
    """A CSV download of a table (pandas or Arrow) as `name`.csv, with its context columns; built only when clicked."""
    st.download_button("CSV", data=lambda: csv_bytes(frame if isinstance(frame, pd.DataFrame) else frame.to_pandas(),
                                                     context),
                       file_name=f"{name}.csv", mime="text/csv", key=key, on_click="ignore")


def html_download(label: str, build: Callable[[], str], name: str, key: str, help: str | None = None) -> None:
    """A download of an HTML document as `name`.html, built only when clicked."""
    st.download_button(label, data=lambda: build().encode("utf-8"), file_name=f"{name}.html", mime="text/html",
                       key=key, on_click="ignore", help=help)


# --- suites and targets ------------------------------------------------------------------------

def target_choices(store: Store, principal: Principal) -> dict[str, str]:
    """The principal's saved target ids with a label; "default" is the built-in default configuration."""
    choices = {DEFAULTS.name: DEFAULTS.label}
    choices.update({t.id: f"{t.name or 'unnamed'} · {t.id}" for t in list_targets(store, principal=principal)})
    return choices


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
                      "configuration": row.configuration, **row.settings.to_dict(), "updated": fmt_when(suite.updated_at),
                      "last campaign": run.campaign.status_text if run else "never run",
                      "last run": fmt_when(run.campaign.created_at) if run else "never",
                      **{name: run.headline.get(name) if run else None for name in measures}, "id": suite.id})
    return pd.DataFrame(lines, columns=["name", "dataset", "cases", "configuration", "retriever", "reranker", "generator", "top_k",
                                        "updated", "last campaign", "last run", *measures, "id"]
                        ).rename(columns={"top_k": "top-k"})


# --- datasets -----------------------------------------------------------------------------------

def open_dataset(ref: str) -> tuple[Dataset, DatasetStats, list[int]]:
    """The dataset, its statistics and its passage lengths in tokens, cached until a file changes."""
    path = resolve_dataset(ref)
    stamp = tuple(sorted((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in path.glob("*.parquet")))
    return _open_dataset(str(path), stamp)


@st.cache_resource(show_spinner="Loading the dataset…", max_entries=8)
def _open_dataset(path: str, stamp: tuple[tuple[str, int, int], ...]) -> tuple[Dataset, DatasetStats, list[int]]:
    dataset = load_dataset(path)
    return dataset, dataset_stats(dataset), [len(tokenize(p.text)) for p in dataset.passages]


def upload_report(problems: dict[str, list[str]]) -> None:
    """One line per file: ok, or each of its problems."""
    if set(problems) == {""}:  # refused before the files were read (size, name)
        st.error("\n".join(f"- {escape_md(p)}" for p in problems[""]))
        return
    # Files that are not one of the five (an unreadable zip, a stray file) first: they often explain the rest.
    for file in [*sorted(set(problems) - {f"{f}.parquet" for f in FILES}), *(f"{f}.parquet" for f in FILES)]:
        if file in problems:
            st.error(f"**{escape_md(file or 'upload')}**\n\n" + "\n".join(f"- {escape_md(p)}" for p in problems[file]))
        elif file:
            st.success(f"**{escape_md(file)}**: no problem found")


def run_link(principal: Principal, label: str) -> None:
    """A link to the Run page, for those who may launch (viewers' navigation has no Run page)."""
    if principal.can(Action.CHANGE):
        st.page_link("pages/run.py", label=label)


def poll(fn: Callable[[], None], seconds: float | None = 2) -> None:
    """Run fn now and again every few seconds (never when None), without rerunning the page (a fragment)."""
    st.fragment(run_every=seconds)(fn)()


# --- campaigns ----------------------------------------------------------------------------------

def progress_text(campaign: Campaign) -> str:
    """Questions finished of total, the stage before them with its chunks, failed, rate and time left, in one line."""
    progress = campaign.progress()
    parts = [f"{progress.finished}/{progress.total} questions"]
    if progress.stage is not None:
        chunks = f" {progress.stage_done}/{progress.stage_total} chunks" if progress.stage_total else ""
        parts.append(f"preparing the knowledge base: {progress.stage}{chunks}")
    elif campaign.status == "running" and campaign.pace_at is None:
        parts.append("starting")
    if campaign.failed:
        parts.append(f"{campaign.failed} failed")
    if progress.rate_per_s:
        parts.append(f"{progress.rate_per_s:.1f} q/s")
    if campaign.active and progress.eta_s is not None:
        parts.append(f"{duration_text(progress.eta_s)} left" + (" in this step" if progress.stage else ""))
    return " · ".join(parts)


def show_progress(campaign: Campaign) -> None:
    """A progress bar of the current stage (the index build's chunks, then the questions) with its status line."""
    st.progress(campaign.progress().share,
                text=escape_md(f"{campaign.name} · {campaign.status_text} · {progress_text(campaign)}"))


def activity() -> None:
    """The signed-in tenant's campaigns in progress, on every page (polled: the workers never touch Streamlit)."""
    principal = signed_in()
    running = [c for c in list_campaigns(store(), principal=principal) if c.active] if principal else []
    if running:
        st.caption("Running campaigns")
        for campaign in running:
            show_progress(campaign)


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


def summary(campaign: Campaign, principal: Principal) -> Summary:
    """campaign_summary, re-read only when the campaign changed."""
    return _summary(db_path(), version(campaign), principal)


@st.cache_data(show_spinner=False, max_entries=64)
def _summary(db: str, version: tuple[str, str], principal: Principal) -> Summary:
    return campaign_summary(store(), version[0], principal=principal)


# --- lists and pickers --------------------------------------------------------------------------

def rows_of(campaigns: list[Campaign], principal: Principal) -> list[CampaignRow]:
    """The campaigns as list rows (dataset or suite name, key settings, headline means cached per version)."""
    means = {c.id: _headline(db_path(), version(c)) for c in campaigns}
    return campaign_rows(store(), principal=principal, campaigns=campaigns, means=means)


@st.cache_data(show_spinner=False, max_entries=4096)
def _headline(db: str, version: tuple[str, str]) -> dict[str, float]:
    return headline_means(store(), [version[0]]).get(version[0], {})


def campaign_frame(rows: list[CampaignRow]) -> pd.DataFrame:
    """One line per campaign: name, dataset or suite, status, date, progress, key settings, headline means, id."""
    measures = [name for name in HEADLINE if any(name in row.headline for row in rows)]  # no empty column
    return pd.DataFrame([{
        "name": row.campaign.name, "dataset / suite": f"{row.campaign.kind} {row.source_name}",
        "status": row.campaign.status_text, "created": fmt_when(row.campaign.created_at),
        "progress": f"{row.campaign.finished}/{row.campaign.total}", **row.settings.to_dict(),
        **{name: row.headline.get(name) for name in measures}, "id": row.campaign.id,
    } for row in rows], columns=["name", "dataset / suite", "status", "created", "progress", "retriever", "reranker",
                                 "generator", "top_k", *measures, "id"]).rename(columns={"top_k": "top-k"})


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
    return table_picker(label, campaign_frame(shown), {row.campaign.id: row_label(row) for row in shown}, state_key, key)


def table_picker(label: str, frame: pd.DataFrame, labels: dict[str, str], state_key: str, key: str,
                 first: str | None = None) -> str:
    """A table whose rows are the options (in the order of `labels`), then a selectbox of them (after `first`,
    an option with no row, such as a new suite); clicking a row picks it. Returns the picked option."""
    ids = list(labels)
    st.dataframe(frame, hide_index=True, key=f"{key}-table", on_select=lambda: _clicked(f"{key}-table", ids, state_key),
                 selection_mode="single-row", height=min(36 + 35 * len(frame), 300))
    options = [first, *ids] if first is not None else ids
    return remembered_select(label, options, state_key, format_func=lambda i: labels.get(i, i))


def _clicked(table_key: str, ids: list[str], state_key: str) -> None:
    """A row of a picker's table was clicked: its option becomes the pick."""
    rows = st.session_state[table_key].selection.rows
    if rows:
        select_next_run(state_key, ids[rows[0]])
