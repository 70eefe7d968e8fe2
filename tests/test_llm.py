"""The OpenAI-compatible chat client against a real loopback server: retries, errors, cache."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from evalcore.errors import EvalError
from evalcore.models import ChatReply, ModelError, OpenAIChatModel, backoff_delay, cache_key
from evalcore.testing import FakeOpenAIServer, Reply

MESSAGES = [{"role": "user", "content": "Capital of France?"}]


class DictCache:
    """The CallCache protocol over a dict."""

    def __init__(self) -> None:
        self.data: dict[str, dict] = {}

    def get(self, key: str) -> dict | None:
        return self.data.get(key)

    def put(self, key: str, value: dict) -> None:
        self.data[key] = value


def model(server: FakeOpenAIServer, **kwargs: object) -> OpenAIChatModel:
    options = {"api_key_env": "", "timeout": 2.0, "retries": 2, "backoff": 0.01} | kwargs
    return OpenAIChatModel(server.base_url, "fake-model", **options)  # type: ignore[arg-type]


def test_reply_text_tokens_and_request_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-test")
    with FakeOpenAIServer([Reply(text="Paris.", prompt_tokens=20, completion_tokens=3)]) as server:
        reply = model(server, api_key_env="FAKE_KEY").chat(MESSAGES, temperature=0.0, max_tokens=50)
    assert reply == ChatReply("Paris.", 20, 3, False)
    path, body, headers = server.requests[0]
    assert path == "/v1/chat/completions"
    assert body == {"model": "fake-model", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 50}
    assert headers["Authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("failure", [Reply.error(429), Reply.error(500), Reply.error(503), Reply.malformed(),
                                     Reply.slow(2.0), Reply.json({"choices": []})])
def test_transient_failures_are_retried(failure: Reply) -> None:
    with FakeOpenAIServer([failure, failure, "Paris."]) as server:
        reply = model(server, timeout=0.8).chat(MESSAGES)   # 0.8 s: room for a loaded machine
    assert reply.text == "Paris."
    assert len(server.requests) == 3


@pytest.mark.parametrize(("failure", "message"), [(Reply.error(429), "HTTP 429"), (Reply.error(500), "HTTP 500"),
                                                  (Reply.malformed(), "malformed reply"),
                                                  (Reply.slow(2.0), "no reply within 0.8 s")])
def test_error_after_the_last_retry(failure: Reply, message: str) -> None:
    with FakeOpenAIServer([failure] * 3, default="never reached") as server, \
            pytest.raises(ModelError, match=message) as caught:
        model(server, timeout=0.8).chat(MESSAGES)
    assert len(server.requests) == 3
    assert "failed after 3 attempts" in str(caught.value)


def test_client_errors_are_not_retried() -> None:
    with FakeOpenAIServer([Reply.error(401, "bad key")]) as server, pytest.raises(ModelError, match="HTTP 401"):
        model(server).chat(MESSAGES)
    assert len(server.requests) == 1


def test_retry_after_header_is_honoured() -> None:
    with FakeOpenAIServer([Reply.error(429, retry_after=0), "ok"]) as server:
        assert model(server, backoff=30.0).chat(MESSAGES).text == "ok"


def test_reasoning_model_parameters_are_dropped() -> None:
    replies = [Reply.error(400, "Unsupported parameter: 'max_tokens' is not supported. Use 'max_completion_tokens'."),
               Reply.error(400, "Unsupported value: 'temperature' does not support 0 with this model."),
               "Thought about it."]
    with FakeOpenAIServer(replies) as server:
        assert model(server).chat(MESSAGES, temperature=0.0, max_tokens=64).text == "Thought about it."
    sent = [body for _, body, _ in server.requests]
    assert "max_tokens" in sent[0]
    assert "temperature" in sent[0]
    assert sent[1]["max_completion_tokens"] == 64
    assert "max_tokens" not in sent[1]
    assert "temperature" not in sent[2]
    assert sent[2]["max_completion_tokens"] == 64


def test_parameter_rejections_end_in_an_error() -> None:
    rejection = Reply.error(400, "max_tokens / max_completion_tokens / temperature: all unsupported")
    with FakeOpenAIServer([rejection] * 5) as server, pytest.raises(ModelError, match="HTTP 400"):
        model(server).chat(MESSAGES, temperature=0.0, max_tokens=64)
    assert len(server.requests) == 4
    assert server.requests[-1][1] == {"model": "fake-model", "messages": MESSAGES}


def test_cache_serves_repeated_calls() -> None:
    cache = DictCache()
    with FakeOpenAIServer(["first", "second"]) as server:
        chat = model(server, cache=cache)
        first = chat.chat(MESSAGES, temperature=0.0)
        again = chat.chat(MESSAGES, temperature=0.0)
        other = chat.chat(MESSAGES, temperature=0.5)
    assert (first.text, first.cached) == ("first", False)
    assert (again.text, again.cached, again.prompt_tokens) == ("first", True, first.prompt_tokens)
    assert (other.text, other.cached) == ("second", False)
    assert len(server.requests) == 2


def test_cache_key_depends_on_every_part() -> None:
    base = cache_key("m", "chat", {"temperature": 0}, MESSAGES)
    assert base == cache_key("m", "chat", {"temperature": 0}, [dict(MESSAGES[0])])
    variants = [cache_key("m2", "chat", {"temperature": 0}, MESSAGES),
                cache_key("m", "x", {"temperature": 0}, MESSAGES),
                cache_key("m", "chat", {"temperature": 1}, MESSAGES), cache_key("m", "chat", {"temperature": 0}, [])]
    assert base not in variants
    assert len(set(variants)) == 4


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with FakeOpenAIServer() as server, pytest.raises(EvalError, match="NO_SUCH_KEY_VAR is not set"):
        model(server, api_key_env="NO_SUCH_KEY_VAR").chat(MESSAGES)
    assert server.requests == []


def test_check_reaches_the_server_or_fails() -> None:
    with FakeOpenAIServer() as server:
        model(server).check()
        url = server.base_url
    with pytest.raises(EvalError, match="unreachable"):
        OpenAIChatModel(url, "m", api_key_env="", timeout=1.0).check()


def test_concurrent_calls_share_one_server() -> None:
    with FakeOpenAIServer(lambda path, body: body["messages"][0]["content"].upper(), delay=0.05) as server:
        chat = model(server)
        with ThreadPoolExecutor(16) as pool:
            texts = list(pool.map(lambda i: chat.chat([{"role": "user", "content": f"q{i}"}]).text, range(64)))
    assert texts == [f"Q{i}" for i in range(64)]


def test_backoff_grows_and_is_jittered() -> None:
    delays = [backoff_delay(attempt, 1.0) for attempt in range(6) for _ in range(50)]
    assert all(0 <= d < 2 ** 5 for d in delays)
    assert max(delays[250:]) > 2 ** 3 > max(delays[:50])
    assert backoff_delay(3, 1.0, retry_after=120) == 30.0


def test_azure_openai_deployment_api_version_and_api_key_header(monkeypatch: pytest.MonkeyPatch) -> None:
    """Azure's documented shape: /openai/deployments/{deployment}/chat/completions?api-version=..., key in api-key."""
    from evalcore.targets import TargetConfig
    from evalcore.targets.generators import build_chat_model, build_judge_model

    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-secret")
    with FakeOpenAIServer(default="Paris.") as server:
        config = TargetConfig.from_dict({
            "generator": "openai", "base_url": server.root_url, "deployment": "gpt-4o-eu",
            "api_version": "2024-10-21", "api_key_env": "AZURE_OPENAI_API_KEY", "api_key_header": "api-key",
            "judge_kind": "openai", "judge_model": "judge",
            "judge_base_url": f"{server.root_url}/openai/deployments/judge?api-version=2024-06-01",
            "judge_api_key_env": "AZURE_OPENAI_API_KEY", "judge_api_key_header": "api-key"})
        model = build_chat_model(config)
        assert model is not None
        assert model.chat([{"role": "user", "content": "Capital?"}]).text == "Paris."
        judge = build_judge_model(config, model)  # the judge deployment named in its base URL, with its query
        judge.chat([{"role": "user", "content": "Grade"}])
        (path, _, headers), (judge_path, _, judge_headers) = [r for r in server.requests if r[1] is not None][-2:]
        root = server.root_url
    assert path == "/openai/deployments/gpt-4o-eu/chat/completions?api-version=2024-10-21"
    assert judge_path == "/openai/deployments/judge/chat/completions?api-version=2024-06-01"
    assert headers["api-key"] == judge_headers["api-key"] == "azure-secret"
    assert "Authorization" not in headers
    assert model.name == f"openai:gpt-4o-eu@{root}|deployment:gpt-4o-eu"


def test_a_base_url_with_a_query_string_keeps_it_after_the_path() -> None:
    with FakeOpenAIServer(default="ok") as server:
        OpenAIChatModel(f"{server.base_url}?tenant=a&api-version=1", "m").chat([{"role": "user", "content": "x"}])
        assert server.requests[0][0] == "/v1/chat/completions?tenant=a&api-version=1"
    with pytest.raises(EvalError) as caught:
        from evalcore.targets import TargetConfig

        TargetConfig.from_dict({"generator": "openai", "deployment": "a/b", "api_key_header": "x-key"})
    assert sorted(p.split(":")[0] for p in caught.value.problems) == ["api_key_header", "deployment"]
