"""Lower bounds on the launches *any* sequential rule needs, to measure the kit's rules
against (``benchmarks/bench_sequential.py``, docs/verdict.md) and to prune ``plan``'s search.

* **Wald's bound** (Wald 1947, *Sequential Analysis*, sec. 4.5; Hoeffding 1960, Ann. Math.
  Statist. 31:352): a sequential test of Bernoulli launches that says "below the ceiling"
  with chance at most ``a`` when the rate is the ceiling ``c`` and at least ``w`` when it is
  ``p1`` makes, at ``p1``, on average at least

      E_p1[N] >= d(w, a) / KL(p1, c),   d(w, a) = w log(w/a) + (1-w) log((1-w)/(1-a))

  launches: by Wald's identity ``E_p1[log LR_N] = E_p1[N] KL(p1, c)``, and by the
  data-processing inequality the log LR of the whole run is, in mean, at least the
  divergence ``d(w, a)`` of its two-point decision.
* **With a finished baseline** of ``n_b`` launches at ``p_b``, ``fixed`` needs the baseline
  to have seen the target (chance ``s = 1 - (1 - p_b)^n_b``). Given the baseline's count
  ``j`` the candidate's run is such a test, with power ``w_j`` and level ``a_j`` (a rule may
  let them depend on ``j``), where ``sum_j P(j) w_j = w`` and ``sum_j P(j) a_j <= a`` (the
  false ``fixed`` at the ceiling with this very baseline rate). Averaging Wald's bound over
  the counts ``j >= 1`` (``d`` is jointly convex, and its perspective ``P d(w/P, a/P)``
  falls as ``P`` rises) gives ``E[N_c] >= s d(w/s, a/s) / KL(p1, c)``
  (:func:`least_mean_launches`).
* **The baseline's own size** (Neyman-Pearson): at the null point ``p_b = p_c = p1`` and at
  the alternative ``p_b``, ``p_c = p1`` the candidate's data have the same law given the
  baseline's, so the likelihood ratio of the whole run is the baseline's alone, and no rule
  whose false ``fixed`` there is at most ``a`` has more power than the randomized
  one-sample binomial test of ``p1`` against ``p_b`` at level ``a`` with ``n_b`` launches
  (:func:`np_power`, :func:`least_baseline_launches`).
* **Any baseline, staged or not** (:func:`least_launches_any_baseline`): a baseline that
  stops at any time ``T`` of its choosing (a stage, or its first event) has seen the target
  with chance at most ``E[X_T] = p_b E[T]`` (Wald's identity for the event count ``X_T``),
  so power ``w`` needs ``E[T] >= w / p_b``; and, as in the Neyman-Pearson bullet, the whole
  run's likelihood ratio between ``p_b = p_c = p1`` and ``(p_b, p1)`` is the baseline's, so
  Wald's bound gives ``E[T] >= d(w, a) / KL(p_b, p1)`` too. The candidate's run, whatever
  it reads of the baseline, needs Wald's ``d(w, a) / KL(p1, c)`` (the bullet above with
  ``s = 1``: joint convexity over the baseline's data). The larger baseline bound plus the
  candidate's bounds every rule, whatever its baseline.
"""

from __future__ import annotations

import math

from .stats import stats

__all__ = ["divergence", "kl_bernoulli", "wald_mean_launches", "least_mean_launches",
           "np_power", "least_baseline_launches", "least_total_launches",
           "least_launches_any_baseline"]


def kl_bernoulli(p: float, q: float) -> float:
    """``KL(Bernoulli(p) || Bernoulli(q))`` in nats (``0 < q < 1``, ``0 <= p <= 1``)."""
    out = 0.0
    if p > 0.0:
        out += p * math.log(p / q)
    if p < 1.0:
        out += (1.0 - p) * math.log((1.0 - p) / (1.0 - q))
    return out


def divergence(w: float, a: float) -> float:
    """``d(w, a)``: the divergence of a decision made with chance ``w`` from one made with
    chance ``a`` (:func:`kl_bernoulli`); 0 where ``w <= a``."""
    return kl_bernoulli(w, a) if w > a else 0.0


def wald_mean_launches(power: float, level: float, p1: float, ceiling: float) -> float:
    """Wald's lower bound (module doc) on the mean launches at ``p1`` of any sequential test
    that says "below ``ceiling``" with chance >= ``power`` at ``p1`` and <= ``level`` at the
    ceiling."""
    return divergence(power, level) / kl_bernoulli(p1, ceiling)


def least_mean_launches(baseline_rate: float, n_b: int, power: float, level: float,
                        p1: float, ceiling: float,
                        baseline_mean: float | None = None) -> float:
    """Lower bound on baseline plus mean candidate launches at ``p1`` of any rule against a
    finished baseline of ``n_b`` launches at ``baseline_rate`` whose power there is
    ``power`` and whose candidate side says "below" with chance <= ``level`` at the ceiling
    (module doc); ``inf`` when the baseline sees the target less often than ``power``.

    A staged baseline (:mod:`kit.analysis.stage`) passes its most launches as ``n_b`` and
    its mean as ``baseline_mean``: it has seen no event only when all ``n_b`` showed none
    (a stage ends early only on ``R >= 1`` events), so the candidate's bound is the same,
    and the baseline costs its mean."""
    seen = -math.expm1(n_b * math.log1p(-baseline_rate))
    if seen < power:
        return math.inf
    base = float(n_b) if baseline_mean is None else baseline_mean
    return base + seen * divergence(min(1.0, power / seen), min(1.0, level / seen)) / (
        kl_bernoulli(p1, ceiling))


def np_power(n_b: int, null_rate: float, rate: float, level: float) -> float:
    """Power at ``rate`` of the most powerful (randomized) test of ``null_rate`` against
    ``rate > null_rate`` at ``level`` from ``n_b`` Bernoulli launches: reject above ``k``,
    at ``k`` with the chance that fills the level (Neyman & Pearson 1933)."""
    k = int(stats.binom.isf(level, n_b, null_rate))  # smallest k with P0(X > k) <= level
    while k > 0 and stats.binom.sf(k - 1, n_b, null_rate) <= level:
        k -= 1
    while stats.binom.sf(k, n_b, null_rate) > level:
        k += 1
    above = float(stats.binom.sf(k, n_b, null_rate))
    at = float(stats.binom.pmf(k, n_b, null_rate))
    gamma = 0.0 if at <= 0.0 else min(1.0, (level - above) / at)
    return float(stats.binom.sf(k, n_b, rate) + gamma * stats.binom.pmf(k, n_b, rate))


def least_baseline_launches(baseline_rate: float, power: float, level: float, p1: float,
                            limit: int = 100_000) -> int:
    """Fewest baseline launches with which any rule can have ``power`` at a candidate rate
    ``p1`` and false ``fixed`` <= ``level`` at ``p_b = p_c = p1`` (:func:`np_power`)."""
    n = 1
    while n <= limit and np_power(n, p1, baseline_rate, level) < power:
        n += 1
    return n


def least_total_launches(baseline_rate: float, power: float, level: float, p1: float,
                         ceiling: float, limit: int = 100_000) -> tuple[float, int]:
    """``(bound, n_b)``: the least of :func:`least_mean_launches` over finished baselines of
    at least :func:`least_baseline_launches` launches, and the size where it is reached."""
    n = least_baseline_launches(baseline_rate, power, level, p1, limit)
    best = (math.inf, n)
    while n <= limit and n < best[0]:
        value = least_mean_launches(baseline_rate, n, power, level, p1, ceiling)
        if value < best[0]:
            best = (value, n)
        n += 1
    return best


def least_launches_any_baseline(baseline_rate: float, power: float, level: float, p1: float,
                                ceiling: float) -> float:
    """Lower bound on baseline plus mean candidate launches at ``p1`` of *any* rule, its
    baseline of any size, staged or stopped at will (module doc), whose power at ``p1`` is
    ``power`` and whose false ``fixed`` is at most ``level`` at the ceiling and at
    ``p_b = p_c = p1``: for the baseline the larger of ``power / baseline_rate`` (it must
    see the target with chance ``power``) and Wald's bound between ``baseline_rate`` and
    ``p1``, plus Wald's bound (:func:`wald_mean_launches`) for the candidate. Where it is
    above a goal, no rule reaches that goal."""
    baseline = max(power / baseline_rate,
                   divergence(power, level) / kl_bernoulli(baseline_rate, p1))
    return baseline + wald_mean_launches(power, level, p1, ceiling)
