"""Unpaired comparison of two groups of answers to different questions (two windows of production traces, two
releases): the difference of means with Welch's t interval and test, the difference of pass rates with Newcombe's
hybrid score interval and the two-proportion z-test; the power to see the observed difference, the minimum detectable
effect (MDE) at 80% power for the groups' sizes, and the answers needed per group to detect a given change.

Means, groups A and B of sizes n_a, n_b with sample variances v_a, v_b (ddof 1), d = mean_B - mean_A:
    se = sqrt(v_a/n_a + v_b/n_b), df = se^4 / ((v_a/n_a)^2/(n_a-1) + (v_b/n_b)^2/(n_b-1))  (Welch-Satterthwaite)
    interval d -/+ t_{0.975, df} * se; p = 2 P(T_df > |d|/se)  (scipy.stats.ttest_ind(b, a, equal_var=False))
    power(delta) = P(|T'| > t_{0.975, df}), T' noncentral t(df, delta/se); MDE = the delta where it is 0.8;
    needed n per group for an effect e: equal groups with the observed variances, power(e) = 0.8.
Proportions, k_a of n_a and k_b of n_b passed, p = (k_a + k_b)/(n_a + n_b):
    z = d / sqrt(p(1-p)(1/n_a + 1/n_b)), p-value 2 Phi(-|z|) (equal to Pearson's chi-square without continuity
    correction, scipy.stats.chi2_contingency(..., correction=False));
    interval (Newcombe 1998, method 10): with Wilson intervals (l_a, u_a), (l_b, u_b),
    d - sqrt((p_b - l_b)^2 + (u_a - p_a)^2) .. d + sqrt((u_b - p_b)^2 + (p_a - l_a)^2);
    MDE = (z_{0.975} + z_{0.8}) * sqrt(p(1-p)(1/n_a + 1/n_b));
    needed n per group to move p_a by e: (z_{0.975} sqrt(2 q(1-q)) + z_{0.8} sqrt(p1(1-p1) + p2(1-p2)))^2 / e^2,
    p1 = p_a, p2 = p_a + e, q = (p1 + p2)/2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

from evalcore.compare.power import ALPHA, POWER, power_at, root, z_sum
from evalcore.compare.stats import wilson_interval
from evalcore.formats.shapes import Key, doc

LEVEL = 0.95
MAX_N = 1e9


@dataclass(frozen=True)
class UnpairedDelta:
    """One measure compared between two groups of different questions."""

    measure: str = field(metadata=doc("the measure: a judge's score (mean) or its pass rate (`... pass`)"))
    kind: str = field(metadata=doc("mean or proportion"))
    n_a: int = field(metadata=doc("answers in group A"))
    n_b: int = field(metadata=doc("answers in group B"))
    a: float | None = field(metadata=doc("A's mean or pass rate"))
    b: float | None = field(metadata=doc("B's mean or pass rate"))
    difference: float | None = field(metadata=doc("B - A"))
    low: float | None = field(metadata=doc("the 95% interval of the difference, low end"))
    high: float | None = field(metadata=doc("the 95% interval of the difference, high end"))
    test: str = field(metadata=doc("Welch t or two-proportion z"))
    statistic: float | None = field(metadata=doc("the test's t or z"))
    df: float | None = field(metadata=doc("Welch's degrees of freedom (null for proportions)"))
    p_value: float | None = field(metadata=doc("two-sided p-value"))
    power: float | None = field(metadata=doc("the power to detect the observed difference at these sizes"))
    mde: float | None = field(metadata=doc("the smallest difference detected with 80% power at these sizes"))
    effect: float = field(metadata=doc("the change to detect asked for (needed_per_group)"))
    needed_per_group: int | None = field(metadata=doc("answers needed in each group to detect `effect` with 80% "
                                                      "power"))
    note: str = field(metadata=doc("why something is missing, or that a non-significant result is under-powered"))
    JSON_EXTRA = (Key("significant", bool, "whether p < 0.05"),)

    @property
    def significant(self) -> bool:
        """Whether the difference is significant at 5%."""
        return self.p_value is not None and self.p_value < ALPHA

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the CLI's --json and the API."""
        return {"measure": self.measure, "kind": self.kind, "n_a": self.n_a, "n_b": self.n_b, "a": self.a,
                "b": self.b, "difference": self.difference, "low": self.low, "high": self.high, "test": self.test,
                "statistic": self.statistic, "df": self.df, "p_value": self.p_value, "power": self.power,
                "mde": self.mde, "effect": self.effect, "needed_per_group": self.needed_per_group,
                "note": self.note, "significant": self.significant}


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = math.fsum(values) / n
    return mean, math.fsum((v - mean) ** 2 for v in values) / (n - 1)


def welch_df(va: float, na: float, vb: float, nb: float) -> float:
    """Welch-Satterthwaite degrees of freedom."""
    ea, eb = va / na, vb / nb
    return (ea + eb) ** 2 / (ea * ea / (na - 1) + eb * eb / (nb - 1))


def t_quantile(q: float, df: float) -> float:
    """The Student t quantile."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def solve_noncentrality(df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The noncentrality at which a two-sided t-test with df degrees of freedom reaches `power`."""
    high = 2 * z_sum(alpha, power) + 1
    while power_at(high, df, alpha) < power:
        high *= 2
    return root(lambda nc: power_at(nc, df, alpha) - power, 0.0, high)


def compare_means(measure: str, a: Sequence[float], b: Sequence[float], *, effect: float) -> UnpairedDelta:
    """Welch's interval and test, power, MDE and the answers needed per group."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return _empty(measure, "mean", a, b, effect, "Welch t", "each group needs at least 2 answers")
    mean_a, var_a = _mean_var(a)
    mean_b, var_b = _mean_var(b)
    difference = mean_b - mean_a
    se = math.sqrt(var_a / na + var_b / nb)
    if se == 0:
        return UnpairedDelta(measure, "mean", na, nb, mean_a, mean_b, difference, difference, difference, "Welch t",
                             None, None, None, None, None, effect, None, "no spread in either group: no test")
    df = welch_df(var_a, na, var_b, nb)
    t = difference / se
    from scipy.special import stdtr

    p_value = float(2 * stdtr(df, -abs(t)))
    half = t_quantile(0.5 + LEVEL / 2, df) * se
    mde = solve_noncentrality(df) * se
    needed = needed_for_means(effect, var_a, var_b)
    delta = UnpairedDelta(measure, "mean", na, nb, mean_a, mean_b, difference, difference - half, difference + half,
                          "Welch t", t, df, p_value, power_at(difference / se, df, ALPHA), mde, effect, needed, "")
    return _noted(delta)


def needed_for_means(effect: float, var_a: float, var_b: float) -> int | None:
    """Answers per group (equal groups, these variances) for Welch's test to detect `effect` with 80% power."""
    if effect <= 0 or var_a + var_b == 0:
        return None

    def power(n: float) -> float:
        se = math.sqrt((var_a + var_b) / n)
        return power_at(effect / se, welch_df(var_a, n, var_b, n), ALPHA)

    if power(2) >= POWER:
        return 2
    high = 2 * z_sum(ALPHA, POWER) ** 2 * (var_a + var_b) / effect ** 2 + 4
    while power(high) < POWER:
        high *= 2
        if high > MAX_N:
            return None
    return math.ceil(root(lambda n: power(n) - POWER, 2.0, high) - 1e-9)


def newcombe_interval(ka: int, na: int, kb: int, nb: int, level: float = LEVEL) -> tuple[float, float]:
    """Newcombe's hybrid score interval of p_b - p_a."""
    pa, pb = ka / na, kb / nb
    la, ua = wilson_interval(pa, na, level) or (0.0, 1.0)
    lb, ub = wilson_interval(pb, nb, level) or (0.0, 1.0)
    d = pb - pa
    return d - math.sqrt((pb - lb) ** 2 + (ua - pa) ** 2), d + math.sqrt((ub - pb) ** 2 + (pa - la) ** 2)


def compare_proportions(measure: str, a: Sequence[bool], b: Sequence[bool], *, effect: float) -> UnpairedDelta:
    """The two-proportion z-test with Newcombe's interval, power, MDE and the answers needed per group."""
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        return _empty(measure, "proportion", [float(x) for x in a], [float(x) for x in b], effect,
                      "two-proportion z", "each group needs at least 1 answer")
    ka, kb = sum(a), sum(b)
    pa, pb = ka / na, kb / nb
    low, high = newcombe_interval(ka, na, kb, nb)
    pooled = (ka + kb) / (na + nb)
    se0 = math.sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb))
    needed = needed_for_proportions(pa, effect)
    if se0 == 0:
        return UnpairedDelta(measure, "proportion", na, nb, pa, pb, pb - pa, low, high, "two-proportion z", None,
                             None, None, None, None, effect, needed, "every answer has the same result: no test")
    z = (pb - pa) / se0
    normal = NormalDist()
    p_value = 2 * normal.cdf(-abs(z))
    se1 = math.sqrt(pa * (1 - pa) / na + pb * (1 - pb) / nb)
    critical = normal.inv_cdf(1 - ALPHA / 2)
    power = None if se1 == 0 else (normal.cdf((abs(pb - pa) - critical * se0) / se1)
                                   + normal.cdf((-abs(pb - pa) - critical * se0) / se1))
    delta = UnpairedDelta(measure, "proportion", na, nb, pa, pb, pb - pa, low, high, "two-proportion z", z, None,
                          p_value, power, z_sum(ALPHA, POWER) * se0, effect, needed, "")
    return _noted(delta)


def needed_for_proportions(baseline: float, effect: float) -> int | None:
    """Answers per group to detect a move of the pass rate from `baseline` by `effect` with 80% power."""
    p1, p2 = baseline, baseline + effect
    if effect == 0 or not 0 <= p2 <= 1:
        p2 = baseline - effect
        if effect == 0 or not 0 <= p2 <= 1:
            return None
    q = (p1 + p2) / 2
    normal = NormalDist()
    top = (normal.inv_cdf(1 - ALPHA / 2) * math.sqrt(2 * q * (1 - q))
           + normal.inv_cdf(POWER) * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2)))
    return math.ceil(top * top / (effect * effect) - 1e-9)


def _empty(measure: str, kind: str, a: Sequence[float], b: Sequence[float], effect: float, test: str,
           note: str) -> UnpairedDelta:
    mean_a = math.fsum(a) / len(a) if a else None
    mean_b = math.fsum(b) / len(b) if b else None
    difference = None if mean_a is None or mean_b is None else mean_b - mean_a
    return UnpairedDelta(measure, kind, len(a), len(b), mean_a, mean_b, difference, None, None, test, None, None,
                         None, None, None, effect, None, note)


def _noted(delta: UnpairedDelta) -> UnpairedDelta:
    """A non-significant result whose difference is below its MDE says it could not have seen it."""
    if delta.significant or delta.mde is None or delta.difference is None or abs(delta.difference) >= delta.mde:
        return delta
    return replace(delta, note=f"not significant, and under-powered: a difference below {delta.mde:.3g} is not "
                               "detectable at these sizes")
