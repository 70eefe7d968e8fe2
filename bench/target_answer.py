"""The bm25 + extractive target alone: CPU per question of answering (retrieval and generation), ours against a
reference checkout, in the same run, and a check that both give the same answers and ranked lists.

    python bench/target_answer.py --data DIR --reference DIR [--questions 2000] [--rounds 5]

Each side runs in its own process (PYTHONPATH = its checkout, its own index folder under a scratch folder, built
beforehand): it loads the dataset, prepares the target (the index read from its folder) and the dataset's token
table, answers the questions once as a warm-up, then `--rounds` times, timing each pass's CPU (process time) and,
within it, retrieval alone. The sides take turns, one round each, the order alternating. The answers, the
retrieved passages' ids, scores and stage scores (their float bits) and the context of every question must be equal
on both sides. Median (min-max) of the CPU per question, and our ratio to the reference per round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import hashlib, json, struct, sys, time
from pathlib import Path
from evalcore.datasets import load_dataset
from evalcore.language.text import use_known_tokens
from evalcore.targets import TargetConfig
from evalcore.targets.question_tokens import dataset_tokens
from evalcore.targets.rag import RagTarget
import evalcore.targets.query as query

data, count, rounds, root = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
dataset = load_dataset(Path(data))
target = RagTarget(TargetConfig.from_dict({"retriever": "bm25"}), cache_dir=root)
target.prepare(dataset.passages)
use_known_tokens(dataset_tokens(dataset.content_hash, dataset.questions, root))
questions = [q.text for q in dataset.questions[:count]]
spent = [0.0]
search = query.search
def timed_search(*args, **kwargs):
    start = time.process_time()
    try:
        return search(*args, **kwargs)
    finally:
        spent[0] += time.process_time() - start
query.search = timed_search
digest = hashlib.sha256()
for text in questions:
    answer = target.answer(text)
    digest.update(repr((answer.answer, len(answer.context or []))).encode())
    for hit in answer.retrieved:
        digest.update(repr((hit.pid, hit.title, hit.text, hit.source, struct.pack("<d", hit.score),
                            [(n, struct.pack("<d", v)) for n, v in hit.stages.items()])).encode())
print(json.dumps({"digest": digest.hexdigest()}), flush=True)
for line in sys.stdin:
    spent[0] = 0.0
    start = time.process_time()
    for text in questions:
        target.answer(text)
    total = time.process_time() - start
    print(json.dumps({"cpu": total / len(questions), "search": spent[0] / len(questions)}), flush=True)
"""


def cell(values: list[float], scale: float = 1e3, digits: int = 3) -> str:
    return (f"{statistics.median(values) * scale:.{digits}f} "
            f"({min(values) * scale:.{digits}f}-{max(values) * scale:.{digits}f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--indexes", type=Path, metavar="DIR",
                        help="keep each side's index folder under DIR (built once) instead of a scratch one")
    args = parser.parse_args()
    sides = {"ours": Path(__file__).resolve().parent.parent, "reference": args.reference.resolve()}
    with tempfile.TemporaryDirectory(prefix="evalcore-target-answer-") as scratch:
        children = {}
        digests = {}
        for name, code in sides.items():
            folder = (args.indexes or Path(scratch)).resolve() / name
            folder.mkdir(parents=True, exist_ok=True)
            children[name] = subprocess.Popen(
                [sys.executable, "-c", CHILD, str(args.data.resolve()), str(args.questions), str(args.rounds),
                 str(folder)], env={**os.environ, "PYTHONPATH": str(code), "EVALCORE_INDEX_DIR": str(folder)},
                cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # not the checkout we run from
            digests[name] = json.loads(children[name].stdout.readline())["digest"]  # type: ignore[union-attr]
        same = len(set(digests.values())) == 1
        print(f"answers and ranked lists {'identical' if same else 'DIFFER'}: {digests}", file=sys.stderr)
        times: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        for number in range(args.rounds):
            for name in list(sides)[:: 1 if number % 2 == 0 else -1]:
                child = children[name]
                child.stdin.write("go\n")  # type: ignore[union-attr]
                child.stdin.flush()  # type: ignore[union-attr]
                times[name].append(json.loads(child.stdout.readline()))  # type: ignore[union-attr]
        for child in children.values():
            child.stdin.close()  # type: ignore[union-attr]
            child.wait()
    print(f"{args.questions} questions, {args.rounds} rounds, ms CPU per question, median (min-max)\n")
    print("| side | whole answer | retrieval | the rest (generator, rerank) |\n|---|---|---|---|")
    for name in sides:
        rows = times[name]
        print(f"| {name} | {cell([r['cpu'] for r in rows])} | {cell([r['search'] for r in rows])} | "
              f"{cell([r['cpu'] - r['search'] for r in rows])} |")
    for key in ("cpu", "search"):
        ratios = [a[key] / b[key] for a, b in zip(times["ours"], times["reference"], strict=True)]
        print(f"\nours / reference, {key}: {cell(ratios, 1, 3)}")
    if not same:
        raise SystemExit("the answers or ranked lists differ")


if __name__ == "__main__":
    main()
