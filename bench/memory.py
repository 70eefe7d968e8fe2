"""Memory a campaign leaves behind: RSS before, at its peak and after a campaign whose replies are long.

    python bench/memory.py [--questions 82] [--chars 199000] [--concurrency 8] [--rounds 2]

Each mode runs in a process of its own (its RSS is its own): a first campaign of two questions loads what every
campaign loads (the segmenter's dictionary, the index), then `--rounds` campaigns of the built-in dataset's
questions against a loopback model (in another process) that answers each with `--chars` characters of Chinese,
at `--concurrency`. `kept` is malloc as it was (the freed pages stay in its arenas, up to eight per core); `given
back` trims them once a campaign ended (`evalcore.runtime.memory.give_back`: malloc_trim); `given back, 2 arenas` also
limits the arenas (`evalcore.runtime.memory.limit_arenas`), which is what a campaign manager does now. """

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MB = 1 << 20
MODES = ("kept", "given back", "given back, 2 arenas")
TEXT = "退款期限是三十天内的路由器型号和欧盟消费者的撤回期"


def model_process(chars: int) -> tuple[subprocess.Popen[str], str]:
    """The loopback model in its own process: its URL."""
    code = ("import sys, time\nfrom evalcore.testing.openai_server import FakeOpenAIServer\n"
            f"reply = ({TEXT!r} * ({chars} // {len(TEXT)} + 1))[:{chars}]\n"
            "with FakeOpenAIServer(default=reply) as server:\n"
            "    print(server.base_url, flush=True)\n"
            "    sys.stdin.read()\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parent.parent)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def measure(base_url: str, questions: int, concurrency: int, rounds: int, mode: str) -> dict[str, list[float]]:
    """In this process: RSS before, peak and after each campaign (MB)."""
    from evalcore.campaigns import CampaignManager, runner
    from evalcore.campaigns import manager as managing
    from evalcore.campaigns.launching import LaunchRequest
    from evalcore.runtime import memory
    from evalcore.targets import TargetConfig

    if mode != "given back, 2 arenas":
        managing.limit_arenas = lambda arenas=2: False  # type: ignore[assignment]
    if mode == "kept":
        runner.give_back = lambda: False  # type: ignore[assignment]
    folder = Path(tempfile.mkdtemp(prefix="evalcore-memory-"))
    manager = CampaignManager(folder / "memory.db")
    config = TargetConfig.of(retriever="bm25", generator="openai", model="fake", base_url=base_url, api_key_env="",
                             max_reply_chars=max(200_000, len(TEXT) * 10))
    manager.wait(manager.launch(LaunchRequest(dataset="default", config=config, limit=2, concurrency=1, cache=False)))
    time.sleep(1.0)
    figures: dict[str, list[float]] = {"before": [], "peak": [], "after": []}
    for _ in range(rounds):
        figures["before"].append(memory.rss_bytes() / MB)
        peak, done = [0], threading.Event()
        sampler = threading.Thread(target=sample, args=(peak, done), daemon=True)
        sampler.start()
        manager.wait(manager.launch(LaunchRequest(dataset="default", config=config, limit=questions,
                                                  concurrency=concurrency, cache=False)))
        time.sleep(1.0)  # the runner's thread has ended and given back what it could
        done.set()
        sampler.join()
        figures["peak"].append(peak[0] / MB)
        figures["after"].append(memory.rss_bytes() / MB)
    manager.close()
    return figures


def sample(peak: list[int], done: threading.Event) -> None:
    """The highest RSS seen every 20 ms until done."""
    from evalcore.runtime import memory

    while not done.wait(0.02):
        peak[0] = max(peak[0], memory.rss_bytes())


def run_mode(base_url: str, args: argparse.Namespace, mode: str, concurrency: int) -> dict[str, list[float]]:
    """One mode in a fresh process: its figures."""
    command = [sys.executable, __file__, "--child", base_url, "--questions", str(args.questions), "--concurrency",
               str(concurrency), "--rounds", str(args.rounds), "--mode", mode]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print one row per mode and campaign: RSS before, peak, after (MB), after / before."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=82)
    parser.add_argument("--chars", type=int, default=199_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child")
    parser.add_argument("--mode", default=MODES[-1], choices=MODES)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.questions, args.concurrency, args.rounds, args.mode)))
        return
    model, url = model_process(args.chars)
    try:
        print("| mode | campaign | RSS before MB | peak MB | after MB | after / before | peak - before MB |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name in MODES:
            figures = run_mode(url, args, name, args.concurrency)
            for n, (before, peak, after) in enumerate(zip(figures["before"], figures["peak"], figures["after"],
                                                          strict=True), start=1):
                print(f"| {name} | {n} | {before:.0f} | {peak:.0f} | {after:.0f} | {after / before:.2f} | "
                      f"{peak - before:.0f} |", flush=True)
    finally:
        model.communicate("")


if __name__ == "__main__":
    main()
