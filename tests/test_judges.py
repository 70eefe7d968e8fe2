"""LLM judges: reply parsing on real-looking replies, and end to end against a loopback server."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from evalcore import judges
from evalcore.errors import EvalError
from evalcore.judges import JudgeResult
from evalcore.models import ChatReply, ContextOverflow, OpenAIChatModel
from evalcore.testing.openai_server import FakeOpenAIServer, Reply

LIKERT = [
    ("plain JSON", '{"score": 4, "reason": "Mentions the 30-day window but not the refund delay."}',
     4.0, "Mentions the 30-day window but not the refund delay."),
    ("fenced JSON after prose",
     'Here is my assessment:\n```json\n{\n  "score": 2,\n  "reason": "Mostly missing."\n}\n```',
     2.0, "Mostly missing."),
    ("fenced without language", '```\n{"score": 5, "reason": "Complete."}\n```', 5.0, "Complete."),
    ("JSON with string score and extra keys", '{"reasoning_steps": ["a", "b"], "Score": "3", "Reason": "Half."}',
     3.0, "Half."),
    ("JSON score as 4/5", '{"score": "4/5", "explanation": "Nearly all."}', 4.0, "Nearly all."),
    ("JSON after a thinking block", ("<think>The answer says 14 days, reference 30.</think>\n"
                                     '{"score": 1, "reason": "Contradicts the reference."}'),
     1.0, "Contradicts the reference."),
    ("prose after thinking that mentions a score", ("<think>Reference: 30 days; a score of 1 seems harsh.</think>"
     "Score: 4. Right duration, no detail."), 4.0, "Score: 4. Right duration, no detail."),
    ("tags", "<score>4</score>\n<reason>Correct, one detail missing.</reason>", 4.0, "Correct, one detail missing."),
    ("tags with spaces", "Evaluation:\n<score> 5 </score> The response is fully supported.", 5.0, None),
    ("prose with rated digit first", "The answer covers 2 of the 3 points. Score: 3/5.", 3.0, None),
    ("prose with a lone digit", "I would give this a 4 because it is accurate but terse.", 4.0, None),
    ("prose ignores numbers and decimals", "Over 10 days and 3.5 percent; overall 2.", 2.0, None),
    ("named score over 5", "Score: 4/5", 4.0, None),
    ("out of 5", "4 out of 5", 4.0, None),
    ("out of 5 at the end of a sentence", "I would rate this a 4 out of 5.", 4.0, None),
    ("give it a", "I'd give it a 5", 5.0, None),
    ("Python dict instead of JSON", "{'score': 3, 'reason': 'Half of it.'}", 3.0, "Half of it."),
    ("fenced JSON with a string score and no reason", '```json {"score": "4"} ```', 4.0,
     "(the judge gave no reason)"),
    ("half point in JSON", '{"score": 4.5, "reason": "r"}', 4.5, "r"),
    ("half point over 5 in prose", "I rate it 4.5/5", 4.5, None),
    ("French decimal comma", "Note : 4,5/5", 4.5, None),
    ("the scale's bounds are not the score", "On a scale of 1 to 5, I give it 4.", 4.0, None),
    ("fractions of facts are not the score", "It covers 2/3 of the points; I give it a 4", 4.0, None),
    ("a bare digit", "4", 4.0, None),
    ("a reply opening with the digit", "**4** - accurate but terse", 4.0, None),
    ("the digit on its own line", "3\nThe answer misses the date.", 3.0, None),
]

UNREADABLE = [
    ("nothing", "I cannot evaluate this."),
    ("empty", ""),
    ("JSON score out of range", '{"score": 7, "reason": "has 3 errors"}'),
    ("JSON score not a number", '{"score": "good", "reason": "fine"}'),
    ("tag out of range", "<score>9</score> great"),
    ("only big numbers", "Between 10 and 20 percent."),
    ("JSON score 0", '{"score": 0}'),
    ("JSON score 6", '{"score": 6, "reason": "has 2 errors"}'),
    ("named score 0", "Score: 0"),
    ("named score 6, small digit later", "Score: 6. The answer has 2 errors."),
    ("named negative score", "Score: -1"),
    ("named score on a 10-point scale", "Rating: 4/10"),
    ("out of 10", "Score: 5 out of 10"),
    ("fraction on another scale only", "It states 3/4 of the facts."),
    # SmolLM2-135M, asked to judge, echoed the answer: its "5 clients" is not a score.
    ("the judged answer echoed back", ("The Kestrel R5 VPN server listens on port 51820 and accepts up to 10 "
                                       "peers. It uses UDP port 1194 and allows up to 5 simultaneous clients.")),
    ("a count at the start", "3 facts are missing."),
]


@pytest.mark.parametrize("name,text,score,reason", LIKERT, ids=[t[0] for t in LIKERT])
def test_likert_replies_are_read(name, text, score, reason):
    reading = judges.parse_reply(text, "likert")
    assert reading is not None
    assert reading.score == score
    if reason is not None:
        assert reading.reason == reason
    assert reading.reason


@pytest.mark.parametrize("name,text", UNREADABLE, ids=[t[0] for t in UNREADABLE])
def test_unreadable_replies_are_none(name, text):
    assert judges.parse_reply(text, "likert") is None


@pytest.mark.parametrize("text,score", [
    ('{"label": "pass", "reason": "All claims are in passage 1."}', 1.0),
    ('{"label": false, "reason": "The price is not in the passages."}', 0.0),
    ('```json\n{"grounded": true, "reason": "ok"}\n```', 1.0),
    ('{"label": "Not Grounded", "reason": "x"}', 0.0),
    ("<label>fail</label><reason>The 45 days are invented.</reason>", 0.0),
    ("PASS - every statement is supported.", 1.0),
    ("The answer fails: it invents a warranty.", 0.0),
    ("Label: fail. It does not pass.", 0.0),
    ("Verdict: PASS", 1.0),
])
def test_label_replies_are_read(text, score):
    assert judges.parse_reply(text, "label").score == score


@pytest.mark.parametrize("text", ["It could pass, or fail, depending.", "Unsure.", '{"label": "maybe"}',
                                  "Accounts lock after 5 failed login attempts.", "You pass the gate, then turn left."])
def test_ambiguous_labels_are_unreadable(text):
    assert judges.parse_reply(text, "label") is None


def test_every_judge_has_a_versioned_prompt_with_a_stable_hash():
    hashes = set()
    for name in judges.JUDGES:
        prompt = judges.load_prompt(name)
        assert prompt.version
        assert prompt.output in ("likert", "label", "claims")
        assert len(prompt.hash) == 16
        assert "JSON" in prompt.system
        assert ("{" not in prompt.user.replace("{question}", "").replace(
            "{answer}", "").replace("{context}", "").replace("{expected}", ""))
        assert judges.signature(name) == judges.signature(name)
        hashes.add(prompt.hash)
    assert len(hashes) == len(judges.JUDGES)
    assert judges.load_prompt("response_completeness").name == "completeness"
    assert judges.load_prompt("judge.score").name == "score"
    with pytest.raises(EvalError, match="unknown judge"):
        judges.load_prompt("vibes")


def test_messages_fill_placeholders_once_and_number_passages():
    prompt = judges.load_prompt("groundedness")
    messages = judges.build_messages(prompt, question="Q {answer}?", answer="A", context=["one", "two"], expected=None)
    user = messages[1]["content"]
    assert "Q {answer}?" in user
    assert "[1] one" in user
    assert "[2] two" in user
    assert "(no passage was retrieved)" in judges.build_messages(
        prompt, question="q", answer="a", context=[], expected=None)[1]["content"]
    long = judges.format_context(["x" * 5000] * 20)
    assert long.count("x" * 5000) == 20
    assert "left out" not in long  # whole, however long


def test_a_judge_sees_each_passage_whole_with_its_title():
    # A fact near the end of a long passage was in the answer's prompt: the judge must see it too.
    passage = "Terms of sale. " + "General conditions apply. " * 86 + "Refunds: within 30 days of delivery."
    assert len(passage) > 2200
    assert passage.index("30 days") > 2190
    messages = judges.build_messages(judges.load_prompt("groundedness"), question="Refund window?", answer="30 days",
                                     context=[judges.Passage(passage, "Terms of Sale (EU)"), "untitled"],
                                     expected=None)
    user = messages[1]["content"]
    assert f"[1] Terms of Sale (EU)\n{passage}" in user
    assert "[2] untitled" in user


CUT = "[cut: the judge model's context window is too small]"


def test_a_cut_context_shortens_each_passage_alike_rather_than_dropping_the_later_ones():
    context = [judges.Passage("a" * 300, "A"), judges.Passage("b" * 300, "B"), judges.Passage("c" * 300, "C")]
    text = judges.format_context(context, keep=450)
    for number, letter in enumerate("abc", start=1):
        assert f"[{number}] {letter.upper()}\n{letter * 150} {CUT}" in text
        assert letter * 151 not in text
    assert "left out" not in text
    assert judges.context_chars(context) == 900
    # A short passage stays whole; the long ones share what is left.
    short = judges.format_context([judges.Passage("a" * 1000), judges.Passage("b" * 40), judges.Passage("c" * 1000)],
                                  keep=440)
    assert f"[2] {'b' * 40}\n" in short
    assert "a" * 200 + f" {CUT}" in short
    assert "c" * 200 + f" {CUT}" in short


FACT = "The Kestrel R5 accepts up to 5 simultaneous VPN clients."


def test_a_cut_context_keeps_what_the_answer_cites():
    filler = ["Passage one is about shipping. " * 30, "Passage two is about returns. " * 30,
              "Passage three is about warranty. " * 30]
    fourth = "The router manual. " * 20 + FACT + " Its ports are listed below. " * 20
    context = [*(judges.Passage(text, f"Doc {n}") for n, text in enumerate(filler, 1)), judges.Passage(fourth, "Doc 4")]
    # An answer built from passage 4: whether it quotes it or cites its number, that part of passage 4 stays.
    for answer in (f"{FACT}", "Up to 5 clients [4]."):
        text = judges.format_context(context, keep=600, answer=answer)
        assert "[1] Doc 1\n" in text
        assert "[4] Doc 4\n" in text
        if answer == FACT:
            assert FACT in text
        else:
            assert "[4] Doc 4\nThe router manual." in text
            assert len(text.split("[4] Doc 4\n")[1]) > 500
    # The quoted part is kept from where it is: the passage's start is cut, and said to be.
    quoted = judges.format_context(context, keep=300, answer=FACT).split("[4] Doc 4\n")[1]
    assert quoted.startswith(CUT)
    assert FACT in quoted
    assert quoted.endswith(CUT)


def test_a_judge_whose_window_is_small_still_reads_the_source_of_an_answer_built_from_a_later_passage():
    filler = [judges.Passage("Passage about shipping rules and fees. " * 40, f"Doc {n}") for n in range(1, 4)]
    context = [*filler, judges.Passage("The router manual. " * 20 + FACT, "Doc 4")]
    model = WindowedModel(3000, ['{"score": 5, "reason": "Supported by passage 4."}'])
    result = run(model, "groundedness", context=context, answer=FACT)
    assert result.score == 5.0
    assert result.context_cut
    assert model.calls[-1][0][-1]["content"].count(FACT) == 2   # the answer, and its source in passage 4


class ScriptedModel:
    """A ChatModel double for the pure logic: replies from a list, records calls."""

    name = "scripted:test"

    def __init__(self, replies):
        self.replies = list(replies)
        self.calls = []

    def chat(self, messages, *, temperature=None, max_tokens=None, schema=None):
        self.calls.append((messages, temperature, max_tokens))
        item = self.replies.pop(0)
        if isinstance(item, Exception):
            raise item
        return ChatReply(item, 100, 20, False)


def run(model, name="score", threshold=None, samples=1, **kwargs):
    inputs = {"question": "How long is the refund window?", "answer": "30 days.",
              "context": ["Consumers may return any product within 30 days."], "expected": "30 days from delivery."}
    settings = judges.JudgeSettings(model, thresholds={name: threshold} if threshold else {}, samples=samples)
    return judges.run_judge(settings, name, **{**inputs, **kwargs})


def test_unreadable_reply_is_retried_once_then_parsed():
    model = ScriptedModel(["Looks good to me!", '{"score": 5, "reason": "Same facts."}'])
    result = run(model)
    assert (result.score, result.result, result.reason) == (5.0, "pass", "Same facts.")
    assert len(model.calls) == 2
    assert model.calls[1][0][-2]["role"] == "assistant"
    assert result.tokens == 240
    assert result.prompt_tokens == 200


def test_twice_unreadable_is_unknown_never_a_pass():
    model = ScriptedModel(["no idea", "still no idea"])
    result = run(model)
    assert result.score is None
    assert result.result == "unknown"
    assert "unreadable" in result.reason
    assert len(model.calls) == 2


def test_threshold_decides_pass_and_fail():
    assert run(ScriptedModel(['{"score": 3, "reason": "r"}'])).result == "pass"
    failed = run(ScriptedModel(['{"score": 3, "reason": "r"}']), threshold=4)
    assert failed.result == "fail"
    assert failed.threshold == 4


class WindowedModel(ScriptedModel):
    """A model with a context window: a user message over `window` characters is refused as an overflow."""

    def __init__(self, window, replies):
        super().__init__(replies)
        self.window = window

    def chat(self, messages, *, temperature=None, max_tokens=None, schema=None):
        if len(messages[-1]["content"]) > self.window:
            self.calls.append((messages, temperature, max_tokens))
            raise ContextOverflow("HTTP 400: maximum context length exceeded", status=400)
        return super().chat(messages, temperature=temperature, max_tokens=max_tokens, schema=schema)


def test_a_context_over_the_judge_window_is_cut_by_halves_and_the_verdict_says_so():
    model = WindowedModel(2000, ['{"score": 4, "reason": "Supported."}'])
    result = run(model, "groundedness", context=["x" * 2000, "y" * 2000])
    assert (result.score, result.result) == (4.0, "pass")
    assert [len(call[0][-1]["content"]) > 2000 for call in model.calls] == [True, True, False]  # 4000, 2000, 1000
    assert result.context_cut == ("context cut to 1,000 of 4,000 characters: the judge model's context window is "
                                  "too small")
    assert judges.Verdict.from_dict(result.to_dict()) == result


def test_a_context_that_never_fits_is_unknown_with_the_error_and_a_whole_one_is_not_flagged():
    never = run(WindowedModel(10, []), "groundedness", context=["x" * 2000])
    assert never.result == "unknown"
    assert "maximum context length" in never.error
    assert never.context_cut
    whole = run(ScriptedModel(['{"score": 5, "reason": "r"}']), "groundedness", context=["x" * 20000])
    assert whole.context_cut is None
    assert whole.to_dict()["context_cut"] is None


def test_model_failure_is_unknown_with_the_error():
    result = run(ScriptedModel([EvalError("HTTP 401: bad key")]))
    assert result.result == "unknown"
    assert "401" in result.error


def test_missing_inputs_are_not_judged_and_cost_nothing():
    model = ScriptedModel([])
    result = run(model, "score", expected=None)
    assert result.result == "skipped"
    assert result.reason == "skipped: no reference answer"
    assert result.tokens == 0
    empty = run(model, "relevance", answer="  ")
    assert empty.result == "unknown"
    assert empty.reason == "not judged: no answer"
    assert model.calls == []


def test_groundedness_pro_is_a_label_without_threshold():
    result = run(ScriptedModel(['{"label": "fail", "reason": "The 14 days are not in the passages."}']),
                 "groundedness_pro")
    assert (result.score, result.result, result.threshold) == (0.0, "fail", None)


def test_several_samples_report_the_spread_and_bypass_the_cache():
    model = ScriptedModel(['{"score": 4, "reason": "a"}', '{"score": 2, "reason": "b"}', "???", "???"])
    result = run(model, samples=3)
    assert result.samples == (4.0, 2.0, None)
    assert result.score == 3.0
    assert (result.spread.to_dict() == {"n": 2, "min": 2.0, "max": 4.0,
                                                               "stdev": pytest.approx(1.4142, 1e-3)})
    contents = {call[0][-1]["content"] for call in model.calls[:2]}
    assert len(contents) == 2
    assert all(call[1] > 0 for call in model.calls)


def judge_server_reply(path, body):
    """Reply like a judge would: a good score when the answer contains the expected number."""
    text = body["messages"][-1]["content"]
    if "Answer to grade:\n30 days" in text:
        return Reply(text='```json\n{"score": 5, "reason": "Same duration as the reference."}\n```',
                     prompt_tokens=321, completion_tokens=19)
    return Reply(text="<score>2</score><reason>Wrong duration.</reason>", prompt_tokens=300, completion_tokens=12)


def test_end_to_end_against_a_loopback_openai_server():
    with FakeOpenAIServer(judge_server_reply) as server:
        model = OpenAIChatModel(server.base_url, "judge-mini", retries=0)
        good = run(model)
        bad = run(model, answer="14 days.")
        path, body, _ = server.requests[0]
        base_url = server.base_url
    assert (good.score, good.result, good.tokens) == (5.0, "pass", 340)
    assert (bad.score, bad.result, bad.reason) == (2.0, "fail", "Wrong duration.")
    assert good.model == f"openai:judge-mini@{base_url}"
    prompt_file = Path(judges.__file__).with_name("templates") / "score.txt"
    assert good.prompt_hash == hashlib.sha256(prompt_file.read_bytes()).hexdigest()[:16]  # the file it was asked with
    assert path.endswith("/chat/completions")
    assert body["model"] == "judge-mini"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == judges.MAX_TOKENS
    assert body["messages"][0]["role"] == "system"


def test_reasoning_model_rejecting_max_tokens_and_temperature_still_judges():
    no_max_tokens = Reply.error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                     "Use 'max_completion_tokens' instead.")
    no_temperature = Reply.error(400, "Unsupported value: 'temperature' does not support 0.0 with this model. "
                                      "Only the default (1) value is supported.")
    replies = [no_max_tokens, no_temperature,
               '<think>Short but correct.</think>{"score": 4, "reason": "Right, but terse."}']
    with FakeOpenAIServer(replies) as server:
        result = run(OpenAIChatModel(server.base_url, "o-reasoner", retries=0), "relevance")
        bodies = [body for _, body, _ in server.requests]
    assert (result.score, result.result, result.reason) == (4.0, "pass", "Right, but terse.")
    assert "max_tokens" in bodies[0]
    assert "max_tokens" not in bodies[1]
    assert bodies[1]["max_completion_tokens"] == judges.MAX_TOKENS
    assert "temperature" in bodies[1]
    assert "temperature" not in bodies[2]
    assert bodies[2]["max_completion_tokens"] == judges.MAX_TOKENS


def test_end_to_end_unparseable_twice_over_http_is_unknown():
    with FakeOpenAIServer(["I think it is fine.", "Really fine."]) as server:
        result = run(OpenAIChatModel(server.base_url, "chatty", retries=0), "completeness")
        assert len(server.requests) == 2
    assert result.result == "unknown"
    assert result.tokens == 36


@pytest.mark.parametrize("first,score", [
    ("Score: 4/5", 4.0), ("4 out of 5", 4.0), ("I'd give it a 5", 5.0), ("{'score': 3}", 3.0),
    ('```json {"score": "4"} ```', 4.0), ('{"score": 4.5, "reason": "r"}', 4.5),
])
def test_real_looking_replies_over_http_are_read_at_once(first, score):
    with FakeOpenAIServer([first]) as server:
        result = run(OpenAIChatModel(server.base_url, "small", retries=0), "relevance")
        assert len(server.requests) == 1
    assert result.score == score
    assert result.result == "pass"


@pytest.mark.parametrize("bad", ['{"score": 0, "reason": "r"}', '{"score": 6, "reason": "r"}', "Score: 6 of course"])
def test_off_scale_scores_over_http_are_retried_then_unknown(bad):
    with FakeOpenAIServer([bad, bad]) as server:
        result = run(OpenAIChatModel(server.base_url, "small", retries=0), "score")
        assert len(server.requests) == 2
    assert result.score is None
    assert result.result == "unknown"
    assert "unreadable" in result.reason


def test_local_model_failure_is_unknown_not_a_crash():
    # llama.cpp raises ValueError when the prompt exceeds its context window.
    result = run(ScriptedModel([ValueError("Requested tokens (5000) exceed context window of 4096")]))
    assert result.result == "unknown"
    assert result.score is None
    assert "context window" in result.error


def test_a_prompt_over_the_window_is_an_overflow_for_both_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from evalcore.models import local_model

    class Llama:  # llama-cpp-python's own words for a prompt over n_ctx
        def create_chat_completion(self, **kwargs):
            raise ValueError("Requested tokens (5012) exceed context window of 4096")

    monkeypatch.setattr(local_model, "_load_local", lambda: (Llama(), threading.Lock()))
    with pytest.raises(ContextOverflow, match="exceed context window"):
        local_model.LocalChatModel().chat([{"role": "user", "content": "x"}])
    message = "This model's maximum context length is 8192 tokens (context_length_exceeded)"
    with FakeOpenAIServer([Reply.error(400, message)]) as server:
        model = OpenAIChatModel(server.base_url, "m", api_key_env="", retries=0)
        with pytest.raises(ContextOverflow, match="maximum context length"):
            model.chat([{"role": "user", "content": "x"}])


def test_a_judge_result_says_whether_it_passed_only_when_it_decided() -> None:
    assert {result: result.passed for result in JudgeResult} == {
        JudgeResult.PASS: True, JudgeResult.FAIL: False, JudgeResult.UNKNOWN: None, JudgeResult.SKIPPED: None,
        JudgeResult.NO_CLAIM: None}
