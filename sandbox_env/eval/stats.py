"""Confidence intervals for eval results: Wilson (success rates) and Student t (mean scores)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel

CONFIDENCE = 0.95


class RateCI(BaseModel):
    """A success rate k/n with its Wilson score interval (None when n == 0)."""

    k: int
    n: int
    rate: float | None
    lo: float | None
    hi: float | None
    method: str = "wilson"


class MeanCI(BaseModel):
    """A sample mean with its Student t interval (None when n < 2), clipped to [lower, upper]."""

    n: int
    mean: float | None
    sd: float | None
    lo: float | None
    hi: float | None
    method: str = "student-t"


def z_quantile(p: float) -> float:
    """Standard normal quantile (1.959964 for 0.975)."""
    return statistics.NormalDist().inv_cdf(p)


def wilson(k: int, n: int, confidence: float = CONFIDENCE) -> RateCI:
    """Wilson score interval for k successes in n trials; well behaved at 0/n and n/n."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return RateCI(k=0, n=0, rate=None, lo=None, hi=None)
    z = z_quantile(0.5 + confidence / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else max(0.0, centre - half)  # exact bounds, not rounding noise
    hi = 1.0 if k == n else min(1.0, centre + half)
    return RateCI(k=k, n=n, rate=p, lo=lo, hi=hi)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student t distribution function."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Student t quantile by bisection on t_cdf (12.706205 for p=0.975, df=1)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"need 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


def mean_ci(values: Sequence[float], confidence: float = CONFIDENCE,
            bounds: tuple[float, float] = (0.0, 1.0)) -> MeanCI:
    """Mean with a two-sided Student t interval (mean ± t·s/√n), clipped to ``bounds``."""
    n = len(values)
    if n == 0:
        return MeanCI(n=0, mean=None, sd=None, lo=None, hi=None)
    m = statistics.fmean(values)
    if n < 2:
        return MeanCI(n=1, mean=m, sd=None, lo=None, hi=None)
    sd = statistics.stdev(values)
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return MeanCI(n=n, mean=m, sd=sd, lo=max(bounds[0], m - half), hi=min(bounds[1], m + half))


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def paired_difference_ci(first: Sequence[float], second: Sequence[float],
                         confidence: float = CONFIDENCE) -> MeanCI:
    """Mean of the paired differences ``first[i] - second[i]`` with a two-sided Student t interval
    (mean ± t·s/√n over the differences), clipped to [-1, 1] (scores and success are in [0, 1])."""
    if len(first) != len(second):
        raise ValueError(f"paired samples differ in length: {len(first)} vs {len(second)}")
    return mean_ci([a - b for a, b in zip(first, second, strict=True)], confidence, bounds=(-1.0, 1.0))
