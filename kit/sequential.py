"""Sequential stopping for ``coldstart run ... --until-verdict``: stop a campaign as soon as
``compare`` would be settled, with stated error rates.

The rule (derived in docs/verdict.md, checked by ``benchmarks/bench_sequential.py``):

* The candidate's target events feed a sequential probability ratio test (Wald 1945) of
  H0: rate = ``ceiling`` against H1: rate = ``design_rate`` (default ``ceiling / 4``). After
  ``n`` counted launches with ``x`` events the likelihood ratio is
  ``LR = (p1/c)^x * ((1-p1)/(1-c))^(n-x)``.
* Stop with **fixed** when ``LR >= 1/alpha`` *and* ``compare`` on the data so far says
  ``fixed`` (positive control, exact test, upper bound below the ceiling). Under H0, and for
  any true rate >= ceiling, ``LR`` is a non-negative (super)martingale with mean 1, so by
  Ville's inequality ``P(LR ever >= 1/alpha) <= alpha``: the chance of stopping with a false
  ``fixed`` is at most ``alpha`` however long the campaign runs and whatever else the rule
  waits for. ``LR >= 1/alpha`` also implies the Clopper-Pearson bound at ``1 - alpha`` is at
  or below the ceiling, so the two conditions agree.
* Stop with **not below the ceiling** when ``LR <= beta``: by Ville's inequality applied to
  ``1/LR`` under H1, this happens with probability at most ``beta`` when the true rate is
  ``design_rate`` or lower.
* Otherwise go on, up to the campaign's ``--launches``; a campaign that reaches it is judged
  by ``compare`` as a fixed-size campaign (worst case, the false-``fixed`` chance of the whole
  procedure is then ``2 * alpha`` by the union bound; the benchmark measures it).

With a finished baseline (:func:`make_stop_rule`) only the candidate runs. When both builds
can run (:func:`run_interleaved`), launches alternate baseline, candidate, baseline, ... (one
round per launcher set), the baseline stops once its positive control makes the exact test
significant against the candidate so far, and the candidate goes on alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import functools
import math
import os
from typing import Any, Protocol, Sequence

import numpy as np

from .campaign import (Campaign, CampaignObserver, CampaignStore, Launcher, load_campaign,
                       run_campaign)
from .errors import UsageError
from .records import LaunchRecord
from .scenario import Scenario
from .stats import fisher_p_vector, significant
from .verdict import (DEFAULT_SIGNATURE, Verdict, VerdictSettings, count_target, decide)

__all__ = ["SprtState", "SprtDesign", "OperatingPoint", "StopRule", "InterleavedRule",
           "Arm", "Side", "InterleavedResult", "make_stop_rule", "run_interleaved", "interleave",
           "add_until_verdict_options", "stop_rule_from_args", "interleaved_rule_from_args"]


class SprtState(str, enum.Enum):
    """Where the candidate's likelihood ratio stands."""

    CONTINUE = "continue"
    BELOW_CEILING = "below-ceiling"  #: LR >= 1/alpha
    NOT_BELOW = "not-below-ceiling"  #: LR <= beta

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class OperatingPoint:
    """Exact behaviour of the candidate's test at one true rate (truncated at ``max_launches``).

    Attributes:
        true_rate, max_launches: the assumptions.
        p_below: chance of stopping with ``LR >= 1/alpha``.
        p_not_below: chance of stopping with ``LR <= beta``.
        p_undecided: chance of reaching ``max_launches`` first.
        expected_launches: mean launches until the stop (``max_launches`` if undecided).
    """

    true_rate: float
    max_launches: int
    p_below: float
    p_not_below: float
    p_undecided: float
    expected_launches: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SprtDesign:
    """SPRT of H0: rate = ``ceiling`` vs H1: rate = ``design_rate`` with Ville thresholds.

    Attributes:
        ceiling: the rate the candidate must be shown below (as in ``compare``).
        design_rate: the rate under H1 (``0 < design_rate < ceiling``).
        alpha: false-``fixed`` bound (stop when ``LR >= 1/alpha``).
        beta: false-"not below" bound at ``design_rate`` (stop when ``LR <= beta``).

    Raises:
        UsageError: a value out of range.
    """

    ceiling: float = 0.05
    design_rate: float = 0.0125
    alpha: float = 0.05
    beta: float = 0.2

    def __post_init__(self) -> None:
        for name in ("ceiling", "alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise UsageError(f"{name} {value} is not in (0, 1)", "give a fraction")
        if not 0.0 < self.design_rate < self.ceiling:
            raise UsageError(f"design rate {self.design_rate} is not between 0 and the "
                             f"ceiling {self.ceiling}", "use e.g. a quarter of the ceiling")

    @property
    def step_event(self) -> float:
        """log LR added by a launch with the target event (negative)."""
        return math.log(self.design_rate / self.ceiling)

    @property
    def step_clean(self) -> float:
        """log LR added by a launch without it (positive)."""
        return math.log1p(-self.design_rate) - math.log1p(-self.ceiling)

    def log_lr(self, events: int, n: int) -> float:
        """log of the likelihood ratio H1/H0 after ``events`` in ``n`` launches."""
        return events * self.step_event + (n - events) * self.step_clean

    def state(self, events: int, n: int) -> SprtState:
        """The test's state after ``events`` in ``n`` launches."""
        llr = self.log_lr(events, n)
        if llr >= -math.log(self.alpha):
            return SprtState.BELOW_CEILING
        if llr <= math.log(self.beta):
            return SprtState.NOT_BELOW
        return SprtState.CONTINUE

    def clean_launches(self) -> int:
        """Launches, all free of the target, that reach ``LR >= 1/alpha``."""
        return math.ceil(-math.log(self.alpha) / self.step_clean - 1e-9)

    def operating(self, true_rate: float, max_launches: int) -> OperatingPoint:
        """Exact stop probabilities and mean launches at ``true_rate`` (dynamic programming
        over (launches, events); O(max_launches^2)), ignoring the ``compare`` condition."""
        upper, lower = -math.log(self.alpha), math.log(self.beta)
        alive = np.array([1.0])
        p_below = p_not = expected = 0.0
        for n in range(1, max_launches + 1):
            nxt = np.zeros(n + 1)
            nxt[:-1] += alive * (1.0 - true_rate)
            nxt[1:] += alive * true_rate
            x = np.arange(n + 1)
            llr = x * self.step_event + (n - x) * self.step_clean
            hit_up, hit_low = llr >= upper, llr <= lower
            p_below += float(nxt[hit_up].sum())
            p_not += float(nxt[hit_low].sum())
            expected += n * float(nxt[hit_up | hit_low].sum())
            nxt[hit_up | hit_low] = 0.0
            alive = nxt
        rest = float(alive.sum())
        return OperatingPoint(true_rate, max_launches, p_below, p_not, rest,
                              expected + max_launches * rest)

    def describe(self) -> str:
        """The rule and its error rates in one paragraph."""
        return (f"SPRT on the candidate's target rate, H0: {self.ceiling:g} (the ceiling) vs "
                f"H1: {self.design_rate:g}; stops with fixed when LR >= {1 / self.alpha:g} "
                f"and compare agrees (false fixed <= {self.alpha:g} for any true rate at or "
                f"above the ceiling, by Ville's inequality), stops as not below the ceiling "
                f"when LR <= {self.beta:g} (wrongly, <= {self.beta:g} at a true rate of "
                f"{self.design_rate:g} or less); a clean candidate stops after "
                f"{self.clean_launches()} launches")


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
        x_c, n_c = count_target(records, self.settings.signature)
        state = self.design.state(x_c, n_c)
        if state is SprtState.NOT_BELOW:
            return True, (f"the candidate's {self.settings.signature} rate is not below the "
                          f"{self.settings.ceiling:g} ceiling ({x_c}/{n_c}, LR <= "
                          f"{self.design.beta:g})")
        if state is SprtState.BELOW_CEILING:
            verdict = decide(self.baseline_events, self.baseline_n, x_c, n_c, self.settings,
                             use_boschloo=False, with_needed=False).verdict
            if verdict is Verdict.FIXED:
                return True, (f"fixed: {x_c}/{n_c} candidate launches against the "
                              f"baseline's {self.baseline_events}/{self.baseline_n}")
        return False, f"{x_c}/{n_c}: {state.value}"

    def __call__(self, records: list[LaunchRecord]) -> bool:
        return self.decision(records)[0]


def make_stop_rule(baseline: Campaign | str | os.PathLike[str] | Sequence[LaunchRecord],
                   settings: VerdictSettings = VerdictSettings(), *,
                   design_rate: float | None = None, beta: float = 0.2) -> StopRule:
    """Build the stopping rule for a candidate campaign against a finished baseline.

    Args:
        baseline: the baseline campaign, its directory, or its records.
        settings: signature, alpha and ceiling, as ``compare`` will use them.
        design_rate: H1's rate (default ``ceiling / 4``).
        beta: bound on stopping as "not below the ceiling" at ``design_rate``.

    Raises:
        UsageError: the baseline is missing, or never showed the target (no positive
            control: the rule could never stop with ``fixed``).
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
                        settings.ceiling / 4, settings.alpha, beta)
    return StopRule(design, settings, x_b, n_b)


@functools.lru_cache(maxsize=1 << 16)
def _fisher_p(x_b: int, n_b: int, x_c: int, n_c: int) -> float:
    """Fisher's one-sided p, cached: the rule asks after every round, mostly for tables
    it has seen (simulations ask for the same ones thousands of times)."""
    return float(fisher_p_vector(x_b, n_b, x_c, n_c))


@dataclasses.dataclass(frozen=True)
class InterleavedRule:
    """Which build still needs launches when both run, alternating.

    The candidate needs launches until the SPRT stops (with ``fixed`` confirmed by
    ``compare``, or "not below the ceiling"). The baseline needs launches until it has shown
    the target and Fisher's one-sided p against the candidate so far is <= alpha; it resumes
    if a later candidate event raises that p again.
    """

    design: SprtDesign
    settings: VerdictSettings

    def needs_counts(self, x_b: int, n_b: int, x_c: int, n_c: int) -> tuple[bool, bool, str]:
        """``(baseline needs more, candidate needs more, why)`` from target counts."""
        state = self.design.state(x_c, n_c)
        sig = self.settings.signature
        if state is SprtState.NOT_BELOW:
            return False, False, (f"the candidate's {sig} rate is not below the "
                                  f"{self.settings.ceiling:g} ceiling ({x_c}/{n_c})")
        baseline_ok = x_b > 0 and n_c > 0 and significant(
            _fisher_p(x_b, n_b, x_c, n_c), self.settings.alpha)
        if state is SprtState.BELOW_CEILING and baseline_ok and decide(
                x_b, n_b, x_c, n_c, self.settings, use_boschloo=False,
                with_needed=False).verdict is Verdict.FIXED:
            return False, False, f"fixed: baseline {x_b}/{n_b}, candidate {x_c}/{n_c}"
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
            return why if rule is None else f"both builds reached their launches ({why})"


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


def add_until_verdict_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--until-verdict BASELINE_DIR`` and its settings to a ``coldstart run`` parser
    (the same ``--signature``/``--alpha``/``--ceiling`` as ``coldstart compare``)."""
    group = parser.add_argument_group(
        "sequential stopping", "stop as soon as `coldstart compare BASELINE_DIR <this run>` "
        "is settled; the run's --launches is the most it will make (docs/verdict.md)")
    group.add_argument("--until-verdict", metavar="BASELINE_DIR", default=None,
                       help="the baseline campaign to compare against (in a run that makes "
                            "both builds, the baseline's own output directory)")
    group.add_argument("--signature", default=DEFAULT_SIGNATURE,
                       help="target crash class, race-witnessed or any-crash "
                            f"(default {DEFAULT_SIGNATURE})")
    group.add_argument("--alpha", type=float, default=0.05,
                       help="false-fixed bound and test level (default 0.05)")
    group.add_argument("--ceiling", type=float, default=0.05,
                       help="rate the candidate must be shown below (default 0.05)")
    group.add_argument("--beta", type=float, default=0.2,
                       help="chance of stopping as 'not below the ceiling' when the candidate "
                            "is at the design rate (default 0.2)")
    group.add_argument("--design-rate", type=float, default=None,
                       help="candidate rate the test is tuned for (default ceiling/4)")


def _settings(args: argparse.Namespace) -> VerdictSettings:
    return VerdictSettings(signature=args.signature, alpha=args.alpha, ceiling=args.ceiling)


def _design(args: argparse.Namespace, settings: VerdictSettings) -> SprtDesign:
    rate = args.design_rate if args.design_rate is not None else settings.ceiling / 4
    return SprtDesign(settings.ceiling, rate, settings.alpha, args.beta)


def stop_rule_from_args(args: argparse.Namespace) -> StopRule | None:
    """The :class:`StopRule` for ``--until-verdict BASELINE_DIR`` (``None`` without it).

    Raises:
        UsageError: bad settings, a missing baseline, or one without a positive control.
    """
    if not getattr(args, "until_verdict", None):
        return None
    settings = _settings(args)
    return make_stop_rule(args.until_verdict, settings, beta=args.beta,
                          design_rate=_design(args, settings).design_rate)


def interleaved_rule_from_args(args: argparse.Namespace) -> InterleavedRule | None:
    """The :class:`InterleavedRule` for a run that makes both builds (``None`` without
    ``--until-verdict``). Raises UsageError for bad settings."""
    if not getattr(args, "until_verdict", None):
        return None
    settings = _settings(args)
    return InterleavedRule(_design(args, settings), settings)

