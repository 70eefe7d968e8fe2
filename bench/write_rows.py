"""Writing a campaign's result rows: the writer's CPU per row, and the bytes it stores, against the reference's.

    python bench/write_rows.py --reference DIR --data DIR [--questions 2000] [--rounds 5] [--batch 32]
    python bench/write_rows.py --reference DIR --store DB [--rounds 5] [--batch 32]

The rows are a campaign's (bm25, extractive; run by the reference code on the first `--questions` questions of a
dataset folder, e.g. the realistic generator's, or the first campaign of `--store`). Each round, each side (this
code, then the reference, the order alternating by round) runs in its own process on its own copy of that store: it
reads the campaign's results (not measured), deletes them (and, for a first campaign on the store, the passages no
campaign names then: the writer stores them again; else the store holds them already), then writes them again
through the campaign writer (evalcore.campaigns.result_rows.ResultWriter) in batches of `--batch` questions, as a
runner writes the questions finished together: the rows built (`rows`) and each batch written in one transaction
(`write`). The CPU measured (user + system of the process, every thread) is that of the writing alone, per row.
Both sides' stored rows are then compared: every column of every result row and the stored passages, byte for byte.
Median (min-max) over the rounds.
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


MODES = ("passages stored", "passages new")  # a campaign on a store holding its passages; a first campaign


def child(db: Path, batch: int, mode: str) -> None:
    """Run in a side's process (its code on PYTHONPATH): the campaign's rows written again; CPU figures as JSON."""
    from evalcore.campaigns.queries import list_campaigns
    from evalcore.campaigns.result_rows import ResultWriter, read_results
    from evalcore.store import Connection, delete_unused_passages, result_table
    from evalcore.store.opening import open_store

    with open_store(str(db)) as store:
        campaign_id = list_campaigns(store)[-1].id
        finished = [(result.question, result.outcome) for result in read_results(store, campaign_id)]
        gc.freeze()  # the results read are the bench's own: a collection walking them is not the writer's cost

        def clear(conn: Connection) -> None:
            result_table.delete_results(conn, campaign_id)
            if mode == MODES[1]:
                delete_unused_passages(conn, store.dialect)

        store.write(clear)
        writer = ResultWriter(store, campaign_id)
        building = writing = 0.0
        for start in range(0, len(finished), batch):
            began = time.process_time()
            rows, passages, signatures = writer.rows(finished[start:start + batch])
            built = time.process_time()
            store.write(functools.partial(writer.write, rows=rows, passages=passages, signatures=signatures, extra={}))
            building, writing = building + built - began, writing + time.process_time() - built
    print(json.dumps({"rows": len(finished), "build": building, "write": writing}))


def stored_digest(db: Path) -> str:
    """A digest of every result row's columns (by position) and every stored passage: the packed value's sections'
    bytes, its pass/fail marks by value (a JudgeResult mark takes its tag alone since the reference)."""
    from evalcore.store.packing import MARKS, sections, unpack_values

    digest = hashlib.sha256()
    with sqlite3.connect(db) as conn:
        for table, order in (("results", "position"), ("passage_texts", "id")):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")
                       if row[1] not in ("created_at", "campaign_id")]
            for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"):
                cells = list(row)
                if "packed" in columns and (packed := cells[columns.index("packed")]) is not None:
                    parts = sections(packed)
                    cells[columns.index("packed")] = sorted((tag, unpack_values(data) if tag == MARKS else data)
                                                            for tag, data in parts.items())
                digest.update(repr(cells).encode("utf-8"))
    return digest.hexdigest()


def side_run(code: Path, source: Path, db: Path, batch: int, mode: str) -> dict[str, float]:
    shutil.copy(source, db)
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(db), "--batch", str(batch),
                           "--mode", mode],
                          env=env, capture_output=True, check=False, cwd=db.parent)
    if done.returncode != 0:
        raise SystemExit(f"{code}: exit {done.returncode}\n{done.stderr.decode(errors='replace')[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return figures


def source_store(args: argparse.Namespace, folder: Path) -> Path:
    """The store whose campaign is written again: --store, or a campaign run by the reference code on --data."""
    if args.store is not None:
        return Path(args.store).resolve()
    if args.data is None:
        raise SystemExit("give --data DIR (a dataset folder) or --store DB")
    db, config = folder / "source.db", folder / "bm25.toml"
    config.write_text(f'retriever = "bm25"\nknowledge_base = "{args.data.resolve()}"\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(args.reference.resolve()), "EVALCORE_INDEX_DIR": str(folder / "indexes")}
    subprocess.run([sys.executable, "-m", "evalcore", "run", "--dataset", str(args.data.resolve()), "--config",
                    str(config), "--db", str(db), "--no-cache", "--limit", str(args.questions)], env=env, cwd=folder,
                   stdout=subprocess.DEVNULL, check=True)
    with sqlite3.connect(db) as conn:  # the write-ahead log folded in: a copy holds every row
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db


def cell(values: list[float], digits: int = 1) -> str:
    """Median (min-max)."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, help="a checkout of earlier code, run alongside")
    parser.add_argument("--data", type=Path, metavar="DIR", help="a dataset folder; the reference runs a campaign")
    parser.add_argument("--store", type=Path, metavar="DB", help="a store holding a campaign (instead of --data)")
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, default=MODES[0], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.batch, args.mode)
        return
    if args.reference is None:
        raise SystemExit("give --reference DIR (a checkout of earlier code)")
    sys.path.insert(0, str(ROOT))  # this code reads both sides' stores
    sides = {"ours": ROOT, "reference": args.reference.resolve()}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {(mode, name): [] for mode in MODES for name in sides}
    digests: dict[tuple[str, str], str] = {}
    with tempfile.TemporaryDirectory(prefix="evalcore-write-rows-") as scratch:
        folder = Path(scratch)
        source = source_store(args, folder)
        for round_ in range(args.rounds):
            for mode in MODES:
                for name in list(sides)[:: 1 if round_ % 2 == 0 else -1]:
                    db = folder / f"{name}-{round_}.db"
                    figures = side_run(sides[name], source, db, args.batch, mode)
                    runs[mode, name].append(figures)
                    if round_ == 0:
                        digests[mode, name] = stored_digest(db)
                    for path in folder.glob(f"{name}-{round_}.db*"):
                        path.unlink()
                    print(f"round {round_ + 1} {mode} {name}: {figures['build'] + figures['write']:.3f} s CPU "
                          f"writing {figures['rows']:,} rows", file=sys.stderr, flush=True)
    n = runs[MODES[0], "ours"][0]["rows"]
    print(f"Writing {n:,} result rows in batches of {args.batch} (rows built, then written), CPU (user + system) per "
          f"row in us, {args.rounds} rounds interleaved, median (min-max), {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}:\n")
    print("| store | code | rows built | written | writer in all | reference / ours, per round |")
    print("|---|---|---:|---:|---:|---:|")
    for (mode, name), rounds in runs.items():
        build = [m["build"] / m["rows"] * 1e6 for m in rounds]
        write = [m["write"] / m["rows"] * 1e6 for m in rounds]
        total = [b + w for b, w in zip(build, write, strict=True)]
        ratios = [(r["build"] + r["write"]) / (o["build"] + o["write"])
                  for o, r in zip(runs[mode, "ours"], runs[mode, "reference"], strict=True)]
        print(f"| {mode} | {name} | {cell(build)} | {cell(write)} | {cell(total)} | "
              f"{cell(ratios, 2) + 'x' if name == 'ours' else ''} |")
    same = all(digests[mode, "ours"] == digests[mode, "reference"] for mode in MODES)
    print(f"stored rows and passages the same bytes as the reference's (marks the same values): "
          f"{'yes' if same else 'NO'}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
