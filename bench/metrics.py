"""Benchmark: our measures against the reference libraries, in one run, on the same inputs.

Retrieval: TREC files on disk -> per-query precision, recall, ndcg@3, ndcg@10, mrr, map, for
100,000 queries x 100 results; ours (pyarrow reading + numpy) against pytrec_eval (its own
parsers + trec_eval's evaluator). Generation: 10,000 answer pairs (1,000 questions with
English, French and Chinese references, 10 system answers each) through bleu1/2/4 and
rouge1/2/L, ours against sacreBLEU + rouge-score: once from the same tokens (the reference
libraries cannot segment Chinese, so they get ours joined by spaces), once from raw text with
both sides tokenizing and every cache cleared. Each side's time is the best of --repeat runs
(the machine may be shared), and both sides' values are compared so the table never reports a
fast wrong answer.

    python -m bench.metrics [--queries 100000] [--depth 100] [--pairs 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import logging
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytrec_eval
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from evalcore import text
from evalcore.metrics import generation
from evalcore.metrics.generation import BLEU_ORDERS, generation_scores
from evalcore.metrics.trec import evaluate
from evalcore.metrics.trec_files import read_qrels, read_run

ORACLE_NAMES = {
    "precision": "set_P", "recall": "set_recall", "ndcg@3": "ndcg_cut_3",
    "ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "map": "map",
}


Ours = TypeVar("Ours")
Theirs = TypeVar("Theirs")


def race(
    ours: Callable[[], Ours], reference: Callable[[], Theirs], repeat: int, setup: Callable[[], None] = lambda: None
) -> tuple[float, float, Ours, Theirs]:
    """Best wall time of each side over `repeat` alternating rounds (the machine may be shared,
    so alternating spreads any slow spell over both sides), and each side's last result."""
    ours_best = reference_best = float("inf")
    for _ in range(repeat):
        setup()
        start = time.perf_counter()
        ours_result = ours()
        ours_best = min(ours_best, time.perf_counter() - start)
        setup()
        start = time.perf_counter()
        reference_result = reference()
        reference_best = min(reference_best, time.perf_counter() - start)
    return ours_best, reference_best, ours_result, reference_result


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


def write_trec(folder: Path, queries: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """Binary qrels (1-20 judged per query, about a third relevant) and a run of `depth` per query."""
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
                        "d": _ids("D", qrel_d), "r": pa.array(labels)})
    _write(run_path, {"q": _ids("q", run_q), "z": pa.array(["Q0"] * run_q.size), "d": _ids("D", run_d),
                      "k": pa.array(rank), "s": pa.array(score), "t": pa.array(["bench"] * run_q.size)})
    return qrels_path, run_path


def ours_retrieval(qrels_path: Path, run_path: Path) -> dict[str, dict[str, float]]:
    scores = evaluate(read_qrels(qrels_path), read_run(run_path))
    return {name: dict(zip(scores.qids, column)) for name, column in scores.values.items()}


def oracle_retrieval(qrels_path: Path, run_path: Path) -> dict[str, dict[str, float]]:
    with qrels_path.open() as qrels_file, run_path.open() as run_file:
        qrels, run = pytrec_eval.parse_qrel(qrels_file), pytrec_eval.parse_run(run_file)
    return pytrec_eval.RelevanceEvaluator(qrels, set(ORACLE_NAMES.values())).evaluate(run)


def retrieval_rows(queries: int, depth: int, repeat: int) -> list[tuple[str, float, float, float]]:
    with tempfile.TemporaryDirectory() as folder:
        qrels_path, run_path = write_trec(Path(folder), queries, depth)
        ours_time, oracle_time, ours, oracle = race(
            lambda: ours_retrieval(qrels_path, run_path), lambda: oracle_retrieval(qrels_path, run_path), repeat
        )
    worst = largest_difference(
        [{name: ours[name][qid] for name in ORACLE_NAMES} for qid in oracle],
        [{name: oracle[qid][code] for name, code in ORACLE_NAMES.items()} for qid in oracle],
    )
    label = f"retrieval: {queries:,} queries x {depth} results, six measures (from TREC files)"
    return [(label, ours_time, oracle_time, worst)]


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
    """`count` (answer, references) pairs: 10 system answers per question, references shared."""
    rng = random.Random(seed)
    pairs = []
    for question in range(count // 10):
        reference = SENTENCES[question % len(SENTENCES)].replace("30", str(question))
        joiner = " " if " " in reference else ""  # Chinese has no spaces: perturb characters
        units = reference.split(" ") if joiner else list(reference)
        references = [reference] + ([_perturb(units, joiner, rng)] if rng.random() < 0.5 else [])
        pairs += [(_perturb(units, joiner, rng), references) for _ in range(10)]
    return pairs


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


def generation_rows(count: int, repeat: int) -> list[tuple[str, float, float, float]]:
    pairs = answer_pairs(count)
    text.tokenize("预热")  # load jieba's dictionary once, outside every timing
    joined = _joined(pairs)  # leaves every text's tokens in the cache for the first row
    ours_time, reference_time, ours, expected = race(
        lambda: [generation_scores(h, r) for h, r in pairs], lambda: _reference_scores(joined),
        repeat, generation.clear_caches,
    )
    cold_time, both_time, _, _ = race(
        lambda: [generation_scores(h, r) for h, r in pairs], lambda: _reference_scores(_joined(pairs)), repeat, _cold
    )
    worst = largest_difference(ours, expected)
    return [
        (f"generation: {len(pairs):,} answer pairs, six measures, same tokens given to both", ours_time, reference_time, worst),
        (f"generation: {len(pairs):,} answer pairs from raw text, both tokenizing (cold caches)", cold_time, both_time, worst),
    ]


class _Whitespace:
    def tokenize(self, value: str) -> list[str]:
        return value.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per side")
    args = parser.parse_args()
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # one warning per sentence otherwise
    rows = retrieval_rows(args.queries, args.depth, args.repeat) + generation_rows(args.pairs, args.repeat)
    print("| workload | ours (s) | reference (s) | reference / ours | max abs difference |")
    print("|---|---:|---:|---:|---:|")
    for label, ours, reference, worst in rows:
        print(f"| {label} | {ours:.2f} | {reference:.2f} | {reference / ours:.1f}x | {worst:.1e} |")
    print("\nreference: pytrec_eval (parse_qrel, parse_run, RelevanceEvaluator) for retrieval;")
    print("sacreBLEU BLEU(tokenize='none', smooth_method='none') x3 + rouge-score for generation.")


if __name__ == "__main__":
    main()
