"""A bounded soak on loopback: 20 campaigns at once, half against an agent that trickles its replies (every
question passes its time limit), half against one of 199,000-character replies, in one long-lived manager.
Once they ended, threads and sockets are back where they started and memory did not grow."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore.testing.soak import Soak, settled


@pytest.mark.long
def test_threads_sockets_and_memory_come_back_after_twenty_campaigns(tmp_path: Path) -> None:
    with Soak(tmp_path / "soak.db") as soak:
        soak.run(20, 2)  # warm: what a process loads once, and the allocator's working size
        start = settled()
        statuses = soak.run(20, 2)
        after = settled(start)
    assert set(statuses) <= {"succeeded", "succeeded_with_failures"}
    assert len(statuses) == 20
    assert after.threads <= start.threads, (start, after)
    assert after.sockets == start.sockets, (start, after)
    assert after.rss_mb < start.rss_mb + 64, (start, after)
