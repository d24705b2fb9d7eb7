"""The verdict on counts: did the candidate stop showing the target?

Rules (issue #4, #13, #14; the statistics are in :mod:`kit.analysis.stats` and
:mod:`kit.analysis.anytime`, the derivations in docs/verdict.md):

* ``fixed`` only when the baseline reproduced the target (the positive control: not a
  scenario that injects crashes), the candidate's target rate is lower by a one-sided
  exact test (Boschloo's where it can be computed, else Fisher's; with several devices the
  stratified exact test) at ``alpha``, and the candidate's one-sided Clopper-Pearson upper
  bound at ``1 - alpha`` is below ``ceiling``. For campaigns made under a sequential rule
  (``--until-verdict``), also the rule's anytime-valid conditions: the e-value of
  :mod:`kit.analysis.anytime` at least ``1/alpha``, and the candidate's SPRT over its
  upper threshold (or the run at its ``--launches``);
* ``not-fixed`` when the candidate shows the target at a rate at least the baseline's, or
  at a rate shown above the ceiling (its one-sided lower bound is at or above it);
* ``inconclusive`` otherwise, with what was seen and what would settle it.

When both campaigns ran the same build, what changed is the scenario (or the launch
options): the verdict is ``removed`` / ``not-removed`` / ``inconclusive`` about that change
("mode=concurrent -> mode=serial removes xnnpack-allocator-uaf"), never ``fixed``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

from ..errors import UsageError
from .anytime import log_e_lower
from .plan import Plan, plan_launches
from .stats import (RateTest, fisher_p_vector, launches_to_see, lower_bound, lower_rate_test,
                    significant, upper_bound)
from .target import (DEFAULT_SIGNATURE, RACE_DETECTED, RACE_WITNESSED, check_signature, tier,
                     tier_text, none_eligible_text, HOLD_LEFT_OUT)

__all__ = ["MIN_FRACTION", "Verdict", "VerdictSettings", "Decision", "Needed", "decide", "p_text",
           "clean_launches_to_fixed", "HEAP_ADVICE", "BUILD", "SCENARIO", "NO_CHANGE",
           "setting_option"]

#: what a comparison is about: two builds, or one build under two scenarios (or options)
BUILD, SCENARIO, NO_CHANGE = "build", "scenario", "none"
#: What to do when the baseline never reproduces the target (docs/design.md).
#: the smallest rate, error rate or ceiling accepted: no launch count could show a smaller one
#: (plans need ~1/rate launches; 1e-9 already needs more than 10 million)
MIN_FRACTION = 1e-9

HEAP_ADVICE = ("make the baseline crash first: enable heap poisoning (MallocScribble=1 on "
               "Apple platforms; GWP-ASan always or malloc debug on Android; MALLOC_PERTURB_ "
               "with GLIBC_TUNABLES=glibc.malloc.tcache_count=0 on glibc), raise sessions, use "
               "more cores, and on the host load the models from bytes (load=bytes)")


class Verdict(str, enum.Enum):
    """The verdicts (docs/design.md). ``fixed``/``not-fixed`` compare two builds;
    ``removed``/``not-removed`` compare two scenarios of one build (a workaround)."""

    FIXED = "fixed"
    NOT_FIXED = "not-fixed"
    INCONCLUSIVE = "inconclusive"
    REMOVED = "removed"
    NOT_REMOVED = "not-removed"

    def __str__(self) -> str:
        return self.value

    @property
    def passed(self) -> bool:
        """``fixed`` or ``removed``: the change did what it was for."""
        return self in (Verdict.FIXED, Verdict.REMOVED)

    @property
    def failed(self) -> bool:
        """``not-fixed`` or ``not-removed``: shown not to."""
        return self in (Verdict.NOT_FIXED, Verdict.NOT_REMOVED)


def setting_option(key: str) -> str:
    """The command-line option of a verdict or rule setting: ``signature`` (the counted
    event, docs/design.md) is ``--event``; any other key ``--<key with dashes>``
    (``design_rate`` -> ``--design-rate``)."""
    return "--event" if key == "signature" else "--" + key.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class VerdictSettings:
    """The verdict's parameters.

    Attributes:
        signature: the counted event (:mod:`kit.analysis.target`; ``--event`` on the
            command line).
        alpha: level of the exact test; the candidate's bound is one-sided at ``1 - alpha``.
        ceiling: the rate the candidate must be shown to be below (0.05: "below 5% at 95%").
        power: used only to say how many launches are still needed.
    """

    signature: str = DEFAULT_SIGNATURE
    alpha: float = 0.05
    ceiling: float = 0.05
    power: float = 0.8

    def __post_init__(self) -> None:
        check_signature(self.signature)
        for name in ("alpha", "ceiling", "power"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and MIN_FRACTION <= value < 1.0):
                raise UsageError(f"{name} {value!r} is not in [{MIN_FRACTION:g}, 1)",
                                 "give a fraction, e.g. 0.05")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Needed:
    """Launches still needed for a verdict.

    Attributes:
        candidate_more: more candidate launches that give ``fixed`` with the baseline as it
            is, if they are all free of the target (``None``: not reachable that way).
        plan: a fresh fixed-size design at the observed baseline rate (``None`` without a
            positive control).
    """

    candidate_more: int | None
    plan: Plan | None

    def to_dict(self) -> dict[str, Any]:
        return {"candidate_more": self.candidate_more,
                "plan": self.plan.to_dict() if self.plan else None}


@dataclasses.dataclass(frozen=True)
class Decision:
    """The verdict on counts alone.

    Attributes:
        verdict, reason: the verdict and why, in plain words.
        advice: what to do next (``None`` when nothing is needed).
        test: the pooled exact test (``None`` when a campaign had no launches).
        p: the p-value the verdict used (the stratified one when given).
        candidate_upper: the candidate's one-sided upper bound at ``1 - alpha``.
        needed: launches still needed (inconclusive verdicts).
        tier: ``mechanism`` or ``failure`` (:func:`kit.analysis.target.tier`).
        kind: ``build`` (two builds), ``scenario`` (one build, two scenarios or option
            sets) or ``none`` (nothing differs).
        change: for ``scenario``, what changed (``"mode=concurrent -> mode=serial"``).
        e_value: the anytime-valid e-value, for campaigns made under a sequential rule.
    """

    verdict: Verdict
    reason: str
    advice: str | None
    test: RateTest | None
    p: float | None
    candidate_upper: float
    needed: Needed | None
    tier: str = "failure"
    kind: str = BUILD
    change: str | None = None
    e_value: float | None = None

    @property
    def scope(self) -> str:
        """What this verdict's tier can and cannot see, in plain words
        (:data:`kit.analysis.target.TIER_SCOPE`)."""
        from .target import TIER_SCOPE

        return TIER_SCOPE.get(self.tier, "")

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "reason": self.reason, "advice": self.advice,
                "tier": self.tier, "scope": self.scope, "kind": self.kind,
                "change": self.change,
                "test": self.test.to_dict() if self.test else None, "p": self.p,
                "p_text": None if self.p is None else p_text(self.p),
                "e_value": self.e_value, "candidate_upper": self.candidate_upper,
                "needed": self.needed.to_dict() if self.needed else None}


def _pct(x: float) -> str:
    """0.0295 -> '2.95%', 0.6 -> '60%'."""
    return f"{x * 100:.3g}%"


#: below this a p-value is printed as a bound: doubles lose it (0 or a denormal)
P_FLOOR = 1e-300


def p_text(p: float, alpha: float | None = None) -> str:
    """A p-value to two significant digits, or four where two would read as ``alpha``
    itself (0.04974 is "0.04974" at alpha 0.05, not "0.05"); below 1e-300 (where a double
    has lost it, and prints as 0) ``"< 1e-300"``."""
    if p < P_FLOOR:
        return "< 1e-300"
    short = f"{p:.2g}"
    if alpha is not None and p != alpha and short == f"{alpha:.2g}":
        return f"{p:.4g}"
    return short


def e_text(e: float, threshold: float) -> str:
    """An e-value to three significant digits, or more where three would read as the
    threshold (19.96 is "19.96" against 20, not "20")."""
    for digits in (3, 4, 6):
        text = f"{e:.{digits}g}"
        if e == threshold or float(text) != threshold:
            return text
    return repr(e)


def clean_launches_to_fixed(x_b: int, n_b: int, x_c: int, n_c: int, *, alpha: float,
                            ceiling: float, limit: int = 10_000_000) -> int | None:
    """More candidate launches, all free of the target, after which Fisher's one-sided
    p <= ``alpha`` and the candidate's bound is below ``ceiling`` (the baseline unchanged).
    Fisher's p falls as clean launches are added, so a bisection finds the first one.
    ``None`` when more than ``limit`` would be needed or the baseline has no event."""
    if x_b == 0:
        return None

    def ok(m: int) -> bool:
        p = float(fisher_p_vector(x_b, n_b, x_c, n_c + m))
        return significant(p, alpha) and upper_bound(x_c, n_c + m, 1 - alpha) < ceiling

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > limit:
            return None
    lo = 0 if ok(0) else hi // 2
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _words(sig: str, change: str | None) -> dict[str, str]:
    """How the reasons name the target and the change."""
    mechanism = sig in (RACE_WITNESSED, RACE_DETECTED)
    return {"shows": "shows" if mechanism else "crashes with",  # a race is shown, not crashed
            "sig": f"{sig} ({tier_text(sig)})",
            "cand": "the candidate" if change is None else "the candidate's scenario"}


def _no_control(x_b: int, n_b: int, x_c: int, n_c: int, sig: str, confidence: float,
                injected: str | None) -> tuple[str, str]:
    base, cand = f"{x_b}/{n_b}", f"{x_c}/{n_c}"
    if injected is not None:
        return (f"the baseline's scenario injects crashes ({injected}), so its crashes are "
                f"the kit's own and no reproduction of {sig}: there is no positive control "
                f"({base} vs {cand})",
                "run the baseline with inject=none (a positive control must reproduce the "
                "defect itself); keep injected crashes for checking the kit")
    ub_b = upper_bound(0, n_b, confidence)
    if ub_b >= 0.1:
        more = (f"{HEAP_ADVICE}; the baseline has run too few launches to rule out a rarer "
                f"crash (its rate is only known to be below {_pct(ub_b)}): at a 5% rate, "
                f"{launches_to_see(0.05, confidence)} launches see it with {confidence:.0%} "
                f"probability")
    else:
        more = (f"{HEAP_ADVICE}; more launches of this setup are unlikely to help: the "
                f"baseline's rate is below {_pct(ub_b)} at {confidence:.0%}, and even at "
                f"that rate seeing one crash with {confidence:.0%} probability takes "
                f"{launches_to_see(ub_b, confidence)} launches")
    return (f"the baseline never reproduced {sig} ({base} launches), so there is no positive "
            f"control and a clean candidate ({cand}) proves nothing", more)


def decide(x_b: int, n_b: int, x_c: int, n_c: int, settings: VerdictSettings = VerdictSettings(),
           *, stratified_p: float | None = None, use_boschloo: bool = True,
           with_needed: bool = True, anytime: bool = False, sequential: Any = None,
           injected: str | None = None, change: str | None = None,
           kind: str = BUILD, unengaged: tuple[int, int] = (0, 0)) -> Decision:
    """The verdict for ``x_b/n_b`` baseline and ``x_c/n_c`` candidate target events.

    Known values (issue #4): 12/20 vs 0/100 is ``fixed`` (Fisher p 1.2e-11, Boschloo 4.2e-12,
    upper bound 2.95% < 5%); 1/150 vs 0/150 is ``inconclusive`` (Fisher p 0.5); 0/300 vs
    0/300 is ``inconclusive`` for want of a positive control; 1/150 vs 1/1000 is
    ``inconclusive`` (a lower rate, bounded below 0.47%, but not shown lower than a baseline
    of one event).

    Args:
        stratified_p: with several devices, the stratified exact p (used instead of the
            pooled test's).
        use_boschloo: compute Boschloo's test (off in tight loops: Fisher's p is an upper
            bound of it, so a ``fixed`` found with Fisher holds with Boschloo).
        with_needed: compute the launches still needed (off in tight loops).
        anytime: a campaign was made under a sequential rule: ``fixed`` also needs the
            anytime-valid e-value (:mod:`kit.analysis.anytime`) at ``1/alpha``.
        sequential: the candidate's rule (a :class:`kit.analysis.sprt.SprtDesign` with
            these settings): ``fixed`` also needs its state "below the ceiling", or the run
            at its ``max_launches`` (where the rule's error rates were computed), and for a
            design with a finished baseline Fisher's p at its ``comparison_alpha``.
        injected: the baseline's scenario injects crashes (e.g. ``"segv@sessions-created"``):
            it is no positive control.
        change: with ``kind="scenario"``, what changed between the campaigns of one build;
            with ``kind="build"``, what differs between the two builds when the kit can
            tell (``"patch none -> fix"``, :func:`kit.analysis.compare.build_change`).
        kind: ``build``, ``scenario`` or ``none`` (nothing differs: always inconclusive).
        unengaged: the baseline's and the candidate's launches that asked for a hold that
            never engaged (left out of a failure-tier rate): a campaign with none eligible
            is then said to be one whose hold never engaged.

    Raises:
        UsageError: invalid counts.
    """
    alpha, ceiling, sig = settings.alpha, settings.ceiling, settings.signature
    confidence = 1.0 - alpha
    cand_upper = upper_bound(x_c, n_c, confidence)
    scen = kind == SCENARIO
    w = _words(sig, change if scen else None)
    if kind == BUILD and change:
        w["cand"] = f"the candidate ({change})"
    passed, failed = (Verdict.REMOVED, Verdict.NOT_REMOVED) if scen else (Verdict.FIXED,
                                                                          Verdict.NOT_FIXED)
    made: dict[str, Any] = dict(tier=tier(sig), kind=kind, change=change)

    def out(verdict: Verdict, reason: str, advice: str | None, test: RateTest | None = None,
            p: float | None = None, needed: Needed | None = None,
            e_value: float | None = None) -> Decision:
        return Decision(verdict, reason, advice, test, p, cand_upper, needed, e_value=e_value,
                        **made)

    if n_b == 0 or n_c == 0:
        which = "baseline" if n_b == 0 else "candidate"
        unheld = unengaged[0] if n_b == 0 else unengaged[1]
        if unheld:
            return out(Verdict.INCONCLUSIVE,
                       f"the {which} campaign has no launch whose hold engaged: its {unheld} "
                       f"launches {HOLD_LEFT_OUT}",
                       f"run the {which} campaign with the XNNPACK EP (ep=xnnpack,...) on an "
                       f"onnxruntime that logs that line at log=verbose, or without hold= "
                       f"(docs/race.md, \"The hold\")")
        what, advice = none_eligible_text(sig, which)
        return out(Verdict.INCONCLUSIVE, f"the {which} campaign has no {what}", advice)
    if kind == NO_CHANGE:
        return out(Verdict.INCONCLUSIVE,
                   f"both campaigns ran the same build with the same scenario and launch "
                   f"options ({x_b}/{n_b} vs {x_c}/{n_c} {w['sig']}): there is no change "
                   f"to judge", "compare a candidate build, or the same build under another "
                                "scenario (e.g. mode=serial)")
    test = lower_rate_test(x_b, n_b, x_c, n_c, use_boschloo=use_boschloo)
    p = test.p if stratified_p is None else stratified_p
    how = ("stratified exact test over devices" if stratified_p is not None else
           "Boschloo's exact test" if test.method == "boschloo" else "Fisher's exact test")
    ptext = f"one-sided p = {p_text(p, alpha)}, {how}"
    if stratified_p is None and test.method == "boschloo":
        ptext += f"; Fisher's p = {p_text(test.fisher_p, alpha)}"
    lower = significant(p, alpha)
    level = getattr(sequential, "comparison_alpha", None)
    if level is not None:  # a rule run against a finished baseline: the rule's exact test
        ptext += (f"; the sequential rule's exact level for Fisher's p: {p_text(level)}, "
                  f"size <= {_margin() * alpha:g}")
        fisher_ok = significant(test.fisher_p, level)
        lower = fisher_ok if stratified_p is None else lower and fisher_ok
    base, cand = f"{x_b}/{n_b}", f"{x_c}/{n_c}"
    bound = f"below {_pct(cand_upper)} at {confidence:.0%}"
    cand_lower = lower_bound(x_c, n_c, confidence) if x_c else 0.0
    if x_c > 0 and not lower and (x_c * n_b >= x_b * n_c or cand_lower >= ceiling):
        control = "" if x_b else f"; the baseline never showed it ({base})"
        above = (f", at least {_pct(cand_lower)} at {confidence:.0%}, over the "
                 f"{_pct(ceiling)} ceiling" if cand_lower >= ceiling else "")
        if scen:
            advice = f"the change {change} does not remove {sig}"
        elif sig in (RACE_WITNESSED, RACE_DETECTED):
            advice = ("the candidate does not remove the race: check that it contains the fix "
                      "(build provenance)" + (f"; the build change ({change}) leaves it"
                                             if change else ""))
        else:
            advice = ("the candidate does not remove the crash: check that it contains the "
                      "fix (build provenance) and look at its crash stacks")
        return out(failed,
                   f"{w['cand']} still {w['shows']} {w['sig']} in {cand} launches, a rate "
                   f"not shown lower than the baseline's {base}{above} ({ptext}){control}",
                   advice, test, p)
    if x_c > 0 and cand_lower >= ceiling:
        return out(failed,
                   f"{w['cand']} {w['shows']} {w['sig']} less often than the baseline "
                   f"({cand} vs {base}, {ptext}) but still above the {_pct(ceiling)} "
                   f"ceiling (at least {_pct(cand_lower)} at {confidence:.0%}): it is "
                   f"reduced, not removed", "look at the candidate's remaining crash stacks",
                   test, p)
    if x_b == 0 or injected is not None:
        reason, more = _no_control(x_b, n_b, x_c, n_c, w["sig"], confidence, injected)
        return out(Verdict.INCONCLUSIVE, reason, more, test, p)
    below = cand_upper < ceiling
    if lower and below:
        blocked = _sequential_block(x_b, n_b, x_c, n_c, settings, anytime, sequential)
        e_value = blocked[1]
        if blocked[0] is None:
            how_seen = (f"{w['cand']} shows it in {cand}, lower ({ptext}), and its rate is "
                        f"{bound}, under the {_pct(ceiling)} ceiling")
            what = (f"the baseline reproduced {w['sig']} in {base} launches (positive "
                    f"control); {how_seen}")
            if scen:
                what = f"the change {change} removes {sig}: " + what
            elif change:
                what = f"the build change ({change}) fixes {sig}: " + what
            if anytime:
                assert e_value is not None  # computed for an anytime-valid comparison
                what += (f"; anytime-valid e-value {e_text(e_value, 1 / alpha)} >= "
                         f"{1 / alpha:g}")
            elif getattr(sequential, "comparison_alpha", None) is not None:
                what += (f"; Fisher's p within the sequential rule's exact level "
                         f"{sequential.comparison_alpha:.4g}")
            return out(passed, what, None, test, p, e_value=e_value)
        return out(Verdict.INCONCLUSIVE, blocked[0], blocked[2], test, p, e_value=e_value)
    needed, more_text = _needed(x_b, n_b, x_c, n_c, settings, with_needed)
    if not lower:
        reason = (f"{w['cand']} showed {w['sig']} in {cand} launches against the baseline's "
                  f"{base}: not yet shown lower ({ptext} > {alpha})")
        if x_c > 0:
            reason += (f", though its rate is {bound}" + (f", under the {_pct(ceiling)} "
                                                          f"ceiling" if below else ""))
        elif not below:
            reason += f", and its rate is only {bound}"
        reason = "too few launches: " + reason
    else:
        reason = (f"{w['cand']}'s {w['sig']} rate ({cand}) is lower than the baseline's "
                  f"({base}, {ptext}), but it is only {bound}, not under the "
                  f"{_pct(ceiling)} ceiling")
    return out(Verdict.INCONCLUSIVE, reason, more_text or "run more launches", test, p, needed)


def _sequential_block(x_b: int, n_b: int, x_c: int, n_c: int, settings: VerdictSettings,
                      anytime: bool, sequential: Any) -> tuple[str | None, float | None,
                                                               str | None]:
    """``(why fixed is withheld, e-value, advice)`` for a campaign made under a sequential
    rule; ``(None, e, None)`` when the rule's conditions hold too."""
    if not anytime and sequential is None:
        return None, None, None
    alpha = settings.alpha
    log_e = log_e_lower(x_b, n_b, x_c, n_c, settings.ceiling)
    exact = getattr(sequential, "comparison_alpha", None) is not None
    e_value = None if exact and not anytime else math.exp(min(log_e, 700.0))
    if anytime and log_e < -math.log(alpha) - 1e-12:
        assert e_value is not None  # computed for an anytime-valid comparison
        return (f"the fixed-size tests pass ({x_b}/{n_b} vs {x_c}/{n_c}), but these launches "
                f"were made under a sequential rule, whose comparison must hold at any "
                f"launch: its anytime-valid e-value is {e_text(e_value, 1 / alpha)}, under "
                f"{1 / alpha:g}",
                e_value, "go on with the run (`coldstart run ... --resume`): the e-value grows "
                         "with more clean candidate launches and more baseline events")
    if sequential is not None:
        from .sprt import SprtState

        cap = sequential.max_launches
        if sequential.state(x_c, n_c) is not SprtState.BELOW_CEILING and (
                cap is None or n_c < cap):
            return (f"the candidate ran under a sequential rule that has not yet shown its "
                    f"rate below the {settings.ceiling:g} ceiling ({x_c}/{n_c}: its "
                    f"likelihood ratio is under the rule's threshold "
                    f"{math.exp(sequential.upper):.3g}, and the run is short of its "
                    f"{cap} launches)", e_value,
                    "finish the run (`coldstart run ... --resume`)")
        level = getattr(sequential, "comparison_alpha", None)
        if level is not None:
            fisher = float(fisher_p_vector(x_b, n_b, x_c, n_c))
            if not significant(fisher, level):
                return (f"the fixed-size tests pass ({x_b}/{n_b} vs {x_c}/{n_c}), but these "
                        f"launches were made under a sequential rule, whose stop needs "
                        f"Fisher's one-sided p at most its exact level {level:.4g} (for its "
                        f"{sequential.baseline_launches}-launch baseline): it is "
                        f"{p_text(fisher)}", None,
                        "make a new baseline of more launches (its size fixed before it "
                        "runs) and a new candidate campaign, or run a fixed-size pair "
                        "(`coldstart plan`)")
            return None, None, None
    return None, e_value, None


def _needed(x_b: int, n_b: int, x_c: int, n_c: int, settings: VerdictSettings,
            with_needed: bool) -> tuple[Needed | None, str]:
    """What would settle an inconclusive verdict, and its words."""
    if not with_needed:
        return None, ""
    sig = settings.signature
    more = clean_launches_to_fixed(x_b, n_b, x_c, n_c, alpha=settings.alpha,
                                   ceiling=settings.ceiling)
    p_b = x_b / n_b
    plan = None
    if p_b > 0 and x_c / n_c < min(p_b, settings.ceiling) and p_b < 1.0:
        try:
            plan = plan_launches(p_b, ceiling=settings.ceiling, alpha=settings.alpha,
                                 power=settings.power)
        except UsageError:
            plan = None
    parts = []
    if more is not None:
        parts.append(f"{more} more candidate launches free of {sig} would settle it with the "
                     f"baseline as it is")
    if plan is not None:
        parts.append(f"a new pair at the baseline's observed rate ({_pct(p_b)}) needs about "
                     f"{plan.baseline_launches} baseline and {plan.candidate_launches} "
                     f"candidate launches for {settings.power:.0%} power")
    return Needed(more, plan), "; ".join(parts)


def _margin() -> float:
    from .sprt import ALPHA_MARGIN

    return ALPHA_MARGIN
