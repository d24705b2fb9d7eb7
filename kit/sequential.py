"""Sequential stopping for ``coldstart run ... --until-verdict``: stop a campaign as soon as
``compare`` would be settled, with stated error rates.

The rule (derived in docs/verdict.md, checked by ``benchmarks/bench_sequential.py``):

* The candidate's target events feed a sequential probability ratio test (Wald 1945) of
  H0: rate = ``ceiling`` against H1: rate = ``design_rate`` (default ``ceiling / 4``). After
  ``n`` counted launches with ``x`` events the likelihood ratio is
  ``LR = (p1/c)^x * ((1-p1)/(1-c))^(n-x)``.
* Stop with **fixed** when ``LR`` reaches the upper threshold *and* ``compare`` on the data
  so far says ``fixed`` (positive control, exact test, Clopper-Pearson bound below the
  ceiling). Stop with **not below the ceiling** when ``LR`` falls to the lower threshold and
  the bound is not below the ceiling. Otherwise go on, up to the campaign's ``--launches``,
  where ``compare`` judges the campaign as a fixed-size one.
* The thresholds are exact for that truncation (:func:`_calibrate`): a dynamic program over
  (launches, events) gives the rule's chance of ending ``fixed`` at the ceiling (<= alpha;
  at any higher rate it is lower) and at the design rate (>= 1 - beta), truncation and
  the bound included, and the thresholds are the least conservative that keep both. Wald's
  thresholds (``1/alpha`` and ``beta``, valid for any length by Ville's inequality) are kept
  for a design without ``max_launches``; they need 7% more launches for a clean candidate,
  23% more at the design rate and 35% more at the ceiling.

With a finished baseline (:func:`make_stop_rule`) only the candidate runs. When both builds
can run (:func:`run_interleaved`), launches alternate baseline, candidate, baseline, ... (one
round per launcher set); the baseline pauses once its positive control makes the exact test
significant against the candidate as it will stand at its earliest possible ``fixed`` stop,
and the candidate goes on alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import functools
import math
import os
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from .campaign import (Campaign, CampaignObserver, CampaignStore, Launcher, load_campaign,
                       run_campaign)
from .cli_common import fraction_arg
from .errors import UsageError
from .records import LaunchRecord
from .scenario import Scenario
from .stats import _first_true, fisher_p_vector, significant
from .verdict import (DEFAULT_SIGNATURE, Verdict, VerdictSettings, clean_launches_to_fixed,
                      count_target, decide)

__all__ = ["SprtState", "SprtDesign", "OperatingPoint", "StopRule", "InterleavedRule",
           "Arm", "Side", "InterleavedResult", "make_stop_rule", "run_interleaved", "interleave",
           "add_until_verdict_options", "stop_rule_from_args", "interleaved_rule_from_args",
           "resume_rule", "settle_rule_args", "add_design_options", "RULE_DEFAULTS"]


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
    :func:`kit.stats._k_max` gives it one ``n`` at a time (same duality:
    bound < ceiling <=> ``binom.cdf(k, n, ceiling) < alpha``)."""
    from scipy import stats

    n = np.arange(1, max_launches + 1)
    # a normal approximation to start from (binom.ppf is slow for thousands of n); the loops
    # below make it exact
    mean, sd = n * ceiling, np.sqrt(n * ceiling * (1 - ceiling))
    k = np.clip(np.floor(mean + stats.norm.ppf(alpha) * sd), -1, n).astype(np.int64)
    while True:
        too_high = (k >= 0) & (stats.binom.cdf(k, n, ceiling) >= alpha)
        if not too_high.any():
            break
        k = np.where(too_high, k - 1, k)
    while True:
        too_low = (k + 1 <= n) & (stats.binom.cdf(k + 1, n, ceiling) < alpha)
        if not too_low.any():
            break
        k = np.where(too_low, k + 1, k)
    return np.concatenate([[-1], k])


@functools.lru_cache(maxsize=64)
def _k_max_cached(max_launches: int, ceiling: float, alpha: float) -> tuple[int, ...]:
    return tuple(int(k) for k in _k_max_table(max_launches, ceiling, alpha))


@functools.lru_cache(maxsize=1 << 16)
def _bound_below(events: int, n: int, ceiling: float, alpha: float) -> bool:
    """Whether the one-sided Clopper-Pearson bound at ``1 - alpha`` for ``events`` in ``n``
    launches is below ``ceiling`` (duality: ``binom.cdf(events, n, ceiling) < alpha``, as in
    :func:`kit.stats._k_max`)."""
    from scipy import stats

    return n > 0 and bool(stats.binom.cdf(events, n, ceiling) < alpha)


#: a state of the dynamic program with a smaller chance is dropped (see :func:`_walk`)
_NEGLIGIBLE = 1e-15
#: the dynamic program stops when less than this chance is left undecided
_NEGLIGIBLE_LEFT = 1e-5


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
    rate is >= ``1 - beta``, each given the other, iterated from Wald's thresholds to a fixed
    point. Raising either threshold only removes ``fixed`` outcomes (a path that ends
    ``fixed`` with the higher one ends so with the lower one too), so both maps are
    monotone and the iteration settles; the error rate of ``fixed`` is largest at the
    ceiling among rates at or above it (more events only move a path away from ``fixed``).
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
        from .stats import launches_to_bound_with_power

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
    ``1 - beta`` at the design rate (:func:`_calibrate`). Without it they are Wald's,
    ``LR >= 1/alpha`` and ``LR <= beta``, which Ville's inequality makes valid however long
    the run goes, at the price of more launches.

    Attributes:
        ceiling: the rate the candidate must be shown below (as in ``compare``).
        design_rate: the rate under H1 (``0 < design_rate < ceiling``).
        alpha: false-``fixed`` bound. beta: bound on missing ``fixed`` at ``design_rate``.
        max_launches: where the rule is truncated (``None``: Wald's thresholds).
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
                f"{math.exp(self.upper):.3g} and compare agrees, as not below the ceiling when "
                f"LR <= {math.exp(self.lower):.3g} and the bound is not below it")
        if self.max_launches is None:
            tail = (f"; Wald's thresholds: false fixed <= {self.alpha:g} at any rate at or "
                    f"above the ceiling and missed fixed <= {self.beta:g} at "
                    f"{self.design_rate:g} or less (Ville's inequality), however long the run")
        else:
            at_c = self.operating(self.ceiling)
            at_h1 = self.operating(self.design_rate)
            tail = (f"; exact thresholds for at most {self.max_launches} launches: false "
                    f"fixed {at_c.p_fixed:.3f} at the ceiling (<= {self.alpha:g}, and lower "
                    f"above it), fixed {at_h1.p_fixed:.3f} at {self.design_rate:g} "
                    f"(>= {1 - self.beta:g})")
        return f"{head}{tail}; a clean candidate stops after {self.clean_launches()} launches"


@dataclasses.dataclass(frozen=True)
class StopRule:
    """``should_stop`` for :func:`kit.campaign.run_campaign`: the candidate runs against a
    finished baseline. Call with all the candidate's records so far (infra errors included;
    they are ignored).

    Attributes:
        design: the SPRT; settings: the verdict's settings (signature, alpha, ceiling).
        baseline_events, baseline_n: the baseline's target events and eligible launches.
    """

    design: SprtDesign
    settings: VerdictSettings
    baseline_events: int
    baseline_n: int

    def decision(self, records: Sequence[LaunchRecord]) -> tuple[bool, str]:
        """``(stop, why)`` for the candidate's ``records``."""
        return self.decision_counts(*count_target(records, self.settings.signature))

    def out_of_reach(self, x_c: int) -> bool:
        """Whether ``fixed`` cannot be reached within ``max_launches`` any more: even with
        no further event, ``compare`` on ``x_c`` in ``max_launches`` launches would not say
        fixed (its bound and its exact test only get worse with more events, and better
        with more launches). Never, for a design without ``max_launches``."""
        cap = self.design.max_launches
        if cap is None:
            return False
        return not (_bound_below(x_c, cap, self.settings.ceiling, self.settings.alpha)
                    and _compare_says_fixed(self.baseline_events, self.baseline_n, x_c, cap,
                                            self.settings))

    def decision_counts(self, x_c: int, n_c: int) -> tuple[bool, str]:
        """``(stop, why)`` for ``x_c`` target events in ``n_c`` counted candidate launches."""
        if self.out_of_reach(x_c):
            return True, (f"fixed is out of reach within {self.design.max_launches} launches "
                          f"({x_c} {self.settings.signature} in the candidate against the "
                          f"baseline's {self.baseline_events}/{self.baseline_n})")
        state = self.design.state(x_c, n_c)
        if state is SprtState.NOT_BELOW:
            return True, (f"the candidate's {self.settings.signature} rate is not below the "
                          f"{self.settings.ceiling:g} ceiling ({x_c}/{n_c}, LR <= "
                          f"{math.exp(self.design.lower):.3g}): compare says not-fixed, or "
                          f"inconclusive while its interval still reaches below the ceiling, "
                          f"and more launches would most likely not make it fixed")
        if state is SprtState.BELOW_CEILING:
            if _compare_says_fixed(self.baseline_events, self.baseline_n, x_c, n_c,
                                   self.settings):
                return True, (f"fixed: {x_c}/{n_c} candidate launches against the "
                              f"baseline's {self.baseline_events}/{self.baseline_n}")
        return False, f"{x_c}/{n_c}: {state.value}"

    def __call__(self, records: list[LaunchRecord]) -> bool:
        return self.decision(records)[0]

    def to_meta(self, baseline: str, stopped: bool | None, why: str) -> dict[str, Any]:
        """What ``campaign.json`` keeps under ``until_verdict``: the baseline and its
        counts, the verdict settings, the design and its thresholds (as LRs), and how the
        run ended (``stopped`` is ``None`` while it runs); :func:`resume_rule` reads it
        back on ``--resume``."""
        return {**_rule_meta(self.design, self.settings, baseline, stopped, why),
                "baseline_events": self.baseline_events, "baseline_n": self.baseline_n}


def make_stop_rule(baseline: Campaign | str | os.PathLike[str] | Sequence[LaunchRecord],
                   settings: VerdictSettings = VerdictSettings(), *,
                   design_rate: float | None = None, beta: float = 0.2,
                   max_launches: int | None = None) -> StopRule:
    """Build the stopping rule for a candidate campaign against a finished baseline.

    Args:
        baseline: the baseline campaign, its directory, or its records.
        settings: signature, alpha and ceiling, as ``compare`` will use them.
        design_rate: H1's rate (default ``ceiling / 4``).
        beta: chance of missing ``fixed`` when the candidate is at ``design_rate``.
        max_launches: the candidate campaign's ``--launches`` (exact thresholds for it;
            ``None``: Wald's).

    Raises:
        UsageError: the baseline is missing, or never showed the target (no positive
            control: the rule could never stop with ``fixed``), or ``max_launches`` is too
            few for these error rates, or for the exact test against this baseline.
    """
    if isinstance(baseline, (str, os.PathLike)):
        baseline = load_campaign(baseline)
    records = baseline.records if isinstance(baseline, Campaign) else list(baseline)
    x_b, n_b = count_target(records, settings.signature)
    if x_b == 0:
        raise UsageError(f"the baseline never reproduced {settings.signature} ({x_b}/{n_b} "
                         f"launches), so --until-verdict could never stop with fixed",
                         "make the baseline crash first (heap poisoning, more sessions, more "
                         "cores), or run without --until-verdict")
    design = SprtDesign(settings.ceiling, design_rate if design_rate is not None else
                        settings.ceiling / 4, settings.alpha, beta, max_launches)
    rule = StopRule(design, settings, x_b, n_b)
    if rule.out_of_reach(0):
        more = clean_launches_to_fixed(x_b, n_b, 0, 0, alpha=settings.alpha,
                                       ceiling=settings.ceiling)  # Fisher's: an upper bound
        if more is not None and max_launches is not None and more > max_launches:
            from .stats import _first_true

            more = _first_true(lambda n: _compare_says_fixed(x_b, n_b, 0, n, settings),
                               max_launches + 1, more)  # compare's own tests (Boschloo)
        need = f"at least {more}" if more is not None else "more than 10,000,000"
        raise UsageError(f"the baseline's {x_b}/{n_b} {settings.signature} could not be shown "
                         f"higher than even a clean candidate of {max_launches} launches "
                         f"(a clean candidate needs {need})",
                         "give --launches that large, or make more baseline launches "
                         "(`coldstart run ... --out BASELINE_DIR --resume --launches M`)")
    return rule


@functools.lru_cache(maxsize=1 << 14)
def _compare_says_fixed(x_b: int, n_b: int, x_c: int, n_c: int,
                        settings: VerdictSettings) -> bool:
    """Whether ``compare`` says ``fixed`` for these counts, with its own tests (Boschloo's
    where more powerful than Fisher's), cached: the rules ask again after every launch."""
    return decide(x_b, n_b, x_c, n_c, settings, with_needed=False).verdict is Verdict.FIXED


@functools.lru_cache(maxsize=1 << 16)
def _fisher_p(x_b: int, n_b: int, x_c: int, n_c: int) -> float:
    """Fisher's one-sided p, cached: the rule asks after every round, mostly for tables
    it has seen (simulations ask for the same ones thousands of times)."""
    return float(fisher_p_vector(x_b, n_b, x_c, n_c))


def _rule_meta(design: SprtDesign, settings: VerdictSettings, baseline: str,
               stopped: bool | None, why: str) -> dict[str, Any]:
    """The fields every rule keeps in ``campaign.json`` (see :meth:`StopRule.to_meta`)."""
    return {"baseline": baseline, "signature": settings.signature, "alpha": design.alpha,
            "beta": design.beta, "ceiling": design.ceiling,
            "design_rate": design.design_rate, "max_launches": design.max_launches,
            "lr_upper": math.exp(design.upper), "lr_lower": math.exp(design.lower),
            "stopped": stopped, "why": why}


@dataclasses.dataclass(frozen=True)
class InterleavedRule:
    """Which build still needs launches when both run, alternating.

    The candidate needs launches until its SPRT leaves :attr:`SprtState.CONTINUE`: "not
    below the ceiling" ends the run; "below the ceiling" ends it with ``fixed`` once
    ``compare`` agrees, and until then only the baseline goes on. The baseline needs
    launches until it has shown the target and Fisher's one-sided p is <= alpha against the
    candidate as it will stand at its earliest possible ``fixed`` stop: its events so far in
    :meth:`SprtDesign.first_fixed_launch` launches (or more, if it already has them). It
    resumes if a later candidate event raises that p again.
    """

    design: SprtDesign
    settings: VerdictSettings

    def to_meta(self, baseline: str, stopped: bool | None, why: str) -> dict[str, Any]:
        """What ``campaign.json`` keeps under ``until_verdict`` for an interleaved run: the
        fields of :meth:`StopRule.to_meta` (without the baseline's counts, which change as
        it runs) and ``"interleaved": True``; :func:`resume_rule` reads it back."""
        return {**_rule_meta(self.design, self.settings, baseline, stopped, why),
                "interleaved": True}

    def needs_counts(self, x_b: int, n_b: int, x_c: int, n_c: int) -> tuple[bool, bool, str]:
        """``(baseline needs more, candidate needs more, why)`` from target counts."""
        state = self.design.state(x_c, n_c)
        sig = self.settings.signature
        if state is SprtState.NOT_BELOW:
            return False, False, (f"the candidate's {sig} rate is not below the "
                                  f"{self.settings.ceiling:g} ceiling ({x_c}/{n_c})")
        if state is SprtState.BELOW_CEILING:
            if _compare_says_fixed(x_b, n_b, x_c, n_c, self.settings):
                return False, False, f"fixed: baseline {x_b}/{n_b}, candidate {x_c}/{n_c}"
            return True, False, (f"the candidate ({x_c}/{n_c}) is below the ceiling; the "
                                 f"baseline ({x_b}/{n_b}) does not yet show it is lower")
        n_at_stop = max(n_c, self.design.first_fixed_launch(x_c))
        baseline_ok = x_b > 0 and significant(_fisher_p(x_b, n_b, x_c, n_at_stop),
                                              self.settings.alpha)
        return not baseline_ok, True, f"baseline {x_b}/{n_b}, candidate {x_c}/{n_c}: {state}"


@dataclasses.dataclass
class Arm:
    """One build's side of an interleaved run: what :func:`kit.campaign.run_campaign` needs.

    ``launches`` is this build's maximum; ``records`` is updated as the run goes.
    """

    store: CampaignStore
    records: list[LaunchRecord]
    launchers: Sequence[Launcher]
    label: str
    scenario: Scenario
    launches: int
    timeout_s: float
    max_attempts: int = 3


@dataclasses.dataclass(frozen=True)
class InterleavedResult:
    """How an interleaved run ended: both builds' records and why it stopped."""

    baseline_records: list[LaunchRecord]
    candidate_records: list[LaunchRecord]
    why: str


class _RecordsOnly:
    """Forwards ``recorded`` and reports ``started`` once for the whole interleaved run."""

    def __init__(self, inner: CampaignObserver | None, total: int, done: int) -> None:
        self.inner = inner
        if inner is not None:
            inner.started(total, done)

    def started(self, total: int, done: int) -> None:
        pass

    def recorded(self, record: LaunchRecord) -> None:
        if self.inner is not None:
            self.inner.recorded(record)


class Side(Protocol):
    """One build as :func:`interleave` drives it (a campaign, or a simulated one).

    ``slots`` is how many launch indices have been started, ``launches`` the most allowed,
    ``counts(signature)`` the target's ``(events, eligible launches)``, and ``step()`` makes
    the next round of launches (one per launcher)."""

    @property
    def slots(self) -> int: ...

    @property
    def launches(self) -> int: ...

    def counts(self, signature: str) -> tuple[int, int]: ...

    def step(self) -> None: ...


def interleave(baseline: Side, candidate: Side, rule: InterleavedRule | None) -> str:
    """Alternate rounds of ``baseline`` and ``candidate`` until ``rule`` says neither needs
    more launches, both reach their ``launches``, or the baseline reaches its ``launches``
    without a target event (no positive control: only inconclusive is possible).
    Returns why it stopped."""
    sig = rule.settings.signature if rule is not None else DEFAULT_SIGNATURE
    why = "both builds reached their launches"
    while True:
        need_b = need_c = True
        if rule is not None:
            x_b, n_b = baseline.counts(sig)
            need_b, need_c, why = rule.needs_counts(x_b, n_b, *candidate.counts(sig))
            if not (need_b or need_c):
                return why
            if baseline.slots >= baseline.launches and x_b == 0:
                return (f"the baseline never reproduced {sig} in its {baseline.launches} "
                        f"launches (no positive control)")
        ran = False
        for side, need in ((baseline, need_b), (candidate, need_c)):
            if need and side.slots < side.launches:
                side.step()
                ran = True
        if not ran:
            if rule is None:
                return why
            full = [side.slots >= side.launches for side in (baseline, candidate)]
            if all(full):
                return f"both builds reached their launches ({why})"
            which = "baseline" if full[0] else "candidate"
            side = baseline if full[0] else candidate
            return (f"the {which} reached its {side.launches} launches and the other build "
                    f"needs no more ({why})")


@dataclasses.dataclass
class _CampaignSide:
    arm: Arm
    watcher: CampaignObserver

    @property
    def slots(self) -> int:
        return 1 + max((r.index for r in self.arm.records), default=-1)

    @property
    def launches(self) -> int:
        return self.arm.launches

    def counts(self, signature: str) -> tuple[int, int]:
        return count_target(self.arm.records, signature)

    def step(self) -> None:
        arm = self.arm
        arm.records = run_campaign(
            arm.store, arm.records, arm.launchers, label=arm.label, scenario=arm.scenario,
            launches=min(arm.launches, self.slots + len(arm.launchers)),
            timeout_s=arm.timeout_s, max_attempts=arm.max_attempts, observer=self.watcher)


def run_interleaved(baseline: Arm, candidate: Arm, rule: InterleavedRule | None = None, *,
                    observer: CampaignObserver | None = None) -> InterleavedResult:
    """Run two campaigns alternately (ABAB...), each round one launch per launcher of a
    build, until ``rule`` says neither build needs more or both reach their ``launches``
    (see :func:`interleave`).

    Without a rule both builds run to their ``launches``, still interleaved (drift in the
    devices then hits both builds alike). Each round is a :func:`kit.campaign.run_campaign`
    call, so records, infra-error retries and ``--resume`` work as in a single campaign.

    Raises:
        KeyboardInterrupt: after the launches in flight are aborted (records are kept).
    """
    counted = sum(1 for r in [*baseline.records, *candidate.records] if r.counted)
    watcher = _RecordsOnly(observer, baseline.launches + candidate.launches, counted)
    why = interleave(_CampaignSide(baseline, watcher), _CampaignSide(candidate, watcher), rule)
    return InterleavedResult(baseline.records, candidate.records, why)


#: Defaults of the rule's options on ``coldstart run`` (``None`` there means "not given").
RULE_DEFAULTS: dict[str, Any] = {"signature": DEFAULT_SIGNATURE, "alpha": 0.05,
                                 "ceiling": 0.05, "beta": 0.2, "design_rate": None}


def add_until_verdict_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--until-verdict BASELINE_DIR`` and its settings to a ``coldstart run`` parser
    (the same ``--signature``/``--alpha``/``--ceiling`` as ``coldstart compare``). They
    default to ``None`` so that :func:`settle_rule_args` can tell a given option from a
    default one."""
    group = parser.add_argument_group(
        "sequential stopping", "stop as soon as `coldstart compare BASELINE_DIR <this run>` "
        "is settled; the run's --launches is the most it will make, and the rule's thresholds "
        "are computed for it (`coldstart plan` suggests a number; docs/verdict.md)")
    group.add_argument("--until-verdict", metavar="BASELINE_DIR", default=None,
                       help="the finished baseline campaign to compare against")
    group.add_argument("--signature", default=None,
                       help="target crash class, race-witnessed or any-crash "
                            f"(default {DEFAULT_SIGNATURE})")
    group.add_argument("--alpha", type=fraction_arg, default=None,
                       help="false-fixed bound and test level (default 0.05)")
    group.add_argument("--ceiling", type=fraction_arg, default=None,
                       help="rate the candidate must be shown below (default 0.05)")
    add_design_options(group, default_beta=None)


def add_design_options(parser: argparse.ArgumentParser | Any, prefix: str = "",
                       default_beta: float | None = 0.2) -> None:
    """Add the sequential rule's own settings, ``--beta`` and ``--design-rate``, to a parser
    or argument group (``coldstart run``'s and ``coldstart plan``'s); ``prefix`` starts
    their help texts."""
    parser.add_argument("--beta", type=fraction_arg, default=default_beta,
                        help=f"{prefix}chance of missing fixed when the candidate is at the "
                             f"design rate (default 0.2)")
    parser.add_argument("--design-rate", type=fraction_arg, default=None,
                        help=f"{prefix}candidate rate the rule is tuned for (default "
                             f"ceiling/4)")


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def settle_rule_args(args: argparse.Namespace) -> None:
    """Fill the ``--until-verdict`` settings left out with :data:`RULE_DEFAULTS` (after
    :func:`resume_rule`, which fills them from the campaign on ``--resume``).

    Raises:
        UsageError: a rule setting given without ``--until-verdict`` (it would be unused).
    """
    if getattr(args, "rule_settled", False):  # scenario_from_args may run twice
        return
    args.rule_settled = True
    if getattr(args, "until_verdict", None) is None:
        given = [key for key in RULE_DEFAULTS if getattr(args, key, None) is not None]
        if given:
            raise UsageError(f"{_flag(given[0])} only applies with --until-verdict",
                             f"add --until-verdict BASELINE_DIR, or give {_flag(given[0])} "
                             f"to `coldstart compare` after the run")
    for key, default in RULE_DEFAULTS.items():
        if getattr(args, key, None) is None:
            setattr(args, key, default)


def resume_rule(args: argparse.Namespace, kept: dict[str, Any] | None,
                launches: Any, out: os.PathLike[str] | str) -> None:
    """On ``--resume``: go on under the rule the campaign started with (``kept``, from
    ``campaign.json``), or under none. Settings left out are taken from ``kept``; settings
    that name another rule, or other ``--launches`` (the thresholds are computed for them),
    are refused.

    Raises:
        UsageError: another rule than the campaign's, or a rule for a campaign without one.
    """
    given = getattr(args, "until_verdict", None)
    if kept is None:
        if given is not None:
            raise UsageError(f"cannot resume {out} under --until-verdict: it was started "
                             f"without a rule", "resume without it, or start a new campaign")
        return
    try:
        before = {"until_verdict": str(Path(str(kept["baseline"])).resolve()),
                  "signature": str(kept["signature"]),
                  **{k: float(kept[k]) for k in ("alpha", "ceiling", "beta", "design_rate")}}
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"campaign.json's until_verdict is incomplete ({exc})",
                         "start a new campaign") from None
    for key, value in before.items():
        now = getattr(args, key, None)
        if now is None:
            continue
        if key == "until_verdict":
            now = str(Path(now).resolve())
        if now != value:
            raise UsageError(f"cannot resume {out} under another rule: its "
                             f"{_flag(key)} was {value!r}, now {now!r}",
                             "resume without the --until-verdict options, or start a new "
                             "campaign")
    args.until_verdict = str(kept["baseline"])
    for key in ("signature", "alpha", "ceiling", "beta", "design_rate"):
        setattr(args, key, before[key])
    if args.launches is not None and args.launches != launches:
        raise UsageError(f"cannot resume {out} with --launches {args.launches}: its rule's "
                         f"thresholds are for {launches}", "resume without --launches")


def _settings(args: argparse.Namespace) -> VerdictSettings:
    return VerdictSettings(signature=args.signature, alpha=args.alpha, ceiling=args.ceiling)


def _design(args: argparse.Namespace, settings: VerdictSettings) -> SprtDesign:
    rate = args.design_rate if args.design_rate is not None else settings.ceiling / 4
    return SprtDesign(settings.ceiling, rate, settings.alpha, args.beta, args.launches)


def stop_rule_from_args(args: argparse.Namespace, target: str | None = None
                        ) -> StopRule | None:
    """The :class:`StopRule` for ``--until-verdict BASELINE_DIR`` (``None`` without it), for
    a run on ``target`` (a baseline of another target is refused, as ``compare`` would).

    Raises:
        UsageError: bad settings, a missing baseline, one of another target, or one without
            a positive control.
    """
    if getattr(args, "until_verdict", None) is None:
        return None
    if not args.until_verdict.strip():
        raise UsageError("--until-verdict is empty", "give the baseline campaign's directory")
    settle_rule_args(args)
    settings = _settings(args)
    baseline = load_campaign(args.until_verdict)
    theirs = baseline.meta.get("target")
    if target is not None and theirs != target:
        raise UsageError(f"the baseline {args.until_verdict} ran on target {theirs!r}, this run "
                         f"on {target!r}: compare refuses such a pair",
                         "give a baseline campaign of the same target")
    design = _design(args, settings)
    return make_stop_rule(baseline, settings, beta=args.beta,
                          design_rate=design.design_rate, max_launches=design.max_launches)


def interleaved_rule_from_args(args: argparse.Namespace) -> InterleavedRule | None:
    """The :class:`InterleavedRule` for a run that makes both builds (``None`` without
    ``--until-verdict``), with exact thresholds for ``args.launches`` per build. Raises
    UsageError for bad settings."""
    if not getattr(args, "until_verdict", None):
        return None
    settle_rule_args(args)
    settings = _settings(args)
    return InterleavedRule(_design(args, settings), settings)

