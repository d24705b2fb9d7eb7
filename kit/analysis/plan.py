"""Launch planning: how many launches per build a verdict needs (``coldstart plan``).

* :func:`plan_launches`: a fixed-size design, baseline and candidate launches that end
  ``fixed`` with the wanted power (exact binomial sums; Fisher's test; in
  :mod:`kit.analysis.fixed_design`, re-exported here);
* :func:`plan_sequential`: the same question for ``coldstart run ... --until-verdict``: the
  suggested ``--launches`` cap and the rule's operating characteristics at several true
  candidate rates.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable

import numpy as np

from ..errors import UsageError
from .binomial import ALPHA_MARGIN, launches_to_bound_with_power
from .fixed_design import Plan, design_power, plan_launches
from .stats import stats
from .wald import least_baseline_launches, least_mean_launches

__all__ = ["Plan", "design_power", "launches_to_bound_with_power", "plan_launches",
           "SequentialPlan", "plan_sequential", "short_beta", "beta_option"]


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
                 beat: float | None = None, bases: list[Any] | None = None,
                 search: "_Search | None" = None) -> tuple[Any, float, float] | None:
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
    ``beat``). ``search``: says which baseline it tries (progress), and stops trying more
    once its bound is reached and a rule is found (:class:`_Search`)."""
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
    search = search or _Search()
    for done, n_b in enumerate(bases):
        if search.over() and best is not None:
            break  # the bound: the best found so far is kept
        search.trying(n_b, done, len(bases), at_first)
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
            low: tuple[float, Any, float] | None = first
            lo, hi, prev = beta, beta, None
            while (lo > _BETA_FLOOR and low is not None and low[2] < goal and not (
                    search.over() and best is not None)
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


class _Search:
    """The rule search's progress and bound (``plan_sequential``'s ``budget_s``): says on
    ``log`` which baseline it tries, and once ``budget_s`` seconds have passed, that it
    keeps the best rule found so far."""

    def __init__(self, log: Callable[[str], None] = lambda _m: None,
                 budget_s: float | None = None) -> None:
        self.log, self.budget_s = log, budget_s
        self.started = time.monotonic()
        self.stopped = False

    def over(self) -> bool:
        """Whether the bound is reached (said once)."""
        late = self.budget_s is not None and time.monotonic() - self.started > self.budget_s
        if late and not self.stopped:
            self.stopped = True
            self.log(f"plan: the rule search reached its bound ({self.budget_s:g} s): the "
                     f"best rule found so far is given (a longer search may find one with "
                     f"fewer launches)")
        return late

    def trying(self, base: Any, done: int, total: int, at_first: bool) -> None:
        what = (f"a baseline staged {base[0]}:{base[1]} up to {base[2]}"
                if isinstance(base, tuple) else f"a baseline of {base}")
        self.log(f"plan: rule {done + 1} of {total} "
                 f"({'stops at first below' if at_first else 'goes on'}), {what}; "
                 f"{time.monotonic() - self.started:.0f} s")


def plan_sequential(baseline_rate: float, *, ceiling: float = 0.05, alpha: float = 0.05,
                    power: float = 0.8, candidate_rate: float = 0.0, beta: float = 0.2,
                    design_rate: float | None = None,
                    log: Callable[[str], None] = lambda _m: None,
                    variants: tuple[bool, ...] = (False, True),
                    staged: bool = True, budget_s: float | None = None) -> SequentialPlan:
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
    need fewer expected launches; see :class:`SequentialPlan`. ``log`` hears which rule it
    tries (progress); ``budget_s`` bounds the search: past it, no more baselines are tried
    once a rule is found, and the best so far is given (``None``: the whole search, whose
    result depends on nothing but the arguments; at a 2% baseline and a 5% ceiling it took
    longer than 900 s).

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
    search = _Search(log, budget_s)
    if baseline_rate > design_rate:  # else no rule has power at the design rate to keep
        # both variants of the rule; the one that stops at its first "below the ceiling"
        # only where it needs fewer launches
        for at_first in variants:
            better = _design_rule(baseline_rate, ceiling, alpha, design_rate, beta,
                                  reference, goal, at_first,
                                  None if found is None else found[2], search=search)
            found = better if better is not None else found
        if staged and found is not None and not search.over():
            # a staged baseline around the best single size: stopped early where it is
            # strong, made up to more launches where it is weak (both variants)
            around = found[0].baseline_launches
            least = least_baseline_launches(baseline_rate, goal, ALPHA_MARGIN * alpha,
                                            design_rate)
            bases: list[Any] = list(_stages(around, baseline_rate, least))
            for at_first in variants:
                better = _design_rule(baseline_rate, ceiling, alpha, design_rate, beta,
                                      reference, goal, at_first, found[2], bases, search)
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
