"""Campaigns on a Dask cluster: workers answer, this machine scores and stores.

The configuration snapshot and the corpus go to every worker once (scattered, broadcast). Each
worker builds the target once per configuration and corpus (the knowledge-base index from its own
disk cache, EVALCORE_INDEX_DIR) and answers questions in batches, each question under the time
limit; a batch comes back as what the target answered (`Asked`). The campaign's machine scores
and judges those replies with the local executor's own code (`settle`) and the runner writes
them, so both executors store the same rows. Dask runs a dead worker's batches again elsewhere;
the runner's writer keeps each question once.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from evalcore.campaigns.answering import Asked, Plan, ask, error_text, settle
from evalcore.campaigns.executors import WAKE_S, InFlight, Tracked
from evalcore.campaigns.records import Outcome, Question
from evalcore.errors import EvalError
from evalcore.targets import Target, TargetConfig, build_target
from evalcore.targets.allowed import scheduler_choice
from evalcore.targets.knowledge import PassageLike, Progress, corpus_hash, index_dir
from evalcore.targets.target_config import scheduler_problem

CONNECT_S = 5.0  # a scheduler that does not answer within this refuses the launch
BATCH = 16  # questions per task at most: enough to make a task's own cost small beside its questions'
TASKS_PER_THREAD = 2  # tasks queued per worker thread, so a thread never waits for the next batch
KEPT_TARGETS = 2  # targets a worker keeps built (campaigns of other configurations in turn)


@dataclass
class Cluster:
    """A connection to a Dask scheduler and how many worker threads it had when connected."""

    client: Any  # distributed.Client (imported only when a campaign runs on a cluster)
    address: str
    threads: int

    @property
    def concurrency(self) -> int:
        """Questions in flight when none is asked for: full batches, queued twice over on every thread."""
        return TASKS_PER_THREAD * self.threads * BATCH

    def close(self) -> None:
        """Disconnect (the scheduler forgets this client's tasks and data)."""
        self.client.close()


def scheduler_address(config: TargetConfig) -> str:
    """The configuration's scheduler (an address, or the name of one in EVALCORE_DASK_SCHEDULERS), else
    EVALCORE_DASK_SCHEDULER; EvalError when neither is a valid address."""
    address = config.execution.scheduler or os.environ.get("EVALCORE_DASK_SCHEDULER", "").strip()
    where = "scheduler" if config.execution.scheduler else "EVALCORE_DASK_SCHEDULER"
    if not address:
        raise EvalError("the dask executor needs a scheduler address", where="scheduler",
                        fix='set scheduler = "tcp://HOST:PORT" (--scheduler), or EVALCORE_DASK_SCHEDULER')
    address = scheduler_choice(address) if config.execution.scheduler else address
    problem = scheduler_problem(address)
    if problem or not address.startswith("tcp://"):
        raise EvalError(problem or f"expected a Dask scheduler address tcp://HOST:PORT, found {address!r}",
                        where=where)
    return address


def connect(config: TargetConfig) -> Cluster:
    """Connect to the configuration's scheduler; EvalError at once when it cannot be reached or has no worker."""
    address = scheduler_address(config)
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    try:
        # A plain TCP connect first: nothing listening is known in milliseconds, not after the client's retries.
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S).close()
        from distributed import Client

        client: Any = Client(address, timeout=CONNECT_S, set_as_default=False)  # type: ignore[no-untyped-call]
    except ImportError:
        raise EvalError("the dask executor needs the dask[distributed] package", where="executor",
                        fix="pip install -r requirements.txt") from None
    except (OSError, TimeoutError) as error:
        raise EvalError(f"cannot reach the Dask scheduler ({error_text(error)})", where="scheduler", found=address,
                        fix="start one with `dask scheduler` and workers with `dask worker ADDRESS`, "
                            "or check the address") from None
    threads = sum(client.nthreads().values())
    if not threads:
        client.close()
        raise EvalError("the Dask scheduler has no worker", where="scheduler", found=address,
                        fix=f"start workers with `dask worker {address}`")
    return Cluster(client, address, threads)


@contextmanager
def cluster_for(config: TargetConfig, ready_made: bool) -> Iterator[Cluster | None]:
    """The cluster a launch runs on (None: this machine), disconnected again when the launch fails."""
    if config.execution.executor != "dask":
        yield None
        return
    if ready_made:
        raise EvalError("a ready-made target object runs only on this machine", where="executor",
                        fix='build it from its configuration, or run with executor = "local"')
    cluster = connect(config)
    try:
        yield cluster
    except BaseException:
        cluster.close()
        raise


def batch_size(concurrency: int, threads: int) -> int:
    """Questions per task: enough tasks to queue TASKS_PER_THREAD on every thread, at most BATCH each."""
    return max(1, min(BATCH, concurrency // (TASKS_PER_THREAD * threads)))


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker receives once: the configuration snapshot and the corpus, under one key."""

    key: str  # the configuration's and the corpus's hashes: a worker keeps one target per key
    config: dict[str, Any]
    passages: tuple[PassageLike, ...]


_TARGETS: OrderedDict[str, Target] = OrderedDict()  # on a worker: the targets built, newest last
_TARGETS_LOCK = threading.Lock()



def worker_target(setup: WorkerSetup) -> Target:
    """This worker's target for the setup, built and checked once (its index from this worker's disk cache)."""
    with _TARGETS_LOCK:
        target = _TARGETS.get(setup.key)
        if target is None:
            target = build_target(TargetConfig.from_dict(setup.config), cache_dir=index_dir())
            target.check()
            target.prepare(setup.passages)
            _TARGETS[setup.key] = target
            while len(_TARGETS) > KEPT_TARGETS:
                _TARGETS.popitem(last=False)
        _TARGETS.move_to_end(setup.key)
        return target


def prepare_worker(setup: WorkerSetup) -> None:
    """Task run once per worker before the questions: build the target (errors fail the campaign's setup)."""
    worker_target(setup)


def answer_batch(setup: WorkerSetup, questions: tuple[Question, ...], time_limit: float) -> list[Asked]:
    """Task: ask the target each question in turn, each under the time limit."""
    target = worker_target(setup)
    return [ask_within(target, question, time_limit) for question in questions]


def ask_within(target: Target, question: Question, time_limit: float) -> Asked:
    """Ask on a thread of its own; past the limit the question is given up (a thread cannot be killed)."""
    box: list[Asked] = []
    thread = threading.Thread(target=lambda: box.append(ask(target, question)), daemon=True,
                              name=f"question-{question.position}")
    thread.start()
    thread.join(time_limit)
    return box[0] if box else Asked.timed_out(time_limit)


MISSING_EVALCORE = "No module named 'evalcore'"


def worker_problem(error: BaseException, what: str, where: str = "") -> EvalError:
    """A cluster's failure as a readable error; a scheduler or worker without evalcore is told how to fix it (the
    scheduler unpickles the tasks too)."""
    if MISSING_EVALCORE in str(error) or MISSING_EVALCORE in repr(error):
        return EvalError(f"{what}: the Dask scheduler or a worker cannot import evalcore", where=where or None,
                         fix="install the project where the scheduler and every worker run, at the launcher's "
                             "version: pip install -r requirements.txt && pip install -e .")
    return EvalError(f"{what}: {error_text(error)}", where=where or None)


class DaskExecutor(Tracked):
    """Batches of questions answered on a Dask cluster; their replies scored here, each on its own thread."""

    def __init__(self, plan: Plan, cluster: Cluster) -> None:
        self.plan, self.cluster = plan, cluster
        self.in_flight = InFlight(plan.options.time_limit, plan.calls)
        self.batch = batch_size(plan.options.concurrency, cluster.threads)
        config = plan.target.config
        self.setup = WorkerSetup(f"{config.config_hash()[:16]}-{corpus_hash(plan.passages)[:16]}", config.to_dict(),
                                 tuple(plan.passages))
        self._token = f"evalcore-{plan.campaign_id}-{secrets.token_hex(4)}"  # task keys of this session
        self._scattered: Any = None  # the setup's future, once on the workers
        self._batches: dict[str, tuple[Any, tuple[Question, ...]]] = {}  # task key -> (future, its questions)
        self._lock = threading.Lock()

    def prepare(self, progress: Progress) -> None:
        """Send the setup to every worker once, and have each build its target (a failure fails the setup)."""
        client = self.cluster.client
        try:
            self._scattered = client.scatter(self.setup, broadcast=True, hash=False)
        except Exception as error:  # noqa: BLE001 - a worker could not take the setup: say why and how to fix it
            raise worker_problem(error, "the campaign's setup could not be sent to the Dask workers") from None
        workers = sorted(client.nthreads())
        futures = {client.submit(prepare_worker, self._scattered, key=f"{self._token}-prepare-{number}",
                                 workers=[worker], allow_other_workers=True, pure=False): worker
                   for number, worker in enumerate(workers)}
        while True:
            done = [future for future in futures if future.done()]
            # Raises when the campaign is cancelled meanwhile.
            progress(len(done), len(futures), "preparing the workers")
            for future in done:
                if future.status == "error":
                    raise worker_problem(future.exception(), "the target could not be built on a Dask worker",
                                         futures[future])
                if future.status != "finished":
                    raise EvalError(f"the target could not be built on a Dask worker: its task was {future.status}",
                                    where=futures[future])
            if len(done) == len(futures):
                return
            time.sleep(WAKE_S)

    def room(self) -> int:
        """Free slots under the concurrency, in whole batches."""
        free = self.plan.options.concurrency - len(self.in_flight)
        return free // self.batch * self.batch

    def submit(self, questions: Sequence[Question]) -> None:
        """One task per batch; each question's time limit runs on the worker, from when it is asked."""
        for start in range(0, len(questions), self.batch):
            batch = tuple(questions[start:start + self.batch])
            self.in_flight.wait_for(question.position for question in batch)
            key = f"{self._token}-{batch[0].position}"
            future = self.cluster.client.submit(answer_batch, self._scattered, batch, self.plan.options.time_limit,
                                                key=key, pure=False)
            with self._lock:
                self._batches[key] = (future, batch)
            future.add_done_callback(self._arrived)

    def _arrived(self, future: Any) -> None:
        """A batch came back (on Dask's callback thread): score each reply on its own thread, within its time left."""
        with self._lock:
            entry = self._batches.pop(future.key, None)
        if entry is None:  # given up
            return
        batch = entry[1]
        try:
            answers: list[Asked] = future.result()
        except BaseException as error:  # noqa: BLE001 - the cluster lost the batch (cancelled, workers kept dying)
            for question in batch:
                self.in_flight.put(question.position,
                                   Outcome.failed(f"the Dask cluster did not answer: {error_text(error)}", None))
            return
        limit = self.plan.options.time_limit
        for question, asked in zip(batch, answers, strict=True):
            if asked.reply is None:
                self.in_flight.put(question.position, settle(self.plan, question, asked))
            else:
                self.in_flight.run(question.position, partial(settle, self.plan, question, asked),
                                   max(limit - asked.latency_s, 0.0))

    def cancel(self) -> None:
        """Cancel every batch not back yet; replies being scored here finish."""
        with self._lock:
            entries = list(self._batches.values())
            self._batches.clear()
        self.in_flight.drop(question.position for _, batch in entries for question in batch)
        if entries:
            self.cluster.client.cancel([future for future, _ in entries])

    def close(self) -> None:
        """Cancel what is left, disconnect, and close the connections of the judges asked here."""
        self.cancel()
        self.cluster.close()
        self.in_flight.close()
