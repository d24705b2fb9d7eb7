"""The sequential probability ratio test behind ``--until-verdict`` (Wald 1945), with
thresholds made exact for a truncated run by a dynamic program over (launches, events).

See :mod:`kit.analysis.sequential` for the stopping rules built on it, and docs/verdict.md
for the derivation.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
from typing import Any, Sequence

import numpy as np

from ..errors import UsageError
from .stats import _first_true, k_max_range

__all__ = ["SprtState", "SprtDesign", "OperatingPoint", "SLOW_RULE_LAUNCHES"]

#: from this many launches on, computing a design's exact thresholds takes seconds: say so
SLOW_RULE_LAUNCHES = 5000

#: a state of the dynamic program with a smaller chance is dropped (see :func:`_walk`)
_NEGLIGIBLE = 1e-15


#: the dynamic program stops when less than this chance is left undecided
_NEGLIGIBLE_LEFT = 1e-5


class SprtState(str, enum.Enum):
    """Where the candidate stands (see :meth:`SprtDesign.state`)."""

    CONTINUE = "continue"
    #: LR at or over the upper threshold and the Clopper-Pearson bound below the ceiling
    BELOW_CEILING = "below-ceiling"
    #: LR at or under the lower threshold and the bound not below the ceiling
    NOT_BELOW = "not-below-ceiling"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class OperatingPoint:
    """Exact behaviour of the candidate's rule at one true rate, truncated at ``max_launches``.

    Attributes:
        true_rate, max_launches: the assumptions.
        p_below: chance of stopping early with ``fixed`` (:attr:`SprtState.BELOW_CEILING`).
        p_not_below: chance of stopping early as :attr:`SprtState.NOT_BELOW`.
        p_undecided: chance of reaching ``max_launches`` first.
        p_fixed_at_end: the part of ``p_undecided`` that ``compare`` judges ``fixed`` as a
            fixed-size campaign (the bound below the ceiling).
        expected_launches: mean launches until the stop (``max_launches`` if undecided).
        p_pruned: chance the dynamic program dropped as negligible (within ``p_undecided``
            and not in ``p_fixed``; calibration counts it against alpha).
    """

    true_rate: float
    max_launches: int
    p_below: float
    p_not_below: float
    p_undecided: float
    p_fixed_at_end: float
    expected_launches: float
    p_pruned: float = 0.0

    @property
    def p_fixed(self) -> float:
        """Chance that the candidate side ends ``fixed``: early stop or at ``max_launches``."""
        return self.p_below + self.p_fixed_at_end

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "p_fixed": self.p_fixed}


def _k_max_table(max_launches: int, ceiling: float, alpha: float) -> np.ndarray:
    """``k[n]`` for ``n = 0..max_launches``: the most events in ``n`` launches whose one-sided
    Clopper-Pearson bound at ``1 - alpha`` is below ``ceiling`` (-1: none), as
    :func:`kit.analysis.stats._k_max` gives it one ``n`` at a time (same duality:
    bound < ceiling <=> ``binom.cdf(k, n, ceiling) < alpha``)."""
    k = k_max_range(1, max_launches + 1, ceiling, alpha)
    return np.concatenate([[-1], k])


@functools.lru_cache(maxsize=64)
def _k_max_cached(max_launches: int, ceiling: float, alpha: float) -> tuple[int, ...]:
    return tuple(int(k) for k in _k_max_table(max_launches, ceiling, alpha))


@functools.lru_cache(maxsize=1 << 16)
def _bound_below(events: int, n: int, ceiling: float, alpha: float) -> bool:
    """Whether the one-sided Clopper-Pearson bound at ``1 - alpha`` for ``events`` in ``n``
    launches is below ``ceiling`` (duality: ``binom.cdf(events, n, ceiling) < alpha``, as in
    :func:`kit.analysis.stats._k_max`)."""
    from scipy import stats

    return n > 0 and bool(stats.binom.cdf(events, n, ceiling) < alpha)


def _walk(true_rate: float, step_event: float, step_clean: float, upper: float, lower: float,
          k_max: Sequence[int], max_launches: int) -> OperatingPoint:
    """Dynamic program over (launches, events) for the rule with log thresholds ``upper`` and
    ``lower`` (:meth:`SprtDesign.state`), ``k_max[n]`` giving where the bound is below the
    ceiling. Only states the rule goes on from stay alive (a band a few events wide), so it
    takes O(max_launches * band) steps. States whose chance falls below ``_NEGLIGIBLE``, and
    everything once less than ``_NEGLIGIBLE_LEFT`` is left, are dropped (counted as undecided
    and in ``p_pruned``): far out, where LR and bound disagree, the band widens to thousands
    of states that together hold a few millionths. Calibration counts what was dropped
    against the rule both ways (as ``fixed`` at the ceiling, as not ``fixed`` at the design
    rate), so the error rates stay guaranteed, and thresholds move by nothing measurable."""
    alive = {0: 1.0}
    q = 1.0 - true_rate
    p_below = p_not = expected = pruned = 0.0
    for n in range(1, max_launches + 1):
        moved: dict[int, float] = {}
        for x, w in alive.items():
            moved[x] = moved.get(x, 0.0) + w * q
            if true_rate > 0.0:
                moved[x + 1] = moved.get(x + 1, 0.0) + w * true_rate
        alive = {}
        k_n = k_max[n]
        for x, w in moved.items():
            llr = x * step_event + (n - x) * step_clean
            bound = x <= k_n
            if llr >= upper and bound:
                p_below += w
                expected += n * w
            elif llr <= lower and not bound:
                p_not += w
                expected += n * w
            elif w >= _NEGLIGIBLE:
                alive[x] = w
            else:
                pruned += w
        left = sum(alive.values())
        if left < _NEGLIGIBLE_LEFT:
            pruned += left
            alive = {}
            break
    rest = sum(alive.values())
    at_end = sum(w for x, w in alive.items() if x <= k_max[max_launches])
    return OperatingPoint(true_rate, max_launches, p_below, p_not, rest + pruned, at_end,
                          expected + max_launches * (rest + pruned), pruned)


def _smallest(feasible: Any, start: float, floor: float, cap: float,
              tol: float = 1e-7) -> float | None:
    """Smallest ``t`` in ``[floor, cap]`` with ``feasible(t)``, for a ``feasible`` that is
    false below some point and true above it: steps out from ``start`` (doubling the step)
    to bracket that point, then bisects to ``tol``. ``None`` if ``feasible(cap)`` fails.
    Bracketing near ``start`` keeps the dynamic program's band narrow (far-off thresholds
    make it wide and slow)."""
    step = 0.25
    if feasible(start):
        hi, lo = start, max(floor, start - step)
        while lo > floor and feasible(lo):
            hi, step = lo, 2 * step
            lo = max(floor, lo - step)
        if lo == floor and feasible(floor):
            return floor
    else:
        lo, hi = start, min(cap, start + step)
        while not feasible(hi):
            if hi >= cap:
                return None
            lo, step = hi, 2 * step
            hi = min(cap, hi + step)
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=4096)
def _first_fixed_launch(events: int, step_event: float, step_clean: float, upper: float,
                        ceiling: float, alpha: float, max_launches: int | None) -> int:
    def bound_below(n: int) -> bool:
        return _bound_below(events, n, ceiling, alpha)

    lo = max(1, events, events + math.ceil((upper - events * step_event) / step_clean - 1e-9))
    hi = lo
    while not bound_below(hi):  # the bound falls with n: bracket, then bisect
        lo, hi = hi + 1, 2 * hi
    first = _first_true(bound_below, lo, hi)
    return first if max_launches is None else min(first, max_launches)


@functools.lru_cache(maxsize=64)
def _calibrate(ceiling: float, design_rate: float, alpha: float, beta: float,
               max_launches: int) -> tuple[float, float]:
    """Exact SPRT thresholds ``(log upper, log lower)`` for a rule truncated at
    ``max_launches`` and judged by the Clopper-Pearson bound there.

    The smallest upper threshold whose exact chance of ``fixed`` at the ceiling is <=
    ``alpha``, and the largest lower threshold whose exact chance of ``fixed`` at the design
    rate is >= ``1 - beta``, each given the other, iterated from the Ville-style bounds
    (1/alpha, beta) to a fixed point. Raising either threshold only removes ``fixed``
    outcomes (a path that ends ``fixed`` with the higher one ends so with the lower one
    too), so both maps are monotone and the iteration settles; the error rate of
    ``fixed`` is largest at the ceiling among rates at or above it (more events only move
    a path away from ``fixed``).
    This is how exact critical values of truncated sequential tests are found in drug-safety
    surveillance (Kulldorff et al. 2011, "A maximized sequential probability ratio test",
    Sequential Analysis 30:58-78).

    Raises:
        UsageError: ``max_launches`` too small for these error rates.
    """
    step_event = math.log(design_rate / ceiling)
    step_clean = math.log1p(-design_rate) - math.log1p(-ceiling)
    k_max = _k_max_cached(max_launches, ceiling, alpha)

    def fixed(rate: float, upper: float, lower: float, worst: bool = False) -> float:
        """The chance of fixed; with ``worst``, counting what the walk dropped as fixed."""
        point = _walk(rate, step_event, step_clean, upper, lower, k_max, max_launches)
        return point.p_fixed + (point.p_pruned if worst else 0.0)

    upper, lower = -math.log(alpha), math.log(beta)
    top, bottom = max_launches * step_clean + 1.0, max_launches * step_event - 1.0
    for _ in range(20):
        new_upper = _smallest(lambda u: fixed(ceiling, u, lower, True) <= alpha, upper, 0.0,
                              top)
        # the largest lower threshold keeping the power, as the smallest -lower
        new_minus = None if new_upper is None else _smallest(
            lambda m: fixed(design_rate, new_upper, -m) >= 1 - beta, -lower, 0.0, -bottom)
        if new_upper is None or new_minus is None:
            break
        settled = abs(new_upper - upper) < 1e-6 and abs(-new_minus - lower) < 1e-6
        upper, lower = new_upper, -new_minus
        if settled:
            break
    if (fixed(ceiling, upper, lower, True) > alpha + 1e-12
            or fixed(design_rate, upper, lower) < 1 - beta - 1e-12):
        from .plan import launches_to_bound_with_power

        fixed_size = launches_to_bound_with_power(design_rate, ceiling=ceiling, alpha=alpha,
                                                  power=1 - beta)
        raise UsageError(f"no sequential rule of at most {max_launches} launches has a false-"
                         f"fixed chance <= {alpha:g} at the ceiling {ceiling:g} and power "
                         f">= {1 - beta:g} at {design_rate:g} (a fixed-size candidate needs "
                         f"{fixed_size})", f"give --launches {2 * fixed_size} as `coldstart "
                         f"plan` suggests, or raise --beta or --design-rate")
    return upper, lower


@dataclasses.dataclass(frozen=True)
class SprtDesign:
    """SPRT of H0: rate = ``ceiling`` vs H1: rate = ``design_rate`` on the candidate's target
    events, stopping with ``fixed`` only where ``compare``'s Clopper-Pearson bound is below the
    ceiling too.

    With ``max_launches`` (the campaign's ``--launches``) the thresholds are exact: computed
    by dynamic programming so that, truncated there and judged by ``compare`` at the end, the
    chance of ``fixed`` is <= ``alpha`` at any true rate at or above the ceiling and >=
    ``1 - beta`` at the design rate (:func:`_calibrate`). Without it they are the
    conservative Ville-style bounds ``LR >= 1/alpha`` and ``LR <= beta``, valid however long
    the run goes (Ville's inequality), at the price of more launches. (Wald's own
    approximations are ``(1 - beta)/alpha`` and ``beta/(1 - alpha)``: 16 and 0.211 at 0.05 and
    0.2, not guaranteed for a discrete, truncated run.)

    Attributes:
        ceiling: the rate the candidate must be shown below (as in ``compare``).
        design_rate: the rate under H1 (``0 < design_rate < ceiling``).
        alpha: false-``fixed`` bound. beta: bound on missing ``fixed`` at ``design_rate``.
        max_launches: where the rule is truncated (``None``: the Ville-style bounds).
        upper, lower: the log-LR thresholds in use (computed).

    Raises:
        UsageError: a value out of range, or no thresholds meet both bounds within
            ``max_launches`` (too few launches for these error rates).
    """

    ceiling: float = 0.05
    design_rate: float = 0.0125
    alpha: float = 0.05
    beta: float = 0.2
    max_launches: int | None = None
    upper: float = dataclasses.field(init=False, default=0.0)
    lower: float = dataclasses.field(init=False, default=0.0)

    def __post_init__(self) -> None:
        for name in ("ceiling", "alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise UsageError(f"{name} {value} is not in (0, 1)", "give a fraction")
        if not 0.0 < self.design_rate < self.ceiling:
            raise UsageError(f"design rate {self.design_rate} is not between 0 and the "
                             f"ceiling {self.ceiling}", "use e.g. a quarter of the ceiling")
        if self.max_launches is None:
            upper, lower = -math.log(self.alpha), math.log(self.beta)
        else:
            if self.max_launches < 1:
                raise UsageError(f"max launches {self.max_launches} is below 1",
                                 "give --launches of at least 1")
            upper, lower = _calibrate(self.ceiling, self.design_rate, self.alpha, self.beta,
                                      self.max_launches)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "lower", lower)

    @property
    def step_event(self) -> float:
        """log LR added by a launch with the target event (negative)."""
        return math.log(self.design_rate / self.ceiling)

    @property
    def step_clean(self) -> float:
        """log LR added by a launch without it (positive)."""
        return math.log1p(-self.design_rate) - math.log1p(-self.ceiling)

    @property
    def exact(self) -> bool:
        """Whether the thresholds are calibrated exactly (``max_launches`` given)."""
        return self.max_launches is not None

    def log_lr(self, events: int, n: int) -> float:
        """log of the likelihood ratio H1/H0 after ``events`` in ``n`` launches."""
        return events * self.step_event + (n - events) * self.step_clean

    def state(self, events: int, n: int) -> SprtState:
        """The candidate's state after ``events`` target events in ``n`` launches.

        :attr:`SprtState.BELOW_CEILING` when the LR is at or over the upper threshold and
        ``compare``'s Clopper-Pearson bound is below the ceiling; :attr:`SprtState.NOT_BELOW`
        when the LR is at or under the lower threshold and the bound is not below the
        ceiling; else :attr:`SprtState.CONTINUE` (also when the LR and the bound disagree, so
        that the rule never calls "not below" what ``compare`` would call below, and never
        stops as ``fixed`` where ``compare`` would not).
        """
        llr = self.log_lr(events, n)
        bound = _bound_below(events, n, self.ceiling, self.alpha)
        if llr >= self.upper and bound:
            return SprtState.BELOW_CEILING
        if llr <= self.lower and not bound:
            return SprtState.NOT_BELOW
        return SprtState.CONTINUE

    def clean_launches(self) -> int:
        """Launches, all free of the target, after which the rule stops with ``fixed``: the
        LR over the upper threshold and ``(1 - ceiling)^n < alpha`` (the bound)."""
        return _first_fixed_launch(0, self.step_event, self.step_clean, self.upper,
                                   self.ceiling, self.alpha, None)

    def first_fixed_launch(self, events: int) -> int:
        """The fewest launches in which ``events`` target events can end with ``fixed``: the
        LR over the upper threshold and the bound below the ceiling (capped at
        ``max_launches``, where ``compare`` judges what is left)."""
        return _first_fixed_launch(events, self.step_event, self.step_clean, self.upper,
                                   self.ceiling, self.alpha, self.max_launches)

    def operating(self, true_rate: float, max_launches: int | None = None) -> OperatingPoint:
        """Exact stop probabilities and mean launches at ``true_rate``, truncated at
        ``max_launches`` (default: the design's), by dynamic programming over
        (launches, events). Baseline conditions of ``compare`` (positive control, exact test)
        are not modelled: they can only remove ``fixed`` stops.

        Raises:
            ValueError: no ``max_launches`` here or in the design.
        """
        cap = max_launches if max_launches is not None else self.max_launches
        if cap is None:
            raise ValueError("operating() needs max_launches for a design without one")
        return _walk(true_rate, self.step_event, self.step_clean, self.upper, self.lower,
                     _k_max_cached(cap, self.ceiling, self.alpha), cap)

    def describe(self) -> str:
        """The rule and its error rates in one paragraph."""
        head = (f"SPRT on the candidate's target rate, H0: {self.ceiling:g} (the ceiling) vs "
                f"H1: {self.design_rate:g}; stops with fixed when LR >= "
                f"{math.exp(self.upper):.3g} and compare agrees (with the rule's anytime-valid "
                f"comparison against the baseline, e-value >= {1 / self.alpha:g}), as not below "
                f"the ceiling when "
                f"LR <= {math.exp(self.lower):.3g} and the bound is not below it")
        if self.max_launches is None:
            tail = (f"; Ville's bounds 1/alpha and beta as thresholds: false fixed <= "
                    f"{self.alpha:g} at any rate at or above the ceiling and missed fixed <= "
                    f"{self.beta:g} at {self.design_rate:g} or less, however long the run")
        else:
            at_c = self.operating(self.ceiling)
            at_h1 = self.operating(self.design_rate)
            tail = (f"; exact thresholds for at most {self.max_launches} launches: false "
                    f"fixed {at_c.p_fixed:.3f} at the ceiling (<= {self.alpha:g}, and lower "
                    f"above it), fixed {at_h1.p_fixed:.3f} at {self.design_rate:g} "
                    f"(>= {1 - self.beta:g})")
        return f"{head}{tail}; a clean candidate stops after {self.clean_launches()} launches"
