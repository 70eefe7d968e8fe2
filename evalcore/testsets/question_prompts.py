"""The prompts that write and check generated questions, and the one hash over all of them (in the provenance:
a change of wording is a new hash, and the model-call cache asks again)."""

from __future__ import annotations

import hashlib

from evalcore.testsets.testset_records import LANGUAGES, Kind

PROMPTS_VERSION = 1

_WRITER = ("You write questions for the test set of a search-and-answer system. A question must make sense to "
           "someone who has never seen the passages: never write 'according to the passage', 'in this text', "
           "'the author' or 'the document' without naming what it is. Write in {language}. Reply with only a JSON "
           "object.")

_TASKS = {
    Kind.FACT: ("Write one question about a single fact the passage states, and its short answer taken from the "
                'passage. Reply {"question": "...", "answer": "..."}'),
    Kind.TWO_PASSAGES: ("Write one question that needs a fact from passage 1 and a fact from passage 2 to be "
                        "answered (neither passage alone answers it), and its short answer built from both. Reply "
                        '{"question": "...", "answer": "..."}'),
    Kind.PARAPHRASE: ("Write one question about a single fact the passage states, worded in your own words: use as "
                      "few of the passage's words as you can (synonyms, another construction), and its short "
                      'answer. Reply {"question": "...", "answer": "..."}'),
    Kind.UNANSWERABLE: ("Write one question on the topic of the passage that a reader could plausibly ask but that "
                        "the passage does not answer (a detail, figure or date it does not give). Reply "
                        '{"question": "..."}'),
}

CRITIC = ("You check one question of a test set against the passages it was written from. answerable: can the "
          "question be answered from these passages alone? standalone: does it make sense to a reader who has not "
          "seen the passages (no 'according to the passage', 'this text', 'the author' left unnamed)? Reply with "
          'only a JSON object: {"answerable": true, "standalone": true, "reason": "one sentence"}')

RELATED = ("Here are a question and numbered passages. Which passages contain information that helps answer the "
           'question? Reply with only a JSON object: {"relevant": [numbers of those passages]} (an empty list '
           "when none does).")

RETRY = "Your reply could not be read. Reply again with only the JSON object asked for."


def writer_messages(kind: Kind, language: str, passages: list[str]) -> list[dict[str, str]]:
    """The messages that ask for one question of this kind, in this language, from these passages."""
    if len(passages) == 1:
        shown = f"Passage:\n{passages[0]}"
    else:
        shown = "\n\n".join(f"Passage {number}:\n{text}" for number, text in enumerate(passages, 1))
    return [{"role": "system", "content": _WRITER.format(language=LANGUAGES[language])},
            {"role": "user", "content": f"{shown}\n\n{_TASKS[kind]}"}]


def critic_messages(question: str, passages: list[str]) -> list[dict[str, str]]:
    """The messages that ask the critic about one question and its passages."""
    shown = "\n\n".join(f"Passage {number}:\n{text}" for number, text in enumerate(passages, 1))
    return [{"role": "system", "content": CRITIC}, {"role": "user", "content": f"{shown}\n\nQuestion: {question}"}]


def related_messages(question: str, passages: list[str]) -> list[dict[str, str]]:
    """The messages of the second check: which of these other passages help answer the question."""
    shown = "\n\n".join(f"[{number}] {text}" for number, text in enumerate(passages, 1))
    return [{"role": "system", "content": RELATED}, {"role": "user", "content": f"Question: {question}\n\n{shown}"}]


def prompts_hash() -> str:
    """sha256 (first 16 hex digits) over every prompt's text and the version."""
    texts = [str(PROMPTS_VERSION), _WRITER, *(_TASKS[kind] for kind in Kind), CRITIC, RELATED, RETRY]
    return hashlib.sha256("\x1e".join(texts).encode("utf-8")).hexdigest()[:16]
