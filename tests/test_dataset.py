"""The dataset loader: every rejection names file, row and column; statistics are exact."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from evalcore.cli import main as cli
from evalcore.datasets import SAMPLE_FOLDER, dataset_stats, load_dataset, resolve_dataset
from evalcore.errors import EvalError
from tests.conftest import TINY, write_dataset


def _broken(tmp_path: Path, change) -> Path:
    tables = copy.deepcopy(TINY)
    change(tables)
    return write_dataset(tmp_path / "broken", tables)


def _problems(path: Path) -> list[str]:
    with pytest.raises(EvalError) as caught:
        load_dataset(path)
    return caught.value.problems


def test_tiny_dataset_loads_with_labels_and_every_answer(tiny_dataset: Path) -> None:
    ds = load_dataset(tiny_dataset)
    first = ds.questions[0]
    assert first.labels == {10: 3, 11: 1}
    assert first.references == ("30 days.", "Thirty days after delivery.")
    assert ds.passage(13).title == "路由器手册"
    assert ds.questions[2].references == ()
    assert len(ds.content_hash) == 64


def test_the_answerable_column_marks_questions_to_decline(tmp_path: Path) -> None:
    tables = copy.deepcopy(TINY)
    tables["queries"]["answerable"] = [None, True, False]
    ds = load_dataset(write_dataset(tmp_path / "marked", tables))
    assert [q.answerable for q in ds.questions] == [None, True, False]
    assert {q.answerable for q in load_dataset("default").questions if not q.references} == {False}


def test_string_ids_are_normalised(tmp_path: Path) -> None:
    tables = copy.deepcopy(TINY)
    tables["queries"]["id"] = ["1", "2", "3"]
    tables["qrels"]["pid"] = ["10", "11", "12", "13"]
    ds = load_dataset(write_dataset(tmp_path / "strings", tables))
    assert [q.qid for q in ds.questions] == [1, 2, 3]
    assert ds.questions[0].labels == {10: 3, 11: 1}


def test_missing_label_column_means_relevance_one(tmp_path: Path) -> None:
    tables = copy.deepcopy(TINY)
    del tables["qrels"]["score"]
    ds = load_dataset(write_dataset(tmp_path / "binary", tables))
    assert ds.questions[0].labels == {10: 1, 11: 1}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda t: t.pop("qas"), "qas.parquet: missing file"),
        (lambda t: t["corpus"].pop("text"), "corpus.parquet: missing column 'text'"),
        (lambda t: t["queries"].update(id=[1.5, 2.0, 3.0]), "queries.parquet row 0 column 'id': found 1.5"),
        (lambda t: t["queries"].update(id=["a", "2", "3"]), "queries.parquet row 0 column 'id': found 'a'"),
        (lambda t: t["answers"].update(text=["30 days.", None, "14 jours."]),
         "answers.parquet row 1 column 'text': found null"),
        (lambda t: t["answers"].update(text=["30 days.", "  ", "14 jours."]),
         "answers.parquet row 1 column 'text': found empty text"),
        (lambda t: t["corpus"].update(id=[10, 11, 12, 13, 10]),
         "corpus.parquet row 4 column 'id': duplicate id 10 (first at row 0)"),
        (lambda t: t["qrels"].update(pid=[10, 11, 12, 99]),
         "qrels.parquet row 3 column 'pid': id 99 is not in corpus.parquet"),
        (lambda t: t["qas"].update(qid=[1, 7, 2]), "qas.parquet row 1 column 'qid': id 7 is not in queries.parquet"),
        (lambda t: t["qas"].update(aid=[100, 101, 555]),
         "qas.parquet row 2 column 'aid': id 555 is not in answers.parquet"),
        (lambda t: t["qrels"].update(score=["high", "1", "2", "3"]),
         "qrels.parquet row 0 column 'score': found 'high', expected an integer label"),
        (lambda t: t["queries"].update(text=[1, 2, 3]),
         "queries.parquet column 'text': found type int64, expected string"),
        (lambda t: t["queries"].update(answerable=["no", None, None]),
         "queries.parquet row 0 column 'answerable': found 'no', expected true, false or null"),
        # Past int64 the id would overflow the store; Python ints would have taken it silently.
        (lambda t: t["queries"].update(id=["1", "2", "99999999999999999999"]),
         "queries.parquet row 2 column 'id': found '99999999999999999999'"),
    ],
)
def test_each_rejection_names_the_place(tmp_path: Path, change, expected: str) -> None:
    problems = _problems(_broken(tmp_path, change))
    assert any(expected in line for line in problems), problems


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    def change(t):
        t.pop("qas")
        t.pop("answers")

    problems = _problems(_broken(tmp_path, change))
    assert len(problems) == 2


def test_every_bad_row_of_a_column_is_reported_up_to_twenty_and_counted(tmp_path: Path) -> None:
    def change(t):
        n = 30
        t["corpus"] = {"id": list(range(100, 100 + n)), "text": [""] * 25 + ["fine"] * 5,
                       "title": ["t"] * n}
        t["queries"]["text"] = [" ", None, "ok"]

    problems = _problems(_broken(tmp_path, change))
    empty = [line for line in problems if "corpus.parquet row " in line and "column 'text'" in line]
    assert [line.split()[2] for line in empty] == [str(row) for row in range(20)]
    assert "broken/corpus.parquet column 'text': 5 more bad rows like these (25 in all; the first 20 are listed)" \
        in problems
    assert sum("queries.parquet row " in line for line in problems) == 2


def test_every_unknown_reference_is_reported(tmp_path: Path) -> None:
    def change(t):
        t["qrels"]["pid"] = [900 + i for i in range(len(t["qrels"]["pid"]))]

    problems = _problems(_broken(tmp_path, change))
    assert sum("is not in" in line for line in problems) == len(TINY["qrels"]["pid"]), problems


def test_truncated_parquet_is_rejected(tiny_dataset: Path) -> None:
    data = (tiny_dataset / "corpus.parquet").read_bytes()
    (tiny_dataset / "corpus.parquet").write_bytes(data[: len(data) // 2])
    problems = _problems(tiny_dataset)
    assert any("corpus.parquet: not a readable Parquet file" in line for line in problems)
    assert not any("Could not open" in line or str(tiny_dataset) in line for line in problems)  # no repeated path


def test_a_dataset_without_passages_is_rejected_and_one_without_questions_loads(tmp_path: Path) -> None:
    empty = {name: {column: [] for column in columns} for name, columns in TINY.items()}
    problems = _problems(write_dataset(tmp_path / "empty", empty))
    assert problems == ["empty/corpus.parquet: no rows (a dataset needs at least one passage)"], problems
    # A corpus with no questions yet (imported from documents) is a dataset: its questions come later.
    corpus = load_dataset(write_dataset(tmp_path / "corpus", {**empty, "corpus": TINY["corpus"]}))
    assert corpus.questions == ()
    assert len(corpus.passages) == len(TINY["corpus"]["id"])


def test_path_outside_the_root_is_refused_for_ids(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="not a folder name under the dataset root"):
        resolve_dataset("../etc", allow_paths=False)
    assert resolve_dataset("default").name == "samples"
    assert resolve_dataset("mine", tmp_path) == tmp_path.resolve() / "mine"


def test_default_is_the_roots_samples_folder_else_the_built_in_sample(tmp_path: Path) -> None:
    # A checkout's dataset/ holds the sample; a server's --datasets folder, or the working folder's dataset/ of an
    # installed package, may not.
    assert resolve_dataset("default") == SAMPLE_FOLDER.resolve()
    assert resolve_dataset("default", tmp_path) == SAMPLE_FOLDER.resolve()
    write_dataset(tmp_path / "samples")
    assert resolve_dataset("default", tmp_path) == tmp_path.resolve() / "samples"
    assert load_dataset("default", tmp_path / "empty-root").name == "default"


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="no dataset folder"):
        load_dataset(tmp_path / "nowhere")


def test_statistics_of_the_tiny_dataset(tiny_dataset: Path) -> None:
    stats = dataset_stats(load_dataset(tiny_dataset))
    assert stats.total_queries == 3
    assert stats.total_passages == 5
    assert stats.total_answers == 3
    assert stats.avg_relevant_per_labeled_query == pytest.approx(4 / 3)
    assert stats.answer_coverage == "66.67% (2/3)"
    assert stats.labeled_queries == 3
    assert stats.unlabeled_queries == 0
    assert stats.distractor_passages == 1
    assert stats.label_distribution == {"1": 1, "2": 1, "3": 2}
    assert (stats.han_share, stats.accented_latin_share) == (pytest.approx(0.2), pytest.approx(0.4))
    assert stats.passage_tokens.min <= stats.passage_tokens.median <= stats.passage_tokens.max


def test_cli_check_ok_and_problems(tiny_dataset: Path, tmp_path: Path, capsys) -> None:
    assert cli(["dataset", "check", str(tiny_dataset)]) == 0
    assert capsys.readouterr().out.startswith("ok ")
    one = write_dataset(tmp_path / "one",
                        {"queries": {"id": [1], "text": ["Only one?"]}, "corpus": {"id": [1], "text": ["One."]},
                                          "answers": {"id": [1], "text": ["Yes."]}, "qrels": {"qid": [1], "pid": [1]},
                                          "qas": {"qid": [1], "aid": [1]}})
    assert cli(["dataset", "check", str(one)]) == 0
    assert capsys.readouterr().out.endswith(": 1 question (1 labeled), 1 passage, 1 answer\n")
    broken = _broken(tmp_path, lambda t: t["qrels"].update(pid=[10, 11, 12, 99]))
    (broken / "answers.parquet").unlink()
    assert cli(["dataset", "check", str(broken)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "answers.parquet: missing file" in err[0]
    assert "Traceback" not in "".join(err)


def test_cli_stats_json(tiny_dataset: Path, capsys) -> None:
    import json

    assert cli(["dataset", "stats", str(tiny_dataset), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answer_coverage"] == "66.67% (2/3)"


def test_relevance_column_wins_over_a_retrieval_score_column(tmp_path: Path) -> None:
    tables = copy.deepcopy(TINY)
    tables["qrels"]["score"] = [0.91, 0.42, 0.77, 0.55]
    tables["qrels"]["relevance"] = [2, 0, 1, 3]
    ds = load_dataset(write_dataset(tmp_path / "both", tables))
    assert ds.questions[0].labels == {10: 2, 11: 0}
    assert ds.questions[0].relevant == frozenset({10})


def test_integer_ids_of_every_width_load_as_the_row_by_row_reading_gives_them(tmp_path: Path) -> None:
    """Integer columns without nulls are taken whole (no row can be out of range); an unsigned 64-bit column is still
    read row by row, so an id past the int64 range is named."""
    import pyarrow as pa

    for kind in (pa.int8(), pa.int32(), pa.uint16(), pa.uint32(), pa.uint64()):
        tables = copy.deepcopy(TINY)
        tables["queries"]["id"] = pa.array([1, 2, 3], type=kind)
        ds = load_dataset(write_dataset(tmp_path / str(kind), tables))
        assert [q.qid for q in ds.questions] == [1, 2, 3]
        assert all(type(q.qid) is int for q in ds.questions)
    tables = copy.deepcopy(TINY)
    tables["queries"]["id"] = pa.array([1, 2, 2**63], type=pa.uint64())
    assert any("int64 range" in line for line in _problems(write_dataset(tmp_path / "wide", tables)))


def test_a_launch_builds_only_the_questions_it_runs_and_describes_the_dataset_once(tiny_dataset: Path,
                                                                                   monkeypatch) -> None:
    from evalcore.campaigns.questions import dataset_questions
    from evalcore.datasets import dataset_summary, loader

    ds = load_dataset(tiny_dataset)
    assert dataset_questions(ds, 2) == dataset_questions(ds)[:2]
    assert len(dataset_questions(ds, 2)) == 2
    searched: list[int] = []
    share = loader._share
    monkeypatch.setattr(loader, "_share", lambda passages, pattern: searched.append(1) or share(passages, pattern))
    line = dataset_summary(ds)
    assert dataset_summary(ds) == line
    assert len(searched) == 2  # Han and accented letters, searched on the first call only
    assert line.startswith(f"{ds.name}: 3 questions, 5 passages")


def test_a_bare_name_is_the_roots_folder_else_the_working_folders(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    work = tmp_path / "work"
    write_dataset(work / "mine")
    monkeypatch.chdir(work)
    assert resolve_dataset("mine", root) == (work / "mine").resolve()
    assert load_dataset("mine", root).name == "mine"
    # the API names folders under its root only: the working folder is not looked at
    assert resolve_dataset("mine", root, allow_paths=False) == root.resolve() / "mine"
    # a folder under the root wins over the working folder's of the same name
    write_dataset(root / "mine")
    assert resolve_dataset("mine", root) == root.resolve() / "mine"
