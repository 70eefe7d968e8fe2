"""No silent duplicates: a suite imported under a name in use asks what to do, on every face."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.cli import main
from evalcore.errors import EvalError
from evalcore.store import Store
from evalcore.suites import (
    Case,
    DuplicateName,
    IfExists,
    create_suite,
    list_suites,
    parse_suite_csv,
    replace_suite,
    suite_csv_bytes,
    suite_named,
)
from tests.test_api import Api, error_of, suite_body

CASES = [Case("What is the refund window?", "30 days", ("Terms of Sale",))]
OTHER = [Case("Quel délai ?", "14 jours", ("CGV", "Règlement"))]


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "names.db") as opened:
        yield opened


def test_a_name_in_use_is_refused_naming_the_existing_suite(store: Store) -> None:
    first = create_suite(store, name="Refunds", target_id="default", cases=CASES)
    with pytest.raises(DuplicateName) as refused:
        create_suite(store, name="  refunds ", target_id="default", cases=OTHER)  # case and spaces ignored
    assert refused.value.existing_id == first.id
    assert [s.id for s in list_suites(store)] == [first.id]  # nothing was created
    # Another workspace may use the name.
    assert create_suite(store, tenant="acme", name="Refunds", target_id="default", cases=OTHER).name == "Refunds"


def test_replace_keeps_the_id_and_keep_both_finds_a_free_name(store: Store) -> None:
    first = create_suite(store, name="Refunds", target_id="default", cases=CASES)
    replaced = create_suite(store, name="refunds", target_id="t2", cases=OTHER, if_exists=IfExists.REPLACE)
    assert replaced.id == first.id
    assert replaced.cases == tuple(OTHER)
    assert replaced.target_id == "t2"
    assert [(s.id, s.cases) for s in list_suites(store)] == [(first.id, tuple(OTHER))]
    second = create_suite(store, name="Refunds", target_id="default", cases=CASES, if_exists="keep_both")
    third = create_suite(store, name="Refunds", target_id="default", cases=CASES, if_exists="keep_both")
    assert (second.name, third.name) == ("Refunds (2)", "Refunds (3)")
    assert suite_named(store, "REFUNDS (2)").id == second.id
    assert suite_named(store, "nope") is None
    with pytest.raises(EvalError, match="if_exists"):
        create_suite(store, name="Refunds", target_id="default", cases=CASES, if_exists="merge")


def test_renaming_onto_another_suites_name_is_refused(store: Store) -> None:
    first = create_suite(store, name="A", target_id="default", cases=CASES)
    second = create_suite(store, name="B", target_id="default", cases=CASES)
    with pytest.raises(DuplicateName) as refused:
        replace_suite(store, second.id, name="a", target_id="default", cases=CASES)
    assert refused.value.existing_id == first.id
    assert replace_suite(store, second.id, name="b", target_id="default", cases=OTHER).name == "b"  # its own name


def test_cli_import_refuses_a_name_in_use_unless_told(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, csv = str(tmp_path / "cli.db"), tmp_path / "cases.csv"
    csv.write_text("question;expected;sources\nWhat is the refund window?;30 days;Terms\n", encoding="utf-8")
    args = ["suites", "import", str(csv), "--name", "Refunds", "--target", "default", "--db", db]
    assert main(args) == 0
    first = capsys.readouterr().out.split("into suite ")[1].split()[0]
    assert main(args) == 2
    error = capsys.readouterr().err
    assert f"a suite named 'Refunds' already exists ({first})" in error
    assert "--replace" in error
    assert "--keep-both" in error
    assert main([*args, "--keep-both"]) == 0
    assert "(Refunds (2))" in capsys.readouterr().out
    assert main([*args, "--replace"]) == 0
    assert f"into suite {first} (Refunds), replacing its cases" in capsys.readouterr().out
    with Store(db) as store:
        assert sorted(s.name for s in list_suites(store)) == ["Refunds", "Refunds (2)"]


def test_cli_export_writes_the_same_bytes_to_a_file_and_to_standard_output(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    db = str(tmp_path / "cli.db")
    with Store(db) as store:
        suite = create_suite(store, name="FR", target_id="default", cases=[*CASES, *OTHER])
    out = tmp_path / "out.csv"
    assert main(["suites", "export", suite.id, "--out", str(out), "--db", db]) == 0
    capsysbinary.readouterr()
    assert main(["suites", "export", suite.id, "--db", db]) == 0
    assert capsysbinary.readouterr().out == out.read_bytes() == suite_csv_bytes(suite.cases)
    assert parse_suite_csv(out.read_bytes()).cases == [*CASES, *OTHER]
    capsysbinary.readouterr()
    assert main(["suites", "export", "fr", "--db", db]) == 0  # by its name, case ignored
    assert capsysbinary.readouterr().out == out.read_bytes()
    assert main(["suites", "export", "missing", "--db", db]) == 2
    assert b"no suite 'missing' (as an id or a name)" in capsysbinary.readouterr().err


def test_api_create_answers_409_with_the_existing_id_unless_the_body_says(api: Api) -> None:
    body = suite_body(api, n=1)
    first = api.call("POST", "/api/v1/eval-suites", json=body).json()["data"]["suite"]
    conflict = error_of(api.call("POST", "/api/v1/eval-suites", json={**body, "name": body["name"].upper()}), 409)
    assert conflict["existing_id"] == first["id"]
    assert conflict["field"] == "name"
    assert "keep_both" in conflict["message"]
    both = api.call("POST", "/api/v1/eval-suites", json={**body, "if_exists": "keep_both"})
    assert both.status_code == 201
    assert both.json()["data"]["suite"]["name"] == f"{body['name']} (2)"
    replaced = api.call("POST", "/api/v1/eval-suites", json={**suite_body(api, n=2), "name": body["name"],
                                                            "if_exists": "replace"})
    assert replaced.status_code == 201
    assert replaced.json()["data"]["suite"]["id"] == first["id"]
    assert replaced.json()["data"]["suite"]["case_count"] == 2
    assert (error_of(api.call("POST", "/api/v1/eval-suites", json={**body, "if_exists": "merge"}), 422)["field"]
            == "if_exists")
    renamed = api.call("PUT", f"/api/v1/eval-suites/{both.json()['data']['suite']['id']}", json=body)
    assert error_of(renamed, 409)["existing_id"] == first["id"]
