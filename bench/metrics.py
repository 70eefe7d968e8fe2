"""Benchmark: our measures against the reference libraries, in one run, on the same inputs.

Retrieval (TREC files): 100,000 queries x 100 results -> per-query precision, recall, ndcg@3,
ndcg@10, mrr, map. Timed as whole processes, each started with subprocess so that imports,
reading, scoring and writing all count: ours is `python -m evalcore score --qrels Q --run R
--json`; the reference is a Python process that parses both files with pytrec_eval, evaluates
and prints the results as JSON; the floor is a process that only reads both files with
pyarrow's CSV reader (`read_csv`, space delimiter, column names and types inferred). The same
three also run in this process (`evalcore.cli.main` with its output captured; pytrec_eval's
parse, evaluate and `json.dumps`; pyarrow's read), which leaves out interpreter start-up and
imports. The whole-process rows also run ours on the C library's allocator (`ARROW_DEFAULT_MEMORY_POOL=system`)
against pyarrow's default, which it keeps; `--doc-prefix` gives the document ids their shape.
Generation: 10,000 distinct answer pairs (1,000 questions with English, French and Chinese
references, 10 system answers each) through bleu1/2/4 and rouge1/2/L, ours against sacreBLEU +
rouge-score in process: once from the same tokens (the reference libraries cannot segment
Chinese, so they get ours joined by spaces; our own tokens are cached, our n-gram profiles are
not), once from raw text with both sides tokenizing and every cache cleared.

Contenders run interleaved, one after the other in each of --rounds rounds (the machine is
shared, so a slow spell hits every side), and each cell is the median with the min-max. Both
sides' values are compared (max abs difference) so the table never reports a fast wrong answer.

    python -m bench.metrics [--queries 100000] [--depth 100] [--pairs 10000] [--rounds 5] [--only trec|text]
                            [--doc-prefix clueweb09-en0000-00-]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from evalcore import cli, text
from evalcore.metrics import generation
from evalcore.metrics.generation import BLEU_ORDERS, generation_scores

ROOT = Path(__file__).resolve().parent.parent
ORACLE_NAMES = {
    "precision": "set_P", "recall": "set_recall", "ndcg@3": "ndcg_cut_3",
    "ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "map": "map",
}


class Timing(NamedTuple):
    """Wall and CPU seconds of every round (CPU: this process and the commands it ran, user +
    system), and the result of the last one."""

    wall: list[float]
    cpu: list[float]
    result: object


def rounds(contenders: dict[str, Callable[[], object]], count: int,
           setup: Callable[[], None] = lambda: None) -> dict[str, Timing]:
    """Run every contender once per round, in an order that rotates from round to round."""
    names = list(contenders)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    results: dict[str, object] = {}
    for number in range(count):
        for name in names[number % len(names):] + names[: number % len(names)]:
            setup()
            wall, cpu = time.perf_counter(), _cpu()
            results[name] = contenders[name]()
            cpus[name].append(_cpu() - cpu)
            walls[name].append(time.perf_counter() - wall)
    return {name: Timing(walls[name], cpus[name], results[name]) for name in names}


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def spread(values: list[float]) -> str:
    """`median (min-max)` in seconds."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def ratio(slow: list[float], fast: list[float]) -> str:
    return f"{statistics.median(slow) / statistics.median(fast):.2f}x"


def largest_difference(ours: list[dict[str, float]], expected: list[dict[str, float]]) -> float:
    """The largest absolute difference between the two sides' values (0 when they agree)."""
    return max((abs(a[name] - b[name]) for a, b in zip(ours, expected, strict=True) for name in b), default=0.0)


def _write(path: Path, columns: dict[str, pa.Array]) -> None:
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(pa.table(columns), path, write_options=options)


def _ids(prefix: str, numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(numbers), pa.string()), "")


def _unique_per_query(query: np.ndarray, doc: np.ndarray, fresh: int) -> np.ndarray:
    """Replace repeated documents of a query with fresh ids (pytrec_eval's parser rejects repeats)."""
    repeated = pd.Series(query * (1 << 32) + doc).duplicated().to_numpy()
    doc = doc.copy()
    doc[repeated] = fresh + np.arange(np.count_nonzero(repeated))
    return doc


def write_trec(folder: Path, queries: int, depth: int, seed: int = 0, doc_prefix: str = "D") -> tuple[Path, Path]:
    """Binary qrels (1-20 judged per query, about a third relevant) and a run of `depth` per query; document ids are
    `doc_prefix` and a number (with "clueweb09-en0000-00-", 21 to 27 characters, as a web collection's are)."""
    rng = np.random.default_rng(seed)
    judged = rng.integers(1, 21, queries)
    qrel_q = np.repeat(np.arange(queries), judged)
    qrel_d = _unique_per_query(qrel_q, rng.integers(0, 1_000_000, qrel_q.size), 5_000_000)
    labels = (rng.random(qrel_q.size) < 0.35).astype(np.int64)
    run_q = np.repeat(np.arange(queries), depth)
    run_d = rng.integers(0, 4_000_000, run_q.size)
    # Put judged documents at random ranks so every measure has something to count.
    starts = np.concatenate(([0], np.cumsum(judged)[:-1]))
    picks = rng.integers(0, depth, (queries, 5)) + (np.arange(queries) * depth)[:, None]
    sources = starts[:, None] + rng.integers(0, 1 << 30, (queries, 5)) % judged[:, None]
    run_d[picks.ravel()] = qrel_d[sources.ravel()]
    run_d = _unique_per_query(run_q, run_d, 9_000_000)
    rank = np.tile(np.arange(1, depth + 1), queries)
    score = (depth - rank).astype(np.float64) + 0.5
    tied = np.flatnonzero((rng.random(run_q.size) < 0.1) & (rank > 1))
    score[tied] = score[tied - 1]  # one result in ten ties with the one above it
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    _write(qrels_path, {"q": _ids("q", qrel_q), "i": pa.array(np.zeros(qrel_q.size, np.int64)),
                        "d": _ids(doc_prefix, qrel_d), "r": pa.array(labels)})
    _write(run_path, {"q": _ids("q", run_q), "z": pa.array(["Q0"] * run_q.size), "d": _ids(doc_prefix, run_d),
                      "k": pa.array(rank), "s": pa.array(score), "t": pa.array(["bench"] * run_q.size)})
    return qrels_path, run_path


DEFAULT_POOL = pa.default_memory_pool().backend_name  # pyarrow's own choice (mimalloc or jemalloc, as it was built)
ORACLE_PROCESS = """
import json, sys, pytrec_eval
with open(sys.argv[1]) as qrels_file, open(sys.argv[2]) as run_file:
    qrels, run = pytrec_eval.parse_qrel(qrels_file), pytrec_eval.parse_run(run_file)
measures = {"set_P", "set_recall", "ndcg_cut_3", "ndcg_cut_10", "recip_rank", "map"}
print(json.dumps(pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)))
"""
FLOOR_PROCESS = """
import sys, pyarrow.csv as pacsv
options = pacsv.ReadOptions(autogenerate_column_names=True), pacsv.ParseOptions(delimiter=" ")
print(sum(pacsv.read_csv(path, *options).num_rows for path in sys.argv[1:]))
"""


def process(command: list[str], env: dict[str, str] | None = None) -> Callable[[], str]:
    """A contender that runs `command` (with these environment variables added) and returns what it printed."""
    def run() -> str:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True,
                              env={**os.environ, **(env or {})})
        return done.stdout

    return run


def in_process(command: list[str]) -> Callable[[], str]:
    """A contender that runs `python -c SCRIPT ARGS...` or `python -m evalcore ARGS...` here."""
    def run() -> str:
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            if command[1] == "-m":
                cli.main(command[3:])
            else:
                sys.argv = ["-c", *command[3:]]
                exec(command[2], {"__name__": "__bench__"})  # noqa: S102 - the scripts above, not input
        return output.getvalue()

    return run


def retrieval_rows(queries: int, depth: int, count: int, doc_prefix: str) -> list[tuple[str, str, str, str, str]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        qrels, run = (str(path) for path in write_trec(Path(folder), queries, depth, doc_prefix=doc_prefix))
        ours = [sys.executable, "-m", "evalcore", "score", "--qrels", qrels, "--run", run, "--json"]
        commands = {
            "ours": ours,
            "pytrec_eval": [sys.executable, "-c", ORACLE_PROCESS, qrels, run],
            "floor": [sys.executable, "-c", FLOOR_PROCESS, qrels, run],
        }
        label = f"TREC files, {queries:,} queries x {depth} results, ids like {doc_prefix}123, six measures"
        # Whole processes, also ours on the C library's allocator instead of pyarrow's default (docs/benchmarks.md
        # says why the default stays).
        timings = rounds({name: process(command) for name, command in commands.items()}
                         | {"C allocator": process(ours, {"ARROW_DEFAULT_MEMORY_POOL": "system"})}, count)
        rows += _trec_rows(f"{label}, whole process", timings)
        name = f"{label}, whole process: CPU, pyarrow's default allocator ({DEFAULT_POOL}) against the C library's"
        rows.append((name, spread(timings["ours"].cpu), spread(timings["C allocator"].cpu),
                     f"{ratio(timings['C allocator'].cpu, timings['ours'].cpu)} faster", ""))
        timings = rounds({name: in_process(command) for name, command in commands.items()}, count)
        rows += _trec_rows(f"{label}, in process", timings)
    return rows


def _trec_rows(label: str, timings: dict[str, Timing]) -> list[tuple[str, str, str, str, str]]:
    ours = json.loads(str(timings["ours"].result))["queries"]
    oracle = json.loads(str(timings["pytrec_eval"].result))
    worst = largest_difference(
        [{name: ours[qid][name] for name in ORACLE_NAMES} for qid in oracle],
        [{name: oracle[qid][code] for name, code in ORACLE_NAMES.items()} for qid in oracle],
    )
    rows = []
    for kind in ("wall", "CPU"):
        ours, oracle, floor = (getattr(timings[name], kind.lower()) for name in ("ours", "pytrec_eval", "floor"))
        rows.append((f"{label} (vs pytrec_eval): {kind}", spread(ours), spread(oracle),
                     f"{ratio(oracle, ours)} faster", f"{worst:.1e}" if kind == "wall" else ""))
        rows.append((f"{label} (vs the pyarrow read floor): {kind}", spread(ours), spread(floor),
                     f"{ratio(ours, floor)} the floor", ""))
    return rows


SENTENCES = [
    "The refund window is 30 days after delivery, and the fee is 3.5 euros per parcel.",
    "Our router's default address is 192.168.8.1 and the admin password is printed on the label.",
    "The thermostat keeps the room at 21.5 degrees during the day and 18 at night.",
    "Le délai de rétractation est de 14 jours calendaires à compter de la livraison.",
    "La garantie légale de conformité couvre le café, la machine et ses accessoires pendant deux ans.",
    "L'élève a obtenu 15,5 sur 20 à l'examen de mathématiques de fin d'année.",
    "路由器的默认地址是192.168.8.1，可以在浏览器中打开管理页面。",
    "退货期限为收货后三十天，运费由买家承担。",
    "研究人员发现这种模型在中文问答任务上的表现明显优于基线系统。",
]


def _perturb(units: list[str], joiner: str, rng: random.Random) -> str:
    """A system answer: the reference with about a fifth of its words dropped, maybe one swapped."""
    kept = [unit for unit in units if rng.random() > 0.2]
    if kept and rng.random() < 0.5:
        kept[rng.randrange(len(kept))] = rng.choice(units)
    return joiner.join(kept)


def answer_pairs(count: int, seed: int = 0) -> list[tuple[str, list[str]]]:
    """`count` distinct (answer, references) pairs: 10 system answers per question, references shared."""
    rng = random.Random(seed)
    pairs: dict[tuple[str, tuple[str, ...]], None] = {}
    for question in range(count // 10):
        # The question's number makes every reference set distinct (and gives numbers to score).
        reference = f"{SENTENCES[question % len(SENTENCES)]} {question}"
        joiner = " " if " " in reference else ""  # Chinese has no spaces: perturb characters
        units = reference.split(" ") if joiner else list(reference)
        references = (reference,) + ((_perturb(units, joiner, rng),) if rng.random() < 0.5 else ())
        for _ in range(200):  # a few perturbations repeat: draw until the question has 10 distinct
            if len(pairs) == (question + 1) * 10:
                break
            pairs[(_perturb(units, joiner, rng), references)] = None
    return [(hyp, list(refs)) for hyp, refs in pairs]


def _reference_scores(joined: list[tuple[str, list[str]]]) -> list[dict[str, float]]:
    """sacreBLEU (three orders) and rouge-score on space-joined tokens."""
    bleus = {name: BLEU(tokenize="none", smooth_method="none", max_ngram_order=n) for name, n in BLEU_ORDERS.items()}
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=_Whitespace())
    results = []
    for hyp, refs in joined:
        row = {name: bleu.sentence_score(hyp, refs).score / 100 for name, bleu in bleus.items()}
        best = scorer.score_multi(refs, hyp)
        row.update(rouge1=best["rouge1"].fmeasure, rouge2=best["rouge2"].fmeasure, rougel=best["rougeL"].fmeasure)
        results.append(row)
    return results


def _joined(pairs: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """Our `default` tokens joined by spaces: the input the reference libraries need."""
    return [(" ".join(text.tokenize(hyp)), [" ".join(text.tokenize(r)) for r in refs]) for hyp, refs in pairs]


def _cold() -> None:
    text.clear_caches()
    generation.clear_caches()


def generation_rows(count: int, count_rounds: int) -> list[tuple[str, str, str, str, str]]:
    pairs = answer_pairs(count)
    text.tokenize("预热")  # load jieba's dictionary once, outside every timing
    joined = _joined(pairs)  # leaves every text's tokens in the cache for the first row
    warm = rounds({"ours": lambda: [generation_scores(h, r) for h, r in pairs],
                   "reference": lambda: _reference_scores(joined)}, count_rounds, generation.clear_caches)
    cold = rounds({"ours": lambda: [generation_scores(h, r) for h, r in pairs],
                   "reference": lambda: _reference_scores(_joined(pairs))}, count_rounds, _cold)
    worst = largest_difference(warm["ours"].result, warm["reference"].result)  # type: ignore[arg-type]
    label = f"BLEU-1/2/4 + ROUGE-1/2/L, {len(pairs):,} distinct answer pairs"
    rows = []
    for name, timing in ((f"{label}, same tokens given to both", warm),
                         (f"{label} from raw text, both tokenizing (cold caches)", cold)):
        ours, reference = timing["ours"], timing["reference"]
        rows.append((f"{name}: wall", spread(ours.wall), spread(reference.wall),
                     f"{ratio(reference.wall, ours.wall)} faster", f"{worst:.1e}"))
        rows.append((f"{name}: CPU", spread(ours.cpu), spread(reference.cpu),
                     f"{ratio(reference.cpu, ours.cpu)} faster", ""))
    return rows


class _Whitespace:
    def tokenize(self, value: str) -> list[str]:
        return value.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of interleaved runs (median, min-max)")
    parser.add_argument("--only", choices=("trec", "text"), help="run one group of rows")
    parser.add_argument("--doc-prefix", default="D", help='document ids: this and a number ("D": at most 8 '
                        'characters; "clueweb09-en0000-00-": 21 to 27, as a web collection\'s)')
    args = parser.parse_args()
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # one warning per sentence otherwise
    rows = []
    if args.only in (None, "trec"):
        rows += retrieval_rows(args.queries, args.depth, args.rounds, args.doc_prefix)
    if args.only in (None, "text"):
        rows += generation_rows(args.pairs, args.rounds)
    print(f"{args.rounds} rounds, seconds as median (min-max), python {sys.version.split()[0]}\n")
    print("| workload | ours (s) | reference (s) | ratio | max abs difference |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print("\nreference: pytrec_eval (parse_qrel, parse_run, RelevanceEvaluator) or pyarrow's read_csv alone")
    print("for TREC files; sacreBLEU BLEU(tokenize='none', smooth_method='none') x3 + rouge-score for text.")


if __name__ == "__main__":
    main()
