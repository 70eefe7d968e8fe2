"""CLI start-up: seconds from launching `python -m evalcore ...` to its first line of output, and CPU.

    python bench/startup.py [--rounds 7] [--questions 2000] [--reference DIR] [--bytecode]
                            [--data DIR [--generator realistic_dataset.py]]

Each command's CPU (user + system) is read twice: from /proc as its first line arrives, and when it exits.

Commands: `--help`, and `compare A B` on a pair whose comparison is kept (campaigns of
bench/shapes.py, compared once beforehand). With --data, the pair is instead two real campaigns on
the realistic generator's dataset in DIR (`--generator PATH`: written there first with `--questions`
questions when the folder holds none; 20,000 passages in three languages): bm25 and the extractive
generator, top 30 against top 10, run once with `python -m evalcore run` (by the reference's code
when there is one, so both sides can read the store) into a store kept in DIR for later runs; each
side compares a copy of it once, and both sides' printed comparisons must be the same, byte for byte.
With `--bytecode`, each side's package is compiled to bytecode first (`compileall`, into its
`__pycache__` folders, removed again afterwards), as an installed package is: where
PYTHONDONTWRITEBYTECODE is set (this machine sets it), a checkout's modules are otherwise compiled
from source by every process. The floors, measured in the same rounds: the interpreter alone
(`python -c "print(1)"`) and the interpreter importing numpy, which computing a comparison needs
(reading a kept one does not). With --reference, a checkout of earlier code (e.g. `git worktree
add /tmp/before main`) runs the same two commands in the same rounds, on its own copy of the store
(compared once by that code, so the comparison is kept in its own stored format). Rounds
interleave the commands; each row gives the median with min-max. Then the modules each command
imports, from `python -X importtime`, the heaviest first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shapes import fill, fill_as

from evalcore.campaigns import get_manager
from evalcore.compare import compare_campaigns

GOAL = 0.5


class Took(NamedTuple):
    """One run of a command: seconds to its first line, its CPU seconds by then, and its CPU seconds in all."""

    wall: float
    cpu: float
    total: float


TICK = os.sysconf("SC_CLK_TCK")


def first_line(command: list[str], cwd: Path = ROOT) -> Took:
    """Seconds until the command, run in `cwd`, prints its first line (then it is left to finish), with the CPU
    (user + system) the process had used by then, read from /proc as the line arrives, and at its end."""
    started = time.perf_counter()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd) as process:
        assert process.stdout is not None
        process.stdout.readline()
        took = time.perf_counter() - started
        stat = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(stat[11]) + int(stat[12])) / TICK  # utime, stime: fields 14 and 15 of proc(5)
        process.stdout.read()
        _, _, usage = os.wait4(process.pid, 0)
        process.returncode = 0  # reaped here; Popen must not wait for it again
    return Took(took, cpu, usage.ru_utime + usage.ru_stime)


def heaviest(command: list[str], cwd: Path = ROOT, count: int = 6) -> str:
    """The top-level imports of a command run in `cwd` that take longest (cumulative microseconds, -X importtime)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *command[1:]], capture_output=True, text=True, cwd=cwd,
                          check=True)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            _, cumulative, name = line[len("import time:"):].split("|")
            if not name.startswith("  "):
                rows.append((int(cumulative), name.strip()))
    total = sum(c for c, _ in rows) / 1e6
    return f"{total:.2f} s: " + ", ".join(f"{n} {c / 1e6:.2f}" for c, n in sorted(rows, reverse=True)[:count])


SHAPES_PAIR = ("bench_00", "bench_01")
REAL_PAIR = ("top30", "top10")   # the campaigns' names in real_store's store


def shapes_sides(db: str, reference: Path | None, questions: int) -> dict[str, tuple[Path, str]]:
    """Each side's folder and store (bench/shapes.py's pair): ours at `db`, compared beforehand; the reference's a copy
    it wrote and compared itself."""
    sides = {"": (ROOT, db)}
    if reference is not None:
        # Its own copy, written by its own code: an older checkout refuses a newer schema.
        fill_as(reference.resolve(), Path(f"{db}.reference"), questions)
        sides["reference: "] = (reference.resolve(), f"{db}.reference")
        compare_once(reference.resolve(), f"{db}.reference", SHAPES_PAIR)
    return sides


def compare_once(folder: Path, db: str, pair: tuple[str, str]) -> str:
    """`compare A B` run once by the code in `folder` (which keeps the comparison); what it printed."""
    done = subprocess.run([sys.executable, "-m", "evalcore", "compare", *pair, "--db", db], cwd=folder,
                          capture_output=True, text=True, check=True)
    return done.stdout


def real_store(data: Path, generator: Path | None, questions: int, code: Path) -> Path:
    """Two real campaigns on the realistic generator's dataset in `data` (written there first when it holds none),
    bm25 and the extractive generator, top 30 against top 10, run by the code in `code` into a store kept in `data`."""
    db = data / "kept-pair.db"
    if db.exists():
        return db
    if not (data / "queries.parquet").exists():
        if generator is None:
            raise SystemExit(f"{data}: no dataset there; give --generator to write one")
        subprocess.run([sys.executable, str(generator), str(data), "--questions", str(questions)], check=True)
    env = {**os.environ, "EVALCORE_INDEX_DIR": str(data / "indexes")}
    for name in REAL_PAIR:
        config = data / f"{name}.toml"
        config.write_text(f'retriever = "bm25"\ngenerator = "extractive"\nknowledge_base = "{data}"\n'
                          f'embedding_top_k = {name.removeprefix("top")}\n', encoding="utf-8")
        print(f"running campaign {name} on {data} ...", flush=True)
        subprocess.run([sys.executable, "-m", "evalcore", "run", "--dataset", str(data), "--config", str(config),
                        "--db", f"{db}.part", "--no-cache", "--name", name], cwd=code, env=env, check=True,
                       stdout=subprocess.DEVNULL)
    with sqlite3.connect(f"{db}.part") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    Path(f"{db}.part").rename(db)
    return db


def real_sides(tmp: Path, db: Path, reference: Path | None) -> dict[str, tuple[Path, str]]:
    """Each side's folder and its own copy of the real pair's store, compared once by that side's code; both sides
    must print the same comparison."""
    sides = {"": (ROOT, str(tmp / "real.db"))}
    if reference is not None:
        sides["reference: "] = (reference.resolve(), str(tmp / "real.reference.db"))
    printed = set()
    for folder, store in sides.values():
        shutil.copy(db, store)
        printed.add(compare_once(folder, store, REAL_PAIR))
    if len(printed) != 1:
        raise SystemExit("the two sides print different comparisons of the real pair")
    return sides


def commands_of(sides: dict[str, tuple[Path, str]], pair: tuple[str, str]) -> dict[str, tuple[list[str], Path]]:
    """Each command by name, with the folder it runs in: the floors, then each side's `--help` and kept compare."""
    python = sys.executable
    commands = {
        "floor: python -c print(1)": ([python, "-c", "print(1)"], ROOT),
        "floor: python, import numpy": ([python, "-c", "import numpy; print(1)"], ROOT),
    }
    for prefix, (folder, store) in sides.items():
        commands[f"{prefix}python -m evalcore --help"] = ([python, "-m", "evalcore", "--help"], folder)
        commands[f"{prefix}python -m evalcore compare A B (kept)"] = (
            [python, "-m", "evalcore", "compare", *pair, "--db", store], folder)
    return commands


@contextmanager
def compiled(folders: list[Path]) -> Iterator[None]:
    """Each folder's `evalcore` package compiled to bytecode while this lasts (the `__pycache__` folders it made
    removed afterwards)."""
    made = []
    for folder in folders:
        package = folder / "evalcore"
        before = set(package.rglob("__pycache__"))
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
        made += sorted(set(package.rglob("__pycache__")) - before)
    try:
        yield
    finally:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)


def questions_in(db: Path) -> int:
    """The questions of the first campaign in the store."""
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM results WHERE campaign_id = (SELECT id FROM campaigns LIMIT 1)")
                   .fetchone()[0])


def spread(values: list[float]) -> str:
    """The median with the min-max."""
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def bytecode_note(compiled: bool) -> str:
    """How the measured processes got the package's bytecode."""
    if compiled:
        return "the package compiled to bytecode"
    return "bytecode as this environment leaves it" + (
        " (PYTHONDONTWRITEBYTECODE is set: compiled from source)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--reference", type=Path, metavar="DIR", help="a checkout of earlier code, run alongside")
    parser.add_argument("--bytecode", action="store_true", help="compile both sides' package to bytecode first")
    parser.add_argument("--data", type=Path, metavar="DIR", help="two real campaigns on the dataset in DIR instead of "
                                                                 "bench/shapes.py's pair")
    parser.add_argument("--generator", type=Path, help="the realistic dataset generator, run into --data when empty")
    args = parser.parse_args()
    folders = [ROOT] + ([args.reference.resolve()] if args.reference else [])
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp, \
            compiled(folders) if args.bytecode else nullcontext():
        if args.data is not None:
            args.data.mkdir(parents=True, exist_ok=True)
            store = real_store(args.data.resolve(), args.generator, args.questions, folders[-1])
            commands = commands_of(real_sides(Path(tmp), store, args.reference), REAL_PAIR)
            inputs = (f"two real campaigns (bm25, extractive, top 30 against top 10) on {args.data}, "
                      f"{questions_in(store):,} questions each")
        else:
            db = str(Path(tmp) / "bench.db")
            fill(db, args.questions)
            compare_campaigns(get_manager(db).store, *SHAPES_PAIR)
            get_manager(db).close()
            commands = commands_of(shapes_sides(db, args.reference, args.questions), SHAPES_PAIR)
            inputs = f"bench/shapes.py's pair, {args.questions:,} questions per campaign"
        times: dict[str, list[Took]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, (command, folder) in commands.items():
                times[name].append(first_line(command, folder))
        load = os.getloadavg()
        print(f"CLI start-up, {inputs}, {args.rounds} interleaved rounds (median "
              f"[min-max]), {bytecode_note(args.bytecode)}, load average at the end {load[0]:.2f} / {load[1]:.2f} / "
              f"{load[2]:.2f} on {os.cpu_count()} cores:\n")
        print("| command | seconds to the first line | CPU seconds by the first line | CPU seconds, whole process "
              "| goal |")
        print("|---|---:|---:|---:|---:|")
        for name, took in times.items():
            goal = "" if name.startswith("floor") else f"< {GOAL}"
            cells = [spread([getattr(t, kind) for t in took]) for kind in ("wall", "cpu", "total")]
            print(f"| {name} | {' | '.join(cells)} | {goal} |")
        print("\n| command | imports (python -X importtime: total, then the heaviest top-level ones) |")
        print("|---|---|")
        for name, (command, folder) in commands.items():
            if not name.startswith("floor"):
                print(f"| {name} | {heaviest(command, folder)} |", flush=True)

if __name__ == "__main__":
    main()
