"""The REST API as a CI script meets it: HTTP details, odd inputs, invalid datasets, restarts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcore.access.api_keys import create_key
from evalcore.store import Store
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import save_target
from evalcore.testing.openai_server import FakeOpenAIServer, Reply
from tests.conftest import TINY, write_dataset
from tests.test_api import Api, error_of, gated_agent, make_api, serve, suite_body, wait_done

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    tmp = tmp_path_factory.mktemp("api_http")
    app, keys, targets = make_api(tmp)
    root = tmp / "datasets"
    (root / "empty").mkdir()
    write_dataset(root / "corrupt")
    (root / "corrupt" / "qrels.parquet").write_bytes(b"PAR1 not parquet")
    write_dataset(root / "dangling", {**TINY, "qrels": {"qid": [1, 99], "pid": [10, 999]}})
    with serve(app) as url:
        yield Api(url, app, tmp / "api.db", keys, targets)


def finished_task(api: Api) -> str:
    """The id of a finished evaluation task of tenant acme."""
    body = {"dataset_id": "tiny", "knowledge_base_id": api.targets["fast"]}
    task_id = api.call("POST", "/api/v1/evaluation", json=body).json()["data"]["task"]["id"]
    wait_done(api, f"/api/v1/evaluation?task_id={task_id}", lambda d: d["task"]["status"])
    return task_id


# --- HTTP details -------------------------------------------------------------------------------

def test_trailing_slashes_reach_the_route_instead_of_a_redirect(api: Api) -> None:
    listed = api.call("GET", "/api/v1/eval-suites/", "viewer")
    assert listed.status_code == 200
    assert listed.json()["success"] is True
    created = api.call("POST", "/api/v1/eval-suites/", json=suite_body(api, n=1))
    assert created.status_code == 201, created.text
    suite_id = created.json()["data"]["suite"]["id"]
    assert api.call("GET", f"/api/v1/eval-suites/{suite_id}/", "viewer").json()["data"]["suite"]["id"] == suite_id
    error_of(api.call("GET", "/api/v1/eval-suites/", key=None), 401)


def test_head_answers_like_get_without_a_body(api: Api) -> None:
    health = api.call("HEAD", "/api/v1/health", key=None)
    assert (health.status_code, health.content) == (200, b"")
    assert api.call("HEAD", "/api/v1/eval-suites", "viewer").status_code == 200
    assert api.call("HEAD", "/api/v1/eval-suites", key=None).status_code == 401


def test_methods_not_allowed_name_the_allowed_ones(api: Api) -> None:
    for method, path, allowed in (("PATCH", "/api/v1/eval-suites/x", "DELETE"), ("PUT", "/api/v1/evaluation", "POST"),
                                  ("OPTIONS", "/api/v1/eval-suites", "GET")):
        error = error_of(api.call(method, path), 405)
        assert error["code"] == "method_not_allowed"
        assert method in error["message"]
        assert allowed in error["message"]


@pytest.mark.parametrize(("content", "content_type"), [
    ("dataset_id=tiny", "application/x-www-form-urlencoded"),
    ('{"dataset_id": "tiny"}', "text/plain"),
    ('{"dataset_id": "tiny"}', None),
])
def test_bodies_that_are_not_json_answer_415(api: Api, content: str, content_type: str | None) -> None:
    def headers() -> dict[str, str]:
        return {"Content-Type": content_type} if content_type else {}
    error = error_of(api.call("POST", "/api/v1/evaluation", content=content.encode(), headers=headers()), 415)
    assert error["code"] == "unsupported_media_type"
    assert "application/json" in error["message"]
    error_of(api.call("POST", "/api/v1/evaluation", key=None, content=content.encode(), headers=headers()), 401)


def test_json_that_is_not_an_object_is_named(api: Api) -> None:
    error = error_of(api.call("POST", "/api/v1/eval-suites", json=[suite_body(api)]), 422)
    assert error["field"] == "body"
    assert "expected a JSON object, found an array" in error["message"]
    undecodable = api.call("POST", "/api/v1/evaluation", content=b'{"dataset_id": "\xff"}',
                           headers={"Content-Type": "application/json"})
    assert "JSON" in error_of(undecodable, 400)["message"]


def test_a_key_without_the_bearer_scheme_is_told_so_without_echoing_it(api: Api) -> None:
    secret = api.keys["admin"]
    for header in (secret, f"Token {secret}"):
        response = api.call("GET", "/api/v1/eval-suites", key=None, headers={"Authorization": header})
        assert "Bearer <key>" in error_of(response, 401)["message"]
        assert secret not in response.text
    lower = api.call("GET", "/api/v1/eval-suites", key=None, headers={"Authorization": f"bearer {secret}"})
    assert lower.status_code == 200


# --- odd values ---------------------------------------------------------------------------------

def test_offsets_past_sqlite_integers_are_422_not_500(api: Api) -> None:
    task_id = finished_task(api)
    for offset in ("9223372036854775808", "99999999999999999999999"):
        error = error_of(api.call("GET", f"/api/v1/campaigns/{task_id}/results?offset={offset}"), 422)
        assert error["field"] == "offset"
    page = api.call("GET", f"/api/v1/campaigns/{task_id}/results?offset=1000000000").json()["data"]
    assert page["results"] == []
    assert page["total"] == 3


def test_long_values_are_cut_in_messages_and_bounded(api: Api) -> None:
    long_id = "é" * 190
    response = api.call("GET", f"/api/v1/eval-suites/{long_id}")
    assert "(190 characters)" in error_of(response, 404)["message"]
    assert long_id not in response.text
    for field in ("knowledge_base_id", "dataset_id"):
        response = api.call("POST", "/api/v1/evaluation", json={field: "k" * 5000})
        assert error_of(response, 422)["field"] == field
        assert len(response.text) < 1000
    body = suite_body(api, n=1)
    body["cases"][0]["expected_sources"] = ["s" * 1001]
    error_of(api.call("POST", "/api/v1/eval-suites", json=body), 422)


# --- invalid datasets and configurations ----------------------------------------------------------

@pytest.mark.parametrize(("dataset", "words"), [
    ("empty", "empty/queries.parquet: missing file"),
    ("corrupt", "corrupt/qrels.parquet: not a readable Parquet file"),
    ("dangling", "dangling/qrels.parquet row 1 column 'qid': id 99"),
])
def test_an_invalid_dataset_folder_is_422_naming_its_files(api: Api, dataset: str, words: str) -> None:
    body = {"dataset_id": dataset, "knowledge_base_id": api.targets["fast"]}
    response = api.call("POST", "/api/v1/evaluation", json=body)
    error = error_of(response, 422)
    assert error["field"] == "dataset_id"
    assert words in error["message"]
    assert str(api.db.parent) not in response.text  # the server's own paths stay private


def test_a_dataset_without_questions_is_refused_by_field(api: Api) -> None:
    folder = write_dataset(api.app.state.dataset_root / "noq")
    for name, columns in (("queries", ("id", "text")), ("qrels", ("qid", "pid")), ("qas", ("qid", "aid"))):
        types = [pa.string() if column == "text" else pa.int64() for column in columns]
        pq.write_table(pa.table({c: pa.array([], t) for c, t in zip(columns, types, strict=True)}),
                       folder / f"{name}.parquet")
    error = error_of(api.call("POST", "/api/v1/evaluation", json={"dataset_id": "noq"}), 422)
    # A dataset without questions is valid (a corpus imported from documents), but no task can run on it.
    assert error["field"] == "dataset_id"
    assert (error["message"] == (
        "dataset_id: dataset 'noq' has no questions yet (a corpus of 5 passages): use it as a knowledge base, or add "
        "questions to its queries.parquet"))


def test_a_suite_whose_knowledge_base_is_missing_names_no_false_field(api: Api) -> None:
    target = save_target(api.app.state.store, TargetConfig.of(knowledge_base="nonexistent", retriever="bm25"),
                         tenant="acme")
    suite = api.call("POST", "/api/v1/eval-suites",
                     json={**suite_body(api, n=1), "agent_id": target}).json()["data"]["suite"]
    response = api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs")
    error = error_of(response, 422)
    assert "nonexistent" in error["message"]
    assert error.get("field") != "nonexistent"
    assert str(api.app.state.dataset_root) not in response.text


def test_campaigns_show_no_server_paths(api: Api) -> None:
    task_id = finished_task(api)
    campaign = api.call("GET", f"/api/v1/campaigns/{task_id}", "viewer").json()["data"]["campaign"]
    assert campaign["source"] == "tiny"
    assert "dataset_path" not in campaign["options"]
    # (a configuration's own knowledge_base path is the tenant's setting and stays as saved)
    listed = api.call("GET", "/api/v1/campaigns", "viewer").json()["data"]["campaigns"]
    assert all("dataset_path" not in c["options"] for c in listed)
    assert all(not c["source"].startswith("/") for c in listed)


def test_a_comparison_shows_no_server_paths_and_goes_through_its_response_model(api: Api) -> None:
    from evalcore.api.schemas import ComparisonData

    ids = [finished_task(api) for _ in range(2)]
    reply = api.call("GET", "/api/v1/compare", "viewer", params={"a": ids[0], "b": ids[1]})
    assert reply.status_code == 200, reply.text
    comparison = reply.json()["data"]["comparison"]
    assert (comparison["a"]["source"], comparison["b"]["source"]) == ("tiny", "tiny")
    assert str(api.app.state.dataset_root) not in reply.text
    ComparisonData.model_validate(reply.json()["data"])  # every key the one its model declares


def test_deleting_a_suite_while_its_run_runs_removes_both(api: Api) -> None:
    with gated_agent(api) as (target, gate):
        suite = api.call("POST", "/api/v1/eval-suites",
                         json={**suite_body(api), "agent_id": target}).json()["data"]["suite"]
        run = api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs").json()["data"]["run"]
        assert api.call("DELETE", f"/api/v1/eval-suites/{suite['id']}").status_code == 204
        gate.set()
        error_of(api.call("GET", f"/api/v1/eval-suites/runs/{run['id']}"), 404)
        error_of(api.call("GET", f"/api/v1/eval-suites/{suite['id']}/runs"), 404)
    assert api.call("GET", "/api/v1/health", key=None).status_code == 200


# --- documentation --------------------------------------------------------------------------------

def test_docs_need_no_internet_and_the_error_envelope_is_described(api: Api) -> None:
    docs = api.call("GET", "/docs", key=None)
    assert docs.status_code == 200
    assert "POST /api/v1/eval-suites/{suite_id}/runs" in docs.text
    assert "https://" not in docs.text
    assert "<script" not in docs.text
    spec = api.call("GET", "/openapi.json", key=None).json()
    assert spec["components"]["schemas"]["ErrorResponse"]["required"] == ["success", "error"]
    assert set(spec["components"]["schemas"]["ErrorDetail"]["required"]) == {"code", "message"}
    responses = spec["paths"]["/api/v1/eval-suites"]["post"]["responses"]
    for status in ("400", "401", "403", "404", "413", "415", "422"):
        assert responses[status]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert "swagger-ui" in api.call("GET", "/docs/swagger", key=None).text


# --- the serve command: its dataset root, and a restart mid-campaign --------------------------------

def _start(port: int, db: Path, datasets: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "evalcore", "serve", "--port", str(port), "--db", str(db), "--datasets",
               str(datasets)]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while server.poll() is None and time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=5)
            return server
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("the server did not start")


def test_serve_uses_its_dataset_root_and_a_restarted_server_resumes_the_task_of_the_killed_one(tmp_path: Path) -> None:
    db, datasets = tmp_path / "serve.db", tmp_path / "datasets"
    write_dataset(datasets / "mine")
    (datasets / "broken").mkdir()
    gate = threading.Event()

    def agent_reply(path: str, body: object) -> Reply:
        gate.wait(60)
        return Reply.json({"answer": "late", "sources": []})

    with FakeOpenAIServer(agent_reply) as agent:
        with Store(db) as store:
            secret = create_key(store, tenant="ci", role="admin")[1]
            agent_config = TargetConfig.of(kind="http_agent", agent_url=agent.root_url + "/ask", timeout=120)
            target = save_target(store, agent_config, tenant="ci")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url, headers = f"http://127.0.0.1:{port}/api/v1/evaluation", {"Authorization": f"Bearer {secret}"}
        server = _start(port, db, datasets)
        try:
            broken = httpx.post(url, headers=headers, json={"dataset_id": "broken"}, timeout=30)
            assert "broken/queries.parquet" in error_of(broken, 422)["message"]
            created = httpx.post(url, headers=headers, json={"dataset_id": "mine", "knowledge_base_id": target},
                                 timeout=30)
            assert created.status_code == 200, created.text
            task_id = created.json()["data"]["task"]["id"]
        finally:
            os.kill(server.pid, signal.SIGKILL)
            server.wait(30)
        server = _start(port, db, datasets)
        try:
            # The killed server's lease is gone: the new one puts the task back in the queue and claims it.
            task = httpx.get(url, headers=headers, params={"task_id": task_id}, timeout=30).json()["data"]["task"]
            assert task["status"] in (0, 1), task
            assert task["err_msg"] == "", task
            gate.set()
            deadline = time.monotonic() + 60
            while task["status"] in (0, 1) and time.monotonic() < deadline:
                time.sleep(0.2)
                task = httpx.get(url, headers=headers, params={"task_id": task_id}, timeout=30).json()["data"]["task"]
        finally:
            gate.set()
            server.terminate()
            server.wait(30)
    assert task["status"] == 2, task
    assert task["finished"] == task["total"], task


def test_serve_refuses_a_missing_dataset_root(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "evalcore", "serve", "--datasets", str(tmp_path / "nope")], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert "--datasets" in result.stderr
    assert "Traceback" not in result.stderr
