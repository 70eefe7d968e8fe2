"""A bounded soak on loopback: many campaigns at once against a trickling agent (every question passes its time
limit) and an agent of 199,000-character replies, in one long-lived manager (as a server holds one), with this
process's threads, sockets and memory measured before and after (tests/test_soak.py checks them;
bench/soak.py prints them)."""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from evalcore.campaigns import CampaignManager
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig
from evalcore.testing.agent import LoopbackAgent

LONG_REPLY = 199_000  # characters: just under the default max_reply_chars


@dataclass(frozen=True)
class Levels:
    """What this process holds: threads, open sockets, resident memory (MB)."""

    threads: int
    sockets: int
    rss_mb: float


def levels() -> Levels:
    """This process's threads, sockets (from /proc/self/fd) and resident memory (from /proc/self/status)."""
    fds = Path("/proc/self/fd")
    sockets = 0
    for fd in os.listdir(fds):
        try:
            sockets += os.readlink(fds / fd).startswith("socket:")
        except OSError:  # closed meanwhile
            continue
    rss = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmRSS:"))
    return Levels(threading.active_count(), sockets, int(rss.split()[1]) / 1024)


def settled(start: Levels | None = None, seconds: float = 30.0) -> Levels:
    """The levels once threads and sockets stopped changing for a second (and are back to `start`'s, when
    given; at most `seconds`), freed memory handed back to the system first (the allocator keeps what many
    threads freed in their arenas until asked)."""
    deadline, calm, last = time.monotonic() + seconds, 0, levels()
    while calm < 10 and time.monotonic() < deadline:
        time.sleep(0.1)
        now = levels()
        back = start is None or (now.threads <= start.threads and now.sockets <= start.sockets)
        calm = calm + 1 if back and (now.threads, now.sockets) == (last.threads, last.sockets) else 0
        last = now
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return levels()


def long_reply() -> str:
    """199,000 characters of words (many distinct) and Chinese text."""
    return " ".join(f"refund{i % 7919} 退款期限" for i in range(LONG_REPLY // 10))[:LONG_REPLY]


class Soak:
    """Both agents and one manager, up for as many rounds as wanted."""

    def __init__(self, db: Path) -> None:
        self.trickling = LoopbackAgent(answer="x" * 10_000, trickle=0.01)  # 100 s a reply
        self.long = LoopbackAgent(answer=long_reply())
        self.db = db
        self.manager: CampaignManager | None = None

    def __enter__(self) -> Self:
        self.trickling.__enter__()
        self.long.__enter__()
        self.manager = CampaignManager(self.db)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.manager is not None:
            self.manager.close()
        self.long.__exit__()
        self.trickling.__exit__()

    def run(self, campaigns: int, questions: int, *, concurrency: int = 2, time_limit: float = 1.0) -> list[str]:
        """`campaigns` campaigns at once (every other against each agent), to their end; how each ended."""
        assert self.manager is not None, "enter the soak first"
        manager = self.manager
        agents = (self.trickling.url, self.long.url)
        ids = [manager.launch(LaunchRequest(dataset="default", limit=questions, concurrency=concurrency,
                              time_limit=time_limit, max_failed_share=1, cache=False, name=f"soak {n}",
                              config=TargetConfig.of(kind="http_agent", agent_url=agents[n % 2], timeout=60,
                                                     retries=0)))
               for n in range(campaigns)]
        return [str(manager.wait(campaign_id, timeout=600).status) for campaign_id in ids]
