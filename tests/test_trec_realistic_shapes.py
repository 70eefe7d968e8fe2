"""TREC files with the shapes of real collections, scored by `score` and by pytrec_eval: equal to the bit.

The shapes: query ids that are scattered numbers, document ids as ClueWeb, MS MARCO v2 and bare numbers spell them,
about one score in ten tied with the one above it (the rank column then disagrees with trec_eval's order, which
breaks ties by document id, descending), graded labels 0-3 on ten documents per query of which four were never
retrieved, and the same run written ranked, grouped by query in any order, and shuffled.

The labels are graded and `ndcg@k` is binary: it equals pytrec_eval's `ndcg_cut_k` on the labels binarised (>= 1
relevant), not on the labels as they are, where the gains are the labels; `ndcg_graded@k` is the one that equals
`ndcg_cut_k` on graded labels.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
import pytrec_eval

from evalcore.cli import main

BINARY = {"precision": "set_P", "recall": "set_recall", "ndcg@3": "ndcg_cut_3", "ndcg@10": "ndcg_cut_10",
          "mrr": "recip_rank", "map": "map"}
GRADED = {"ndcg_graded@3": "ndcg_cut_3", "ndcg_graded@10": "ndcg_cut_10"}
ORDERS = ("ranked", "grouped", "shuffled")


def document(rng: random.Random, style: int) -> str:
    """A document id as one of three collections spells them."""
    if style == 0:
        return f"clueweb09-en{rng.randrange(10000):04d}-{rng.randrange(100):02d}-{rng.randrange(100000):05d}"
    if style == 1:
        return f"msmarco_passage_{rng.randrange(70):02d}_{rng.randrange(10**9)}"
    return str(rng.randrange(8_841_823))


def write_collection(folder: Path, rng: random.Random, queries: int = 300, depth: int = 40) -> dict[str, Path]:
    """Qrels and the run in three row orders (files by name); the run's scores have ties and 4 decimals."""
    qrels, groups = [], []
    for number, qid in enumerate(str(q) for q in rng.sample(range(1, 30 * queries), queries)):
        docs: list[str] = []
        while len(docs) < depth + 4:
            candidate = document(rng, number % 3)
            if candidate not in docs:
                docs.append(candidate)
        ranked, unretrieved = docs[:depth], docs[depth:]
        for doc in rng.sample(ranked[:min(40, depth)], 6) + unretrieved:
            qrels.append(f"{qid} 0 {doc} {rng.choice((0, 1, 1, 2, 3))}\n")
        score, rows = 30.0, []
        for rank, doc in enumerate(ranked, 1):
            if rng.random() > 0.1:  # otherwise tied with the row above
                score -= rng.random() * 0.3
            rows.append(f"{qid} Q0 {doc} {rank} {score:.4f} bm25\n")
        groups.append(rows)
    grouped = [rng.sample(rows, len(rows)) for rows in rng.sample(groups, len(groups))]
    every = [row for rows in groups for row in rows]
    files = {"qrels": folder / "qrels.txt", **{order: folder / f"run_{order}.txt" for order in ORDERS}}
    files["qrels"].write_text("".join(qrels))
    files["ranked"].write_text("".join(row for rows in groups for row in rows))
    files["grouped"].write_text("".join(row for rows in grouped for row in rows))
    files["shuffled"].write_text("".join(rng.sample(every, len(every))))
    return files


def pytrec_eval_values(qrels_path: Path, run_path: Path, binarised: bool, measures: set[str]) -> dict:
    with open(qrels_path) as qrels_file, open(run_path) as run_file:
        qrels, run = pytrec_eval.parse_qrel(qrels_file), pytrec_eval.parse_run(run_file)
    if binarised:
        qrels = {q: {doc: int(label >= 1) for doc, label in docs.items()} for q, docs in qrels.items()}
    return dict(pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run))


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_collection(tmp_path_factory.mktemp("trec"), random.Random(49))


@pytest.mark.parametrize("order", ORDERS)
def test_every_value_equals_pytrec_eval_to_the_bit(collection: dict[str, Path], order: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--qrels", str(collection["qrels"]), "--run", str(collection[order]), "--json",
                 *(f"-m{name}" for name in (*BINARY, *GRADED))]) == 0
    ours = json.loads(capsys.readouterr().out)["queries"]
    binary = pytrec_eval_values(collection["qrels"], collection[order], True, set(BINARY.values()))
    graded = pytrec_eval_values(collection["qrels"], collection[order], False, set(GRADED.values()))
    assert set(ours) == set(binary) == set(graded)
    assert len(ours) == 300
    unequal = [(qid, name) for qid in binary for names, oracle in ((BINARY, binary), (GRADED, graded))
               for name, code in names.items() if ours[qid][name] != oracle[qid][code]]
    assert unequal == []


def test_the_shapes_have_what_they_are_for(collection: dict[str, Path]) -> None:
    """Ties whose file order is not trec_eval's, the same rows in each file, graded labels on unretrieved documents."""
    rows = collection["ranked"].read_text().splitlines()
    assert sorted(rows) == sorted(collection["grouped"].read_text().splitlines()) \
        == sorted(collection["shuffled"].read_text().splitlines())
    fields = [row.split() for row in rows]
    ties = [(a, b) for a, b in itertools.pairwise(fields) if a[0] == b[0] and a[4] == b[4]]
    assert len(ties) > len(rows) // 20
    assert any(a[2] < b[2] for a, b in ties)  # the file ranks the smaller id first; trec_eval the larger
    labels = [line.split() for line in collection["qrels"].read_text().splitlines()]
    retrieved = {(f[0], f[2]) for f in fields}
    assert {label[3] for label in labels} == {"0", "1", "2", "3"}
    assert sum((label[0], label[2]) not in retrieved for label in labels) == 4 * 300


def test_binary_ndcg_is_not_pytrec_evals_on_graded_labels(collection: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Why a comparison must binarise the labels: on graded ones pytrec_eval's ndcg_cut weighs each grade."""
    assert main(["score", "--qrels", str(collection["qrels"]), "--run", str(collection["ranked"]), "--json"]) == 0
    ours = json.loads(capsys.readouterr().out)["queries"]
    graded = pytrec_eval_values(collection["qrels"], collection["ranked"], False, {"ndcg_cut_10"})
    differing = [qid for qid in graded if ours[qid]["ndcg@10"] != graded[qid]["ndcg_cut_10"]]
    assert len(differing) > 100
