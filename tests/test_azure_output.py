"""`score --cases --shape package` is azure-ai-evaluation 1.18's own DocumentRetrievalEvaluator output, compared
with the package's outputs frozen by tests/fixtures/make_azure_output.py; `--shape documented` keeps the
documented flat keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.cli import main

FROZEN = json.loads((Path(__file__).parent / "fixtures" / "azure_output.json").read_text(encoding="utf-8"))


def scored(tmp_path: Path, capsys: pytest.CaptureFixture[str], cases: list[dict], shape: str) -> list[dict]:
    """The command's JSON lines for these frozen cases (one set of pass marks), ids removed."""
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps({"id": c["id"], **c["input"]}) + "\n" for c in cases), encoding="utf-8")
    marks = [f"--threshold={name}={value}" for name, value in cases[0]["thresholds"].items()]
    assert main(["score", "--cases", str(path), "--shape", shape, *marks]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line.pop("id") for line in lines] == [c["id"] for c in cases]
    return lines


def number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same(ours: object, theirs: object) -> bool:
    """Equal JSON values (numbers by value, to 12 places: a mark of 0 and 0.0 read the same), keys in order."""
    if isinstance(theirs, dict):
        return isinstance(ours, dict) and list(ours) == list(theirs) and all(same(ours[k], theirs[k]) for k in theirs)
    if number(theirs):
        return number(ours) and ours == pytest.approx(theirs, rel=1e-12, abs=1e-12)
    return type(ours) is type(theirs) and ours == theirs


@pytest.mark.parametrize("group", ["package defaults", "other marks"])
def test_the_package_shape_is_the_packages_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  group: str) -> None:
    cases = FROZEN["cases"][:6] if group == "package defaults" else FROZEN["cases"][6:]
    assert len({json.dumps(c["thresholds"]) for c in cases}) == 1
    for ours, case in zip(scored(tmp_path, capsys, cases, "package"), cases, strict=True):
        assert same(ours, case["output"]), (case["id"], ours, case["output"])


def test_the_documented_shape_holds_the_same_values_flat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = FROZEN["cases"][:6]
    for ours, case in zip(scored(tmp_path, capsys, cases, "documented"), cases, strict=True):
        properties = case["output"]["document_retrieval_properties"]
        assert "document_retrieval_properties" not in ours
        assert "ndcg@3_passed" not in ours
        for name, value in properties.items():
            if not name.endswith("_passed"):
                assert same(ours[name], value), (case["id"], name)
