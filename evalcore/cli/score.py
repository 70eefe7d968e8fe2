"""`score` (TREC qrels + run, like `trec_eval -q`) and `score-text` (JSONL answers) commands."""

from __future__ import annotations

import argparse
import codecs
import json
import math
import os
import sys
from collections.abc import Mapping
from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np  # evalcore.metrics.retrieval below loads it anyway

from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands
from evalcore.errors import EvalError
from evalcore.metrics import (
    GENERATION_MEASURES,
    GRADED_MEASURES,
    RETRIEVAL_MEASURES,
    aggregate,
    graded_retrieval_scores,
    signature,
)
from evalcore.metrics.bleu_rouge import generation_scores
from evalcore.metrics.document_retrieval import SHAPES, document_retrieval, package_shape, read_cases
from evalcore.metrics.graded import default_thresholds, threshold_measure
from evalcore.metrics.retrieval import GRADED_NDCG_MEASURES

if TYPE_CHECKING:
    from evalcore.metrics.trec_files import Judgements, Ranking


class Table(NamedTuple):
    """Values by measure, one column per measure, one row per id (query or answer)."""

    keys: list[str]
    columns: dict[str, list[float | None]]


KNOWN_MEASURES = (*RETRIEVAL_MEASURES, *GRADED_NDCG_MEASURES, *(f"graded.{name}" for name in GRADED_MEASURES))


def register(commands: Commands) -> None:
    """Add `score` and `score-text`."""
    trec = commands.add_parser(
        "score", help=SUMMARIES["score"],
        description="Binary measures count labels >= 1 as relevant (ndcg is binary: equal to "
        "trec_eval on binarised qrels; ndcg_graded@k uses the labels as gains, as trec_eval's "
        "ndcg_cut). Ranking: score descending, ties by docid descending. Blank lines and lines "
        "starting with # are skipped; fields after a run's tag are ignored.",
    )
    trec.add_argument("--qrels", type=Path, help="TREC qrels (qid 0 docid rel) or qrels.parquet")
    trec.add_argument("--run", type=Path, help="TREC run (qid Q0 docid rank score tag)")
    trec.add_argument("--cases", type=Path, metavar="FILE",
                      help="instead of --qrels/--run with --graded: queries in the document retrieval evaluator's "
                      "JSON input (a list, one object, or JSONL: retrieval_ground_truth, retrieved_documents, "
                      "ground_truth_label_min/max); prints its output fields as JSONL")
    trec.add_argument("--shape", choices=SHAPES, default="documented",
                      help="with --cases: documented (default): the evaluator's documented output keys, flat "
                      "(ndcg@3, ndcg@3_result, ndcg@3_threshold, ...); package: what azure-ai-evaluation 1.18's "
                      "DocumentRetrievalEvaluator returns (document_retrieval_score, _passed, _status, and every "
                      "measure under document_retrieval_properties)")
    trec.add_argument("--threshold", action="append", metavar="NAME=V", default=[],
                      help="a graded pass mark (repeatable): ndcg_threshold, xdcg_threshold, fidelity_threshold, "
                      "top1_relevance_threshold, top3_max_relevance_threshold, total_retrieved_documents_threshold, "
                      "total_ground_truth_documents_threshold, holes_threshold, holes_ratio_threshold")
    trec.add_argument("--json", action="store_true", help="print JSON with full precision")
    trec.add_argument("--graded", action="store_true", help="add the graded document retrieval measures (graded.*)")
    trec.add_argument("--label-min", type=int, default=0, help="lowest label of the graded scale (default 0)")
    trec.add_argument("--label-max", type=int, default=4, help="highest label of the graded scale (default 4)")
    trec.add_argument("-c", "--complete", action="store_true",
                      help="also score judged queries missing from the run (as zeros), like trec_eval -c")
    trec.add_argument("-l", "--relevance-level", type=int, default=1, metavar="N",
                      help="a document is relevant when its label is >= N (default 1), like trec_eval -l; "
                      "applies to the binary measures")
    trec.add_argument("-M", "--max-docs", type=int, metavar="N",
                      help="score only the first N documents of each query after ranking, like trec_eval -M")
    trec.add_argument("-m", "--measure", action="append", metavar="NAME",
                      help="print this measure (repeatable; default: the six binary ones, plus graded.* "
                      f"with --graded). Known: {', '.join(KNOWN_MEASURES)}")
    trec.set_defaults(handler=run_score)
    text = commands.add_parser("score-text", help=SUMMARIES["score-text"])
    text.add_argument("file", type=Path, help='JSONL, one {"id", "hypothesis", "references": [...]} per line')
    text.add_argument("--json", action="store_true", help="print JSON with full precision")
    text.set_defaults(handler=run_score_text)


def _selected(args: argparse.Namespace) -> list[str]:
    """The measures to print, in order; EvalError for an unknown name or a bad option value."""
    names = list(dict.fromkeys(args.measure or ()))
    unknown = [name for name in names if name not in KNOWN_MEASURES]
    if unknown:
        raise EvalError("unknown measure", where="-m/--measure", found=", ".join(unknown),
                        expected=f"one of {', '.join(KNOWN_MEASURES)}")
    if not names:
        names = list(RETRIEVAL_MEASURES) + ([f"graded.{name}" for name in GRADED_MEASURES] if args.graded else [])
    if any(name.startswith("graded.") for name in names) and args.label_min >= args.label_max:
        raise EvalError("label range is empty", where="--label-min/--label-max",
                        found=f"{args.label_min}..{args.label_max}", expected="--label-min < --label-max")
    if args.max_docs is not None and args.max_docs < 1:
        raise EvalError("no document left to score", where="-M/--max-docs", found=str(args.max_docs),
                        expected="a whole number of at least 1")
    return names


def run_score(args: argparse.Namespace) -> int:
    """Score a run against qrels and print per-query values and means (or the evaluator's output per case)."""
    thresholds = _thresholds(args.threshold)
    if args.cases is not None:
        return _score_cases(args.cases, thresholds, args.shape)
    if args.qrels is None or args.run is None:
        raise EvalError("nothing to score", where="--qrels/--run", expected="both --qrels and --run, or --cases FILE")
    # Imported here: TREC scoring loads pyarrow, which `--help` and the other commands need not pay.
    from evalcore.metrics.trec import TrecOptions, evaluate
    from evalcore.metrics.trec_files import read_pair

    names = _selected(args)
    _choose_allocators()
    qrels, run = read_pair(args.qrels, args.run)
    for kind, path, lines in (("judgement", args.qrels, len(qrels.qid)), ("ranked document", args.run, len(run.qid))):
        if not lines:
            print(f"note: {path} holds no {kind} line (it is empty, or only blank and comment lines)", file=sys.stderr)
    if run.extra is not None:
        print(f"note: {run.extra.lines} run lines have fields after the run tag (first at {run.extra.first}); "
              "they are ignored, as trec_eval does", file=sys.stderr)
    options = TrecOptions(args.complete, args.relevance_level, args.max_docs)
    scores = evaluate(qrels, run, options, graded=names)
    columns = {name: column.tolist() for name, column in scores.values.items()}
    sigs = {name: _signature(name, args) for name in names}
    if any(name.startswith("graded.") for name in names):
        columns |= _graded_columns(scores.qids, qrels, run, args)
    if scores.unjudged:
        print(f"note: {scores.unjudged} run queries have no qrels line and are skipped, as trec_eval does",
              file=sys.stderr)
    if not scores.qids:
        print("note: no query is in both the run and the qrels", file=sys.stderr)
    extra: dict[str, object] = {} if args.max_docs is None else {"max_docs": args.max_docs}
    if any(name.startswith("graded.") for name in names):
        marks = default_thresholds(args.label_min, args.label_max) | thresholds
        extra["thresholds"] = {f"graded.{name}": marks[name] for name in GRADED_MEASURES}
    # The means of the numpy columns straight away (the same fsum over the same values as aggregate).
    means = {name: _mean(column) for name, column in scores.values.items() if name in names}
    _print(Table(scores.qids, {name: columns[name] for name in names}), sigs, args.json, extra, means)
    return 0


# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def _choose_allocators() -> None:
    """pyarrow allocates through the C library's malloc, and glibc's malloc reuses the memory
    numpy frees instead of returning it to the system (docs/benchmarks.md has the figures).

    Reading a run a block at a time makes and frees the same few temporary arrays of a few
    hundred kilobytes thousands of times; by default glibc gives the top of its heap back
    after each and the next block faults every page in again (115,000 page faults, 0.7 s of
    system time for 10 million lines). And scoring makes and frees arrays of 80 MB (10 million
    lines of 8 bytes): above glibc's mmap threshold each is a fresh mapping the kernel zeroes
    page by page as it is first written (a fifth of the process's CPU in `perf`, 0.9-1.4 s of
    system time), below it the heap hands back the memory just freed. Freed memory up to 1 GiB
    stays for reuse, and arrays under 512 MiB come from the heap (a run of 64 million lines
    before the largest array is mapped on its own): system time 0.2-0.6 s, the peak 1-4% higher
    (still under 0.6 of pytrec_eval's). pyarrow's own pool (mimalloc) then costs 6-14% more CPU
    than that tuned malloc with a peak within 5%, so pyarrow uses it too, unless
    ARROW_DEFAULT_MEMORY_POOL names a pool. Off glibc (no mallopt: musl, macOS) nothing changes.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # only here: `score` over a TREC run is the one command that needs it

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return
    mallopt(M_TRIM_THRESHOLD, 1 << 30)
    mallopt(M_MMAP_THRESHOLD, 512 << 20)
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())


def _signature(name: str, args: argparse.Namespace) -> str:
    """The signature of the values as computed: the scale, the relevance level, -M and -c when given."""
    used: dict[str, str] = {}
    if args.max_docs is not None:
        used["depth"] = str(args.max_docs)
    if args.complete:
        used["queries"] = "qrels"
    if name.startswith("graded."):
        return signature(name, scale=f"{args.label_min}-{args.label_max}", **used)
    if name in GRADED_NDCG_MEASURES:
        return signature(name, **used)
    return signature(name, rel=f">={args.relevance_level}", **used)


def _graded_columns(qids: list[str], qrels: Judgements, run: Ranking,
                    args: argparse.Namespace) -> dict[str, list[float | None]]:
    from evalcore.metrics.trec import judgements_by_query, rankings_by_query

    labels, rankings = judgements_by_query(qrels), rankings_by_query(run, args.max_docs)
    columns: dict[str, list[float | None]] = {f"graded.{name}": [] for name in GRADED_MEASURES}
    marks = _thresholds(args.threshold)
    for qid in qids:
        try:
            graded = graded_retrieval_scores(labels.get(qid, {}), rankings.get(qid, []), args.label_min, args.label_max,
                                             marks)
        except EvalError as error:
            raise EvalError(error.message, where=f"qrels, query {qid}, {error.where}", found=error.found,
                            expected=error.expected, fix="set --label-min/--label-max to your labels' scale") from None
        for name in GRADED_MEASURES:
            columns[f"graded.{name}"].append(_number(graded[name]))
    return columns


def _thresholds(pairs: list[str]) -> dict[str, float]:
    """`NAME=V` pass marks by graded measure; EvalError naming the bad one."""
    marks: dict[str, float] = {}
    for pair in pairs:
        name, _, text = pair.partition("=")
        measure = threshold_measure(name.strip())
        try:
            marks[measure] = float(text)
        except ValueError:
            marks[measure] = math.nan
        if not math.isfinite(marks[measure]):
            raise EvalError("a threshold is not NAME=NUMBER", where="--threshold", found=pair,
                            expected="e.g. ndcg_threshold=0.7")
    return marks


def _score_cases(path: Path, thresholds: dict[str, float], shape: str = "documented") -> int:
    """The evaluator's output fields for each query of the file, one JSON line each (with its id when it has one),
    in the documented keys or the package's own shape."""
    for number, record in enumerate(read_cases(path), start=1):
        where = f"{path} query {number}"
        output = document_retrieval(record, thresholds, where=where)
        if shape == "package":
            output = package_shape(output)
        key = record.get("id", number) if isinstance(record, dict) else number
        sys.stdout.write(json.dumps({"id": key, **output}, ensure_ascii=False) + "\n")
    return 0


def _number(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def run_score_text(args: argparse.Namespace) -> int:
    """Score each valid JSONL line; report bad lines with their numbers and go on."""
    items, rejected = _read_answers(args.file)
    for line, reason in rejected:
        print(f"{args.file}:{line}: skipped: {reason}", file=sys.stderr)
    if not items:
        raise EvalError(
            "no valid line to score", where=str(args.file),
            expected='one JSON object per line: {"id", "hypothesis", "references": [...]}',
            problems=[f"{args.file}:{line}: {reason}" for line, reason in rejected] or None,
        )
    rows = [generation_scores(hyp, refs) for _, hyp, refs in items]
    table = Table([key for key, _, _ in items], {name: [row[name] for row in rows] for name in GENERATION_MEASURES})
    rejections = {"rejected": [{"line": line, "reason": reason} for line, reason in rejected]}
    _print(table, {name: signature(name) for name in GENERATION_MEASURES}, args.json, rejections)
    return 0


def _read_answers(path: Path) -> tuple[list[tuple[str, str, list[str]]], list[tuple[int, str]]]:
    if not path.is_file():
        raise EvalError("file not found", where=str(path), fix="check the path")
    items, rejected, seen = [], [], set()
    # JSONL lines end at \n only: splitlines() would also cut at U+2028 or U+0085, which JSON
    # strings may hold raw. Each line is decoded alone, so a bad byte costs one line, not the file.
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            item, reason = _parse_answer(raw.decode("utf-8"))
        except UnicodeDecodeError:
            item, reason = None, "not UTF-8 text"
        if item is not None and item[0] in seen:
            item, reason = None, "this id is already used on an earlier line"
        if item is None:
            rejected.append((number, reason))
        else:
            seen.add(item[0])
            items.append(item)
    return items, rejected


def _parse_answer(line: str) -> tuple[tuple[str, str, list[str]] | None, str]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        return None, f"not JSON ({error.msg})"
    if not isinstance(record, dict):
        return None, "not a JSON object"
    key, hyp, refs = record.get("id"), record.get("hypothesis"), record.get("references")
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        return None, "id must be a string or an integer"
    if isinstance(key, str) and not _printable(key):
        return None, "id holds a lone surrogate escape (such as \\ud800): it cannot be printed"
    if isinstance(key, str) and (not key.strip() or any(char in key for char in "\t\r\n\x85\u2028\u2029")):
        return None, "id must be non-blank, without tabs or line breaks (output lines are tab-separated)"
    if not isinstance(hyp, str):
        return None, "hypothesis must be a string"
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        return None, "references must be a non-empty list of strings"
    return (str(key), hyp, refs), ""


def _printable(text: str) -> bool:
    """Whether the text is valid Unicode (JSON's \\ud800 escapes can make lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _mean(column: np.ndarray) -> tuple[float | None, int]:
    """`aggregate` of a numpy column: the mean over its values that are not NaN, and their count."""
    present = column[~np.isnan(column)].tolist()
    return (math.fsum(present) / len(present), len(present)) if present else (None, 0)


def _print(table: Table, sigs: dict[str, str], as_json: bool, extra: Mapping[str, object],
           known: Mapping[str, tuple[float | None, int]] | None = None) -> None:
    """The table as trec_eval-like lines (measure, id, value; then the means) or as JSON; `known`
    means are not computed again."""
    means = {name: (known or {}).get(name) or aggregate(column) for name, column in table.columns.items()}
    if as_json:
        rest = {
            "all": {name: {"mean": mean, "count": count} for name, (mean, count) in means.items()},
            "num_q": len(table.keys), "signatures": sigs, **extra,
        }
        sys.stdout.write(_json_text(table, rest) + "\n")
        return
    shown = {name: [_shown(value) for value in column] for name, column in table.columns.items()}
    labels = [f"{name:<22}\t" for name in table.columns]
    out = [f"{label}{key}\t{value}" for key, *values in zip(table.keys, *shown.values(), strict=False)
           for label, value in zip(labels, values, strict=False)]
    out.extend(f"{label}all\t{_shown(mean)}" for label, (mean, _) in zip(labels, means.values(), strict=False))
    out.append(f"{'num_q':<22}\tall\t{len(table.keys)}")
    sys.stdout.write("\n".join(out) + "\n")


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:6.4f}"


def _json_text(table: Table, rest: dict[str, object]) -> str:
    """Exactly `json.dumps({"queries": ..., **rest}, ensure_ascii=False, indent=1)`, faster.

    With `indent`, json falls back to its pure-Python encoder (a second or more for 100,000
    queries). The rows all have the same measures, so the C encoder writes each column in one
    call and a template lays the values out as indent=1 would; the small rest goes through json.
    """
    queries = "{}"
    if table.keys:
        encoded = [json.dumps(column)[1:-1].split(", ") for column in table.columns.values()]
        names = [json.dumps(name, ensure_ascii=False).replace("%", "%%") for name in table.columns]
        template = "  %s: {\n" + ",\n".join(f"   {name}: %s" for name in names) + "\n  }"
        keys = map(encode_basestring, table.keys)
        queries = "{\n" + ",\n".join([template % row for row in zip(keys, *encoded, strict=False)]) + "\n }"
    tail = json.dumps(rest, ensure_ascii=False, indent=1)
    return '{\n "queries": ' + queries + ",\n" + tail[2:]
