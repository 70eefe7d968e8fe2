"""How fast a campaign's current stage goes, over its last half minute, and the time it has left.

A campaign works in stages: building the knowledge base's index (chunks done of total), then its
questions (finished of total). The runner samples each stage's count (at every step of the index
build, at every heartbeat while questions run) and keeps, with its latest sample, the rate between
that sample and the newest one at least WINDOW_S older (or the stage's start). The time left is the
finish that rate predicts, counted down from the sample. The average since the campaign started would
mix the stages (a 30 s index build makes the first questions look slow) and lag behind every change
of speed; a rate up to "now" would make the time left grow between two samples.
"""

from __future__ import annotations

import threading
from collections import deque

WINDOW_S = 30.0


def duration_text(seconds: float | None) -> str:
    """A duration for people: 85 ms, 42 s, 3 min 5 s, 1 h 2 min; an em dash when unknown."""
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def time_left(done: int, total: int, rate: float | None, sampled_at: float | None, now: float) -> float | None:
    """Seconds left when `done` of `total` were done at `sampled_at`, going at `rate` per second: 0 once all
    are done, None while no rate is known or once the predicted finish has passed (it is late)."""
    if done >= total:
        return 0.0
    if not rate or sampled_at is None:
        return None
    left = (total - done) / rate - (now - sampled_at)
    return left if left > 0 else None


def estimate(done: int, total: int, rate: float | None, sampled_at: float | None, sampled_done: int | None,
             now: float) -> tuple[float | None, float | None]:
    """(rate, time left) of a stage with `done` of `total` done now, from its latest sample (rate, at, done);
    before the stage's first rate is sampled (the sample is its start), the rate since that start."""
    if rate is not None:
        return rate, time_left(sampled_done or 0, total, rate, sampled_at, now)
    if sampled_at is None or sampled_done is None or done <= sampled_done or now <= sampled_at:
        return None, time_left(done, total, None, None, now)
    rate = (done - sampled_done) / (now - sampled_at)
    return rate, time_left(done, total, rate, now, now)


Sample = tuple[float | None, float, int]  # (rate per second over the window, at, done)


class Window:
    """Samples (time, count done) of the current stage; each new sample comes back with the window's rate."""

    def __init__(self, seconds: float = WINDOW_S) -> None:
        self.seconds = seconds
        self._samples: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()  # the campaign thread and the heartbeat thread both sample

    def restart(self, at: float, done: int) -> Sample:
        """A new stage starts now: forget the previous one's samples (no rate yet)."""
        with self._lock:
            self._samples.clear()
            self._samples.append((at, done))
            return None, at, done

    def sample(self, at: float, done: int) -> Sample:
        """Record (at, done); the rate counts from the newest sample at least `seconds` older, else the first."""
        with self._lock:
            self._samples.append((at, done))
            while len(self._samples) > 1 and self._samples[1][0] <= at - self.seconds:
                self._samples.popleft()
            base_at, base_done = self._samples[0]
            return ((done - base_done) / (at - base_at) if at > base_at else None), at, done
