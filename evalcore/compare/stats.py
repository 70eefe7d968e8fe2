"""Paired statistics for comparisons: bootstrap interval, sign-flip randomization test, exact McNemar.

A comparison tests every measure with the same seed; the random numbers are drawn once and serve
every measure:

- bootstrap (`bootstrap_table`): the unit resampled is the question. One stream of indices draws
  each resample of the n questions that have a measure; each measure's resampled mean is its mean
  over its own questions present in that resample (a measure on the labelled questions only, say,
  averages the labelled ones the resample holds). Every measure is thus judged on the same
  resampled question sets, whatever its count, and the cost is one draw whatever the counts. A
  measure present on every question gets exactly the resamples it would get alone; one present on
  a subset gets the bootstrap of a subpopulation mean, where the number of its questions varies
  from resample to resample as it does between samples of questions (resamples holding none of
  them, which happen only for a measure on a dozen questions or fewer, are left out). Before,
  each distinct count drew its own resamples of that measure's values alone: one draw per count,
  and measures judged on unrelated resamples; the intervals of measures on a subset differ from
  those by Monte Carlo error. The draws are turned into per-resample counts of each question, and
  one matrix product gives every measure's resampled sums (and counts of present questions);
- sign flips: `rng.integers(0, 2, ...)` hands out one value of the generator's stream per cell,
  whatever the shape asked for, so the (resamples x k) sign matrix of a measure with k non-zero
  differences is the first resamples * k values of one stream, row by row; one stream serves
  every k.

Matrix products run on one thread (threadpoolctl): on a shared machine OpenBLAS's threads cost
more than they save at these sizes.
"""

from __future__ import annotations

import ctypes
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from evalcore.compare.exact import ALPHA, RESAMPLES, McNemar, mcnemar_exact, sign_test, wilson_interval
from evalcore.runtime import compiled
from evalcore.runtime.lazy import once

T = TypeVar("T")
# Besides what this module defines, the draws' count and the exact tests (evalcore.compare.exact: they need no
# arrays, so a kept comparison is read back without numpy).
__all__ = ["ALPHA", "BLOCK_CELLS", "PRODUCT_CELLS", "RESAMPLES", "WORD_MASK", "BootstrapMean", "McNemar", "ahead",
           "blas_control", "block_rows", "bootstrap_ci", "bootstrap_intervals", "bootstrap_means", "bootstrap_table",
           "bounded_draws", "bounded_draws_hold", "by_length", "draw_signs", "flipped_means", "mcnemar_exact",
           "offset_indices", "one_thread", "percentile_interval", "raw_signs", "raw_signs_hold", "resample_counts",
           "sampled_p_values", "sign_flip_exact", "sign_flip_sampled", "sign_flip_test", "sign_flip_tests",
           "sign_test", "slices", "threshold", "wilson_interval"]
# Random numbers are drawn and used in blocks of at most this many cells (512 kB of float64):
# memory stays bounded (10,000 x n at once would be 800 MB at n = 10,000) and the blocks stay in
# the CPU cache.
BLOCK_CELLS = 1 << 16
# The resamples' counts meet the measures' values in products of about this many cells (8 MB).
PRODUCT_CELLS = 1 << 20


@dataclass(frozen=True)
class BootstrapMean:
    """The percentile interval of a mean and its bootstrap standard error (sd of the resampled means)."""

    low: float
    high: float
    se: float


def slices(resamples: int, n: int) -> list[int]:
    """Row counts of the slices that together make `resamples` rows of width n, at most BLOCK_CELLS cells each."""
    rows = max(1, BLOCK_CELLS // max(n, 1))
    return [min(rows, resamples - start) for start in range(0, resamples, rows)]


def resample_counts(n: int, *, resamples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (first resample, float counts of each of n rows in the next resamples), from one stream of indices.

    Indices are drawn and counted in slices of at most BLOCK_CELLS cells (the counts stay in the CPU
    cache), gathered into blocks of PRODUCT_CELLS for the matrix product, which is efficient only
    with enough rows. The stream does not depend on how it is sliced.
    """
    rng = np.random.default_rng(seed)
    library = _resampler() if bounded_draws_hold(n) and _pcg64(rng) else None
    if library is not None:
        yield from _counted(library, rng, n, resamples)
        return
    block = np.empty((max(1, PRODUCT_CELLS // max(n, 1)), n))
    start = filled = 0
    sizes = slices(resamples, n)
    # The indices are drawn on another thread (numpy's work there releases the GIL) while this one counts them and
    # multiplies.
    for rows, indices in zip(sizes, ahead(offset_indices(rng, n, sizes)), strict=True):
        if filled + rows > block.shape[0]:
            yield start, block[:filled]
            start, filled = start + filled, 0
        block[filled:filled + rows] = np.bincount(indices, minlength=rows * n).reshape(rows, n)
        filled += rows
    yield start, block[:filled]


def block_rows(n: int, resamples: int) -> list[int]:
    """The rows of each block `resample_counts` yields: slices gathered while they fit in PRODUCT_CELLS (both ways
    of counting give the products the same shapes, so the same sums to the last bit)."""
    capacity, blocks, filled = max(1, PRODUCT_CELLS // max(n, 1)), [], 0
    for rows in slices(resamples, n):
        if filled + rows > capacity:
            blocks.append(filled)
            filled = 0
        filled += rows
    return [*blocks, filled]


def _resampler() -> ctypes.CDLL | None:
    """The compiled counting of draws (`resample.c`), its argument types declared (once per process)."""
    pointer = ctypes.c_void_p
    return compiled.load(Path(__file__).with_name("resample.c"), {
        "evalcore_count_pcg64": (None, [pointer, ctypes.c_uint64, ctypes.c_uint64, pointer, ctypes.c_int64])})


WORD_MASK = (1 << 64) - 1


def _counted(library: ctypes.CDLL, rng: np.random.Generator, n: int,
             resamples: int) -> Iterator[tuple[int, np.ndarray]]:
    """`resample_counts` with the generator's PCG64 stream drawn and counted in C: the words `bounded_draws` reads,
    without an array of them or of the indices (drawing the indices and counting them were two thirds of a large
    comparison's statistics)."""
    inner = rng.bit_generator.state["state"]
    state, increment = inner["state"], inner["inc"]
    # The state and the increment as (high, low) words, then no half word waiting.
    generator = np.array([state >> 64, state & WORD_MASK, increment >> 64, increment & WORD_MASK, 0, 0],
                         dtype=np.uint64)
    block = np.empty((max(1, PRODUCT_CELLS // n), n))
    threshold, start = (1 << 32) % n, 0
    for rows in block_rows(n, resamples):
        counts = block[:rows]
        counts.fill(0.0)
        library.evalcore_count_pcg64(generator.ctypes.data, n, threshold, counts.ctypes.data, rows * n)
        yield start, counts
        start += rows


def _pcg64(rng: np.random.Generator) -> bool:
    """Whether the generator is numpy's PCG64, the one the C loop draws from (`default_rng`'s today)."""
    return bool(rng.bit_generator.state["bit_generator"] == "PCG64")


def offset_indices(rng: np.random.Generator, n: int, sizes: Sequence[int]) -> Iterator[np.ndarray]:
    """For each slice of `rows` resamples, `rng.integers(0, n, size=(rows, n))` flattened, with r * n added to row r's
    indices (so that one bincount counts every row apart)."""
    counts = [rows * n for rows in sizes]
    drawn = bounded_draws(rng, n, counts) if bounded_draws_hold(n) else (rng.integers(0, n, size=c) for c in counts)
    offsets: dict[int, np.ndarray] = {}
    for rows, indices in zip(sizes, drawn, strict=True):
        if rows not in offsets:
            offsets[rows] = np.repeat(np.arange(0, rows * n, n, dtype=np.int64), n)
        indices += offsets[rows]
        yield indices


def bounded_draws(rng: np.random.Generator, n: int, sizes: Iterable[int]) -> Iterator[np.ndarray]:
    """`rng.integers(0, n, size=size)` for each size in turn, value for value, from the generator's raw words.

    numpy draws an integer below n (2 <= n < 2^32) by Lemire's method from the generator's next 32-bit word w: the
    high half of w * n, unless its low half falls below 2^32 mod n, when w is rejected and the next word taken; a
    64-bit generator hands out each word's low half first and keeps the other for the next draw. Done here a whole
    block at a time (numpy spends a function call per value), the same stream costs less than half as much. Only
    from a generator that has drawn nothing else; `bounded_draws_hold` checks that this numpy draws so.
    """
    threshold = (1 << 32) % n
    carry = np.empty(0, dtype=np.uint64)   # accepted values drawn beyond the last size asked (an odd size's half word)
    for size in sizes:
        parts, have = [carry], carry.size
        while have < size:
            products = rng.bit_generator.random_raw((size - have + 1) // 2).view(np.uint32).astype(np.uint64)
            products *= n
            rejected = products.astype(np.uint32) < threshold   # the low half
            if rejected.any():
                products = products[~rejected]
            products >>= 32
            parts.append(products)
            have += products.size
        drawn = parts[-1] if len(parts) == 2 and not carry.size else np.concatenate(parts)
        carry = drawn[size:]
        yield drawn[:size].view(np.int64)


@once
def bounded_draws_hold(n: int) -> bool:
    """Whether bounded_draws gives rng.integers(0, n)'s stream in this numpy, on this machine (checked once on a range
    that rejects half its words and on one that rejects few, in calls of odd and even sizes); false for an n it does
    not cover."""
    if not 2 <= n < 1 << 31:
        return False
    for bound in (3 << 30 | 1, 10_007):
        sizes = [1, 5000, 4, 777]
        mine = np.concatenate(list(bounded_draws(np.random.default_rng(2024), bound, sizes)))
        if not np.array_equal(mine, np.random.default_rng(2024).integers(0, bound, size=sum(sizes))):
            return False
    return True


def ahead(items: Iterator[T] | Iterable[T], depth: int = 8) -> Iterator[T]:
    """The items of an iterable, in order, each made on a thread of its own up to `depth` items ahead.

    Worth it for work that releases the GIL (numpy's random numbers); an error raised making one is raised here.
    The thread stops when the items run out or when this generator is closed.
    """
    made: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=depth)
    closed = threading.Event()

    def offer(entry: tuple[bool, Any]) -> bool:
        """Queue an entry unless the consumer has gone; whether it was queued."""
        while not closed.is_set():
            try:
                made.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def make() -> None:
        try:
            for item in items:
                if not offer((True, item)):
                    return
            offer((False, None))
        except Exception as error:  # noqa: BLE001 (handed to the consumer, which raises it)
            offer((False, error))

    thread = threading.Thread(target=make, name="drawn-ahead", daemon=True)
    thread.start()
    try:
        while True:
            more, item = made.get()
            if not more:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        closed.set()
        thread.join()


def bootstrap_means(columns: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """Means of each column of an (n x m) matrix over its present rows (not NaN), on the same resamples of the rows.

    A column present on every row gets sum / n; one with absent rows, its sum over the present rows
    of the resample divided by how many of them the resample holds (NaN when it holds none).
    """
    n, m = columns.shape
    present = ~np.isnan(columns)
    patterns, which = np.unique(present, axis=1, return_inverse=True)
    partial = [j for j in range(patterns.shape[1]) if not patterns[:, j].all()]
    # One layout whatever the columns' (a comparison's table is column-major): OpenBLAS multiplies the two layouts with
    # different kernels, whose sums can differ in the last bit.
    weights = np.asfortranarray(np.column_stack([np.where(present, columns, 0.0), patterns[:, partial].astype(float)]))
    sums = np.empty((resamples, weights.shape[1]))
    with one_thread():
        for start, counts in resample_counts(n, resamples=resamples, seed=seed):
            sums[start:start + len(counts)] = counts @ weights
    totals = np.full((resamples, m), float(n))
    for column, pattern in enumerate(partial):
        totals[:, which.ravel() == pattern] = sums[:, m + column, None]
    with np.errstate(invalid="ignore"):
        means: np.ndarray = sums[:, :m] / totals
    return means


_limited = threading.Lock()
_threads = 0   # how many threads are inside one_thread()
_limits: Any = None   # the limits they share


@contextmanager
def one_thread() -> Iterator[None]:
    """Matrix products on one thread: OpenBLAS's threads cost more than they save on a shared machine, and a product
    split over them sums in another order (the last bit of a bootstrap interval would depend on the thread count).

    OpenBLAS's limit is process-wide while a comparison multiplies on two threads at once: it is set when the first
    enters and lifted when the last leaves, whichever threads they are. (threadpoolctl lets only the thread that set a
    limit change it and lifts it when that thread leaves: the other thread's product then ran on every BLAS thread.)
    """
    from threadpoolctl import threadpool_limits

    global _threads, _limits   # one limit for the whole process, as OpenBLAS has
    with _limited:
        if not _threads:
            with blas_control():
                _limits = threadpool_limits(limits=1, user_api="blas")
        _threads += 1
    try:
        yield
    finally:
        with _limited:
            _threads -= 1
            if not _threads:
                with blas_control():
                    _limits.restore_original_limits()


@contextmanager
def blas_control() -> Iterator[None]:
    """Let this thread set OpenBLAS's limit, and no thread keep that right afterwards (threadpoolctl gives it to the
    first thread that sets one, and ignores the others)."""
    from threadpoolctl import LibController

    controllers = [kind for kind in LibController.__subclasses__() if hasattr(kind, "clear_controlling_thread")]
    for kind in controllers:
        kind.clear_controlling_thread(force=True)
    try:
        yield
    finally:
        for kind in controllers:
            kind.clear_controlling_thread(force=True)


def bootstrap_table(columns: np.ndarray, *, resamples: int = RESAMPLES, seed: int = 0,
                    level: float = 0.95) -> list[BootstrapMean | None]:
    """Percentile bootstrap of each column's mean over its present rows (NaN: absent), on one resample of the rows.

    Every column sees the same resampled rows (questions), so a column present on every row gets
    exactly the interval it would get alone. None for a column with fewer than 2 present values.
    """
    counts = np.count_nonzero(~np.isnan(columns), axis=0)
    if not (counts >= 2).any():
        return [None] * columns.shape[1]
    means = bootstrap_means(columns, resamples=resamples, seed=seed)
    return [percentile_interval(means[:, j], level) if counts[j] >= 2 else None for j in range(columns.shape[1])]


def percentile_interval(means: np.ndarray, level: float) -> BootstrapMean:
    """The percentile interval and standard error of resampled means (resamples with no value left out)."""
    drawn = means[~np.isnan(means)]
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(drawn, [tail, 100 - tail])
    return BootstrapMean(float(low), float(high), float(drawn.std(ddof=1)) if drawn.size > 1 else 0.0)


def bootstrap_intervals(samples: Sequence[Sequence[float]], *, resamples: int = RESAMPLES, seed: int = 0,
                        level: float = 0.95) -> list[BootstrapMean | None]:
    """Percentile bootstrap of the mean of each sample (None below 2 values), one draw per distinct length."""
    arrays = [np.asarray(sample, dtype=float) for sample in samples]
    out: list[BootstrapMean | None] = [None] * len(arrays)
    for n, members in by_length(arrays).items():
        if n >= 2:   # one value has no spread to resample: an interval [v, v] would claim certainty
            table = np.column_stack([arrays[i] for i in members])
            for i, result in zip(members, bootstrap_table(table, resamples=resamples, seed=seed, level=level),
                                 strict=True):
                out[i] = result
    return out


def by_length(arrays: Sequence[np.ndarray]) -> dict[int, list[int]]:
    """Positions of the arrays grouped by their length."""
    groups: dict[int, list[int]] = {}
    for i, array in enumerate(arrays):
        groups.setdefault(array.size, []).append(i)
    return groups


def bootstrap_ci(values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (paired when `values` are differences); None below 2 values."""
    (result,) = bootstrap_intervals([values], resamples=resamples, seed=seed, level=level)
    return None if result is None else (result.low, result.high)


def sign_flip_exact(diffs: Sequence[float]) -> float:
    """Two-sided p-value of the paired randomization test over all 2^n sign assignments."""
    data = np.asarray(diffs, dtype=float)
    if data.size == 0:
        return 1.0
    patterns = np.arange(2 ** data.size)[:, None] >> np.arange(data.size) & 1
    means = ((1 - 2 * patterns) * data).mean(axis=1)
    return float(np.mean(np.abs(means) >= threshold(data)))


def sign_flip_sampled(diffs: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0) -> float:
    """Two-sided p-value of the paired randomization test from `resamples` random sign flips."""
    return sampled_p_values([np.asarray(diffs, dtype=float)], resamples=resamples, seed=seed)[0]


def sampled_p_values(samples: Sequence[np.ndarray], *, resamples: int = RESAMPLES, seed: int = 0) -> list[float]:
    """Sampled sign-flip p-values; sample j uses the first resamples x k_j values of one stream of signs."""
    groups = {k: members for k, members in by_length(samples).items() if k}
    limits = {k: np.array([threshold(samples[i]) for i in members]) for k, members in groups.items()}
    hits = np.zeros(len(samples), dtype=np.int64)
    with one_thread():
        for k, means in flipped_means(samples, groups, resamples=resamples, seed=seed) if groups else ():
            hits[groups[k]] += np.count_nonzero(np.abs(means) >= limits[k], axis=0)
    # (hits + 1) / (resamples + 1): the observed assignment is one of the possible ones, so p > 0.
    return [1.0 if samples[i].size == 0 else (int(hits[i]) + 1) / (resamples + 1) for i in range(len(samples))]


def flipped_means(samples: Sequence[np.ndarray], groups: dict[int, list[int]], *, resamples: int,
                  seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (k, means over a block of resamples) for each group of samples of k values.

    The stream of signs is drawn in blocks; each group reads its next whole rows of k signs from
    the current block (the unread tail carries over to the next one), so every sign is drawn and
    converted once whatever the number of groups, and read from the CPU cache.
    """
    matrices = {k: np.column_stack([samples[i] for i in members]) for k, members in groups.items()}
    done = dict.fromkeys(groups, 0)   # rows (resamples) finished per group
    rng = np.random.default_rng(seed)
    buffer = np.empty(BLOCK_CELLS + max(groups))
    start, size = 0, 0   # the stream position of buffer[0], and how many signs the buffer holds
    total = resamples * max(groups)
    while start + size < total:
        drawn = min(BLOCK_CELLS, total - start - size)
        draw_signs(rng, buffer[size:size + drawn])
        size += drawn
        for k in groups:
            rows = min(resamples, (start + size) // k)
            if rows > done[k]:
                yield k, buffer[done[k] * k - start:rows * k - start].reshape(-1, k) @ matrices[k] / k
                done[k] = rows
        keep = min([done[k] * k for k in groups if done[k] < resamples], default=start + size) - start
        buffer[:size - keep] = buffer[keep:size]
        start, size = start + keep, size - keep


def draw_signs(rng: np.random.Generator, out: np.ndarray) -> None:
    """Fill `out` with the next +-1.0 signs of `rng`'s stream: 2 * rng.integers(0, 2) - 1, value for value.

    numpy draws each such integer as the top bit of the generator's next 32-bit word (Lemire's method on a range
    of two never rejects a word), and a 64-bit generator hands out its words low half first. Reading those bits
    from the raw 64-bit words (`raw_signs`) is the same stream at less than half the cost. Only from a generator that
    has drawn nothing else, in calls of even sizes but the last; `raw_signs_hold()` checks that this numpy still
    draws so on this machine, and rng.integers is used otherwise.
    """
    if out.size % 2 == 0 and raw_signs_hold():
        raw_signs(rng, out)
        return
    np.copyto(out, rng.integers(0, 2, size=out.size))
    out *= 2.0
    out -= 1.0


def raw_signs(rng: np.random.Generator, out: np.ndarray) -> None:
    """+-1.0 from the top bit of each 32-bit half of the generator's next out.size / 2 raw words."""
    np.less(rng.bit_generator.random_raw(out.size // 2).view(np.int32), 0, out=out)   # the top bit: 1.0 or 0.0
    out *= 2.0
    out -= 1.0


@once
def raw_signs_hold() -> bool:
    """Whether raw_signs gives rng.integers(0, 2)'s values (as signs) in this numpy, on this machine."""
    out = np.empty(4096)
    raw_signs(np.random.default_rng(12345), out)
    return bool(np.array_equal(out, np.random.default_rng(12345).integers(0, 2, size=4096) * 2.0 - 1.0))


def threshold(data: np.ndarray) -> float:
    """|observed mean|, lowered by a rounding margin so that equal means count as extreme."""
    observed = abs(float(data.mean()))
    return observed - 1e-12 * max(1.0, float(np.abs(data).max()))


def sign_flip_tests(samples: Sequence[Sequence[float]], *, resamples: int = RESAMPLES,
                    seed: int = 0) -> list[tuple[float, str]]:
    """sign_flip_test of each sample, the sampled ones drawing their signs from one shared stream."""
    # Flipping the sign of a zero changes nothing, and the statistic |mean| over n or over the
    # non-zero differences orders assignments the same way: the exact test needs only those.
    arrays = [np.asarray(sample, dtype=float) for sample in samples]
    nonzero = [data[data != 0] for data in arrays]
    sampled = [i for i, data in enumerate(nonzero) if 2 ** data.size > resamples]
    p_values = dict(zip(sampled, sampled_p_values([nonzero[i] for i in sampled], resamples=resamples, seed=seed),
                        strict=True))
    return [(p_values[i], "sampled") if i in p_values else (sign_flip_exact(data), "exact")
            for i, data in enumerate(nonzero)]


def sign_flip_test(diffs: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, str]:
    """p-value and method: exact enumeration when 2^(non-zero differences) <= resamples, else sampled."""
    return sign_flip_tests([diffs], resamples=resamples, seed=seed)[0]
