"""Suite CSV import/export: a table of tricky files (one per rule) and a round-trip property."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalcore.cli import main
from evalcore.errors import EvalError
from evalcore.suites import Case
from evalcore.suites.csvfile import export_suite_csv, parse_suite_csv, suite_csv_bytes
from tests.csvsafety import assert_safe_csv

SAMPLE = Path(__file__).resolve().parents[1] / "dataset" / "samples" / "suite.csv"


def c(question: str, answer: str | None = None, *sources: str) -> Case:
    return Case(question=question, expected_answer=answer, expected_sources=tuple(sources))


# (name, raw bytes, expected cases, expected rejected [(line, reason fragment)], encoding, separator)
TRICKY = [
    ("French example with header", "Question;Réponse attendue;Sources\nQuel est le délai de rétractation ?;"
     "14 jours calendaires;CGV\nComment demander un devis ?;Par le formulaire de contact;\n".encode(),
     [c("Quel est le délai de rétractation ?", "14 jours calendaires", "CGV"),
      c("Comment demander un devis ?", "Par le formulaire de contact")], [], "utf-8", ";"),
    ("comma separator, no header", b"Who founded it?,Ada,About us\nWhen?,1999,History|Timeline\n",
     [c("Who founded it?", "Ada", "About us"), c("When?", "1999", "History", "Timeline")], [], "utf-8", ","),
    ("header is case-insensitive, quoted", b'"QUESTIONS",answer,sources\nq1,a1,s1\n',
     [c("q1", "a1", "s1")], [], "utf-8", ","),
    ("only the first line can be a header", b"q0;a0\nQuestion two?;a2\n",
     [c("q0", "a0"), c("Question two?", "a2")], [], "utf-8", ";"),
    ("utf-8 with BOM", "\ufeffquestion;answer;sources\nÉté ?;oui;\n".encode(),
     [c("Été ?", "oui")], [], "utf-8-sig", ";"),
    ("windows line endings", b"question;a;s\r\nq1;a1;s1\r\nq2;;\r\n",
     [c("q1", "a1", "s1"), c("q2")], [], "utf-8", ";"),
    ("quoted separator and newline inside a cell",
     b'question;answer;sources\r\n"Price; in euros?";"line one\r\nline two";"A;B|C"\r\nnext;x;\r\n',
     [c("Price; in euros?", "line one\nline two", "A;B", "C"), c("next", "x")], [], "utf-8", ";"),
    ("doubled quotes inside a quoted cell", b'question,answer\n"He said ""hi"", then left",ok\n',
     [c('He said "hi", then left', "ok")], [], "utf-8", ","),
    ("latin-1 / cp1252 file", "question;réponse\nQuel délai ?;14 jours\n".encode("cp1252"),
     [c("Quel délai ?", "14 jours")], [], "cp1252", ";"),
    ("byte undefined in cp1252 falls back to latin-1", b"question;r\nq\x81;ok\n",
     [c("q\x81", "ok")], [], "latin-1", ";"),
    ("utf-16 with BOM", "question;answer\n问题一？;答案\n".encode("utf-16"),
     [c("问题一？", "答案")], [], "utf-16", ";"),
    ("blank lines are skipped, numbering is physical", b"question;a\n\nq1;a1\n;;\n\nq2;a2\n",
     [c("q1", "a1"), c("q2", "a2")], [], "utf-8", ";"),
    ("empty question", b"question;a;s\nq1;a1;\n  ;answer without question;doc\n",
     [c("q1", "a1")], [(3, "empty question")], "utf-8", ";"),
    ("more than 10 sources", ("question;a;s\nq;a;" + "|".join(f"d{i}" for i in range(11)) + "\nok;;"
                              + "|".join(f"d{i}" for i in range(10)) + "\n").encode(),
     [c("ok", None, *(f"d{i}" for i in range(10)))], [(2, "11 sources")], "utf-8", ";"),
    ("empty source cells between pipes are ignored", b"q;a;A||B| \n", [c("q", "a", "A", "B")], [], "utf-8", ";"),
    ("wrong column count", b"question;a;s\nq1;a;s;json_valid;c1;extra\nq2;a;s\n",
     [c("q2", "a", "s")], [(2, "6 columns")], "utf-8", ";"),
    ("trailing empty cells from a spreadsheet are fine", b"q1;a;s;;\n", [c("q1", "a", "s")], [], "utf-8", ";"),
    ("question alone is a valid line", b"question\nJust a question?\n", [c("Just a question?")], [], "utf-8", ";"),
    ("unclosed quote is reported, earlier lines kept", b'question;a\nq1;a1\n"q2;a2\nq3;a3\n',
     [c("q1", "a1")], [(3, "never closed")], "utf-8", ";"),
    ("stray quote after a quoted cell", b'question;a\n"q1"x;a1\nq2;a2\n',
     [c("q2", "a2")], [(2, "badly quoted")], "utf-8", ";"),
    ("multi-line record: the next line number is right", b'question;a\n"q1\nstill q1";a1\n;bad\n',
     [c("q1\nstill q1", "a1")], [(4, "empty question")], "utf-8", ";"),
    ("empty file", b"", [], [], "utf-8", ";"),
    ("header only", b"question;expected answer;sources\r\n", [], [], "utf-8", ";"),
    ("Excel: BOM, ';', CRLF, French header", ("\ufeffQuestion;Réponse attendue;Sources\r\nQuel délai ?;"
     '"14 jours; calendaires";CGV\r\n').encode(), [c("Quel délai ?", "14 jours; calendaires", "CGV")], [], "utf-8-sig",
     ";"),
    ("LibreOffice Latin-1 with a French header", ("Question;Réponse attendue;Sources\nÀ quelle date ?;"
     "Noël;Réglement intérieur\n").encode("latin-1"), [c("À quelle date ?", "Noël", "Réglement intérieur")], [],
     "cp1252", ";"),
    ("Google Sheets: ',' with newlines and doubled quotes", (b'question,expected,sources\n"What is ""X""?\nMore",'
     b'"One, two\nthree",a|b\nplain,ans,\n'), [c('What is "X"?\nMore', "One, two\nthree", "a", "b"), c("plain", "ans")],
     [], "utf-8", ","),
    ("Chinese header word is a header", "问题;预期答案;来源\n退款期限？;30天;销售条款\n".encode(),
     [c("退款期限？", "30天", "销售条款")], [], "utf-8", ";"),
    ("a Chinese question starting with the header word is a case", "问题多吗？;不多;\n".encode(),
     [c("问题多吗？", "不多")], [], "utf-8", ";"),
    ("Excel's sep= line names the separator", b"sep=,\r\nquestion,a\r\nq1;x,a1\r\n", [c("q1;x", "a1")], [],
     "utf-8", ","),
    ("spaces around the pipes", b"q;a; CGV |  Tarifs | | reglement \n", [c("q", "a", "CGV", "Tarifs", "reglement")], [],
     "utf-8", ";"),
]


@pytest.mark.parametrize("name,data,cases,rejected,encoding,separator", TRICKY, ids=[t[0] for t in TRICKY])
def test_tricky_files(name, data, cases, rejected, encoding, separator):
    report = parse_suite_csv(data, source="t.csv")
    assert report.cases == cases
    assert [line for line, _ in report.rejected] == [line for line, _ in rejected]
    for (_, reason), (_, fragment) in zip(report.rejected, rejected, strict=False):
        assert fragment in reason
    assert report.encoding == encoding
    assert report.separator == separator
    assert report.ok == (not rejected)


def test_more_than_100_cases_rejects_the_rest_with_line_numbers():
    lines = ["question;answer"] + [f"q{i};a{i}" for i in range(1, 104)]
    report = parse_suite_csv("\n".join(lines).encode())
    assert len(report.cases) == 100
    assert [line for line, _ in report.rejected] == [102, 103, 104]
    assert all("at most 100" in reason for _, reason in report.rejected)


def test_invalid_lines_do_not_count_towards_the_limit():
    lines = [";no question"] * 5 + [f"q{i};a" for i in range(100)]
    report = parse_suite_csv("\n".join(lines).encode())
    assert len(report.cases) == 100
    assert len(report.rejected) == 5


@pytest.mark.parametrize("data", [b"question\tanswer\tsources\nq1\ta1\ts1\n", b"Hello, who?\tme\tdoc\nWhy?\tso\tdoc2\n",
                                  b"sep=\t\nq1\ta1\n"], ids=["with header", "no header, comma in a cell", "sep line"])
def test_tab_separated_file_is_refused_clearly(data):
    with pytest.raises(EvalError, match="tab-separated") as raised:
        parse_suite_csv(data, source="sheet.tsv")
    assert "export the sheet as CSV" in str(raised.value.fix)


@pytest.mark.parametrize("data", [b"question|expected|sources\nWhat is the refund window?|30 days|Terms of Sale\n",
                                  b"q1|a1|s1|s2\nq2|a2|s3\nq3|a3\n", b"sep=|\nq1|a1\n"],
                         ids=["with header", "no header, several sources", "sep line"])
def test_pipe_separated_file_is_refused_clearly(data):
    with pytest.raises(EvalError, match="'|'-separated") as raised:
        parse_suite_csv(data, source="sheet.csv")
    assert "';' or ','" in str(raised.value.fix)
    assert "sources" in str(raised.value.fix)


def test_a_question_about_a_pipe_is_not_a_pipe_separated_file():
    report = parse_suite_csv(b"question\nIs A|B allowed?\nWhat about C?\nAnd D?\n")
    assert [case.question for case in report.cases] == ["Is A|B allowed?", "What about C?", "And D?"]


def test_cli_import_of_a_pipe_separated_file_exits_2_and_imports_nothing(tmp_path, capsys):
    db, sheet = str(tmp_path / "suites.db"), tmp_path / "pipes.csv"
    sheet.write_bytes(b"question|expected|sources\nWhat is the refund window?|30 days|Terms of Sale\n")
    assert main(["suites", "import", str(sheet), "--name", "S", "--agent", "t", "--db", db]) == 2
    assert "'|'-separated" in capsys.readouterr().err
    assert main(["suites", "list", "--db", db]) == 2  # nothing imported: not even a store made
    assert "no database there" in capsys.readouterr().err


def test_a_long_run_of_rejections_reads_as_one_report_line():
    report = parse_suite_csv("".join(f"Item {i}?;a{i};s{i}\n" for i in range(10_000)).encode(), source="big.csv")
    assert len(report.cases) == 100
    assert len(report.rejected) == 9_900
    lines = report.report_lines()
    assert "lines 101 to 10000 (9900 lines): rejected: more than 100 cases: a suite holds at most 100" in lines
    assert len(lines) == 1 + 100 + 1 + 1
    assert len(report.to_dict()["rejected"]) == 9_900


def test_latin1_file_gets_a_note_naming_the_line():
    report = parse_suite_csv("question;a\nok;fine\nété;oui\n".encode("latin-1"))
    assert report.cases[1] == c("été", "oui")
    assert any("line 3" in note and "UTF-8" in note for note in report.notes)


def test_mixed_encodings_are_refused():
    data = "question;a\nété;oui\n".encode() + "hiver;non\xe9\n".encode("latin-1")
    with pytest.raises(EvalError, match="mixes UTF-8"):
        parse_suite_csv(data, source="mixed.csv")


def test_binary_file_is_refused():
    with pytest.raises(EvalError, match="not a text file"):
        parse_suite_csv(b"PK\x03\x04\x00\x00binary", source="book.xlsx")


def test_report_lines_name_every_line():
    report = parse_suite_csv(b"question;a\nq1;a1\n;x\n", source="s.csv")
    lines = report.report_lines()
    assert "line 2: ok: q1" in lines
    assert "line 3: rejected: empty question" in lines
    assert lines[-1] == "1 valid case, 1 rejected line"
    assert report.to_dict()["rejected"] == [{"line": 3, "reason": "empty question"}]


def test_export_refuses_a_source_containing_the_pipe():
    with pytest.raises(EvalError, match="'|'"):
        export_suite_csv([c("q", None, "a|b")])


def test_export_quotes_what_needs_quoting():
    text = export_suite_csv([c("a;b", 'say "x"', "s1", "s2")])
    assert text == 'question;expected_answer;sources\r\n"a;b";"say ""x""";s1|s2\r\n'


# Cases exactly as an import can produce them: stripped, non-empty, no carriage return, no '|'
# inside a source, at most 10 sources.
# Formula starts and quotes are frequent, also after line breaks inside a cell.
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\r") | st.sampled_from(
    [";", ",", '"', "\n", "|", " ", "é", "问", "=", "+", "-", "@", "'", "\t"]),
    max_size=30).map(str.strip)
SOURCE = TEXT.map(lambda s: s.replace("|", "/").strip()).filter(bool)
CASES = st.lists(st.builds(Case, question=TEXT.filter(bool), expected_answer=st.none() | TEXT.filter(bool),
                           expected_sources=st.lists(SOURCE, max_size=10).map(tuple)), max_size=12)


# Drawing these texts is most of the cost (about 0.15 s of CPU an example): 50 random lists, and first the one that
# holds every hazard at once (separators, quotes, a formula start after a line break, no answer, ten sources).
@pytest.mark.long
@settings(max_examples=50, deadline=None)
@given(CASES)
@example([Case(question='=1;"a",b\n+2 |问', expected_answer=None,
               expected_sources=tuple(f"@s{i};\"é\n-{i}," for i in range(10))),
          Case(question="'q\tx", expected_answer='a "b"\n=c', expected_sources=())])
def test_export_then_import_gives_the_same_cases(cases):
    report = parse_suite_csv(export_suite_csv(cases).encode("utf-8"))
    assert report.rejected == []
    assert report.cases == cases


def test_shipped_sample_suite_imports_cleanly():
    report = parse_suite_csv(SAMPLE.read_bytes(), source=str(SAMPLE))
    assert report.ok
    assert report.header
    assert 15 <= len(report.cases) <= 100
    assert all(case.expected_answer for case in report.cases)
    assert all(case.expected_sources for case in report.cases)


def test_cli_import_list_export_delete(tmp_path, capsys):
    db = str(tmp_path / "suites.db")
    good = tmp_path / "good.csv"
    good.write_bytes("Question;Réponse attendue;Sources\r\nQuel délai ?;14 jours;CGV|Règlement\r\n".encode("utf-8-sig"))
    assert main(["suites", "import", str(good), "--name", "FR", "--agent", "target_x", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "line 2: ok: Quel délai ?" in out
    assert "imported 1 case into suite" in out
    suite_id = out.split("into suite ")[1].split()[0]
    assert main(["suites", "list", "--db", db]) == 0
    assert suite_id in capsys.readouterr().out
    exported = tmp_path / "out.csv"
    assert main(["suites", "export", suite_id, "--out", str(exported), "--db", db]) == 0
    assert parse_suite_csv(exported.read_bytes()).cases == [c("Quel délai ?", "14 jours", "CGV", "Règlement")]
    assert exported.read_bytes().startswith(b"\xef\xbb\xbfquestion;")   # Excel reads it as UTF-8
    assert main(["suites", "delete", suite_id, "--db", db]) == 0
    capsys.readouterr()
    assert main(["suites", "export", suite_id, "--db", db]) == 2
    assert suite_id in capsys.readouterr().err


def test_cli_import_refuses_a_file_with_errors_unless_valid_only(tmp_path, capsys):
    db = str(tmp_path / "suites.db")
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"question;a\nq1;a1\n;orphan answer\nq3;a3\n")
    assert main(["suites", "import", str(bad), "--name", "S", "--agent", "t", "--db", db]) == 2
    captured = capsys.readouterr()
    assert "line 3: rejected: empty question" in captured.out
    assert "1 line rejected: nothing imported" in captured.err
    assert main(["suites", "list", "--db", db]) == 2  # nothing imported: not even a store made
    assert "no database there" in capsys.readouterr().err
    assert main(["suites", "import", str(bad), "--name", "S", "--agent", "t", "--valid-only", "--db", db]) == 0
    assert "imported 2 cases" in capsys.readouterr().out
    assert main(["suites", "import", str(tmp_path / "missing.csv"), "--name", "S", "--agent", "t", "--db", db]) == 2
    assert "cannot read the file" in capsys.readouterr().err


@pytest.mark.parametrize("question",
                         ["=SUM(A1:A2) ?", "+33 1 23 45 67 89 ?", "-5 °C ?", "@admin ?", "'=already quoted",
                          "'plain quote"])
def test_formula_cells_are_neutralised_and_import_back_unchanged(question):
    case = Case(question=question, expected_answer="=1+1", expected_sources=("@doc",))
    text = export_suite_csv([case])
    data_line = text.splitlines()[1]
    assert all(not cell.startswith(("=", "+", "-", "@")) for cell in data_line.split(";"))
    assert parse_suite_csv(text.encode("utf-8")).cases == [case]


def test_line_breaks_in_cells_keep_one_record_per_case_and_no_line_runs_as_a_formula():
    cases = [c("Refund window?\n=HYPERLINK(1)", "30 days\r@SUM(1+1)", "Terms\n-x"), c("q2", "a\r\n+1\n'=2")]
    text = export_suite_csv(cases)
    assert_safe_csv(text, len(cases), delimiter=";")
    # A lone carriage return inside a cell reads back as a line break, like every imported one.
    assert parse_suite_csv(text.encode()).cases == [c("Refund window?\n=HYPERLINK(1)", "30 days\n@SUM(1+1)",
                                                      "Terms\n-x"),
                                                    c("q2", "a\n+1\n'=2")]


def test_a_huge_cell_is_reported_in_words():
    report = parse_suite_csv(b"question;a\nq1;a1\n" + b"x" * 200_000 + b";a\n", source="big.csv")
    assert report.cases == [c("q1", "a1")]
    assert report.rejected == [(3, "a cell is longer than 131,072 characters (or a quote is never closed)")]


def test_a_line_written_with_the_other_separator_is_a_line_problem() -> None:
    data = (b"question;expected answer;sources\n"
            b"What is the refund window?;30 days;Terms of Sale\n"
            b"How many devices?,32,FAQ\n"
            b'"Hello, which plan?";;\n'
            b"Which plan, then?\n")
    report = parse_suite_csv(data, source="faq.csv")
    assert [case.question for case in report.cases] == ["What is the refund window?", "Hello, which plan?"]
    assert [line for line, _ in report.rejected] == [3, 5]
    assert all("the file's separator is ';'" in problem for _, problem in report.rejected)
    assert all("quote the question" in problem for _, problem in report.rejected)
    only_questions = parse_suite_csv(b"Which plan, then?\nAnd this one, too?\n")  # no line uses ';': nothing mixed
    assert len(only_questions.cases) == 2


def test_the_comma_export_is_a_table_pandas_reads_and_it_imports_back_too() -> None:
    cases = [Case("What, exactly, is the refund window?", "30 jours, après livraison", ("CGV", "Terms of Sale"),
                  ("contains:30 jours", r"regex:\d+")),
             Case("Où est le routeur ?")]
    semicolons, commas = suite_csv_bytes(cases), suite_csv_bytes(cases, delimiter=",")
    assert pd.read_csv(io.BytesIO(semicolons)).shape == (2, 1)  # the import format: one column to pandas
    table = pd.read_csv(io.BytesIO(commas), keep_default_na=False)
    assert list(table.columns) == ["question", "expected_answer", "sources", "checks"]
    assert table.iloc[0].tolist() == ["What, exactly, is the refund window?", "30 jours, après livraison",
                                      "CGV|Terms of Sale", r"contains:30 jours; regex:\d+"]
    for data in (semicolons, commas):
        report = parse_suite_csv(data, source="suite.csv")
        assert (report.cases, report.rejected) == (cases, [])
