"""Documents imported through every face: the command line, the API (the operator's folders only), the Datasets
page; and what the imported corpus is for: campaigns refuse it without questions, suites match its sources by
file name."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from evalcore.campaigns import CampaignManager, campaign_results
from evalcore.campaigns.launching import LaunchRequest
from evalcore.cli import main
from evalcore.datasets import load_dataset
from evalcore.documents import import_corpus
from evalcore.errors import EvalError
from evalcore.suites import Case, create_suite
from evalcore.targets import TargetConfig
from evalcore.testing.documents import docx_bytes, pdf_bytes, write_mixed_folder
from tests.test_api import Api, error_of
from tests.test_dashboard import AppTest, assert_clean, page_test, unescape

ROUTER = "The router restarts when the firmware update finishes, and its light turns green."
REFUND = "Refunds are paid within 30 days to the card used for the purchase."


def documents(folder: Path) -> Path:
    """A folder of a PDF, a Word document and a Markdown file, one unknown type and one empty file."""
    (folder / "manuals").mkdir(parents=True)
    (folder / "manuals" / "router.pdf").write_bytes(pdf_bytes([[ROUTER]], title="Router manual"))
    (folder / "terms.docx").write_bytes(docx_bytes([REFUND], heading="Terms of sale"))
    (folder / "faq.md").write_text("# FAQ\n\nAsk the support desk between 9:00 and 17:00.\n", encoding="utf-8")
    (folder / "notes.odt").write_bytes(b"PK")
    (folder / "empty.txt").write_bytes(b"")
    return folder


# --- command line -------------------------------------------------------------------------------------------------

def test_corpus_import_prints_what_it_read_and_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = documents(tmp_path / "docs")
    out = tmp_path / "corpus"
    assert main(["corpus", "import", str(folder), "--out", str(out), "--chunk-size", "50"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("read 3 documents (1 markdown, 1 pdf, 1 docx) into 3 passages; 2 files skipped in ")
    assert printed[1:4] == ["skipped 2 files:", "  empty.txt: empty file",
                            ("  notes.odt: unknown type (.odt): the formats read are .md, .markdown, .txt, .text, "
                             ".html, .htm, .pdf, .docx")]
    assert printed[-1] == f"next: python -m evalcore dataset stats {out}"
    assert main(["dataset", "check", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"ok {out}: 0 questions (0 labeled), 3 passages, 0 answers"
    # Taken, then replaced; JSON.
    assert main(["corpus", "import", str(folder), "--out", str(out)]) == 2
    assert "a dataset already exists there" in capsys.readouterr().err
    assert main(["corpus", "import", str(folder), "--out", str(out), "--replace", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chunk_size"] == 200
    assert ([d["file"] for d in report["documents"]] == [
        "faq.md", "manuals/router.pdf", "terms.docx"])
    assert report["documents"][1]["title"] == "Router manual"
    assert report["documents"][1]["pages"] == 1


def test_corpus_import_refuses_bad_settings_and_folders_without_documents(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = documents(tmp_path / "docs")
    assert main(["corpus", "import", str(folder), "--out", str(tmp_path / "a"), "--chunk-size", "9",
                 "--chunk-overlap", "9"]) == 2
    assert capsys.readouterr().err.strip() == "error: chunk_overlap: must be smaller than chunk_size (9), found 9"
    config = tmp_path / "target.toml"
    config.write_text("chunking = \"tokens\"\nchunk_size = 9\nchunk_overlap = 2\n", encoding="utf-8")
    assert main(["corpus", "import", str(folder), "--out", str(tmp_path / "b"), "--config", str(config), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunk_size"] == 9
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "photo.jpg").write_bytes(b"\xff\xd8")
    assert main(["corpus", "import", str(tmp_path / "nothing"), "--out", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {tmp_path / 'nothing'}: no document to import (1 file, none readable); nothing was written",
        ("error: photo.jpg: unknown type (.jpg): the formats read are .md, .markdown, .txt, .text, .html, .htm, .pdf, "
         ".docx")]
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "c").exists()


# --- campaigns and suites -----------------------------------------------------------------------------------------

def test_a_campaign_refuses_a_corpus_without_questions_and_a_suite_matches_its_sources_by_file_name(
        tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    import_corpus(documents(tmp_path / "docs"), corpus)
    manager = CampaignManager(tmp_path / "db.sqlite")
    try:
        with pytest.raises(EvalError) as error:
            manager.launch(LaunchRequest(dataset=str(corpus), config=TargetConfig.of(retriever="bm25")))
        assert error.value.line() == ("dataset corpus: no questions yet (a corpus of 3 passages). use it as a suite's "
                                      "knowledge base, or add questions to its queries.parquet first")
        suite = create_suite(manager.store, tenant="default", name="docs", target_id="default", cases=[
            Case("When does the router restart?", "When the firmware update finishes.", ("router.pdf",)),
            Case("How are refunds paid?", "Within 30 days.", ("terms.docx", "Terms of sale")),
            Case("When does the router restart?", None, ("terms.docx",))])
        config = TargetConfig.of(knowledge_base=str(corpus), retriever="bm25", embedding_top_k=1,
                                 generator="extractive")
        campaign = manager.launch(LaunchRequest(suite_id=suite.id, config=config))
        assert manager.wait(campaign, timeout=60).status == "succeeded"
        results = campaign_results(manager.store, campaign)
        assert [r.outcome.measures["sources_found"] for r in results] == [1.0, 1.0, 0.0]
        assert [(s.title, s.file_name) for s in results[0].outcome.sources] == [("Router manual",
                                                                                 "manuals/router.pdf")]
    finally:
        manager.close()


# --- API ----------------------------------------------------------------------------------------------------------

def test_the_api_imports_only_the_operators_folders(api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = documents(tmp_path / "shared")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "passwords.txt").write_text("root: hunter2", encoding="utf-8")
    (folder / "escape").symlink_to(secret)
    monkeypatch.setenv("EVALCORE_IMPORT_DIRS", f"shared={folder}")
    root = api.app.state.dataset_root  # type: ignore[attr-defined]
    for reference in (str(secret), "../secret", "shared/../../secret", "other", "shared/escape", "/etc", "~"):
        refused = error_of(api.call("POST", "/api/v1/datasets/import", json={"folder": reference,
                                                                               "dataset_id": "stolen"}), 403)
        # The answer names what is allowed, never where the allowed folders are.
        assert "EVALCORE_IMPORT_DIRS" in refused["message"], reference
        assert str(folder) not in refused["message"], reference
    assert not (root / "stolen").exists()
    nul = error_of(api.call("POST", "/api/v1/datasets/import", json={"folder": "shared/a\u0000b", "dataset_id": "x"}),
                   422)
    assert nul["field"] == "folder"
    assert "control characters" in nul["message"]
    viewer = api.call("POST", "/api/v1/datasets/import", "viewer", json={"folder": "shared", "dataset_id": "v"})
    error_of(viewer, 403)
    made = api.call("POST", "/api/v1/datasets/import", json={"folder": "shared", "dataset_id": "shared-docs",
                                                             "chunk_size": 50})
    assert made.status_code == 201, made.text
    report = made.json()["data"]["report"]
    assert report["dataset"] == "shared-docs"
    assert report["passages"] == 3
    assert report["chunk_size"] == 50
    assert {s["file"] for s in report["skipped"]} == {"empty.txt", "notes.odt", "escape"}
    assert str(tmp_path) not in made.text
    assert len(load_dataset(root / "shared-docs").passages) == 3
    body = {"folder": "shared", "dataset_id": "shared-docs"}
    taken = error_of(api.call("POST", "/api/v1/datasets/import", json=body), 422)
    assert taken["field"] == "dataset_id"
    assert "already exists" in taken["message"]
    bad = error_of(api.call("POST", "/api/v1/datasets/import", json={"folder": "shared", "dataset_id": "x",
                                                                     "chunk_size": 2}), 422)
    assert bad["field"] == "chunk_size"
    (folder / "manuals" / "nothing").mkdir()
    empty = error_of(api.call("POST", "/api/v1/datasets/import", json={"folder": "shared/manuals/nothing",
                                                                       "dataset_id": "nothing"}), 422)
    assert empty["message"].startswith("shared/manuals/nothing: no document to import (no file)")
    assert not (root / "nothing").exists()
    assert str(tmp_path) not in empty["message"]
    # The new dataset is an id every route takes; a campaign on it says it has no questions yet.
    task = error_of(api.call("POST", "/api/v1/evaluation", json={"dataset_id": "shared-docs"}), 422)
    assert "no questions yet" in task["message"]


# --- dashboard ----------------------------------------------------------------------------------------------------

def test_the_datasets_page_imports_uploaded_documents_and_shows_the_corpus(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_UPLOAD_DIR", str(tmp_path / "uploads"))
    write_mixed_folder(tmp_path / "mixed", 6)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted((tmp_path / "mixed").rglob("*.*")):
            zipped.write(path, f"mixed/{path.relative_to(tmp_path / 'mixed')}")
        zipped.writestr("../outside.md", "# Escape\n\nwritten outside")
    at: AppTest = page_test(str(tmp_path / "db.sqlite"), monkeypatch)
    at.file_uploader(key="document_files").set_value([
        ("mixed.zip", archive.getvalue(), "application/zip"),
        ("router.pdf", pdf_bytes([[ROUTER]], title="Router manual"), "application/pdf"),
        ("broken.docx", b"not a zip", "application/octet-stream")])
    at.text_input(key="document_name").set_value("team")
    at.button(key="FormSubmitter:documents-Import").click()
    at.run()
    assert_clean(at)
    saved = tmp_path / "uploads" / "uploads-team"
    assert at.selectbox[0].value == str(saved)
    assert unescape(at.success[0].value).startswith("read 7 documents (")
    skipped = at.table[0].value
    assert [unescape(file) for file in skipped["file"]] == ["mixed.zip: ../outside.md", "broken.docx"]
    assert not (tmp_path / "uploads" / "outside.md").exists()
    assert not (tmp_path / "outside.md").exists()
    assert "No questions yet" in unescape("\n".join(c.value for c in at.caption))
    assert int(at.metric[0].value) == 0
    assert int(at.metric[1].value) == len(load_dataset(saved).passages)
    files = at.dataframe[0].value
    assert "router.pdf" in set(files["file"])
    assert "Router manual" in set(files["title"])
    at.run()  # the report shows once, after the import
    assert not at.success
