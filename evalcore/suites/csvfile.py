"""Suite CSV import and export: question ; expected answer ; sources ; checks ; conversation (the last two optional).

The optional columns are read by their header names when the file has a header row (in any order after the first
three), else the fourth cell is the exact checks and the fifth the conversation the question is a turn of. A
conversation's lines are its turns in file order (1, 2, ...); its lines need not follow each other. Export writes only
the columns in use.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from evalcore.datasets.conversation_checks import conversation_id, turns_in_order
from evalcore.errors import EvalError
from evalcore.formats.csvcells import csv_text, restore_cell
from evalcore.language.text import counted
from evalcore.metrics.answer_checks import checks_cell, parse_checks
from evalcore.suites.suite import MAX_CASES, MAX_SOURCES, Case

COLUMNS = 3
MAX_COLUMNS = 5  # the exact checks and the conversation are optional
SEPARATORS = (";", ",")
# A header is named by its English word; the French header starts with it too, a
# Chinese sheet's header cell is one of these words (compared whole: "问题是…" is a question).
HEADER_WORDS = ("问题", "問題", "提问", "提問")
# Excel writes and reads a first line `sep=;` that names the separator.
SEP_LINE = re.compile(r"^\s*sep=([^\r\n ])\s*$")
EXPORT_HEADER = ("question", "expected_answer", "sources")
CHECKS_HEADER = "checks"
CONVERSATION_HEADER = "conversation"
OPTIONAL_COLUMNS = (CHECKS_HEADER, CONVERSATION_HEADER)  # their order in a file without a header
# The optional columns' header names (compared case-insensitively), English, French and Chinese.
COLUMN_NAMES = {
    "checks": CHECKS_HEADER, "check": CHECKS_HEADER, "exact checks": CHECKS_HEADER, "vérifications": CHECKS_HEADER,
    "verifications": CHECKS_HEADER, "contrôles": CHECKS_HEADER, "controles": CHECKS_HEADER, "检查": CHECKS_HEADER,
    "conversation": CONVERSATION_HEADER, "conversation id": CONVERSATION_HEADER, "conversation_id": CONVERSATION_HEADER,
    "dialogue": CONVERSATION_HEADER, "对话": CONVERSATION_HEADER, "對話": CONVERSATION_HEADER,
    "会话": CONVERSATION_HEADER, "會話": CONVERSATION_HEADER,
}
# A valid UTF-8 multi-byte sequence: seeing one in a file that is not valid UTF-8 means the
# file mixes encodings, and any single decoding would garble part of it.
UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


@dataclass(frozen=True)
class CsvLine:
    """One record of the file: the case it became, or why it was rejected."""

    line: int
    case: Case | None
    reason: str | None = None


@dataclass
class CsvReport:
    """What an import found: valid cases, rejected lines with reasons, and how the file was read."""

    source: str
    encoding: str
    separator: str
    header: bool
    lines: list[CsvLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def cases(self) -> list[Case]:
        """The valid cases, in file order."""
        return [entry.case for entry in self.lines if entry.case is not None]

    @property
    def places(self) -> list[str]:
        """Where each valid case is in the file (`suite.csv line 3`), in the order of `cases`."""
        return [f"{self.source} line {entry.line}" for entry in self.lines if entry.case is not None]

    @property
    def rejected(self) -> list[tuple[int, str]]:
        """(line number, reason) for every rejected line."""
        return [(entry.line, entry.reason or "") for entry in self.lines if entry.case is None]

    @property
    def ok(self) -> bool:
        """True when no line was rejected."""
        return not self.rejected

    def report_lines(self) -> list[str]:
        """The line-by-line report a person reads before choosing to import."""
        out = [(f"{self.source}: encoding {self.encoding}, separator '{self.separator}', "
                f"header {'skipped' if self.header else 'none'}")]
        out += [f"note: {note}" for note in self.notes]
        for run in runs(self.lines):
            if run[0].case is not None:
                out.append(f"line {run[0].line}: ok: {shorten(run[0].case.question)}")
            elif len(run) < 3:
                out += [f"line {entry.line}: rejected: {entry.reason}" for entry in run]
            else:
                out.append(f"lines {run[0].line} to {run[-1].line} ({len(run)} lines): rejected: {run[0].reason}")
        out.append(f"{counted(len(self.cases), 'valid case')}, {counted(len(self.rejected), 'rejected line')}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for the API and the dashboard."""
        return {
            "source": self.source, "encoding": self.encoding, "separator": self.separator,
            "header": self.header, "notes": list(self.notes),
            "cases": [case_dict(case) for case in self.cases],
            "rejected": [{"line": line, "reason": reason} for line, reason in self.rejected],
        }


def runs(lines: list[CsvLine]) -> list[list[CsvLine]]:
    """Each valid line alone, consecutive rejections with the same reason together."""
    # A 10,000-line file over the 100-case limit then reads as one report line, not 9,900.
    out: list[list[CsvLine]] = []
    for entry in lines:
        if out and entry.case is None and out[-1][0].case is None and out[-1][0].reason == entry.reason:
            out[-1].append(entry)
        else:
            out.append([entry])
    return out


def case_dict(case: Case) -> dict[str, Any]:
    """A case as the JSON the API speaks."""
    return case.to_dict()


def shorten(text: str, width: int = 70) -> str:
    """One line of at most `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def parse_suite_csv(data: bytes, *, source: str = "upload") -> CsvReport:
    """Read a suite CSV into a report; whole-file problems (binary, mixed encodings) raise EvalError."""
    text, encoding, notes = decode(data, source)
    text, separator = explicit_separator(text) or (text, separator_for(text))
    refuse_other_separators(text, separator, source)
    records = [r for r in read_records(text, separator) if r[1] is None or any(c.strip() for c in r[1])]
    header = bool(records) and records[0][1] is not None and is_header(records[0][1])
    report = CsvReport(source=source, encoding=encoding, separator=separator, header=header, notes=notes)
    raw = re.split(r"\r\n|\r|\n", text)
    split = any(cells is not None and len(cells) > 1 for _, cells, _ in records)  # the file does use its separator
    columns = optional_columns(records[0][1] if header else None, f"{source} line {records[0][0] if header else 1}")
    for line, cells, error in records[1:] if header else records:
        error = error or (other_separator(raw[line - 1], cells, separator) if split else None)
        report.lines.append(to_line(line, None if error else cells, error, accepted=len(report.cases),
                                    columns=columns))
    if not report.lines:
        report.notes.append("the file holds no case")
    return numbered(report)


def optional_columns(header: list[str] | None, where: str) -> tuple[str, ...]:
    """What the fourth and fifth cells hold: as the header names them, else checks then conversation (a header cell
    that names neither, or is empty, takes the first of them not named elsewhere); `where` names the header line."""
    cells = [cell.strip().strip('"').strip().casefold() for cell in (header or [])[COLUMNS:MAX_COLUMNS]]
    named = [COLUMN_NAMES.get(cell) if cell else None for cell in cells]
    for name in OPTIONAL_COLUMNS:
        if named.count(name) > 1:
            raise EvalError(f"the header names the {name} column twice", where=where,
                            expected=f"at most one of each optional column: {', '.join(OPTIONAL_COLUMNS)}",
                            fix="rename or remove one of the two header cells")
    rest = iter(name for name in OPTIONAL_COLUMNS if name not in named)
    return (*(name or next(rest) for name in named), *rest)


def numbered(report: CsvReport) -> CsvReport:
    """The report with each conversation's cases numbered as its turns, in file order (rejected lines take no turn);
    a note says how many conversations the file holds."""
    turns = iter(turns_in_order(entry.case.conversation for entry in report.lines if entry.case is not None))
    report.lines = [replace(entry, case=replace(entry.case, turn=next(turns))) if entry.case is not None else entry
                    for entry in report.lines]
    conversations = {case.conversation for case in report.cases if case.conversation is not None}
    if conversations:
        report.notes.append(f"{counted(len(conversations), 'conversation')}: each one's lines are its turns, "
                            "in file order")
    return report


def other_separator(raw: str, cells: list[str] | None, separator: str) -> str | None:
    """Why a one-cell line looks written with the other separator (unquoted, 2-3 cells under it), or None."""
    other = {";": ",", ",": ";"}.get(separator)
    if other is None or cells is None or len(cells) != 1 or '"' in raw:
        return None
    count = len(next(csv.reader([raw], delimiter=other), []))
    if not 2 <= count <= COLUMNS:
        return None
    return (f"one cell, but {count} when split at '{other}', and the file's separator is '{separator}': write "
            f"'{separator}' between the cells, or quote the question if its '{other}' belong to it")


def refuse_other_separators(text: str, separator: str, source: str) -> None:
    """EvalError for a file whose cells are separated by tabs, '|' or anything but ';' and ','."""
    if separator == "\t":
        raise EvalError("the file is tab-separated", where=source, expected="';' or ',' between cells",
                        fix="export the sheet as CSV (';' or ',' separated), not as tab-separated or other text")
    if separator == "|" or pipe_separated(text, separator):
        # Refused rather than read: '|' already separates the sources inside the sources cell, so
        # in `q|a|s1|s2` nothing tells another source from a fourth column, and a '|' inside a
        # question or an answer would shift every cell after it. Whoever exported with '|' meant
        # cells: ';' or ',' between cells keeps '|' for the one thing the format uses it for.
        raise EvalError("the file is '|'-separated", where=source,
                        expected="';' or ',' between cells ('|' only between the sources of one cell)",
                        fix="export the sheet as CSV with ';' or ',' between cells, "
                            "and keep '|' between the sources of the sources cell")
    if separator not in SEPARATORS:
        raise EvalError(f"the file is '{separator}'-separated", where=source, expected="';' or ',' between cells",
                        fix="export the sheet as CSV (';' or ',' separated)")


def pipe_separated(text: str, separator: str) -> bool:
    """No record has a second cell under the separator, and most hold a '|': the cells are '|'-separated."""
    # Most, not any: a one-column file of questions may hold a question about "A|B".
    rows = [cells for _, cells, _ in read_records(text, separator) if cells and any(c.strip() for c in cells)]
    return bool(rows) and all(len(cells) == 1 for cells in rows) and 2 * sum("|" in r[0] for r in rows) > len(rows)


def decode(data: bytes, source: str) -> tuple[str, str, list[str]]:
    """Bytes to text: UTF-8 (BOM or not), UTF-16 with a BOM, else Windows-1252/Latin-1 with a note."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "utf-16", []
    if b"\x00" in data:
        raise EvalError("this is not a text file (it contains NUL bytes)", where=source,
                        fix="export the sheet as CSV (UTF-8)")
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8-sig"), "utf-8-sig" if bom else "utf-8", []
    except UnicodeDecodeError as error:
        bad_line = data[: error.start].count(b"\n") + 1
    if bom or UTF8_SEQUENCE.search(data):
        raise EvalError("the file mixes UTF-8 with another encoding", where=f"{source}, line {bad_line}",
                        fix="save the file again as CSV UTF-8")
    try:
        text, encoding = data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    note = (f"the file is not UTF-8 (first non-UTF-8 byte on line {bad_line}); read as {encoding} "
            "(Windows Western / Latin-1): check the accented letters, or save the file as CSV UTF-8")
    return text, encoding, [note]


def read_records(text: str, separator: str) -> Iterable[tuple[int, list[str] | None, str | None]]:
    """(first line number, cells or None, error or None) for every record, blank lines included."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=separator, strict=True)
    previous = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield previous + 1, None, quote_problem(str(error))
        else:
            yield previous + 1, [normalise_newlines(cell) for cell in cells], None
        previous = reader.line_num


def quote_problem(message: str) -> str:
    """A csv module error in words a spreadsheet user understands."""
    if "unexpected end of data" in message:
        return "a quoted cell is never closed (it runs to the end of the file)"
    if "field larger than field limit" in message:
        return f"a cell is longer than {csv.field_size_limit():,} characters (or a quote is never closed)"
    return f"badly quoted cell ({message}): put quotes around the whole cell and double inner quotes"


def normalise_newlines(cell: str) -> str:
    """Windows and old-Mac line breaks inside a quoted cell become plain newlines."""
    return cell.replace("\r\n", "\n").replace("\r", "\n")


def explicit_separator(text: str) -> tuple[str, str] | None:
    """(rest of the text, separator) when the first line is Excel's `sep=X`, else None."""
    first, _, rest = text.partition("\n")
    match = SEP_LINE.match(first)
    if match is None:
        return None
    # The line stays as a blank line so that line numbers still match the file.
    return "\n" + rest, match.group(1)


def separator_for(text: str) -> str:
    """The header's separator when there is a header, else the one that splits most lines in 2-3 columns."""
    # Tab is a candidate only so that a tab-separated file is recognised and refused clearly.
    candidates = (*SEPARATORS, "\t")
    first = first_nonblank_line(text)
    if is_header(re.split(r"[;,\t]", first, maxsplit=1)[:1]):
        for separator in candidates:
            if len(next(csv.reader([first], delimiter=separator), [])) > 1:
                return separator
    return max(candidates, key=lambda sep: (fit_score(text, sep), sep == ";", sep == ","))


def first_nonblank_line(text: str) -> str:
    """The first line with anything on it ("" for an empty file)."""
    return next((line for line in text.splitlines() if line.strip()), "")


def fit_score(text: str, separator: str) -> tuple[int, int]:
    """How well a separator fits: records of 3 to 5 cells (the last two optional), then records of 2-5 cells."""
    rows = [cells for _, cells, _ in read_records(text, separator) if cells]
    return sum(COLUMNS <= len(r) <= MAX_COLUMNS for r in rows), sum(2 <= len(r) <= MAX_COLUMNS for r in rows)


def is_header(cells: list[str]) -> bool:
    """A first line whose first cell starts with "question" (or is a Chinese header word) is a header."""
    first = cells[0].strip().strip('"').strip().rstrip(":：").casefold() if cells else ""
    return first.startswith("question") or first in HEADER_WORDS


def to_line(line: int, cells: list[str] | None, error: str | None, *, accepted: int,
            columns: tuple[str, ...] = OPTIONAL_COLUMNS) -> CsvLine:
    """One non-blank record to a case or a rejection."""
    if cells is None:
        return CsvLine(line, None, error)
    while cells and not cells[-1].strip() and len(cells) > MAX_COLUMNS:
        cells = cells[:-1]   # trailing empty cells come from spreadsheets, they carry nothing
    if len(cells) > MAX_COLUMNS:
        return CsvLine(line, None, f"{len(cells)} columns, expected at most {MAX_COLUMNS} "
                       "(question;expected answer;sources;checks;conversation): quote cells that contain the separator")
    question, answer, sources_cell = (restore_cell(cell) for cell in (cells + ["", "", ""])[:COLUMNS])
    extra = {name: restore_cell(cell) for name, cell in zip(columns, cells[COLUMNS:], strict=False)}
    try:
        checks = tuple(check.text for check in parse_checks(extra.get(CHECKS_HEADER, ""), "checks"))
    except EvalError as problem:
        return CsvLine(line, None, f"checks column: {problem.message} ({problem.found}; expected {problem.expected})")
    sources = tuple(s.strip() for s in sources_cell.split("|") if s.strip())
    if not question.strip():
        return CsvLine(line, None, "empty question")
    if len(sources) > MAX_SOURCES:
        return CsvLine(line, None, f"{len(sources)} sources, at most {MAX_SOURCES} allowed")
    if accepted >= MAX_CASES:
        return CsvLine(line, None, f"more than {MAX_CASES} cases: a suite holds at most {MAX_CASES}")
    return CsvLine(line, Case(question=question.strip(), expected_answer=answer.strip() or None,
                              expected_sources=sources, checks=checks,
                              conversation=conversation_id(extra.get(CONVERSATION_HEADER, ""))))


def export_suite_csv(cases: Iterable[Case], *, delimiter: str = ";") -> str:
    """A CSV (`;` by default, header, quoted where needed) that imports back to the same cases (a checks column when
    a case has checks, a conversation column when one is a turn of a conversation); with `,` it is the table an
    analyst's tools read (pandas.read_csv, Excel outside Europe)."""
    cases = list(cases)
    checked = any(case.checks for case in cases)
    talking = any(case.conversation is not None for case in cases)
    header = (*EXPORT_HEADER, *((CHECKS_HEADER,) if checked else ()), *((CONVERSATION_HEADER,) if talking else ()))
    rows: list[tuple[str, ...]] = [header]
    for number, case in enumerate(sorted(cases, key=export_order(cases)), start=1):
        if any("|" in source for source in case.expected_sources):
            raise EvalError("a source contains '|', which the CSV uses between sources",
                            where=f"case {number}", fix="remove the '|' from the source name")
        row = (case.question, case.expected_answer or "", "|".join(case.expected_sources))
        extra = (checks_cell(case.checks),) if checked else ()
        rows.append((*row, *extra, *((case.conversation or "",) if talking else ())))
    return csv_text(rows, delimiter=delimiter)


def export_order(cases: list[Case]) -> Callable[[Case], tuple[int, int]]:
    """Cases in their order, but each conversation's turns in turn order (the CSV gives turns by file order)."""
    first: dict[str | None, int] = {}
    for position, case in enumerate(cases):
        first.setdefault(case.conversation, position)
    place = {id(case): position for position, case in enumerate(cases)}
    return lambda case: ((first[case.conversation], case.turn or 0) if case.conversation is not None
                         else (place[id(case)], 0))


def suite_csv_bytes(cases: Iterable[Case], *, delimiter: str = ";") -> bytes:
    """The suite's CSV file as every face writes it: UTF-8 with a BOM (so Excel shows accents and Chinese)."""
    return export_suite_csv(cases, delimiter=delimiter).encode("utf-8-sig")
