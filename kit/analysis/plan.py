"""Launch planning: how many launches per build a verdict needs (``coldstart plan``).

* :func:`plan_launches`: a fixed-size design, baseline and candidate launches that end
  ``fixed`` with the wanted power (exact binomial sums; Fisher's test);
* :func:`plan_sequential`: the same question for ``coldstart run ... --until-verdict``: the
  suggested ``--launches`` cap and the rule's operating characteristics at several true
  candidate rates.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

import math

from ..errors import UsageError
from .binomial import ALPHA_MARGIN, k_max_table, launches_to_bound_with_power
from .stats import P_RTOL, fisher_p_vector, k_max_at, launches_to_bound, stats
from .wald import least_baseline_launches, least_mean_launches

__all__ = ["Plan", "design_power", "launches_to_bound_with_power", "plan_launches",
           "SequentialPlan", "plan_sequential", "short_beta", "beta_option"]


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


@dataclasses.dataclass(frozen=True)
class SequentialPlan:
    """What ``coldstart plan`` reports: the fixed-size design and the sequential rule.

    Attributes:
        baseline_rate: the baseline's target rate planned from.
        fixed: the fixed-size design at the candidate's assumed rate.
        clean_fixed: the fixed-size design for a clean candidate (rate 0).
        baseline_launches_to_see: baseline launches that see the target at least once with
            probability ``1 - alpha``.
        cap: the suggested ``--launches`` for ``--until-verdict``: with the baseline's
            launches, at most 1.3 times the reference design's total (:func:`_design_rule`).
        design: the rule (:class:`kit.analysis.sprt.SprtDesign`, exact thresholds for
            ``cap`` launches, and for a finished baseline of ``baseline_launches``).
        operating: the candidate side's operating characteristics at the rates of interest
            (0, the candidate's, the design rate, the ceiling, the baseline's), ascending.
        reference: the fixed-size design the rule is measured against: at the design rate
            when the baseline's rate is at least twice the ceiling, else ``clean_fixed``.
        baseline_launches: the finished baseline the rule is designed for (make these
            first, then run the candidate with ``--launches cap --beta design.beta``); for a
            staged baseline, its most launches (``--launches``).
        baseline_stage: ``(n1, r)`` where the baseline is staged by design (``--stage
            n1:r``: it stops at ``n1`` launches with at least ``r`` target events), else
            ``None``.
        power: the rule's exact chance of ``fixed`` with that baseline at
            ``baseline_rate`` and a candidate at the design rate (comparison included).
        reference_power: the reference design's power there (Fisher's test, as ``plan``).
        expected_launches: baseline launches plus the candidate's mean launches there.
    """

    baseline_rate: float
    fixed: Plan
    clean_fixed: Plan
    baseline_launches_to_see: int
    cap: int
    design: Any  # SprtDesign (kit.analysis.sprt), typed loosely to keep imports one-way
    operating: tuple[Any, ...]
    reference: Plan | None = None
    baseline_launches: int | None = None
    power: float | None = None
    reference_power: float | None = None
    expected_launches: float | None = None
    baseline_stage: tuple[int, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``coldstart plan --json`` prints."""
        d = self.design
        return {"fixed_design": self.fixed.to_dict(),
                "baseline_launches_to_see_target": self.baseline_launches_to_see,
                "sequential": {"ceiling": d.ceiling, "design_rate": d.design_rate,
                               "alpha": d.alpha, "beta": d.beta,
                               "clean_launches": d.clean_launches(), "max_launches": self.cap,
                               "lr_upper": math.exp(d.upper), "lr_lower": math.exp(d.lower),
                               "baseline_launches": self.baseline_launches,
                               "baseline_stage": (None if self.baseline_stage is None else
                                                  {"launches": self.baseline_stage[0],
                                                   "events": self.baseline_stage[1]}),
                               "comparison_alpha": d.comparison_alpha,
                               "stop_at_first_below": d.stop_at_first_below,
                               "power": self.power, "reference_power": self.reference_power,
                               "expected_launches": self.expected_launches,
                               "reference_design": (self.reference.to_dict()
                                                    if self.reference else None),
                               "operating": [o.to_dict() for o in self.operating]}}


#: baseline sizes tried for the rule, as multiples of the reference design's (and, for a
#: small reference, every size from 2 to twice it)
_BASELINE_FACTORS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25)
#: the candidate betas tried per baseline size: beta from ``beta`` down by ``_BETA_STEP``
#: (not under ``_BETA_FLOOR``) until the power is reached, then a bisection of this many
#: steps
_BETA_STEPS = 5
_BETA_FLOOR = 0.02
_BETA_STEP = 0.8
#: designs of at most this many launches in all also try betas on a grid (cheap there, and
#: where a step of the binomial's discreteness moves the power most)
_SMALL = 100


def short_beta(beta: float) -> float:
    """``beta`` to 6 significant digits: the betas :func:`_design_rule` tries, so that the
    one it keeps prints short and exactly (:func:`beta_option`)."""
    return float(f"{beta:.6g}")


def beta_option(design_beta: float, given: float) -> str:
    """`` --beta B`` for a rule made at ``design_beta`` when that is not ``given`` (the
    default or the user's), else ``""``: ``B`` is the shortest text that reads back as
    that very float (``repr``), so the printed command runs the rule designed (``0.10048``
    printed ``0.1`` ran another: power 0.80485 where the design had 0.80382)."""
    return "" if design_beta == given else f" --beta {design_beta!r}"


def _baseline_sizes(reference: Plan, baseline_rate: float, design_rate: float, goal: float
                    ) -> list[int]:
    """The finished-baseline sizes :func:`_design_rule` tries, nearest the reference's
    first: :data:`_BASELINE_FACTORS` times the reference's, never fewer than any rule needs
    for power ``goal`` at the design rate (:func:`kit.analysis.wald.least_baseline_launches`)."""
    least = least_baseline_launches(baseline_rate, goal, ALPHA_MARGIN * reference.alpha,
                                    design_rate)
    ref = reference.baseline_launches
    sizes = {max(1, math.ceil(f * ref)) for f in _BASELINE_FACTORS}
    if ref <= 8:
        sizes |= set(range(2, 2 * ref + 1))
    return sorted((n for n in sizes if n >= least), key=lambda n: (abs(n - ref), n))


#: staged baselines (:func:`_stages`): final sizes as multiples of the best single size, the
#: most events a first stage asks for, and the chances of meeting it at the baseline's rate
#: from which the first stage's size is chosen (0.5 as well as 0.8: for a strong baseline
#: a first stage of one launch, met half the time, saves more than a surer one; at 0.5/0.1
#: `--stage 1:1` up to 9 makes 52.2 launches on average where 5:2 made 53.1)
_STAGE_FACTORS = (1.0, 1.25, 1.5)
_STAGE_EVENTS = 3
_STAGE_MEET = (0.5, 0.8)


def _stages(n_b: int, baseline_rate: float, least: int) -> list[tuple[int, int, int]]:
    """The staged baselines ``(n1, r, n2)`` :func:`_design_rule` tries around the best single
    size ``n_b``: ``n2`` from :data:`_STAGE_FACTORS` times it (every size up to twice it for
    a small one), ``r`` events from 1 to :data:`_STAGE_EVENTS`, and ``n1`` the fewest
    launches that show ``r`` events with each chance of :data:`_STAGE_MEET` at
    ``baseline_rate``; never a final size under ``least``."""
    finals = {max(2, math.ceil(f * n_b)) for f in _STAGE_FACTORS}
    if n_b <= 8:
        finals |= set(range(max(2, n_b), 2 * n_b + 1))
    found = set()
    for n2 in sorted(f for f in finals if f >= least):
        for r in range(1, _STAGE_EVENTS + 1):
            for meet in _STAGE_MEET:
                n1 = r
                while n1 < n2 and stats.binom.sf(r - 1, n1, baseline_rate) < meet:
                    n1 += 1
                if r <= n1 < n2:
                    found.add((n1, r, n2))
    return sorted(found, key=lambda t: (t[2], t[0], t[1]))


def _design_rule(baseline_rate: float, ceiling: float, alpha: float, design_rate: float,
                 beta: float, reference: Plan, goal: float, at_first: bool = False,
                 beat: float | None = None, bases: list[Any] | None = None
                 ) -> tuple[Any, float, float] | None:
    """The finished-baseline rule with the fewest expected launches at the design rate
    (baseline plus the candidate's exact mean, :func:`kit.analysis.finished.operating_finished`)
    whose exact power there is at least ``goal``, and whose baseline plus ``--launches`` is
    at most 1.3 times ``reference``'s total: for each baseline size
    (:func:`_baseline_sizes`), the largest candidate ``beta`` (at most ``beta``) found by
    bisection that reaches ``goal`` (the power falls as beta rises, with small steps where
    the binomial's discreteness holds it). ``at_first``: the rule's variant
    (:attr:`kit.analysis.sprt.SprtDesign.stop_at_first_below`). ``beat``: only a design
    with fewer expected launches than this is wanted (the other variant's best), so that
    sizes and betas that cannot beat it are passed over as they are for the best found.
    ``bases``: the baselines tried instead of :func:`_baseline_sizes`: sizes, or staged
    baselines ``(n1, r, n2)`` (:attr:`kit.analysis.sprt.SprtDesign.baseline_stage`; their
    launches are the staged baseline's mean, :func:`kit.analysis.finished.staged_baseline_mean`).
    ``(design, power, expected launches)``, or ``None`` when no size works (or none beats
    ``beat``)."""
    from .finished import operating_finished, staged_baseline_mean
    from .sprt import SprtDesign, suggested_cap

    best: tuple[float, Any, float] | None = None
    if beat is not None:
        best = (beat, None, 0.0)  # a bar to beat, never returned
    most = suggested_cap(reference.total_launches)

    def attempt(base: Any, b: float) -> tuple[float, Any, float] | None:
        b = short_beta(b)  # printed as it is: `--beta` then makes this very rule
        stage = base if isinstance(base, tuple) else None
        n_b = base if stage is None else stage[0]
        try:
            design = SprtDesign(ceiling, design_rate, alpha, b, most - _most_of(base), n_b,
                                at_first, stage)
        except UsageError:
            return None
        point = operating_finished(design, n_b, baseline_rate, design_rate)
        return _mean_of(base) + point.expected_launches, design, point.p_fixed

    def _most_of(base: Any) -> int:
        return base[2] if isinstance(base, tuple) else base

    def _mean_of(base: Any) -> float:
        if isinstance(base, tuple):
            return staged_baseline_mean(base, baseline_rate)
        return float(base)

    def beaten(tried: tuple[float, Any, float]) -> bool:
        return best is not None and tried[0] >= best[0]

    def hopeless(prev: tuple[float, Any, float] | None,
                 last: tuple[float, Any, float] | None) -> bool:
        """Whether the launches at the goal's power, extrapolated on the line through the
        last two betas' (power, launches), already reach the best found: launches grow
        faster than that line as the power nears 1, so lower betas would not beat it."""
        if best is None or prev is None or last is None or last[2] <= prev[2]:
            return False
        slope = (last[0] - prev[0]) / (last[2] - prev[2])
        return slope > 0 and last[0] + slope * (goal - last[2]) >= best[0]

    level = ALPHA_MARGIN * alpha
    if bases is None:
        bases = list(_baseline_sizes(reference, baseline_rate, design_rate, goal))
    for n_b in bases:
        if _most_of(n_b) >= most:
            continue
        if best is not None and _mean_of(n_b) - _most_of(n_b) + least_mean_launches(
                baseline_rate, _most_of(n_b), goal, level, design_rate, ceiling) >= best[0]:
            continue  # Wald's bound: no rule with this baseline can do better (a staged
            # one's candidate side needs at least what its final size's would)
        first = attempt(n_b, beta)
        if first is not None and best is not None and first[0] >= best[0]:
            continue  # a lower beta only adds launches
        found = [first] if first is not None and first[2] >= goal else []
        if first is not None and not found:
            # lower beta (more candidate power) until the goal is reached, or until the
            # launches are too few for that beta (``None``): then bisect in between, where
            # the largest beta that reaches the goal lies
            lo, hi, low, prev = beta, beta, first, None
            while (lo > _BETA_FLOOR and low is not None and low[2] < goal
                   and not beaten(low) and not hopeless(prev, low)):
                hi, lo, prev = lo, max(_BETA_FLOOR, lo * _BETA_STEP), low
                low = attempt(n_b, lo)
            if low is not None and low[2] < goal and (beaten(low) or hopeless(prev, low)):
                continue  # this beta misses the goal, and lower ones add launches
            if low is not None and low[2] >= goal:
                found.append(low)
            elif low is not None:
                continue  # even the floor's beta misses the goal
            missed = False
            for _ in range(_BETA_STEPS):
                mid = (lo + hi) / 2
                tried = attempt(n_b, mid)
                if tried is not None and tried[2] >= goal:
                    found.append(tried)
                if tried is None or tried[2] >= goal:
                    lo = mid
                else:
                    hi = mid
                    if beaten(tried):
                        missed = True  # what reaches the goal has a lower beta: more
                        break  # launches than this one, which already has too many
            if missed:
                continue
        if not found:
            continue
        if most <= _SMALL:  # few launches: the power jumps with beta, so look between too
            for b in np.linspace(min(t[1].beta for t in found), beta, 12)[1:-1]:
                tried = attempt(n_b, float(b))
                if tried is not None and tried[2] >= goal:
                    found.append(tried)
        top = min(found, key=lambda t: t[0])
        if best is None or top[0] < best[0]:
            best = top
    return None if best is None or best[1] is None else (best[1], best[2], best[0])


def plan_sequential(baseline_rate: float, *, ceiling: float = 0.05, alpha: float = 0.05,
                    power: float = 0.8, candidate_rate: float = 0.0, beta: float = 0.2,
                    design_rate: float | None = None,
                    log: Callable[[str], None] = lambda _m: None,
                    variants: tuple[bool, ...] = (False, True),
                    staged: bool = True) -> SequentialPlan:
    """Plan a verdict both ways: a fixed-size design (:func:`plan_launches`) and the
    ``--until-verdict`` rule (:class:`kit.analysis.sprt.SprtDesign`) for a finished
    baseline, designed against a fixed-size reference: the design at the design rate
    (``--design-rate``, default ceiling/4) when the baseline's rate is at least twice the
    ceiling, else the clean-candidate design (the search at the design rate would take
    minutes for so small an effect). The rule's baseline size, candidate ``beta`` (at most
    ``beta``) and ``--launches`` are chosen for the fewest expected launches at the design
    rate with at least the reference's power there and at most 1.3 times its launches
    (:func:`_design_rule`), for both variants of the rule (going on while only the
    comparison is missing, or stopping at the first "below the ceiling",
    :attr:`kit.analysis.sprt.SprtDesign.stop_at_first_below`): the one with fewer expected
    launches (``variants``: the ``stop_at_first_below`` values tried, in this order); then,
    with ``staged``, baselines staged by design around the best size (:func:`_stages`:
    stopped at ``n1`` launches with ``r`` events, else made up to ``n2``), kept where they
    need fewer expected launches; see :class:`SequentialPlan`. ``log`` hears that it takes a
    while.

    Raises:
        UsageError: bad rates (see :func:`plan_launches`), or a design rate not below the
            ceiling.
    """
    from .sprt import SLOW_RULE_LAUNCHES, SprtDesign, suggested_cap
    from .stats import launches_to_see

    design_rate = design_rate if design_rate is not None else ceiling / 4
    if not design_rate < ceiling:
        raise UsageError(f"design rate {design_rate} is not below the ceiling {ceiling}",
                         "use e.g. a quarter of the ceiling")
    fixed = plan_launches(baseline_rate, ceiling=ceiling, alpha=alpha, power=power,
                          candidate_rate=candidate_rate)
    clean = fixed if candidate_rate == 0 else plan_launches(
        baseline_rate, ceiling=ceiling, alpha=alpha, power=power)
    reference = clean
    if baseline_rate >= 2 * ceiling:
        reference = fixed if candidate_rate == design_rate else plan_launches(
            baseline_rate, ceiling=ceiling, alpha=alpha, power=power,
            candidate_rate=design_rate)
    goal = design_power(baseline_rate, reference.baseline_launches, design_rate,
                        reference.candidate_launches, alpha=alpha, ceiling=ceiling)
    if reference.total_launches >= SLOW_RULE_LAUNCHES // 2:
        log(f"designing the sequential rule for about {reference.total_launches} launches "
            f"(this can take a few minutes)")
    from .finished import operating_finished

    found = None
    if baseline_rate > design_rate:  # else no rule has power at the design rate to keep
        # both variants of the rule; the one that stops at its first "below the ceiling"
        # only where it needs fewer launches
        for at_first in variants:
            better = _design_rule(baseline_rate, ceiling, alpha, design_rate, beta,
                                  reference, goal, at_first,
                                  None if found is None else found[2])
            found = better if better is not None else found
        if staged and found is not None:
            # a staged baseline around the best single size: stopped early where it is
            # strong, made up to more launches where it is weak (both variants)
            around = found[0].baseline_launches
            least = least_baseline_launches(baseline_rate, goal, ALPHA_MARGIN * alpha,
                                            design_rate)
            bases: list[Any] = list(_stages(around, baseline_rate, least))
            for at_first in variants:
                better = _design_rule(baseline_rate, ceiling, alpha, design_rate, beta,
                                      reference, goal, at_first, found[2], bases)
                found = better if better is not None else found
    if found is not None:
        design, rule_power, mean = found
        cap = design.max_launches
    else:  # no rule within 1.3 times the reference reaches its power: the reference's
        # baseline and beta within 1.3 times (or, too few for that beta, twice the
        # candidate launches), its power as it is
        n_b = reference.baseline_launches
        cap = suggested_cap(reference.total_launches) - n_b
        try:
            design = SprtDesign(ceiling, design_rate, alpha, beta, cap, n_b)
        except UsageError:
            cap = 2 * max(launches_to_bound_with_power(
                design_rate, ceiling=ceiling, alpha=alpha, power=1 - beta),
                clean.candidate_launches)
            design = SprtDesign(ceiling, design_rate, alpha, beta, cap, n_b)
        point = operating_finished(design, n_b, baseline_rate, design_rate)
        rule_power, mean = point.p_fixed, n_b + point.expected_launches
    rates = sorted({0.0, candidate_rate, design.design_rate, ceiling, baseline_rate})
    stage = design.baseline_stage
    return SequentialPlan(baseline_rate, fixed, clean, launches_to_see(baseline_rate, 1 - alpha),
                          cap, design, tuple(design.operating(r, cap) for r in rates),
                          reference, design.baseline_launches if stage is None else stage[2],
                          rule_power, goal, mean, None if stage is None else stage[:2])
