"""Benchmark: our measures against the reference libraries, in one run, on the same inputs.

Retrieval (TREC files): 100,000 queries x 100 results -> per-query precision, recall, ndcg@3,
ndcg@10, mrr, map, for each document id shape (`--shape`, default all three: short numbers;
9 to 30 characters; both mixed in the same files). Timed as whole processes, each started with
subprocess so that imports, reading, scoring and writing all count: ours is `python -m evalcore
score --qrels Q --run R --json`; the reference is a Python process that parses both files with
pytrec_eval, evaluates and prints the results as JSON; the floor is a process that only reads
both files with pyarrow's CSV reader (`read_csv`, space delimiter, column names and types
inferred). CPU is each command's own user + system time and memory its peak resident set, both
from /usr/bin/time. The whole-process rows also run ours on the C library's malloc
(which `score` chooses, with glibc's malloc tuned to reuse freed memory) against pyarrow's
default pool (`ARROW_DEFAULT_MEMORY_POOL=mimalloc` or jemalloc, as pyarrow was built). `--load N`
instead runs ours and pytrec_eval interleaved while N CPU-bound busy loops (one per core; each
stops itself after 10 minutes at the latest) hold the cores. `--in-process` also times the three
in this process (`evalcore.cli.main` with its output captured; pytrec_eval's parse, evaluate and
`json.dumps`; pyarrow's read), which leaves out interpreter start-up and imports. `--data DIR`
keeps the generated files for the next run.
Generation: 10,000 distinct answer pairs (1,000 questions with English, French and Chinese
references, 10 system answers each) through bleu1/2/4 and rouge1/2/L, ours against sacreBLEU +
rouge-score in process: once from the same tokens (the reference libraries cannot segment
Chinese, so they get ours joined by spaces; our own tokens are cached, our n-gram profiles are
not), once from raw text with both sides tokenizing and every cache cleared.

Contenders run interleaved, one after the other in each of --rounds rounds (the machine is
shared, so a slow spell hits every side), and each cell is the median with the min-max. Both
sides' values are compared (max abs difference) so the table never reports a fast wrong answer.

    python -m bench.metrics [--queries 100000] [--depth 100] [--pairs 10000] [--rounds 5] [--only trec|text]
                            [--shape short|long|mixed ...] [--data DIR] [--load 2] [--in-process]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from evalcore import cli
from evalcore.language import text
from evalcore.metrics import bleu_rouge
from evalcore.metrics.bleu_rouge import BLEU_ORDERS, generation_scores

ROOT = Path(__file__).resolve().parent.parent
ORACLE_NAMES = {
    "precision": "set_P", "recall": "set_recall", "ndcg@3": "ndcg_cut_3",
    "ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "map": "map",
}


class Timing(NamedTuple):
    """Wall and CPU seconds of every round (CPU: user + system of the command's own process, or of
    this process for work done here), peak memory in MB (whole processes), and the result of the last one."""

    wall: list[float]
    cpu: list[float]
    result: object
    peak: list[float]


class Finished(NamedTuple):
    """What a whole-process contender printed, and its own CPU seconds and peak memory (wait4)."""

    output: str
    cpu: float
    peak_mb: float


def rounds(contenders: dict[str, Callable[[], object]], count: int,
           setup: Callable[[], None] = lambda: None) -> dict[str, Timing]:
    """Run every contender once per round, in an order that rotates from round to round."""
    names = list(contenders)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    peaks: dict[str, list[float]] = {name: [] for name in names}
    results: dict[str, object] = {}
    for number in range(count):
        for name in names[number % len(names):] + names[: number % len(names)]:
            setup()
            wall, cpu = time.perf_counter(), _cpu()
            result = contenders[name]()
            spent = _cpu() - cpu
            walls[name].append(time.perf_counter() - wall)
            if isinstance(result, Finished):  # a whole process: its own CPU, not the background load's
                peaks[name].append(result.peak_mb)
                result, spent = result.output, result.cpu
            cpus[name].append(spent)
            results[name] = result
    return {name: Timing(walls[name], cpus[name], results[name], peaks[name] or [0.0]) for name in names}


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def spread(values: list[float]) -> str:
    """`median (min-max)` in seconds."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def ratio(slow: list[float], fast: list[float]) -> str:
    return f"{statistics.median(slow) / statistics.median(fast):.2f}x"


# Each figure that has a goal, as it is printed after the table: (figure, goal, measured, met).
GOALS: list[tuple[str, str, str, str]] = []


def goal(figure: str, target: str, measured: float, met: bool | None) -> None:
    """Record a figure against its goal (medians over the rounds; None: judged against another run)."""
    GOALS.append((figure, target, f"{measured:.2f}x", "see the run without --load" if met is None
                  else "yes" if met else "no"))


def largest_difference(ours: list[dict[str, float]], expected: list[dict[str, float]]) -> float:
    """The largest absolute difference between the two sides' values (0 when they agree)."""
    return max((abs(a[name] - b[name]) for a, b in zip(ours, expected, strict=True) for name in b), default=0.0)


def _write(path: Path, columns: dict[str, pa.Array]) -> None:
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(pa.table(columns), path, write_options=options)


def _ids(prefix: str, numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(numbers), pa.string()), "")


def _padded(prefix: str, numbers: np.ndarray, width: int) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pc.utf8_lpad(pc.cast(pa.array(numbers), pa.string()), width, "0"), "")


# Document id shapes: what each number becomes (number % 3 picks the form for the shapes with three).
ID_SHAPES = {
    "short": "numbers, 1 to 7 characters (such as 3978734)",
    "long": "9 to 30 characters: clueweb09-en0000-00-0123456 (27), doc-000123456 (13), "
            "msmarco_passage_00000000123456 (30)",
    "mixed": "numbers (1-7), MED-123 (5-11) and clueweb09-en0000-00-0123456 (27) in the same files",
}


def doc_ids(shape: str, numbers: np.ndarray) -> pa.Array:
    """The document id of each number, in one of the ID_SHAPES."""
    if shape == "short":
        return pc.cast(pa.array(numbers), pa.string())
    web = _padded("clueweb09-en0000-00-", numbers, 7)
    forms = ([web, _padded("doc-", numbers, 9), _padded("msmarco_passage_", numbers, 14)] if shape == "long" else
             [pc.cast(pa.array(numbers), pa.string()), _ids("MED-", numbers), web])
    form = pa.array(numbers % 3)
    return pc.if_else(pc.equal(form, 0), forms[0], pc.if_else(pc.equal(form, 1), forms[1], forms[2]))


def _unique_per_query(query: np.ndarray, doc: np.ndarray, fresh: int) -> np.ndarray:
    """Replace repeated documents of a query with fresh ids (pytrec_eval's parser rejects repeats)."""
    repeated = pd.Series(query * (1 << 32) + doc).duplicated().to_numpy()
    doc = doc.copy()
    doc[repeated] = fresh + np.arange(np.count_nonzero(repeated))
    return doc


def write_trec(folder: Path, queries: int, depth: int, seed: int = 0, shape: str = "short") -> tuple[Path, Path]:
    """Binary qrels (1-20 judged per query, about a third relevant) and a run of `depth` per query; document ids
    in one of the ID_SHAPES. Files already in `folder` for the same arguments are reused."""
    qrels_path, run_path = folder / "qrels.txt", folder / "run.txt"
    stamp = folder / "made.json"
    made = {"queries": queries, "depth": depth, "seed": seed, "shape": shape}
    if stamp.exists() and json.loads(stamp.read_text()) == made and qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    judged = rng.integers(1, 21, queries)
    qrel_q = np.repeat(np.arange(queries), judged)
    qrel_d = _unique_per_query(qrel_q, rng.integers(0, 1_000_000, qrel_q.size), 5_000_000)
    labels = (rng.random(qrel_q.size) < 0.35).astype(np.int64)
    run_q = np.repeat(np.arange(queries), depth)
    run_d = rng.integers(0, 4_000_000, run_q.size)
    # Put judged documents at random ranks so every measure has something to count.
    starts = np.concatenate(([0], np.cumsum(judged)[:-1]))
    picks = rng.integers(0, depth, (queries, 5)) + (np.arange(queries) * depth)[:, None]
    sources = starts[:, None] + rng.integers(0, 1 << 30, (queries, 5)) % judged[:, None]
    run_d[picks.ravel()] = qrel_d[sources.ravel()]
    run_d = _unique_per_query(run_q, run_d, 9_000_000)
    rank = np.tile(np.arange(1, depth + 1), queries)
    score = (depth - rank).astype(np.float64) + 0.5
    tied = np.flatnonzero((rng.random(run_q.size) < 0.1) & (rank > 1))
    score[tied] = score[tied - 1]  # one result in ten ties with the one above it
    _write(qrels_path, {"q": _ids("q", qrel_q), "i": pa.array(np.zeros(qrel_q.size, np.int64)),
                        "d": doc_ids(shape, qrel_d), "r": pa.array(labels)})
    _write(run_path, {"q": _ids("q", run_q), "z": pa.array(["Q0"] * run_q.size), "d": doc_ids(shape, run_d),
                      "k": pa.array(rank), "s": pa.array(score), "t": pa.array(["bench"] * run_q.size)})
    stamp.write_text(json.dumps(made))
    return qrels_path, run_path


DEFAULT_POOL = pa.default_memory_pool().backend_name  # pyarrow's own choice (mimalloc or jemalloc, as it was built)
ORACLE_PROCESS = """
import json, sys, pytrec_eval
with open(sys.argv[1]) as qrels_file, open(sys.argv[2]) as run_file:
    qrels, run = pytrec_eval.parse_qrel(qrels_file), pytrec_eval.parse_run(run_file)
measures = {"set_P", "set_recall", "ndcg_cut_3", "ndcg_cut_10", "recip_rank", "map"}
print(json.dumps(pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)))
"""
FLOOR_PROCESS = """
import sys, pyarrow.csv as pacsv
options = pacsv.ReadOptions(autogenerate_column_names=True), pacsv.ParseOptions(delimiter=" ")
print(sum(pacsv.read_csv(path, *options).num_rows for path in sys.argv[1:]))
"""


TIME = Path("/usr/bin/time")


def process(command: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> Callable[[], Finished]:
    """A contender that runs `command` (with these environment variables added): what it printed, and its own CPU
    time and peak memory (a background load's CPU, also this process's children, is not counted).

    The command runs under /usr/bin/time when there is one: a child's peak memory (ru_maxrss) starts at its
    parent's peak when it is forked, so measured directly from this process (which made the files) every
    contender would report at least this process's own peak; a grandchild of /usr/bin/time starts from nothing.
    """
    def run() -> Finished:
        with tempfile.TemporaryFile("w+") as out, tempfile.NamedTemporaryFile("r") as report:
            wrapped = [str(TIME), "-f", "%U %S %M", "-o", report.name, *command] if TIME.exists() else command
            child = subprocess.Popen(wrapped, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})})
            _, status, usage = os.wait4(child.pid, 0)
            if os.waitstatus_to_exitcode(status):
                raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), command)
            out.seek(0)
            if TIME.exists():
                user, system, peak_kb = report.read().split()[-3:]
                return Finished(out.read(), float(user) + float(system), float(peak_kb) / 1024)
            return Finished(out.read(), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)

    return run


BUSY_LOOP = "import sys, time\nend = time.time() + float(sys.argv[1])\nwhile time.time() < end:\n    pass\n"


@contextlib.contextmanager
def background_load(processes: int, seconds: float) -> Iterator[None]:
    """`processes` CPU-bound busy loops (one per core: a load the machine's cores must share), each stopping itself
    after `seconds` at the latest; stopped by their ids when the block ends."""
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(seconds)]) for _ in range(processes)]
    try:
        yield
    finally:
        for loop in loops:
            loop.terminate()
        for loop in loops:
            loop.wait()


def in_process(command: list[str]) -> Callable[[], str]:
    """A contender that runs `python -c SCRIPT ARGS...` or `python -m evalcore ARGS...` here."""
    def run() -> str:
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            if command[1] == "-m":
                cli.main(command[3:])
            else:
                sys.argv = ["-c", *command[3:]]
                exec(command[2], {"__name__": "__bench__"})  # noqa: S102 - the scripts above, not input
        return output.getvalue()

    return run


def trec_files(data: Path | None, folder: Path, queries: int, depth: int, shape: str) -> tuple[str, str]:
    """The qrels and run of one id shape, made in `data` (reused from a previous run) or in `folder`."""
    where = (data or folder) / f"{shape}-{queries}x{depth}"
    return tuple(str(path) for path in write_trec(where, queries, depth, shape=shape))  # type: ignore[return-value]


def retrieval_rows(queries: int, depth: int, count: int, shapes: list[str], data: Path | None, load: int,
                   in_process_too: bool) -> list[tuple[str, ...]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for shape in shapes:
            qrels, run = trec_files(data, Path(folder), queries, depth, shape)
            ours = [sys.executable, "-m", "evalcore", "score", "--qrels", qrels, "--run", run, "--json"]
            commands = {
                "ours": ours,
                "pytrec_eval": [sys.executable, "-c", ORACLE_PROCESS, qrels, run],
                "floor": [sys.executable, "-c", FLOOR_PROCESS, qrels, run],
            }
            label = f"TREC files, {queries:,} queries x {depth} results, {shape} ids, six measures"
            if load:
                # ours and pytrec_eval interleaved while `load` busy loops hold the cores (at most 10 minutes)
                with background_load(load, 600):
                    timings = rounds({name: process(commands[name]) for name in ("ours", "pytrec_eval")}, count)
                rows += _load_rows(f"{label}, whole process, under {load} CPU-bound busy loops", timings)
                continue
            # Whole processes, also ours on pyarrow's own default pool instead of the C library's malloc it chooses.
            timings = rounds({name: process(command) for name, command in commands.items()}
                             | {"pyarrow pool": process(ours, {"ARROW_DEFAULT_MEMORY_POOL": DEFAULT_POOL})}, count)
            rows += _trec_rows(f"{label}, whole process", timings)
            name = f"{label}, whole process: CPU, the C library's malloc (ours) against pyarrow's {DEFAULT_POOL}"
            rows.append((name, spread(timings["ours"].cpu), spread(timings["pyarrow pool"].cpu),
                         f"{ratio(timings['pyarrow pool'].cpu, timings['ours'].cpu)} faster", ""))
            share = statistics.median(timings["ours"].peak) / statistics.median(timings["pytrec_eval"].peak)
            goal(f"{label}, whole process: peak memory, ours / pytrec_eval's", "< 1x", share, share < 1)
            rows.append((f"{label}, whole process: peak memory MB (ours / pytrec_eval)", _mb(timings["ours"].peak),
                         _mb(timings["pytrec_eval"].peak), f"{share:.2f} of pytrec_eval's",
                         f"floor {_mb(timings['floor'].peak)}; {DEFAULT_POOL} {_mb(timings['pyarrow pool'].peak)}"))
            if in_process_too:
                timings = rounds({name: in_process(command) for name, command in commands.items()}, count)
                rows += _trec_rows(f"{label}, in process", timings)
    return rows


def _mb(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def _agreement(timings: dict[str, Timing]) -> float:
    ours = json.loads(str(timings["ours"].result))["queries"]
    oracle = json.loads(str(timings["pytrec_eval"].result))
    return largest_difference(
        [{name: ours[qid][name] for name in ORACLE_NAMES} for qid in oracle],
        [{name: oracle[qid][code] for name, code in ORACLE_NAMES.items()} for qid in oracle],
    )


def _load_rows(label: str, timings: dict[str, Timing]) -> list[tuple[str, ...]]:
    worst = _agreement(timings)
    cpu = statistics.median(timings["pytrec_eval"].cpu) / statistics.median(timings["ours"].cpu)
    goal(f"{label}: CPU, pytrec_eval's / ours", "no lower than without the load", cpu, None)
    rows = []
    for kind in ("wall", "CPU"):
        ours, oracle = (getattr(timings[name], kind.lower()) for name in ("ours", "pytrec_eval"))
        rows.append((f"{label} (vs pytrec_eval): {kind}", spread(ours), spread(oracle), f"{ratio(oracle, ours)} faster",
                     f"{worst:.1e}" if kind == "wall" else ""))
    return rows


def _trec_rows(label: str, timings: dict[str, Timing]) -> list[tuple[str, ...]]:
    worst = _agreement(timings)
    ours_cpu, oracle_cpu, floor_cpu = (statistics.median(timings[name].cpu)
                                       for name in ("ours", "pytrec_eval", "floor"))
    goal(f"{label}: CPU, pytrec_eval's / ours", ">= 5x", oracle_cpu / ours_cpu, oracle_cpu / ours_cpu >= 5)
    goal(f"{label}: CPU, ours / the read floor's", "<= 1.1x", ours_cpu / floor_cpu, ours_cpu / floor_cpu <= 1.1)
    rows = []
    for kind in ("wall", "CPU"):
        ours, oracle, floor = (getattr(timings[name], kind.lower()) for name in ("ours", "pytrec_eval", "floor"))
        rows.append((f"{label} (vs pytrec_eval): {kind}", spread(ours), spread(oracle),
                     f"{ratio(oracle, ours)} faster", f"{worst:.1e}" if kind == "wall" else ""))
        rows.append((f"{label} (vs the pyarrow read floor): {kind}", spread(ours), spread(floor),
                     f"{ratio(ours, floor)} the floor", ""))
    return rows


SENTENCES = [
    "The refund window is 30 days after delivery, and the fee is 3.5 euros per parcel.",
    "Our router's default address is 192.168.8.1 and the admin password is printed on the label.",
    "The thermostat keeps the room at 21.5 degrees during the day and 18 at night.",
    "Le délai de rétractation est de 14 jours calendaires à compter de la livraison.",
    "La garantie légale de conformité couvre le café, la machine et ses accessoires pendant deux ans.",
    "L'élève a obtenu 15,5 sur 20 à l'examen de mathématiques de fin d'année.",
    "路由器的默认地址是192.168.8.1，可以在浏览器中打开管理页面。",
    "退货期限为收货后三十天，运费由买家承担。",
    "研究人员发现这种模型在中文问答任务上的表现明显优于基线系统。",
]


def _perturb(units: list[str], joiner: str, rng: random.Random) -> str:
    """A system answer: the reference with about a fifth of its words dropped, maybe one swapped."""
    kept = [unit for unit in units if rng.random() > 0.2]
    if kept and rng.random() < 0.5:
        kept[rng.randrange(len(kept))] = rng.choice(units)
    return joiner.join(kept)


def answer_pairs(count: int, seed: int = 0) -> list[tuple[str, list[str]]]:
    """`count` distinct (answer, references) pairs: 10 system answers per question, references shared."""
    rng = random.Random(seed)
    pairs: dict[tuple[str, tuple[str, ...]], None] = {}
    for question in range(count // 10):
        # The question's number makes every reference set distinct (and gives numbers to score).
        reference = f"{SENTENCES[question % len(SENTENCES)]} {question}"
        joiner = " " if " " in reference else ""  # Chinese has no spaces: perturb characters
        units = reference.split(" ") if joiner else list(reference)
        references = (reference,) + ((_perturb(units, joiner, rng),) if rng.random() < 0.5 else ())
        for _ in range(200):  # a few perturbations repeat: draw until the question has 10 distinct
            if len(pairs) == (question + 1) * 10:
                break
            pairs[(_perturb(units, joiner, rng), references)] = None
    return [(hyp, list(refs)) for hyp, refs in pairs]


def _reference_scores(joined: list[tuple[str, list[str]]]) -> list[dict[str, float]]:
    """sacreBLEU (three orders) and rouge-score on space-joined tokens."""
    bleus = {name: BLEU(tokenize="none", smooth_method="none", max_ngram_order=n) for name, n in BLEU_ORDERS.items()}
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=_Whitespace())
    results = []
    for hyp, refs in joined:
        row = {name: bleu.sentence_score(hyp, refs).score / 100 for name, bleu in bleus.items()}
        best = scorer.score_multi(refs, hyp)
        row.update(rouge1=best["rouge1"].fmeasure, rouge2=best["rouge2"].fmeasure, rougel=best["rougeL"].fmeasure)
        results.append(row)
    return results


def _joined(pairs: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """Our `default` tokens joined by spaces: the input the reference libraries need."""
    return [(" ".join(text.tokenize(hyp)), [" ".join(text.tokenize(r)) for r in refs]) for hyp, refs in pairs]


def _cold() -> None:
    text.clear_caches()
    bleu_rouge.clear_caches()


def generation_rows(count: int, count_rounds: int) -> list[tuple[str, str, str, str, str]]:
    pairs = answer_pairs(count)
    text.tokenize("预热")  # load jieba's dictionary once, outside every timing
    joined = _joined(pairs)  # leaves every text's tokens in the cache for the first row
    warm = rounds({"ours": lambda: [generation_scores(h, r) for h, r in pairs],
                   "reference": lambda: _reference_scores(joined)}, count_rounds, bleu_rouge.clear_caches)
    cold = rounds({"ours": lambda: [generation_scores(h, r) for h, r in pairs],
                   "reference": lambda: _reference_scores(_joined(pairs))}, count_rounds, _cold)
    worst = largest_difference(warm["ours"].result, warm["reference"].result)  # type: ignore[arg-type]
    label = f"BLEU-1/2/4 + ROUGE-1/2/L, {len(pairs):,} distinct answer pairs"
    rows = []
    for name, timing in ((f"{label}, same tokens given to both", warm),
                         (f"{label} from raw text, both tokenizing (cold caches)", cold)):
        ours, reference = timing["ours"], timing["reference"]
        rows.append((f"{name}: wall", spread(ours.wall), spread(reference.wall),
                     f"{ratio(reference.wall, ours.wall)} faster", f"{worst:.1e}"))
        rows.append((f"{name}: CPU", spread(ours.cpu), spread(reference.cpu),
                     f"{ratio(reference.cpu, ours.cpu)} faster", ""))
    faster = statistics.median(warm["reference"].cpu) / statistics.median(warm["ours"].cpu)
    goal(f"{label}, same tokens: CPU, the references' / ours", ">= 5x", faster, faster >= 5)
    return rows


class _Whitespace:
    def tokenize(self, value: str) -> list[str]:
        return value.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5, help="rounds of interleaved runs (median, min-max)")
    parser.add_argument("--only", choices=("trec", "text"), help="run one group of rows")
    parser.add_argument("--shape", action="append", choices=list(ID_SHAPES),
                        help="document id shape (repeatable; default: all three): "
                        + "; ".join(f"{name}: {text}" for name, text in ID_SHAPES.items()))
    parser.add_argument("--data", type=Path, help="keep the generated TREC files here and reuse them")
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="run ours and pytrec_eval interleaved under N CPU-bound busy loops (N = cores: 2)")
    parser.add_argument("--in-process", action="store_true", help="also time the TREC contenders in this process")
    args = parser.parse_args()
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # one warning per sentence otherwise
    rows = []
    if args.only in (None, "trec"):
        rows += retrieval_rows(args.queries, args.depth, args.rounds, args.shape or list(ID_SHAPES), args.data,
                               args.load, args.in_process)
    if args.only in (None, "text"):
        rows += generation_rows(args.pairs, args.rounds)
    print(f"{args.rounds} rounds, seconds as median (min-max), python {sys.version.split()[0]}\n")
    print("| workload | ours (s) | reference (s) | ratio | max abs difference |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print("\nreference: pytrec_eval (parse_qrel, parse_run, RelevanceEvaluator) or pyarrow's read_csv alone")
    print("for TREC files; sacreBLEU BLEU(tokenize='none', smooth_method='none') x3 + rouge-score for text.")
    print("\n| figure (median over the rounds) | goal | measured | met |")
    print("|---|---|---:|---|")
    for row in GOALS:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
