"""`compare A B` on a kept pair: the summary is out before any question is decoded, the per-measure values are never
unpacked, and the text is the same as when the comparison was computed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.campaigns import get_manager
from evalcore.cli import main
from evalcore.compare import saved_comparisons
from evalcore.compare.deltas import KeptQuestions
from evalcore.store import Store
from tests.test_compare import stored_campaign


def test_the_summary_is_written_before_the_kept_questions_are_decoded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "e.db"
    with Store(db) as store:
        coverage = [(i * 37 % 11) / 10 for i in range(40)]
        stored_campaign(store, "A", coverage)
        stored_campaign(store, "B", [min(1.0, max(0.0, c + (i % 3 - 1) / 10)) for i, c in enumerate(coverage)],
                        top_k=10)
    assert main(["compare", "A", "B", "--db", str(db), "--resamples", "500"]) == 0
    computed = capsys.readouterr().out
    # Read through the command's own store: a read of the table waits for the kept comparison's queued write.
    assert get_manager(db).store.read("SELECT count(*) AS n FROM comparisons")[0]["n"] == 1

    written_first: list[str] = []
    decode = KeptQuestions.with_verdicts

    def watched(self: KeptQuestions, kinds: tuple[object, ...]) -> list[object]:
        written_first.append(capsys.readouterr().out)
        return decode(self, kinds)  # type: ignore[arg-type]

    def never(*args: object) -> None:
        raise AssertionError("the text report does not read the per-measure values")

    monkeypatch.setattr(KeptQuestions, "with_verdicts", watched)
    monkeypatch.setattr(saved_comparisons, "unpack", never)
    assert main(["compare", "A", "B", "--db", str(db), "--resamples", "500"]) == 0
    rest = capsys.readouterr().out
    assert len(written_first) == 1
    summary = written_first[0]
    assert summary.startswith("A (baseline) ")
    assert "verdicts: " in summary
    assert "coverage" in summary
    assert "better   q" not in summary
    assert "better   q" in rest  # the questions' lines come after
    assert summary + rest == computed
