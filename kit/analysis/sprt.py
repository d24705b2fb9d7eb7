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
from .binomial import (ALPHA_MARGIN, bound_below, k_max_cached,
                       launches_to_bound_with_power)
from .stats import first_true

__all__ = ["SprtState", "SprtDesign", "OperatingPoint", "SLOW_RULE_LAUNCHES",
           "MAX_RULE_LAUNCHES", "ALPHA_MARGIN"]

#: from this many launches on, computing a design's exact thresholds takes seconds: say so
SLOW_RULE_LAUNCHES = 5000

#: the most launches a run with a stopping rule (``--until-verdict``) is designed for: the
#: exact thresholds' time grows faster than the square of the launches (measured on a
#: loaded 2-core machine: 12 s at 2,000, 99 s at 5,000; issue #46: 1,000,000 never
#: answered), so a larger ``--launches`` is refused up front instead of never answering
MAX_RULE_LAUNCHES = 5000

#: the false-``fixed`` chance the exact thresholds are computed for, as a share of alpha:

#: calibration stops following a run once less than this chance is left undecided, and
#: counts what is left against the rule both ways; :meth:`SprtDesign.operating` never stops
_CALIBRATION_LEFT = 1e-12


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
        p_pruned: chance still undecided where a calibration walk stopped early (within
            ``p_undecided`` and not in ``p_fixed``; calibration counts it against alpha);
            always 0 from :meth:`SprtDesign.operating`, which follows every state.
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


def _thresholds(step_event: float, step_clean: float, upper: float, lower: float,
                max_launches: int) -> tuple[list[int], list[int]]:
    """For ``n = 0..max_launches``: the most events with ``log LR >= upper`` and the fewest
    with ``log LR <= lower`` (the log LR falls by ``step_clean - step_event`` per event),
    found exactly for the floating-point ``log LR`` that :meth:`SprtDesign.state` computes."""
    n = np.arange(max_launches + 1, dtype=np.int64)

    def llr(x: np.ndarray) -> np.ndarray:
        return x * step_event + (n - x) * step_clean

    width = step_clean - step_event
    hi = np.floor((n * step_clean - upper) / width).astype(np.int64)
    lo = np.ceil((n * step_clean - lower) / width).astype(np.int64)
    for _ in range(4):  # a rounding step either way at most
        new_hi = np.where(llr(hi + 1) >= upper, hi + 1, np.where(llr(hi) < upper, hi - 1, hi))
        new_lo = np.where(llr(lo - 1) <= lower, lo - 1, np.where(llr(lo) > lower, lo + 1, lo))
        if np.array_equal(new_hi, hi) and np.array_equal(new_lo, lo):
            break  # settled: further rounds change nothing
        hi, lo = new_hi, new_lo
    return hi.tolist(), lo.tolist()


def _walk(true_rate: float, step_event: float, step_clean: float, upper: float, lower: float,
          k_max: Sequence[int], max_launches: int, stop_left: float = 0.0) -> OperatingPoint:
    """Dynamic program over (launches, events) for the rule with log thresholds ``upper`` and
    ``lower`` (:meth:`SprtDesign.state`), ``k_max[n]`` giving where the bound is below the
    ceiling. The states the rule goes on from at launch ``n`` are one run of event counts
    (between "below the ceiling", at few events, and "not below", at many), so the program
    follows that window and takes O(max_launches * window) steps; nothing is dropped. With
    ``stop_left`` > 0 it stops once less than that chance is left undecided, and reports it
    as ``p_pruned`` (within ``p_undecided``, not in ``p_fixed``)."""
    x_up, x_low = _thresholds(step_event, step_clean, upper, lower, max_launches)
    return _walk_counts(true_rate, x_up, x_low, k_max, max_launches, stop_left)


def _walk_counts(true_rate: float, x_up: Sequence[int], x_low: Sequence[int],
                 k_max: Sequence[int], max_launches: int, stop_left: float = 0.0
                 ) -> OperatingPoint:
    """:func:`_walk` for the thresholds as event counts (:func:`_thresholds`): the walk
    depends on ``upper`` and ``lower`` only through them."""
    q = 1.0 - true_rate
    lo, alive = 0, [1.0]
    p_below = p_not = expected = pruned = 0.0
    for n in range(1, max_launches + 1):
        # moved[i] = alive[i] q + alive[i - 1] p, in one pass (the same sums as adding the
        # events' share to the clean share afterwards)
        moved = ([a * q + b * true_rate for a, b in zip(alive + [0.0], [0.0] + alive)]
                 if true_rate > 0.0 else [w * q for w in alive] + [0.0])
        k_n = k_max[n]
        below_to, not_from = min(x_up[n], k_n), max(x_low[n], k_n + 1)
        first = max(lo, below_to + 1)
        last = min(lo + len(moved) - 1, not_from - 1)
        w_below = sum(moved[:max(0, first - lo)])
        w_not = sum(moved[max(0, last + 1 - lo):])
        p_below += w_below
        p_not += w_not
        expected += n * (w_below + w_not)
        alive = moved[first - lo:last + 1 - lo] if first <= last else []
        lo = first
        if not alive:
            break
        if stop_left > 0.0:
            left = sum(alive)
            if left < stop_left:
                pruned, alive = left, []
                break
    rest = sum(alive)
    at_end = sum(alive[:max(0, k_max[max_launches] + 1 - lo)])
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
    def is_below(n: int) -> bool:
        return bound_below(events, n, ceiling, alpha)

    lo = max(1, events, events + math.ceil((upper - events * step_event) / step_clean - 1e-9))
    hi = lo
    while not is_below(hi):  # the bound falls with n: bracket, then bisect
        lo, hi = hi + 1, 2 * hi
    first = first_true(is_below, lo, hi)
    return first if max_launches is None else min(first, max_launches)


@functools.lru_cache(maxsize=1024)  # plan tries both variants' betas: keep them all
def _calibrate(ceiling: float, design_rate: float, alpha: float, beta: float,
               max_launches: int) -> tuple[float, float]:
    """Exact SPRT thresholds ``(log upper, log lower)`` for a rule truncated at
    ``max_launches`` and judged by the Clopper-Pearson bound there.

    The smallest upper threshold whose exact chance of ``fixed`` at the ceiling is <=
    ``ALPHA_MARGIN * alpha``, and the largest lower threshold whose exact chance of
    ``fixed`` at the design rate is >= ``1 - beta``, each given the other, iterated from the
    Ville-style bounds (1/alpha, beta) to a fixed point. Raising either threshold only
    removes ``fixed`` outcomes (a path that ends ``fixed`` with the higher one ends so with
    the lower one too), so both maps are monotone and the iteration settles; the error rate
    of ``fixed`` is largest at the ceiling among rates at or above it (more events only move
    a path away from ``fixed``). The dynamic program stops once less than 1e-12 is left
    undecided; that remainder is counted as ``fixed`` when alpha is checked and as not
    ``fixed`` when the power is.
    This is how exact critical values of truncated sequential tests are found in drug-safety
    surveillance (Kulldorff et al. 2011, "A maximized sequential probability ratio test",
    Sequential Analysis 30:58-78).

    Raises:
        UsageError: ``max_launches`` too small for these error rates.
    """
    step_event = math.log(design_rate / ceiling)
    step_clean = math.log1p(-design_rate) - math.log1p(-ceiling)
    k_max = k_max_cached(max_launches, ceiling, alpha)
    level = ALPHA_MARGIN * alpha

    walks: dict[tuple[float, bytes, bytes], OperatingPoint] = {}
    k_arr = np.asarray(k_max, dtype=np.int64)
    launches = np.arange(max_launches + 1, dtype=np.int64)

    def fixed(rate: float, upper: float, lower: float, worst: bool = False) -> float:
        """The chance of fixed; with ``worst``, counting what the walk left as fixed. The
        walk depends on the thresholds only through their event counts per launch, which
        stay the same over most of a bisection's last steps: each is walked once."""
        x_up, x_low = _thresholds(step_event, step_clean, upper, lower, max_launches)
        # what the walk reads of them: below_to and not_from, clipped to reachable counts
        below_to = np.clip(np.minimum(x_up, k_arr), -1, None)
        not_from = np.minimum(np.maximum(x_low, k_arr + 1), launches + 1)
        key = (rate, below_to.tobytes(), not_from.tobytes())
        point = walks.get(key)
        if point is None:
            point = walks[key] = _walk_counts(rate, x_up, x_low, k_max, max_launches,
                                              _CALIBRATION_LEFT)
        return point.p_fixed + (point.p_pruned if worst else 0.0)

    upper, lower = -math.log(alpha), math.log(beta)
    top, bottom = max_launches * step_clean + 1.0, max_launches * step_event - 1.0
    for _ in range(20):
        new_upper = _smallest(lambda u: fixed(ceiling, u, lower, True) <= level, upper, 0.0,
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
    if (fixed(ceiling, upper, lower, True) > level + 1e-12
            or fixed(design_rate, upper, lower) < 1 - beta - 1e-12):
        fixed_size = launches_to_bound_with_power(design_rate, ceiling=ceiling, alpha=alpha,
                                                  power=1 - beta)
        raise UsageError(f"no sequential rule of at most {max_launches} launches has a false-"
                         f"fixed chance <= {level:g} ({ALPHA_MARGIN:g} alpha) at the ceiling "
                         f"{ceiling:g} and power >= {1 - beta:g} at {design_rate:g} (a "
                         f"fixed-size candidate needs {fixed_size})",
                         f"give --launches {suggested_cap(fixed_size)} as `coldstart plan` "
                         f"suggests, or raise --beta or --design-rate")
    return upper, lower


#: the most launches `plan` suggests for a rule, as a multiple of the fixed-size design's
CAP_FACTOR = 1.3


def suggested_cap(fixed_size: int) -> int:
    """The ``--launches`` suggested for a rule whose fixed-size counterpart needs
    ``fixed_size`` launches: ``CAP_FACTOR`` times it, rounded down (the rule's maximum is at
    most 1.3 times the fixed design's, issue #27)."""
    return max(1, math.floor(CAP_FACTOR * fixed_size + 1e-9))


@dataclasses.dataclass(frozen=True)
class SprtDesign:
    """SPRT of H0: rate = ``ceiling`` vs H1: rate = ``design_rate`` on the candidate's target
    events, stopping with ``fixed`` only where ``compare``'s Clopper-Pearson bound is below the
    ceiling too.

    With ``max_launches`` (the campaign's ``--launches``) the thresholds are exact: computed
    by dynamic programming so that, truncated there and judged by ``compare`` at the end, the
    chance of ``fixed`` is <= ``ALPHA_MARGIN * alpha`` at any true rate at or above the
    ceiling and >= ``1 - beta`` at the design rate (:func:`_calibrate`). With
    ``baseline_launches`` too (a finished baseline of that many launches), the run stops
    with ``fixed`` where it is "below the ceiling" and Fisher's test of the builds passes
    the exact level :attr:`comparison_alpha` (:mod:`kit.analysis.finished`) instead of the
    anytime-valid e-value, going on while only the first holds. Without it they are the
    conservative Ville-style bounds ``LR >= 1/alpha`` and ``LR <= beta``, valid however long
    the run goes (Ville's inequality), at the price of more launches. (Wald's own
    approximations are ``(1 - beta)/alpha`` and ``beta/(1 - alpha)``: 16 and 0.211 at 0.05 and
    0.2, not guaranteed for a discrete, truncated run.)

    Attributes:
        ceiling: the rate the candidate must be shown below (as in ``compare``).
        design_rate: the rate under H1 (``0 < design_rate < ceiling``).
        alpha: false-``fixed`` bound. beta: bound on missing ``fixed`` at ``design_rate``.
        max_launches: where the rule is truncated (``None``: the Ville-style bounds).
        baseline_launches: the finished baseline's launches (``None``: the comparison is
            the anytime-valid e-value, for an interleaved run or one without
            ``max_launches``).
        stop_at_first_below: with ``baseline_launches``, the run stops at its first state
            "below the ceiling", ``fixed`` where the comparison holds there, else
            inconclusive (the other variant goes on while only the comparison is missing);
            :attr:`comparison_alpha` is exact for the variant chosen.
        baseline_stage: ``(n1, r, n2)`` for a baseline staged by design: ``n1`` launches,
            stopped there with at least ``r`` target events, else made up to ``n2``
            (``baseline_launches`` is the size it ended at, ``n1`` or ``n2``);
            :attr:`comparison_alpha` is then the one level of that whole procedure
            (:func:`kit.analysis.finished.staged_size`).
        upper, lower: the log-LR thresholds in use (computed).
        comparison_alpha: with ``baseline_launches``, the level Fisher's one-sided p must
            reach at the stop (computed, at most ``alpha``); else ``None``.

    Raises:
        UsageError: a value out of range, or no thresholds meet both bounds within
            ``max_launches`` (too few launches for these error rates).
    """

    ceiling: float = 0.05
    design_rate: float = 0.0125
    alpha: float = 0.05
    beta: float = 0.2
    max_launches: int | None = None
    baseline_launches: int | None = None
    stop_at_first_below: bool = False
    baseline_stage: tuple[int, int, int] | None = None
    upper: float = dataclasses.field(init=False, default=0.0)
    lower: float = dataclasses.field(init=False, default=0.0)
    comparison_alpha: float | None = dataclasses.field(init=False, default=None)

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
        if self.baseline_launches is not None:
            if self.max_launches is None or self.baseline_launches < 1:
                raise UsageError(f"a design for a finished baseline of "
                                 f"{self.baseline_launches} launches needs max_launches and "
                                 f"at least one baseline launch", "give --launches")
            stage = self.baseline_stage
            if stage is not None:
                n1, r, n2 = stage
                if not (1 <= r <= n1 < n2 and self.baseline_launches in (n1, n2)):
                    raise UsageError(f"baseline stage {n1}:{r} up to {n2} launches (ended at "
                                     f"{self.baseline_launches}) is not a staged design",
                                     "give --stage N:R with 1 <= R <= N < --launches")
            from .finished import comparison_level

            object.__setattr__(self, "comparison_alpha",
                               comparison_level(self, self.baseline_launches))

    @property
    def finished(self) -> bool:
        """Whether the design compares with a finished baseline at an exact level (it has
        ``baseline_launches``) rather than by the e-value."""
        return self.comparison_alpha is not None

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
        bound = bound_below(events, n, self.ceiling, self.alpha)
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
        (launches, events); nothing is dropped (``p_pruned`` is 0). Baseline conditions of
        ``compare`` (positive control, exact test) are not modelled: they can only remove
        ``fixed`` stops (:mod:`kit.analysis.finished` adds them for a finished baseline).

        Raises:
            ValueError: no ``max_launches`` here or in the design.
        """
        cap = max_launches if max_launches is not None else self.max_launches
        if cap is None:
            raise ValueError("operating() needs max_launches for a design without one")
        return _walk(true_rate, self.step_event, self.step_clean, self.upper, self.lower,
                     k_max_cached(cap, self.ceiling, self.alpha), cap)

    def _baseline_text(self) -> str:
        if self.baseline_stage is None:
            return f"{self.baseline_launches}-launch baseline"
        n1, r, n2 = self.baseline_stage
        short = "with no event" if r == 1 else f"with fewer than {r} events"
        return (f"baseline staged by design ({n1} launch{'' if n1 == 1 else 'es'}, on to {n2} "
                f"{short})")

    def describe(self) -> str:
        """The rule and its error rates in one paragraph."""
        if self.finished:
            how = (f"stops with fixed at the first launch with LR >= {math.exp(self.upper):.3g}"
                   f", the bound below the ceiling and compare agreeing, with Fisher's "
                   f"one-sided p against the {self._baseline_text()} at most "
                   f"the rule's exact level {self.comparison_alpha:.4g}, "
                   + ("stopping at the first launch below the ceiling either way"
                      if self.stop_at_first_below else
                      "going on while only the comparison is missing") + " (false fixed <= "
                   f"{ALPHA_MARGIN * self.alpha:g} at any common rate below the ceiling)")
        else:
            how = (f"stops with fixed when LR >= {math.exp(self.upper):.3g} and compare agrees "
                   f"(with the rule's anytime-valid comparison against the baseline, e-value "
                   f">= {1 / self.alpha:g})")
        head = (f"SPRT on the candidate's target rate, H0: {self.ceiling:g} (the ceiling) vs "
                f"H1: {self.design_rate:g}; {how}, as not below the ceiling when "
                f"LR <= {math.exp(self.lower):.3g} and the bound is not below it")
        if self.max_launches is None:
            tail = (f"; Ville's bounds 1/alpha and beta as thresholds: false fixed <= "
                    f"{self.alpha:g} at any rate at or above the ceiling and missed fixed <= "
                    f"{self.beta:g} at {self.design_rate:g} or less, however long the run")
        else:
            at_c = self.operating(self.ceiling)
            at_h1 = self.operating(self.design_rate)
            tail = (f"; exact thresholds for at most {self.max_launches} launches: false "
                    f"fixed {at_c.p_fixed:.4f} at the ceiling (<= {ALPHA_MARGIN * self.alpha:g}"
                    f", and lower "
                    f"above it), fixed {at_h1.p_fixed:.3f} at {self.design_rate:g} "
                    f"(>= {1 - self.beta:g})")
        return f"{head}{tail}; a clean candidate stops after {self.clean_launches()} launches"
