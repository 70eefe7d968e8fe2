"""`score` and `score-text` commands: TREC files against pytrec_eval, JSONL answers, errors."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytrec_eval

from evalcore.cli import main
from evalcore.metrics import generation_scores

ORACLE_NAMES = {
    "precision": "set_P", "recall": "set_recall", "ndcg@3": "ndcg_cut_3",
    "ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "map": "map",
}


def write_random_trec(folder: Path, rng: random.Random, queries: int = 1000, prefix: str = "D") -> tuple[dict, dict]:
    """Qrels and a shuffled run with score ties and repeated documents; oracle-ready dicts."""
    qrels: dict[str, dict[str, int]] = {}
    lines, run_lines = [], []
    oracle_run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        qid = f"{rng.randint(1, 99999)}-{q}"
        docs = [f"{prefix}{rng.randrange(40)}" for _ in range(rng.randint(1, 12))]
        qrels[qid] = {d: rng.choice([0, 1, 1, 2]) for d in docs}
        lines += [f"{qid} 0 {d} {label}" for d, label in qrels[qid].items()]
        ranked = [(f"{prefix}{rng.randrange(40)}", float(rng.randint(0, 6))) for _ in range(rng.choice([0, 3, 10, 20]))]
        seen: dict[str, float] = {}
        for doc, score in sorted(ranked, key=lambda p: (p[1], p[0]), reverse=True):
            seen.setdefault(doc, score)  # a repeated document keeps its best place
        oracle_run[qid] = seen
        run_lines += [f"{qid}\tQ0\t{doc}\t{i}\t{score}\ttag" for i, (doc, score) in enumerate(ranked)]
    rng.shuffle(run_lines)
    (folder / "qrels").write_text("\n".join(lines) + "\n")
    (folder / "run").write_text("\n".join(run_lines) + "\n")
    binary = {q: {d: int(label >= 1) for d, label in docs.items()} for q, docs in qrels.items()}
    return binary, {q: docs for q, docs in oracle_run.items() if docs}


def strict_json(text: str) -> dict:
    """Parse JSON as other languages' parsers do: NaN and Infinity are not JSON."""
    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def score_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["score", *args, "--json"]) == 0
    return strict_json(capsys.readouterr().out)


def assert_equals_pytrec_eval(queries: dict, qrels: dict, run: dict) -> dict:
    """`score --json`'s per-query values equal pytrec_eval's on the same queries, labels >= 1 counted relevant;
    pytrec_eval's values, for what else a test checks."""
    binary = {q: {d: int(label >= 1) for d, label in docs.items()} for q, docs in qrels.items()}
    oracle = pytrec_eval.RelevanceEvaluator(binary, set(ORACLE_NAMES.values())).evaluate(run)
    assert set(queries) == set(oracle)
    for qid, values in queries.items():
        for name, oracle_name in ORACLE_NAMES.items():
            assert values[name] == pytest.approx(oracle[qid][oracle_name], abs=1e-9), (qid, name)
    return dict(oracle)


# Short ids take the packed-integer path, long ones the sorted-dictionary path.
@pytest.mark.parametrize("prefix", ["D", "clueweb12-0000tw-"])
def test_trec_files_equal_pytrec_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str], prefix: str) -> None:
    qrels, run = write_random_trec(tmp_path, random.Random(len(prefix)), prefix=prefix)
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert set(result["queries"]) == set(run)
    oracle = assert_equals_pytrec_eval(result["queries"], qrels, run)
    mean = sum(oracle[q]["map"] for q in run) / len(run)
    assert result["all"]["map"]["mean"] == pytest.approx(mean, abs=1e-9)


def test_text_output_is_trec_eval_like(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels").write_text("2 0 a 1\n10 0 b 1\n")
    (tmp_path / "run").write_text("10 Q0 b 1 3.0 x\n2 Q0 c 1 2.0 x\n2 Q0 a 2 1.0 x\n")
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run")]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [cells[1] for cells in lines[:12:6]] == ["10", "2"]  # queries in trec_eval's string order
    by_key = {(c[0].strip(), c[1]): c[2] for c in lines}
    assert by_key[("mrr", "2")] == "0.5000"
    assert by_key[("mrr", "all")] == "0.7500"
    assert by_key[("num_q", "all")] == "2"


def test_graded_and_complete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels").write_text("1 0 d1 4\n1 0 d2 2\n1 0 d3 1\n2 0 x 1\n")
    (tmp_path / "run").write_text("1 Q0 d2 1 0.9 t\n1 Q0 d9 2 0.8 t\n1 Q0 d1 3 0.7 t\n7 Q0 d1 1 1.0 t\n")
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--graded",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert "1 run queries have no qrels line" in captured.err
    result = strict_json(captured.out)
    assert list(result["queries"]) == ["1"]
    assert round(result["queries"]["1"]["graded.xdcg@3"], 2) == 43.88
    assert result["signatures"]["graded.holes"].startswith("graded.holes|scale:0-4|")
    complete = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "-c")
    assert complete["queries"]["2"]["recall"] == 0.0
    assert complete["num_q"] == 2


EVALUATOR_INPUT = {
    "retrieval_ground_truth": [{"document_id": "d1", "query_relevance_label": 4},
                               {"document_id": "d2", "query_relevance_label": 2},
                               {"document_id": "d3", "query_relevance_label": 1}],
    "retrieved_documents": [{"document_id": "d2", "relevance_score": 0.9},
                            {"document_id": "d9", "relevance_score": 0.8},
                            {"document_id": "d1", "relevance_score": 0.7}],
}


def test_graded_cases_in_the_evaluators_input_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`score --cases` reads the document retrieval evaluator's JSON input and prints its documented output fields."""
    one_based = {"id": "q-1..5", "ground_truth_label_min": 1, "ground_truth_label_max": 5,
                 "retrieval_ground_truth": [{**row, "query_relevance_label": row["query_relevance_label"] + 1}
                                            for row in EVALUATOR_INPUT["retrieval_ground_truth"]],
                 "retrieved_documents": EVALUATOR_INPUT["retrieved_documents"]}
    (tmp_path / "cases.jsonl").write_text(json.dumps(EVALUATOR_INPUT) + "\n\n" + json.dumps(one_based) + "\n")
    assert main(["score", "--cases", str(tmp_path / "cases.jsonl"), "--threshold", "ndcg_threshold=0.7",
                 "--threshold", "top1_relevance_threshold=2"]) == 0
    first, second = (strict_json(line) for line in capsys.readouterr().out.splitlines())
    assert (first["id"], second["id"]) == (1, "q-1..5")
    assert round(first["xdcg@3"], 2) == 43.88
    assert first["total_ground_truth_documents"] == 3
    assert (first["ndcg@3_threshold"], first["ndcg@3_result"]) == (0.7, "fail")
    assert (first["top1_relevance_threshold"], first["top1_relevance_result"]) == (2, "pass")
    assert first["holes_higher_is_better"] is False
    assert first["holes_ratio_higher_is_better"] is False
    assert first["holes_result"] == "fail"
    assert first["total_ground_truth_documents_result"] == "pass"
    assert second["top3_max_relevance"] == 5
    assert second["fidelity"] == first["fidelity"]
    (tmp_path / "list.json").write_text(json.dumps([EVALUATOR_INPUT]))
    assert main(["score", "--cases", str(tmp_path / "list.json")]) == 0
    assert strict_json(capsys.readouterr().out)["top1_relevance_threshold"] == 3  # the default on 0-4


@pytest.mark.parametrize(("change", "message"), [
    (lambda case: case.pop("retrieval_ground_truth"), "query 1: retrieval_ground_truth: missing or not a list"),
    (lambda case: case["retrieved_documents"].append({"document_id": "d2", "relevance_score": 0.1}),
     "query 1: retrieved_documents[3]: a document is listed twice"),
    (lambda case: case["retrieval_ground_truth"][1].update(query_relevance_label=2.5), "not an integer"),
    (lambda case: case["retrieved_documents"][0].pop("relevance_score"), "retrieved_documents[0]: not a document"),
    (lambda case: case.update(ground_truth_label_max=3), "outside the scale"),
    (lambda case: case.update(top_k=3), "unknown field (found top_k"),
])
def test_graded_cases_with_errors_name_the_query_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           change, message: str) -> None:
    case = json.loads(json.dumps(EVALUATOR_INPUT))
    change(case)
    (tmp_path / "cases.json").write_text(json.dumps(case))
    assert main(["score", "--cases", str(tmp_path / "cases.json")]) == 2
    assert message in capsys.readouterr().err


def test_graded_thresholds_by_documented_name_in_the_trec_mode(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels").write_text("1 0 d1 4\n1 0 d2 2\n1 0 d3 1\n")
    (tmp_path / "run").write_text("1 Q0 d2 1 0.9 t\n1 Q0 d9 2 0.8 t\n1 Q0 d1 3 0.7 t\n")
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--graded",
                        "--threshold", "xdcg_threshold=40")
    assert result["thresholds"]["graded.xdcg@3"] == 40
    assert result["thresholds"]["graded.top1_relevance"] == 3
    assert "graded.total_ground_truth_documents" in result["queries"]["1"]
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--threshold",
                 "x=1"]) == 2
    assert "unknown graded retrieval threshold" in capsys.readouterr().err
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--threshold",
                 "ndcg@3=nan"]) == 2
    assert "not NAME=NUMBER" in capsys.readouterr().err
    assert main(["score", "--run", str(tmp_path / "run")]) == 2
    assert "--cases" in capsys.readouterr().err


def test_parquet_qrels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(pa.table({"qid": ["1", "1"], "pid": ["10", "11"]}), tmp_path / "qrels.parquet")
    (tmp_path / "run").write_text("1 Q0 11 1 2.0 t\n1 Q0 99 2 1.0 t\n")
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels.parquet"), "--run", str(tmp_path / "run"))
    assert result["queries"]["1"]["precision"] == 0.5
    assert result["queries"]["1"]["recall"] == 0.5


def test_mixed_whitespace_is_read_line_by_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels").write_text("1  0 a 1\n\n1\t0 b 1 \n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n1   Q0 b 2 1.0 t\n")
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert result["queries"]["1"]["map"] == 1.0


@pytest.mark.parametrize(
    ("qrels", "run", "message"),
    [
        ("1 0 a 1\n", "1 Q0 a 1 2.0\n", "run:1: wrong number of fields"),
        ("1 0 a 1\n", "1 Q0 a 1 2.0 t\n1 Q0 b 2 high t\n", "run:2: column score is not a number"),
        ("1 0 a one\n", "1 Q0 a 1 2.0 t\n", "qrels:1: column rel is not an integer"),
        ("1 0 a 1\n1 0 a 0\n", "1 Q0 a 1 2.0 t\n", "judged twice"),
        # Duplicates name both lines, counting blank ones (trec_eval refuses duplicates too).
        ("1 0 a 1\n\n1 0 a 1\n", "1 Q0 a 1 2.0 t\n", "qrels:3: a document is judged twice"),
        ("1 0 a 1\n1 0 b 1\n\n1 0 a 1\n", "1 Q0 a 1 2.0 t\n", "first at "),
        # A doubled separator must not hide a missing field (it used to shift the columns).
        ("1 0 a 1\n", "1 Q0  a 1 2.0\n", "run:1: wrong number of fields"),
        ("1 0 a 1\n", "1 Q0 a  2.0 t\n", "run:1: wrong number of fields"),
        ("1 0  1\n", "1 Q0 a 1 2.0 t\n", "qrels:1: wrong number of fields"),
        # Tab-separated with a space inside a field: fields are whitespace-separated, as in trec_eval.
        ("1\t0\ta 1\t1\n", "1 Q0 a 1 2.0 t\n", "qrels:1: wrong number of fields"),
        ("1 0 a 1\n", "1 Q0 a 1 2.0 t\n1 Q0 b 2 nan t\n", "run:2: column score is not a number"),
        ("1 0 a 1\n", "1 Q0 a 1 1_0 t\n", "run:1: column score is not a number"),
        ("1 0 a 99999999999999999999\n", "1 Q0 a 1 2.0 t\n", "qrels:1: column rel is not an integer"),
    ],
)
def test_bad_files_name_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], qrels: str, run: str, message: str
) -> None:
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err


def test_not_utf8_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    (tmp_path / "run").write_bytes(b"1 Q0 a 1 2.0 t\n1 Q0 \xff 2 1.0 t\n")
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run")]) == 2
    assert "run:2: not UTF-8" in capsys.readouterr().err


def test_byte_order_mark_is_skipped_by_both_readers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n")
    for qrels in ("\ufeff1 0 a 1\n", "\ufeff1 0 a 1\n1  0 b 0\n"):  # the second needs the careful reader
        (tmp_path / "qrels").write_text(qrels, encoding="utf-8")
        result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
        assert result["queries"]["1"]["recall"] == 1.0


def test_nasty_ids_scores_and_labels_equal_pytrec_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Non-ASCII, zero-padded and long ids, negative labels, exponent scores, ties, mixed separators."""
    rng = random.Random(4)
    pool = ["007", "7", "0", "é1", "北京", "ß", "🙂x", "Doc", "doc", "clueweb12-" + "x" * 30, "-1"]
    qrels, run, lines, run_lines = {}, {}, [], []
    for q in ["001", "1", "Ω", "long-" + "q" * 40, "9"]:
        qrels[q] = {d: rng.choice([-1, 0, 1, 2]) for d in rng.sample(pool, rng.randint(1, 8))}
        run[q] = {d: rng.choice([0.0, 1e-7, 2.5e-7, 1.0, 3.0]) for d in rng.sample(pool, rng.randint(1, 10))}
        lines += [f"{q}\t0\t{d}\t{label}" for d, label in qrels[q].items()]
        # Any mix of spaces and tabs separates fields, as in trec_eval (the careful reader's path).
        run_lines += [rng.choice([" ", "\t", "  ", " \t "]).join([q, "Q0", d, str(10**15), f"{score:e}", "t"])
                      for d, score in run[q].items()]
    (tmp_path / "qrels").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert_equals_pytrec_eval(result["queries"], qrels, run)


def test_ids_differing_by_a_nul_byte_stay_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Short ids are packed into integers; a trailing NUL must not make `a` and `a` + NUL equal.
    (tmp_path / "qrels").write_bytes(b"1 0 a\x00 1\n1 0 b 1\n")
    (tmp_path / "run").write_bytes(b"1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n")
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert result["queries"]["1"]["precision"] == 0.5
    assert result["queries"]["1"]["mrr"] == 0.5


def test_parquet_ids_are_integers_and_labels_must_be(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"qid": ["001", "001"], "pid": ["010", "011"], "relevance": [0, 2]}), path)
    (tmp_path / "run").write_text("001 Q0 011 1 2.0 t\n1 Q0 10 2 1.0 t\n")  # zero-padded or not: same ids
    result = score_json(capsys, "--qrels", str(path), "--run", str(tmp_path / "run"))
    assert result["queries"] == {"1": pytest.approx({"precision": 0.5, "recall": 1.0, "ndcg@3": 1.0,
                                                      "ndcg@10": 1.0, "mrr": 1.0, "map": 1.0})}
    pq.write_table(pa.table({"qid": [1, 1], "pid": [10, 11], "relevance": [1.0, 0.5]}), path)
    assert main(["score", "--qrels", str(path), "--run", str(tmp_path / "run")]) == 2
    assert f"{path} row 1: column relevance must hold integers (found 0.5" in capsys.readouterr().err


def test_graded_labels_outside_the_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels").write_text("1 0 a 7\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n")
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--graded"]) == 2
    assert "query 1, document a" in capsys.readouterr().err
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--graded",
                 "--label-max", "7"]) == 0
    # An empty scale is refused up front, even when no query would have been scored.
    (tmp_path / "run").write_text("")
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--graded",
                 "--label-min", "4", "--label-max", "4"]) == 2
    assert "label range is empty" in capsys.readouterr().err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--qrels", str(tmp_path / "nope"), "--run", str(tmp_path / "nope")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_score_text_skips_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        json.dumps({"id": "a", "hypothesis": "Le café coûte 3,5 €", "references": ["le café coûte 3,5 euros"]}),
        "{not json",
        json.dumps({"id": "b", "hypothesis": "北京天安门", "references": []}),
        "",
        json.dumps({"id": 7, "hypothesis": "the cat sat", "references": ["a cat sat", "the cat"]}),
    ]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["score-text", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    result = strict_json(captured.out)
    assert list(result["queries"]) == ["a", "7"]
    assert result["queries"]["7"] == pytest.approx(generation_scores("the cat sat", ["a cat sat", "the cat"]))
    assert [item["line"] for item in result["rejected"]] == [2, 3]
    assert f"{path}:2: skipped" in captured.err
    assert f"{path}:3: skipped" in captured.err
    assert main(["score-text", str(path)]) == 0
    assert "bleu4                 \tall\t" in capsys.readouterr().out


def test_score_text_lines_end_at_newline_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # JSON strings may hold U+2028 and U+0085 raw; splitting there broke valid lines.
    record = {"id": "a", "hypothesis": "one\u2028two\x85three", "references": ["one two three"]}
    path = tmp_path / "answers.jsonl"
    path.write_bytes(json.dumps(record, ensure_ascii=False).encode() + b"\r\n" + b'{"id": "\xff"}\n')
    assert main(["score-text", str(path), "--json"]) == 0
    result = strict_json(capsys.readouterr().out)
    assert result["queries"]["a"]["rougel"] == 1.0
    assert result["rejected"] == [{"line": 2, "reason": "not UTF-8 text"}]  # one bad byte costs one line


def test_score_text_ids_that_break_the_output_are_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # JSON's \ud800 escape decodes to a string that cannot be printed: it used to crash the output.
    path = tmp_path / "answers.jsonl"
    path.write_text('{"id": "x\\ud800", "hypothesis": "a \\ud800 b", "references": ["a b"]}\n'
                    '{"id": "y", "hypothesis": "a \\ud800 b", "references": ["a b"]}\n'
                    '{"id": "z\\tw", "hypothesis": "a b", "references": ["a b"]}\n')
    assert main(["score-text", str(path)]) == 0
    captured = capsys.readouterr()
    assert "answers.jsonl:1: skipped: id holds a lone surrogate" in captured.err
    assert "answers.jsonl:3: skipped: id must be non-blank, without tabs" in captured.err  # it broke the columns
    assert "rouge1                \ty\t1.0000" in captured.out


def test_score_text_with_nothing_valid_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("[1, 2]\n")
    assert main(["score-text", str(path)]) == 2
    assert "bad.jsonl:1: not a JSON object" in capsys.readouterr().err


GRADED_ORACLE = {"ndcg_graded@3": "ndcg_cut_3", "ndcg_graded@10": "ndcg_cut_10"}


def write_interop_trec(folder: Path, rng: random.Random, queries: int = 400,
                       separator: str = " ") -> tuple[dict, dict]:
    """trec_eval-style files: # comments, blank lines, fields after the run tag, labels -1..4,
    score ties, repeated documents. Returns graded qrels and the run as trec_eval ranks it."""
    qrels: dict[str, dict[str, int]] = {}
    lines, run_lines = ["# qrels: query 0 document label", ""], ["# run written by a test", ""]
    ranked_run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        qid = f"q{rng.randint(1, 999)}-{q}"
        docs = rng.sample(range(40), rng.randint(1, 15))
        qrels[qid] = {f"d{d}": rng.choice([-1, 0, 0, 1, 2, 3, 4]) for d in docs}
        lines += [f"{qid}{separator}0{separator}{d}{separator}{label}" for d, label in qrels[qid].items()]
        ranked = [(f"d{rng.randrange(45)}", float(rng.randint(0, 8))) for _ in range(rng.choice([0, 1, 5, 12, 30]))]
        seen: dict[str, float] = {}
        for doc, score in sorted(ranked, key=lambda p: (p[1], p[0]), reverse=True):
            seen.setdefault(doc, score)
        ranked_run[qid] = seen
        for position, (doc, score) in enumerate(ranked):
            extra = rng.choice(["", "", f"{separator}extra{separator}fields"])
            run_lines.append(separator.join([qid, "Q0", doc, str(position), str(score), "tag"]) + extra)
            if rng.random() < 0.05:
                run_lines.append(rng.choice(["", "# a comment line",
                                             f"#{separator}Q0{separator}x{separator}1{separator}2{separator}t"]))
    rng.shuffle(run_lines)
    (folder / "qrels").write_text("\n".join(lines) + "\n")
    (folder / "run").write_text("\n".join(run_lines) + "\n")
    return qrels, {q: docs for q, docs in ranked_run.items() if docs}


def binarised(qrels: dict, level: int) -> dict:
    return {q: {d: int(label >= level) for d, label in docs.items()} for q, docs in qrels.items()}


def truncated(run: dict, depth: int) -> dict:
    """The first `depth` documents of each query in trec_eval's order (score, then docid, descending)."""
    return {q: dict(sorted(docs.items(), key=lambda p: (p[1], p[0]), reverse=True)[:depth]) for q, docs in run.items()}


def assert_agrees(result: dict, oracle: dict, names: dict[str, str]) -> None:
    assert set(result["queries"]) == set(oracle)
    for qid, values in result["queries"].items():
        for name, oracle_name in names.items():
            assert values[name] == pytest.approx(oracle[qid][oracle_name], abs=1e-9), (qid, name)


@pytest.mark.parametrize("separator", [" ", "\t", " \t"])  # the last needs the careful reader
def test_comments_blank_lines_and_trailing_fields_read_as_trec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], separator: str
) -> None:
    qrels, run = write_interop_trec(tmp_path, random.Random(len(separator)), separator=separator)
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--json",
                 *(f"-m{name}" for name in (*ORACLE_NAMES, *GRADED_ORACLE))]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if "fields after the run tag" in line]
    assert len(notes) == 1
    assert "they are ignored" in notes[0]  # one note, not one per line
    result = strict_json(captured.out)
    assert_agrees(result, pytrec_eval.RelevanceEvaluator(binarised(qrels, 1), set(ORACLE_NAMES.values())).evaluate(run),
                  ORACLE_NAMES)
    assert_agrees(result, pytrec_eval.RelevanceEvaluator(qrels, set(GRADED_ORACLE.values())).evaluate(run),
                  GRADED_ORACLE)


@pytest.mark.parametrize("level", [-1000, -1, 0, 2, 3, 5])  # -1000: below the narrow label type
def test_relevance_level_equals_trec_eval_on_thresholded_qrels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], level: int
) -> None:
    qrels, run = write_interop_trec(tmp_path, random.Random(level + 10))
    oracle = pytrec_eval.RelevanceEvaluator(binarised(qrels, level), set(ORACLE_NAMES.values())).evaluate(run)
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "-l", str(level))
    assert_agrees(result, oracle, ORACLE_NAMES)
    assert result["signatures"]["map"].startswith(f"map|rel:>={level}|")


@pytest.mark.parametrize("depth", [1, 3, 10])
def test_max_docs_equals_trec_eval_on_truncated_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    qrels, run = write_interop_trec(tmp_path, random.Random(depth + 20))
    short = truncated(run, depth)
    oracle = pytrec_eval.RelevanceEvaluator(binarised(qrels, 1), set(ORACLE_NAMES.values())).evaluate(short)
    graded = pytrec_eval.RelevanceEvaluator(qrels, set(GRADED_ORACLE.values())).evaluate(short)
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"),
                        "-M", str(depth), *(f"--measure={name}" for name in (*ORACLE_NAMES, *GRADED_ORACLE)))
    assert_agrees(result, oracle, ORACLE_NAMES)
    assert_agrees(result, graded, GRADED_ORACLE)
    assert result["max_docs"] == depth


def test_graded_ndcg_equals_trec_eval_ndcg_cut_on_many_random_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels, run = write_interop_trec(tmp_path, random.Random(3), queries=1500)
    oracle = pytrec_eval.RelevanceEvaluator(qrels, set(GRADED_ORACLE.values())).evaluate(run)
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"),
                        "-m", "ndcg_graded@3", "-m", "ndcg_graded@10")
    assert_agrees(result, oracle, GRADED_ORACLE)
    assert list(result["queries"][next(iter(oracle))]) == ["ndcg_graded@3", "ndcg_graded@10"]


LOG3, LOG5, LOG6 = math.log2(3), math.log2(5), math.log2(6)


@pytest.mark.parametrize(
    ("qrels", "run", "expected"),
    [
        # Labels a:3 b:2 c:0 d:1 f:4; ranked c, a, d, b, then f before e (tied, docid descending).
        ("1 0 a 3\n1 0 b 2\n1 0 c 0\n1 0 d 1\n1 0 f 4\n",
         "1 Q0 c 1 4 t\n1 Q0 a 2 3 t\n1 Q0 d 3 2 t\n1 Q0 b 4 1 t\n1 Q0 e 5 0.5 t\n1 Q0 f 6 0.5 t\n",
         ((3 / LOG3 + 1 / 2) / (4 + 3 / LOG3 + 2 / 2),
          (3 / LOG3 + 1 / 2 + 2 / LOG5 + 4 / LOG6) / (4 + 3 / LOG3 + 2 / 2 + 1 / LOG5))),
        # The best document first, the others never retrieved: the ideal still counts them.
        ("1 0 a 4\n1 0 b 1\n", "1 Q0 a 1 1 t\n", (4 / (4 + 1 / LOG3), 4 / (4 + 1 / LOG3))),
        # Below the cut only: 0 at 3, counted at 10; a negative label gains nothing.
        ("1 0 a 2\n1 0 x -1\n", "1 Q0 x 1 9 t\n1 Q0 y 2 8 t\n1 Q0 z 3 7 t\n1 Q0 a 4 6 t\n",
         (0.0, (2 / LOG5) / 2)),
        # Nothing judged above 0: no ideal gain, so 0 (as trec_eval).
        ("1 0 a 0\n", "1 Q0 a 1 1 t\n", (0.0, 0.0)),
    ],
)
def test_graded_ndcg_hand_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], qrels: str, run: str, expected: tuple[float, float]
) -> None:
    (tmp_path / "qrels").write_text(qrels)
    (tmp_path / "run").write_text(run)
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"),
                        "-m", "ndcg_graded@3", "-m", "ndcg_graded@10")
    assert result["queries"]["1"] == pytest.approx(dict(zip(GRADED_ORACLE, expected, strict=False)), abs=1e-12)
    assert result["signatures"]["ndcg_graded@3"].startswith("ndcg_graded@3|gain:label|")
    oracle = pytrec_eval.RelevanceEvaluator(
        {"1": {line.split()[2]: int(line.split()[3]) for line in qrels.splitlines()}}, set(GRADED_ORACLE.values())
    ).evaluate({"1": {line.split()[2]: float(line.split()[4]) for line in run.splitlines()}})
    assert [oracle["1"][name] for name in GRADED_ORACLE.values()] == pytest.approx(expected, abs=1e-12)


def test_measure_selection_and_unknown_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels").write_text("1 0 a 2\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n")
    files = ["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run")]
    assert main([*files, "-m", "map", "-m", "graded.holes", "-m", "map"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0].strip() for line in lines] == ["map", "graded.holes", "map", "graded.holes", "num_q"]
    assert main([*files, "-m", "nDCG@10"]) == 2
    error = capsys.readouterr().err
    assert "-m/--measure: unknown measure (found nDCG@10, expected one of precision, recall" in error
    assert "ndcg_graded@10" in error
    assert main([*files, "-M", "0"]) == 2
    assert "-M/--max-docs" in capsys.readouterr().err


def test_comments_in_regular_files_keep_the_fast_reader_exact(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # A comment with as many fields as a data line, one with fewer, and a blank line.
    (tmp_path / "qrels").write_text("# q 0 doc rel\n1 0 a 1\n\n1 0 b 0\n#\n")
    (tmp_path / "run").write_text("# qid Q0 docid rank score tag\n1 Q0 b 1 2.0 t\n# ranked\n1 Q0 a 2 1.0 t\n")
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert result["queries"] == {"1": pytest.approx({"precision": 0.5, "recall": 1.0, "ndcg@3": 1 / math.log2(3),
                                                      "ndcg@10": 1 / math.log2(3), "mrr": 0.5, "map": 0.5})}
    # A problem found after reading still names the right line, comments and blank lines counted.
    (tmp_path / "qrels").write_text("# header\n1 0 a 1\n\n# note\n1 0 a 0\n")
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run")]) == 2
    assert "qrels:5: a document is judged twice" in capsys.readouterr().err


def test_the_signature_says_how_the_values_were_computed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_interop_trec(tmp_path, random.Random(7))
    files = ("--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "-m", "ndcg@10", "-m", "map",
             "-m", "ndcg_graded@3")
    plain = score_json(capsys, *files)["signatures"]
    cut = score_json(capsys, *files, "-M", "1")["signatures"]
    every = score_json(capsys, *files, "-c")["signatures"]
    for name in ("ndcg@10", "map", "ndcg_graded@3"):
        assert "depth:" not in plain[name]
        assert "queries:" not in plain[name]
        assert "|depth:1|" in cut[name]
        assert "|queries:qrels|" in every[name]
        assert len({plain[name], cut[name], every[name]}) == 3
    assert plain["ndcg@10"] == "ndcg@10|rel:>=1|dup:first|miss:kept|version:0.1.0"  # stored campaigns' form


def _space_separated(folder: Path) -> None:
    """The run of `write_random_trec` with single spaces: the byte scan's input (tabs are not)."""
    (folder / "run").write_text((folder / "run").read_text().replace("\t", " "))


# Short ids are their own keys; long and mixed ones are hashed and every match checked on the bytes.
# The byte scan in C, and the numpy scan that runs where C cannot be built.
@pytest.mark.parametrize("compiled", ["1", "0"])
@pytest.mark.parametrize("prefix", ["D", "clueweb09-en0000-00-", "MED-", ""])
def test_byte_scan_equals_pytrec_eval_and_the_general_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch, prefix: str,
                                                               compiled: str) -> None:
    monkeypatch.setenv("EVALCORE_COMPILED", compiled)
    qrels, run = write_random_trec(tmp_path, random.Random(len(prefix) + 3), prefix=prefix or "x" * 30)
    if not prefix:  # mixed: ids of 2 to 32 characters in the same files
        for name in ("qrels", "run"):
            text = (tmp_path / name).read_text()
            (tmp_path / name).write_text(text.replace("x" * 30 + "1", "y1").replace("x" * 30 + "2", "doc-00002"))
        qrels, run = ({q: {d.replace("x" * 30 + "1", "y1").replace("x" * 30 + "2", "doc-00002"): v
                           for d, v in docs.items()} for q, docs in side.items()} for side in (qrels, run))
    general = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    _space_separated(tmp_path)
    scanned = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert scanned == general
    assert_equals_pytrec_eval(scanned["queries"], qrels, run)


def test_shared_keys_never_make_different_ids_equal(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With keys that say only an id's length, nearly every id shares its key with others: the
    values must not move (matches are checked on the bytes, shared judged pairs fall back to
    exact codes)."""
    from evalcore.metrics import trec_scan

    write_random_trec(tmp_path, random.Random(5), prefix="clueweb09-en0000-00-")
    _space_separated(tmp_path)
    args = ("--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    expected = score_json(capsys, *args)
    # The keys of spans read by the C scan and by the numpy one alike.
    monkeypatch.setattr(trec_scan.Ids, "keys", lambda ids: (ids._spans.lengths.astype("uint64"), False))
    assert score_json(capsys, *args) == expected


def test_an_ids_key_does_not_depend_on_the_other_ids_of_its_file(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Ids of 9 to 16 bytes judged in a qrels file where no id is longer, ranked in a run where some are: the same
    id must be found in both (its key once changed with the longest id read beside it, and nothing matched)."""
    rng = random.Random(11)
    middle = [f"doc-{n:08d}" for n in range(60)]   # 12 bytes
    longer = [f"clueweb09-en0000-{n:05d}" for n in range(60)]   # 23 bytes
    qrels = {f"q{q}": {d: rng.choice([0, 1, 2]) for d in rng.sample(middle, 8)} for q in range(40)}
    run = {q: {d: float(rng.randint(0, 50)) for d in [*rng.sample(sorted(docs), 6), *rng.sample(middle, 4),
                                                     *rng.sample(longer, 5)]} for q, docs in qrels.items()}
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {label}\n" for q, docs in qrels.items()
                                            for d, label in docs.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} 1 {score} t\n" for q, docs in run.items()
                                          for d, score in docs.items()))
    from evalcore.metrics import trec_scan
    from evalcore.metrics.trec_files import read_qrels, read_run

    judged, ranked = read_qrels(tmp_path / "qrels"), read_run(tmp_path / "run")
    assert trec_scan.scan(tmp_path / "run", 6, 0, 2, {4: pa.float64()}) is not None   # the byte scan's path
    judged_keys = dict(zip(judged.docid.to_pylist(), judged.docid.keys()[0].tolist(), strict=True))
    ranked_keys = dict(zip(ranked.docid.to_pylist(), ranked.docid.keys()[0].tolist(), strict=True))
    assert all(ranked_keys[doc] == key for doc, key in judged_keys.items() if doc in ranked_keys)
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert sum(values["recall"] for values in result["queries"].values()) > 20
    assert_equals_pytrec_eval(result["queries"], qrels, run)


_ID_BYTES = "abcdefghijklmnopqrstuvwxyz0123456789-_.:/ABCXYZ"
_ID_LENGTHS = [(1, 2, 5, 8, 9, 12, 16, 17, 23, 24, 25, 31, 40, 70), (3, 8), (9, 12, 16), (5, 12, 15), (17, 30)]


def _random_id(rng: random.Random, lengths: tuple[int, ...]) -> str:
    alphabet = _ID_BYTES[: rng.choice([3, 10, len(_ID_BYTES)])]
    return "".join(rng.choice(alphabet) for _ in range(rng.choice(lengths)))


def _random_score(rng: random.Random) -> tuple[str, float]:
    """A score as some system writes it, and its value."""
    value = rng.choice([float(rng.randint(0, 5)), rng.uniform(-10, 10), round(rng.uniform(0, 1), 2)])
    text = rng.choice([repr(value), f"{value:e}", f"{value:.3f}", f"{value:+.6g}", f"{value:.20f}"])
    return text, float(text)


@pytest.mark.parametrize("compiled", ["1", "0"])
@pytest.mark.parametrize("seed", range(24))
def test_files_whose_ids_differ_in_shape_from_each_other_equal_pytrec_eval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, seed: int,
        compiled: str) -> None:
    """Each file with its own mix of id lengths (the run ranking unjudged documents of other lengths), ids of a few
    letters or of many, scores written in every notation, sorted or shuffled lines, read by the C scan or the numpy
    one; seed 0 writes files of a few megabytes, read in several blocks."""
    monkeypatch.setenv("EVALCORE_COMPILED", compiled)
    rng = random.Random(seed)
    judged_lengths, unjudged_lengths = rng.choice(_ID_LENGTHS), rng.choice(_ID_LENGTHS)
    docs = sorted({_random_id(rng, judged_lengths) for _ in range(rng.randint(3, 300))})
    unjudged = sorted({_random_id(rng, unjudged_lengths) for _ in range(rng.randint(0, 200))} - set(docs))
    queries = sorted({_random_id(rng, _ID_LENGTHS[0]) for _ in range(3000 if seed == 0 else rng.randint(1, 60))})
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    qrels_lines, run_lines = [], []
    for query in queries:
        if rng.random() < 0.9:
            judged = rng.sample(docs, rng.randint(1, min(30, len(docs))))
            qrels[query] = {d: rng.choice([-1, 0, 1, 2, 3]) for d in judged}
            qrels_lines += [f"{query} 0 {d} {label}" for d, label in qrels[query].items()]
        if rng.random() < 0.9:
            ranked = rng.sample(docs, rng.randint(1, min(50, len(docs))))
            if unjudged and rng.random() < 0.7:
                ranked += rng.sample(unjudged, rng.randint(1, min(30, len(unjudged))))
            scores = [_random_score(rng) for _ in ranked]
            run[query] = {d: value for d, (_, value) in zip(ranked, scores, strict=True)}
            run_lines += [f"{query} Q0 {d} {i} {text} tag" for i, (d, (text, _)) in enumerate(zip(ranked, scores,
                                                                                                    strict=True))]
    for lines in (qrels_lines, run_lines):
        if rng.random() < 0.3:
            rng.shuffle(lines)
    (tmp_path / "qrels").write_text("\n".join(qrels_lines) + "\n")
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    result = score_json(capsys, "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert_equals_pytrec_eval(result["queries"], qrels, run)


@pytest.mark.parametrize("empty", ["qrels", "run"])
def test_an_empty_file_is_named_and_nothing_is_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      empty: str) -> None:
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    (tmp_path / "run").write_text("1 Q0 a 1 2.0 t\n")
    (tmp_path / empty).write_text("# written by a system that found nothing\n\n")
    assert main(["score", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--json"]) == 0
    out, err = capsys.readouterr()
    assert strict_json(out)["queries"] == {}
    assert f"{tmp_path / empty} holds no {'judgement' if empty == 'qrels' else 'ranked document'} line" in err
