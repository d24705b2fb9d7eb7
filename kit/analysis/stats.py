"""Crash-rate statistics: Clopper-Pearson intervals, exact tests and launch planning.

Every test and interval comes from :mod:`scipy.stats`:

* rates and bounds: ``binomtest(k, n).proportion_ci(method="exact")`` (Clopper-Pearson 1934);
  a one-sided upper bound uses ``binomtest(k, n, alternative="less")``, which is what "the
  candidate's rate is below 1% at 95%" means (0/100 gives 2.95%, the "rule of three");
* baseline vs candidate: one-sided Fisher (``fisher_exact``) and Boschloo
  (:func:`boschloo_p`). scipy's unconditional tests (``boschloo_exact``, ``barnard_exact``)
  take the table's *columns* as the two binomial samples, so their table is
  ``[[baseline events, candidate events], [baseline others, candidate others]]`` with
  ``alternative="greater"``; Fisher's test conditions on both margins and gives the same p
  either way. :func:`boschloo_p` computes the same test as ``boschloo_exact`` from scipy's
  parts, with the nuisance maximum found to 1e-13 (``boschloo_exact``'s ``shgo`` search
  misses it by up to 2e-9) and ten times faster; ``tests/test_stats.py`` pins both against
  an independent exact computation (3/43 vs 0/59: p = 0.0515, not the 0.040 of the
  transposed table). Boschloo's test uses Fisher's p-value as its statistic and
  maximises over the nuisance rate, so it is uniformly more powerful than Fisher's
  (Boschloo 1970, Statistica Neerlandica 24:1-9) and its p-value is never larger; the
  verdict uses it whenever the table is small enough to compute it (see
  :data:`BOSCHLOO_MAX_TABLES`), Fisher's otherwise;
* several devices: the exact conditional test of a common odds ratio of 1 over per-device
  2x2 tables (the exact form of the Cochran-Mantel-Haenszel test, Mehta, Patel & Gray 1985,
  JASA 80:969-973; R's ``mantelhaen.test(exact=TRUE)``): given each device's margins, the
  baseline's event count on that device is hypergeometric (``scipy.stats.hypergeom``), the
  statistic is their sum, and its null distribution is the convolution of those pmfs.
  A device that ran only one build adds no information, so no device can carry the verdict
  by its own crash rate;
* several classes at once: Holm's step-down adjustment (Holm 1979).

Planning (:func:`plan_launches`) computes exact power for the fixed-size design using
Fisher's test (conservative: Boschloo can only need fewer launches).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np


class _ScipyStats:
    """``scipy.stats``, imported on first use: the import takes seconds, and every
    ``coldstart`` command (and each campaign's start-up) imports this module."""

    def __getattr__(self, name: str) -> Any:
        import scipy.stats

        return getattr(scipy.stats, name)


stats = _ScipyStats()

from ..errors import UsageError

__all__ = ["Rate", "RateTest", "StratumTable", "rate", "upper_bound", "lower_bound",
           "launches_to_bound", "launches_to_see", "lower_rate_test", "stratified_exact_p",
           "holm", "fisher_p_vector", "significant", "P_RTOL", "BOSCHLOO_MAX_TABLES",
           "boschloo_p"]

#: Boschloo's test enumerates every table with the same launch counts, (n_b + 1) * (n_c + 1)
#: of them (:func:`boschloo_p`: about 0.2 s for a million here); above this many only
#: Fisher's test is run.
BOSCHLOO_MAX_TABLES = 1_000_000


#: Relative slack when a p-value is compared with alpha: exact p-values that equal alpha in
#: exact arithmetic (3/3 vs 0/3 gives Fisher p = 1/20) come out of floating point a few ulps
#: either side; scipy's own exact tests compare with the same kind of tolerance.
P_RTOL = 1e-9


def significant(p: float, alpha: float) -> bool:
    """``p <= alpha``, allowing :data:`P_RTOL` relative slack for floating-point noise."""
    return p <= alpha * (1.0 + P_RTOL)


def _check_counts(count: int, n: int) -> None:
    if n < 0 or count < 0 or count > n:
        raise UsageError(f"invalid count {count}/{n}", "counts must satisfy 0 <= k <= n")


@dataclasses.dataclass(frozen=True)
class Rate:
    """``count`` events in ``n`` launches with a two-sided Clopper-Pearson interval.

    Attributes:
        count, n: events and launches (``n`` may be 0: then ``value`` is ``None`` and the
            interval is [0, 1]).
        low, high: the exact (Clopper-Pearson) interval at ``confidence``, as fractions.
        confidence: e.g. 0.95.
    """

    count: int
    n: int
    low: float
    high: float
    confidence: float = 0.95

    @property
    def value(self) -> float | None:
        """``count / n``, or ``None`` when ``n`` is 0."""
        return self.count / self.n if self.n else None

    def text(self) -> str:
        """``12/20 (60.0%, 95% CI 36.1-80.9%)``."""
        if not self.n:
            return f"{self.count}/0 (no launches)"
        return (f"{self.count}/{self.n} ({self.count / self.n:.1%}, "
                f"{self.confidence:.0%} CI {self.low:.1%}-{self.high:.1%})")

    def to_dict(self) -> dict[str, object]:
        return {"count": self.count, "n": self.n, "rate": self.value, "low": self.low,
                "high": self.high, "confidence": self.confidence}


def rate(count: int, n: int, confidence: float = 0.95) -> Rate:
    """Two-sided Clopper-Pearson interval of ``count/n`` (``scipy.stats.binomtest``).

    Raises:
        UsageError: ``count`` or ``n`` is negative, or ``count > n``.
    """
    _check_counts(count, n)
    if n == 0:
        return Rate(count, n, 0.0, 1.0, confidence)
    ci = stats.binomtest(count, n).proportion_ci(confidence_level=confidence, method="exact")
    return Rate(count, n, float(ci.low), float(ci.high), confidence)


def upper_bound(count: int, n: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of the rate (1.0 when ``n`` is 0).

    "The rate is below ``upper_bound`` at ``confidence``": 0/100 gives 0.0295 at 95%.
    """
    _check_counts(count, n)
    if n == 0:
        return 1.0
    ci = stats.binomtest(count, n, alternative="less").proportion_ci(
        confidence_level=confidence, method="exact")
    return float(ci.high)


def lower_bound(count: int, n: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson lower bound of the rate (0.0 when ``n`` is 0)."""
    _check_counts(count, n)
    if n == 0:
        return 0.0
    ci = stats.binomtest(count, n, alternative="greater").proportion_ci(
        confidence_level=confidence, method="exact")
    return float(ci.low)


def launches_to_bound(ceiling: float, confidence: float = 0.95, count: int = 0,
                      limit: int = 10_000_000) -> int:
    """Fewest launches ``n`` with ``upper_bound(count, n, confidence) < ceiling``.

    With ``count=0`` the bound is ``1 - (1 - confidence) ** (1 / n)``, so ``n`` is the first
    integer above ``ln(1 - confidence) / ln(1 - ceiling)``: 299 for 1% at 95%, 59 for 5%.

    Raises:
        UsageError: ``ceiling`` is not in (0, 1), or more than ``limit`` launches are needed.
    """
    if not 0.0 < ceiling < 1.0:
        raise UsageError(f"ceiling {ceiling} is not a rate", "give a fraction such as 0.01")
    alpha = 1.0 - confidence
    # P(X <= count | n, ceiling) < alpha  <=>  upper bound < ceiling (Clopper-Pearson duality)
    lo = max(count + 1, int(math.log(alpha) / math.log1p(-ceiling)))
    if stats.binom.cdf(count, lo, ceiling) < alpha:
        return first_true(lambda n: stats.binom.cdf(count, n, ceiling) < alpha, count + 1, lo)
    hi = lo
    while stats.binom.cdf(count, hi, ceiling) >= alpha:
        hi *= 2
        if hi > limit:
            raise UsageError(f"bounding the rate below {ceiling} with {count} events needs "
                             f"more than {limit} launches", "raise the ceiling")
    return first_true(lambda n: stats.binom.cdf(count, n, ceiling) < alpha, lo, hi)


def first_true(pred: "object", lo: int, hi: int) -> int:
    """Smallest n in [lo, hi] with pred(n) true, for a predicate monotone in n (pred(hi))."""
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):  # type: ignore[operator]
            hi = mid
        else:
            lo = mid + 1
    return lo


def launches_to_see(event_rate: float, probability: float = 0.95) -> int:
    """Fewest launches that see at least one event with ``probability``, at ``event_rate``:
    the first ``n`` with ``1 - (1 - p) ** n >= probability`` (4 at 0.6, 59 at 0.05, 299 at
    0.01 for 95%).

    Raises:
        UsageError: ``event_rate`` is not in (0, 1].
    """
    if not 0.0 < event_rate <= 1.0:
        raise UsageError(f"rate {event_rate} is not in (0, 1]", "give a fraction such as 0.05")
    if event_rate == 1.0:
        return 1
    n = math.ceil(math.log1p(-probability) / math.log1p(-event_rate))
    while n > 1 and 1 - (1 - event_rate) ** (n - 1) >= probability:  # float safety
        n -= 1
    while 1 - (1 - event_rate) ** n < probability:
        n += 1
    return n


@dataclasses.dataclass(frozen=True)
class RateTest:
    """One-sided exact test that the first rate exceeds the second.

    Attributes:
        p: the p-value the verdict uses (``boschloo_p`` when computed, else ``fisher_p``).
        method: ``boschloo`` or ``fisher`` (which one ``p`` is).
        fisher_p: one-sided Fisher exact p (``scipy.stats.fisher_exact``).
        boschloo_p: one-sided Boschloo exact p (:func:`boschloo_p`), or ``None``
            when the table is too large (:data:`BOSCHLOO_MAX_TABLES`) or a row is empty.
    """

    p: float
    method: str
    fisher_p: float
    boschloo_p: float | None

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def lower_rate_test(x_b: int, n_b: int, x_c: int, n_c: int, *, use_boschloo: bool = True
               ) -> RateTest:
    """Test "the candidate's rate ``x_c/n_c`` is lower than the baseline's ``x_b/n_b``".

    One-sided (alternative: baseline rate > candidate rate), the builds as the two binomial
    samples (see the module doc). 12/20 vs 0/100 gives
    Fisher p = 1.19e-11 and Boschloo p = 4.2e-12; 3/43 vs 0/59 gives Boschloo p = 0.0515;
    1/150 vs 0/150 gives Fisher p = 0.5. Swap the arguments to test that a rate rose.

    Raises:
        UsageError: invalid counts.
    """
    _check_counts(x_b, n_b)
    _check_counts(x_c, n_c)
    if n_b == 0 or n_c == 0:
        return RateTest(1.0, "fisher", 1.0, None)
    table = [[x_b, n_b - x_b], [x_c, n_c - x_c]]  # rows = builds: Fisher's is symmetric
    fisher = float(stats.fisher_exact(table, alternative="greater").pvalue)
    boschloo = None
    if use_boschloo and (n_b + 1) * (n_c + 1) <= BOSCHLOO_MAX_TABLES:
        if x_b + x_c in (0, n_b + n_c):
            boschloo = 1.0  # no information in the table (scipy returns nan here)
        else:
            boschloo = boschloo_p(x_b, n_b, x_c, n_c)
    if boschloo is not None and math.isfinite(boschloo):
        # Boschloo's p never exceeds Fisher's in theory; min() guards the optimiser's grid.
        return RateTest(min(boschloo, fisher), "boschloo", fisher, boschloo)
    return RateTest(fisher, "fisher", fisher, None)


#: tables whose log Fisher p is within this of the observed one are compared exactly: the
#: log-space tails are accurate to about 1e-12 (an exact tie at 1/2 in 1/150 vs 0/150 came
#: out 1.1e-13 apart and was left out, issue #27), far inside this band
_TIE_BAND = 1e-9


def _exact_fisher(n_b: int, n_c: int):  # type: ignore[no-untyped-def]
    """``tail(k, i)``: Fisher's one-sided p of ``i`` baseline events among ``k`` in all, as
    the integers ``(sum_{j >= i} C(n_b, j) C(n_c, k - j), C(n_b + n_c, k))``."""

    def tail(k: int, i: int) -> tuple[int, int]:
        top = min(k, n_b)
        num = sum(math.comb(n_b, j) * math.comb(n_c, k - j) for j in range(max(i, k - n_c),
                                                                              top + 1))
        return num, math.comb(n_b + n_c, k)

    return tail


def boschloo_p(x_b: int, n_b: int, x_c: int, n_c: int) -> float:
    """Boschloo's one-sided exact p that the baseline's rate ``x_b/n_b`` exceeds the
    candidate's ``x_c/n_c`` (Boschloo 1970, Statistica Neerlandica 24:1-9): the statistic
    is Fisher's one-sided p; the rejection region is every table with the same launch
    counts whose statistic is at most the observed one, ties included (a table whose log
    Fisher p is within ``1e-9`` of the observed one is decided in exact integer arithmetic,
    so ties are found exactly where scipy's ``1 + 1e-13`` tolerance can miss them in log
    space); the p-value is that region's largest probability over the common rate
    ``pi`` of both builds. This is ``scipy.stats.boschloo_exact([[x_b, x_c], [n_b - x_b,
    n_c - x_c]], alternative="greater")``; the region's probability is summed by total
    events, ``sum_s w_s pi^s (1 - pi)^(N - s)``, and maximised on a 257-point grid refined
    around its three best points (``scipy.optimize.minimize_scalar``, to 1e-13).
    ``1.0`` when the table carries no information (no event, or all events).

    Raises:
        UsageError: invalid counts.
    """
    from scipy import optimize, special

    _check_counts(x_b, n_b)
    _check_counts(x_c, n_c)
    n = n_b + n_c
    if n_b == 0 or n_c == 0 or x_b + x_c in (0, n):
        return 1.0

    def log_comb(m: int) -> np.ndarray:
        k = np.arange(m + 1)
        return special.gammaln(m + 1) - special.gammaln(k + 1) - special.gammaln(m - k + 1)

    lb, lc = log_comb(n_b), log_comb(n_c)
    by_total = []  # per total k: the baseline counts from lo, their log weights, log Fisher p
    for k in range(n + 1):
        lo, hi = max(0, k - n_c), min(k, n_b)
        terms = lb[lo:hi + 1] + lc[k - hi:k - lo + 1][::-1]
        tail = np.logaddexp.accumulate(terms[::-1])[::-1]  # log sum over baseline >= i
        by_total.append((lo, terms, tail - tail[0]))
    lo, _, log_fisher = by_total[x_b + x_c]
    cut = log_fisher[x_b - lo]
    exact_tail = _exact_fisher(n_b, n_c)
    observed = exact_tail(x_b + x_c, x_b)
    log_w = np.full(n + 1, -np.inf)
    for k, (lo_k, terms, log_fisher) in enumerate(by_total):
        inside = log_fisher <= cut - _TIE_BAND
        for i in np.flatnonzero(np.abs(log_fisher - cut) <= _TIE_BAND):
            # too close to call in floating point: decide it in integers (exact ties are in)
            num, den = exact_tail(k, lo_k + int(i))
            inside[i] = num * observed[1] <= observed[0] * den
        if inside.any():
            log_w[k] = np.logaddexp.reduce(terms[inside])
    s = np.flatnonzero(np.isfinite(log_w))
    log_w = log_w[s]

    def log_size(pi: float) -> float:
        if pi <= 0.0 or pi >= 1.0:
            edge = 0 if pi <= 0.0 else n
            return float(log_w[s == edge][0]) if (s == edge).any() else -math.inf
        terms = log_w + s * math.log(pi) + (n - s) * math.log1p(-pi)
        top = terms.max()
        return float(top + math.log(np.exp(terms - top).sum()))

    grid = np.linspace(0.0, 1.0, 257)
    values = np.array([log_size(pi) for pi in grid])
    best = float(values.max())
    for i in np.argsort(values)[-3:]:
        found = optimize.minimize_scalar(lambda pi: -log_size(pi), method="bounded",
                                         bounds=(grid[max(0, i - 1)], grid[min(256, i + 1)]),
                                         options={"xatol": 1e-13})
        best = max(best, -float(found.fun))
    return min(1.0, math.exp(best))


@dataclasses.dataclass(frozen=True)
class StratumTable:
    """One stratum (device) of a stratified comparison: events and launches per build."""

    name: str
    x_b: int
    n_b: int
    x_c: int
    n_c: int

    @property
    def informative(self) -> bool:
        """Both builds ran here and the events do not fill a margin (the table can vary)."""
        k = self.x_b + self.x_c
        return self.n_b > 0 and self.n_c > 0 and 0 < k < self.n_b + self.n_c


def stratified_exact_p(strata: Sequence[StratumTable]) -> float:
    """One-sided exact conditional p that the baseline's rate exceeds the candidate's,
    stratified (e.g. by device), under a common odds ratio of 1.

    For each stratum the baseline's events given the margins follow
    ``hypergeom(M=n_b+n_c, n=x_b+x_c, N=n_b)``; the statistic is the sum over strata and its
    null distribution the convolution of those pmfs; p = P(sum >= observed). With one
    stratum this is Fisher's one-sided p. Strata that are not informative add a constant and
    are skipped. Returns 1.0 when no stratum is informative.
    """
    dist = np.array([1.0])
    observed = 0
    low = 0
    for s in strata:
        if not s.informative:
            continue
        k = s.x_b + s.x_c
        support = np.arange(max(0, k - s.n_c), min(k, s.n_b) + 1)
        pmf = stats.hypergeom.pmf(support, s.n_b + s.n_c, k, s.n_b)
        dist = np.convolve(dist, pmf)
        low += int(support[0])
        observed += s.x_b
    if dist.size == 1:
        return 1.0
    return float(min(1.0, dist[observed - low:].sum()))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def fisher_p_vector(x_b: np.ndarray | int, n_b: np.ndarray | int, x_c: np.ndarray | int,
                    n_c: np.ndarray | int) -> np.ndarray:
    """One-sided Fisher p (baseline > candidate) for arrays of counts, broadcast together.

    Fisher's one-sided p is ``P(X >= x_b)`` for ``X ~ hypergeom(n_b + n_c, x_b + x_c, n_b)``
    (the conditional distribution given both margins), i.e.
    ``hypergeom.sf(x_b - 1, n_b + n_c, x_b + x_c, n_b)``; a test checks it against
    ``scipy.stats.fisher_exact``. Used for power, where thousands of tables are needed.
    """
    xb, xc = np.broadcast_arrays(np.asarray(x_b), np.asarray(x_c))
    p: np.ndarray = stats.hypergeom.sf(xb - 1, n_b + n_c, xb + xc, n_b)
    return p


def k_max_range(lo: int, hi: int, ceiling: float, alpha: float) -> np.ndarray:
    """:func:`k_max_at` for ``n = lo .. hi - 1`` at once: a normal approximation to start from
    (``binom.ppf`` is slow for thousands of n), then moved to the exact answer (bound <
    ceiling <=> ``binom.cdf(k, n, ceiling) < alpha``); ``-1`` where no count is."""
    n = np.arange(lo, hi)
    mean, sd = n * ceiling, np.sqrt(n * ceiling * (1 - ceiling))
    k = np.clip(np.floor(mean + stats.norm.ppf(alpha) * sd), -1, n).astype(np.int64)
    while True:
        high = (k >= 0) & (stats.binom.cdf(k, n, ceiling) >= alpha)
        if not high.any():
            break
        k = np.where(high, k - 1, k)
    while True:
        low = (k + 1 <= n) & (stats.binom.cdf(k + 1, n, ceiling) < alpha)
        if not low.any():
            break
        k = np.where(low, k + 1, k)
    return k


def k_max_at(n: int, ceiling: float, alpha: float) -> int:
    """Largest event count k with ``upper_bound(k, n, 1 - alpha) < ceiling`` (-1: none)."""
    # upper bound < ceiling  <=>  binom.cdf(k, n, ceiling) < alpha (Clopper-Pearson duality)
    k = int(stats.binom.ppf(alpha, n, ceiling))
    while k >= 0 and stats.binom.cdf(k, n, ceiling) >= alpha:
        k -= 1
    while k + 1 <= n and stats.binom.cdf(k + 1, n, ceiling) < alpha:
        k += 1
    return k


