"""A campaign's memory stays flat in its number of questions: nothing is kept per question for the whole run.

Traced memory (tracemalloc) is read while one campaign runs, once N questions are written and again at 2N; the
difference per question must stay small. Every question, answer and reference is a text of its own (in English,
French and Chinese) over a small corpus, so a cache that keeps something per question shows up at once, while what is
kept per passage of the corpus is in place before the first reading.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig
from evalcore.testing.multilingual_corpus import corpus

N = 600  # questions between the two readings
KEPT_PER_QUESTION = 400  # bytes a question may leave behind (the store's own buffers, an interned number)

_EN = ("refund", "router", "espresso", "bicycle", "password", "tomatoes", "support", "battery", "train", "sourdough")
_FR = ("remboursement", "routeur", "cafetière", "vélo", "passe", "tomates", "assistance", "batterie", "nuit", "pain")
_HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可也能下过子说产种面而方后多定行学法"


def _word(i: int, han: bool = False) -> str:
    """A word made from the number: every question's texts are new to every cache."""
    if han:
        return "".join(_HAN[(i // len(_HAN) ** k) % len(_HAN)] for k in range(3))
    return "".join(chr(ord("a") + (i // 26 ** k) % 26) for k in range(4))


def _question(i: int) -> tuple[str, str]:
    """A question and its reference answer, in one of three languages."""
    topic = i % 10
    if i % 3 == 0:
        return f"How long does the {_EN[topic]} take, case {_word(i)}?", f"About {i} days for {_word(i + 7)}."
    if i % 3 == 1:
        return f"Combien de temps pour {_FR[topic]}, cas {_word(i)} ?", f"Environ {i} jours pour {_word(i + 7)}."
    return f"{_word(i, True)}番茄需要多少{_word(i + 3, True)}时间？", f"大约{_word(i + 5, True)}{i}天。"


def _dataset(folder: Path, n: int) -> Path:
    passages = corpus()
    pairs = [_question(i) for i in range(n)]
    tables = {
        "corpus": {"id": [p.pid for p in passages], "text": [p.text for p in passages],
                   "title": [p.title for p in passages]},
        "queries": {"id": list(range(n)), "text": [question for question, _ in pairs]},
        "answers": {"id": list(range(n)), "text": [answer for _, answer in pairs]},
        "qas": {"qid": list(range(n)), "aid": list(range(n))},
        "qrels": {"qid": list(range(n)), "pid": [passages[i % len(passages)].pid for i in range(n)]},
    }
    folder.mkdir(parents=True)
    for name, columns in tables.items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


def _written(manager: CampaignManager, campaign_id: str) -> int:
    rows = manager.store.read("SELECT count(*) AS n FROM results WHERE campaign_id = ?", (campaign_id,))
    return int(rows[0]["n"])


def test_campaign_keeps_nothing_per_question(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "data", 2 * N)
    manager = CampaignManager(tmp_path / "memory.db")
    config = TargetConfig.of(retriever="bm25", generator="extractive")
    try:
        # A first campaign loads what every campaign loads: the index, jieba's dictionary, the measures.
        manager.wait(manager.launch(LaunchRequest(dataset=str(data), config=config, limit=20, concurrency=1,
                                                  cache=False)))
        gc.collect()
        tracemalloc.start()
        try:
            campaign_id = manager.launch(LaunchRequest(dataset=str(data), config=config, concurrency=1, cache=False))
            readings: list[tuple[int, int]] = []
            for mark in (N, 2 * N):
                while (done := _written(manager, campaign_id)) < mark:
                    time.sleep(0.05)
                readings.append((done, tracemalloc.get_traced_memory()[0]))
            manager.wait(campaign_id)
        finally:
            tracemalloc.stop()
    finally:
        manager.close()
    (first, before), (second, after) = readings
    per_question = (after - before) / (second - first)
    assert per_question < KEPT_PER_QUESTION, \
        f"{per_question:.0f} bytes kept per question between {first} and {second} questions"
