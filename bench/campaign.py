"""Campaign throughput against a remote model, and the campaign machinery's own cost per question.

    python bench/campaign.py [--questions 1000] [--latency 0.2] [--concurrency 8 32] [--rounds 3]

A loopback OpenAI-compatible server runs in its own process (as a real remote model would) and
answers after `latency` seconds. Two contenders are interleaved over the rounds:
- **evalcore**: a campaign (bm25 retrieval, the openai generator) at each concurrency; wall time
  runs from launch (validation, snapshot, index) to the last stored result;
- **plain client**: a thread pool of that many threads posting the same number of chat requests
  with httpx, and nothing else: the floor this server and machine allow.
Ideal wall time = questions x latency / concurrency. The table gives median (min-max).

Machinery rows (CPU of this process per question, the server answering at once): an in-process
target that answers instantly with 30 retrieved passages (dispatch, scoring, the SQLite write);
an HTTP agent (adds the HTTP call); the RAG pipeline with the openai generator (adds BM25
retrieval and the prompt).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import Retrieved, TargetAnswer, TargetConfig

# The handler writes headers and body in two sends; without TCP_NODELAY, Nagle's algorithm and
# delayed ACKs add ~40 ms to every keep-alive response, which would be measured as our overhead.
SERVER = """
import socketserver, sys, time
socketserver.StreamRequestHandler.disable_nagle_algorithm = True
from evalcore.testing.openai_server import FakeOpenAIServer
with FakeOpenAIServer(delay=float(sys.argv[1]), default="Refunds are accepted within 30 days.") as server:
    print(server.base_url, flush=True)
    time.sleep(3600)
"""


class InstantTarget:
    """A target that answers at once with 30 retrieved passages: what is left is the campaign machinery."""

    def __init__(self) -> None:
        self.config = TargetConfig()
        self.hits = [Retrieved(p, f"Document {p % 7}", f"The rule number {p} says {p} days, in every country.",
                               1.0 - p / 100, {"bm25": 5.0 - p / 10}) for p in range(30)]

    def check(self) -> None:
        """Nothing to reach."""

    def prepare(self, passages: object, progress: object = None) -> None:
        """Nothing to index."""

    def answer(self, question: str, qid: int | None = None) -> TargetAnswer:
        """The fixed answer."""
        return TargetAnswer("The refund rule says 30 days.", list(self.hits))

    def chat_model(self) -> None:
        """No model."""


def write_dataset(folder: Path, questions: int) -> Path:
    """A synthetic dataset: `questions` labeled questions with answers over 200 passages."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = list(range(1, questions + 1))
    topics = ["refund", "delivery", "warranty", "invoice", "password", "router", "thermostat", "battery"]
    tables = {
        "queries": {"id": ids, "text": [f"What is the {topics[i % 8]} rule number {i}?" for i in ids]},
        "corpus": {"id": list(range(200)),
                   "text": [f"The {topics[p % 8]} rule number {p} says {p} days." for p in range(200)]},
        "answers": {"id": ids, "text": [f"The {topics[i % 8]} rule says {i % 200} days." for i in ids]},
        "qrels": {"qid": ids, "pid": [i % 200 for i in ids]},
        "qas": {"qid": ids, "aid": ids},
    }
    for name, columns in tables.items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


def campaign(manager: CampaignManager, dataset: Path, config: TargetConfig | None, questions: int,
             concurrency: int, target: InstantTarget | None = None) -> dict[str, float]:
    """Launch, wait, and measure one campaign: wall and CPU of this process."""
    cpu, start = time.process_time(), time.perf_counter()
    campaign_id = manager.launch(LaunchRequest(dataset=str(dataset), config=config, concurrency=concurrency,
                                 cache=False, limit=questions, target=target))
    done = manager.wait(campaign_id)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if done.status != "succeeded" or done.failed:
        raise SystemExit(f"campaign {campaign_id} ended {done.status_text}: {done.error}")
    return {"wall": wall, "cpu": cpu}


def plain(base_url: str, questions: int, concurrency: int) -> dict[str, float]:
    """The same number of chat requests from a plain thread pool and httpx, nothing else."""
    client = httpx.Client(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
    body = {"model": "bench", "messages": [{"role": "user", "content": "What is the refund rule number 7?"}]}

    def ask(_: int) -> Any:
        return client.post(f"{base_url}/chat/completions", json=body, timeout=60).json()

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(ask, range(concurrency)))  # connections open
        cpu, start = time.process_time(), time.perf_counter()
        list(pool.map(ask, range(questions)))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    client.close()
    return {"wall": wall, "cpu": cpu}


def server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The loopback model server in its own process, and its base URL."""
    process = subprocess.Popen([sys.executable, "-c", SERVER, str(latency)], stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parent.parent)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def cell(values: list[float], digits: int = 3) -> str:
    """Median (min-max)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    """Interleave the contenders over the rounds, then the machinery rows; print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    slow, slow_url = server(args.latency)
    instant, instant_url = server(0.0)
    try:
        with tempfile.TemporaryDirectory() as folder:
            dataset = write_dataset(Path(folder) / "bench", args.questions)
            manager = CampaignManager(Path(folder) / "bench.db")
            rag = TargetConfig.of(retriever="bm25", generator="openai", base_url=slow_url, model="bench",
                                  api_key_env="", retries=0, knowledge_base=str(dataset))
            campaign(manager, dataset, rag, 16, 8)  # warm-up: tokenizer dictionaries, imports, connections
            runs: dict[tuple[str, int], list[dict[str, float]]] = {}
            for _ in range(args.rounds):
                for concurrency in args.concurrency:
                    runs.setdefault(("evalcore", concurrency), []).append(
                        campaign(manager, dataset, rag, args.questions, concurrency))
                    runs.setdefault(("plain client", concurrency), []).append(
                        plain(slow_url, args.questions, concurrency))
            machinery = measure_machinery(manager, dataset, instant_url, args)
            manager.close()
    finally:
        for process in (slow, instant):
            process.kill()
            process.wait()
    print_tables(runs, machinery, args)


def measure_machinery(manager: CampaignManager, dataset: Path, url: str,
                      args: argparse.Namespace) -> dict[str, list[float]]:
    """CPU per question (ms) of each machinery row, interleaved over the rounds."""
    rows: dict[str, Callable[[], dict[str, float]]] = {
        "in-process target, 30 passages (dispatch, scoring, store)":
            lambda: campaign(manager, dataset, None, args.questions, 8, InstantTarget()),
        "HTTP agent, instant server (adds the HTTP call)":
            lambda: campaign(manager, dataset, TargetConfig.of(
                kind="http_agent", agent_url=f"{url}/chat/completions", knowledge_base=str(dataset),
                agent_body='{"model": "m", "messages": [{"role": "user", "content": "{question}"}]}',
                agent_answer_path="choices.0.message.content"), args.questions, 8),
        "RAG, bm25 + openai generator, instant server (adds retrieval, prompt)":
            lambda: campaign(manager, dataset, TargetConfig.of(
                retriever="bm25", generator="openai", base_url=url, model="bench", api_key_env="", retries=0,
                knowledge_base=str(dataset)), args.questions, 8),
    }
    out: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, run in rows.items():
            out[name].append(run()["cpu"] / args.questions * 1000)
    return out


def print_tables(runs: dict[tuple[str, int], list[dict[str, float]]], machinery: dict[str, list[float]],
                 args: argparse.Namespace) -> None:
    """Markdown tables: wall / ideal of both contenders, and the machinery's CPU per question."""
    print(f"{args.questions} questions, server latency {args.latency * 1000:.0f} ms, median (min-max) of "
          f"{args.rounds} interleaved rounds\n")
    print("| contender | concurrency | ideal (s) | wall (s) | wall / ideal | our CPU per question (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for (name, concurrency), measured in runs.items():
        ideal = args.questions * args.latency / concurrency
        print(f"| {name} | {concurrency} | {ideal:.2f} | {cell([m['wall'] for m in measured], 2)} | "
              f"{cell([m['wall'] / ideal for m in measured])} | "
              f"{cell([m['cpu'] / args.questions * 1000 for m in measured], 2)} |")
    print("\n| machinery (concurrency 8) | CPU per question (ms) |\n|---|---:|")
    for name, values in machinery.items():
        print(f"| {name} | {cell(values, 2)} |")
    print("\n| figure (medians) | goal | measured | met |\n|---|---|---:|---|")
    for concurrency in args.concurrency:
        ideal = args.questions * args.latency / concurrency
        ours, plain_client = (statistics.median(m["wall"] / ideal for m in runs[(name, concurrency)])
                              for name in ("evalcore", "plain client"))
        print(f"| wall / ideal at concurrency {concurrency}, against the plain client's {plain_client:.3f} | "
              f"within 1% of it (<= {plain_client * 1.01:.3f}) | {ours:.3f} | "
              f"{'yes' if ours <= plain_client * 1.01 else 'no'} |")
    for name, values in machinery.items():
        if name.startswith("in-process"):
            print(f"| machinery CPU per question: {name} | < 1 ms | {statistics.median(values):.2f} ms | "
                  f"{'yes' if statistics.median(values) < 1 else 'no'} |")


if __name__ == "__main__":
    main()
