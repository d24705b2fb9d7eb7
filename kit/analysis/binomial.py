"""Binomial tables shared by the fixed-size plan (:mod:`kit.analysis.plan`) and the
sequential rules (:mod:`kit.analysis.sprt`, :mod:`kit.analysis.groupseq`), so that neither
imports the other.

All come from the Clopper-Pearson duality: the one-sided upper bound at ``1 - alpha`` for
``k`` events in ``n`` launches is below ``ceiling`` exactly when
``scipy.stats.binom.cdf(k, n, ceiling) < alpha`` (Clopper & Pearson 1934).
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import UsageError
from .stats import k_max_range, launches_to_bound, stats

#: a margin below alpha (issue #27), so that a simulation of the rule's usual size reads at
#: or below alpha and a small change to the candidate side cannot push it over; the SPRT
#: (:mod:`.sprt`) and the finished-baseline level (:mod:`.finished`) both keep it
ALPHA_MARGIN = 0.95

__all__ = ["k_max_table", "k_max_cached", "bound_below", "candidate_power",
           "launches_to_bound_with_power"]


def k_max_table(max_launches: int, ceiling: float, alpha: float) -> np.ndarray:
    """``k[n]`` for ``n = 0..max_launches``: the most events in ``n`` launches whose one-sided
    Clopper-Pearson bound at ``1 - alpha`` is below ``ceiling`` (-1: none), as
    :func:`kit.analysis.stats.k_max_at` gives it one ``n`` at a time."""
    k = k_max_range(1, max_launches + 1, ceiling, alpha)
    return np.concatenate([[-1], k])


@functools.lru_cache(maxsize=64)
def k_max_cached(max_launches: int, ceiling: float, alpha: float) -> tuple[int, ...]:
    """:func:`k_max_table` as a cached tuple."""
    return tuple(int(k) for k in k_max_table(max_launches, ceiling, alpha))


@functools.lru_cache(maxsize=1 << 16)
def bound_below(events: int, n: int, ceiling: float, alpha: float) -> bool:
    """Whether the one-sided Clopper-Pearson bound at ``1 - alpha`` for ``events`` in ``n``
    launches is below ``ceiling`` (``binom.cdf(events, n, ceiling) < alpha``)."""
    return n > 0 and bool(stats.binom.cdf(events, n, ceiling) < alpha)


def candidate_power(lo: int, hi: int, ceiling: float, alpha: float, rate: float
                    ) -> np.ndarray:
    """For ``n = lo .. hi - 1``: the chance that a candidate at ``rate`` has its one-sided
    Clopper-Pearson bound at ``1 - alpha`` below ``ceiling`` after ``n`` launches,
    ``P(X <= k_max(n))``."""
    n = np.arange(lo, hi)
    k = k_max_range(lo, hi, ceiling, alpha)
    return np.where(k >= 0, stats.binom.cdf(k, n, rate), 0.0)


def launches_to_bound_with_power(candidate_rate: float, *, ceiling: float = 0.05,
                                 alpha: float = 0.05, power: float = 0.8,
                                 limit: int = 200_000) -> int:
    """Fewest launches of a candidate at ``candidate_rate`` whose one-sided Clopper-Pearson
    bound at ``1 - alpha`` falls below ``ceiling`` with probability >= ``power`` (exact
    binomial; 59 for a candidate at 0 and a 5% ceiling, 153 at a true rate of 1.25%). The
    chance is a saw-tooth in the launches, so every size is tried in order from the
    clean-candidate bound up: the first that reaches it is returned.

    Raises:
        UsageError: more than ``limit`` launches needed.
    """
    lo = launches_to_bound(ceiling, 1 - alpha)
    while lo <= limit:
        hi = min(limit + 1, lo + 4096)
        hits = np.flatnonzero(candidate_power(lo, hi, ceiling, alpha, candidate_rate)
                              >= power)
        if hits.size:
            return lo + int(hits[0])
        lo = hi
    raise UsageError(f"a candidate at {candidate_rate} needs more than {limit} launches to be "
                     f"bounded below {ceiling}", "raise the ceiling")
