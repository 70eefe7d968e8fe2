"""Who may see and do what in the dashboard: sign-in, roles, tenants, back-off, exposure; the same rules in the
engine."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from streamlit import config as st_config

import ui
from evalcore.access.api_keys import create_key, revoke_key
from evalcore.access.principals import LOCAL, Action, Forbidden, LoginThrottle, Principal, is_loopback
from evalcore.campaigns import campaign_results, get_campaign, get_manager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.compare import compare_campaigns
from evalcore.datasets import validate_upload
from evalcore.store import NotFound
from evalcore.suites import Case, create_suite, delete_suite, get_suite, list_suites, replace_suite
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import get_target, list_targets, save_target

AppTest = pytest.importorskip("streamlit.testing.v1").AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")
QUICK = TargetConfig.from_dict({"retriever": "bm25", "chunking": "none"})
CHANGE_BUTTONS = {"Launch", "Resume", "Retry failed", "Cancel", "Delete", "Delete suite", "Create", "Save",
                  "Add the sample suite", "Validate and save"}


def open_app(db: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """A fresh browser session on the app over this database."""
    monkeypatch.setenv("EVALCORE_DB", db)
    return AppTest.from_file(APP, default_timeout=60).run()


def sign_in(at: AppTest, secret: str) -> AppTest:
    """Type a key into the sign-in form and submit it."""
    at.text_input(key="sign-in-key").set_value(secret)
    at.button(key="FormSubmitter:sign-in-Sign in").click()
    return at.run()


def titles(at: AppTest) -> list[str]:
    return [t.value for t in at.title]


def button_labels(at: AppTest) -> set[str]:
    """Every button, form button and download button label on the page."""
    return {b.label for b in at.button} | {b.label for b in at.get("download_button")}


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture
def store_db(tmp_path: Path) -> str:
    return str(tmp_path / "evalcore.db")


@pytest.fixture
def throttle(monkeypatch: pytest.MonkeyPatch) -> tuple[LoginThrottle, list[float]]:
    """The dashboard's sign-in back-off with a recording sleep and a still clock."""
    waits: list[float] = []
    fake = LoginThrottle(sleep=waits.append, clock=lambda: 1000.0)
    monkeypatch.setattr(ui.session, "THROTTLE", fake)
    return fake, waits


def test_a_fresh_install_opens_without_sign_in_as_the_local_admin(store_db: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_app(store_db, monkeypatch)
    assert_clean(at)
    assert titles(at) == ["Datasets"]
    assert "Local admin of tenant default" in at.sidebar.caption[0].value
    assert "Validate and save" in button_labels(at)  # the admin's upload form


@pytest.mark.parametrize("page", ["pages/datasets.py", "pages/suites.py", "pages/run.py", "pages/campaigns.py",
                                  "pages/compare.py"])
def test_once_a_key_exists_every_page_asks_for_one(page: str, store_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_app(store_db, monkeypatch)  # opened as the local admin, then someone creates the first key
    at.switch_page(page)
    create_key(get_manager(store_db).store, tenant="acme", role="admin", capability="full-access")
    at.run()
    assert titles(at) == ["Sign in"], page
    assert not at.dataframe
    assert not at.selectbox
    assert not at.metric
    assert not at.sidebar.button
    assert [w.label for w in at.text_input] == ["API key"]


def test_require_login_without_any_key_asks_for_one(store_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_REQUIRE_LOGIN", "1")
    at = open_app(store_db, monkeypatch)
    assert titles(at) == ["Sign in"]
    assert "keys create" in captions(at)


def test_an_admin_signs_in_sees_who_it_is_and_signs_out(store_db: str, monkeypatch: pytest.MonkeyPatch,
                                                       throttle: tuple[LoginThrottle, list[float]]) -> None:
    _, secret = create_key(get_manager(store_db).store, tenant="acme", role="admin", capability="full-access")
    at = sign_in(open_app(store_db, monkeypatch), f"  {secret}\n")
    assert_clean(at)
    assert titles(at) == ["Datasets"]
    assert "tenant **acme** · role **admin**" in at.sidebar.caption[0].value
    at.sidebar.button(key="sign-out").click().run()
    assert titles(at) == ["Sign in"]
    assert throttle[1] == [0.0]


def test_wrong_keys_are_refused_alike_and_delayed_more_each_time(store_db: str, monkeypatch: pytest.MonkeyPatch,
                                                                throttle: tuple[LoginThrottle, list[float]]) -> None:
    store = get_manager(store_db).store
    revoked_id, revoked = create_key(store, tenant="acme", role="admin", capability="full-access")
    revoke_key(store, revoked_id)
    _, probe = create_key(store, tenant="acme", role="admin", capability="none")
    _, good = create_key(store, tenant="acme", role="viewer", capability="run_evaluations")
    at = open_app(store_db, monkeypatch)
    messages = []
    for secret in ("ek_" + "x" * 43, revoked, "not a key", "ek_" + "y" * 500, probe):
        sign_in(at, secret)
        messages.append([e.value for e in at.error])
        assert titles(at) == ["Sign in"]
    assert messages == [[ui.REFUSED]] * 5  # the same words whether the key is unknown, revoked or malformed
    assert throttle[1] == [0.0, 0.5, 1.0, 2.0, 4.0]  # applied before the key is even looked at
    assert throttle[0].failures("address:local") == 5
    sign_in(at, good)  # the right key still works, after the wait this address earned
    assert titles(at) == ["Datasets"]
    assert throttle[1][-1] == 8.0
    fresh = open_app(store_db, monkeypatch)  # another session from the same address waits too
    sign_in(fresh, "ek_wrong")
    assert throttle[1][-1] == 8.0
    assert throttle[0].failures("address:local") == 6


def test_the_back_off_is_per_session_and_per_address_and_capped() -> None:
    now = [0.0]
    throttle = LoginThrottle(base_s=1.0, cap_s=5.0, forget_s=60.0, sleep=lambda _: None, clock=lambda: now[0])
    for _ in range(5):
        throttle.attempt("session:a", "address:1", lambda: None)
    assert throttle.delay("session:a", "address:1") == 5.0  # 2**4 = 16 capped at 5
    assert throttle.delay("session:b", "address:2") == 0.0
    assert throttle.delay("session:b", "address:1") == 5.0  # the address remembers
    assert throttle.attempt("session:a", "address:1", lambda: "ok") == "ok"
    assert throttle.failures("session:a") == 0
    assert throttle.failures("address:1") == 5
    now[0] = 61.0
    assert throttle.delay("session:b", "address:1") == 0.0  # forgotten after a quiet minute


def test_the_back_off_counts_from_the_last_failure_so_retyping_a_key_is_not_made_to_wait_again() -> None:
    now, waits = [0.0], []
    throttle = LoginThrottle(base_s=1.0, sleep=waits.append, clock=lambda: now[0])
    for _ in range(4):  # a script: each retry at once waits the whole back-off
        throttle.attempt("session:a", "address:1", lambda: None)
    assert waits == [0.0, 1.0, 2.0, 4.0]
    now[0] = 5.0  # a person takes 5 s to paste the right key: of the 8 s earned, 3 are left
    assert throttle.attempt("session:a", "address:1", lambda: "ok") == "ok"
    assert waits[-1] == 3.0
    now[0] = 20.0  # typed after the back-off: no wait at all
    assert throttle.attempt("session:b", "address:1", lambda: "ok") == "ok"
    assert waits[-1] == 0.0


def test_parallel_sign_ins_from_one_address_each_wait_what_the_ones_before_earned() -> None:
    """Ten sessions at once from one address: checked one after another, each after a longer wait."""
    waits: list[float] = []
    throttle = LoginThrottle(sleep=waits.append, clock=lambda: 1000.0)

    def wrong_key() -> None:
        time.sleep(0.05)  # the key's check takes a moment: without turns, every attempt is checked meanwhile

    threads = [threading.Thread(target=throttle.attempt, args=(f"session:{n}", "address:1", wrong_key))
               for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(waits) == [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert throttle.failures("address:1") == 10


def test_a_revoked_key_ends_its_session(store_db: str, monkeypatch: pytest.MonkeyPatch,
                                        throttle: tuple[LoginThrottle, list[float]]) -> None:
    store = get_manager(store_db).store
    key_id, secret = create_key(store, tenant="acme", role="admin", capability="full-access")
    at = sign_in(open_app(store_db, monkeypatch), secret)
    assert titles(at) == ["Datasets"]
    revoke_key(store, key_id)
    at.switch_page("pages/campaigns.py").run()
    assert titles(at) == ["Sign in"]


@pytest.fixture(scope="module")
def two_tenants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Tenants acme and other, each with a saved target, a suite and a finished campaign; keys for acme. One store for
    the module (four campaigns run once): the tests using it only read it, and change nothing they could change."""
    store_db = str(tmp_path_factory.mktemp("tenants") / "evalcore.db")
    manager = get_manager(store_db)
    ids: dict[str, str] = {"db": store_db}
    for tenant in ("acme", "other"):
        owner = Principal(tenant, "admin", "full-access")
        target_id = save_target(manager.store, QUICK, name=f"{tenant}-target", principal=owner)
        suite = create_suite(manager.store, name=f"{tenant}-suite", target_id=target_id, principal=owner,
                             cases=[Case("What is the refund window?", "30 days", ("Terms of Sale",))])
        ids[f"{tenant}-target"], ids[f"{tenant}-suite"] = target_id, suite.id
        for n in (1, 2):
            campaign_id = manager.launch(LaunchRequest(suite_id=suite.id, principal=owner,
                                                       name=f"{tenant}-campaign-{n}"))
            manager.wait(campaign_id, timeout=120)
            ids[f"{tenant}-campaign-{n}"] = campaign_id
    store = manager.store
    ids["admin"] = create_key(store, tenant="acme", role="admin", capability="full-access")[1]
    ids["viewer"] = create_key(store, tenant="acme", role="viewer", capability="run_evaluations")[1]
    ids["runner"] = create_key(store, tenant="acme", role="admin", capability="run_evaluations")[1]
    return ids


def page_text(at: AppTest) -> str:
    """Everything a page shows: texts, labels, options, table cells."""
    parts = [e.value for kind in (at.title, at.text, at.caption, at.markdown, at.info, at.success) for e in kind]
    parts += [str(o) for box in (*at.selectbox, *at.multiselect) for o in box.options]
    parts += [df.value.to_csv() for df in at.dataframe]
    return "\n".join(parts)


def test_a_tenant_sees_only_its_own_campaigns_suites_targets_and_comparisons(
        two_tenants: dict[str, str], monkeypatch: pytest.MonkeyPatch, throttle: tuple) -> None:
    at = sign_in(open_app(two_tenants["db"], monkeypatch), two_tenants["admin"])
    seen = []
    for page in ("pages/datasets.py", "pages/suites.py", "pages/run.py", "pages/campaigns.py", "pages/compare.py"):
        at.switch_page(page).run()
        assert_clean(at)
        seen.append(page_text(at))
        if page == "pages/run.py":
            at.radio[0].set_value("suite").run()  # questions from a suite: the tenant's suites
            seen.append(page_text(at))
    text = "\n".join(seen)
    for name in ("target", "suite", "campaign-1", "campaign-2"):
        assert two_tenants[f"acme-{name}"] in text or f"acme-{name}" in text
        assert two_tenants[f"other-{name}"] not in text
        assert f"other-{name}" not in text


def test_a_viewer_reads_but_sees_no_control_that_changes_anything(two_tenants: dict[str, str],
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                  throttle: tuple) -> None:
    at = sign_in(open_app(two_tenants["db"], monkeypatch), two_tenants["viewer"])
    assert_clean(at)
    assert "role **viewer**" in at.sidebar.caption[0].value
    pages = {"pages/datasets.py": "Datasets", "pages/campaigns.py": "Campaigns", "pages/compare.py": "Compare"}
    for page, title in pages.items():
        at.switch_page(page).run()
        assert_clean(at)
        assert titles(at) == [title]
        assert not button_labels(at) & CHANGE_BUTTONS, page
        assert not at.get("file_uploader")
    at.switch_page("pages/campaigns.py").run()
    assert at.metric
    assert {"CSV", "JSONL", "TREC run"} <= button_labels(at)  # results and exports stay readable
    for page in ("pages/run.py", "pages/suites.py"):  # reserved to the workspace's administrators
        at.switch_page(page).run()
        assert not button_labels(at) & CHANGE_BUTTONS, page
        assert not at.get("file_uploader")
        assert not at.data_editor
        assert "reserved to the workspace's administrators" in "\n".join(i.value for i in at.info)


def test_an_admin_without_full_access_runs_saved_configurations_as_they_are(
        two_tenants: dict[str, str], monkeypatch: pytest.MonkeyPatch, throttle: tuple) -> None:
    at = sign_in(open_app(two_tenants["db"], monkeypatch), two_tenants["runner"])
    at.switch_page("pages/run.py").run()
    assert_clean(at)
    assert "Launch" in button_labels(at)
    assert at.text_input(key="cfg-quick-model").disabled
    assert at.selectbox(key="sweep_key").disabled


def test_the_engine_refuses_a_viewer_and_hides_other_tenants(two_tenants: dict[str, str]) -> None:
    manager = get_manager(two_tenants["db"])
    store = manager.store
    viewer = Principal("acme", "viewer", "run_evaluations")
    probe = Principal("acme", "admin", "none")
    suite_id, campaign_id = two_tenants["acme-suite"], two_tenants["acme-campaign-1"]
    refused = [
        lambda who: manager.launch(LaunchRequest(suite_id=suite_id, principal=who)),
        lambda who: manager.resume(campaign_id, principal=who),
        lambda who: manager.retry_failed(campaign_id, principal=who),
        lambda who: manager.cancel(campaign_id, principal=who),
        lambda who: manager.delete(campaign_id, principal=who),
        lambda who: manager.rename(campaign_id, "new", principal=who),
        lambda who: create_suite(store, name="x", target_id="default", cases=[Case("q?")], principal=who),
        lambda who: replace_suite(store, suite_id, name="x", target_id="default", cases=[Case("q?")], principal=who),
        lambda who: delete_suite(store, suite_id, principal=who),
        lambda who: save_target(store, QUICK, name="x", principal=who),
        lambda who: validate_upload([], "x", principal=who),
    ]
    for call in refused:
        with pytest.raises(Forbidden, match="admin key"):
            call(viewer)
        with pytest.raises(Forbidden, match="capability 'none'"):
            call(probe)
    with pytest.raises(Forbidden, match="full-access"):
        save_target(store, QUICK, name="x", principal=Principal("acme", "admin", "run_evaluations"))
    assert [s.id for s in list_suites(store, principal=viewer)] == [suite_id]  # reading is allowed
    other = two_tenants["other-campaign-1"]
    for call in (lambda: get_campaign(store, other, principal=viewer),
                 lambda: campaign_results(store, other, principal=viewer),
                 lambda: get_suite(store, two_tenants["other-suite"], principal=viewer),
                 lambda: get_target(store, two_tenants["other-target"], principal=viewer),
                 lambda: compare_campaigns(store, campaign_id, other, principal=viewer),
                 lambda: manager.delete(other, principal=Principal("acme", "admin", "full-access"))):
        with pytest.raises(NotFound) as missing:
            call()
        assert missing.value.message.startswith("no ")  # worded as for an id that does not exist
    assert [t.id for t in list_targets(store, principal=viewer)] == [two_tenants["acme-target"]]
    assert LOCAL.tenant == "default"
    assert LOCAL.can(Action.CONFIGURE)


@pytest.mark.parametrize("address", ["0.0.0.0", "", "192.0.2.1", "example.org"])
def test_refuses_to_open_beyond_loopback_without_a_key(address: str, store_db: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    before = st_config.get_option("server.address")
    st_config.set_option("server.address", address or None)
    try:
        at = open_app(store_db, monkeypatch)
        assert not at.title
        assert "keys create --tenant T --role admin" in at.error[0].value
        create_key(get_manager(store_db).store, tenant="acme", role="admin", capability="full-access")
        assert titles(open_app(store_db, monkeypatch)) == ["Sign in"]  # with a key, sign-in guards it
    finally:
        st_config.set_option("server.address", before)


@pytest.mark.parametrize(("address", "loopback"), [("localhost", True), ("127.0.0.1", True), ("127.8.0.1", True),
                                                   ("::1", True), ("[::1]", True), ("0.0.0.0", False), ("::", False),
                                                   ("10.0.0.1", False), ("myhost", False), (None, False)])
def test_loopback_addresses(address: str | None, loopback: bool) -> None:
    assert is_loopback(address) is loopback


def test_the_config_file_binds_to_localhost() -> None:
    text = (Path(APP).parent / ".streamlit" / "config.toml").read_text()
    assert 'address = "localhost"' in text


def test_each_key_has_the_same_view_and_rights_on_the_api_and_the_dashboard(
        two_tenants: dict[str, str], monkeypatch: pytest.MonkeyPatch, throttle: tuple) -> None:
    from fastapi.testclient import TestClient

    from evalcore.api import create_app

    client = TestClient(create_app(two_tenants["db"]))  # the same store, served by the API in this process
    own = {two_tenants["acme-campaign-1"], two_tenants["acme-campaign-2"]}
    for role, cancel_status in (("admin", 409), ("viewer", 403)):
        headers = {"Authorization": f"Bearer {two_tenants[role]}"}
        listed = client.get("/api/v1/campaigns", headers=headers).json()["data"]["campaigns"]
        at = sign_in(open_app(two_tenants["db"], monkeypatch), two_tenants[role])
        at.switch_page("pages/campaigns.py").run()
        shown = {label.rsplit(" · ", 1)[1] for label in at.selectbox[0].options}  # the id ends the label
        assert {c["id"] for c in listed} == shown == own, role
        # Cancelling a finished campaign: the admin may (409, nothing to cancel), the viewer may not (403) ...
        assert client.post(f"/api/v1/campaigns/{min(own)}/cancel", headers=headers).status_code == cancel_status
        # ... and the dashboard shows the control to the admin only.
        assert ("Cancel" in button_labels(at)) is (role == "admin")
        other = client.get(f"/api/v1/campaigns/{two_tenants['other-campaign-1']}", headers=headers)
        assert other.status_code == 404
