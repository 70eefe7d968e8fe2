"""Packed results read as before: exports, `campaigns show` and `compare --json` byte for byte the same.

    python bench/packed_reads.py --reference DIR --data DIR [--questions 300]

Two campaigns (bm25 and bm25 with a keyword threshold) are run by the reference code (a checkout of the code before
results were packed) into one store. Three stores then answer the same commands: the reference's store read by the
reference code; that store migrated and read by this code; and a store written by this code: the reference's store
migrated, each campaign's results read and written again through this code's writer (packed), the rows before
deleted. Each command's output must be the same bytes on the three.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cli(code: Path, folder: Path, *args: str) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(code), "EVALCORE_INDEX_DIR": str(folder / "indexes")}
    done = subprocess.run([sys.executable, "-m", "evalcore", *args], cwd=folder, env=env, capture_output=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{code}: {' '.join(args)}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return done.stdout


def rewrite(db: Path) -> None:
    """Every campaign's results read and written again by this code's writer (packed rows)."""
    from evalcore.store.opening import open_store

    with open_store(str(db)) as store:
        for campaign_id in campaign_ids(store):
            rewrite_campaign(store, campaign_id)


def campaign_ids(store: Any) -> list[str]:
    from evalcore.campaigns.queries import list_campaigns

    return [campaign.id for campaign in list_campaigns(store)]


def rewrite_campaign(store: Any, campaign_id: str) -> None:
    """One campaign's results replaced by the same results written by this code's writer."""
    from evalcore.campaigns.result_rows import ResultWriter, read_results
    from evalcore.store import Connection, campaign_rows, delete_unused_passages, result_table

    results = read_results(store, campaign_id)
    writer = ResultWriter(store, campaign_id)
    rows, passages, signatures = writer.rows([(r.question, r.outcome) for r in results])

    def put(conn: Connection) -> None:
        result_table.delete_results(conn, campaign_id)
        delete_unused_passages(conn, store.dialect)
        writer.write(conn, rows, passages, signatures, {})
        campaign_rows.recount(conn, campaign_id)
        result_table.set_attempts(conn, campaign_id, [(r.question.position, r.attempts) for r in results])

    store.write(put)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=300)
    args = parser.parse_args()
    reference = args.reference.resolve()
    with tempfile.TemporaryDirectory(prefix="evalcore-packed-") as scratch:
        folder = Path(scratch)
        configs = {"a": 'retriever = "bm25"\n', "b": 'retriever = "bm25"\nkeyword_threshold = 0.5\n'}
        ref_db = folder / "reference.db"
        for name, text in configs.items():
            config = folder / f"{name}.toml"
            config.write_text(text + f'knowledge_base = "{args.data.resolve()}"\n', encoding="utf-8")
            cli(reference, folder, "run", "--dataset", str(args.data.resolve()), "--config", str(config),
                "--db", str(ref_db), "--no-cache", "--limit", str(args.questions), "--name", name)
        migrated, written = folder / "migrated.db", folder / "written.db"
        with sqlite3.connect(ref_db) as conn:  # the write-ahead log folded in: the copies hold every row
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copy(ref_db, migrated)
        shutil.copy(ref_db, written)
        rewrite(written)
        commands = [["campaigns", "show", "a"], ["campaigns", "list"], ["compare", "a", "b", "--json"],
                    ["compare", "a", "b"]] + [["campaigns", "export", "a", "--format", kind]
                                              for kind in ("csv", "jsonl", "trec")]
        same = True
        for command in commands:
            want = cli(reference, folder, *command, "--db", str(ref_db))
            for label, db in (("migrated", migrated), ("written by this code", written)):
                got = cli(ROOT, folder, *command, "--db", str(db))
                ok = got == want
                same &= ok
                print(f"{' '.join(command)} on the store {label}: {'same bytes' if ok else 'DIFFERENT'} "
                      f"({len(want):,} bytes)")
        print(f"every output the same as the reference's on its own store: {'yes' if same else 'NO'}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
