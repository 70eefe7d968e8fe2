"""`python -m evalcore worker`: a process that only claims queued campaigns from the store and runs them."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from types import FrameType

from evalcore.cli import SUMMARIES
from evalcore.cli._common import Commands, add_db_option, positive_int
from evalcore.store import pid_alive, redact


def add_cap_options(parser: argparse.ArgumentParser) -> None:
    """--max-campaigns and --max-per-tenant: how many queued campaigns this process claims and runs at once."""
    parser.add_argument("--max-campaigns", type=positive_int, metavar="N",
                        help="campaigns this process runs at once (default: $EVALCORE_MAX_CAMPAIGNS, else 2)")
    parser.add_argument("--max-per-tenant", type=positive_int, metavar="N",
                        help="campaigns of one tenant running at once over every process on the store "
                             "(default: $EVALCORE_MAX_CAMPAIGNS_PER_TENANT, else 4)")


def register(commands: Commands) -> None:
    """Add `worker`."""
    parser = commands.add_parser("worker", help=SUMMARIES["worker"])
    add_db_option(parser)
    add_cap_options(parser)
    parser.add_argument("--exit-with", type=positive_int, metavar="PID",
                        help="end when this process ends (the dashboard supervising its worker)")
    parser.add_argument("--nice", type=positive_int, metavar="N",
                        help="lower this process's priority by N")
    parser.add_argument("--background", action="store_true",
                        help="run only on the CPU time other processes leave (Linux's idle scheduling class, "
                             "elsewhere nice 19): the dashboard's worker, so that its pages come first")
    parser.set_defaults(handler=_work)


def serve_queue(args: argparse.Namespace) -> None:
    """Have this process's manager claim queued campaigns (after each, compared with the previous one) and queued
    jobs (the pairwise judge's, test-set generation)."""
    from evalcore.campaigns import get_manager
    from evalcore.campaigns.listing import keep_ended_figures
    from evalcore.compare import compare_with_previous, pairwise_job
    from evalcore.testsets.generation_job import TESTSET

    manager = get_manager(args.db, create=False)  # a worker of a store nobody made is a typo
    manager.after_each(keep_ended_figures)
    manager.after_each(compare_with_previous)
    manager.serve_queue(args.max_campaigns, args.max_per_tenant)
    manager.serve_jobs(pairwise_job.PAIRWISE, TESTSET)


def to_background() -> None:
    """Give this process only the CPU time that other processes leave: SCHED_IDLE where the system has it (a page
    being built takes the CPU at once, whatever this process's threads were doing), else the lowest priority."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(19)


def _work(args: argparse.Namespace) -> int:
    from evalcore.campaigns import get_manager

    if args.nice:
        os.nice(args.nice)
    if args.background:
        to_background()
    stop = threading.Event()

    def finish(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    serve_queue(args)
    print(f"worker: claiming campaigns from {redact(get_manager(args.db).store.location)}", flush=True)
    while not stop.wait(1.0):
        if args.exit_with and not pid_alive(args.exit_with):
            break
    # The campaigns running here are cancelled, to be resumed: they go back to the queue for another worker.
    get_manager(args.db).close()
    return 0
