"""End to end in a real browser: `streamlit run app.py` on loopback, driven by Playwright with Debian's chromium."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest, sweep_requests
from evalcore.campaigns.listing import keep_ended_figures
from evalcore.compare import compare_with_previous
from evalcore.targets import TargetConfig
from evalcore.testing.served_dashboard import CHROMIUM, CHROMIUM_ARGS, serve_streamlit

APP = Path(__file__).resolve().parent.parent / "app.py"
# Text Streamlit shows when a script raised instead of reporting a readable message.
EXCEPTION_TEXT = re.compile(r"Traceback \(most recent call last\)|StreamlitAPIException|^\w+Error: ", re.MULTILINE)

# One worker runs the whole module: its servers and its browser are started once (and first: it is the longest).
pytestmark = [pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
              pytest.mark.xdist_group("browser")]
sync_api = pytest.importorskip("playwright.sync_api")


# The servers a browser has visited: a test of a server's first visit checks it is one (run alone or after another
# test, it would otherwise pass on a server whose first visit is over).
VISITED: set[str] = set()


@contextmanager
def serve(home: Path, **extra: str) -> Iterator[str]:
    """`streamlit run app.py` from the checkout, as people start it (its .streamlit/config.toml read), on a loopback
    port over the database in home (extra environment variables given)."""
    env = {"EVALCORE_DB": str(home / "evalcore.db"), "EVALCORE_UPLOAD_DIR": str(home / "uploads"), **extra}
    with serve_streamlit(APP, env, home / "streamlit.log", cwd=APP.parent, timeout=60) as url:
        yield url


def first_visit(url: str) -> str:
    """The server's address, once checked that no browser has visited it yet (this visit is its first)."""
    server = server_of(url)
    assert server not in VISITED, f"{server} was visited before this test: run its test first, or alone"
    VISITED.add(server)
    return url


def server_of(url: str) -> str:
    parts = urlparse(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.fixture(scope="module")
def server_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the shared dashboard's database (a test adds campaigns to it through a CampaignManager)."""
    return tmp_path_factory.mktemp("browser")


@pytest.fixture(scope="module")
def server(server_home: Path) -> Iterator[str]:
    """The dashboard over a temporary database, empty when it starts (no key: it opens as the local admin). Shared by
    the tests that need no key: each opens its own browser context, hence its own session; what they launch is
    named or picked by its id, so another test's campaigns in the same store change nothing they check."""
    with serve(server_home) as url:
        yield url


@pytest.fixture(scope="module")
def worker_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The dashboard as it runs by default, its campaigns in its worker process (whose check of a target loads the
    embedding weights), over an empty store. Its first visit is the test of the first visit's menu; then a launch."""
    with serve(tmp_path_factory.mktemp("worker"), EVALCORE_DASHBOARD_WORKER="process") as url:
        yield url


@dataclass(frozen=True)
class Keyed:
    """The dashboard over a store with keys: its address, the secrets of a viewer and of an admin of tenant acme and
    of an admin of tenant default, and the ids of tenant default's two finished campaigns by their top k."""

    url: str
    viewer: str
    acme_admin: str
    admin: str
    ids: dict[int, str]


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyed]:
    """The dashboard that asks for a key, shared by the tests that sign in with one of its keys (each in its own
    browser context, a sign-out ending its own sign-in only): tenant default holds "keyword top 2" and "keyword
    top 5" (6 questions each, BM25); tenant acme holds nothing."""
    from evalcore.access.api_keys import create_key
    from evalcore.campaigns import get_manager

    home = tmp_path_factory.mktemp("keyed")
    manager = get_manager(home / "evalcore.db")
    ids = {k: manager.launch(LaunchRequest(dataset="default", config=TargetConfig.from_dict(
        {"retriever": "bm25", "embedding_top_k": k}), limit=6, name=f"keyword top {k}")) for k in (2, 5)}
    for campaign_id in ids.values():
        assert manager.wait(campaign_id, timeout=120).status == "succeeded"
    _, viewer = create_key(manager.store, tenant="acme", role="viewer", capability="run_evaluations")
    _, acme_admin = create_key(manager.store, tenant="acme", role="admin", capability="full-access")
    _, admin = create_key(manager.store, tenant="default", role="admin", capability="full-access")
    manager.close()
    with serve(home) as url:
        yield Keyed(url, viewer, acme_admin, admin, ids)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module (launching it costs about 2 s of CPU); each test opens its own context in it, so
    cookies, storage and cache stay apart between tests."""
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@contextmanager
def browser_tab(browser: Any, url: str) -> Iterator[tuple]:
    """A page of a new browser context opened on url, collecting console errors and uncaught page errors."""
    problems: list[str] = []
    # Motion reduced, as a user may ask of the system: Streamlit's animations otherwise kept the headless browser
    # drawing (a campaign's Questions section: 12-14 s of its CPU to load, 6-7 s with them off).
    context = browser.new_context(viewport={"width": 1400, "height": 2400}, accept_downloads=True,
                                  reduced_motion="reduce")
    try:
        tab = context.new_page()
        tab.on("console",
               lambda message: problems.append(f"console: {message.text}") if message.type == "error" else None)
        tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        tab.on("requestfailed", lambda request: problems.append(f"request failed: {request.url} {request.failure}"))
        VISITED.add(server_of(url))
        tab.goto(url)
        yield tab, problems
    finally:
        context.close()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[tuple]:
    """A browser page on the app's home page (Datasets)."""
    with browser_tab(browser, server) as (tab, problems):
        tab.get_by_role("heading", name="Datasets").wait_for(timeout=60_000)
        yield tab, problems


def test_a_deep_link_on_a_fresh_server_gets_the_apps_navigation(browser: Any, server: str) -> None:
    # Runs first (file order), before any session has run app.py: Streamlit then serves /run from
    # pages/ by itself, and the sidebar used to list "app", "campaigns", ... instead of our pages.
    with browser_tab(browser, first_visit(f"{server}/run")) as (tab, _):
        tab.get_by_role("heading", name="Run a campaign").wait_for(timeout=60_000)
        links = tab.locator("[data-testid='stSidebarNav'] a")
        links.first.wait_for(timeout=30_000)
        assert [link.inner_text() for link in links.all()] == ["Datasets", "Suites", "Run", "Campaigns", "Compare",
                                                              "Traces"]
        assert urlparse(tab.url).path.endswith("/run")  # the page then adds its selection as query parameters
        assert_no_exception_on(tab)


def test_the_first_visit_after_streamlit_run_never_shows_the_folders_menu(browser: Any, worker_server: str) -> None:
    """`streamlit run app.py` from the checkout (its settings read): from the first paint to the page, the sidebar
    lists the app's pages only, never the pages/ folder's file names ("app", "campaigns", ...)."""
    context = browser.new_context()
    tab = context.new_page()
    tab.goto(first_visit(worker_server), wait_until="commit")

    def menu() -> tuple[str, ...]:
        return tuple(tab.eval_on_selector_all("[data-testid='stSidebarNav'] a", "els => els.map(e => e.innerText)"))

    menus, deadline = {menu()}, time.monotonic() + 60
    while time.monotonic() < deadline and tab.get_by_role("heading", name="Datasets").count() == 0:
        menus.add(menu())
        time.sleep(0.05)
    menus.add(menu())
    context.close()
    assert menus - {()} == {("Datasets", "Suites", "Run", "Campaigns", "Compare", "Traces")}


def assert_no_exception_on(tab: object) -> None:
    """Nothing on the page is an exception box or traceback text."""
    assert tab.locator('[data-testid="stException"]').count() == 0
    assert not EXCEPTION_TEXT.search(tab.locator("section.main, [data-testid='stMain']").first.inner_text())


def choose(tab: object, label: str, option: str) -> None:
    """Pick an option of a Streamlit selectbox by typing it."""
    box = tab.get_by_label(label, exact=True).first
    box.click()
    box.fill(option)
    tab.keyboard.press("Enter")


def choose_until_shown(tab: Any, label: str, option: str, attempts: int = 5) -> None:
    """Pick an option and wait until the picker shows it; a pick typed while the page reruns (a campaign ended, its
    comparison arrived) can be dropped by that rerun, and the rerun can draw a new picker, so the picker is found
    again on every look and the pick is typed again, a few times at most."""
    for attempt in range(attempts):
        choose(tab, label, option)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if option in tab.get_by_role("combobox", name=label).first.input_value(timeout=2_000):
                    return
            except sync_api.Error:
                pass  # the picker was being redrawn
            time.sleep(0.25)
        if attempt == attempts - 1:
            raise AssertionError(f"the picker {label!r} never showed {option!r}")


def open_page(tab: object, name: str) -> None:
    """Follow a link of the navigation sidebar."""
    tab.get_by_role("link", name=name).first.click()
    tab.get_by_role("heading", name=name if name != "Run" else "Run a campaign").wait_for(timeout=30_000)


def test_launch_compare_screenshot_and_export(page: tuple, tmp_path: Path) -> None:
    tab, problems = page
    tab.get_by_text("Answer coverage").wait_for(timeout=60_000)  # the sample dataset is open
    open_page(tab, "Run")
    tab.get_by_label("Only the first N questions (0 = all)").fill("20")
    choose(tab, "Sweep one key", "embedding_top_k")
    tab.get_by_label("Sweep values (comma-separated)").fill("3, 10")
    tab.get_by_role("button", name="Launch").click()
    # Two campaigns, progress polled from the store until both succeed.
    tab.get_by_text(re.compile(r"succeeded · 20/20 questions")).nth(1).wait_for(timeout=120_000)
    assert_no_exception_on(tab)

    open_page(tab, "Compare")
    tab.get_by_text("Measures: B − A with 95% intervals").wait_for(timeout=60_000)
    # The deltas first, drawn by Vega-Lite (Plotly only for the downloads); the other sections when opened.
    tab.locator(".vega-embed canvas, .vega-embed svg").first.wait_for(timeout=30_000)
    assert tab.locator(".js-plotly-plot").count() == 0
    for section, heading in (("Per question", "Per question: A against B"), ("Failure stages", "Failure stages: A → B"),
                             ("Measures", "Measures: B − A with 95% intervals")):
        tab.get_by_role("tab", name=section).click()
        tab.get_by_text(heading).wait_for(timeout=60_000)
        tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)
        charts = tab.locator("[data-stale='false'] .vega-embed canvas, [data-stale='false'] .vega-embed svg")
        charts.first.wait_for(timeout=30_000)
        drawn = tab.locator("[data-testid='stMain'] .vega-embed:visible").count()
        assert drawn == 1 or section == "Measures" and drawn > 1  # this section's chart only (the deltas by scale)
    # EVALCORE_SCREENSHOT_DIR keeps the screenshot for a person to look at.
    shot = Path(os.environ.get("EVALCORE_SCREENSHOT_DIR") or tmp_path) / "compare.png"
    tab.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    exported = download(tab, "PNG", tmp_path)  # ours, not the chart's camera
    assert exported.suffix == ".png"
    assert exported.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.fullmatch(r"compare_[^_]+_vs_[^_]+_\d{4}-\d{2}-\d{2}\.png", exported.name)
    assert len(exported.name) < 100
    a_part, b_part = exported.name.split("_")[1:4:2]
    assert a_part != b_part  # the two sides of a sweep are told apart
    report = download(tab, "Report (HTML)", tmp_path)
    assert report.name.startswith("report_")
    assert report.suffix == ".html"
    assert_no_exception_on(tab)
    assert not problems, problems
    assert opened_offline(tab.context.browser, report) == 2  # the delta chart and the failure stages


def opened_offline(browser: object, path: Path) -> int:
    """Open an HTML file in a browser context with the network off: the charts drawn (nothing fetched, no error)."""
    problems: list[str] = []
    context = browser.new_context(offline=True)
    tab = context.new_page()
    tab.on("request",
           lambda request: None if request.url.startswith(("file:", "data:")) else problems.append(request.url))
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.goto(path.as_uri())
    tab.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
    drawn = tab.locator(".js-plotly-plot").count()
    context.close()
    assert not problems, problems
    return drawn


def test_a_report_opens_offline_with_its_charts(browser: Any, tmp_path: Path) -> None:
    from dataclasses import replace

    from evalcore.compare import sweep_results
    from evalcore.compare.report import comparison_report
    from tests.test_compare import A_ROWS, B_ROWS
    from tests.test_compare_report import SOURCES, dated, hostile_pair

    a, b, comparison = hostile_pair()
    c = replace(dated("C", 3.0), config={**a.config, "top_k": 20})
    sweep = sweep_results([(a, A_ROWS), (b, B_ROWS), (c, B_ROWS)], resamples=200)
    path = tmp_path / "report.html"
    path.write_text(comparison_report(comparison, a, b, SOURCES, sweep=sweep, sweep_campaigns=[a, b, c]),
                    encoding="utf-8")
    assert opened_offline(browser, path) == 2  # the delta chart and the sweep's


def test_a_viewer_signs_in_and_finds_no_launch_button(browser: Any, keyed_server: Keyed) -> None:
    url, secret = keyed_server.url, keyed_server.viewer
    with browser_tab(browser, f"{url}/run") as (tab, problems):
        tab.get_by_role("heading", name="Sign in").wait_for(timeout=60_000)
        assert tab.locator("[data-testid='stSidebarNav']").count() == 0  # nothing before a key is accepted
        tab.get_by_label("API key").fill(secret)
        tab.get_by_role("button", name="Sign in").click()
        tab.get_by_role("heading", name="Run a campaign").wait_for(timeout=60_000)  # the address asked for
        tab.get_by_text("This page is reserved to the workspace's administrators").wait_for(timeout=30_000)
        tab.get_by_text("role viewer").wait_for(timeout=30_000)
        links = [link.inner_text() for link in tab.locator("[data-testid='stSidebarNav'] a").all()]
        assert links == ["Datasets", "Campaigns", "Compare", "Traces"]
        open_page(tab, "Campaigns")
        assert tab.get_by_role("button", name="Launch").count() == 0
        assert tab.get_by_role("button", name="Delete").count() == 0
        assert_no_exception_on(tab)
        # A deep link's first load probes /run/_stcore/... (two 404s in the console) before finding the app's root.
        assert not [p for p in problems if p.startswith("page error")], problems


def test_a_named_campaign_is_listed_renamed_and_a_second_import_asks(page: tuple, tmp_path: Path) -> None:
    tab, problems = page
    open_page(tab, "Run")
    tab.get_by_role("textbox", name="Campaign name").fill("browser baseline")
    tab.get_by_label("Only the first N questions (0 = all)").fill("5")
    tab.get_by_role("button", name="Launch").click()
    tab.get_by_text(re.compile(r"browser baseline · succeeded · 5/5 questions")).first.wait_for(timeout=120_000)

    open_page(tab, "Campaigns")
    main = tab.locator("[data-testid='stMain']")
    main.get_by_role("heading", name="browser baseline").wait_for(timeout=30_000)  # the newest is picked
    picked = main.get_by_role("combobox", name="Campaign").input_value()
    assert picked.startswith("browser baseline · dataset default · succeeded · "), picked
    main.get_by_role("textbox", name="Name", exact=True).fill("renamed in the browser")
    main.get_by_role("button", name="Rename").click()
    main.get_by_role("heading", name="renamed in the browser").wait_for(timeout=30_000)
    main.get_by_text("Renamed to renamed in the browser.").wait_for(timeout=30_000)
    main.locator("[data-testid='stDataFrame']").first.wait_for(timeout=30_000)  # the list and one question's tables
    expanders = main.locator("[data-testid='stExpander']")  # no expander per question: only the campaign's action
    assert expanders.count() == 1
    assert "Judge again" in expanders.first.locator("summary").inner_text()
    # Its form is drawn when it is opened, and kept open over the page's next runs.
    assert main.get_by_role("textbox", name="Rubric name").count() == 0
    expanders.first.locator("summary").click()
    main.get_by_role("textbox", name="Rubric name").wait_for(timeout=30_000)
    # The questions first; the failure stages and the configuration are sections drawn when opened.
    assert main.locator(".vega-embed").count() == 0
    main.get_by_role("tab", name="Failure stages").click()
    main.get_by_text("Failure attribution: the stage at which each question went wrong").wait_for(timeout=30_000)
    main.locator(".vega-embed canvas, .vega-embed svg").first.wait_for(timeout=30_000)
    main.get_by_role("tab", name="Configuration").click()
    main.locator("[data-testid='stJson']").first.wait_for(timeout=30_000)
    main.get_by_role("tab", name="Questions").click()
    main.get_by_role("textbox", name="Filter questions").wait_for(timeout=30_000)

    csv = tmp_path / "browser refunds.csv"
    csv.write_text("question;expected answer;sources\nWhat is the refund window?;30 days;Terms of Sale\n")
    open_page(tab, "Suites")
    main.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(csv))
    main.get_by_role("button", name="Import 1 case").click()
    main.get_by_text("Imported 1 case into browser refunds.").wait_for(timeout=30_000)
    # The import empties the uploader by a rerun of its own: the same file is given again once that is done (and
    # again if a rerun still under way swallowed it).
    main.get_by_role("button", name="Import 1 case").wait_for(state="hidden", timeout=60_000)
    tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)
    warning = main.get_by_text("A suite named browser refunds already exists")
    for attempt in range(3):
        main.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(csv))
        try:
            warning.wait_for(timeout=20_000)
            break
        except sync_api.TimeoutError:
            if attempt == 2:
                raise
    assert main.get_by_role("button", name="Import 1 case").is_disabled()  # until another name or a choice
    main.get_by_text("keep both", exact=True).click()
    main.get_by_role("button", name="Import 1 case").click()
    main.get_by_text("Imported 1 case into browser refunds (2).").wait_for(timeout=30_000)
    assert_no_exception_on(tab)
    assert not problems, problems


def test_a_sign_in_survives_a_reload_and_a_new_tab_and_keeps_the_deep_link(browser: Any, keyed_server: Keyed) -> None:
    # Signing out ends this sign-in only: the other tests on the server sign in for themselves.
    url, secret = keyed_server.url, keyed_server.acme_admin
    with browser_tab(browser, f"{url}/campaigns") as (tab, problems):
        tab.get_by_role("heading", name="Sign in").wait_for(timeout=60_000)
        assert tab.get_by_text("Page not found").count() == 0  # the page asked for waits behind the form
        assert tab.get_by_label("API key").get_attribute("autocomplete") != "new-password"  # a manager may fill it
        tab.get_by_label("API key").fill(secret)
        tab.get_by_role("button", name="Sign in").click()
        tab.get_by_role("heading", name="Campaigns").wait_for(timeout=60_000)  # the deep link, kept
        assert urlparse(tab.url).path.endswith("/campaigns")
        wait_for_cookie(tab, "evalcore_session")
        tab.reload()
        tab.get_by_role("heading", name="Campaigns").wait_for(timeout=60_000)  # still signed in
        assert tab.get_by_role("heading", name="Sign in").count() == 0
        other = tab.context.new_page()  # a new tab of the same browser
        other.goto(f"{url}/compare")
        other.get_by_role("heading", name="Compare").wait_for(timeout=60_000)
        cookie = wait_for_cookie(tab, "evalcore_session")
        assert cookie["value"].startswith("es_")
        assert secret not in cookie["value"]  # a session token, not the key
        tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)  # a settled page
        tab.get_by_role("button", name="Sign out").click()
        shown_or_told(tab, tab.get_by_role("heading", name="Sign in"), problems=problems)
        other.reload()
        other.get_by_role("heading", name="Sign in").wait_for(timeout=60_000)  # signed out everywhere
        assert_no_exception_on(tab)
        assert not [p for p in problems if p.startswith("page error")], problems


def shown_or_told(tab: Any, locator: Any, timeout: float = 60_000, problems: list[str] | None = None) -> None:
    """Wait for the locator to be visible; if it never is, fail with what the page shows instead (a timeout alone
    says nothing of a run that went elsewhere, once in about twenty runs of the sign-out under heavy load)."""
    try:
        locator.wait_for(timeout=timeout)
    except Exception as error:   # Playwright's TimeoutError
        raise AssertionError(f"{error}\nthe page at {tab.url} shows:\n{tab.inner_text('body')[:3000]}\n"
                             f"the browser reported: {problems}\n{tab.content()[-3000:]}") from error


def wait_for_cookie(tab: object, name: str, timeout: float = 30) -> dict:
    """The browser's cookie of that name, once the page has set it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := [c for c in tab.context.cookies() if c["name"] == name]:
            return found[0]
        time.sleep(0.2)
    raise AssertionError(f"no cookie {name} after {timeout} s")


def launch(tab: object, name: str, questions: int, sweep: str = "") -> None:
    """Launch a campaign (or a sweep of embedding_top_k) from the Run page, named, on the first questions."""
    open_page(tab, "Run")
    tab.get_by_role("textbox", name="Campaign name").fill(name)
    tab.get_by_label("Only the first N questions (0 = all)").fill(str(questions))
    if sweep:
        choose(tab, "Sweep one key", "embedding_top_k")
        tab.get_by_label("Sweep values (comma-separated)").fill(sweep)
    tab.get_by_role("button", name="Launch").click()


def download(tab: Any, button: str, folder: Path, attempts: int = 3) -> Path:
    """Click a download button of the page and save the file under the name the page gives it.

    A button that builds its file when clicked carries an id that Streamlit draws anew on every run of the page and
    forgets once the next run ends: a click sent as a run begins (a pick just made) can reach the server after that
    run ended, and the page then says "Failed to generate file for download" under the button, nothing downloaded.
    Such a click is made again once the page has settled, a few times at most; a click that neither downloads nor
    fails within 30 s is made again too."""
    started: list[Any] = []

    def collect(started_download: Any) -> None:
        started.append(started_download)

    tab.on("download", collect)
    try:
        for _ in range(attempts):
            tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)
            tab.get_by_role("button", name=button, exact=True).first.click()
            failed = tab.get_by_test_id("stDownloadButtonError")
            deadline = time.monotonic() + 30
            while not started and not failed.count() and time.monotonic() < deadline:
                tab.wait_for_timeout(100)  # lets Playwright deliver the download event
            if started:
                break
            failed.first.wait_for(state="detached", timeout=30_000)  # the message goes after 5 s
    finally:
        tab.remove_listener("download", collect)
    assert started, f"{button!r} downloaded nothing after {attempts} clicks"
    path = folder / started[0].suggested_filename
    started[0].save_as(path)
    return path


def test_a_launch_shows_its_campaign_at_once_while_the_worker_process_checks_the_target(browser: Any,
                                                                                         worker_server: str) -> None:
    # As the dashboard runs by default: campaigns in its worker process, whose check loads the embedding weights.
    with browser_tab(browser, worker_server) as (tab, problems):
        tab.get_by_role("heading", name="Datasets").wait_for(timeout=60_000)
        open_page(tab, "Run")
        tab.get_by_role("textbox", name="Campaign name").fill("at once")
        tab.get_by_label("Only the first N questions (0 = all)").fill("5")
        choose_until_shown(tab, "Retriever", "vector")
        started = time.perf_counter()
        tab.get_by_role("button", name="Launch").click()
        tab.get_by_text(re.compile(r"^at once · ")).first.wait_for(timeout=60_000)  # its progress line
        print(f"from the click on Launch to the campaign's line: {time.perf_counter() - started:.2f} s")
        tab.get_by_text(re.compile(r"^at once · succeeded · 5/5 questions")).first.wait_for(timeout=180_000)
        assert_no_exception_on(tab)
        assert not problems, problems


def report_once_drawn(tab: Any, part: str, folder: Path, attempts: int = 20) -> str:
    """The comparison report's file name once the page drew the pair just picked: the pickers show a pick before the
    rerun it starts has begun, and until that rerun ends the button gives the previous pair's report. The last name
    is returned when none has `part` (the caller's assertions then say so)."""
    name = ""
    for _ in range(attempts):
        tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)
        tab.get_by_text("Measures: B − A with 95% intervals").wait_for(timeout=60_000)
        name = download(tab, "Report (HTML)", folder).name
        if part in name:
            break
        time.sleep(0.5)
    return name


def test_a_sweeps_pairs_download_under_their_own_names_and_the_csv_reads_as_a_table(browser: Any, server: str,
                                                                                    server_home: Path,
                                                                                    tmp_path: Path) -> None:
    import pandas as pd

    # A baseline, then a named sweep of embedding_top_k, made as the Run page makes them (a launch from the page is
    # tested above) and ended as on the dashboard (figures kept, each compared with the previous one), on keyword
    # retrieval; on the shared server, the pickers are given this test's names ("top_k=3 ·" is only in a named
    # sweep's names).
    baseline = LaunchRequest(dataset="default", config=TargetConfig.from_dict({"retriever": "bm25"}), limit=8,
                             name="baseline quick start")
    sweep = sweep_requests(replace(baseline, name="topk sweep"), "embedding_top_k", [3, 5, 10],
                           one_after_another=False)
    manager = CampaignManager(server_home / "evalcore.db")
    for launched in ([baseline], sweep):
        for campaign_id in [manager.launch(request) for request in launched]:
            assert manager.wait(campaign_id, timeout=120).status == "succeeded"
            for hook in (keep_ended_figures, compare_with_previous):  # the dashboard's, run here before closing
                hook(manager.store, campaign_id)
    manager.close()
    with browser_tab(browser, server) as (tab, problems):
        tab.get_by_role("heading", name="Datasets").wait_for(timeout=60_000)
        open_page(tab, "Compare")
        reports = []
        for value in (3, 5, 10):
            for picker, option in (("A (baseline)", "baseline quick start"), ("B (candidate)", f"top_k={value} ·")):
                choose_until_shown(tab, picker, option)
            reports.append(report_once_drawn(tab, f"top-k-{value}_", tmp_path))
        assert len(set(reports)) == 3, reports  # one name per pair, each with its value
        assert all(f"top-k-{value}_" in name for value, name in zip((3, 5, 10), reports, strict=True)), reports
        measures = download(tab, "CSV", tmp_path)
        table = pd.read_csv(measures)  # no option: the file is a table
        assert "measure" in table.columns
        assert set(table["context: A"]) == {"baseline quick start"}
        assert_no_exception_on(tab)
        assert not problems, problems


def test_five_questions_are_labelled_from_the_keyboard_and_kappa_appears(browser: Any, server: str,
                                                                        server_home: Path) -> None:
    import json

    from evalcore.testing import FakeOpenAIServer

    def judge(path: str, body: dict) -> str:  # a 1-5 that follows the question's length
        return json.dumps({"score": 1 + len(body["messages"][1]["content"]) % 5, "reason": "scripted"})

    manager = CampaignManager(server_home / "evalcore.db")  # the shared server's store
    with FakeOpenAIServer(judge) as judges:
        config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": "judge-mini", "judge_api_key_env": "",
                                         "judge_base_url": judges.base_url})
        campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, judges=("relevance",), limit=6,
                                     name="judged for labels"))
        assert manager.wait(campaign_id, timeout=120).status == "succeeded"
    manager.close()
    # By its address: on the shared server another test's campaign may be the newest.
    with browser_tab(browser, f"{server}/campaigns?campaign={campaign_id}") as (tab, problems):
        main = tab.locator("[data-testid='stMain']")
        main.get_by_role("heading", name="judged for labels").wait_for(timeout=60_000)
        main.get_by_role("tab", name="Labels").click()
        main.get_by_text("0 of 6 answered questions labelled for relevance").wait_for(timeout=30_000)
        assert main.get_by_text(re.compile(r"relevance: \d labelled")).count() == 0
        status = main.get_by_text(re.compile(r"answered questions labelled for relevance")).first
        for key in ["5", "4", "ArrowLeft", "3", "2", "ArrowRight", "1", "5"]:
            before = status.inner_text()
            for _press in range(3):  # a key pressed while the page was still drawing its buttons is lost: once more
                tab.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)  # not mid-run
                tab.evaluate("document.activeElement && document.activeElement.blur()")  # keys to the page
                tab.keyboard.press(key)
                if taken(tab, status, before):
                    break
            # The page reruns: the line changes (a label counted, another question).
            for _ in range(300):
                if status.inner_text() != before:
                    break
                tab.wait_for_timeout(200)
            assert status.inner_text() != before, f"key {key} changed nothing"
        main.get_by_text("5 of 6 answered questions labelled for relevance").wait_for(timeout=30_000)
        line = main.get_by_text(re.compile(r"relevance: 5 labelled · accuracy [\d.]+ · kappa -?[\d.—]+"))
        line.wait_for(timeout=30_000)
        assert "weighted kappa" in line.inner_text()
        assert_no_exception_on(tab)
        assert not [p for p in problems if p.startswith("page error")], problems


def taken(tab: Any, line: Any, before: str, seconds: float = 5) -> bool:
    """Whether the page took a key: within a few seconds it ran again (its status widget shows from the moment a
    rerun is asked for, and stays 0.2 s as it fades) or the line no longer reads as before. A key the page did not
    take is pressed again at once, where waiting for its effect would wait as long as the slowest run."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if tab.locator("[data-testid='stStatusWidget']").is_visible() or line.inner_text() != before:
            return True
        tab.wait_for_timeout(100)
    return False


def test_a_deep_link_to_a_question_and_to_a_comparison_tab_survives_sign_in_and_reload(browser: Any,
                                                                                         keyed_server: Keyed) -> None:
    url, secret, ids = keyed_server.url, keyed_server.admin, keyed_server.ids
    question = f"{ids[2]}&section=Questions&question=3"
    with browser_tab(browser, f"{url}/campaigns?campaign={question}") as (tab, problems):
        main = tab.locator("[data-testid='stMain']")
        tab.get_by_role("heading", name="Sign in").wait_for(timeout=60_000)
        tab.get_by_label("API key").fill(secret)
        tab.get_by_role("button", name="Sign in").click()
        for _visit in ("signed in", "reloaded"):
            main.get_by_role("heading", name="keyword top 2").wait_for(timeout=60_000)  # not the newest campaign
            shown_or_told(tab, main.get_by_role("textbox", name="Filter questions"))  # the Questions section
            picked = main.get_by_role("combobox", name="Question").input_value()
            assert parse_qs(urlparse(tab.url).query) == {"campaign": [ids[2]], "section": ["Questions"],
                                                         "question": ["3"]}, tab.url
            link = tab.locator("[data-testid='stSidebar'] [data-testid='stCode']").first.inner_text()
            assert link.startswith(f"{url}/campaigns?")
            assert f"campaign={ids[2]}" in link
            assert "question=3" in link
            wait_for_cookie(tab, "evalcore_session")
            tab.reload()
        assert main.get_by_role("combobox", name="Question").input_value() == picked
        # A comparison on its Questions tab, B before A: opened signed in (the cookie), then reloaded.
        tab.goto(f"{url}/compare?a={ids[5]}&b={ids[2]}&section=Questions&tolerance=0.05")
        for _visit in ("opened", "reloaded"):
            main.get_by_text("Verdicts", exact=True).first.wait_for(timeout=60_000)  # the Questions tab's filter
            assert "keyword top 5" in main.get_by_role("combobox", name="A (baseline)").input_value()
            assert "keyword top 2" in main.get_by_role("combobox", name="B (candidate)").input_value()
            assert main.get_by_role("tab", name="Questions").get_attribute("aria-selected") == "true"
            query = parse_qs(urlparse(tab.url).query)
            assert (query["a"], query["b"], query["section"], query["tolerance"]) == (
                [ids[5]], [ids[2]], ["Questions"], ["0.05"]), tab.url
            tab.reload()
        for path, heading in (("datasets", "Datasets"), ("suites", "Suites"), ("run", "Run a campaign"),
                              ("campaigns", "Campaigns"), ("compare", "Compare"), ("traces", "Traces")):
            tab.goto(f"{url}/{path}")  # each page by its address
            main.get_by_role("heading", name=heading).first.wait_for(timeout=60_000)
            assert tab.get_by_text("does not seem to exist").count() == 0, path
            assert urlparse(tab.url).path.endswith(f"/{path}")
        assert_no_exception_on(tab)
        assert not [p for p in problems if p.startswith("page error")], problems
