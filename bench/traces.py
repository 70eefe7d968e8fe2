"""Traces bench: import throughput of an OTLP JSON trace file, and the receiver's throughput over HTTP on loopback,
each against a reference doing less in the same run.

    python bench/traces.py [--traces 3000] [--rounds 3] [--batch 170] [--data DIR]

- Import: `--traces` answers shaped like a team's (questions, passages and reference answers of the shared
  realistic dataset generator: English, French and Chinese, passages of very different lengths; five retrieved
  documents each, metadata of two releases), written as one OTLP JSON file by the OpenTelemetry SDK with
  OpenInference's attributes (3 spans a trace). `import_file` into a fresh SQLite store (parse, check every span,
  group, redact, store in one transaction) against protobuf's own OTLP JSON reader alone on the same text
  (`json_format.Parse` into an ExportTraceServiceRequest: reading, nothing checked nor stored).
- Receiver: the same number of traces posted as OTLP/HTTP JSON requests of `--batch` traces (the SDK's default batch
  is 512 spans: about 170 traces) one after another to `python -m evalcore serve` on loopback with a send_traces key,
  against the same requests posted to a bare FastAPI app on uvicorn that reads the body as JSON and answers `{}`
  (the HTTP and framework floor). New trace ids every round (the SDK makes them), so nothing is a duplicate.

Interleaved rounds; the median with min-max of traces per second. Generated inputs go to --data (default a
temporary folder), never to the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.store import Store
from evalcore.telemetry import import_file
from evalcore.testing.otel_traces import Answered, otlp_json

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = Path("/work/shared/bench/realistic_dataset.py")
BARE_APP = '''
import json
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
app = FastAPI()

@app.post("/v1/traces")
async def traces(request: Request) -> JSONResponse:
    json.loads(await request.body())
    return JSONResponse({})
'''


def answers(data: Path, count: int, seed: int) -> list[Answered]:
    """`count` answers from the realistic dataset: each question with its reference answer (or a passage's first
    sentence) and five documents, its labelled passages first."""
    import pyarrow.parquet as pq

    queries = pq.read_table(data / "queries.parquet").to_pylist()
    corpus = {row["id"]: row["text"] for row in pq.read_table(data / "corpus.parquet").to_pylist()}
    texts = {row["id"]: row["text"] for row in pq.read_table(data / "answers.parquet").to_pylist()}
    answer_of = {row["qid"]: texts[row["aid"]] for row in pq.read_table(data / "qas.parquet").to_pylist()}
    labelled: dict[int, list[int]] = {}
    for row in pq.read_table(data / "qrels.parquet").to_pylist():
        labelled.setdefault(row["qid"], []).append(row["pid"])
    rng, pids = random.Random(seed), list(corpus)
    found = []
    for i in range(count):
        query = queries[i % len(queries)]
        chosen = (labelled.get(query["id"], []) + rng.sample(pids, 5))[:5]
        answer = answer_of.get(query["id"]) or corpus[chosen[0]].split(".")[0]
        documents = [(str(pid), corpus[pid], round(rng.random(), 4)) for pid in chosen]
        found.append(Answered(query["text"], answer, documents,
                              {"release": ("v1", "v2")[i % 2], "segment": rng.choice(("free", "pro"))},
                              start_ns=1_796_000_000 * 10**9 + i * 60 * 10**9))
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def server(command: list[str], url: str, cwd: Path) -> Iterator[None]:
    import httpx

    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        yield
    finally:
        process.terminate()
        process.wait(30)


def post_all(url: str, bodies: list[bytes], key: str) -> float:
    """Post the requests one after another; seconds taken. Any answer but 200 stops the bench."""
    import httpx

    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    with httpx.Client(timeout=120) as client:
        start = time.perf_counter()
        for body in bodies:
            response = client.post(url, content=body, headers=headers)
            if response.status_code != 200 or response.json():
                raise SystemExit(f"{url}: {response.status_code} {response.text[:300]}")
        return time.perf_counter() - start


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=170)
    parser.add_argument("--data", type=Path)
    args = parser.parse_args()
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    work = args.data or Path(tempfile.mkdtemp(prefix="bench-traces-"))
    dataset = work / "dataset"
    if not (dataset / "queries.parquet").is_file():
        subprocess.run([sys.executable, str(GENERATOR), str(dataset), "--questions", "2000", "--passages", "20000"],
                       check=True, stdout=subprocess.DEVNULL)
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
    files, batches = [], []
    for round_number in range(args.rounds):
        items = answers(dataset, args.traces, round_number)
        path = work / f"traces-{round_number}.json"
        path.write_text(json.dumps(otlp_json(items)), encoding="utf-8")
        files.append(path)
        batches.append([json.dumps(otlp_json(items[i:i + args.batch])).encode()
                        for i in range(0, len(items), args.batch)])
    size = files[0].stat().st_size
    print(f"{args.traces} traces a round ({3 * args.traces} spans, {size / 2**20:.1f} MB of OTLP JSON)", flush=True)

    ours, reference = [], []
    for round_number, path in enumerate(files):
        text = path.read_text(encoding="utf-8")
        start = time.perf_counter()
        json_format.Parse(text, ExportTraceServiceRequest())
        reference.append(args.traces / (time.perf_counter() - start))
        with Store(work / f"import-{round_number}.db") as store:
            start = time.perf_counter()
            report = import_file(store, path)
            ours.append(args.traces / (time.perf_counter() - start))
        assert report.stored == args.traces and not report.rejected, report.lines()[:3]
    print(f"import: evalcore {spread(ours)} traces/s; protobuf's OTLP JSON reader alone {spread(reference)} "
          f"traces/s", flush=True)

    db = work / "serve.db"
    key = subprocess.run([sys.executable, "-m", "evalcore", "keys", "create", "--tenant", "acme", "--role", "viewer",
                          "--capability", "send_traces", "--db", str(db)], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    secret = next(word for word in key.split() if word.startswith("ek_"))
    (work / "bare_app.py").write_text(BARE_APP, encoding="utf-8")
    ours_port, bare_port = free_port(), free_port()
    ours_http, bare_http = [], []
    with server([sys.executable, "-m", "evalcore", "serve", "--port", str(ours_port), "--db", str(db)],
                f"http://127.0.0.1:{ours_port}/api/v1/health", ROOT), \
            server([sys.executable, "-m", "uvicorn", "bare_app:app", "--port", str(bare_port), "--log-level",
                    "warning"], f"http://127.0.0.1:{bare_port}/docs", work):
        for bodies in batches:
            bare_http.append(args.traces / post_all(f"http://127.0.0.1:{bare_port}/v1/traces", bodies, secret))
            ours_http.append(args.traces / post_all(f"http://127.0.0.1:{ours_port}/v1/traces", bodies, secret))
    with Store(db) as store:
        stored = store.read("SELECT COUNT(*) FROM traces")[0][0]
    assert stored == args.traces * args.rounds, stored
    print(f"receiver ({len(batches[0])} requests of {args.batch} traces a round): evalcore {spread(ours_http)} "
          f"traces/s; a bare FastAPI app reading the JSON {spread(bare_http)} traces/s", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f} (1 min)")
    if args.data is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
