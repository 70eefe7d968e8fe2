"""A comparison never computed before, through each face: this checkout against an earlier one, real shapes.

    python bench/cold.py --reference DIR [--questions 10000] [--rounds 5] [--real 0]

DIR is a checkout of the code to compare with (e.g. `git worktree add --detach /tmp/before main`);
each side's copy of bench/shapes.py's store is written by that side's own code (the stored formats
may differ, the values do not).
The store is bench/shapes.py's: 2 campaigns x 10,000 questions written by the runner's own writer,
23 measures with 7 different counts (retrieval on the labelled questions, generation on those with
a reference, abstention, graded retrieval, two judges' verdicts), 30 retrieved passages with long
document ids; with --real N, also bench/campaign.py's two real campaigns (bm25, extractive, top 30
against top 10) on a generated dataset of N questions. Each side has its own copy of each store.

Each round runs, for each side in turn (the order alternating by round), with every kept comparison
deleted first so that nothing is read back:
- engine: a fresh process times `compare_campaigns` alone (its imports are done before the clock);
- CLI: `python -m evalcore compare A B --json` as a whole process, interpreter start-up included
  (wall, and the CPU of the child);
- API: a fresh process serves `GET /api/v1/compare` in process (FastAPI's TestClient) and times the
  request cold, then again with the comparison kept.
Cells are the median with min-max over the rounds. CPU is user + system time, a comparison's own process for
its statistics included; wall is what the
user waits. Each side must give one JSON in every run, and both sides the same, to the last digit (the hash of the
engine's `to_dict()` and of the API's body).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(1, str(ROOT))

from shapes import fill, fill_as

GOALS = {"engine": 1.5, "CLI": 2.0, "API": 2.0, "API, kept": 0.3}
PAIRS = {"shapes": ("bench_00", "bench_01")}

ENGINE = """
import hashlib, json, resource, sys, time
def cpu_now():   # this process's CPU and its children's (a comparison's statistics may run in a process of their own)
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime
from evalcore.campaigns import get_manager
from evalcore.compare import compare_campaigns
store = get_manager(sys.argv[1]).store
store.write(lambda conn: conn.execute("DELETE FROM comparisons"))
cpu, wall = cpu_now(), time.perf_counter()
comparison = compare_campaigns(store, sys.argv[2], sys.argv[3])
cpu, wall = cpu_now() - cpu, time.perf_counter() - wall
text = json.dumps(comparison.to_dict(), sort_keys=True, default=str)
print(json.dumps({"cpu": cpu, "wall": wall, "hash": hashlib.sha256(text.encode()).hexdigest()}))
get_manager(sys.argv[1]).close()
"""

API = """
import hashlib, json, resource, sys, time, warnings
def cpu_now():   # as the engine's
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime
warnings.simplefilter("ignore")
from fastapi.testclient import TestClient
from evalcore.api.app import create_app
from evalcore.access.api_keys import create_key
app = create_app(sys.argv[1])
store = app.state.store
_, secret = create_key(store, tenant="default", role="admin")
client = TestClient(app, headers={"Authorization": f"Bearer {secret}"})
store.write(lambda conn: conn.execute("DELETE FROM comparisons"))
out = {}
for name in ("cold", "kept"):
    cpu, wall = cpu_now(), time.perf_counter()
    response = client.get("/api/v1/compare", params={"a": sys.argv[2], "b": sys.argv[3]})
    out[name] = {"cpu": cpu_now() - cpu, "wall": time.perf_counter() - wall}
    assert response.status_code == 200, response.text[:500]
body = response.json()["data"]["comparison"]
out["hash"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
out["bytes"] = len(response.content)
print(json.dumps(out))
"""


def python(side: Path, code: str, *args: str) -> dict[str, object]:
    """A fresh process of `side` running `code`; its last line of JSON."""
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=side, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"{side}: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def cli(side: Path, db: Path, a: str, b: str) -> tuple[float, float]:
    """`compare A B --json` as a whole process, nothing kept: (wall, CPU of the child)."""
    python(side, "import sys; from evalcore.campaigns import get_manager; s = get_manager(sys.argv[1]).store; "
           "s.write(lambda c: c.execute('DELETE FROM comparisons')); print('{}')", str(db))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evalcore", "compare", a, b, "--json", "--db", str(db)], cwd=side,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def spread(values: list[float]) -> str:
    """Median with min-max."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def real_store(path: Path, questions: int) -> tuple[str, str]:
    """Two real campaigns on a generated dataset (bench/compare.py's): bm25, extractive, top 30 against top 10."""
    import compare as bench_compare

    from evalcore.campaigns import get_manager

    manager = get_manager(path)
    try:
        return bench_compare.real_pair(manager.store, path.parent / "generated", questions)
    finally:
        manager.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, required=True, metavar="DIR", help="a checkout of the earlier code")
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--real", type=int, default=0, metavar="N", help="also two real campaigns of N questions")
    args = parser.parse_args()
    sides = {"this checkout": ROOT, "reference": args.reference.resolve()}
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as tmp:
        stores = {"shapes": Path(tmp) / "shapes.db"}
        fill(str(stores["shapes"]), args.questions)
        if args.real:
            stores["real"] = Path(tmp) / "real.db"
            PAIRS["real"] = real_store(stores["real"], args.real)
        for case, db in stores.items():
            rows: dict[tuple[str, str], list[float]] = {}
            hashes: dict[tuple[str, str], set[str]] = {}   # (face, side) -> the comparison JSON's hashes seen
            size = 0
            copies = {name: Path(tmp) / f"{case}-{i}.db" for i, name in enumerate(sides)}
            for name, side in sides.items():
                if case == "shapes" and side != ROOT:   # written by that side's own code, in its own format
                    fill_as(side, copies[name], args.questions)
                else:
                    shutil.copy(db, copies[name])
            a, b = PAIRS[case]
            for number in range(args.rounds):
                order = list(sides) if number % 2 == 0 else list(reversed(sides))
                for name in order:
                    side, copy = sides[name], copies[name]
                    engine = python(side, ENGINE, str(copy), a, b)
                    hashes.setdefault(("engine", name), set()).add(str(engine["hash"]))
                    wall, cpu = cli(side, copy, a, b)
                    api = python(side, API, str(copy), a, b)
                    hashes.setdefault(("API", name), set()).add(str(api["hash"]))
                    size = int(api["bytes"])  # type: ignore[call-overload]
                    for face, (w, c) in {"engine": (engine["wall"], engine["cpu"]), "CLI": (wall, cpu),
                                         "API": (api["cold"]["wall"], api["cold"]["cpu"]),  # type: ignore[index]
                                         "API, kept": (api["kept"]["wall"], api["kept"]["cpu"]),  # type: ignore[index]
                                         }.items():
                        rows.setdefault((face, name), []).append(float(w))  # type: ignore[arg-type]
                        rows.setdefault((face + " CPU", name), []).append(float(c))  # type: ignore[arg-type]
                print(f"  round {number + 1} of {case} done (load average {os.getloadavg()[0]:.1f})", flush=True)
            print(f"\n{case}: 2 x {args.questions if case == 'shapes' else args.real} questions, nothing kept "
                  f"(API, kept: the second request), {args.rounds} rounds, median [min-max]; the API's body "
                  f"{size / 1e6:.1f} MB\n")
            print("| face | this checkout wall s | CPU s | reference wall s | CPU s | goal (wall) |")
            print("|---|---:|---:|---:|---:|---:|")
            for face, goal in GOALS.items():
                cells = [spread(rows[(kind, name)]) for name in sides for kind in (face, face + " CPU")]
                print(f"| {face} | {' | '.join(cells)} | < {goal} |")
            for name in sides:   # the same JSON in every run of a side: the numbers do not depend on the run
                seen = hashes[("engine", name)] | hashes[("API", name)]
                print(f"{name}: {'one JSON in every run' if len(seen) == 1 else f'{len(seen)} different JSONs'} "
                      f"(engine and API, {args.rounds} rounds)")
            every = set().union(*hashes.values())
            print(f"the comparison's JSON on both sides: "
                  f"{'the same to the last digit' if len(every) == 1 else 'DIFFERENT'}\n")


if __name__ == "__main__":
    main()
