"""Names that reach another person: no control or invisible-only names on any face, look-alike names count as
the same name, and whatever stored text the command line prints on a terminal shows its control characters
escaped (checked through a real pseudo-terminal)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.errors import EvalError
from evalcore.language.text import name_key, name_problem, shown, skeleton
from evalcore.store import Store
from evalcore.suites import Case, DuplicateName, create_suite, suite_named
from evalcore.targets import TargetConfig
from evalcore.targets.saved_targets import save_target
from tests.test_api import Api, error_of, suite_body

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "S\x1b]0;PWNED\x07\x1b[31mred"
CASES = [Case("What is the refund window?", "30 days", ("Terms of Sale",))]
BM25 = TargetConfig.of(retriever="bm25", chunking="none")


@pytest.mark.parametrize("name", [HOSTILE, "a\x00b", "csi\x9b31m", "\u202eevil", "\u200b", " \u200b\u200c\ufeff ",
                                  "\u3164", "\u115f\u1160", "\uffa0 \u034f"])
def test_control_and_invisible_only_names_are_refused(tmp_path: Path, name: str) -> None:
    assert name_problem(name) is not None
    with Store(tmp_path / "db") as store:
        with pytest.raises(EvalError, match="name"):
            create_suite(store, name=name, target_id="default", cases=CASES)
        with pytest.raises(EvalError, match="name"):
            save_target(store, BM25, name=name)
    manager = CampaignManager(tmp_path / "campaigns.db")
    try:
        with pytest.raises(EvalError, match="name"):
            manager.launch(LaunchRequest(dataset="default", config=BM25, limit=1, name=name))
    finally:
        manager.close()


def test_the_api_and_the_cli_refuse_them_alike(api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused = error_of(api.call("POST", "/api/v1/eval-suites", json={**suite_body(api), "name": HOSTILE}), 422)
    assert "control character" in refused["message"]
    assert "\x1b" not in refused["message"]
    target = error_of(api.call("POST", "/api/v1/targets", "full", json={"name": "\u200b", "config": {}}), 422)
    assert "visible character" in target["message"]
    csv = tmp_path / "suite.csv"
    csv.write_text("What is the refund window?;30 days;Terms of Sale\n")
    assert main(["suites", "import", str(csv), "--name", HOSTILE, "--target", "default",
                 "--db", str(tmp_path / "db")]) == 2
    assert "control character (found \\x1b)" in capsys.readouterr().err


@pytest.mark.parametrize("look_alike", ["ｓｕｉｔｅＡ", "suite\u200bA", "SUITE\u2060A", "suite\u00adA", " suiteA ",
                                       "\u0455uiteA", "suite\u3164A", "suite\u034fA", "suite\u115fA", "suitе\u0410"])
def test_look_alike_names_are_the_same_name(tmp_path: Path, look_alike: str) -> None:
    assert name_key(look_alike) == name_key("suiteA")
    with Store(tmp_path / "db") as store:
        first = create_suite(store, name="suiteA", target_id="default", cases=CASES)
        with pytest.raises(DuplicateName) as refused:
            create_suite(store, name=look_alike, target_id="default", cases=CASES)
        assert refused.value.existing_id == first.id
        found = suite_named(store, look_alike)
        assert found is not None
        assert found.id == first.id


def test_a_campaign_cannot_be_renamed_to_a_hangul_filler_alone(tmp_path: Path) -> None:
    manager = CampaignManager(tmp_path / "campaigns.db")
    try:
        campaign_id = manager.launch(LaunchRequest(dataset="default", config=BM25, limit=1))
        manager.wait(campaign_id, timeout=60)
        with pytest.raises(EvalError, match="visible character"):
            manager.rename(campaign_id, "\u3164")
    finally:
        manager.close()


def test_the_skeleton_is_unicodes_confusables_table() -> None:
    # Pairs listed in Unicode's confusables.txt: a Cyrillic, a Greek and a mathematical letter, a digit and a letter.
    for one, other in (("\u0455", "s"), ("\u03bf", "o"), ("\U0001d41a", "a"), ("1", "l"), ("rn", "m")):
        assert skeleton(one) == skeleton(other), (one, other)
    assert skeleton("cafe") != skeleton("caf\u00e9")  # an accent is not a look-alike


def terminal_output(*argv: str) -> str:
    """What a command prints on a pseudo-terminal (as an operator's terminal receives it)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "evalcore", *argv], cwd=ROOT, stdout=follower, stderr=follower,
                               stdin=subprocess.DEVNULL)
    os.close(follower)
    received = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        received += chunk
    process.wait(timeout=120)
    os.close(leader)
    return received.decode("utf-8", "replace")


def test_stored_names_are_printed_on_a_terminal_with_their_control_characters_escaped(tmp_path: Path) -> None:
    """Names stored before the rule (or by another version) still cannot drive the operator's terminal."""
    db = str(tmp_path / "db")
    manager = CampaignManager(db)
    try:
        campaign = manager.wait(manager.launch(LaunchRequest(dataset="default", config=BM25, limit=1)), timeout=60)
        suite = create_suite(manager.store, name="plain", target_id="default", cases=CASES)
        target_id = save_target(manager.store, BM25, name="plain")
        manager.store.write(lambda conn: [conn.execute(f"UPDATE {table} SET name = ? WHERE id = ?", (HOSTILE, ident))
                                          for table, ident in (("campaigns", campaign.id), ("suites", suite.id),
                                                               ("targets", target_id))])
    finally:
        manager.close()
    for argv in (["suites", "list"], ["campaigns", "list"], ["config", "list"], ["campaigns", "show", campaign.id]):
        printed = terminal_output(*argv, "--db", db)
        assert "\x1b" not in printed, (argv, printed)
        assert "\x07" not in printed, (argv, printed)
        assert shown(HOSTILE) in printed or "S\\x1b]0;PWNED" in printed, (argv, printed)
