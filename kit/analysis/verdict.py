"""The verdict: did the candidate build stop crashing with the target signature?

Rules (issue #4; the statistics are in :mod:`kit.analysis.stats`, the derivations in docs/verdict.md):

* ``fixed`` only when the baseline reproduced the target (the positive control), the
  candidate's target rate is lower by a one-sided exact test (Boschloo's where it can be
  computed, else Fisher's; with several devices the stratified exact test) at ``alpha``,
  and the candidate's one-sided upper bound at ``1 - alpha`` is below ``ceiling``;
* ``not-fixed`` when the candidate still shows the target at a rate not shown lower, or at a
  rate shown above the ceiling (its one-sided lower bound is at or above it);
* ``inconclusive`` otherwise, with the reason in words and the launches still needed.

A target is a crash class (``xnnpack-allocator-uaf``, ``other-native-crash``, ``abort``...,
the ``crash_class`` of a record), ``race-witnessed`` (the host race witness of issue #8 saw two
allocator contexts; launches without a witness are left out of that rate), or ``any-crash``
(outcome ``crashed``).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any, Iterable, Sequence

from ..campaign import Campaign
from ..errors import UsageError
from ..records import LaunchRecord, Outcome
from ..scenario import PHASES
from .plan import Plan, plan_launches
from .stats import (Rate, RateTest, StratumTable, fisher_p_vector, holm, launches_to_see,
                    lower_bound, lower_rate_test, rate, significant, stratified_exact_p,
                    upper_bound)
from .summary import unfinished_note

__all__ = ["Verdict", "VerdictSettings", "Decision", "Needed", "ArmResult", "DeviceResult",
           "MovedCrash", "Comparison", "decide", "compare_campaigns", "is_target",
           "is_eligible", "count_target", "check_signature", "DEFAULT_SIGNATURE",
           "RACE_WITNESSED", "ANY_CRASH", "HEAP_ADVICE", "option_differences", "p_text"]

DEFAULT_SIGNATURE = "xnnpack-allocator-uaf"
#: ``campaign.json`` build fields that name the bytes of a build: the host's onnxruntime
#: library, an Android APK
_BUILD_IDENTITY = ("ort_library_sha256", "apk_sha256")
RACE_WITNESSED = "race-witnessed"
ANY_CRASH = "any-crash"
_SIGNATURE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
#: Outcomes other than crashes that can "move" into a candidate (e.g. a fix that deadlocks).
_MOVED_OUTCOMES = (Outcome.HUNG, Outcome.APP_ERROR, Outcome.WRONG_OUTPUT)
#: What to do when the baseline never reproduces the target (BACKGROUND.md).
HEAP_ADVICE = ("make the baseline crash first: enable heap poisoning (MallocScribble=1 on "
               "Apple platforms; GWP-ASan always or malloc debug on Android; MALLOC_PERTURB_ "
               "with GLIBC_TUNABLES=glibc.malloc.tcache_count=0 on glibc), raise sessions, use "
               "more cores, and on the host load the models from bytes (load=bytes)")


def check_signature(text: str) -> str:
    """Validate a target: a crash class (:data:`kit.crash.rules.CRASH_CLASSES`, the closed set
    every rule file maps to), ``race-witnessed`` or ``any-crash``.

    Raises:
        UsageError: the name is not a crash-class-like token.
    """
    from ..crash.rules import CRASH_CLASSES

    known = (*CRASH_CLASSES, RACE_WITNESSED, ANY_CRASH)
    if not _SIGNATURE_RE.match(text or "") or text not in known:
        raise UsageError(f"signature {text!r} is not a crash class name",
                         f"use one of {', '.join(known)}")
    return text


def is_eligible(record: LaunchRecord, signature: str) -> bool:
    """Whether ``record`` enters the target rate's denominator: counted (not an infra
    error) and, for ``race-witnessed``, carrying an available race witness; for a crash
    class, showing it or having reached session creation (``models-ready`` or a later
    phase). A launch that ended before creating sessions — a build that aborts at start
    every time — cannot show a crash of creation, inference or release, so it is left
    out: counted as a clean launch it would make a broken build look fixed."""
    if not record.counted:
        return False
    if signature == RACE_WITNESSED:
        return isinstance(record.race, dict) and record.race.get("available", True) is not False
    if signature == ANY_CRASH or is_target(record, signature):
        return True
    return record.last_phase in PHASES[1:]


def is_target(record: LaunchRecord, signature: str) -> bool:
    """Whether ``record`` shows the target ``signature`` (see the module doc)."""
    if signature == RACE_WITNESSED:
        return isinstance(record.race, dict) and record.race.get("witnessed") is True
    if signature == ANY_CRASH:
        return record.outcome is Outcome.CRASHED
    return record.crash_class == signature


def count_target(records: Iterable[LaunchRecord], signature: str) -> tuple[int, int]:
    """``(events, eligible launches)`` of the target among ``records``."""
    events = eligible = 0
    for record in records:
        if is_eligible(record, signature):
            eligible += 1
            events += is_target(record, signature)
    return events, eligible


class Verdict(str, enum.Enum):
    """The three verdicts (DESIGN.md)."""

    FIXED = "fixed"
    NOT_FIXED = "not-fixed"
    INCONCLUSIVE = "inconclusive"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class VerdictSettings:
    """The verdict's parameters.

    Attributes:
        signature: the target (see the module doc).
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
            if not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
                raise UsageError(f"{name} {value!r} is not in (0, 1)",
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
    """

    verdict: Verdict
    reason: str
    advice: str | None
    test: RateTest | None
    p: float | None
    candidate_upper: float
    needed: Needed | None

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "reason": self.reason, "advice": self.advice,
                "test": self.test.to_dict() if self.test else None, "p": self.p,
                "candidate_upper": self.candidate_upper,
                "needed": self.needed.to_dict() if self.needed else None}


def _pct(x: float) -> str:
    """0.0295 -> '2.95%', 0.6 -> '60%'."""
    text = f"{x * 100:.3g}%"
    return text


def p_text(p: float, alpha: float | None = None) -> str:
    """A p-value to two significant digits, or four where two would read as ``alpha``
    itself (0.04974 is "0.04974" at alpha 0.05, not "0.05")."""
    short = f"{p:.2g}"
    if alpha is not None and p != alpha and short == f"{alpha:.2g}":
        return f"{p:.4g}"
    return short



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


def decide(x_b: int, n_b: int, x_c: int, n_c: int, settings: VerdictSettings = VerdictSettings(),
           *, stratified_p: float | None = None, use_boschloo: bool = True,
           with_needed: bool = True) -> Decision:
    """The verdict for ``x_b/n_b`` baseline and ``x_c/n_c`` candidate target events.

    Known values (issue #4): 12/20 vs 0/100 is ``fixed`` (Fisher p 1.2e-11, upper bound
    2.95% < 5%); 1/150 vs 0/150 is ``inconclusive`` (Fisher p 0.5); 0/300 vs 0/300 is
    ``inconclusive`` for want of a positive control.

    Args:
        stratified_p: with several devices, the stratified exact p (used instead of the
            pooled test's).
        use_boschloo: compute Boschloo's test (off in tight loops: Fisher's p is an upper
            bound of it, so a ``fixed`` found with Fisher holds with Boschloo).
        with_needed: compute the launches still needed (off in tight loops).

    Raises:
        UsageError: invalid counts.
    """
    alpha, ceiling, sig = settings.alpha, settings.ceiling, settings.signature
    confidence = 1.0 - alpha
    cand_upper = upper_bound(x_c, n_c, confidence)
    if n_b == 0 or n_c == 0:
        which = "baseline" if n_b == 0 else "candidate"
        what, advice = (("launches with a race witness", f"run the {which} campaign with the "
                         f"race witness on (the host's default; a runtime with static XNNPACK "
                         f"has none: compare crash classes there)") if sig == RACE_WITNESSED
                        else ("counted launches that reached session creation", f"run the {which} "
                              f"campaign, and look at why its launches end before creating "
                              f"sessions"))
        return Decision(Verdict.INCONCLUSIVE, f"the {which} campaign has no {what}",
                        advice, None, None, cand_upper, None)
    test = lower_rate_test(x_b, n_b, x_c, n_c, use_boschloo=use_boschloo)
    p = test.p if stratified_p is None else stratified_p
    how = ("stratified exact test over devices" if stratified_p is not None else
           "Boschloo's exact test" if test.method == "boschloo" else "Fisher's exact test")
    ptext = f"one-sided p = {p_text(p, alpha)}, {how}"
    if stratified_p is None and test.method == "boschloo":
        ptext += f"; Fisher's p = {p_text(test.fisher_p, alpha)}"
    lower = significant(p, alpha)
    base = f"{x_b}/{n_b}"
    cand = f"{x_c}/{n_c}"
    bound = f"below {_pct(cand_upper)} at {confidence:.0%}"
    # a witnessed race is not a crash: the candidate "shows" it
    shows = "shows" if sig == RACE_WITNESSED else "crashes with"
    if x_c > 0 and not lower:
        control = ("" if x_b else f"; the baseline never showed it ({base})")
        return Decision(Verdict.NOT_FIXED,
                        f"the candidate still {shows} {sig} in {cand} launches, a rate "
                        f"not shown lower than the baseline's {base} ({ptext}){control}",
                        "the candidate does not remove the race: check that it contains the "
                        "fix (build provenance)" if sig == RACE_WITNESSED else
                        "the candidate does not remove the crash: check that it contains the "
                        "fix (build provenance) and look at its crash stacks",
                        test, p, cand_upper, None)
    if x_c > 0 and lower_bound(x_c, n_c, confidence) >= ceiling:
        return Decision(Verdict.NOT_FIXED,
                        f"the candidate {shows} {sig} less often than the baseline "
                        f"({cand} vs {base}, {ptext}) but still above the {_pct(ceiling)} "
                        f"ceiling (at least {_pct(lower_bound(x_c, n_c, confidence))} at "
                        f"{confidence:.0%}): the crash is reduced, not removed",
                        "look at the candidate's remaining crash stacks", test, p, cand_upper,
                        None)
    if x_b == 0:
        ub_b = upper_bound(0, n_b, confidence)
        if ub_b >= 0.1:
            more = (f"{HEAP_ADVICE}; the baseline has run too few launches to rule out a "
                    f"rarer crash (its rate is only known to be below {_pct(ub_b)}): at a 5% "
                    f"rate, {launches_to_see(0.05, confidence)} launches see it with "
                    f"{confidence:.0%} probability")
        else:
            more = (f"{HEAP_ADVICE}; more launches of this setup are unlikely to help: the "
                    f"baseline's rate is below {_pct(ub_b)} at {confidence:.0%}, and even at "
                    f"that rate seeing one crash with {confidence:.0%} probability takes "
                    f"{launches_to_see(ub_b, confidence)} launches")
        return Decision(Verdict.INCONCLUSIVE,
                        f"the baseline never reproduced {sig} ({base} launches), so there is "
                        f"no positive control and a clean candidate ({cand}) proves nothing",
                        more, test, p, cand_upper, None)
    below = cand_upper < ceiling
    if lower and below:
        return Decision(Verdict.FIXED,
                        f"the baseline reproduced {sig} in {base} launches (positive control); "
                        f"the candidate shows it in {cand}, lower ({ptext}), and its rate is "
                        f"{bound}, under the {_pct(ceiling)} ceiling", None, test, p,
                        cand_upper, None)
    needed = None
    more_text = ""
    if with_needed:
        more = clean_launches_to_fixed(x_b, n_b, x_c, n_c, alpha=alpha, ceiling=ceiling)
        p_b = x_b / n_b
        plan = None
        if p_b > 0 and x_c / n_c < min(p_b, ceiling) and p_b < 1.0:
            try:
                plan = plan_launches(p_b, ceiling=ceiling, alpha=alpha, power=settings.power)
            except UsageError:
                plan = None
        needed = Needed(more, plan)
        parts = []
        if more is not None:
            parts.append(f"{more} more candidate launches free of {sig} would settle it with "
                         f"the baseline as it is")
        if plan is not None:
            parts.append(f"a new pair at the baseline's observed rate ({_pct(p_b)}) needs "
                         f"about {plan.baseline_launches} baseline and "
                         f"{plan.candidate_launches} candidate launches for "
                         f"{settings.power:.0%} power")
        more_text = "; ".join(parts)
    if not lower:
        reason = (f"too few launches: the candidate shows {sig} in {cand} launches against "
                  f"the baseline's {base}, not yet shown lower ({ptext} > {alpha})")
    else:
        reason = (f"the candidate's {sig} rate ({cand}) is lower than the baseline's ({base}, "
                  f"{ptext}), but it is only {bound}, not under the {_pct(ceiling)} ceiling")
    return Decision(Verdict.INCONCLUSIVE, reason, more_text or "run more launches", test, p,
                    cand_upper, needed)


@dataclasses.dataclass(frozen=True)
class ArmResult:
    """One side of a comparison.

    Attributes:
        label, path, target, scenario, scenario_description: from ``campaign.json``.
        devices: devices that made counted launches.
        counted: counted launches; infra_errors: infra-error records (not counted).
        eligible: launches in the target rate's denominator; events: target events.
        rate: two-sided interval of ``events/eligible``; upper: one-sided bound.
    """

    label: str
    path: str
    target: str
    scenario: str
    scenario_description: str
    devices: tuple[str, ...]
    counted: int
    infra_errors: int
    eligible: int
    events: int
    rate: Rate
    upper: float

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["rate"] = self.rate.to_dict()
        data["devices"] = list(self.devices)
        return data


@dataclasses.dataclass(frozen=True)
class DeviceResult:
    """One device's target rates in both builds and its own one-sided Fisher p."""

    device: str
    baseline: Rate
    candidate: Rate
    fisher_p: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "baseline": self.baseline.to_dict(),
                "candidate": self.candidate.to_dict(), "fisher_p": self.fisher_p}


@dataclasses.dataclass(frozen=True)
class MovedCrash:
    """A crash class (or non-crash outcome) whose rate rose in the candidate.

    ``p`` is Fisher's one-sided p for "candidate higher", ``p_holm`` its Holm adjustment over
    every class compared; ``significant`` when ``p_holm <= alpha``.
    """

    key: str
    baseline: Rate
    candidate: Rate
    p: float
    p_holm: float
    significant: bool

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "baseline": self.baseline.to_dict(),
                "candidate": self.candidate.to_dict(), "p": self.p, "p_holm": self.p_holm,
                "significant": self.significant}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """A baseline-vs-candidate comparison (what ``coldstart compare`` prints and writes).

    Attributes:
        decision: the verdict, its reason and advice (:class:`Decision`).
        settings: signature, alpha, ceiling, power.
        baseline, candidate: the two sides.
        devices: per-device rates (empty with one device overall).
        stratified_p: the stratified exact p, when several devices ran.
        moved: classes whose rate rose in the candidate.
        notes: scenario differences and other caveats, in words.
    """

    decision: Decision
    settings: VerdictSettings
    baseline: ArmResult
    candidate: ArmResult
    devices: tuple[DeviceResult, ...]
    stratified_p: float | None
    moved: tuple[MovedCrash, ...]
    notes: tuple[str, ...]

    @property
    def verdict(self) -> Verdict:
        return self.decision.verdict

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "decision": self.decision.to_dict(),
                "settings": self.settings.to_dict(), "baseline": self.baseline.to_dict(),
                "candidate": self.candidate.to_dict(),
                "devices": [d.to_dict() for d in self.devices],
                "stratified_p": self.stratified_p, "moved": [m.to_dict() for m in self.moved],
                "notes": list(self.notes)}


def _arm(campaign: Campaign, signature: str, confidence: float) -> ArmResult:
    counted = campaign.counted
    events, eligible = count_target(counted, signature)
    meta = campaign.meta
    return ArmResult(
        label=campaign.label, path=str(campaign.path), target=meta.target,
        scenario=meta.scenario, scenario_description=meta.scenario_description,
        devices=tuple(sorted({r.device for r in counted})), counted=len(counted),
        infra_errors=len(campaign.infra_errors), eligible=eligible, events=events,
        rate=rate(events, eligible), upper=upper_bound(events, eligible, confidence))


def _moved(base: Sequence[LaunchRecord], cand: Sequence[LaunchRecord], signature: str,
           alpha: float) -> tuple[MovedCrash, ...]:
    keys = sorted({r.crash_class for r in [*base, *cand] if r.crash_class} - {signature})
    keys += [o.value for o in _MOVED_OUTCOMES]

    def count(records: Sequence[LaunchRecord], key: str) -> int:
        return sum(1 for r in records if r.crash_class == key or r.outcome.value == key)

    rows = []
    for key in keys:
        x_b, x_c = count(base, key), count(cand, key)
        if x_b + x_c == 0:
            continue
        p = lower_rate_test(x_c, len(cand), x_b, len(base), use_boschloo=False).fisher_p
        rows.append((key, x_b, x_c, p))
    adjusted = holm([r[3] for r in rows])
    out = []
    for (key, x_b, x_c, p), p_holm in zip(rows, adjusted):
        if base and cand and x_c / len(cand) > x_b / len(base):
            out.append(MovedCrash(key, rate(x_b, len(base)), rate(x_c, len(cand)), p, p_holm,
                                  significant(p_holm, alpha)))
    return tuple(out)


#: ``campaign.json`` options that change what a launch does, and so confound a comparison
_LAUNCH_OPTIONS = ("poison", "env", "witness", "delivery", "model_set")


def option_differences(baseline: Any, candidate: Any) -> list[str]:
    """``["poison: baseline None, candidate 'glibc'", ...]`` for the launch-shaping options
    (:data:`_LAUNCH_OPTIONS`) that two campaigns' ``options`` (from ``campaign.json``) set
    differently; options only one campaign records are left out (older campaigns)."""
    if not isinstance(baseline, dict) or not isinstance(candidate, dict):
        return []
    return [f"{key}: baseline {baseline[key]!r}, candidate {candidate[key]!r}"
            for key in _LAUNCH_OPTIONS
            if key in baseline and key in candidate and baseline[key] != candidate[key]]


def compare_campaigns(baseline: Campaign, candidate: Campaign,
                      settings: VerdictSettings = VerdictSettings()) -> Comparison:
    """Compare two loaded campaigns and state the verdict.

    With more than one device across both campaigns the decision uses the stratified exact
    test over devices (:func:`kit.analysis.stats.stratified_exact_p`), so a device that ran only one
    build, or one device's rate, cannot carry it.

    Raises:
        UsageError: the campaigns are the same directory, or ran on different targets.
    """
    if baseline.path.resolve() == candidate.path.resolve():
        raise UsageError(f"baseline and candidate are the same campaign ({baseline.path})",
                         "give two different campaign directories")
    t_b, t_c = baseline.meta.target, candidate.meta.target
    if t_b != t_c:
        raise UsageError(f"the baseline ran on target {t_b!r} and the candidate on {t_c!r}",
                         "compare campaigns made on the same target")
    sig = settings.signature
    confidence = 1.0 - settings.alpha
    b_arm, c_arm = _arm(baseline, sig, confidence), _arm(candidate, sig, confidence)
    notes: list[str] = []
    if b_arm.scenario != c_arm.scenario:
        notes.append(f"the campaigns ran different scenarios (baseline: "
                     f"{b_arm.scenario_description or b_arm.scenario}; candidate: "
                     f"{c_arm.scenario_description or c_arm.scenario}), so the verdict "
                     f"compares the scenarios as well as the builds")
    differ = option_differences(baseline.meta.options, candidate.meta.options)
    if differ:
        notes.append(f"the campaigns ran with different launch options ({'; '.join(differ)}), "
                     f"so the verdict compares the options as well as the builds")
    for which, campaign in (("baseline", baseline), ("candidate", candidate)):
        unfinished = unfinished_note(campaign)
        if unfinished:
            notes.append(f"the {which} {unfinished}")
    build_b, build_c = baseline.meta.build, candidate.meta.build
    # the same file under two names (two host runtimes of one library) is the same build
    same = [key for key in _BUILD_IDENTITY
            if build_b.get(key) and build_b.get(key) == build_c.get(key)]
    if same:
        notes.append(f"both campaigns ran the same build ({same[0]} "
                     f"{str(build_b[same[0]])[:12]}...): check that the candidate really is a "
                     f"different build")
    elif build_b and build_b == build_c:
        notes.append("both campaigns report the same build provenance: check that the "
                     "candidate really is a different build")
    for arm in (b_arm, c_arm):
        if arm.counted > arm.eligible:
            why = ("had no race witness" if sig == RACE_WITNESSED else
                   "ended before creating sessions (they cannot show it)")
            notes.append(f"{arm.counted - arm.eligible} {arm.label} launches {why} and are "
                         f"left out of the {sig} rate")
    for camp in (baseline, candidate):
        for note in camp.notes:
            notes.append(f"{camp.label}: {note}")
    devices: list[DeviceResult] = []
    stratified_p = None
    all_devices = sorted(set(b_arm.devices) | set(c_arm.devices))
    if len(all_devices) > 1:
        strata = []
        for device in all_devices:
            xb, nb = count_target((r for r in baseline.counted if r.device == device), sig)
            xc, nc = count_target((r for r in candidate.counted if r.device == device), sig)
            strata.append(StratumTable(device, xb, nb, xc, nc))
            fp = (lower_rate_test(xb, nb, xc, nc, use_boschloo=False).fisher_p
                  if nb and nc else None)
            devices.append(DeviceResult(device, rate(xb, nb), rate(xc, nc), fp))
        stratified_p = stratified_exact_p(strata)
        if not any(s.n_b and s.n_c for s in strata):
            notes.append("no device ran both builds, so device and build cannot be told "
                         "apart and the stratified test has no information: run both builds "
                         "on the same devices, interleaved")
        lonely = [s.name for s in strata if bool(s.n_b) != bool(s.n_c)]
        if lonely and any(s.n_b and s.n_c for s in strata):
            notes.append(f"devices that ran only one build add nothing to the stratified "
                         f"test: {', '.join(lonely)}")
    decision = decide(b_arm.events, b_arm.eligible, c_arm.events, c_arm.eligible, settings,
                      stratified_p=stratified_p)
    moved = _moved(baseline.counted, candidate.counted, sig, settings.alpha)
    return Comparison(decision, settings, b_arm, c_arm, tuple(devices), stratified_p, moved,
                      tuple(notes))

