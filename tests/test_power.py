"""Power of a paired comparison against an independent noncentral-t computation, published values, edge cases."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps

from evalcore.compare import compare_results, power
from evalcore.errors import EvalError
from tests.test_compare import campaign, row


def reference_power(delta: float, sd: float, n: float, alpha: float = 0.05) -> float:
    """Two-sided paired t-test power, the textbook way: a frozen noncentral t and the central t quantile."""
    df = n - 1
    crit = sps.t(df).isf(alpha / 2)
    shifted = sps.nct(df, delta / (sd / math.sqrt(n)))
    lower = shifted.cdf(-crit)   # NaN far in the tail (nc ~ 20 and more), where it is below 1e-90
    return (1 - shifted.cdf(crit)) + (0.0 if math.isnan(lower) else lower)


def reference_mde(sd: float, n: int) -> float:
    """Solve power(delta) = 0.8 for delta directly (not through the noncentrality)."""
    return optimize.brentq(lambda d: reference_power(d, sd, n) - 0.8, 1e-9 * sd, 50 * sd, xtol=1e-14)


def reference_n(effect: float, sd: float) -> float:
    """Solve power(n) = 0.8 for a real n by bisection."""
    return optimize.bisect(lambda n: reference_power(effect, sd, n) - 0.8, 2.0, 1e7, xtol=1e-10)


@pytest.mark.parametrize("sd,n", [(1.0, 10), (0.3, 74), (0.25, 500), (0.05, 3), (2.0, 2), (0.4, 10_000)])
def test_mde_equals_the_reference(sd, n):
    assert power.mde(sd, n) == pytest.approx(reference_mde(sd, n), abs=1e-6)
    assert power.t_power(power.mde(sd, n), sd, n) == pytest.approx(0.8, abs=1e-9)


@pytest.mark.parametrize("effect,sd", [(0.02, 0.3), (0.05, 0.25), (0.5, 1.0), (0.1, 0.4), (0.01, 0.02)])
def test_questions_needed_equal_the_reference(effect, sd):
    exact = reference_n(effect, sd)
    assert power.solve_n(effect, sd) == pytest.approx(exact, abs=1e-6)
    assert power.required_n(effect, sd) == math.ceil(exact)
    assert reference_power(effect, sd, power.required_n(effect, sd)) >= 0.8 > \
        reference_power(effect, sd, power.required_n(effect, sd) - 1)


@pytest.mark.parametrize("dz,n", [(0.2, 199), (0.5, 34), (0.8, 15), (1.0, 10)])
def test_questions_needed_match_published_paired_t_tables(dz, n):
    # G*Power, "Means: difference from constant (matched pairs)", two tails, alpha 0.05, power 0.8.
    assert power.required_n(dz, 1.0) == n


def test_bootstrap_check_is_the_normal_approximation_and_close_to_the_mde():
    se = 0.01
    assert power.mde_bootstrap(se) == pytest.approx((sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) * se, abs=1e-15)
    rng = np.random.default_rng(4)
    a, b = rng.random(400), rng.random(400)
    b = np.clip(b + rng.normal(0, 0.05, 400), 0, 1)
    result = compare_results(campaign("A"), [row(i, f"q{i}", {"recall": x}) for i, x in enumerate(a)],
                             campaign("B", {"top_k": 10}), [row(i, f"q{i}", {"recall": y}) for i, y in enumerate(b)],
                             resamples=4000)
    (recall,) = result.measures
    assert recall.sd_diff == pytest.approx(np.std(b - a, ddof=1))
    assert recall.mde == pytest.approx(reference_mde(recall.sd_diff, 400), abs=1e-6)
    assert recall.mde_bootstrap == pytest.approx(recall.mde, rel=0.06)


def test_fewer_than_two_pairs_has_no_power():
    assert power.mde(None, 1) is None
    assert power.mde(0.3, 1) is None
    assert power.required_n(0.02, None) is None
    (entry,) = compare_results(campaign("A"), [row(1, "Q", {"coverage": 0.0})], campaign("B"),
                               [row(1, "Q", {"coverage": 1.0})]).measures
    assert (entry.mde, entry.mde_bootstrap, entry.n_required, entry.sd_diff) == (None, None, None, None)
    assert entry.power_note == "1 paired question: no test can detect a difference"


def test_equal_differences_have_no_spread_to_estimate_power_from():
    # 0.7 - 0.5 and 0.3 - 0.1 differ in the last bits: still equal differences, not a spread of 1e-17.
    a = [row(i, f"q{i}", {"coverage": x}) for i, x in enumerate([0.5, 0.1, 0.3, 0.6])]
    b = [row(i, f"q{i}", {"coverage": x}) for i, x in enumerate([0.7, 0.3, 0.5, 0.8])]
    (entry,) = compare_results(campaign("A"), a, campaign("B"), b, resamples=500).measures
    assert entry.sd_diff == 0.0
    assert entry.se_bootstrap == 0.0
    assert (entry.mde, entry.mde_bootstrap, entry.n_required) == (None, None, None)
    assert entry.power_note == "every difference is 0.2: no spread to estimate power from"


def test_no_difference_at_all_is_not_called_under_powered():
    rows = [row(i, f"q{i}", {"coverage": i / 10}) for i in range(10)]
    result = compare_results(campaign("A"), rows, campaign("B", {"top_k": 10}), rows, resamples=500)
    (entry,) = result.measures
    assert entry.delta == 0
    assert entry.mde is None
    assert entry.power_note.startswith("every difference is 0:")
    assert result.power_warnings == []


def test_a_tiny_spread_and_a_tiny_effect_stay_finite():
    assert power.required_n(0.5, 1e-12) == 2          # any effect is seen with 2 pairs: no NaN from scipy
    assert power.t_power(1.0, 1e-12, 2) == pytest.approx(1.0)
    needed = power.required_n(1e-5, 1.0)
    assert needed == pytest.approx(((sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) / 1e-5) ** 2, rel=1e-3)


@pytest.mark.parametrize("effect", [0, -0.1, math.inf, math.nan, "0.1", True])
def test_an_effect_size_must_be_positive(effect):
    with pytest.raises(EvalError, match="effect size"):
        power.check_effect(effect)


def test_under_powered_non_significant_measures_are_named_with_what_they_could_see():
    rng = np.random.default_rng(1)
    a = [row(i, f"q{i}", {"ndcg@10": x, "recall": x}) for i, x in enumerate(rng.random(74))]
    b = [row(i, f"q{i}", {"ndcg@10": min(1.0, r.outcome.measures["ndcg@10"] + rng.normal(0, 0.2)),
                          "recall": r.outcome.measures["recall"] + 0.3}) for i, r in enumerate(a)]
    result = compare_results(campaign("A"), a, campaign("B", {"top_k": 10}), b, resamples=2000)
    ndcg = next(m for m in result.measures if m.measure == "ndcg@10")
    recall = next(m for m in result.measures if m.measure == "recall")
    assert not ndcg.significant
    assert ndcg.mde > 0.02
    assert recall.significant
    assert ndcg.n_required == math.ceil(reference_n(0.02, ndcg.sd_diff))
    (warning,) = result.power_warnings
    assert warning == (f"no difference found on ndcg@10, but with n = 74 this comparison could not have seen one "
                       f"smaller than ±{ndcg.mde:.2g} (80% power, alpha 0.05; about {ndcg.n_required:,} questions "
                       f"would be needed to see ±0.02)")
    larger = result.with_effect(1.0)   # an effect it could see: the null result is informative
    assert larger.effect == 1.0
    assert larger.power_warnings == []
    assert next(m for m in larger.measures if m.measure == "ndcg@10").n_required == \
        math.ceil(reference_n(1.0, ndcg.sd_diff))
    assert larger.to_dict()["measures"][0]["effect"] == 1.0


def test_a_single_question_is_under_powered_whatever_the_effect():
    result = compare_results(campaign("A"), [row(1, "Q", {"coverage": 0.5})], campaign("B"),
                             [row(1, "Q", {"coverage": 0.6})], effect=10.0)
    assert result.power_warnings == [("no difference found on coverage, and none could be: 1 paired question: "
                                     "no test can detect a difference")]


@pytest.mark.parametrize("f,low,high", [
    (lambda x: x ** 3 - 2 * x - 5, 2.0, 3.0),                  # Wallis's equation
    (lambda x: math.cos(x) - x, 0.0, 1.0),
    (lambda x: math.exp(x) - 1e4, 0.0, 30.0),
    (lambda x: power.power_at(x, 73, 0.05) - 0.8, 0.0, 12.0),
    (lambda x: power.t_power(0.02, 0.3, x) - 0.8, 2.0, 5e4),
    (lambda x: (x - 1e-3) * 1e9, -1.0, 1.0),
])
def test_brents_root_takes_the_same_steps_as_scipy(f, low, high):
    assert power.root(f, low, high) == optimize.brentq(f, low, high, xtol=1e-12, rtol=1e-14)


def test_power_equals_scipy_stats_to_the_last_digit():
    for df, nc in [(1, 0.5), (9, 2.8), (73, 21.0), (499, -3.1), (9999, 1e9), (3, -1e10)]:
        critical = sps.t.ppf(0.975, df)
        expected = sps.nct.sf(critical, df, max(min(nc, 1e8), -1e8)) + sps.nct.sf(critical, df,
                                                                                  -max(min(nc, 1e8), -1e8))
        assert power.power_at(nc, df, 0.05) == float(expected)


def test_a_comparison_computes_power_without_importing_scipy_stats(monkeypatch):
    # scipy.stats and scipy.optimize take over a second to import, which a first comparison would pay.
    monkeypatch.setitem(sys.modules, "scipy.stats", None)   # any import of them now fails
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    power.noncentrality_for.cache_clear()
    a_rows, b_rows = [[row(i, f"Q{i}", {"rougel": (i * k % 7) / 7}) for i in range(30)] for k in (2, 3)]
    result = compare_results(campaign("A"), a_rows, campaign("B", {"top_k": 10}), b_rows)
    assert result.measures[0].mde
    assert result.measures[0].n_required


STARTS = {
    "API": "from evalcore.api.app import create_app\ncreate_app(sys.argv[1])",
    "dashboard": "from streamlit.testing.v1 import AppTest\nos.environ['EVALCORE_DB'] = sys.argv[1]\n"
                 "assert not AppTest.from_file('app.py', default_timeout=60).run().exception",
}


@pytest.mark.parametrize("face", list(STARTS))
def test_the_servers_import_scipy_special_beside_their_start_up(tmp_path, face):
    # A server's first comparison would otherwise pay scipy.special's import (half a second of Python on the lock the
    # comparison's own reading needs): the API starts it on a thread of its own when it is created, the dashboard once
    # a page has gone out.
    code = f"""
import os, sys, threading
{STARTS[face]}
started = "scipy.special" in sys.modules or any(t.name == "power-import" for t in threading.enumerate())
for thread in threading.enumerate():
    if thread.name == "power-import":
        thread.join(60)
print(started, "scipy.special" in sys.modules, "scipy.stats" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "e.db")], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.split()[-3:] == ["True", "True", "False"]
