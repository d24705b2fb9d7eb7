"""The fixed-size design behind ``coldstart plan``: how many baseline and candidate launches
end ``fixed`` with the wanted power (exact binomial sums; Fisher's test).

* :func:`design_power`: the exact power of one design;
* :func:`plan_launches`: the design with the fewest launches in all (:class:`Plan`).

:mod:`kit.analysis.plan` builds the ``--until-verdict`` rule on it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import UsageError
from .binomial import k_max_table, launches_to_bound_with_power
from .stats import P_RTOL, fisher_p_vector, k_max_at, launches_to_bound, stats

__all__ = ["Plan", "design_power", "plan_launches"]


def _support(n: int, p: float, eps: float = 1e-12) -> np.ndarray:
    if p <= 0.0:
        return np.array([0])
    if p >= 1.0:
        return np.array([n])
    lo = int(stats.binom.ppf(eps, n, p))
    hi = int(stats.binom.isf(eps, n, p))
    return np.arange(max(0, lo - 1), min(n, hi + 1) + 1)


def design_power(p_b: float, n_b: int, p_c: float, n_c: int, *, alpha: float,
                 ceiling: float) -> float:
    """Exact probability that a fixed-size design gives ``fixed`` (with Fisher's test).

    ``fixed`` = the baseline sees the target at least once, Fisher's one-sided p <= alpha,
    and the candidate's one-sided upper bound at ``1 - alpha`` is below ``ceiling``. The sum
    runs over the binomial support of both builds (tails below 1e-12 are dropped).
    """
    k_max = k_max_at(n_c, ceiling, alpha)
    if k_max < 0:
        return 0.0
    xc = _support(n_c, p_c)
    xc = xc[xc <= k_max]
    if xc.size == 0:
        return 0.0
    xb = _support(n_b, p_b)
    xb = xb[xb >= 1]
    if xb.size == 0:
        return 0.0
    pv = fisher_p_vector(xb[:, None], n_b, xc[None, :], n_c)
    w = stats.binom.pmf(xb, n_b, p_b)[:, None] * stats.binom.pmf(xc, n_c, p_c)[None, :]
    return float((w * (pv <= alpha * (1.0 + P_RTOL))).sum())


@dataclasses.dataclass(frozen=True)
class Plan:
    """A fixed-size design: launches per build that give ``fixed`` with ``power``.

    Attributes:
        baseline_rate, candidate_rate: the assumed true target rates.
        ceiling, alpha, power: the verdict's settings and the wanted power.
        baseline_launches, candidate_launches: the design (counted launches per build).
        achieved_power: exact power of that design (Fisher's test; Boschloo's is higher).
        positive_control_probability: chance that the baseline sees the target at least once.
        clean_bound_launches: clean candidate launches that alone bound the rate below the
            ceiling (:func:`launches_to_bound`).
    """

    baseline_rate: float
    candidate_rate: float
    ceiling: float
    alpha: float
    power: float
    baseline_launches: int
    candidate_launches: int
    achieved_power: float
    positive_control_probability: float
    clean_bound_launches: int

    @property
    def total_launches(self) -> int:
        return self.baseline_launches + self.candidate_launches

    def to_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "total_launches": self.total_launches}


def _clean_threshold(n_b: np.ndarray, n_c: np.ndarray, alpha: float) -> np.ndarray:
    """``t0``: the fewest baseline events whose Fisher one-sided p against a *clean*
    candidate of ``n_c`` launches is <= alpha (``p = C(n_b, x) / C(n_b + n_c, x)``, a
    running product); ``-1`` where none is. Arrays of designs, broadcast."""
    n_b, n_c = np.broadcast_arrays(np.asarray(n_b, dtype=np.int64),
                                   np.asarray(n_c, dtype=np.int64))
    t0 = np.full(n_b.shape, -1, dtype=np.int64)
    log_p = np.zeros(n_b.shape)
    cut = np.log(alpha * (1.0 + P_RTOL))
    for x in range(1, int(n_b.max(initial=0)) + 1):
        open_ = (t0 < 0) & (x <= n_b)
        if not open_.any():
            break
        log_p = np.where(open_, log_p + np.log(np.maximum(n_b - x + 1, 1))
                         - np.log(np.maximum(n_b + n_c - x + 1, 1)), log_p)
        t0 = np.where(open_ & (log_p <= cut), x, t0)
    return t0


def _power_bound(p_b: float, p_c: float, n_b: np.ndarray, n_c: np.ndarray, alpha: float,
                 ceiling: float, k_max: np.ndarray) -> np.ndarray:
    """An upper bound of :func:`design_power` for arrays of designs (``k_max[n]`` as
    :func:`kit.analysis.stats.k_max_at`): ``sum_j P(X_c = j) P(X_b >= max(t0, r_j))`` over the
    candidate counts ``j <= k_max(n_c)`` whose bound is below the ceiling, where ``t0`` is
    the threshold against a clean candidate (:func:`_clean_threshold`; more candidate events
    only raise it) and ``r_j = floor(j n_b / n_c) + 1``: a one-sided Fisher p <= alpha < 1/2
    needs the baseline's rate above the candidate's, since the hypergeometric is a
    Poisson-binomial whose median is the floor or the ceiling of its mean (Darroch 1964,
    Ann. Math. Statist. 35:1317), so ``P(X >= x) >= 1/2`` for ``x`` at most the mean."""
    t0 = _clean_threshold(n_b, n_c, alpha)
    kmax = k_max[n_c]
    bound = np.zeros(n_b.shape)
    ok = (t0 > 0) & (kmax >= 0)
    if not ok.any():
        return bound
    nb, nc, t, km = n_b[ok], n_c[ok], t0[ok], kmax[ok]
    if p_c <= 0.0:
        bound[ok] = stats.binom.sf(t - 1, nb, p_b)
        return bound
    j = np.arange(int(km.max()) + 1)[None, :]
    need = np.maximum(t[:, None], (j * nb[:, None]) // nc[:, None] + 1)
    weight = np.where(j <= km[:, None], stats.binom.pmf(j, nc[:, None], p_c), 0.0)
    bound[ok] = (weight * stats.binom.sf(need - 1, nb[:, None], p_b)).sum(axis=1)
    return bound


def _clean_power(p_b: float, n_b: np.ndarray, n_c: np.ndarray, alpha: float) -> np.ndarray:
    """Exact power of designs with a clean candidate (rate 0) of ``n_c`` launches, each at
    least the clean bound: ``P(X_b >= t0(n_b, n_c))`` (:func:`_clean_threshold`)."""
    t0 = _clean_threshold(n_b, n_c, alpha)
    out = np.zeros(np.broadcast(n_b, n_c).shape)
    ok = t0 > 0
    out[ok] = stats.binom.sf(t0[ok] - 1, np.broadcast_to(n_b, out.shape)[ok], p_b)
    return out


def _smallest_clean_design(p_b: float, alpha: float, power: float, clean: int, n_b_min: int,
                           limit: int) -> tuple[int, int] | None:
    """The design with the fewest launches for a clean candidate (module doc of
    :func:`plan_launches`): for each ``n_b`` the power only grows with ``n_c`` (Fisher's p of
    ``x/n_b`` vs ``0/n_c`` falls as ``n_c`` grows), so the smallest ``n_c`` that reaches it is
    found by bisection, for every ``n_b`` from the smallest that can see the target, until
    ``n_b + clean`` alone is no smaller than the best total found."""
    best: tuple[int, float, int, int] | None = None  # (total, -power, n_b, n_c)
    start, chunk = n_b_min, 32
    while start <= limit and (best is None or start + clean < best[0]):
        stop = min(limit, start + chunk - 1)
        if best is not None:
            stop = min(stop, best[0] - clean - 1)
        n_b = np.arange(start, stop + 1)
        chunk = min(4096, 2 * chunk)
        lo = np.full(n_b.shape, clean)
        hi = np.full(n_b.shape, clean)
        reach = _clean_power(p_b, n_b, hi, alpha) >= power
        while not reach.all():  # double until every design reaches the power (or the limit)
            hi = np.where(reach, hi, np.minimum(2 * hi, limit))
            reach = (_clean_power(p_b, n_b, hi, alpha) >= power) | (hi >= limit)
        feasible = _clean_power(p_b, n_b, hi, alpha) >= power
        lo = np.where(hi > clean, np.maximum(clean, hi // 2), clean)
        while (lo < hi).any():
            mid = (lo + hi) // 2
            ok = _clean_power(p_b, n_b, mid, alpha) >= power
            hi = np.where((lo < hi) & ok, mid, hi)
            lo = np.where((lo < hi) & ~ok, mid + 1, lo)
        for i in np.flatnonzero(feasible):
            nb, nc = int(n_b[i]), int(hi[i])
            key = (nb + nc, -float(_clean_power(p_b, np.array([nb]), np.array([nc]),
                                                alpha)[0]), nb, nc)
            if best is None or key < best:
                best = key
        start = int(n_b[-1]) + 1
    return None if best is None else (best[2], best[3])


def plan_launches(baseline_rate: float, *, ceiling: float = 0.05, alpha: float = 0.05,
                  power: float = 0.8, candidate_rate: float = 0.0, limit: int = 200_000
                  ) -> Plan:
    """The smallest fixed-size design (fewest launches in all) that ends ``fixed`` with
    ``power`` (:func:`design_power`: exact, Fisher's test).

    The search is exhaustive, and provably so. For a clean candidate (the default) the power
    of a design is ``P(baseline events significant against 0/n_c)``, which only grows with
    ``n_c``: for every ``n_b`` that can see the target the smallest ``n_c`` is found by
    bisection (:func:`_smallest_clean_design`). Otherwise it goes through the totals ``T`` in
    ascending order and, for each, every split ``n_b + n_c = T`` with ``n_c`` at least the
    first size whose bound alone reaches the power and ``n_b`` at least the first that sees
    the target once with it (both necessary). A split is evaluated exactly only when an
    upper bound of its power reaches the wanted one (:func:`_power_bound`: exact for a
    clean candidate, where ``fixed`` needs only the baseline's events to be significant
    against the candidate's launches). The first total with a split
    that reaches the power is the minimum; among its splits the most powerful is kept
    (3 + 59 for a baseline rate of 0.5 and a 5% ceiling; 54 + 59 for 0.1).

    Raises:
        UsageError: a rate out of range, ``candidate_rate >= ceiling`` or
            ``candidate_rate >= baseline_rate`` (the verdict could never be ``fixed``), or
            more than ``limit`` launches per build needed.
    """
    for name, value in (("baseline rate", baseline_rate), ("ceiling", ceiling),
                        ("alpha", alpha), ("power", power)):
        if not 0.0 < value < 1.0:
            raise UsageError(f"{name} {value} is not in (0, 1)", "give a fraction, e.g. 0.05")
    if not 0.0 <= candidate_rate < ceiling:
        raise UsageError(f"candidate rate {candidate_rate} is not below the ceiling {ceiling}",
                         "the verdict can only be fixed when the candidate's true rate is "
                         "below the ceiling")
    if candidate_rate >= baseline_rate:
        raise UsageError(f"candidate rate {candidate_rate} is not below the baseline rate "
                         f"{baseline_rate}", "nothing to detect")
    clean = launches_to_bound(ceiling, 1 - alpha)
    too_many = UsageError(f"no design under {limit} launches per build reaches power {power}",
                          "raise the ceiling or lower the power")
    n_c_min = launches_to_bound_with_power(candidate_rate, ceiling=ceiling, alpha=alpha,
                                           power=power, limit=limit)
    n_b_min = max(1, math.ceil(math.log1p(-power) / math.log1p(-baseline_rate) - 1e-9))
    while n_b_min > 1 and 1 - (1 - baseline_rate) ** (n_b_min - 1) >= power:
        n_b_min -= 1
    if n_b_min > limit:
        raise too_many
    k_max = np.zeros(0, dtype=np.int64)

    def bound_of(n_b: np.ndarray, n_c: np.ndarray) -> np.ndarray:
        nonlocal k_max
        if n_c.max(initial=0) >= k_max.size:  # extend the k_max table as needed
            k_max = np.asarray(k_max_table(max(int(n_c.max()) + 1, 2 * k_max.size, 1024),
                                            ceiling, alpha))
        return _power_bound(baseline_rate, candidate_rate, n_b, n_c, alpha, ceiling, k_max)

    if candidate_rate == 0.0:  # the common case: the power is monotone in n_c, and exact
        found = _smallest_clean_design(baseline_rate, alpha, power, clean, n_b_min, limit)
        if found is not None:
            nb, nc = found
            achieved = design_power(baseline_rate, nb, 0.0, nc, alpha=alpha, ceiling=ceiling)
            if achieved >= power:
                return Plan(baseline_rate, candidate_rate, ceiling, alpha, power, nb, nc,
                            achieved, 1.0 - (1.0 - baseline_rate) ** nb, clean)
    total = n_b_min + n_c_min
    while total <= 2 * limit:
        n_b = np.arange(n_b_min, total - n_c_min + 1)
        n_c = total - n_b
        keep = (n_b <= limit) & (n_c <= limit)
        n_b, n_c = n_b[keep], n_c[keep]
        bound = bound_of(n_b, n_c)
        best: tuple[float, int, int] | None = None
        for i in np.flatnonzero(bound >= power * (1.0 - 1e-12)):
            nb, nc = int(n_b[i]), int(n_c[i])
            achieved = design_power(baseline_rate, nb, candidate_rate, nc, alpha=alpha,
                                    ceiling=ceiling)
            if achieved >= power and (best is None or achieved > best[0]):
                best = (achieved, nb, nc)
        if best is not None:
            achieved, nb, nc = best
            return Plan(baseline_rate, candidate_rate, ceiling, alpha, power, nb, nc,
                        achieved, 1.0 - (1.0 - baseline_rate) ** nb, clean)
        total += 1
    raise too_many
