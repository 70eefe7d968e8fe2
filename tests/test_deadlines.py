"""Every model call has an overall deadline: a peer that trickles its reply a byte at a time (each socket read
answered well within the timeout) fails the call when its time is up, retries and back-off included."""

from __future__ import annotations

import threading

import pytest

from evalcore.models import ModelError, new_client, post_json
from evalcore.targets import TargetConfig
from evalcore.targets.external import HttpAgentTarget
from evalcore.testing.agent import LoopbackAgent


def test_a_trickled_reply_fails_at_the_attempts_deadline() -> None:
    # About 60 bytes at 0.05 s each: 3 s of reply, every read within 0.05 s of the last.
    with LoopbackAgent(answer="x" * 20, trickle=0.05) as trickling, \
            pytest.raises(ModelError, match=r"no reply within 0\.4 s") as caught:
        post_json(new_client(), trickling.url, {"question": "q"}, timeout=0.4, retries=0, backoff=0.0,
                  parse=lambda body: body["answer"])
    assert "failed after 1 attempt:" in str(caught.value)


def test_retries_share_the_calls_deadline() -> None:
    with LoopbackAgent(answer="x" * 20, trickle=0.05) as trickling, pytest.raises(ModelError) as caught:
        post_json(new_client(), trickling.url, {"question": "q"}, timeout=0.3, retries=2, backoff=0.01,
                  parse=lambda body: body["answer"])
    assert "failed after 3 attempts" in str(caught.value)
    assert trickling.requests == 3


def test_the_calls_deadline_is_every_attempt_and_the_longest_back_off() -> None:
    from evalcore.models.http import call_deadline

    assert call_deadline(10.0, 0, 1.0) == 10.0
    assert call_deadline(10.0, 3, 1.0) == 40.0 + 1.0 + 2.0 + 4.0
    assert call_deadline(1.0, 2, 100.0) == 3.0 + 30.0 + 30.0   # a back-off is never longer than 30 s


def test_an_agents_trickled_reply_fails_its_question_with_the_reason() -> None:
    with LoopbackAgent(answer="x" * 20, trickle=0.05) as trickling:
        target = HttpAgentTarget(TargetConfig.of(kind="http_agent", agent_url=trickling.url, timeout=0.4, retries=0))
        with pytest.raises(ModelError, match="no reply within"):
            target.answer("What is the refund window?")


def test_the_watchdog_leaves_prompt_replies_alone() -> None:
    threads = []
    with LoopbackAgent(answer="fine") as agent:
        results: list[str] = []
        for _ in range(8):
            thread = threading.Thread(target=lambda: results.append(post_json(
                new_client(), agent.url, {}, timeout=30, retries=0, backoff=0.0, parse=lambda body: body["answer"])))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
    assert results == ["fine"] * 8
