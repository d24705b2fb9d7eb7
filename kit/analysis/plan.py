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

from ..errors import UsageError
from .stats import P_RTOL, _first_true, _k_max, fisher_p_vector, launches_to_bound, stats

__all__ = ["Plan", "design_power", "launches_to_bound_with_power", "plan_launches",
           "SequentialPlan", "plan_sequential"]


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
    k_max = _k_max(n_c, ceiling, alpha)
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


def _min_baseline(p_b: float, p_c: float, n_c: int, *, alpha: float, ceiling: float,
                  power: float, limit: int) -> int | None:
    def ok(n_b: int) -> bool:
        return design_power(p_b, n_b, p_c, n_c, alpha=alpha, ceiling=ceiling) >= power

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > limit:
            return None
    lo = hi // 2 + 1 if hi > 1 else 1
    n = _first_true(ok, lo, hi)
    # power is a saw-tooth in n: step back while a smaller design still reaches it
    while n > 1 and ok(n - 1):
        n -= 1
    return n


def launches_to_bound_with_power(candidate_rate: float, *, ceiling: float = 0.05,
                                 alpha: float = 0.05, power: float = 0.8,
                                 limit: int = 200_000) -> int:
    """Fewest launches of a candidate at ``candidate_rate`` whose one-sided Clopper-Pearson
    bound at ``1 - alpha`` falls below ``ceiling`` with probability >= ``power`` (exact
    binomial; 59 for a candidate at 0 and a 5% ceiling, 153 at a true rate of 1.25%).

    Raises:
        UsageError: more than ``limit`` launches needed.
    """
    clean = launches_to_bound(ceiling, 1 - alpha)

    def cand_power(n_c: int) -> float:
        k = _k_max(n_c, ceiling, alpha)
        return float(stats.binom.cdf(k, n_c, candidate_rate)) if k >= 0 else 0.0

    n_c0 = clean
    while cand_power(n_c0) < power:
        n_c0 = n_c0 + max(1, n_c0 // 8)
        if n_c0 > limit:
            raise UsageError(f"a candidate at {candidate_rate} needs more than {limit} "
                             f"launches to be bounded below {ceiling}", "raise the ceiling")
    # refine the first candidate size reaching the power from below
    return _first_true(lambda n: cand_power(n) >= power, max(clean, n_c0 - n_c0 // 8), n_c0)


def plan_launches(baseline_rate: float, *, ceiling: float = 0.05, alpha: float = 0.05,
                  power: float = 0.8, candidate_rate: float = 0.0, limit: int = 200_000
                  ) -> Plan:
    """Launches per build for a fixed-size campaign pair to end ``fixed`` with ``power``.

    The candidate needs enough launches to bound its rate below ``ceiling`` (at
    ``1 - alpha``) with probability >= ``power``; the baseline then needs enough to make the
    one-sided Fisher test significant. Candidate sizes from that minimum up in steps of 25%
    are tried (a larger candidate can need a much smaller baseline, and a rare baseline
    event needs a large candidate to be significant) and the smallest total is kept.

    Raises:
        UsageError: a rate out of range, ``candidate_rate >= ceiling`` or
            ``candidate_rate >= baseline_rate`` (the verdict could never be ``fixed``), or
            more than ``limit`` launches needed.
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
    n_c0 = launches_to_bound_with_power(candidate_rate, ceiling=ceiling, alpha=alpha,
                                        power=power, limit=limit)
    best: tuple[int, int] | None = None
    factor = 1.0
    while True:
        n_c = int(n_c0 * factor)
        if n_c > limit or (best is not None and n_c >= sum(best)):
            break
        cap = limit if best is None else sum(best) - n_c
        n_b = _min_baseline(baseline_rate, candidate_rate, n_c, alpha=alpha, ceiling=ceiling,
                            power=power, limit=cap)
        if n_b is not None and (best is None or n_b + n_c < sum(best)):
            best = (n_b, n_c)
        factor *= 1.25
    if best is None:
        raise UsageError(f"no design under {limit} launches per build reaches power {power}",
                         "raise the ceiling or lower the power")
    n_b, n_c = best
    return Plan(baseline_rate, candidate_rate, ceiling, alpha, power, n_b, n_c,
                design_power(baseline_rate, n_b, candidate_rate, n_c, alpha=alpha,
                             ceiling=ceiling),
                1.0 - (1.0 - baseline_rate) ** n_b, clean)


@dataclasses.dataclass(frozen=True)
class SequentialPlan:
    """What ``coldstart plan`` reports: the fixed-size design and the sequential rule.

    Attributes:
        baseline_rate: the baseline's target rate planned from.
        fixed: the fixed-size design at the candidate's assumed rate.
        clean_fixed: the fixed-size design for a clean candidate (rate 0).
        baseline_launches_to_see: baseline launches that see the target at least once with
            probability ``1 - alpha``.
        cap: the suggested ``--launches`` for ``--until-verdict``: twice what a fixed-size
            candidate needs at the design rate or against this baseline, whichever is more,
            so that a run still undecided there is rare.
        design: the SPRT with exact thresholds for ``cap`` launches.
        operating: the rule's operating characteristics at the rates of interest (0, the
            candidate's, the design rate, the ceiling, the baseline's), ascending.
    """

    baseline_rate: float
    fixed: Plan
    clean_fixed: Plan
    baseline_launches_to_see: int
    cap: int
    design: Any  # SprtDesign (kit.analysis.sprt), typed loosely to keep imports one-way
    operating: tuple[Any, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``coldstart plan --json`` prints."""
        import math

        d = self.design
        return {"fixed_design": self.fixed.to_dict(),
                "baseline_launches_to_see_target": self.baseline_launches_to_see,
                "sequential": {"ceiling": d.ceiling, "design_rate": d.design_rate,
                               "alpha": d.alpha, "beta": d.beta,
                               "clean_launches": d.clean_launches(), "max_launches": self.cap,
                               "lr_upper": math.exp(d.upper), "lr_lower": math.exp(d.lower),
                               "operating": [o.to_dict() for o in self.operating]}}


def plan_sequential(baseline_rate: float, *, ceiling: float = 0.05, alpha: float = 0.05,
                    power: float = 0.8, candidate_rate: float = 0.0, beta: float = 0.2,
                    design_rate: float | None = None,
                    log: Callable[[str], None] = lambda _m: None) -> SequentialPlan:
    """Plan a verdict both ways: a fixed-size design (:func:`plan_launches`) and the
    ``--until-verdict`` rule (:class:`kit.analysis.sprt.SprtDesign`) with its suggested
    ``--launches`` cap (see :class:`SequentialPlan`). ``log`` hears when the exact
    thresholds will take a while to compute.

    Raises:
        UsageError: bad rates (see :func:`plan_launches`), or a design rate not below the
            ceiling.
    """
    from .sprt import SLOW_RULE_LAUNCHES, SprtDesign
    from .stats import launches_to_see

    design_rate = design_rate if design_rate is not None else ceiling / 4
    if not design_rate < ceiling:
        raise UsageError(f"design rate {design_rate} is not below the ceiling {ceiling}",
                         "use e.g. a quarter of the ceiling")
    fixed = plan_launches(baseline_rate, ceiling=ceiling, alpha=alpha, power=power,
                          candidate_rate=candidate_rate)
    clean = fixed if candidate_rate == 0 else plan_launches(
        baseline_rate, ceiling=ceiling, alpha=alpha, power=power)
    cap = 2 * max(launches_to_bound_with_power(design_rate, ceiling=ceiling, alpha=alpha,
                                               power=1 - beta), clean.candidate_launches)
    if cap >= SLOW_RULE_LAUNCHES:
        log(f"computing the sequential rule's exact thresholds for {cap} launches (this can "
            f"take a minute)")
    design = SprtDesign(ceiling, design_rate, alpha, beta, cap)
    rates = sorted({0.0, candidate_rate, design.design_rate, ceiling, baseline_rate})
    return SequentialPlan(baseline_rate, fixed, clean, launches_to_see(baseline_rate, 1 - alpha),
                          cap, design, tuple(design.operating(r, cap) for r in rates))
