"""Campaign throughput: questions against a loopback OpenAI-compatible server answering after 200 ms.

    python bench/campaign.py [--questions 1000] [--questions-c1 100] [--latency 0.2] [--concurrency 1 8 32]

The server runs in its own process (as a real remote model would), so this process's CPU time
is our own cost per question: BM25 retrieval, the prompt, the HTTP call, scoring, the SQLite write.
Ideal wall time = questions x latency / concurrency; wall time runs from launch (validation,
snapshot, index) to the last result stored, after one small warm-up campaign. Concurrency 1 runs fewer questions by
default (1,000 x 0.2 s would take 200 s on its own); the table says how many.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.campaigns import CampaignManager
from evalcore.targets import TargetConfig

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
    """A target that answers at once from a fixed passage: what is left is the campaign machinery."""

    def __init__(self) -> None:
        from evalcore.targets import Retrieved, TargetAnswer

        self.config = TargetConfig()
        self.reply = lambda: TargetAnswer("The refund rule says 30 days.", [Retrieved(1, "", "The refund rule.", 1.0, {})])

    def check(self) -> None:
        """Nothing to reach."""

    def prepare(self, passages: object, progress: object = None) -> None:
        """Nothing to index."""

    def answer(self, question: str, qid: int | None = None) -> object:
        """The fixed answer."""
        return self.reply()

    def chat_model(self) -> None:
        """No model."""


def write_dataset(folder: Path, questions: int) -> Path:
    """A synthetic dataset: `questions` labeled questions with answers over 200 passages."""
    folder.mkdir(parents=True, exist_ok=True)
    ids = list(range(1, questions + 1))
    topics = ["refund", "delivery", "warranty", "invoice", "password", "router", "thermostat", "battery"]
    tables = {
        "queries": {"id": ids, "text": [f"What is the {topics[i % 8]} rule number {i}?" for i in ids]},
        "corpus": {"id": list(range(200)), "text": [f"The {topics[p % 8]} rule number {p} says {p} days." for p in range(200)]},
        "answers": {"id": ids, "text": [f"The {topics[i % 8]} rule says {i % 200} days." for i in ids]},
        "qrels": {"qid": ids, "pid": [i % 200 for i in ids]},
        "qas": {"qid": ids, "aid": ids},
    }
    for name, columns in tables.items():
        pq.write_table(pa.table(columns), folder / f"{name}.parquet")
    return folder


def run_one(manager: CampaignManager, dataset: Path, config: TargetConfig, questions: int, concurrency: int,
            target: InstantTarget | None = None) -> dict:
    """Launch, wait, and measure one campaign."""
    cpu, start = time.process_time(), time.perf_counter()
    campaign_id = manager.launch(dataset=str(dataset), config=config, concurrency=concurrency, cache=False,
                                 limit=questions, target=target)
    campaign = manager.wait(campaign_id)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if campaign["status"] != "succeeded" or campaign["failed"]:
        raise SystemExit(f"campaign {campaign_id} ended {campaign['status']} with {campaign['failed']} failed: {campaign['error']}")
    return {"wall": wall, "cpu": cpu, "finished": campaign["finished"]}


def main() -> None:
    """Run every concurrency and print the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--questions-c1", type=int, default=100, help="questions at concurrency 1")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.latency)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
    try:
        base_url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as folder:
            dataset = write_dataset(Path(folder) / "bench", args.questions)
            config = TargetConfig(retriever="bm25", generator="openai", base_url=base_url, model="bench",
                                  api_key_env="", retries=0, knowledge_base=str(dataset))
            manager = CampaignManager(Path(folder) / "bench.db")
            run_one(manager, dataset, config, 16, 8)  # warm-up: tokenizer dictionaries, imports, connections
            rows = []
            for concurrency in args.concurrency:
                questions = args.questions_c1 if concurrency == 1 else args.questions
                measured = run_one(manager, dataset, config, questions, concurrency)
                rows.append((concurrency, questions, measured))
            instant = run_one(manager, dataset, config, args.questions, 8, InstantTarget())
            manager.close()
    finally:
        server.kill()
        server.wait()
    print_table(rows, args.latency)
    print(f"\nCampaign machinery alone (instant target, {args.questions} questions, concurrency 8: dispatch, "
          f"scoring, SQLite write): {instant['wall'] / args.questions * 1000:.2f} ms wall and "
          f"{instant['cpu'] / args.questions * 1000:.2f} ms CPU per question.")


def print_table(rows: list[tuple[int, int, dict]], latency: float) -> None:
    """Markdown: wall vs ideal, overhead per question, our CPU per question."""
    print("| concurrency | questions | ideal (s) | wall (s) | wall / ideal | overhead per question (ms) | our CPU per question (ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for concurrency, questions, m in rows:
        ideal = questions * latency / concurrency
        # Extra time each concurrency slot spent per question beyond the server's latency.
        overhead = (m["wall"] - ideal) * concurrency / questions * 1000
        print(f"| {concurrency} | {questions} | {ideal:.1f} | {m['wall']:.2f} | {m['wall'] / ideal:.3f} | "
              f"{overhead:.2f} | {m['cpu'] / questions * 1000:.2f} |")


if __name__ == "__main__":
    main()
