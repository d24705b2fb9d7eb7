"""Sequential stopping for ``coldstart run ... --until-verdict``: stop a campaign as soon as
``compare`` would be settled, with error rates that hold in every case the rules accept.

The rules (derived in docs/verdict.md, checked by ``benchmarks/bench_sequential.py``):

* The candidate's target events feed a sequential probability ratio test (Wald 1945) of
  H0: rate = ``ceiling`` against H1: rate = ``design_rate`` (default ``ceiling / 4``), with
  thresholds computed exactly for the campaign's ``--launches`` (:mod:`kit.analysis.sprt`):
  it ends "below the ceiling" with chance <= 0.95 alpha at any true rate at or above the
  ceiling.
* The comparison with a finished baseline, for a run with ``--launches``
  (:func:`make_stop_rule`), is exact: the run stops with ``fixed`` at the first launch where
  the SPRT is "below the ceiling" and Fisher's test passes a level computed for the design
  and the baseline's size (:mod:`kit.analysis.finished`), going on while only the first
  holds, so that a wrong ``fixed`` has chance <= 0.95 alpha at every common rate (issue #27).
* Otherwise (interleaved runs, runs without ``--launches``, and a weak baseline the exact
  rule could never beat) it is the anytime-valid e-value of :mod:`kit.analysis.anytime`,
  which reaches ``1/alpha`` with chance <= alpha when the candidate's rate is not lower
  than the baseline's, however the launches were interleaved, paused and stopped (the exact
  tests of a fixed-size ``compare``, run after every launch, reached 8.6% and 14% at alpha
  0.05: issue #14).
* Stop with **fixed** when the SPRT is over its upper threshold *and* ``compare`` on the
  data so far says ``fixed`` with the rule's conditions (:func:`sequential_fixed`: positive
  control, exact test, Clopper-Pearson bound, the comparison). Stop as **not below the ceiling**
  when the SPRT falls to its lower threshold and the bound is not below the ceiling, and
  when ``fixed`` is out of reach within ``--launches``.

``fixed`` needs both parts, so its error rate is at most alpha wherever the candidate is not
fixed: a true rate at or above the ceiling is caught by the first, one at or above the
baseline's by the second (an intersection-union test, Berger 1982, Technometrics 24:295).

With a finished baseline (:func:`make_stop_rule`) only the candidate runs. When both builds
can run (:func:`interleave`), launches alternate baseline, candidate, ... (one round per
launcher set); the baseline pauses once its events would settle the comparison against the
candidate as it will stand at its earliest possible ``fixed`` stop, and the candidate goes
on alone.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from typing import Any, Protocol, Sequence

from ..store.store import Campaign, load_campaign
from ..errors import UsageError
from ..records import LaunchRecord
from ..scenario import parse_scenario
from .anytime import e_reaches
from .binomial import bound_below
from .decide import Verdict, VerdictSettings, decide
from .sprt import OperatingPoint, SprtDesign, SprtState
from .stats import first_true, fisher_p_vector, significant
from .stage import staged_design
from .summary import size_not_fixed
from .target import DEFAULT_SIGNATURE, count_events

__all__ = ["StopRule", "InterleavedRule", "Side", "make_stop_rule", "interleave",
           "sequential_fixed", "SprtState", "SprtDesign", "OperatingPoint", "COMPARISON",
           "COMPARISON_FINISHED", "COMPARISON_FINISHED_FIRST"]

#: how the rules compare the builds, as campaign.json keeps it: the e-value (interleaved
#: runs, and designs without ``--launches``) ...
COMPARISON = "anytime-valid e-value >= 1/alpha (universal inference)"
#: ... or, against a finished baseline, Fisher's test at the design's exact level
#: (:mod:`kit.analysis.finished`) wherever the SPRT is below the ceiling
COMPARISON_FINISHED = ("Fisher's one-sided p <= the exact level, while the SPRT is below the "
                       "ceiling")
#: ... or so at the first stop below the ceiling only (``stop_at_first_below``; what
#: campaigns of the rule's first version keep, read back as that variant)
COMPARISON_FINISHED_FIRST = ("Fisher's one-sided p <= the exact level, at the first stop "
                             "below the ceiling")


@dataclasses.dataclass(frozen=True)
class StopRule:
    """``should_stop`` for :func:`kit.campaign.run_campaign`: the candidate runs against a
    finished baseline. Call with all the candidate's records so far (infra errors included;
    they are ignored).

    Attributes:
        design: the SPRT; settings: the verdict's settings (signature, alpha, ceiling).
        baseline_events, baseline_n: the baseline's target events and eligible launches.
        not_exact: why a design with ``max_launches`` compares by the e-value (the
            baseline's size was not fixed before it ran), else ``None``.
    """

    design: SprtDesign
    settings: VerdictSettings
    baseline_events: int
    baseline_n: int
    #: why the baseline is compared by the e-value although the rule has ``--launches``
    #: (its size was not fixed in advance: :func:`kit.analysis.summary.size_not_fixed`)
    not_exact: str | None = None

    def decision(self, records: Sequence[LaunchRecord]) -> tuple[bool, str]:
        """``(stop, why)`` for the candidate's ``records``."""
        return self.decision_counts(*count_events(records, self.settings.signature))

    def out_of_reach(self, x_c: int) -> bool:
        """Whether ``fixed`` cannot be reached within ``max_launches`` any more: even with
        no further event, ``compare`` on ``x_c`` in ``max_launches`` launches would not say
        fixed (its bound and its exact test only get worse with more events, and better
        with more launches). For a design that stops at its first "below the ceiling"
        (``stop_at_first_below``): no count ``x >= x_c`` ends ``fixed`` at the launch where
        it would first be below the ceiling (every path's first "below" is such a state).
        Never, for a design without ``max_launches``."""
        return _out_of_reach(self, x_c)

    def _fixed_at_first_stop(self, x: int) -> bool:
        n = self.design.first_fixed_launch(x)
        return sequential_fixed(self.baseline_events, self.baseline_n, x, n, self.settings,
                                self.design)

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
            if sequential_fixed(self.baseline_events, self.baseline_n, x_c, n_c,
                                self.settings, self.design):
                return True, (f"fixed: {x_c}/{n_c} candidate launches against the "
                              f"baseline's {self.baseline_events}/{self.baseline_n}")
            if self.design.finished and self.design.stop_at_first_below:
                return True, (f"the candidate's {self.settings.signature} rate is below the "
                              f"{self.settings.ceiling:g} ceiling ({x_c}/{n_c}), but not shown "
                              f"lower than the baseline's {self.baseline_events}/"
                              f"{self.baseline_n} at the rule's level (Fisher's p <= "
                              f"{self.design.comparison_alpha:.4g}): compare says inconclusive")
        return False, f"{x_c}/{n_c}: {state.value}"

    def __call__(self, records: list[LaunchRecord]) -> bool:
        return self.decision(records)[0]

    def to_meta(self, baseline: str, stopped: bool | None, why: str) -> dict[str, Any]:
        """What ``campaign.json`` keeps under ``until_verdict``: the baseline and its
        counts, the verdict settings, the design and its thresholds (as LRs), and how the
        run ended (``stopped`` is ``None`` while it runs); :func:`resume_rule` reads it
        back on ``--resume``."""
        meta = {**_rule_meta(self.design, self.settings, baseline, stopped, why),
                "baseline_events": self.baseline_events, "baseline_n": self.baseline_n}
        if self.design.finished:
            first = self.design.stop_at_first_below
            meta.update(comparison=COMPARISON_FINISHED_FIRST if first else COMPARISON_FINISHED,
                        comparison_alpha=self.design.comparison_alpha,
                        stop_at_first_below=first)
            if self.design.baseline_stage is not None:
                meta.update(baseline_stage=list(self.design.baseline_stage))
        elif self.not_exact is not None:
            meta.update(not_exact=f"the baseline's size was not fixed before it ran: "
                                  f"{self.not_exact}")
        return meta


def make_stop_rule(baseline: Campaign | str | os.PathLike[str] | Sequence[LaunchRecord],
                   settings: VerdictSettings = VerdictSettings(), *,
                   design_rate: float | None = None, beta: float = 0.2,
                   max_launches: int | None = None, stop_at_first_below: bool = False
                   ) -> StopRule:
    """Build the stopping rule for a candidate campaign against a finished baseline.

    Args:
        baseline: the baseline campaign, its directory, or its records.
        settings: signature, alpha and ceiling, as ``compare`` will use them.
        design_rate: H1's rate (default ``ceiling / 4``).
        beta: chance of missing ``fixed`` when the candidate is at ``design_rate``.
        max_launches: the candidate campaign's ``--launches`` (exact thresholds for it, and
            the exact comparison level for this baseline, :mod:`kit.analysis.finished`;
            ``None``: the Ville-style bounds 1/alpha and beta and the e-value). When even a
            clean candidate of ``max_launches`` could not end ``fixed`` by the exact design,
            the e-value's comparison is tried (it needs more evidence, so this refuses).
        stop_at_first_below: with ``max_launches``, the rule's variant that stops at its
            first "below the ceiling" (:attr:`SprtDesign.stop_at_first_below`).

    Raises:
        UsageError: the baseline is missing, injects crashes or never showed the target (no
            positive control: the rule could never stop with ``fixed``), or ``max_launches``
            is too few for these error rates, or for the comparison with this baseline.
    """
    if isinstance(baseline, (str, os.PathLike)):
        baseline = load_campaign(baseline)
    if isinstance(baseline, Campaign):
        inject = parse_scenario(baseline.meta.scenario).inject
        if inject is not None:
            raise UsageError(f"the baseline's scenario injects crashes "
                             f"(inject={'@'.join(inject)}): they are the kit's own, no "
                             f"positive control, so --until-verdict could never stop with "
                             f"fixed", "give a baseline campaign run with inject=none")
    records = list(baseline.iter_records()) if isinstance(baseline, Campaign) else list(baseline)
    x_b, n_b = count_events(records, settings.signature)
    # the exact level is computed for a baseline whose size was fixed before it ran
    not_exact = (size_not_fixed(baseline, len({r.index for r in records}), settings.signature)
                 if isinstance(baseline, Campaign) and max_launches is not None else None)
    if x_b == 0:
        raise UsageError(f"the baseline never reproduced {settings.signature} ({x_b}/{n_b} "
                         f"launches), so --until-verdict could never stop with fixed",
                         "make the baseline crash first (heap poisoning, more sessions, more "
                         "cores), or run without --until-verdict")
    exact = max_launches is not None and not_exact is None
    # a baseline staged by design, made as declared: the level of the whole procedure
    stage = (staged_design(records, baseline.meta.stage, baseline.meta.launches)
             if exact and isinstance(baseline, Campaign) and baseline.meta.stage is not None
             else None)
    design = SprtDesign(settings.ceiling, design_rate if design_rate is not None else
                        settings.ceiling / 4, settings.alpha, beta, max_launches,
                        n_b if exact else None, stop_at_first_below and exact, stage)
    rule = StopRule(design, settings, x_b, n_b, not_exact)
    if design.finished and rule.out_of_reach(0):
        # the exact design cannot reach fixed even at 0/max_launches: the e-value's
        # comparison, which needs more evidence, cannot either, and the refusal says how
        # many clean launches it would need
        rule = StopRule(dataclasses.replace(design, baseline_launches=None, baseline_stage=None),
                        settings, x_b, n_b)
    if rule.out_of_reach(0):
        more = _clean_launches_needed(x_b, n_b, settings)
        need = f"at least {more}" if more is not None else "more than 10,000,000"
        raise UsageError(f"the baseline's {x_b}/{n_b} {settings.signature} could not be shown "
                         f"higher than even a clean candidate of {max_launches} launches "
                         f"(a clean candidate needs {need} for the rule's comparison)",
                         "give --launches that large, or make a new baseline of more launches "
                         "(a new --out: extending this one after it ran would make the rule "
                         "compare by the e-value, which needs more evidence)")
    return rule


@functools.lru_cache(maxsize=1 << 16)
def sequential_fixed(x_b: int, n_b: int, x_c: int, n_c: int, settings: VerdictSettings,
                     design: SprtDesign) -> bool:
    """Whether ``compare`` says ``fixed`` for these counts of a run under ``design``: its
    own tests (positive control, Boschloo's or Fisher's test, Clopper-Pearson bound) and
    the rule's (the SPRT over its upper threshold or the run at ``max_launches``; the
    comparison: Fisher's p at the design's exact level for a finished baseline,
    :attr:`SprtDesign.comparison_alpha`, else the anytime-valid e-value at ``1/alpha``).
    The same answer as ``decide(..., anytime=not design.finished, sequential=design)``,
    with the cheap conditions first, and cached: the rules ask after every launch."""
    alpha, ceiling = settings.alpha, settings.ceiling
    if x_b == 0 or n_c == 0 or x_c * n_b >= x_b * n_c:
        return False
    if not bound_below(x_c, n_c, ceiling, alpha):
        return False
    cap = design.max_launches
    if design.state(x_c, n_c) is not SprtState.BELOW_CEILING and (cap is None or n_c < cap):
        return False
    if design.finished:
        assert design.comparison_alpha is not None  # a finished design has one
        if not significant(_fisher_p(x_b, n_b, x_c, n_c), design.comparison_alpha):
            return False
    elif not e_reaches(x_b, n_b, x_c, n_c, alpha=alpha, ceiling=ceiling):
        return False
    return decide(x_b, n_b, x_c, n_c, settings, with_needed=False,
                  anytime=not design.finished, sequential=design).verdict is Verdict.FIXED


@functools.lru_cache(maxsize=1 << 14)
def _out_of_reach(rule: StopRule, x_c: int) -> bool:
    """:meth:`StopRule.out_of_reach`, cached (the rule asks after every launch)."""
    cap = rule.design.max_launches
    if cap is None:
        return False
    if rule.design.finished and rule.design.stop_at_first_below:
        return not any(rule._fixed_at_first_stop(x) for x in range(
            x_c, _k_max_at(cap, rule.design) + 1))
    return not sequential_fixed(rule.baseline_events, rule.baseline_n, x_c, cap,
                                rule.settings, rule.design)


def _k_max_at(n: int, design: SprtDesign) -> int:
    """The most events in ``n`` launches whose bound is below the design's ceiling."""
    from .binomial import k_max_cached

    return k_max_cached(n, design.ceiling, design.alpha)[n]


def _clean_launches_needed(x_b: int, n_b: int, settings: VerdictSettings,
                           limit: int = 10_000_000) -> int | None:
    """Fewest clean candidate launches against ``x_b/n_b`` with which ``compare`` of a rule
    run can say ``fixed`` (bound, e-value and exact test; the SPRT aside): the e-value and
    Fisher's p improve with every clean launch, so a doubling then a bisection finds it."""
    alpha, ceiling = settings.alpha, settings.ceiling

    def cheap(n: int) -> bool:
        return (bound_below(0, n, ceiling, alpha)
                and e_reaches(x_b, n_b, 0, n, alpha=alpha, ceiling=ceiling)
                and significant(_fisher_p(x_b, n_b, 0, n), alpha))

    hi = 1
    while not cheap(hi):
        hi *= 2
        if hi > limit:
            return None
    full = VerdictSettings(settings.signature, alpha, ceiling)
    return first_true(lambda n: bound_below(0, n, ceiling, alpha) and e_reaches(
        x_b, n_b, 0, n, alpha=alpha, ceiling=ceiling) and decide(
        x_b, n_b, 0, n, full, with_needed=False).verdict is Verdict.FIXED, max(1, hi // 2), hi)


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
            "comparison": COMPARISON, "stopped": stopped, "why": why}


@dataclasses.dataclass(frozen=True)
class InterleavedRule:
    """Which build still needs launches when both run, alternating.

    The candidate needs launches until its SPRT leaves :attr:`SprtState.CONTINUE`: "not
    below the ceiling" ends the run; "below the ceiling" ends it with ``fixed`` once
    :func:`sequential_fixed` agrees, and until then the baseline goes on (the candidate too,
    when even twice the baseline's launches at its rate so far could not settle the
    comparison against the candidate as it stands). Before that, the baseline needs
    launches until it has shown the target and both Fisher's one-sided p <= alpha and the
    e-value >= 1/alpha against the candidate as it will stand at its earliest possible
    ``fixed`` stop: its events so far in :meth:`SprtDesign.first_fixed_launch` launches (or
    more, if it already has them). It resumes if a later candidate event undoes that.
    Which build runs never changes the error rates (the e-value holds for any allocation);
    it only changes how many launches the run takes.
    """

    design: SprtDesign
    settings: VerdictSettings

    def to_meta(self, baseline: str, stopped: bool | None, why: str) -> dict[str, Any]:
        """What ``campaign.json`` keeps under ``until_verdict`` for an interleaved run: the
        fields of :meth:`StopRule.to_meta` (without the baseline's counts, which change as
        it runs) and ``"interleaved": True``; :func:`resume_rule` reads it back."""
        return {**_rule_meta(self.design, self.settings, baseline, stopped, why),
                "interleaved": True}

    def _settles(self, x_b: int, n_b: int, x_c: int, n_c: int) -> bool:
        """The comparison's two tests pass for these counts (the bound and SPRT aside)."""
        alpha = self.settings.alpha
        return (x_b > 0 and significant(_fisher_p(x_b, n_b, x_c, n_c), alpha)
                and e_reaches(x_b, n_b, x_c, n_c, alpha=alpha, ceiling=self.settings.ceiling))

    def needs_counts(self, x_b: int, n_b: int, x_c: int, n_c: int) -> tuple[bool, bool, str]:
        """``(baseline needs more, candidate needs more, why)`` from target counts."""
        state = self.design.state(x_c, n_c)
        sig = self.settings.signature
        if state is SprtState.NOT_BELOW:
            return False, False, (f"the candidate's {sig} rate is not below the "
                                  f"{self.settings.ceiling:g} ceiling ({x_c}/{n_c})")
        if state is SprtState.BELOW_CEILING:
            if sequential_fixed(x_b, n_b, x_c, n_c, self.settings, self.design):
                return False, False, f"fixed: baseline {x_b}/{n_b}, candidate {x_c}/{n_c}"
            alone = x_b == 0 or self._settles(2 * x_b, 2 * n_b, x_c, n_c)
            return True, not alone, (f"the candidate ({x_c}/{n_c}) is below the ceiling; "
                                     f"the baseline ({x_b}/{n_b}) does not yet show it is "
                                     f"lower")
        n_at_stop = max(n_c, self.design.first_fixed_launch(x_c))
        baseline_ok = self._settles(x_b, n_b, x_c, n_at_stop)
        return not baseline_ok, True, f"baseline {x_b}/{n_b}, candidate {x_c}/{n_c}: {state}"


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


