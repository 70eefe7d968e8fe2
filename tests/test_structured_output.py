"""Structured output on the servers people run: each format asked as its server takes it, a refusal (400, 422 or
500 alike) naming the format gives way to the next one, learnt once per endpoint and said once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, campaign_results
from evalcore.campaigns.launching import LaunchRequest
from evalcore.models import ModelError, OpenAIChatModel, noticed
from evalcore.models import openai as openai_models
from evalcore.targets import TargetConfig
from evalcore.targets.target_config import KEYS
from evalcore.testing import FakeOpenAIServer, Reply

MESSAGES = [{"role": "system", "content": "You grade answers."}, {"role": "user", "content": "Answer: 30 days."}]
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["score", "reason"],
          "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                         "reason": {"type": "string", "maxLength": 200}}}
VERDICT = json.dumps({"score": 4, "reason": "Close to the reference."})

# How each server refuses a format it does not take, as its documentation or its code says (llama-cpp-python's
# body as its 0.3.36 server answers; the others' wording from their documentation and reports).
LLAMA_CPP_PYTHON = (500, json.dumps({"error": {
    "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': "
               "\"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or "
               "'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", line 376, in create_chat_completion\n    "
               "POST /v1/chat/completions", "type": "internal_server_error", "param": None, "code": None}}))
AZURE_OLD_API = (400, json.dumps({"error": {"code": "BadRequest", "message": "response_format value as json_schema "
                                            "is enabled only for api versions 2024-08-01-preview and later"}}))
LM_STUDIO = (400, json.dumps({"error": "'response_format.type' must be 'json_schema' or 'text'"}))
NO_STRUCTURED_OUTPUT = (422, json.dumps({"error": {"message": "Unrecognized request argument supplied: "
                                                              "response_format"}}))


@pytest.fixture(autouse=True)
def forget_endpoints() -> Iterator[None]:
    """Each test starts with no endpoint known (what an endpoint accepts is remembered for the process)."""
    openai_models._ACCEPTED.clear()
    yield
    openai_models._ACCEPTED.clear()


def taking(formats: set[str], refusal: tuple[int, str]) -> Callable[[str, Any], Reply | str]:
    """A server that takes these formats ("none": no response_format) and refuses the others as `refusal` says."""
    def reply(path: str, body: Any) -> Reply | str:
        form = body.get("response_format", {}).get("type", "none")
        if form in formats:
            return VERDICT
        return Reply(status=refusal[0], body=refusal[1])
    return reply


def asked_formats(server: FakeOpenAIServer) -> list[str]:
    return [body.get("response_format", {}).get("type", "none") for _, body, _ in server.requests]


def model(server: FakeOpenAIServer, **kwargs: Any) -> OpenAIChatModel:
    options = {"api_key_env": "", "timeout": 5.0, "retries": 2, "backoff": 0.01} | kwargs
    return OpenAIChatModel(server.base_url, "judge", **options)


@pytest.mark.parametrize(("formats", "refusal", "expected"), [
    ({"json_schema", "json_object", "none"}, LLAMA_CPP_PYTHON, ["json_schema"]),     # OpenAI, vLLM, Ollama, llama.cpp
    ({"json_object", "none"}, LLAMA_CPP_PYTHON, ["json_schema", "json_object"]),    # python -m llama_cpp.server
    ({"json_object", "none"}, AZURE_OLD_API, ["json_schema", "json_object"]),       # Azure before 2024-08-01-preview
    ({"json_schema", "none"}, LM_STUDIO, ["json_schema"]),                          # LM Studio
    ({"none"}, NO_STRUCTURED_OUTPUT, ["json_schema", "json_object", "none"]),       # no structured output at all
])
def test_auto_falls_back_on_a_refusal_naming_the_format_whatever_its_status(
        formats: set[str], refusal: tuple[int, str], expected: list[str]) -> None:
    with FakeOpenAIServer(taking(formats, refusal)) as server:
        chat = model(server)
        with noticed() as said:
            first = chat.chat(MESSAGES, schema=SCHEMA)
            second = chat.chat(MESSAGES, schema=SCHEMA)
    assert first.text == second.text == VERDICT
    # Refused once each (a 500 naming the format is not retried), then the format learnt asked at once.
    assert asked_formats(server) == [*expected, expected[-1]]
    assert len(said) == len(expected) - 1
    if said:
        assert f"refused structured output as {expected[-2]} (HTTP {refusal[0]}" in said[-1]
        assert openai_models.ASKED_AS[expected[-1]] in said[-1]


def test_each_format_is_asked_in_its_own_shape() -> None:
    with FakeOpenAIServer(taking({"none"}, NO_STRUCTURED_OUTPUT)) as server:
        model(server).chat(MESSAGES, schema=SCHEMA, temperature=0.0)
    strict, mode, plain = (body for _, body, _ in server.requests)
    # OpenAI's strict mode refuses length bounds: left out there, kept for a grammar (llama.cpp reads `schema`).
    assert strict["response_format"]["json_schema"]["schema"]["properties"]["reason"] == {"type": "string"}
    assert strict["messages"] == MESSAGES
    assert mode["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "response_format" not in plain
    assert plain["temperature"] == 0.0
    for body in (mode, plain):   # the schema in the prompt: the system message ends with it, the user's unchanged
        system = body["messages"][0]["content"]
        assert system.startswith("You grade answers.")
        assert system.endswith(json.dumps(SCHEMA))
        assert body["messages"][1:] == MESSAGES[1:]


def test_an_error_that_does_not_name_the_format_is_no_refusal_of_it() -> None:
    with FakeOpenAIServer([Reply.error(500, "CUDA out of memory")] * 3) as server, \
            pytest.raises(ModelError, match="failed after 3 attempts"):
        model(server).chat(MESSAGES, schema=SCHEMA)
    assert asked_formats(server) == ["json_schema"] * 3   # retried as any 5xx, and never asked in another format


@pytest.mark.parametrize("setting", ["json_schema", "json_object", "none"])
def test_a_format_set_is_the_only_one_asked(setting: str) -> None:
    with FakeOpenAIServer(taking({"none"}, NO_STRUCTURED_OUTPUT)) as server:
        chat = model(server, structured_output=setting)
        if setting == "none":
            assert chat.chat(MESSAGES, schema=SCHEMA).text == VERDICT
        else:
            with pytest.raises(ModelError, match="HTTP 422"):
                chat.chat(MESSAGES, schema=SCHEMA)
    assert asked_formats(server) == [setting]


def test_what_an_endpoint_accepts_is_remembered_per_base_url_and_model() -> None:
    with FakeOpenAIServer(taking({"json_object"}, LLAMA_CPP_PYTHON)) as refusing, \
            FakeOpenAIServer(taking({"json_schema"}, LM_STUDIO)) as taking_all:
        model(refusing).chat(MESSAGES, schema=SCHEMA)
        other_model = OpenAIChatModel(refusing.base_url, "another", api_key_env="", retries=0)
        other_model.chat(MESSAGES, schema=SCHEMA)
        model(taking_all).chat(MESSAGES, schema=SCHEMA)
        model(refusing).chat(MESSAGES, schema=SCHEMA)   # a new client of the same endpoint knows it already
    assert asked_formats(refusing) == ["json_schema", "json_object", "json_schema", "json_object", "json_object"]
    assert asked_formats(taking_all) == ["json_schema"]


def test_the_configuration_keys_name_the_formats_the_client_knows() -> None:
    assert KEYS["structured_output"].choices == ("auto", *openai_models.FORMATS)
    assert KEYS["judge_structured_output"].choices == ("auto", *openai_models.FORMATS)
    assert KEYS["structured_output"].default == KEYS["judge_structured_output"].default == "auto"


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[CampaignManager]:
    manager = CampaignManager(tmp_path / "store.db")
    yield manager
    manager.close()


def test_a_campaign_judged_on_a_server_refusing_json_schema_with_500_reads_every_verdict_and_says_it_once(
        manager: CampaignManager, tiny_dataset: Path, caplog: pytest.LogCaptureFixture) -> None:
    with FakeOpenAIServer(taking({"json_object"}, LLAMA_CPP_PYTHON)) as server:
        config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": "judge", "judge_base_url": server.base_url,
                                         "judge_api_key_env": "", "retry_backoff": 0.01})
        campaign_id = manager.launch(LaunchRequest(dataset=str(tiny_dataset), config=config, judges=("score",),
                                                   concurrency=1, cache=False))
        assert manager.wait(campaign_id, timeout=60).status == "succeeded"
        results = campaign_results(manager.store, campaign_id)
    # The third question has no reference answer: skipped, not asked.
    assert [r.outcome.judges["score"].result for r in results] == ["pass", "pass", "skipped"]
    assert asked_formats(server) == ["json_schema", "json_object", "json_object"]
    notes = [note for r in results for note in r.outcome.notes]
    assert len(notes) == 1
    assert "refused structured output as json_schema (HTTP 500" in notes[0]
    assert [r.message for r in caplog.records if "refused structured output" in r.message] == notes
