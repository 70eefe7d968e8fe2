"""docs/specification.md lists every deliberate difference from the specification; these tests keep it true."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evalcore.language.text import tokenize
from evalcore.metrics.bleu_rouge import generation_scores
from evalcore.metrics.registry import aggregate
from tests.test_api import Api, wait_done

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "specification.md"
SUBJECTS = ["`tenant_id`", "`err_msg`", "ROUGE F", "tokenization", "a restart", "`dataset_id`", "a bad dataset",
            "averages", "suite questions in a comparison"]


def _rows() -> dict[str, dict[str, str]]:
    """The table's rows by subject: each column by its header."""
    lines = [line for line in PAGE.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split(" | ")]
    rows = [dict(zip(header, (cell.strip() for cell in line.strip("|").split(" | ")), strict=True))
            for line in lines[1:]]
    return {row["subject"]: row for row in rows}


def test_the_page_lists_each_difference_once_with_the_test_that_holds_it() -> None:
    rows = _rows()
    assert list(rows) == SUBJECTS
    for subject, row in rows.items():
        path, name = row["held by"].split("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        tests = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in tests, f"{subject}: {row['held by']} names no test"


def test_rouge_f_has_no_epsilon() -> None:
    """The page's case, computed: F = 2PR/(P+R) exactly, not 2PR/(P+R+1e-8)."""
    precision, recall = 1.0, 0.75
    rouge1 = generation_scores("the cat sat", ["the cat sat down"])["rouge1"]
    assert rouge1 == 2 * precision * recall / (precision + recall)
    with_epsilon = 2 * precision * recall / (precision + recall + 1e-8)
    assert abs(rouge1 - with_epsilon) > 1e-9
    assert generation_scores("the cat sat", ["the cat sat"])["rouge1"] == 1.0
    here = _rows()["ROUGE F"]
    assert "2PR / (P + R + 1e-8)" in here["the specification"]
    assert "2PR / (P + R)," in here["here"]
    assert f"{rouge1:.10f} here, {with_epsilon:.10f} with the epsilon" in here["why"]


def test_tokenization_goes_beyond_spaces() -> None:
    text = "Paris. The café costs 3.14 euros"
    assert tokenize(text) == ["paris", "the", "café", "costs", "3.14", "euros"] != text.split()
    assert tokenize("检索增强生成") == ["检索", "增强", "生成"]


def test_averages_skip_questions_without_the_measure() -> None:
    assert aggregate([1.0, None, 0.5]) == (0.75, 2)
    assert re.search(r"mean over the questions where the measure exists, with their count", _rows()["averages"]["here"])


def test_a_task_gives_its_tenant_as_a_name_and_always_an_err_msg(api: Api) -> None:
    body = {"dataset_id": "tiny", "knowledge_base_id": api.targets["fast"]}
    created = api.call("POST", "/api/v1/evaluation", json=body)
    task = created.json()["data"]["task"]
    assert task["tenant_id"] == "acme"
    assert task["err_msg"] == ""
    done = wait_done(api, f"/api/v1/evaluation?task_id={task['id']}", lambda data: data["task"]["status"])["task"]
    assert (done["status"], done["tenant_id"], done["err_msg"]) == (2, "acme", "")
