"""Compare two campaigns: the verdict (:func:`kit.analysis.decide.decide`) on their target
counts, per-device rates and the stratified test, crashes that moved, and the notes a
reader needs (docs/verdict.md).

Each campaign is read in one streamed pass (:mod:`kit.analysis.scan`), so two campaigns of
100,000 launches are compared in bounded memory (``benchmarks/bench_compare_memory.py``).
What the comparison is about follows from ``campaign.json``: two builds (``fixed`` /
``not-fixed``), or, when both ran the same build (the same onnxruntime library or APK
digest, or the same provenance), the scenario or launch options that differ (``removed``
/ ``not-removed``). A baseline whose scenario injects crashes is never a positive control.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence
from urllib.parse import parse_qsl, urlsplit

from ..errors import ColdstartError, UsageError
from ..records import Outcome
from ..scenario import parse_scenario
from ..store.identity import BuildIdentity
from ..store.meta import CampaignMeta
from ..store.store import Campaign
from .decide import BUILD, NO_CHANGE, SCENARIO, Decision, Verdict, VerdictSettings, decide
from .scan import Scan, scan_campaign
from .stats import (Rate, StratumTable, holm, lower_rate_test, rate, significant,
                    stratified_exact_p, upper_bound)
from .summary import unfinished_note
from .target import FAILURE, HOLD_LEFT_OUT, left_out_text, tier

__all__ = ["ArmResult", "DeviceResult", "MovedCrash", "Check", "Comparison",
           "compare_campaigns", "option_differences", "MAX_NOTES", "cap_notes",
           "same_build", "build_change", "checks_of"]

#: Outcomes other than crashes that can "move" into a candidate (e.g. a fix that deadlocks).
_MOVED_OUTCOMES = (Outcome.HUNG, Outcome.APP_ERROR, Outcome.WRONG_OUTPUT)
#: notes kept in a comparison; the rest are counted in one last note
MAX_NOTES = 10


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
class Check:
    """One condition a ``fixed`` (or ``removed``) verdict needs, as every renderer shows it.

    Attributes:
        name: what is checked (``positive control: the baseline reproduced X``).
        passed: whether it holds.
        problem: why it does not (``None`` when it passed).
        detail: the figures behind it (a rate, the p-values).
    """

    name: str
    passed: bool
    problem: str | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """A baseline-vs-candidate comparison (what ``coldstart compare`` prints and writes).

    Attributes:
        decision: the verdict, its reason and advice (:class:`~kit.analysis.decide.Decision`,
            with its tier, kind and change).
        settings: signature, alpha, ceiling, power.
        baseline, candidate: the two sides.
        devices: per-device rates (empty with one device overall).
        stratified_p: the stratified exact p, when several devices ran.
        moved: classes whose rate rose in the candidate.
        notes: scenario differences and other caveats, in words (at most
            :data:`MAX_NOTES`, the last one counting the rest).
        checks: the conditions of the verdict with pass or fail (:func:`checks_of`).
    """

    decision: Decision
    settings: VerdictSettings
    baseline: ArmResult
    candidate: ArmResult
    devices: tuple[DeviceResult, ...]
    stratified_p: float | None
    moved: tuple[MovedCrash, ...]
    notes: tuple[str, ...]
    checks: tuple[Check, ...] = ()

    @property
    def verdict(self) -> Verdict:
        return self.decision.verdict

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "tier": self.decision.tier,
                "kind": self.decision.kind, "change": self.decision.change,
                "decision": self.decision.to_dict(),
                "settings": self.settings.to_dict(), "baseline": self.baseline.to_dict(),
                "candidate": self.candidate.to_dict(),
                "devices": [d.to_dict() for d in self.devices],
                "stratified_p": self.stratified_p, "moved": [m.to_dict() for m in self.moved],
                "notes": list(self.notes), "checks": [c.to_dict() for c in self.checks]}


def cap_notes(notes: Sequence[str], limit: int = MAX_NOTES) -> tuple[str, ...]:
    """``notes`` with repeats dropped and at most ``limit`` kept; the last one then says how
    many more there were (binary junk in a campaign once gave 40+ notes)."""
    unique = list(dict.fromkeys(notes))
    if len(unique) <= limit:
        return tuple(unique)
    return (*unique[:limit - 1], f"and {len(unique) - limit + 1} more notes of the same kind "
                                 f"(the campaigns' own notes are in their summaries)")


def _arm(campaign: Campaign, scan: Scan, confidence: float) -> ArmResult:
    events, eligible = scan.target_events
    meta = campaign.meta
    counted_devices = tuple(sorted(d for d, row in scan.devices.items() if row[1]))
    return ArmResult(
        label=campaign.label, path=str(campaign.path), target=meta.target,
        scenario=meta.scenario, scenario_description=meta.scenario_description,
        devices=counted_devices, counted=scan.counted, infra_errors=scan.infra_count,
        eligible=eligible, events=events, rate=rate(events, eligible),
        upper=upper_bound(events, eligible, confidence))


def _moved(base: Scan, cand: Scan, signature: str, alpha: float) -> tuple[MovedCrash, ...]:
    keys = sorted((set(base.crash_class) | set(cand.crash_class)) - {signature})
    keys += [o.value for o in _MOVED_OUTCOMES]

    def count(scan: Scan, key: str) -> int:
        return scan.crash_class.get(key, 0) + scan.outcomes.get(key, 0)

    rows = []
    for key in keys:
        x_b, x_c = count(base, key), count(cand, key)
        if x_b + x_c == 0:
            continue
        p = lower_rate_test(x_c, cand.counted, x_b, base.counted, use_boschloo=False).fisher_p
        rows.append((key, x_b, x_c, p))
    adjusted = holm([r[3] for r in rows])
    out = []
    for (key, x_b, x_c, p), p_holm in zip(rows, adjusted):
        if base.counted and cand.counted and x_c / cand.counted > x_b / base.counted:
            out.append(MovedCrash(key, rate(x_b, base.counted), rate(x_c, cand.counted), p,
                                  p_holm, significant(p_holm, alpha)))
    return tuple(out)


def option_differences(baseline: Any, candidate: Any) -> list[str]:
    """``["poison: baseline None, candidate 'glibc'", ...]`` for the launch options that
    two campaigns' run setups (:attr:`kit.store.meta.RunSetup.compared`, each target's
    own) set differently, in the baseline's order; options only one campaign records are
    left out (older campaigns)."""
    if not isinstance(baseline, dict) or not isinstance(candidate, dict):
        return []
    return [f"{key}: baseline {baseline[key]!r}, candidate {candidate[key]!r}"
            for key in baseline if key in candidate and baseline[key] != candidate[key]]


def _identities(*metas: CampaignMeta) -> list[BuildIdentity]:
    """Each campaign's build identity (never ``None`` once a :class:`CampaignMeta` is
    made)."""
    return [m.build_identity or BuildIdentity.from_build(m.build) for m in metas]


def same_build(baseline: CampaignMeta, candidate: CampaignMeta) -> str | None:
    """How two campaigns show they ran one build: ``"ort_library_sha256
    abababababab..."`` (the same artifact, by kind and sha256, in the same program when
    both name one: :class:`kit.store.identity.BuildIdentity`); when either has no digest,
    ``"the same build provenance"`` (the ``build`` provenance identical and not empty);
    else ``None``."""
    b, c = _identities(baseline, candidate)
    other_program = any(getattr(b, f) and getattr(c, f) and getattr(b, f) != getattr(c, f)
                        for f in ("program", "program_sha256"))
    if b.sha256 and c.sha256:  # both measured: the digests decide
        if b.artifact == c.artifact and b.sha256 == c.sha256 and not other_program:
            return f"{b.artifact}_sha256 {b.sha256[:12]}..."
        return None
    if baseline.build and baseline.build == candidate.build:
        return "the same build provenance"
    return None


def build_change(baseline: BuildIdentity, candidate: BuildIdentity) -> str | None:
    """What differs between two builds the kit made itself (their ``ort_build``,
    :class:`kit.store.identity.OrtVariant`): ``"patch none -> fix, sha256 1a2b3c4d..."``
    when only the patch differs, ``"onnxruntime build: source, flags differ; patch none ->
    fix"`` when more does; else, when both know their onnxruntime version and it differs,
    ``"onnxruntime 1.21.0 -> 1.22.0"``; ``None`` when neither tells."""
    ort_b, ort_c = baseline.ort_build, candidate.ort_build
    if ort_b is None or ort_c is None:
        if baseline.version and candidate.version and baseline.version != candidate.version:
            return f"onnxruntime {baseline.version} -> {candidate.version}"
        return None
    p_b, p_c = ort_b.patch, ort_c.patch
    patch = ""
    if p_b != p_c:
        patch = (f"patch {p_b.name if p_b else 'none'} -> {p_c.name if p_c else 'none'}"
                 + (f", sha256 {p_c.sha256[:8]}..." if p_c is not None and p_c.sha256
                    else ""))
    others = ort_b.differences(ort_c)
    if not others:
        return patch or None
    return f"onnxruntime build: {', '.join(others)} differ" + (f"; {patch}" if patch else "")


def _scenario_change(b_scenario: str, c_scenario: str, options: list[str]) -> str:
    """What differs between two canonical scenario URLs (``mode=concurrent -> mode=serial``)
    and the launch options, in one line ("" when nothing does)."""
    def fields(url: str) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))

    b, c = fields(b_scenario), fields(c_scenario)
    parts = [f"{k}={b.get(k, '-')} -> {k}={c.get(k, '-')}" for k in dict.fromkeys([*b, *c])
             if b.get(k) != c.get(k)]
    return "; ".join(parts + options)


def _injected(scenario: str) -> str | None:
    try:
        inject = parse_scenario(scenario).inject
    except ColdstartError:
        return None
    return None if inject is None else "@".join(inject)


def _rule_design(candidate: Campaign, settings: VerdictSettings, notes: list[str],
                 baseline: Campaign | None = None, baseline_made: int | None = None) -> Any:
    """The candidate's ``--until-verdict`` design when its settings are these (``None``
    otherwise, with a note when the settings differ). A rule kept with the exact comparison
    against a finished baseline is judged by the e-value instead, with a note, when
    ``baseline``'s size was not fixed before it ran
    (:func:`kit.analysis.summary.size_not_fixed`: extended after the candidate's run;
    ``baseline_made``: its launch slots, when known)."""
    rule = candidate.meta.until_verdict
    if rule is None:
        return None
    if (rule.signature, rule.alpha, rule.ceiling) != (settings.signature, settings.alpha,
                                                      settings.ceiling):
        notes.append(f"the candidate ran under a sequential rule for --event "
                     f"{rule.signature} --alpha {rule.alpha:g} --ceiling {rule.ceiling:g}; "
                     f"judged with other settings, only the anytime-valid comparison holds "
                     f"its error rate, not the ceiling's bound")
        return None
    from .sequential import COMPARISON_FINISHED, COMPARISON_FINISHED_FIRST
    from .sprt import SprtDesign

    finished = (not rule.interleaved and rule.max_launches is not None and rule.baseline_n
                and rule.extra.get("comparison") in (COMPARISON_FINISHED,
                                                     COMPARISON_FINISHED_FIRST))
    stage = None
    if finished and baseline is not None:
        from .summary import size_not_fixed

        why = size_not_fixed(baseline, baseline_made, settings.signature)
        if why is not None:
            notes.append(f"the candidate's rule compared with the baseline at an exact level "
                         f"computed for a baseline size fixed in advance, but the baseline's "
                         f"was not ({why}): judged by the anytime-valid e-value instead")
            finished = False
        elif baseline.meta.stage is not None:  # staged by design: the whole procedure's level
            from .stage import staged_design

            stage = staged_design(list(baseline.iter_records()), baseline.meta.stage,
                                  baseline.meta.launches)
    try:
        return SprtDesign(rule.ceiling, rule.design_rate, rule.alpha, rule.beta,
                          rule.max_launches, rule.baseline_n if finished else None,
                          bool(finished) and rule.stop_at_first_below, stage)
    except UsageError as exc:
        notes.append(f"the candidate's sequential rule cannot be rebuilt ({exc.message})")
        return None


def compare_campaigns(baseline: Campaign, candidate: Campaign,
                      settings: VerdictSettings = VerdictSettings(), *,
                      scans: tuple[Scan, Scan] | None = None) -> Comparison:
    """Compare two campaigns (loaded, or streamed: :func:`kit.store.store.load_campaign`)
    and state the verdict (module doc).

    With more than one device across both campaigns the decision uses the stratified exact
    test over devices (:func:`kit.analysis.stats.stratified_exact_p`), so a device that ran
    only one build, or one device's rate, cannot carry it. Campaigns made under a
    sequential rule (the candidate's ``until_verdict``, the baseline's ``interleaved``) are
    judged with the rule's anytime-valid conditions too (:func:`~kit.analysis.decide.decide`).

    Args:
        scans: both campaigns' :class:`~kit.analysis.scan.Scan` for ``settings.signature``
            when already made (the reports share them); else each is read once here.

    Raises:
        UsageError: the campaigns are the same directory, or ran on different targets.
        DataError: a campaign's records are invalid.
    """
    if baseline.path.resolve() == candidate.path.resolve():
        raise UsageError(f"baseline and candidate are the same campaign ({baseline.path})",
                         "give two different campaign directories")
    t_b, t_c = baseline.meta.target, candidate.meta.target
    if t_b != t_c:
        raise UsageError(f"the baseline ran on target {t_b!r} and the candidate on {t_c!r}",
                         "compare campaigns made on the same target")
    sig = settings.signature
    if scans is None or any(s.signature != sig for s in scans):
        scans = (scan_campaign(baseline, sig), scan_campaign(candidate, sig))
    s_b, s_c = scans
    confidence = 1.0 - settings.alpha
    b_arm, c_arm = _arm(baseline, s_b, confidence), _arm(candidate, s_c, confidence)
    notes: list[str] = []
    differ = option_differences(baseline.meta.setup.compared, candidate.meta.setup.compared)
    same = same_build(baseline.meta, candidate.meta)
    change = _scenario_change(b_arm.scenario, c_arm.scenario, differ)
    kind = BUILD if same is None else (SCENARIO if change else NO_CHANGE)
    if kind == BUILD:
        if b_arm.scenario != c_arm.scenario:
            notes.append(f"the campaigns ran different scenarios (baseline: "
                         f"{b_arm.scenario_description or b_arm.scenario}; candidate: "
                         f"{c_arm.scenario_description or c_arm.scenario}), so the verdict "
                         f"compares the scenarios as well as the builds")
        if differ:
            notes.append(f"the campaigns ran with different launch options "
                         f"({'; '.join(differ)}), so the verdict compares the options as "
                         f"well as the builds")
    else:
        notes.append(f"both campaigns ran the same build ({same}): the verdict is about "
                     + (f"the change of scenario or options ({change}), not a fix"
                        if change else "nothing: the scenario and options are the same too"))
    for which, campaign, scan in (("baseline", baseline, s_b), ("candidate", candidate, s_c)):
        unfinished = unfinished_note(campaign, len(scan.slots))
        if unfinished:
            notes.append(f"the {which} {unfinished}")
    injected = _injected(b_arm.scenario)
    if _injected(c_arm.scenario):
        notes.append(f"the candidate's scenario injects crashes "
                     f"({_injected(c_arm.scenario)}): its crashes are the kit's own")
    for arm, scan in ((b_arm, s_b), (c_arm, s_c)):
        unheld = scan.hold_unengaged if tier(sig) == FAILURE else 0
        if unheld:
            notes.append(f"{unheld} {arm.label} launches {HOLD_LEFT_OUT} and are left out "
                         f"of the {sig} rate")
        if arm.counted - unheld > arm.eligible:
            notes.append(f"{arm.counted - unheld - arm.eligible} {arm.label} launches "
                         f"{left_out_text(sig)} and are left out of the {sig} rate")
    for camp in (baseline, candidate):
        for note in camp.notes:
            notes.append(f"{camp.label}: {note}")
    design = _rule_design(candidate, settings, notes, baseline, len(s_b.slots))
    # a run against a finished baseline under an exact design is judged by that design's
    # level; any other rule run by the anytime-valid e-value (valid however it stopped)
    anytime = (candidate.meta.until_verdict is not None or baseline.meta.interleaved
               is not None) and not (design is not None and design.finished)
    devices, stratified_p = _devices(s_b, s_c, notes)
    decision = decide(b_arm.events, b_arm.eligible, c_arm.events, c_arm.eligible, settings,
                      stratified_p=stratified_p, anytime=anytime, sequential=design,
                      injected=injected,
                      change=(change if kind == SCENARIO else
                              build_change(*_identities(baseline.meta, candidate.meta))
                              if kind == BUILD else None),
                      kind=kind,
                      unengaged=((s_b.hold_unengaged, s_c.hold_unengaged) if tier(sig) == FAILURE
                                 else (0, 0)))
    moved = _moved(s_b, s_c, sig, settings.alpha)
    return Comparison(decision, settings, b_arm, c_arm, devices, stratified_p, moved,
                      cap_notes(notes), checks_of(decision, settings, b_arm, c_arm,
                                                  stratified_p))


def checks_of(decision: Decision, settings: VerdictSettings, baseline: ArmResult,
              candidate: ArmResult, stratified_p: float | None = None) -> tuple[Check, ...]:
    """The verdict's conditions (docs/verdict.md): the positive control (the baseline showed
    the target), the exact test (the candidate's rate lower at ``alpha``), the ceiling (the
    candidate's one-sided upper bound below it) and the same scenario on both sides."""
    from .decide import p_text

    sig, alpha, ceiling = settings.signature, settings.alpha, settings.ceiling
    p, test = decision.p, decision.test
    figures = "-"
    if p is not None:
        fisher = test.fisher_p if test is not None else None
        boschloo = test.boschloo_p if test is not None else None
        figures = (f"p = {p_text(p)} ({test.method if test is not None else '-'}); Fisher "
                   f"p = {'-' if fisher is None else p_text(fisher)}, Boschloo p = "
                   f"{'-' if boschloo is None else p_text(boschloo)}"
                   + (f", stratified p = {p_text(stratified_p)}"
                      if stratified_p is not None else ""))
    upper = decision.candidate_upper
    same = baseline.scenario == candidate.scenario
    return (
        Check(f"positive control: the baseline reproduced {sig}", baseline.events > 0,
              None if baseline.events else
              f"the baseline never showed {sig} ({baseline.events}/{baseline.eligible})",
              baseline.rate.text()),
        Check(f"candidate's {sig} rate lower than the baseline's (alpha {alpha})",
              p is not None and significant(p, alpha),
              None if p is not None and significant(p, alpha) else
              f"not shown lower (p = {'-' if p is None else p_text(p)})", figures),
        Check(f"candidate's {sig} rate below the {ceiling:g} ceiling", upper < ceiling,
              None if upper < ceiling else
              f"upper bound {upper:.4g} at {1 - alpha:.0%} is not below {ceiling:g}",
              candidate.rate.text()),
        Check("same scenario in both campaigns", same, None if same else
              f"baseline {baseline.scenario} vs candidate {candidate.scenario}", ""))


def _devices(s_b: Scan, s_c: Scan, notes: list[str]
             ) -> tuple[tuple[DeviceResult, ...], float | None]:
    """Per-device rates and the stratified p, with more than one device overall."""
    all_devices = sorted({d for d, row in s_b.devices.items() if row[1]}
                         | {d for d, row in s_c.devices.items() if row[1]})
    if len(all_devices) <= 1:
        return (), None
    strata, devices = [], []
    for device in all_devices:
        xb, nb = s_b.target_by_device.get(device, (0, 0))
        xc, nc = s_c.target_by_device.get(device, (0, 0))
        strata.append(StratumTable(device, xb, nb, xc, nc))
        fp = lower_rate_test(xb, nb, xc, nc, use_boschloo=False).fisher_p if nb and nc else None
        devices.append(DeviceResult(device, rate(xb, nb), rate(xc, nc), fp))
    stratified_p = stratified_exact_p(strata)
    if not any(s.n_b and s.n_c for s in strata):
        notes.append("no device ran both builds, so device and build cannot be told apart and "
                     "the stratified test has no information: run both builds on the same "
                     "devices, interleaved")
    lonely = [s.name for s in strata if bool(s.n_b) != bool(s.n_c)]
    if lonely and any(s.n_b and s.n_c for s in strata):
        notes.append(f"devices that ran only one build add nothing to the stratified test: "
                     f"{', '.join(lonely)}")
    return tuple(devices), stratified_p

