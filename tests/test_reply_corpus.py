"""The reply parser on a corpus of judge replies, each with the reading a person gives it: the replies SmolLM2-135M
wrote on llama-cpp-python's OpenAI-compatible server (in plain text and in JSON mode), and scripted shapes. A score is
read only where the reply states one: a numbered list, a version, a date or a quantity is none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcore.judges import parse_reply

CORPUS = [json.loads(line) for line in
          (Path(__file__).parent / "fixtures" / "judge_replies.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", CORPUS, ids=[f"{i}-{c['source'][:20]}-{c['note'][:30]}" for i, c in enumerate(CORPUS)])
def test_each_reply_is_read_as_a_person_reads_it(case: dict[str, Any]) -> None:
    reading = parse_reply(case["reply"], case["output"])
    assert (None if reading is None else reading.score) == case["expected"], case["note"]


def test_the_corpus_holds_real_replies_of_both_formats_and_every_shape_the_parser_must_refuse() -> None:
    real = [c for c in CORPUS if c["source"].startswith("llama-cpp-python")]
    assert sum("json_object" in c["source"] for c in real) >= 30
    assert sum("none" in c["source"] for c in real) >= 30
    notes = " ".join(c["note"] for c in CORPUS if c["expected"] is None)
    for shape in ("numbered list", "version", "date", "quantity", "schema"):
        assert shape in notes
