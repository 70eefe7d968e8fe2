"""Unreadable verdicts are a result: counted per judge on every face, a warning above a fifth, a gate for CI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from evalcore.campaigns import CampaignManager, campaign_summary
from evalcore.cli import main
from evalcore.testing import FakeOpenAIServer, Reply
from tests.conftest import write_dataset

# What SmolLM2-135M wrote on a llama.cpp server asked for a score in plain text: a numbered list, no verdict.
LIST_REPLY = "1. 30 days from delivery\n2. Thirty days after the goods are delivered"


def never_readable(path: str, body: Any) -> Reply:
    return Reply(text=LIST_REPLY, prompt_tokens=100, completion_tokens=20)


def readable(path: str, body: Any) -> Reply:
    return Reply(text=json.dumps({"score": 4, "reason": "Right."}), prompt_tokens=100, completion_tokens=20)


def run(db: str, dataset: str, server: FakeOpenAIServer, *options: str) -> int:
    return main(["run", "--dataset", dataset, "--db", db, "--judge", "score", "--judge-model", "judge",
                 "--judge-base-url", server.base_url, "--judge-api-key-env", "", "--set", "retriever=bm25",
                 "--no-cache", *options])


def test_a_judge_that_never_answers_readably_says_so_on_every_face_and_fails_the_gate(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    db, dataset = str(tmp_path / "store.db"), str(write_dataset(tmp_path / "tiny"))
    with FakeOpenAIServer(never_readable) as server:
        assert run(db, dataset, server, "--max-unknown-share", "0.2") == 4   # the gate's exit code
        calls = len(server.requests)
    out = capsys.readouterr().out
    # Two questions have a reference answer (the third is skipped): each asked twice (the retry), never read.
    assert calls == 4
    warning = "warning: judge score: 2 of 2 verdicts unreadable (100%)"
    assert warning in out
    assert "judge score: 1 question skipped: no reference answer" in out
    assert "judge tokens: 400 prompt + 80 completion" in out
    assert "total tokens: 480" in out
    assert "gate failed: judge score unreadable verdicts <= 20%: judge score: 2 of 2 verdicts unreadable (100%), " \
           "over the limit 20%" in out
    campaign_id = out.split("campaign ", 1)[1].split()[0]
    summary = campaign_summary(CampaignManager(db).store, campaign_id)
    assert (summary.unknown, summary.judged, summary.unknown_share) == ({"score": 2}, {"score": 2}, {"score": 1.0})
    assert main(["campaigns", "show", campaign_id, "--db", db]) == 0
    assert warning in capsys.readouterr().out
    assert main(["campaigns", "show", campaign_id, "--db", db, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["summary"]
    assert shown["unknown"] == {"score": 2}
    assert len(shown["warnings"]) == 1
    assert shown["warnings"][0].startswith(warning.removeprefix("warning: "))
    assert shown["judge_tokens"] == {"prompt": 400, "completion": 80, "total": 480}
    # The export: every unreadable row says unknown, and the count goes to standard error.
    assert main(["campaigns", "export", campaign_id, "--db", db, "--format", "csv"]) == 0
    captured = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(captured.out)))
    assert [row["score_result"] for row in rows] == ["unknown", "unknown", "skipped"]
    assert warning in captured.err
    # The Campaigns page: the count in the summary, and the warning.
    from tests.test_dashboard_workflow import page_test, unescape

    at = page_test(db, monkeypatch, "pages/campaigns.py")
    at.selectbox[0].set_value(campaign_id).run()
    assert any("score 2 of 2" in unescape(c.value) for c in at.caption)
    assert any(warning.removeprefix("warning: ") in unescape(w.value) for w in at.warning)
    # The API's campaign: its summary (a key now exists: the page above was drawn before, without sign-in).
    from fastapi.testclient import TestClient

    from evalcore.access.api_keys import create_key
    from evalcore.api import create_app

    app = create_app(db)
    _, secret = create_key(app.state.store, tenant="default", role="viewer")
    with TestClient(app, headers={"Authorization": f"Bearer {secret}"}) as client:
        data = client.get(f"/api/v1/campaigns/{campaign_id}").json()["data"]
    assert data["summary"]["unknown"] == {"score": 2}
    assert data["summary"]["unknown_share"] == {"score": 1.0}
    assert data["summary"]["warnings"] == shown["warnings"]

def test_readable_verdicts_pass_the_gate_and_warn_of_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db, dataset = str(tmp_path / "store.db"), str(write_dataset(tmp_path / "tiny"))
    with FakeOpenAIServer(readable) as server:
        assert run(db, dataset, server, "--max-unknown-share", "0") == 0
    out = capsys.readouterr().out
    assert "unreadable" not in out
    assert "checks: 1 of 1 passed" in out
    assert "judge tokens: 200 prompt + 40 completion" in out


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "nan", "a fifth"])
def test_the_unknown_share_is_a_share(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--dataset", "default", "--db", str(tmp_path / "x.db"), "--max-unknown-share", bad])
    assert exited.value.code == 2
    assert "expected a share from 0 to 1" in capsys.readouterr().err
