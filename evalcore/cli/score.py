"""`score` (TREC qrels + run, like `trec_eval -q`) and `score-text` (JSONL answers) commands."""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from evalcore.errors import EvalError
from evalcore.metrics import GENERATION_MEASURES, GRADED_MEASURES, aggregate, signature
from evalcore.metrics.generation import generation_scores
from evalcore.metrics.graded import graded_retrieval_scores
from evalcore.metrics.trec import evaluate, judgements_by_query, rankings_by_query
from evalcore.metrics.trec_files import Judgements, Ranking, integer_ids, read_qrels, read_run

Table = dict[str, dict[str, float | None]]  # id -> measure -> value


def register(commands: argparse._SubParsersAction) -> None:
    """Add `score` and `score-text`."""
    trec = commands.add_parser(
        "score", help="per-query retrieval measures of a TREC run, like trec_eval -q",
        description="Binary measures count labels >= 1 as relevant (ndcg is binary: equal to "
        "trec_eval on binarised qrels). Ranking: score descending, ties by docid descending.",
    )
    trec.add_argument("--qrels", required=True, type=Path, help="TREC qrels (qid 0 docid rel) or qrels.parquet")
    trec.add_argument("--run", required=True, type=Path, help="TREC run (qid Q0 docid rank score tag)")
    trec.add_argument("--json", action="store_true", help="print JSON with full precision")
    trec.add_argument("--graded", action="store_true", help="add the seed 004 graded measures (graded.*)")
    trec.add_argument("--label-min", type=int, default=0, help="lowest label of the graded scale (default 0)")
    trec.add_argument("--label-max", type=int, default=4, help="highest label of the graded scale (default 4)")
    trec.add_argument("-c", "--complete", action="store_true",
                      help="also score judged queries missing from the run (as zeros), like trec_eval -c")
    trec.set_defaults(handler=run_score)
    text = commands.add_parser("score-text", help="BLEU and ROUGE of answers in a JSONL file")
    text.add_argument("file", type=Path, help='JSONL, one {"id", "hypothesis", "references": [...]} per line')
    text.add_argument("--json", action="store_true", help="print JSON with full precision")
    text.set_defaults(handler=run_score_text)


def run_score(args: argparse.Namespace) -> int:
    """Score a run against qrels and print per-query values and means."""
    if args.graded and args.label_min >= args.label_max:
        raise EvalError("label range is empty", where="--label-min/--label-max",
                        found=f"{args.label_min}..{args.label_max}", expected="--label-min < --label-max")
    qrels, run = read_qrels(args.qrels), read_run(args.run)
    if args.qrels.suffix == ".parquet":
        run = integer_ids(run)  # a dataset's ids are integers: run id 007 is passage 7
    scores = evaluate(qrels, run, complete=args.complete)
    table: Table = {qid: {} for qid in scores.qids}
    for name, column in scores.values.items():
        for qid, value in zip(scores.qids, column.tolist()):
            table[qid][name] = value
    names = list(scores.values)
    sigs = {name: signature(name) for name in names}
    if args.graded:
        names += _add_graded(table, qrels, run, args.label_min, args.label_max)
        scale = f"{args.label_min}-{args.label_max}"
        sigs.update({f"graded.{n}": signature(f"graded.{n}", scale=scale) for n in GRADED_MEASURES})
    if scores.unjudged:
        print(f"note: {scores.unjudged} run queries have no qrels line and are skipped, as trec_eval does",
              file=sys.stderr)
    if not table:
        print("note: no query is in both the run and the qrels", file=sys.stderr)
    _print(table, names, sigs, args.json)
    return 0


def _add_graded(table: Table, qrels: Judgements, run: Ranking, label_min: int, label_max: int) -> list[str]:
    labels, rankings = judgements_by_query(qrels), rankings_by_query(run)
    for qid, row in table.items():
        try:
            graded = graded_retrieval_scores(labels.get(qid, {}), rankings.get(qid, []), label_min, label_max)
        except EvalError as error:
            raise EvalError(error.message, where=f"qrels, query {qid}, {error.where}", found=error.found,
                            expected=error.expected, fix="set --label-min/--label-max to your labels' scale") from None
        row.update({f"graded.{name}": _number(graded[name]) for name in GRADED_MEASURES})
    return [f"graded.{name}" for name in GRADED_MEASURES]


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
    table: Table = {key: dict(generation_scores(hyp, refs)) for key, hyp, refs in items}
    names = list(GENERATION_MEASURES)
    _print(table, names, {name: signature(name) for name in names}, args.json, rejected)
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


def _means(table: Table, names: Iterable[str]) -> dict[str, tuple[float | None, int]]:
    return {name: aggregate([row.get(name) for row in table.values()]) for name in names}


def _print(
    table: Table, names: list[str], sigs: dict[str, str], as_json: bool,
    rejected: list[tuple[int, str]] | None = None,
) -> None:
    means = _means(table, names)
    if as_json:
        document = {
            "queries": table,
            "all": {name: {"mean": mean, "count": count} for name, (mean, count) in means.items()},
            "num_q": len(table), "signatures": sigs,
        }
        if rejected is not None:
            document["rejected"] = [{"line": line, "reason": reason} for line, reason in rejected]
        print(json.dumps(document, ensure_ascii=False, indent=1))
        return
    out: list[str] = []
    for key, row in table.items():
        out.extend(_line(name, key, row.get(name)) for name in names)
    out.extend(_line(name, "all", mean) for name, (mean, _) in means.items())
    out.append(f"{'num_q':<22}\tall\t{len(table)}")
    sys.stdout.write("\n".join(out) + "\n")


def _line(name: str, key: str, value: float | None) -> str:
    shown = "n/a" if value is None else f"{value:6.4f}"
    return f"{name:<22}\t{key}\t{shown}"
