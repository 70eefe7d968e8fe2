"""Paired statistics against brute force enumeration and scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest, permutation_test

from evalcore.compare import stats
from tests.conftest import require_c


def brute_force_sign_flip(diffs: list[float]) -> float:
    """Two-sided p over every sign assignment, written the slow obvious way."""
    observed = abs(sum(diffs) / len(diffs))
    extreme = 0
    for signs in itertools.product((1, -1), repeat=len(diffs)):
        if abs(sum(s * d for s, d in zip(signs, diffs, strict=False)) / len(diffs)) >= observed - 1e-12:
            extreme += 1
    return extreme / 2 ** len(diffs)


SMALL = [
    [0.5, 0.2, 0.1, 0.4, -0.1, 0.3, 0.2, 0.6],
    [1.0, -1.0, 0.0, 2.0, 1.0],
    [0.1, 0.1, 0.1, 0.1],
    [0.3, -0.2, 0.05, -0.4, 0.1, 0.0, 0.25, -0.1, 0.2, 0.15],
    [3.0],
]


@pytest.mark.parametrize("diffs", SMALL)
def test_exact_sign_flip_equals_enumeration(diffs):
    assert stats.sign_flip_exact(diffs) == pytest.approx(brute_force_sign_flip(diffs))


@pytest.mark.parametrize("diffs", SMALL[:4])
def test_sampled_sign_flip_is_close_to_exact(diffs):
    exact = brute_force_sign_flip(diffs)
    sampled = stats.sign_flip_sampled(diffs, resamples=10_000, seed=1)
    # binomial standard error at 10,000 resamples is at most 0.005
    assert sampled == pytest.approx(exact, abs=0.02)


@pytest.mark.parametrize("diffs", SMALL[:4])
def test_exact_sign_flip_equals_scipy_paired_permutation_test(diffs):
    # scipy's paired permutation test on (b, a) with the mean difference enumerates the same 2^n swaps.
    b, a = np.array(diffs), np.zeros(len(diffs))
    result = permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                              n_resamples=np.inf, alternative="two-sided")
    assert stats.sign_flip_exact(diffs) == pytest.approx(result.pvalue)


def test_hand_computed_sign_flip():
    # diffs (1, 1, 1): only the all-plus and all-minus assignments reach |mean| = 1, so p = 2/8.
    assert stats.sign_flip_exact([1.0, 1.0, 1.0]) == pytest.approx(0.25)
    # (2, 1): |mean| 1.5 reached by (+,+) and (-,-) of 4 assignments.
    assert stats.sign_flip_exact([2.0, 1.0]) == pytest.approx(0.5)


def test_sign_flip_test_chooses_exact_for_small_n_and_is_seeded():
    assert stats.sign_flip_test([0.2] * 5, resamples=10_000) == (pytest.approx(2 / 32), "exact")
    diffs = list(np.random.default_rng(3).normal(0.1, 1.0, 40))
    p1, method = stats.sign_flip_test(diffs, seed=7)
    p2, _ = stats.sign_flip_test(diffs, seed=7)
    assert method == "sampled"
    assert p1 == p2
    assert 0 < p1 <= 1


def test_no_difference_is_never_significant():
    assert stats.sign_flip_sampled([0.0] * 30) == 1.0
    assert stats.sign_flip_exact([0.0] * 6) == 1.0
    assert stats.bootstrap_ci([0.0] * 20) == (0.0, 0.0)


def test_large_consistent_improvement_is_significant():
    diffs = [0.3 + 0.01 * i for i in range(50)]
    p, _ = stats.sign_flip_test(diffs)
    assert p < 0.001


def test_bootstrap_interval_brackets_the_mean_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    small = rng.normal(0.2, 1.0, 20)
    large = rng.normal(0.2, 1.0, 500)
    low_s, high_s = stats.bootstrap_ci(small, seed=0)
    low_l, high_l = stats.bootstrap_ci(large, seed=0)
    assert low_s < small.mean() < high_s
    assert low_l < large.mean() < high_l
    assert (high_l - low_l) < (high_s - low_s)
    # Percentile bootstrap of a mean is close to the normal interval mean +- 1.96 sd/sqrt(n).
    half = 1.96 * large.std(ddof=1) / np.sqrt(large.size)
    assert high_l - low_l == pytest.approx(2 * half, rel=0.1)


def test_bootstrap_is_deterministic_given_the_seed_and_slices_large_inputs():
    values = list(np.random.default_rng(5).normal(size=300))
    assert stats.bootstrap_ci(values, seed=4) == stats.bootstrap_ci(values, seed=4)
    assert stats.bootstrap_ci(values, seed=4) != stats.bootstrap_ci(values, seed=5)
    # 65 rows of 1,000 per block.
    assert sum(stats.slices(10_000, 1_000)) == 10_000
    assert len(stats.slices(10_000, 1_000)) == 154
    assert stats.slices(10, 2 * stats.BLOCK_CELLS // 5) == [2, 2, 2, 2, 2]
    assert stats.bootstrap_ci([]) is None


@pytest.mark.parametrize("only_a,only_b,both", [(0, 0, 5), (3, 0, 2), (1, 7, 4), (10, 12, 0), (0, 9, 1), (25, 10, 30)])
def test_mcnemar_exact_equals_scipy_binomtest(only_a, only_b, both):
    a = [True] * only_a + [False] * only_b + [True] * both + [False] * 3
    b = [False] * only_a + [True] * only_b + [True] * both + [False] * 3
    result = stats.mcnemar_exact(a, b)
    assert (result.only_a, result.only_b) == (only_a, only_b)
    expected = 1.0 if only_a + only_b == 0 else binomtest(only_a, only_a + only_b, 0.5).pvalue
    assert result.p_value == pytest.approx(expected)


def test_mcnemar_rejects_unpaired_inputs():
    with pytest.raises(ValueError):
        stats.mcnemar_exact([True, False], [True])


def test_zero_differences_leave_the_exact_test_exact_and_equal_to_scipy():
    # 3 non-zero differences among 9: 2^9 = 512 > 100 resamples, yet only 2^3 assignments differ.
    diffs = [0.0, 0.3, 0.0, 0.0, -0.1, 0.0, 0.25, 0.0, 0.0]
    b, a = np.array(diffs), np.zeros(len(diffs))
    scipy_p = permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                               n_resamples=np.inf, alternative="two-sided").pvalue
    assert stats.sign_flip_test(diffs, resamples=100) == (pytest.approx(scipy_p), "exact")
    assert stats.sign_flip_test([0.0] * 50) == (1.0, "exact")


def test_bootstrap_has_no_interval_for_a_single_value():
    assert stats.bootstrap_ci([0.7]) is None
    assert stats.bootstrap_ci([]) is None
    assert stats.bootstrap_ci([0.2, 0.2, 0.2]) == (pytest.approx(0.2), pytest.approx(0.2))


# --- the batch functions against the per-measure computation they replace ------------------------

def per_measure_bootstrap(values, resamples, seed):
    """The per-measure bootstrap as it was: its own generator, index matrices in slices of 2,000,000 cells."""
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    rows = max(1, 2_000_000 // data.size)
    means = np.concatenate([data[rng.integers(0, data.size, size=(min(rows, resamples - start), data.size))]
                            .mean(axis=1)
                            for start in range(0, resamples, rows)])
    return tuple(np.percentile(means, [2.5, 97.5])), means.std(ddof=1)


def per_measure_sign_flip(diffs, resamples, seed):
    """The sampled sign-flip test as it was: its own generator, sign matrices in slices of 2,000,000 cells."""
    data = np.asarray([d for d in diffs if d != 0], dtype=float)
    rng = np.random.default_rng(seed)
    limit = abs(data.mean()) - 1e-12 * max(1.0, np.abs(data).max())
    rows, hits = max(1, 2_000_000 // data.size), 0
    for start in range(0, resamples, rows):
        signs = rng.integers(0, 2, size=(min(rows, resamples - start), data.size)) * 2 - 1
        hits += int(np.count_nonzero(np.abs((signs * data).mean(axis=1)) >= limit))
    return (hits + 1) / (resamples + 1)


def measures_like_a_comparison(seed, sizes):
    """Differences of several measures: continuous ones, and tied ones (many zero differences, distinct k)."""
    rng = np.random.default_rng(seed)
    out = []
    for j, n in enumerate(sizes):
        a, b = rng.random(n), rng.random(n)
        if j % 2:   # a measure on a grid (like precision@5): equal values give zero differences
            a, b = np.round(a * (j + 1)) / (j + 1), np.round(b * (j + 1)) / (j + 1)
        out.append(b - a)
    return out


@pytest.mark.parametrize("seed,sizes,resamples", [
    (0, [50, 50, 50, 73, 73, 2, 3], 2000),
    (1, [400, 400, 401, 999, 400], 3001),
    (2, [5000, 5000, 5000, 5000], 700),
])
def test_batch_bootstrap_equals_the_per_measure_bootstrap(seed, sizes, resamples):
    samples = measures_like_a_comparison(seed, sizes)
    batch = stats.bootstrap_intervals(samples, resamples=resamples, seed=seed)
    for sample, result in zip(samples, batch, strict=False):
        (low, high), se = per_measure_bootstrap(sample, resamples, seed)
        # The same resamples; only the order of a sum differs (a matrix product instead of a row mean).
        assert result.low == pytest.approx(low, abs=1e-12)
        assert result.high == pytest.approx(high, abs=1e-12)
        assert result.se == pytest.approx(se, abs=1e-12)
        alone = stats.bootstrap_ci(sample, resamples=resamples, seed=seed)   # a matrix-vector product: to rounding
        assert alone == (pytest.approx(result.low, abs=1e-15), pytest.approx(result.high, abs=1e-15))


@pytest.mark.parametrize("seed,sizes,resamples", [
    (0, [30, 30, 31, 45, 64, 64], 2000),
    (3, [700, 700, 701, 1500], 5000),
    (4, [20, 3000, 21, 3000], 1001),
])
def test_batch_sign_flip_equals_the_per_measure_test(seed, sizes, resamples):
    samples = measures_like_a_comparison(seed, sizes)
    batch = stats.sign_flip_tests(samples, resamples=resamples, seed=seed)
    assert len({np.count_nonzero(s) for s in samples}) > 2   # several k share one stream of signs
    for sample, (p_value, method) in zip(samples, batch, strict=False):
        assert method == "sampled"
        assert p_value == per_measure_sign_flip(sample, resamples, seed)   # exactly: the same hits


def test_a_row_of_signs_longer_than_a_block_spans_several_draws():
    # k above BLOCK_CELLS: a resample's row of signs is drawn over several blocks, and odd k leaves half-used
    # 64-bit draws between rows; the shorter sample reads its rows from the same stream.
    rng = np.random.default_rng(8)
    long, short = rng.normal(0.001, 1, stats.BLOCK_CELLS + 1001), rng.normal(0.3, 1, 999)
    (p_long, _), (p_short, _) = stats.sign_flip_tests([long, short], resamples=7, seed=5)
    assert p_long == per_measure_sign_flip(long, 7, 5)
    assert p_short == per_measure_sign_flip(short, 7, 5)


def test_batches_mix_exact_sampled_empty_and_single_values():
    samples = [[0.2] * 5, [], [0.0, 0.0], [0.5], list(np.random.default_rng(2).normal(0.1, 1, 40))]
    tests = stats.sign_flip_tests(samples, resamples=1000, seed=3)
    assert tests[:4] == [(pytest.approx(2 / 32), "exact"), (1.0, "exact"), (1.0, "exact"), (1.0, "exact")]
    assert tests[4] == (per_measure_sign_flip(samples[4], 1000, 3), "sampled")
    intervals = stats.bootstrap_intervals(samples, resamples=1000, seed=3)
    assert intervals[1] is None
    assert intervals[3] is None
    assert (intervals[0].low, intervals[0].high) == (pytest.approx(0.2), pytest.approx(0.2))
    assert intervals[0].se == pytest.approx(0.0, abs=1e-15)


def test_bootstrap_standard_error_is_the_standard_error_of_the_mean():
    values = np.random.default_rng(11).normal(0.0, 2.0, 900)
    (result,) = stats.bootstrap_intervals([values], resamples=4000, seed=0)
    assert result.se == pytest.approx(values.std(ddof=0) / np.sqrt(values.size), rel=0.05)


# --- one resample of the questions for every measure, whatever its count ---------------------------

def resampled_domain_means(table, resamples, seed):
    """Each resample of the rows drawn alone (the same stream, row by row), each column's mean over its present rows."""
    rng = np.random.default_rng(seed)
    n = table.shape[0]
    means = np.full((resamples, table.shape[1]), np.nan)
    for r in range(resamples):
        drawn = table[rng.integers(0, n, size=n)]
        for j in range(table.shape[1]):
            values = drawn[:, j][~np.isnan(drawn[:, j])]
            if values.size:
                means[r, j] = values.mean()
    return means


def table_like_a_campaign(seed, n, shares):
    """Differences of measures present on a share of the questions each (NaN elsewhere), many of them zero."""
    rng = np.random.default_rng(seed)
    table = np.full((n, len(shares)), np.nan)
    for j, share in enumerate(shares):
        rows = rng.random(n) < share
        table[rows, j] = np.where(rng.random(rows.sum()) < 0.5, 0.0, np.round(rng.random(rows.sum()) - 0.5, 2))
    return table


@pytest.mark.parametrize("seed,n,shares,resamples", [
    (0, 60, [1.0, 0.8, 0.8, 0.3, 0.05, 1.0], 300),
    (1, 400, [0.85, 0.7, 0.08, 0.92, 1.0], 200),
])
def test_every_measure_is_resampled_with_the_same_questions(seed, n, shares, resamples):
    table = table_like_a_campaign(seed, n, shares)
    expected = resampled_domain_means(table, resamples, seed)
    results = stats.bootstrap_table(table, resamples=resamples, seed=seed)
    for j, result in enumerate(results):
        drawn = expected[:, j][~np.isnan(expected[:, j])]   # resamples that hold none of its questions: left out
        low, high = np.percentile(drawn, [2.5, 97.5])
        assert (result.low, result.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
        assert result.se == pytest.approx(drawn.std(ddof=1), abs=1e-12)


def test_a_measure_on_every_question_keeps_the_interval_it_gets_alone():
    table = table_like_a_campaign(3, 500, [1.0, 0.6, 0.1, 1.0])
    results = stats.bootstrap_table(table, resamples=2000, seed=3)
    for j in (0, 3):
        (low, high), _ = per_measure_bootstrap(table[:, j], 2000, 3)
        assert (results[j].low, results[j].high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    partial = table[:, 1][~np.isnan(table[:, 1])]
    assert (results[1].low, results[1].high) != stats.bootstrap_ci(partial, resamples=2000, seed=3)


def test_a_measure_with_fewer_than_two_values_has_no_interval_in_a_table():
    table = np.array([[0.1, np.nan, np.nan], [0.3, 0.2, np.nan], [-0.2, np.nan, np.nan]])
    first, single, empty = stats.bootstrap_table(table, resamples=50, seed=0)
    assert first is not None
    assert single is None
    assert empty is None
    assert stats.bootstrap_table(np.empty((0, 2)), resamples=50) == [None, None]


def test_numbers_drawn_ahead_on_another_thread_come_in_order_raise_and_stop():
    import threading

    assert list(stats.ahead(iter(range(200)), depth=3)) == list(range(200))

    def failing():
        yield 1
        raise ValueError("drawing failed")

    drawn = stats.ahead(failing())
    assert next(drawn) == 1
    with pytest.raises(ValueError, match="drawing failed"):
        next(drawn)
    before = threading.active_count()
    endless = stats.ahead(iter(range(10**9)), depth=2)
    assert next(endless) == 0
    endless.close()   # the consumer stops early: the drawing thread ends too
    assert threading.active_count() == before


@pytest.mark.parametrize("sizes", [[65536, 65536, 1001], [2, 4, 6, 7], [1]])
def test_signs_read_from_raw_words_are_numpys_own_integers(sizes):
    # The fast path must hold in the numpy the project runs on (otherwise the sign flips silently fall back to the
    # slower draw), and give rng.integers(0, 2)'s stream value for value, an odd last call included.
    assert stats.raw_signs_hold()
    rng, reference = np.random.default_rng(77), np.random.default_rng(77)
    for size in sizes:
        out = np.empty(size)
        stats.draw_signs(rng, out)
        assert np.array_equal(out, reference.integers(0, 2, size=size) * 2.0 - 1.0)


@pytest.mark.parametrize("n", [2, 3, 10_000, 12_345, 3 << 30 | 1])
def test_bounded_draws_from_raw_words_are_numpys_own_integers(n):
    # numpy's rng.integers(0, n) value for value, in calls of odd and even sizes (an odd one leaves half a word for
    # the next), on ranges that reject few words and half of them (3 * 2^30 + 1, beyond what the bootstrap asks).
    assert stats.bounded_draws_hold(n) == (n < 1 << 31)
    sizes = [7, 60_000, 3, 1, 65_536]
    drawn = list(stats.bounded_draws(np.random.default_rng(9), n, sizes))
    assert [d.size for d in drawn] == sizes
    assert np.array_equal(np.concatenate(drawn), np.random.default_rng(9).integers(0, n, size=sum(sizes)))
    assert not stats.bounded_draws_hold(1)
    assert not stats.bounded_draws_hold(1 << 31)


# Counted in C from the generator's words, or from numpy's indices where C cannot be built; odd sizes leave half a
# word for the next block.
@pytest.mark.parametrize("compiled", ["1", "0"])
@pytest.mark.parametrize(("n", "resamples"), [(1_001, 130), (10_000, 215), (3, 40_000), (2, 7)])
def test_resample_counts_are_the_counts_of_numpys_indices(monkeypatch, compiled, n, resamples):
    monkeypatch.setenv("EVALCORE_COMPILED", compiled)
    if compiled == "1":
        require_c(stats._resampler())
    else:
        assert stats._resampler() is None
    expected = np.zeros((resamples, n))
    rng = np.random.default_rng(4)
    for start, rows in zip(np.cumsum([0, *stats.slices(resamples, n)[:-1]]), stats.slices(resamples, n), strict=True):
        indices = rng.integers(0, n, size=(rows, n))
        for r in range(rows):
            expected[start + r] = np.bincount(indices[r], minlength=n)
    blocks = [(start, counts.copy()) for start, counts in stats.resample_counts(n, resamples=resamples, seed=4)]
    assert [counts.shape[0] for _, counts in blocks] == stats.block_rows(n, resamples)
    assert [start for start, _ in blocks] == np.cumsum([0, *stats.block_rows(n, resamples)[:-1]]).tolist()
    assert np.array_equal(np.concatenate([counts for _, counts in blocks]), expected)


def test_matrix_products_stay_on_one_thread_until_the_last_user_leaves():
    # The sign flips and the bootstrap multiply on two threads at once; when one left, the limit used to be lifted
    # under the other, whose product OpenBLAS then split over its threads (sums different in the last bit).
    import threading

    from threadpoolctl import threadpool_info

    def blas_threads():
        return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}

    before = blas_threads()
    inside, leave, seen = threading.Event(), threading.Event(), []

    def other():
        with stats.one_thread():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    inside.wait(10)
    with stats.one_thread():
        leave.set()
        thread.join()   # the other thread has left
        seen.append(blas_threads())
    assert seen == [{1}]
    assert blas_threads() == before


def test_the_limit_holds_whichever_thread_leaves_last():
    import threading

    from threadpoolctl import threadpool_info

    def blas_threads():
        return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}

    before = blas_threads()
    with stats.one_thread():   # this thread set a limit before (threadpoolctl would keep it the only one allowed to)
        pass
    inside, leave, seen = threading.Event(), threading.Event(), []

    def other():
        with stats.one_thread():
            inside.set()
            leave.wait(10)
            seen.append(blas_threads())   # the thread that set the limit has left

    thread = threading.Thread(target=other)
    with stats.one_thread():
        thread.start()
        inside.wait(10)
    leave.set()
    thread.join()
    assert seen == [{1}]
    assert blas_threads() == before


def test_the_bootstrap_does_not_depend_on_the_tables_memory_layout():
    # A comparison's table is column-major; OpenBLAS's kernels for the two layouts can sum in different orders.
    for n, shares in ((60, [1.0, 0.3]), (200, [1.0, 0.3]), (60, [1.0] * 6 + [0.5] * 3), (3_000, [1.0, 0.4, 0.9, 0.05])):
        table = table_like_a_campaign(5, n, shares)
        rows_first = stats.bootstrap_table(np.ascontiguousarray(table), resamples=500, seed=2)
        columns_first = stats.bootstrap_table(np.asfortranarray(table), resamples=500, seed=2)
        assert rows_first == columns_first, (n, shares)


def test_another_bit_generator_is_drawn_by_numpy_itself(monkeypatch):
    # The C loop draws PCG64's stream (default_rng's); were default_rng another generator, numpy would draw.
    n, resamples = 101, 30
    stats.bounded_draws_hold.cache_clear()   # checked again on the other generator, and once more after the test
    monkeypatch.setattr(stats.np.random, "default_rng", lambda seed: np.random.Generator(np.random.MT19937(seed)))
    expected = np.random.Generator(np.random.MT19937(5)).integers(0, n, size=(resamples, n))
    try:
        got = np.concatenate([counts for _, counts in stats.resample_counts(n, resamples=resamples, seed=5)])
    finally:
        stats.bounded_draws_hold.cache_clear()
    assert np.array_equal(got, np.array([np.bincount(row, minlength=n) for row in expected]))


def test_bootstrap_means_are_the_same_to_the_last_bit_with_or_without_the_compiled_counts(monkeypatch):
    # Measures present on every question and on subsets, as a comparison's table holds them.
    rng = np.random.default_rng(21)
    columns = rng.random((5_003, 9))
    columns[rng.random((5_003, 9)) < 0.4] = np.nan
    columns[:, :3] = rng.random((5_003, 3))
    require_c(stats._resampler())
    compiled = stats.bootstrap_means(columns, resamples=700, seed=3)
    monkeypatch.setenv("EVALCORE_COMPILED", "0")
    numpy_counts = stats.bootstrap_means(columns, resamples=700, seed=3)
    assert np.array_equal(compiled.view(np.uint64), numpy_counts.view(np.uint64))
