"""The REST API through real HTTP on loopback: task and suite shapes, every error code, auth, tenants."""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

import evalcore
from evalcore.access.api_keys import create_key, revoke_key
from evalcore.api import create_app
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import ID_NAMES, save_target
from evalcore.testing.openai_server import FakeOpenAIServer, Reply
from tests.conftest import write_dataset

TASK_FIELDS = {"id", "tenant_id", "dataset_id", "start_time", "status", "err_msg", "total", "finished"}
SUITE_NUMBERS = itertools.count(1)
RETRIEVAL = {"precision", "recall", "ndcg3", "ndcg10", "mrr", "map"}
GENERATION = {"bleu1", "bleu2", "bleu4", "rouge1", "rouge2", "rougel"}


@contextmanager
def serve(app) -> Iterator[str]:
    """Run the app on uvicorn in a thread on a free loopback port; yield its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@dataclass
class Api:
    """A running server with keys of every kind and saved targets."""

    url: str
    app: object
    db: Path
    keys: dict[str, str]
    targets: dict[str, str]

    def call(self, method: str, path: str, key: str | None = "admin", **kwargs) -> httpx.Response:
        headers = kwargs.pop("headers", {})
        if key is not None:
            headers["Authorization"] = f"Bearer {self.keys.get(key, key)}"
        return httpx.request(method, self.url + path, headers=headers, timeout=30, **kwargs)


def make_api(tmp: Path) -> tuple[object, dict[str, str], dict[str, str]]:
    """An app over a fresh database and a dataset root holding the tiny dataset (also as default)."""
    root = tmp / "datasets"
    write_dataset(root / "samples")
    write_dataset(root / "tiny")
    app = create_app(tmp / "api.db", dataset_root=root)
    store = app.state.store
    # Suite campaigns ingest the target's knowledge base: the tiny dataset, one chunk per passage, BM25.
    fast = TargetConfig.of(knowledge_base="tiny", chunking="none", retriever="bm25", generator="extractive")
    keys = {
        "admin": create_key(store, tenant="acme", role="admin")[1],
        "viewer": create_key(store, tenant="acme", role="viewer")[1],
        "full": create_key(store, tenant="acme", role="admin", capability="full-access")[1],
        "nocap": create_key(store, tenant="acme", role="admin", capability="none")[1],
        "other": create_key(store, tenant="other", role="admin")[1],
    }
    targets = {
        "fast": save_target(store, fast, tenant="acme", name="fast"),
        "chat": save_target(store, TargetConfig.of(generator="extractive", extractive_sentences=1), tenant="acme"),
        "rerank": save_target(store, TargetConfig.of(reranker="embedding", rerank_top_k=7), tenant="acme"),
        "other": save_target(store, fast, tenant="other"),
    }
    return app, keys, targets


def suite_body(api: Api, n: int = 2, agent: str = "fast", sources: int = 1) -> dict:
    # A name of its own: the tests share one server, and a second suite named alike answers 409.
    return {"name": f"refunds {next(SUITE_NUMBERS)}", "agent_id": api.targets[agent],
            "cases": [{"question": f"What is the refund window {i}?", "expected_answer": "30 days",
                       "expected_sources": [f"Terms {j}" for j in range(sources)]} for i in range(n)]}


def error_of(response: httpx.Response, status: int) -> dict:
    """The one error envelope, with no stack trace in it."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False
    assert set(body["error"]) >= {"code", "message"}
    assert "Traceback" not in response.text
    assert 'File "' not in response.text
    return body["error"]


def wait_done(api: Api, path: str, status_of, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = api.call("GET", path, "viewer").json()["data"]
        if status_of(data) not in (0, 1, "pending", "running"):
            return data
        time.sleep(0.1)
    raise AssertionError(f"{path} did not finish in {timeout} s")


# --- service -------------------------------------------------------------------------------------

def test_health_needs_no_key_and_openapi_is_served(api: Api) -> None:
    health = api.call("GET", "/api/v1/health", key=None)
    assert health.json() == {"success": True, "data": {"status": "ok", "version": evalcore.__version__}}
    spec = api.call("GET", "/openapi.json", key=None).json()
    for path in ("/api/v1/evaluation", "/api/v1/eval-suites", "/api/v1/eval-suites/{suite_id}/runs",
                 "/api/v1/eval-suites/runs/{run_id}", "/api/v1/campaigns/{campaign_id}/results", "/api/v1/compare"):
        assert path in spec["paths"]
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    assert "swagger" in api.call("GET", "/docs", key=None).text.lower()


def test_the_api_says_what_each_name_of_a_saved_configuration_means(api: Api) -> None:
    # One id, five names: wherever a client meets one, its description says what it is (and that it is that id).
    spec = api.call("GET", "/openapi.json", key=None).json()
    described: dict[str, set[str]] = {}
    for schema in spec["components"]["schemas"].values():
        for name, prop in schema.get("properties", {}).items():
            if name in ID_NAMES:
                described.setdefault(name, set()).add(prop.get("description", ""))
    assert set(described) == set(ID_NAMES)
    assert all(texts == {ID_NAMES[name]} for name, texts in described.items() if name != "target_id")
    assert all(text.startswith(ID_NAMES["target_id"]) for text in described["target_id"])
    assert "knowledge_base_id" in ID_NAMES["target_id"]
    assert "target_id" in ID_NAMES["agent_id"]


@contextmanager
def serve_command(db: Path, datasets: Path | None = None) -> Iterator[str]:
    """`python -m evalcore serve` in its own process on a free loopback port; yield its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "evalcore", "serve", "--port", str(port), "--db", str(db)]
    command += ["--datasets", str(datasets)] if datasets else []
    server = subprocess.Popen(command, cwd=Path(__file__).resolve().parent.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while server.poll() is None and time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/api/v1/health", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(30)


def test_serve_command_serves_the_api(tmp_path: Path) -> None:
    with serve_command(tmp_path / "serve.db") as url:
        answer = httpx.get(f"{url}/api/v1/health", timeout=5)
        assert answer.json()["data"]["status"] == "ok"
        assert httpx.get(f"{url}/api/v1/eval-suites", timeout=5).status_code == 401
    assert (tmp_path / "serve.db").exists()


def test_me_reports_the_key(api: Api) -> None:
    data = api.call("GET", "/api/v1/me", "nocap").json()["data"]
    assert (data["tenant"], data["role"], data["capability"]) == ("acme", "admin", "none")


# --- authentication and rights -------------------------------------------------------------------

def test_missing_and_invalid_keys_answer_401(api: Api) -> None:
    missing = api.call("GET", "/api/v1/eval-suites", key=None)
    assert error_of(missing, 401)["code"] == "unauthorized"
    assert missing.headers["www-authenticate"] == "Bearer"
    assert (error_of(api.call("GET", "/api/v1/eval-suites", key="ek_wrong"), 401)["message"]
            == "invalid or revoked API key")
    basic = api.call("GET", "/api/v1/eval-suites", key=None, headers={"Authorization": "Basic YTpi"})
    assert error_of(basic, 401)["code"] == "unauthorized"
    # Bodies are parsed before keys are checked inside FastAPI: the 401 must still win.
    for key in (None, "ek_wrong"):
        error_of(api.call("POST", "/api/v1/eval-suites", key=key, content=b"{broken"), 401)
        error_of(api.call("POST", "/api/v1/evaluation", key=key, json={"dataset_id": 5}), 401)


def test_a_revoked_key_stops_working_at_once(api: Api) -> None:
    key_id, secret = create_key(api.app.state.store, tenant="acme", role="viewer")
    assert api.call("GET", "/api/v1/eval-suites", secret).status_code == 200
    revoke_key(api.app.state.store, key_id)
    error_of(api.call("GET", "/api/v1/eval-suites", secret), 401)


def test_viewer_reads_but_cannot_create_delete_or_launch(api: Api) -> None:
    suite = api.call("POST", "/api/v1/eval-suites", json=suite_body(api)).json()["data"]["suite"]
    assert api.call("GET", f"/api/v1/eval-suites/{suite['id']}", "viewer").status_code == 200
    for method, path, body in (("POST", "/api/v1/eval-suites", suite_body(api)),
                               ("PUT", f"/api/v1/eval-suites/{suite['id']}", suite_body(api)),
                               ("DELETE", f"/api/v1/eval-suites/{suite['id']}", None),
                               ("POST", f"/api/v1/eval-suites/{suite['id']}/runs", {"use_judge": False}),
                               ("POST", "/api/v1/evaluation", {})):
        error = error_of(api.call(method, path, "viewer", json=body), 403)
        assert error["code"] == "forbidden"
        assert "admin" in error["message"]


def test_a_key_without_evaluation_capability_is_refused(api: Api) -> None:
    for path in ("/api/v1/evaluation?task_id=x", "/api/v1/eval-suites", "/api/v1/campaigns"):
        assert "run_evaluations" in error_of(api.call("GET", path, "nocap"), 403)["message"]
    assert api.call("GET", "/api/v1/eval-suites", "full").status_code == 200


# --- errors --------------------------------------------------------------------------------------

def test_unknown_ids_and_routes_answer_404(api: Api) -> None:
    for path in ("/api/v1/evaluation?task_id=evaluation_acme_1_deadbeef_default", "/api/v1/eval-suites/suite_missing",
                 "/api/v1/eval-suites/suite_missing/runs", "/api/v1/eval-suites/runs/nope",
                 "/api/v1/campaigns/nope", "/api/v1/campaigns/nope/results", "/api/v1/compare?a=x&b=y",
                 "/api/v1/nothing-here"):
        assert error_of(api.call("GET", path), 404)["code"] == "not_found"
    for method in ("PUT", "DELETE", "POST"):
        path = "/api/v1/eval-suites/suite_missing" + ("/runs" if method == "POST" else "")
        error_of(api.call(method, path, json=suite_body(api) if method == "PUT" else None), 404)


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"name": "x", "agent_id": "t"}, "cases", "Field required"),
    ({"name": "x", "agent_id": "t", "cases": [{"expected_answer": "a"}]}, "cases[0].question", "required"),
    ({"name": "x", "agent_id": "t", "cases": [{"question": "q"}], "color": "red"}, "color", "not permitted"),
    ({"name": "", "agent_id": "t", "cases": [{"question": "q"}]}, "name", "at least 1"),
    ({"name": "x", "agent_id": "t", "cases": "q"}, "cases", "list"),
])
def test_malformed_suites_answer_422_naming_the_field(api: Api, body: dict, field: str, words: str) -> None:
    error = error_of(api.call("POST", "/api/v1/eval-suites", json=body), 422)
    assert error["code"] == "invalid_request"
    assert error["field"] == field
    assert error["message"].startswith(field)
    assert words in error["message"]


def test_suite_limits_are_named(api: Api) -> None:
    many = error_of(api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=101)), 422)
    assert many["field"] == "cases"
    assert "100" in many["message"]
    sources = error_of(api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=1, sources=11)), 422)
    assert sources["field"] == "cases[0].expected_sources"
    assert "10" in sources["message"]
    assert api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=100, sources=10)).status_code == 201


def test_unknown_agent_is_422_and_another_tenants_agent_too(api: Api) -> None:
    for agent in ("target_missing", api.targets["other"]):
        body = {**suite_body(api), "agent_id": agent}
        error = error_of(api.call("POST", "/api/v1/eval-suites", json=body), 422)
        assert error["field"] == "agent_id"
        assert agent in error["message"]


def test_malformed_json_and_wrong_types(api: Api) -> None:
    for body in (b'{"name": ', b'{"name": "x",}', b"{'name': 'x'}"):
        broken = api.call("POST", "/api/v1/eval-suites", content=body, headers={"Content-Type": "application/json"})
        error = error_of(broken, 400)
        assert (error["code"], error["field"]) == ("bad_request", "body")
        assert "not valid JSON" in error["message"]
    assert error_of(api.call("POST", "/api/v1/evaluation", json={"dataset_id": 5}), 422)["field"] == "dataset_id"
    assert error_of(api.call("GET", "/api/v1/campaigns/x/results?limit=0"), 422)["field"] == "limit"
    assert error_of(api.call("GET", "/api/v1/evaluation"), 422)["field"] == "task_id"


def test_bodies_over_the_limit_answer_413(api: Api) -> None:
    big = json.dumps({**suite_body(api), "name": "x" * (4 * 1024 * 1024)}).encode()
    error = error_of(api.call("POST", "/api/v1/eval-suites", content=big, headers={"Content-Type": "application/json"}),
                     413)
    assert error["code"] == "payload_too_large"
    assert "4194304" in error["message"]

    def chunks() -> Iterator[bytes]:
        for _ in range(50):
            yield b" " * 100_000
    streamed = api.call("POST", "/api/v1/eval-suites", content=chunks(), headers={"Content-Type": "application/json"})
    error_of(streamed, 413)


def test_a_full_suite_at_the_longest_fields_fits_the_body_limit(api: Api) -> None:
    case = {"question": "q" * 4000, "expected_answer": "a" * 20000, "expected_sources": ["s" * 100] * 10}
    body = {**suite_body(api), "cases": [case] * 100}
    created = api.call("POST", "/api/v1/eval-suites", json=body)
    assert created.status_code == 201, created.text


def test_unexpected_errors_are_500_without_internals(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise RuntimeError("secret internal detail /etc/passwd")
    monkeypatch.setattr(api.app.state, "manager", broken)
    response = api.call("POST", "/api/v1/evaluation", json={"knowledge_base_id": api.targets["fast"]})
    error = error_of(response, 500)
    assert error["code"] == "internal_error"
    assert "reference" in error["message"]
    assert "secret" not in response.text
    assert "RuntimeError" not in response.text


# --- evaluation tasks ----------------------------------------------------------------------------

def test_tasks_without_chat_or_rerank_id_get_the_operators_default_models(api: Api,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The default chat and rerank models come from the server's environment; the params say what each role got."""
    from evalcore.testing import FakeOpenAIServer, Reply

    def reply(path: str, body: dict) -> str | Reply:
        if path.endswith("/rerank"):
            return Reply.json({"results": [{"index": i, "relevance_score": 1.0 / (i + 1)}
                                           for i in range(len(body["documents"]))]})
        return "Refunds are accepted within 30 days."

    plain = api.call("POST", "/api/v1/evaluation", json={"dataset_id": "tiny"}).json()["data"]["task"]
    params = wait_done(api, f"/api/v1/evaluation?task_id={plain['id']}", lambda d: d["task"]["status"])["params"]
    assert params["generator"] == "extractive"
    assert params["reranker"] == "none"
    assert params["models"] == {
        "chat": "no default chat model configured (EVALCORE_DEFAULT_CHAT_MODEL): the extractive generator",
        "rerank": "no default rerank model configured (EVALCORE_DEFAULT_RERANK_URL): no reranker"}
    with FakeOpenAIServer(reply) as server:
        monkeypatch.setenv("EVALCORE_DEFAULT_CHAT_MODEL", "house-chat")
        monkeypatch.setenv("EVALCORE_DEFAULT_CHAT_BASE_URL", server.base_url)
        monkeypatch.setenv("EVALCORE_DEFAULT_CHAT_API_KEY_ENV", "")
        monkeypatch.setenv("EVALCORE_DEFAULT_RERANK_URL", f"{server.root_url}/rerank")
        monkeypatch.setenv("EVALCORE_DEFAULT_RERANK_MODEL", "house-rerank")
        task = api.call("POST", "/api/v1/evaluation", json={"dataset_id": "tiny", "chat_id": api.targets["chat"]})
        data = wait_done(api, f"/api/v1/evaluation?task_id={task.json()['data']['task']['id']}",
                         lambda d: d["task"]["status"])
        paths, root = [path for path, _, _ in server.requests], server.root_url
    assert data["task"]["status"] == 2, data["task"]["err_msg"]
    params = data["params"]
    assert (params["generator"], params["reranker"], params["rerank_model"]) == ("extractive", "http", "house-rerank")
    assert params["models"] == {"chat": f"chat_id {api.targets['chat']}",
                                "rerank": f"the default rerank model: house-rerank at {root}/rerank"}
    assert "/rerank" in paths
    assert not any(path.endswith("/chat/completions") for path in paths)


def test_a_task_without_ids_gets_the_default_chat_model(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.testing import FakeOpenAIServer

    with FakeOpenAIServer(default="Refunds are accepted within 30 days.") as server:
        monkeypatch.setenv("EVALCORE_DEFAULT_CHAT_MODEL", "house-chat")
        monkeypatch.setenv("EVALCORE_DEFAULT_CHAT_BASE_URL", server.base_url)
        monkeypatch.setenv("EVALCORE_DEFAULT_CHAT_API_KEY_ENV", "")
        task = api.call("POST", "/api/v1/evaluation", json={"dataset_id": "tiny"}).json()["data"]["task"]
        data = wait_done(api, f"/api/v1/evaluation?task_id={task['id']}", lambda d: d["task"]["status"])
        bodies = [body for path, body, _ in server.requests if path.endswith("/chat/completions")]
        base_url = server.base_url
    assert data["task"]["status"] == 2, data["task"]["err_msg"]
    assert (data["params"]["generator"], data["params"]["model"]) == ("openai", "house-chat")
    assert data["params"]["models"]["chat"] == f"the default chat model: house-chat at {base_url}"
    assert len(bodies) == 3
    assert {body["model"] for body in bodies} == {"house-chat"}
    campaign = api.call("GET", f"/api/v1/campaigns/{task['id']}", "viewer").json()["data"]["campaign"]
    assert campaign["options"]["models"] == data["params"]["models"]


def test_graded_thresholds_under_the_evaluators_names_in_a_task(api: Api) -> None:
    body = {"dataset_id": "tiny", "graded_thresholds": {"ndcg_threshold": 0.9, "top1_relevance_threshold": 1}}
    task = api.call("POST", "/api/v1/evaluation", json=body).json()["data"]["task"]
    wait_done(api, f"/api/v1/evaluation?task_id={task['id']}", lambda d: d["task"]["status"])
    campaign = api.call("GET", f"/api/v1/campaigns/{task['id']}", "viewer").json()["data"]["campaign"]
    assert campaign["config"]["graded_thresholds"] == {"ndcg_threshold": 0.9, "top1_relevance_threshold": 1.0}
    assert (campaign["options"]["graded_thresholds"]["ndcg@3"], campaign["options"]["graded_thresholds"]["xdcg@3"]) == \
        (0.9, 50.0)
    page = api.call("GET", f"/api/v1/campaigns/{task['id']}/results?names=evaluator", "viewer").json()["data"]
    flat = page["results"][0]["flat"]
    assert flat["graded.ndcg@3_threshold"] == 0.9
    assert flat["graded.top1_relevance_threshold"] == 1.0
    error = error_of(api.call("POST", "/api/v1/evaluation", json={"graded_thresholds": {"ndcg": 1}}), 422)
    assert "unknown threshold 'ndcg'" in error["message"]


def test_a_suite_run_refuses_more_than_4_minutes_per_question(api: Api) -> None:
    suite = api.call("POST", "/api/v1/eval-suites", json=suite_body(api)).json()["data"]["suite"]
    error = error_of(api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs", json={"time_limit": 300}), 422)
    assert error["field"] == "time_limit"
    assert "4 minutes at most" in error["message"]


def test_a_task_names_the_corpus_it_used_and_keeps_its_start_time(api: Api) -> None:
    """knowledge_base_id copies a configuration whose knowledge_base is "tiny"; the task ran on dataset "default"."""
    created = api.call("POST", "/api/v1/evaluation",
                       json={"dataset_id": "default", "knowledge_base_id": api.targets["fast"]})
    task = created.json()["data"]["task"]
    data = wait_done(api, f"/api/v1/evaluation?task_id={task['id']}", lambda d: d["task"]["status"])
    assert data["params"]["knowledge_base"] == "default"
    assert data["params"]["retriever"] == "bm25"
    assert data["task"]["start_time"] == task["start_time"]
    campaign = api.call("GET", f"/api/v1/campaigns/{task['id']}", "viewer").json()["data"]["campaign"]
    assert campaign["config"]["knowledge_base"] == "default"
    recompute = f"/api/v1/campaigns/{task['id']}/recompute-abstention"
    assert error_of(api.call("POST", recompute, "viewer"), 403)["code"] == "forbidden"
    assert api.call("POST", recompute).json()["data"]["campaign"]["id"] == task["id"]


@pytest.mark.parametrize(("body", "field"), [
    ({"dataset_id": "missing"}, "dataset_id"),
    ({"dataset_id": "../samples"}, "dataset_id"),
    ({"knowledge_base_id": "target_missing"}, "knowledge_base_id"),
    ({"chat_id": "target_missing"}, "chat_id"),
    ({"rerank_id": "target_missing"}, "rerank_id"),
    ({"datasetid": "default"}, "datasetid"),
])
def test_evaluation_validates_synchronously(api: Api, body: dict, field: str) -> None:
    error = error_of(api.call("POST", "/api/v1/evaluation", json=body), 422)
    assert error["field"] == field
    assert field in error["message"]


def test_evaluation_task_runs_to_completion_with_seed_shapes(api: Api) -> None:
    before = int(time.time() * 1000)
    created = api.call("POST", "/api/v1/evaluation",
                       json={"dataset_id": "tiny", "knowledge_base_id": api.targets["fast"]})
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["success"] is True
    assert set(body["data"]) == {"task"}
    task = body["data"]["task"]
    assert set(task) == TASK_FIELDS
    prefix, tenant, stamp, nonce, dataset = task["id"].split("_", 4)
    assert (prefix, tenant, dataset) == ("evaluation", "acme", "tiny")
    assert before <= int(stamp) <= int(time.time() * 1000)
    assert len(nonce) == 8
    assert int(nonce, 16) >= 0
    assert task["tenant_id"] == "acme"
    assert task["dataset_id"] == "tiny"
    assert task["status"] in (0, 1, 2)
    assert task["total"] == 3
    assert task["start_time"].endswith("Z")

    data = wait_done(api, f"/api/v1/evaluation?task_id={task['id']}", lambda d: d["task"]["status"])
    assert set(data) == {"task", "params", "metric"}
    assert set(data["task"]) == TASK_FIELDS
    assert data["task"]["status"] == 2, data["task"]["err_msg"]
    assert (data["task"]["finished"], data["task"]["total"], data["task"]["err_msg"]) == (3, 3, "")
    assert data["params"]["retriever"] == "bm25"
    assert data["params"]["chunking"] == "none"
    assert set(data["metric"]) == {"retrieval_metrics", "generation_metrics"}
    assert set(data["metric"]["retrieval_metrics"]) == RETRIEVAL
    assert set(data["metric"]["generation_metrics"]) == GENERATION
    for value in [*data["metric"]["retrieval_metrics"].values(), *data["metric"]["generation_metrics"].values()]:
        assert isinstance(value, float)
        assert 0.0 <= value <= 1.0
    page = api.call("GET", f"/api/v1/campaigns/{task['id']}/results?offset=1&limit=1", "viewer").json()["data"]
    assert [r["qid"] for r in page["results"]] == [2]
    assert (page["total"], page["finished"]) == (3, 3)
    assert "ndcg@3" in page["results"][0]["measures"]


def test_evaluation_defaults_and_overlays(api: Api) -> None:
    body = {"knowledge_base_id": api.targets["fast"], "chat_id": api.targets["chat"],
            "rerank_id": api.targets["rerank"]}
    task = api.call("POST", "/api/v1/evaluation", json=body).json()["data"]["task"]
    assert task["dataset_id"] == "default"
    assert task["id"].endswith("_default")
    params = api.call("GET", f"/api/v1/evaluation?task_id={task['id']}", "viewer").json()["data"]["params"]
    assert (params["retriever"], params["extractive_sentences"], params["reranker"], params["rerank_top_k"]) == \
        ("bm25", 1, "embedding", 7)
    done = wait_done(api, f"/api/v1/evaluation?task_id={task['id']}", lambda d: d["task"]["status"])
    assert done["task"]["status"] == 2, done["task"]["err_msg"]


@contextmanager
def gated_agent(api: Api) -> Iterator[tuple[str, threading.Event]]:
    """A saved http_agent target whose answers wait for the gate: campaigns on it stay running."""
    gate = threading.Event()

    def agent(path: str, body: object) -> Reply:
        gate.wait(30)
        return Reply.json({"answer": "30 days after delivery", "sources": [{"id": "10", "title": "Terms 0"}]})

    with FakeOpenAIServer(agent) as server:
        config = TargetConfig.of(kind="http_agent", agent_url=server.root_url + "/ask")
        try:
            yield save_target(api.app.state.store, config, tenant="acme"), gate
        finally:
            gate.set()


def test_a_cancelled_task_is_status_3_and_says_so(api: Api) -> None:
    with gated_agent(api) as (target, gate):
        task = api.call("POST", "/api/v1/evaluation", json={"dataset_id": "tiny", "knowledge_base_id": target})
        task_id = task.json()["data"]["task"]["id"]
        error_of(api.call("POST", f"/api/v1/campaigns/{task_id}/cancel", "viewer"), 403)
        error_of(api.call("POST", f"/api/v1/campaigns/{task_id}/cancel", "other"), 404)
        assert api.call("POST", f"/api/v1/campaigns/{task_id}/cancel").status_code == 202
        gate.set()
        data = wait_done(api, f"/api/v1/evaluation?task_id={task_id}", lambda d: d["task"]["status"])
    assert data["task"]["status"] == 3
    assert data["task"]["err_msg"].startswith("cancelled")
    assert error_of(api.call("POST", f"/api/v1/campaigns/{task_id}/cancel"), 409)["code"] == "conflict"


# --- saved target configurations -----------------------------------------------------------------

def test_targets_are_listed_read_and_saved_with_full_access_only(api: Api) -> None:
    listed = api.call("GET", "/api/v1/targets", "viewer").json()["data"]["targets"]
    assert api.targets["fast"] in {t["id"] for t in listed}
    assert api.targets["other"] not in {t["id"] for t in listed}
    read = api.call("GET", f"/api/v1/targets/{api.targets['fast']}", "viewer").json()["data"]["target"]
    assert read["name"] == "fast"
    assert read["config"]["retriever"] == "bm25"
    assert len(read["config_hash"]) == 64
    error_of(api.call("GET", f"/api/v1/targets/{api.targets['other']}", "viewer"), 404)
    body = {"name": "bm25 top 5", "config": {"retriever": "bm25", "embedding_top_k": 5}}
    assert "full-access" in error_of(api.call("POST", "/api/v1/targets", "admin", json=body), 403)["message"]
    created = api.call("POST", "/api/v1/targets", "full", json=body)
    assert created.status_code == 201, created.text
    target = created.json()["data"]["target"]
    assert target["config"]["embedding_top_k"] == 5
    assert target["config"]["chunking"] == "none"
    suite = api.call("POST", "/api/v1/eval-suites", json={**suite_body(api), "agent_id": target["id"]})
    assert suite.status_code == 201
    bad = error_of(api.call("POST", "/api/v1/targets", "full",
                            json={"name": "x", "config": {"retriever": "grep", "colour": 1}}), 422)
    assert "retriever" in bad["message"]
    assert "colour: unknown key" in bad["message"]


# --- suites and runs -----------------------------------------------------------------------------

def test_a_suite_case_carries_its_exact_checks_and_a_bad_one_is_refused_by_name(api: Api) -> None:
    body = suite_body(api, n=1)
    body["cases"][0]["checks"] = ["contains:30 jours", r"regex:\d+ €"]
    suite = api.call("POST", "/api/v1/eval-suites", json=body).json()["data"]["suite"]
    assert suite["cases"][0]["checks"] == ["contains:30 jours", r"regex:\d+ €"]
    bad = suite_body(api, n=1)
    bad["cases"][0]["checks"] = ["regex:(oops"]
    response = api.call("POST", "/api/v1/eval-suites", json=bad)
    assert response.status_code in (400, 422)
    error = error_of(response, response.status_code)
    assert "the check regex cannot be read" in error["message"]
    assert "case 1: checks" in error["message"]


def test_suite_crud(api: Api) -> None:
    created = api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=2))
    assert created.status_code == 201
    suite = created.json()["data"]["suite"]
    assert suite["name"].startswith("refunds ")
    assert suite["agent_id"] == api.targets["fast"]
    assert suite["case_count"] == 2
    assert suite["cases"][0] == {"question": "What is the refund window 0?", "expected_answer": "30 days",
                                 "expected_sources": ["Terms 0"], "checks": []}
    read = api.call("GET", f"/api/v1/eval-suites/{suite['id']}", "viewer").json()["data"]["suite"]
    assert read["cases"] == suite["cases"]
    replaced = api.call("PUT", f"/api/v1/eval-suites/{suite['id']}", json={**suite_body(api, n=1), "name": "renamed"})
    assert replaced.status_code == 200
    assert replaced.json()["data"]["suite"]["case_count"] == 1
    listed = api.call("GET", "/api/v1/eval-suites", "viewer").json()["data"]["suites"]
    mine = next(s for s in listed if s["id"] == suite["id"])
    assert mine["name"] == "renamed"
    assert mine["last_run"] is None
    assert "cases" not in mine
    deleted = api.call("DELETE", f"/api/v1/eval-suites/{suite['id']}")
    assert deleted.status_code == 204
    assert deleted.content == b""
    error_of(api.call("GET", f"/api/v1/eval-suites/{suite['id']}"), 404)


def test_suite_run_completes_with_results_and_summary(api: Api) -> None:
    suite = api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=2)).json()["data"]["suite"]
    launched = api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs", json={"use_judge": False})
    assert launched.status_code == 202, launched.text
    run = launched.json()["data"]["run"]
    assert run["status"] in ("pending", "running", "succeeded")
    assert run["kind"] == "suite"
    data = wait_done(api, f"/api/v1/eval-suites/runs/{run['id']}", lambda d: d["run"]["status"])
    assert data["run"]["status"] == "succeeded"
    assert len(data["results"]) == 2
    assert data["results"][0]["question"] == "What is the refund window 0?"
    assert set(data["summary"]) >= {"answered", "failed", "sources_found_rate", "mean_coverage", "mean_judge_score",
                                    "mean_latency_s", "tokens"}
    assert data["summary"]["answered"] == 2
    runs = api.call("GET", f"/api/v1/eval-suites/{suite['id']}/runs", "viewer").json()["data"]["runs"]
    assert [r["id"] for r in runs] == [run["id"]]
    listed = api.call("GET", "/api/v1/eval-suites", "viewer").json()["data"]["suites"]
    assert next(s for s in listed if s["id"] == suite["id"])["last_run"]["id"] == run["id"]
    again = api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs")
    assert again.status_code == 202
    second = wait_done(api, f"/api/v1/eval-suites/runs/{again.json()['data']['run']['id']}",
                       lambda d: d["run"]["status"])
    comparison = api.call("GET", f"/api/v1/compare?a={run['id']}&b={second['run']['id']}", "viewer")
    assert comparison.status_code == 200, comparison.text
    assert comparison.json()["data"]["comparison"]


def test_a_suite_run_is_estimated_and_gives_its_cost(api: Api) -> None:
    suite = api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=2)).json()["data"]["suite"]
    estimated = api.call("POST", f"/api/v1/eval-suites/{suite['id']}/estimate", json={"max_cost": 1.5})
    assert estimated.status_code == 200, estimated.text
    estimate = estimated.json()["data"]["estimate"]
    # An HTTP agent's calls are its own: without judges nothing here is paid for.
    assert estimate["questions"] == 2
    assert estimate["method"] in ("earlier", "prompts")
    assert estimate["total"] == {"amount": 0.0, "currency": "", "unpriced": [], "currencies": []}
    error_of(api.call("POST", f"/api/v1/eval-suites/{suite['id']}/estimate", "viewer"), 403)
    assert error_of(api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs", json={"max_cost": -1}),
                    422)["field"] == "max_cost"
    run = api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs", json={"max_cost": 1.5}).json()["data"]["run"]
    assert run["config"]["max_cost"] == 1.5
    data = wait_done(api, f"/api/v1/eval-suites/runs/{run['id']}", lambda d: d["run"]["status"])
    assert data["summary"]["cost"] == {"amount": 0.0, "currency": "", "unpriced": [], "currencies": []}
    assert all(result["cost"]["amount"] == 0.0 for result in data["results"])
    assert all(result["usage"] == [] for result in data["results"])


def test_concurrent_launches_on_one_suite_accept_exactly_one(api: Api) -> None:
    with gated_agent(api) as (target, gate):
        suite = api.call("POST", "/api/v1/eval-suites",
                         json={**suite_body(api), "agent_id": target}).json()["data"]["suite"]
        barrier = threading.Barrier(2)
        answers: list[httpx.Response] = []

        def post() -> None:
            barrier.wait()
            answers.append(api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs", json={"use_judge": False}))

        threads = [threading.Thread(target=post) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        gate.set()
        assert sorted(r.status_code for r in answers) == [202, 409]
        accepted = next(r for r in answers if r.status_code == 202).json()["data"]["run"]["id"]
        refused = error_of(next(r for r in answers if r.status_code == 409), 409)
        assert refused["code"] == "conflict"
        assert accepted in refused["message"]
        assert refused["running_id"] == accepted
        wait_done(api, f"/api/v1/eval-suites/runs/{accepted}", lambda d: d["run"]["status"])


# --- tenants and key storage ---------------------------------------------------------------------

def test_another_tenants_objects_answer_404_like_missing_ones(api: Api) -> None:
    suite = api.call("POST", "/api/v1/eval-suites", json=suite_body(api, n=1)).json()["data"]["suite"]
    task = api.call("POST", "/api/v1/evaluation", json={"dataset_id": "tiny", "knowledge_base_id": api.targets["fast"]})
    task_id = task.json()["data"]["task"]["id"]
    fake_suite, fake_task = "suite_" + "0" * 12, task_id[:-4] + "nope"
    for real, fake, template in ((suite["id"], fake_suite, "/api/v1/eval-suites/{}"),
                                 (suite["id"], fake_suite, "/api/v1/eval-suites/{}/runs"),
                                 (task_id, fake_task, "/api/v1/evaluation?task_id={}"),
                                 (task_id, fake_task, "/api/v1/campaigns/{}/results"),
                                 (task_id, fake_task, "/api/v1/eval-suites/runs/{}")):
        theirs = error_of(api.call("GET", template.format(real), "other"), 404)
        missing = error_of(api.call("GET", template.format(fake), "other"), 404)
        assert theirs == {**missing, "message": missing["message"].replace(fake, real)}
    error_of(api.call("PUT", f"/api/v1/eval-suites/{suite['id']}", "other", json=suite_body(api)), 404)
    error_of(api.call("DELETE", f"/api/v1/eval-suites/{suite['id']}", "other"), 404)
    error_of(api.call("POST", f"/api/v1/eval-suites/{suite['id']}/runs", "other"), 404)
    error_of(api.call("GET", f"/api/v1/compare?a={task_id}&b={task_id}", "other"), 404)
    assert all(s["id"] != suite["id"] for s in api.call("GET", "/api/v1/eval-suites", "other").json()["data"]["suites"])
    assert api.call("GET", "/api/v1/campaigns", "other").json()["data"]["campaigns"] == []
    assert api.call("GET", f"/api/v1/eval-suites/{suite['id']}").status_code == 200
    wait_done(api, f"/api/v1/evaluation?task_id={task_id}", lambda d: d["task"]["status"])


def test_the_database_never_contains_a_key(api: Api) -> None:
    assert api.call("GET", "/api/v1/eval-suites").status_code == 200
    data = b"".join(p.read_bytes() for p in api.db.parent.glob(api.db.name + "*"))
    assert data
    assert all(secret.encode() not in data for secret in api.keys.values())
