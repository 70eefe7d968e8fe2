"""What only the server's operator decides: a request (an API key, a dashboard session) runs on the Dask
schedulers the operator listed and names the environment variables the operator allowed, and nothing else.

The fake scheduler is a real loopback listener that answers every connection with a Dask message carrying a
pickled payload which, once unpickled, creates a folder: a refused request must neither connect nor run it.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalcore.access.principals import LOCAL, Forbidden, Principal
from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig
from evalcore.targets.allowed import check_request
from evalcore.targets.saved_targets import save_target
from evalcore.testing import FakeOpenAIServer
from tests.test_api import error_of, make_api, serve

distributed = pytest.importorskip("distributed")
RUNNER = Principal(tenant="default", role="admin", capability="run_evaluations", key_id="k1")


class Payload:
    """Unpickling it creates the folder: the proof that code sent by the peer ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.mkdir, (str(self.marker),)


def dask_message(marker: Path) -> bytes:
    """One message as Dask's TCP comm reads it (its total size, then its frames), with the payload pickled."""
    from distributed.protocol import dumps
    from distributed.protocol.serialize import ToPickle
    from distributed.protocol.utils import pack_frames_prelude

    frames = dumps({"op": "handshake", "payload": ToPickle(Payload(marker))})
    prelude = pack_frames_prelude(frames)
    return struct.pack("Q", len(prelude) + sum(len(f) for f in frames)) + prelude + b"".join(bytes(f) for f in frames)


class FakeScheduler:
    """A loopback listener that counts connections and sends each the pickled payload."""

    def __init__(self, marker: Path) -> None:
        self.marker, self.connections = marker, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                peer, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with peer:
                peer.sendall(dask_message(self.marker))
                peer.settimeout(2)
                try:
                    peer.recv(65536)
                except OSError:
                    pass


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeScheduler]:
    monkeypatch.delenv("EVALCORE_DASK_SCHEDULER", raising=False)
    monkeypatch.delenv("EVALCORE_DASK_SCHEDULERS", raising=False)
    scheduler = FakeScheduler(tmp_path / "code-ran")
    yield scheduler
    scheduler.sock.close()


def test_the_fake_scheduler_runs_code_in_whoever_connects(fake: FakeScheduler) -> None:
    """The attack is real: Dask's client unpickles what the scheduler sends (so the refusals below matter)."""
    from distributed import Client

    with pytest.raises(Exception):  # noqa: B017 - whatever the client makes of it, the payload has run
        Client(fake.address, timeout=3, set_as_default=False)
    assert fake.marker.exists()
    assert fake.connections >= 1


def test_the_api_refuses_an_unlisted_scheduler_before_connecting(fake: FakeScheduler, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    app, keys, targets = make_api(tmp_path)
    body = {"dataset_id": "tiny", "knowledge_base_id": targets["fast"], "executor": "dask"}
    with serve(app) as url:
        def post(**changes: Any) -> httpx.Response:
            return httpx.post(f"{url}/api/v1/evaluation", json={**body, **changes}, timeout=30,
                              headers={"Authorization": f"Bearer {keys['full']}"})

        refused = error_of(post(scheduler=fake.address), 403)
        monkeypatch.setenv("EVALCORE_DASK_SCHEDULERS", "gpu=tcp://127.0.0.1:9")
        by_name = error_of(post(scheduler="evil"), 403)
        by_address = error_of(post(scheduler=fake.address), 403)
    assert "EVALCORE_DASK_SCHEDULERS" in str(refused)
    assert "allowed: gpu" in str(by_address)
    assert "'evil'" in str(by_name)
    assert fake.connections == 0
    assert not fake.marker.exists()
    assert app.state.store.read("SELECT id FROM campaigns") == []


def test_the_engine_refuses_a_principal_an_unlisted_scheduler(fake: FakeScheduler, tmp_path: Path) -> None:
    """Launch, resume and a saved configuration, whoever the principal (the dashboard's local admin too)."""
    manager = CampaignManager(tmp_path / "db.sqlite")
    config = TargetConfig.of(retriever="bm25", chunking="none", executor="dask", scheduler=fake.address)
    try:
        for principal in (LOCAL, RUNNER):
            with pytest.raises(Forbidden, match="EVALCORE_DASK_SCHEDULERS"):
                manager.launch(LaunchRequest(dataset="default", config=config, limit=2, principal=principal))
        with pytest.raises(Forbidden, match="EVALCORE_DASK_SCHEDULERS"):
            save_target(manager.store, config, principal=LOCAL)
        local = manager.wait(manager.launch(LaunchRequest(dataset="default", config=config.run_on("local"), limit=2)),
                             timeout=60)
        with pytest.raises(Forbidden, match="EVALCORE_DASK_SCHEDULERS"):
            manager.retry_failed(local.id, run_on=("dask", fake.address), principal=LOCAL)
    finally:
        manager.close()
    assert fake.connections == 0
    assert not fake.marker.exists()


def test_a_listed_scheduler_is_picked_by_name_or_address(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.campaigns.cluster import scheduler_address

    monkeypatch.setenv("EVALCORE_DASK_SCHEDULERS", "gpu=tcp://10.0.0.5:8786, tcp://10.0.0.6:8786")
    monkeypatch.setenv("EVALCORE_DASK_SCHEDULER", "tcp://10.0.0.7:8786")
    for choice in ("gpu", "tcp://10.0.0.5:8786", "tcp://10.0.0.6:8786", "default", ""):
        check_request(TargetConfig.of(executor="dask", scheduler=choice))
    assert scheduler_address(TargetConfig.of(executor="dask", scheduler="gpu")) == "tcp://10.0.0.5:8786"
    assert scheduler_address(TargetConfig.of(executor="dask")) == "tcp://10.0.0.7:8786"
    monkeypatch.setenv("EVALCORE_DASK_SCHEDULERS", "gpu=10.0.0.5")
    with pytest.raises(Exception, match="EVALCORE_DASK_SCHEDULERS.*found gpu=10.0.0.5"):
        check_request(TargetConfig.of(executor="dask", scheduler="gpu"))


def test_the_run_page_hides_the_scheduler_from_a_session_that_cannot_choose_it(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.access.api_keys import create_key
    from evalcore.store import Store
    from tests.test_dashboard_access import assert_clean, open_app, sign_in

    monkeypatch.setenv("EVALCORE_DASK_SCHEDULERS", "gpu=tcp://127.0.0.1:9")
    db = str(tmp_path / "db.sqlite")
    store = Store(db)
    secrets = {capability: create_key(store, tenant="default", role="admin", capability=capability)[1]
               for capability in ("run_evaluations", "full-access")}
    store.close()
    offered = {}
    for capability, secret in secrets.items():
        at = sign_in(open_app(db, monkeypatch), secret)
        at.switch_page("pages/run.py").run()
        assert_clean(at)
        offered[capability] = [w.options for w in at.selectbox if w.key == "cfg-quick-scheduler"]
        assert not [w for w in at.text_input if w.key == "cfg-quick-scheduler"]
    assert offered == {"run_evaluations": [], "full-access": [["gpu"]]}


def llm(server: FakeOpenAIServer, **keys: Any) -> TargetConfig:
    return TargetConfig.of(retriever="bm25", chunking="none", generator="openai", model="fake",
                           base_url=server.base_url, retries=0, **keys)


def test_a_request_sends_only_the_environment_variables_the_operator_allowed(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The variable's value never leaves for a principal; the command line (no principal) keeps its freedom."""
    monkeypatch.setenv("EVALCORE_TEST_SECRET", "s3cret")
    monkeypatch.delenv("EVALCORE_ALLOWED_ENV", raising=False)
    manager = CampaignManager(tmp_path / "db.sqlite")
    try:
        with FakeOpenAIServer() as server:
            config = llm(server, api_key_env="EVALCORE_TEST_SECRET")
            for principal in (LOCAL, RUNNER):
                with pytest.raises(Forbidden,
                                   match="api_key_env: .*EVALCORE_TEST_SECRET is not in EVALCORE_ALLOWED_ENV"):
                    manager.launch(LaunchRequest(dataset="default", config=config, limit=1, principal=principal))
            assert server.requests == []
            manager.wait(manager.launch(LaunchRequest(dataset="default", config=config, limit=1)), timeout=60)
            assert {headers.get("Authorization") for _, _, headers in server.requests} == {"Bearer s3cret"}
            monkeypatch.setenv("EVALCORE_ALLOWED_ENV", "OTHER, EVALCORE_TEST_SECRET")
            launched = manager.launch(LaunchRequest(dataset="default", config=config, limit=1, principal=LOCAL))
            assert manager.wait(launched, timeout=60).status == "succeeded"
    finally:
        manager.close()


@pytest.mark.parametrize("keys", [
    {"api_key_env": "HOME"}, {"judge_api_key_env": "HOME"}, {"rerank_api_key_env": "HOME"},
    {"kind": "http_agent", "agent_url": "http://127.0.0.1:9/ask", "agent_headers": {"X-Key": "k-${HOME}"}},
])
def test_the_api_refuses_a_configuration_naming_another_variable(api: Any, keys: dict[str, Any]) -> None:
    refused = error_of(api.call("POST", "/api/v1/targets", "full", json={"name": "x", "config": keys}), 403)
    assert "HOME is not in EVALCORE_ALLOWED_ENV (allowed: OPENAI_API_KEY)" in refused["message"]
    allowed = {key: value.replace("HOME", "OPENAI_API_KEY") if isinstance(value, str) else
               {"X-Key": "k-${OPENAI_API_KEY}"} for key, value in keys.items()}
    assert api.call("POST", "/api/v1/targets", "full", json={"name": "x", "config": allowed}).status_code == 201


def test_the_api_refuses_a_judge_model_key_from_another_variable(api: Any) -> None:
    body = {"dataset_id": "tiny", "knowledge_base_id": api.targets["fast"], "use_judge": True,
            "judge": {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "HOME"}}
    refused = error_of(api.call("POST", "/api/v1/evaluation", "full", json=body), 403)
    assert "judge_api_key_env: the server's environment variable HOME" in refused["message"]


@pytest.mark.parametrize(("headers", "named"), [
    ({"X-Team": "eval\r\nX-Injected: 1"}, "agent_headers.X-Team: the value may hold printable ASCII"),
    ({"X-Team\nX-Injected": "1"}, "agent_headers: 'X-Team\\nX-Injected' is not a header name"),
    ({"Content-Length": "0"}, "agent_headers.Content-Length: Content-Length is set by the HTTP client itself"),
    ({"transfer-encoding": "chunked"}, "agent_headers.transfer-encoding: transfer-encoding is set by the HTTP"),
    ({"Host": "elsewhere.example"}, "agent_headers.Host: Host is set by the HTTP client itself"),
    ({"X-Team": "中"}, "agent_headers.X-Team: the value may hold printable ASCII characters only"),
])
def test_a_header_that_changes_how_a_request_is_sent_is_refused_where_it_is_saved_or_checked(
        api: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], headers: dict[str, str], named: str) -> None:
    from evalcore.cli import main

    config = {"kind": "http_agent", "agent_url": "http://127.0.0.1:9/ask", "agent_headers": headers}
    refused = error_of(api.call("POST", "/api/v1/targets", "full", json={"name": "x", "config": config}), 422)
    assert named in refused["message"]
    toml = tmp_path / "agent.toml"
    toml.write_text("\n".join(f"{key} = {json.dumps(value)}" for key, value in config.items() if key != "agent_headers")
                    + "\n[agent_headers]\n"
                    + "".join(f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in headers.items()))
    for command in (["config", "check", str(toml)], ["config", "save", str(toml), "--db", str(tmp_path / "db")]):
        assert main(command) != 0
        err = capsys.readouterr().err
        assert named in err
        assert "Traceback" not in err


def test_an_agent_header_whose_variable_expands_to_a_non_ascii_value_fails_its_check_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from evalcore.errors import EvalError
    from evalcore.targets import TargetConfig
    from evalcore.targets.external import HttpAgentTarget

    monkeypatch.setenv("TEAM_NAME", "中文")
    target = HttpAgentTarget(TargetConfig.of(kind="http_agent", agent_url="http://127.0.0.1:9/ask",
                                             agent_headers=(("X-Team", "${TEAM_NAME}"),)))
    with pytest.raises(EvalError, match="agent_headers.X-Team: the value may hold printable ASCII") as caught:
        target.check()
    assert "after its ${VAR} parts were expanded" in str(caught.value)
