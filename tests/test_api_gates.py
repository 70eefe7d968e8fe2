"""The quality gates over HTTP give the checks and exit codes of the command line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalcore.access.api_keys import create_key
from evalcore.api import create_app
from evalcore.campaigns import get_manager, list_campaigns
from evalcore.cli import main
from tests.test_api import Api, error_of, serve


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, str, str]]:
    """A server over a database holding two sample campaigns: the quick start (A), and one passage a question (B)."""
    tmp = tmp_path_factory.mktemp("gates-api")
    db = tmp / "api.db"
    assert main(["run", "--dataset", "default", "--db", str(db), "--name", "A"]) == 0
    assert main(["run", "--dataset", "default", "--db", str(db), "--name", "B", "--set", "embedding_top_k=1"]) == 0
    ids = {c.name: c.id for c in list_campaigns(get_manager(db).store)}
    app = create_app(db)
    keys = {"viewer": create_key(app.state.store, tenant="default", role="viewer")[1],
            "other": create_key(app.state.store, tenant="other", role="admin")[1]}
    with serve(app) as url:
        yield Api(url, app, db, keys, {}), ids["A"], ids["B"]


def test_a_campaigns_gates(gated, capsys) -> None:
    api, a, _ = gated
    passed = api.call("GET", f"/api/v1/campaigns/{a}/gates", "viewer", params={"fail_under": ["ndcg@10=0.5"]})
    assert passed.status_code == 200, passed.text
    assert passed.json()["data"]["exit_code"] == 0
    assert passed.json()["data"]["checks"][0]["passed"]
    failed = api.call("GET", f"/api/v1/campaigns/{a}/gates", "viewer",
                      params={"fail_under": ["ndcg@10=0.99", "coverage=0.1"], "bound": "lower"}).json()["data"]
    assert (failed["exit_code"], failed["verdict"]) == (4, "gate failed")
    assert [check["passed"] for check in failed["checks"]] == [False, True]
    # The same reason as the command line's
    assert main(["run", "--dataset", "default", "--db", str(api.db), "--fail-under", "ndcg@10=0.99",
                 "--gate-bound", "lower", "--limit", "91"]) == 4
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("gate failed")]
    assert printed == [f"gate failed: {failed['checks'][0]['name']}: {failed['checks'][0]['reason']}"]


def test_a_regression_over_http(gated) -> None:
    api, a, b = gated
    worse = api.call("GET", "/api/v1/compare/gates", "viewer", params={"a": a, "b": b, "fail_if_worse": "ndcg@10"})
    assert worse.json()["data"]["exit_code"] == 5, worse.text
    better = api.call("GET", "/api/v1/compare/gates", "viewer", params={"a": b, "b": a}).json()["data"]
    assert better["exit_code"] == 0
    assert {check["kind"] for check in better["checks"]} == {"regression"}


def test_bad_gates_and_other_tenants(gated) -> None:
    api, a, b = gated
    bad = api.call("GET", f"/api/v1/campaigns/{a}/gates", "viewer", params={"fail_under": ["ndcg@11=0.5"]})
    assert "unknown measure" in error_of(bad, 422)["message"]
    error_of(api.call("GET", f"/api/v1/campaigns/{a}/gates", "viewer", params={"fail_under": ["ndcg@10=0.5"],
                                                                               "bound": "upper"}), 422)
    error_of(api.call("GET", f"/api/v1/campaigns/{a}/gates", "other", params={"fail_under": ["ndcg@10=0.5"]}), 404)
    error_of(api.call("GET", "/api/v1/compare/gates", "other", params={"a": a, "b": b}), 404)


def test_gate_errors_over_http_name_the_query_parameters_not_the_command_lines_flags(gated) -> None:
    api, a, b = gated
    malformed = error_of(api.call("GET", f"/api/v1/campaigns/{a}/gates", "viewer", params={"fail_under": ["ndcg"]}),
                         422)
    assert "?fail_under=ndcg@10=0.7" in malformed["message"]
    assert "--" not in malformed["message"]
    unknown = error_of(api.call("GET", "/api/v1/compare/gates", "viewer",
                                params={"a": a, "b": b, "fail_if_worse": "judge.nothing"}), 422)
    assert "fail_if_worse" in unknown["message"]
    assert "--fail-if-worse" not in unknown["message"]
