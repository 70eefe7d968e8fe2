"""A scripted model that writes and checks test-set questions over the loopback OpenAI server, for tests and the
benchmark: it answers the writer, the critic and the second check from the text of the prompts alone, in the
language asked, and can be told to lean on its passage ("According to the passage, ..."), to reply unreadably a
number of times, or to go silent.

    model = TestsetModel(leaning=("ferry",), unreadable=2)
    with FakeOpenAIServer(model.reply) as server: ...
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from typing import Any

from evalcore.testing.openai_server import Reply

_SENTENCE = re.compile(r"[^.!?。！？]+[.!?。！？]?")
_WORD = re.compile(r"[^\W\d_]+")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_UNANSWERABLE = {"English": "In which year did {} first appear?", "French": "En quelle année {} est-il apparu ?",
                 "Chinese": "{}是哪一年首次出现的？"}
_FACT = {"English": "What is known about {}?", "French": "Que sait-on de {} ?", "Chinese": "关于{}有什么说法？"}
_TWO = {"English": "How do {} and {} relate?", "French": "Quel lien entre {} et {} ?", "Chinese": "{}和{}有什么关系？"}
_PARAPHRASE = {"English": "Which claim comes up regarding item {}?",
               "French": "Quelle affirmation concerne l'item {} ?", "Chinese": "第{}项涉及哪种说法？"}
_MARKERS = ("first appear", "est-il apparu", "首次出现")


def _first_sentence(text: str) -> str:
    found = _SENTENCE.search(text.strip())
    return (found.group() if found else text).strip()


def _topic(sentence: str, language: str) -> str:
    if language == "Chinese":
        return "".join(_HAN.findall(sentence))[:6] or sentence[:6]
    return " ".join(_WORD.findall(sentence)[:5])


def _passages(head: str) -> list[str]:
    return [part.strip() for part in re.split(r"Passage(?: \d+)?:\n", head) if part.strip()]


class TestsetModel:
    """Scripted replies by the system prompt: the writer, the critic, the second check."""

    __test__ = False  # not a pytest class

    def __init__(self, *, leaning: tuple[str, ...] = (), unreadable: int = 0) -> None:
        self.leaning, self.unreadable = leaning, unreadable
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def reply(self, path: str, body: Any) -> Reply:
        """The reply to one chat request (the FakeOpenAIServer's script)."""
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]  # a retry's too
        role = ("writer" if system.startswith("You write questions") else
                "critic" if system.startswith("You check one question") else "related")
        with self._lock:
            self.calls[role] += 1
            if role == "writer" and self.unreadable > 0:
                self.unreadable -= 1
                return Reply("Sure, here is a good question about it.")
        text = {"writer": self._write, "critic": self._criticise, "related": self._relate}[role](system, user)
        return Reply(json.dumps(text, ensure_ascii=False), prompt_tokens=len(system + user) // 4,
                     completion_tokens=len(json.dumps(text)) // 4)

    def _write(self, system: str, user: str) -> dict[str, str]:
        language = re.search(r"Write in (English|French|Chinese)", system)
        tongue = language.group(1) if language else "English"
        passages = _passages(user.rsplit("\n\nWrite one question", 1)[0])
        sentences = [_first_sentence(p) for p in passages]
        topic = _topic(sentences[0], tongue)
        if "does not answer" in user:
            return {"question": _UNANSWERABLE[tongue].format(topic)}
        if "passage 1 and a fact from passage 2" in user:
            return {"question": _TWO[tongue].format(topic, _topic(sentences[-1], tongue)),
                    "answer": " ".join(sentences)}
        if "own words" in user:
            return {"question": _PARAPHRASE[tongue].format(len(passages[0]) % 97), "answer": sentences[0]}
        question = _FACT[tongue].format(topic)
        if any(word in passages[0] for word in self.leaning):
            question = "According to the passage, " + question[0].lower() + question[1:]
        return {"question": question, "answer": sentences[0]}

    def _criticise(self, system: str, user: str) -> dict[str, Any]:
        question = user.rsplit("Question: ", 1)[-1].casefold()
        leaning = "according to the passage" in question or "this text" in question
        unanswerable = any(marker in question for marker in _MARKERS)
        return {"answerable": not unanswerable, "standalone": not leaning,
                "reason": "It leans on the passage." if leaning else
                "The passage does not say." if unanswerable else "The passage states it."}

    def _relate(self, system: str, user: str) -> dict[str, list[int]]:
        head, _, rest = user.partition("\n\n")
        asked = {w.casefold() for w in _WORD.findall(head.removeprefix("Question: ")) if len(w) > 3}
        numbered = re.findall(r"\[(\d+)\] (.*)", rest)
        return {"relevant": [int(n) for n, text in numbered
                             if len(asked & {w.casefold() for w in _WORD.findall(text)}) >= 2]}
