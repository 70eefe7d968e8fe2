"""Test-set generation with the scripted loopback model: questions generated per minute, against the same model
calls made bare.

    python bench/testset_generation.py [--questions 200] [--passages 2000] [--rounds 3]

The corpus is /work/shared/bench/realistic_dataset.py's (three languages, passages of mixed lengths), written
into a temporary folder. Each round generates the set as a job on a fresh store (nothing cached: every call
reaches the loopback server), then, as the reference, makes the same number of chat calls through the same
client at the same concurrency with nothing around them (the loopback's own ceiling), then generates once more
on the first store (every call from the cache). Rounds interleaved; each cell is the median with min-max.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.models.openai import OpenAIChatModel
from evalcore.store import open_store
from evalcore.testing.openai_server import FakeOpenAIServer
from evalcore.testing.testset_model import TestsetModel
from evalcore.testsets import GenerationRequest, generate_testset
from evalcore.testsets.quality import embed_with

REALISTIC = Path("/work/shared/bench/realistic_dataset.py")
CONCURRENCY = 4


def cell(values: list[float], digits: int = 1) -> str:
    """Median (min-max)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def generate(folder: Path, db: str, out: str, url: str, questions: int) -> float:
    """Seconds to generate the set as a job (cached calls served by the store at db)."""
    request = GenerationRequest(str(folder / "corpus"), str(folder / out), questions, concurrency=CONCURRENCY,
                                model={"judge_model": "fake", "judge_base_url": url, "judge_api_key_env": ""},
                                replace=True)
    with open_store(db) as store:
        start = time.perf_counter()
        generate_testset(store, request)
        return time.perf_counter() - start


def bare(url: str, calls: int) -> float:
    """Seconds for `calls` chat calls through the same client at the same concurrency."""
    model = OpenAIChatModel(url, "fake", api_key_env="")
    messages = [{"role": "system", "content": "You check one question of a test set."},
                {"role": "user", "content": "Passage 1:\nThe router restarts.\n\nQuestion: What restarts?"}]
    start = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(lambda _: model.chat(messages, temperature=0.0, max_tokens=300), range(calls)))
    return time.perf_counter() - start


def main() -> None:
    """Interleave the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    embed_with("use")(["warm up"])  # the embedding model's weights load once per process, not in a round
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        subprocess.run([sys.executable, str(REALISTIC), str(folder / "corpus"), "--questions", "1", "--passages",
                        str(args.passages)], check=True, capture_output=True)
        fresh, cached, reference, calls = [], [], [], 0
        model = TestsetModel()
        with FakeOpenAIServer(model.reply) as server:
            for round_ in range(args.rounds):
                before = sum(model.calls.values())
                fresh.append(generate(folder, str(folder / f"r{round_}.db"), "set", server.base_url, args.questions))
                calls = sum(model.calls.values()) - before
                reference.append(bare(server.base_url, calls))
                cached.append(generate(folder, str(folder / f"r{round_}.db"), "again", server.base_url,
                                       args.questions))
    per_minute = [60 * args.questions / s for s in fresh]
    print(f"{args.questions} questions over {args.passages} passages, {calls} model calls per set, "
          f"{CONCURRENCY} in flight, {args.rounds} rounds")
    print("| run | seconds | questions per minute |")
    print("|---|---|---|")
    print(f"| generated (every call to the loopback model) | {cell(fresh, 2)} | {cell(per_minute, 0)} |")
    print(f"| generated again (every call from the cache) | {cell(cached, 2)} | "
          f"{cell([60 * args.questions / s for s in cached], 0)} |")
    print(f"| reference: the same {calls} calls bare | {cell(reference, 2)} | "
          f"{cell([60 * args.questions / s for s in reference], 0)} |")


if __name__ == "__main__":
    main()
