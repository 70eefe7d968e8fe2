"""The measure step alone: `score_question` on a realistic dataset's questions, ours against earlier code.

    python bench/measure_step.py --data DIR [--questions 2000] [--rounds 5] --reference DIR

DIR is a dataset folder written by the shared realistic generator (20,000 passages in English, French and
Chinese, one to three references per question). Each question gets an extractive-looking answer: two or three
sentences of one of its labelled passages (of a random passage for a third of them, so that some answers miss),
and a ranked list of 30 passages, its labelled ones among random others: the same answers and lists for both
sides. Each side runs in its own processes (PYTHONPATH set to its checkout, --rounds / 2 processes each, the
sides alternating), loads the dataset with its own loader, works out the answers' tokens (outside the timing) and
hands each over just before its question is scored, as the extractive generator does (`give_tokens`). It then
times `score_question` over every question: a first pass, every reference tokenized (jieba included), and two more
passes over the same questions (the word caches filled; a reference's tokens are still worked out again, only the
last few are kept). CPU time (`time.process_time`) per question, median (min-max). Every side's values (each
measure, signature and mark, as JSON) of the first pass must be the same, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
from evalcore import metrics
from evalcore.datasets.loader import load_dataset
from evalcore.language import text
from evalcore.metrics.graded import GradedScale

plan = json.loads(open(sys.argv[1], encoding="utf-8").read())
dataset = load_dataset(plan["data"])
questions = {question.qid: question for question in dataset.questions}
scale = GradedScale(0, 3, {})
asked = []
for qid, answer, ranked in plan["questions"]:
    question = questions[qid]
    asked.append((question, answer, ranked, text.tokens_fresh(answer)))


def one(question, answer, ranked, words):
    text.give_tokens(answer, words)  # as the extractive generator does, just before the measures
    return metrics.score_question(metrics.Inputs(
        relevant=dict(question.labels) or None, ranked=ranked, answer=answer, references=list(question.references),
        graded=scale if question.labels else None, answerable=True, question=question.text))


stored = []
started = time.process_time()
for question in asked:
    scores = one(*question)
    stored.append([scores.values, scores.signatures, {k: str(v) for k, v in scores.results.items()}])
cold = time.process_time() - started
rounds = []
for _ in range(int(sys.argv[2])):
    started = time.process_time()
    for question in asked:
        one(*question)
    rounds.append(time.process_time() - started)
print(json.dumps({"cold": cold, "warm": rounds, "stored": stored}))
"""


def answers(data: Path, count: int, seed: int) -> list[tuple[int, str, list[int]]]:
    """(question id, answer, ranked ids) for the first `count` questions, the same whatever the code."""
    import pyarrow.parquet as pq

    corpus = pq.read_table(data / "corpus.parquet").to_pydict()
    texts = dict(zip(corpus["id"], corpus["text"], strict=True))
    pids = list(texts)
    qrels = pq.read_table(data / "qrels.parquet").to_pydict()
    labelled: dict[int, list[int]] = {}
    for qid, pid in zip(qrels["qid"], qrels["pid"], strict=True):
        labelled.setdefault(qid, []).append(pid)
    chosen = random.Random(seed)
    sys.path.insert(0, str(ROOT))
    from evalcore.language.text import split_sentences

    made = []
    for qid in pq.read_table(data / "queries.parquet").column("id").to_pylist()[:count]:
        mine = labelled.get(qid, [])
        source = mine[0] if mine and chosen.random() < 0.67 else chosen.choice(pids)
        sentences = split_sentences(texts[source])
        picked = chosen.sample(sentences, min(len(sentences), chosen.choice((2, 3))))
        joiner = "" if any("\u4e00" <= char <= "\u9fff" for char in texts[source][:20]) else " "
        ranked = list(dict.fromkeys(mine + chosen.sample(pids, 30)))[:30]
        chosen.shuffle(ranked)
        made.append((qid, joiner.join(picked), ranked))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reference", type=Path, required=True, metavar="DIR")
    args = parser.parse_args()
    sides = {"ours": ROOT, "reference": args.reference.resolve()}
    with tempfile.TemporaryDirectory(prefix="evalcore-measure-step-") as scratch:
        plan = Path(scratch) / "plan.json"
        plan.write_text(json.dumps({"data": str(args.data.resolve()),
                                    "questions": answers(args.data, args.questions, 2026)}), encoding="utf-8")
        cold: dict[str, list[float]] = {name: [] for name in sides}
        warm: dict[str, list[float]] = {name: [] for name in sides}
        stored: dict[str, object] = {}
        for round_ in range(max(1, args.rounds // 2)):
            for name in list(sides)[:: 1 if round_ % 2 == 0 else -1]:
                env = {**os.environ, "PYTHONPATH": str(sides[name])}
                out = subprocess.run([sys.executable, "-c", CHILD, str(plan), "2"], env=env, check=True,
                                     capture_output=True, text=True, cwd=scratch).stdout
                found = json.loads(out)
                cold[name].append(found["cold"])
                warm[name] += found["warm"]
                stored.setdefault(name, found["stored"])
    same = stored["ours"] == stored["reference"]
    print(f"measure step, {args.questions} questions of {args.data}, CPU per question in µs, median (min-max)")
    for name in sides:
        per = [1e6 * value / args.questions for value in cold[name]]
        again = [1e6 * value / args.questions for value in warm[name]]
        print(f"  {name:9} first pass {statistics.median(per):7.1f} ({min(per):.1f}-{max(per):.1f})"
              f"   again {statistics.median(again):7.1f} ({min(again):.1f}-{max(again):.1f})")
    print(f"  ratio, first pass {statistics.median(cold['reference']) / statistics.median(cold['ours']):.2f}x")
    print(f"  every measure, signature and mark the same as the reference's: {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
