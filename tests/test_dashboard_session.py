"""Signed in as people expect: the sidebar says what a key can do."""

from __future__ import annotations

import pytest

from evalcore.access import Principal
from evalcore.campaigns import get_manager
from evalcore.cli import main
from evalcore.keys import create_key
from tests.test_dashboard_access import assert_clean, open_app, sign_in


@pytest.mark.parametrize(("role", "capability", "says"), [
    ("viewer", "run_evaluations", "launches and changes nothing"),
    ("admin", "run_evaluations", "saving or changing a target configuration needs full-access"),
    ("admin", "full-access", "everything in its tenant"),
])
def test_the_sidebar_says_what_the_signed_in_key_can_do(role: str, capability: str, says: str, tmp_path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "evalcore.db")
    _, secret = create_key(get_manager(db).store, tenant="acme", role=role, capability=capability)
    at = sign_in(open_app(db, monkeypatch), secret)
    assert_clean(at)
    sidebar = " ".join(c.value for c in at.sidebar.caption).replace("\\", "")
    assert f"role **{role}** · capability {capability}" in sidebar and says in sidebar
    assert Principal("acme", role, capability).abilities in sidebar


def test_keys_create_says_what_the_key_can_do(tmp_path, capsys) -> None:
    assert main(["keys", "create", "--tenant", "acme", "--role", "viewer", "--db", str(tmp_path / "e.db")]) == 0
    assert "capability run_evaluations: it reads campaigns" in capsys.readouterr().err
