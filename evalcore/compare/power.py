"""Statistical power of a paired comparison: the smallest difference it could see, and the questions needed.

Paired t approximation (two-sided, alpha = 0.05, power = 0.8) on the per-question differences
d_i = B_i - A_i of one measure, n pairs, sample standard deviation s (ddof = 1):

    power(delta; n, s) = P(T > c) + P(T < -c),  T ~ noncentral t(df = n - 1, nc = delta * sqrt(n) / s),
                         c = t_{1 - alpha/2, n - 1}

- minimum detectable effect (MDE): the delta > 0 with power(delta; n, s) = 0.8; it depends on n
  only through the noncentrality nc*(n) that gives power 0.8, so MDE = nc*(n) * s / sqrt(n);
- questions needed for an effect e: the real n >= 2 with power(e; n, s) = 0.8, rounded up;
- bootstrap check: (z_{1 - alpha/2} + z_{power}) * se, with se the standard deviation of the
  bootstrap resampled means of the differences (the normal approximation with a resampled
  standard error); close to the MDE once n is a few dozen.

Pass/fail measures use the same formulas on their 0/1 differences (-1, 0, 1): the normal-theory
approximation of McNemar's test given the observed discordance; the exact McNemar test itself
is usually a little more conservative at small n.
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from statistics import NormalDist

from evalcore.errors import EvalError
from evalcore.language.text import counted

ALPHA = 0.05
POWER = 0.8
EFFECT = 0.02  # the default difference to detect, in the measure's own units
MAX_NONCENTRALITY = 1e8


def prepare() -> None:
    """Start importing scipy.special on a thread of its own (a third of a second) while the caller reads what it
    will compute power for; the first power_at then finds it imported, or waits for the import under way."""
    if "scipy.special" not in sys.modules:
        threading.Thread(target=importlib.import_module, args=("scipy.special",), name="power-import",
                         daemon=True).start()


def t_power(delta: float, sd: float, n: float, *, alpha: float = ALPHA) -> float:
    """Two-sided power of the paired t-test when the true mean difference is delta (noncentral t)."""
    return power_at(delta * math.sqrt(n) / sd, n - 1, alpha)


def power_at(noncentrality: float, df: float, alpha: float) -> float:
    """P(|T| > t_{1-alpha/2, df}) for T ~ noncentral t(df, noncentrality)."""
    # scipy.special's functions, the ones scipy.stats.t.isf and nct.sf call: scipy.stats itself (and
    # scipy.optimize, which it imports) take over a second to import, paid by a first comparison.
    from scipy.special import stdtrit

    critical = float(stdtrit(df, 1 - alpha / 2))
    # The noncentral t's sf returns NaN beyond |nc| ~ 3e9; the power there is 1 to double precision anyway.
    noncentrality = min(max(noncentrality, -MAX_NONCENTRALITY), MAX_NONCENTRALITY)
    # P(T < -c) is taken as P(T' > c) with T' of noncentrality -nc: the cdf far in the lower tail
    # returns NaN for large noncentralities (e.g. df 73, nc 21), the sf does not.
    return float(tail(critical, df, noncentrality) + tail(critical, df, -noncentrality))


def tail(x: float, df: float, noncentrality: float) -> float:
    """P(T > x) for T ~ noncentral t(df, noncentrality), clipped to [0, 1] (scipy.stats.nct.sf)."""
    import numpy as np
    from scipy.special import _ufuncs

    with np.errstate(over="ignore"):
        return min(max(float(_ufuncs._nct_sf(x, df, noncentrality)), 0.0), 1.0)


@lru_cache(maxsize=1024)
def noncentrality_for(n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The noncentrality at which the paired t-test on n pairs reaches `power`."""
    high = 2 * z_sum(alpha, power) + 1   # the normal value, doubled: a first bracket
    while power_at(high, n - 1, alpha) < power:
        high *= 2
    return root(lambda nc: power_at(nc, n - 1, alpha) - power, 0.0, high)


def z_sum(alpha: float, power: float) -> float:
    """z_{1-alpha/2} + z_{power}: the noncentrality of a normal test with this power (2.80 for 0.05 and 0.8)."""
    return NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)


def root(f: Callable[[float], float], low: float, high: float, *, xtol: float = 1e-12, rtol: float = 1e-14,
         steps: int = 100) -> float:
    """The x in [low, high] where f changes sign, by Brent's method (Brent 1973, "Algorithms for Minimization
    without Derivatives", ch. 4): inverse quadratic interpolation or secant steps when they shrink the bracket
    fast enough, bisection otherwise; within xtol + rtol * |x| of the root.
    """
    previous, current = low, high
    f_previous, f_current = f(previous), f(current)
    if f_previous == 0:
        return previous
    if f_current == 0:
        return current
    if (f_previous < 0) == (f_current < 0):
        raise ValueError(f"f does not change sign between {low} and {high}")
    far, f_far, step, last_step = 0.0, 0.0, 0.0, 0.0
    for _ in range(steps):
        if f_previous != 0 and (f_previous < 0) != (f_current < 0):
            far, f_far = previous, f_previous   # the other end of the bracket
            step = last_step = current - previous
        if abs(f_far) < abs(f_current):   # keep the best point in `current`
            previous, current, far = current, far, current
            f_previous, f_current, f_far = f_current, f_far, f_current
        tolerance = (xtol + rtol * abs(current)) / 2
        half = (far - current) / 2
        if f_current == 0 or abs(half) < tolerance:
            return current
        last_step, step = brent_step(previous, current, far, f_previous, f_current, f_far, last_step, step,
                                     half, tolerance)
        previous, f_previous = current, f_current
        current += step if abs(step) > tolerance else math.copysign(tolerance, half)
        f_current = f(current)
    raise ArithmeticError(f"no root found within {steps} steps")


def brent_step(previous: float, current: float, far: float, f_previous: float, f_current: float, f_far: float,
               last_step: float, step: float, half: float, tolerance: float) -> tuple[float, float]:
    """(the step before, the next step): an interpolation when it is short enough, else bisection."""
    if abs(last_step) > tolerance and abs(f_current) < abs(f_previous):
        if previous == far:   # two points: secant
            trial = -f_current * (current - previous) / (f_current - f_previous)
        else:   # three points: inverse quadratic interpolation
            slope_previous = (f_previous - f_current) / (previous - current)
            slope_far = (f_far - f_current) / (far - current)
            trial = (-f_current * (f_far * slope_far - f_previous * slope_previous)
                     / (slope_far * slope_previous * (f_far - f_previous)))
        if 2 * abs(trial) < min(abs(last_step), 3 * abs(half) - tolerance):
            return step, trial
    return half, half


def mde(sd: float | None, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """Smallest |mean difference| the paired t-test detects with `power`; None below 2 pairs or with sd 0."""
    if n < 2 or not sd:
        return None
    return noncentrality_for(n, alpha, power) * sd / math.sqrt(n)


def mde_bootstrap(se: float | None, *, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The normal approximation of the MDE from the bootstrap standard error of the mean difference."""
    if not se:
        return None
    return z_sum(alpha, power) * se


def solve_n(effect: float, sd: float, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The real number of pairs n >= 2 at which the paired t-test detects `effect` with `power`."""
    if t_power(effect, sd, 2, alpha=alpha) >= power:
        return 2.0
    high = 2 * (z_sum(alpha, power) * sd / effect) ** 2 + 4
    while t_power(effect, sd, high, alpha=alpha) < power:
        high *= 2
    return root(lambda n: t_power(effect, sd, n, alpha=alpha) - power, 2.0, high)


def required_n(effect: float, sd: float | None, *, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Questions needed to detect `effect` (solve_n rounded up); None when the differences have no spread."""
    if not sd:
        return None
    return math.ceil(solve_n(effect, sd, alpha=alpha, power=power) - 1e-9)


def why_no_power(n: int, sd: float | None, mean: float) -> str | None:
    """Why the MDE and the questions needed cannot be computed, or None when they can."""
    if n < 2:
        return f"{counted(n, 'paired question')}: no test can detect a difference"
    if not sd:
        return f"every difference is {mean:g}: no spread to estimate power from"
    return None


def check_effect(effect: float) -> float:
    """The effect size to detect, refused unless a positive finite number."""
    if isinstance(effect, bool) or not isinstance(effect, (int, float)) or not 0 < effect < math.inf:
        raise EvalError("the effect size to detect must be a positive number", found=str(effect),
                        expected=f"> 0, in the measure's units (default {EFFECT})")
    return float(effect)
