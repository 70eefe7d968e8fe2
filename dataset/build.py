"""Build dataset/samples/*.parquet from the readable sources in dataset/source/*.json.

Usage: python dataset/build.py [--out DIR]

Each source file holds one language's passages (key, title, text) and questions (key, text,
relevant: {passage key: label 1-3}, answers: [...], and `unanswerable: true` on a question the
system should decline, written as queries.parquet's `answerable` column: false there, null elsewhere).
A question with `conversation: NAME` is a turn of that conversation (its turns in file order, written as the
`conversation` and `turn` columns); the conversations' questions take their ids after every other question's,
so that adding one keeps the other ids. Keys become int64 ids here, in file order, so editing the text and
rebuilding keeps every id stable unless items are inserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SOURCES = ("en", "fr", "zh")


def read_sources(folder: Path) -> list[dict]:
    """The language files, in a fixed order."""
    return [json.loads((folder / f"{lang}.json").read_text(encoding="utf-8")) for lang in SOURCES]


def build_tables(sources: list[dict]) -> dict[str, pa.Table]:
    """Turn keyed source records into the five dataset tables (plus title and lang columns)."""
    corpus: dict[str, list] = {"id": [], "text": [], "title": [], "lang": []}
    queries: dict[str, list] = {"id": [], "text": [], "lang": [], "answerable": [], "conversation": [], "turn": []}
    answers: dict[str, list] = {"id": [], "text": []}
    qrels: dict[str, list] = {"qid": [], "pid": [], "score": []}
    qas: dict[str, list] = {"qid": [], "aid": []}
    pid_of: dict[str, int] = {}
    for source in sources:
        for passage in source["passages"]:
            pid_of[passage["key"]] = len(corpus["id"])
            _append(corpus, id=len(corpus["id"]), text=passage["text"], title=passage["title"], lang=source["language"])
    turns: dict[str, int] = {}
    alone = [(s, q) for s in sources for q in s["questions"] if "conversation" not in q]
    talking = [(s, q) for s in sources for q in s["questions"] if "conversation" in q]
    for source, question in alone + talking:
        qid = len(queries["id"])
        conversation = question.get("conversation")
        if conversation is not None:
            turns[conversation] = turns.get(conversation, 0) + 1
        _append(queries, id=qid, text=question["text"], lang=source["language"],
                answerable=False if question.get("unanswerable") else None, conversation=conversation,
                turn=turns[conversation] if conversation is not None else None)
        for key, label in question["relevant"].items():
            _append(qrels, qid=qid, pid=pid_of[key], score=int(label))
        for text in question["answers"]:
            aid = len(answers["id"])
            _append(answers, id=aid, text=text)
            _append(qas, qid=qid, aid=aid)
    return {
        name: pa.table({c: pa.array(v, type=_type(c)) for c, v in columns.items()})
        for name, columns in (("corpus", corpus), ("queries", queries), ("answers", answers), ("qrels", qrels),
                              ("qas", qas))
    }


def _type(column: str) -> pa.DataType:
    return (pa.int64() if column in {"id", "qid", "pid", "aid", "score", "turn"}
            else pa.bool_() if column == "answerable" else pa.string())


def _append(columns: dict[str, list], **values: object) -> None:
    for name, value in values.items():
        columns[name].append(value)


def main() -> int:
    """Write the Parquet files and print the dataset check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "samples")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, table in build_tables(read_sources(HERE / "source")).items():
        pq.write_table(table, args.out / f"{name}.parquet")
    sys.path.insert(0, str(HERE.parent))
    from evalcore.cli import main as cli

    return cli(["dataset", "check", str(args.out)])


if __name__ == "__main__":
    sys.exit(main())
