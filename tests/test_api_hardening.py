"""The API under attack, through real HTTP on loopback: text that is not Unicode, server paths in configurations."""

from __future__ import annotations

import http.client
import json
import typing
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel

from evalcore.api import docs, routes_campaigns, routes_evaluation, routes_service, routes_suites, routes_targets
from evalcore.api.inputs import RequestBody
from tests.test_api import Api, error_of, suite_body, wait_done

SURROGATE = "\ud800"
ROUTE_MODULES = (routes_evaluation, routes_suites, routes_targets, routes_campaigns, routes_service, docs)


class KeepAlive:
    """One HTTP/1.1 connection to the server, to see whether an answer closed it."""

    def __init__(self, api: Api, key: str = "full") -> None:
        self.api, self.key = api, key
        self.conn = http.client.HTTPConnection(urlsplit(api.url).netloc, timeout=30)

    def send(self, method: str, path: str, body: bytes | None = None) -> tuple[int, dict[str, typing.Any]]:
        headers = {"Authorization": f"Bearer {self.api.keys[self.key]}", "Content-Type": "application/json"}
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")


def ascii_json(value: object) -> bytes:
    """JSON with every non-ASCII character escaped, as a client that sends `\\ud800` writes it."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")


def with_surrogate(body: dict[str, typing.Any], path: tuple[str | int, ...]) -> dict[str, typing.Any]:
    """A deep copy of the body with a lone surrogate put at `path` (a key when the last part is None)."""
    copy = json.loads(json.dumps(body))
    holder = copy
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = f"a{SURROGATE}b" if not isinstance(holder[path[-1]], list) else [SURROGATE]
    return copy


def cases(api: Api) -> list[tuple[str, str, dict[str, typing.Any], str]]:
    """(method, path, body with a lone surrogate somewhere, the field the 422 must name)."""
    evaluation = {"dataset_id": "tiny", "knowledge_base_id": "k", "chat_id": "c", "rerank_id": "r"}
    target = {"name": "n", "config": {"model": "m", "agent_headers": {"Authorization": "Bearer x"}}}
    suite = suite_body(api, n=1)
    out = [("POST", "/api/v1/evaluation", with_surrogate(evaluation, (name,)), name) for name in evaluation]
    out += [("POST", "/api/v1/targets", with_surrogate(target, path), field) for path, field in (
        (("name",), "name"), (("config", "model"), "config.model"),
        (("config", "agent_headers", "Authorization"), "config.agent_headers.Authorization"))]
    out += [("POST", "/api/v1/targets", {"name": "n", "config": {f"k{SURROGATE}": 1}}, "config.k\\ud800")]
    out += [("POST", "/api/v1/eval-suites", with_surrogate(suite, path), field) for path, field in (
        (("name",), "name"), (("agent_id",), "agent_id"), (("cases", 0, "question"), "cases[0].question"),
        (("cases", 0, "expected_answer"), "cases[0].expected_answer"),
        (("cases", 0, "expected_sources", 0), "cases[0].expected_sources[0]"))]
    out += [("POST", "/api/v1/evaluation", {SURROGATE: 1}, "body")]  # a field whose name is not text
    return out


def test_lone_surrogates_answer_422_naming_the_field_and_the_connection_stays_open(api: Api) -> None:
    client = KeepAlive(api)
    for method, path, body, field in cases(api):
        status, answer = client.send(method, path, ascii_json(body))
        assert status == 422, (path, field, answer)
        assert answer["error"]["field"] == field, answer
        assert answer["error"]["message"].startswith(f"{field}: not valid Unicode text"), answer
        socket = client.conn.sock
        assert socket is not None  # the server did not ask to close the connection
        status, health = client.send("GET", "/api/v1/health")
        assert (status, health["data"]["status"]) == (200, "ok")
        assert client.conn.sock is socket


def test_every_request_body_model_refuses_text_that_is_not_unicode(api: Api) -> None:
    routes = [route for module in ROUTE_MODULES for route in module.router.routes if isinstance(route, APIRoute)]
    bodies = {param.field_info.annotation for route in routes for param in route.dependant.body_params}
    models = {arg for annotation in bodies for arg in (*typing.get_args(annotation), annotation)
              if isinstance(arg, type) and issubclass(arg, BaseModel)}
    assert len(models) >= 4, models
    assert all(issubclass(model, RequestBody) for model in models), models
    nested = {field.annotation for model in models for field in model.model_fields.values()}
    assert all(issubclass(model, RequestBody) for annotation in nested for model in typing.get_args(annotation)
               if isinstance(model, type) and issubclass(model, BaseModel))


def nested(depth: int, leaf: typing.Any = 1) -> typing.Any:
    """`depth` objects and lists, alternating, around a leaf."""
    for level in range(depth):
        leaf = {"a": leaf} if level % 2 else [leaf]
    return leaf


@pytest.mark.parametrize("depth", [33, 480, 900])
def test_deeply_nested_json_answers_422_naming_the_field(api: Api, depth: int) -> None:
    """Checked level by level before anything walks it (a recursive walk ran out of stack at about 480)."""
    client = KeepAlive(api)
    status, answer = client.send("POST", "/api/v1/targets",
                                 json.dumps({"name": "n", "config": {"agent_body": nested(depth)}}).encode())
    assert (status, answer["error"]["field"]) == (422, "config"), answer
    assert answer["error"]["message"] == "config: nested deeper than 32 levels of lists and objects"
    ok = {"name": "n", "config": {"kind": "http_agent", "agent_url": "http://127.0.0.1:9/a", "agent_body": nested(30)}}
    assert client.send("POST", "/api/v1/targets", json.dumps(ok).encode())[0] == 201


def test_the_store_replaces_what_it_cannot_encode_instead_of_raising(tmp_path: Path) -> None:
    from evalcore.store import Store, dumps
    from evalcore.targets import TargetConfig
    from evalcore.targets.saved_targets import get_target, save_target

    assert dumps({"a": SURROGATE}) == '{"a":"\ufffd"}'
    with Store(tmp_path / "s.db") as store:
        target_id = save_target(store, TargetConfig.of(model=f"gpt{SURROGATE}"), name=SURROGATE)
        assert get_target(store, target_id).generation.model == "gpt\ufffd"
        rows = store.read("SELECT name FROM targets WHERE name = ?", (SURROGATE,))
        assert [row["name"] for row in rows] == ["\ufffd"]


# --- server paths in configurations ------------------------------------------------------------------

def without(value: str, text: str) -> str:
    """The text with a client's value taken out (to compare answers for two values)."""
    return text.replace(repr(value), "VALUE").replace(json.dumps(repr(value))[1:-1], "VALUE")


def test_a_target_knowledge_base_is_a_dataset_id_and_answers_tell_nothing_about_the_server(api: Api) -> None:
    answers = {}
    for place in ("/etc", "/no/such/folder", "../../etc", "~", "..", "tiny/../../etc", "/"):
        response = api.call("POST", "/api/v1/targets", "full", json={"name": "kb", "config": {"knowledge_base": place}})
        error = error_of(response, 422)
        assert error["field"] == "config.knowledge_base"
        assert "not a dataset name" in error["message"]
        assert str(api.db.parent) not in response.text
        answers[place] = without(place, response.text)
    assert len(set(answers.values())) == 1, answers  # an existing folder answers like a missing one
    missing = error_of(api.call("POST", "/api/v1/targets", "full",
                                json={"name": "kb", "config": {"knowledge_base": "nope"}}), 422)
    assert missing["message"] == "config.knowledge_base: no dataset 'nope' (a folder under the dataset root)"
    created = api.call("POST", "/api/v1/targets", "full", json={"name": "kb", "config": {"knowledge_base": "tiny"}})
    assert created.status_code == 201
    assert created.json()["data"]["target"]["config"]["knowledge_base"] == "tiny"


def test_a_results_file_cannot_be_named_through_the_api(api: Api) -> None:
    inside = api.app.state.dataset_root / "run.jsonl"
    inside.write_text('{"qid": 1, "ranked_ids": [10], "answer": "30 days"}\n', encoding="utf-8")
    answers = set()
    for path in ("/etc/passwd.jsonl", "/no/such/run.jsonl", str(inside), "run.jsonl"):
        body = {"name": "file", "config": {"kind": "results_file", "results_path": path}}
        response = api.call("POST", "/api/v1/targets", "full", json=body)
        assert error_of(response, 422)["field"] == "config.results_path"
        answers.add(response.text)
    assert len(answers) == 1  # the same answer whatever the path: nothing is looked at


def test_a_suite_runs_its_knowledge_base_from_the_servers_dataset_root_only(api: Api) -> None:
    from evalcore.targets import TargetConfig
    from evalcore.targets.saved_targets import save_target

    def run(knowledge_base: str) -> tuple[int, str]:
        # Saved as the command line would, then run through the API.
        target = save_target(api.app.state.store, TargetConfig.of(knowledge_base=knowledge_base, retriever="bm25",
                                                                  chunking="none"), tenant="acme")
        suite = api.call("POST", "/api/v1/eval-suites", json={**suite_body(api, n=1), "agent_id": target})
        launched = api.call("POST", f"/api/v1/eval-suites/{suite.json()['data']['suite']['id']}/runs")
        return launched.status_code, launched.text

    answers = {}
    for place in ("/etc", "/no/such/folder", str(api.app.state.dataset_root / "tiny"), "~"):
        status, text = run(place)
        assert status == 422
        assert "knowledge_base of the suite's target configuration" in text
        answers[place] = without(place, text)
    assert len(set(answers.values())) == 1, answers
    # "tiny" is a folder of this server's dataset root (not of the project's dataset/): it runs.
    status, text = run("tiny")
    assert status == 202, text
    run_id = json.loads(text)["data"]["run"]["id"]
    done = wait_done(api, f"/api/v1/eval-suites/runs/{run_id}", lambda d: d["run"]["status"])
    assert done["run"]["status"] == "succeeded", done["run"]["error"]
    assert done["results"][0]["retrieved"], done["run"]["error"]


@pytest.mark.parametrize("seconds", [b"NaN", b"Infinity", b"-Infinity", b"-1", b"0"])
def test_a_time_limit_that_would_switch_the_limit_off_is_refused(api: Api, seconds: bytes) -> None:
    body = b'{"dataset_id": "tiny", "time_limit": ' + seconds + b"}"
    response = api.call("POST", "/api/v1/evaluation", content=body, headers={"Content-Type": "application/json"})
    assert error_of(response, 422)["field"] == "time_limit"
