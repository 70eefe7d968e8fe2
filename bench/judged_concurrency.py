"""Peak memory of a judged results-file run as its concurrency grows: a whole `python -m evalcore run` per round.

    python bench/judged_concurrency.py --data DIR [--questions 1000] [--concurrency 1 4 16] [--rounds 2]
                                       [--reference DIR] [--delay 0.01]

DIR is a dataset folder written by the realistic generator (`realistic_dataset.py DIR --questions N`: 20,000
passages in English, French and Chinese). A results file is written from it once: per question its labelled
passages then nine others as `ranked_ids`, the first reference's text as the answer (Chinese answers for Chinese
questions, so the segmenter loads), and the ranked passages' texts as `contexts`. Each round runs the CLI on its
first `--questions` questions with the `score` and `groundedness` judges, asked of a loopback OpenAI-compatible
server in another process (answering after `--delay` seconds, a verdict in JSON), at every concurrency, the cache
off, in a process of its own: its peak RSS and CPU are the child's (os.wait4). With --reference, a checkout of
earlier code (`git archive COMMIT | tar -x -C DIR`) runs the same command in the same rounds, the order alternating
by round. The goal: peak RSS at concurrency 16 within 1.5x of concurrency 1. Median (min-max) over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.5


def write_results(data: Path, path: Path, questions: int) -> None:
    """A results file for the dataset's first questions: labelled passages first, the first reference as answer."""
    queries = pd.read_parquet(data / "queries.parquet").head(questions)
    corpus = pd.read_parquet(data / "corpus.parquet", columns=["id", "text"])
    texts = dict(zip(corpus["id"].astype(str), corpus["text"], strict=True))
    pids = list(texts)
    qrels = pd.read_parquet(data / "qrels.parquet")
    labelled = qrels.groupby(qrels["qid"].astype(str))["pid"].apply(lambda p: [str(x) for x in p]).to_dict()
    answers = pd.read_parquet(data / "answers.parquet")
    qas = pd.read_parquet(data / "qas.parquet").drop_duplicates("qid")
    reference = dict(zip(qas["qid"].astype(str),
                         qas["aid"].map(dict(zip(answers["id"], answers["text"], strict=True))), strict=True))
    with path.open("w", encoding="utf-8") as out:
        for n, qid in enumerate(queries["id"].astype(str)):
            ranked = labelled.get(qid, [])[:10]
            ranked += [pids[(n * 7919 + k * 104729) % len(pids)] for k in range(10 - len(ranked))]
            out.write(json.dumps({"qid": qid, "ranked_ids": ranked, "answer": reference.get(qid, "") or "",
                                  "contexts": [texts[p] for p in ranked[:3]]}, ensure_ascii=False) + "\n")


def judge_process(delay: float) -> tuple[subprocess.Popen[str], str]:
    """The loopback judge in its own process (its memory is not the run's): its base URL."""
    verdict = json.dumps({"score": 4, "reason": "Mostly supported by the passages."})
    code = ("import sys\nfrom evalcore.testing.openai_server import FakeOpenAIServer\n"
            f"with FakeOpenAIServer(default={verdict!r}, delay={delay}) as server:\n"
            "    print(server.base_url, flush=True)\n"
            "    sys.stdin.read()\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def run_once(code: Path, folder: Path, data: Path, config: Path, questions: int, concurrency: int) -> dict[str, float]:
    """One whole judged run in its own process, from `code`: peak RSS (MB), CPU and wall (s)."""
    db = folder / f"run-{time.monotonic_ns()}.db"
    command = [sys.executable, "-m", "evalcore", "run", "--dataset", str(data), "--config", str(config),
               "--db", str(db), "--no-cache", "--limit", str(questions), "--concurrency", str(concurrency),
               "--judge", "score", "groundedness"]
    env = {**os.environ, "PYTHONPATH": str(code), "EVALCORE_INDEX_DIR": str(folder / "indexes")}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{code}: exit {os.waitstatus_to_exitcode(status)}\n{errors.decode(errors='replace')[-2000:]}")
    db.unlink(missing_ok=True)
    return {"rss": usage.ru_maxrss / 1024, "cpu": usage.ru_utime + usage.ru_stime,
            "wall": time.perf_counter() - started}


def spread(values: list[float], digits: int = 0) -> str:
    """Median (min-max)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reference", type=Path)
    parser.add_argument("--delay", type=float, default=0.01)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="evalcore-judged-"))
    results = folder / "results.jsonl"
    write_results(args.data, results, args.questions)
    judge, url = judge_process(args.delay)
    config = folder / "judged.toml"
    config.write_text(f'kind = "results_file"\nresults_path = "{results}"\njudge_kind = "openai"\n'
                      f'judge_model = "judge-fake"\njudge_base_url = "{url}"\njudge_api_key_env = ""\n',
                      encoding="utf-8")
    sides = {"ours": ROOT, **({"reference": args.reference.resolve()} if args.reference else {})}
    figures: dict[tuple[str, int], list[dict[str, float]]] = {}
    try:
        for round_ in range(args.rounds):
            order = list(sides.items()) if round_ % 2 == 0 else list(reversed(sides.items()))
            for concurrency in args.concurrency:
                for name, code in order:
                    figures.setdefault((name, concurrency), []).append(
                        run_once(code, folder, args.data, config, args.questions, concurrency))
                    print(f"round {round_ + 1} {name} concurrency {concurrency}: "
                          f"{figures[(name, concurrency)][-1]['rss']:.0f} MB", file=sys.stderr, flush=True)
    finally:
        judge.communicate("")
    load = os.getloadavg()[0]
    print(f"judged results-file run, {args.questions} questions, judges score + groundedness, "
          f"{args.rounds} rounds, load average {load:.1f}")
    print("| code | concurrency | peak RSS MB | peak / concurrency 1 | CPU s | wall s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in sides:
        base = statistics.median(f["rss"] for f in figures[(name, args.concurrency[0])])
        for concurrency in args.concurrency:
            runs = figures[(name, concurrency)]
            rss = [f["rss"] for f in runs]
            print(f"| {name} | {concurrency} | {spread(rss)} | {statistics.median(rss) / base:.2f} | "
                  f"{spread([f['cpu'] for f in runs], 1)} | {spread([f['wall'] for f in runs], 1)} |")
    worst = max(statistics.median(f["rss"] for f in figures[("ours", c)]) for c in args.concurrency)
    ours_base = statistics.median(f["rss"] for f in figures[("ours", args.concurrency[0])])
    print(f"goal: peak at every concurrency within {GOAL}x of concurrency {args.concurrency[0]}: "
          f"{'yes' if worst <= GOAL * ours_base else 'no'} ({worst / ours_base:.2f}x)")


if __name__ == "__main__":
    main()
