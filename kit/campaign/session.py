"""The campaign session: one typed request in, one or two campaigns made, progress and rule
events out through an observer. The CLI turns arguments into a :class:`CampaignRequest` and
renders what the :class:`SessionObserver` hears; the pytest plugin builds the request
directly. Both look the target up in the registry (:mod:`kit.targets.registry`) and hand it
in: the session knows no target by name.

A session, in order (what is there is checked before anything is made, so a refused request
changes nothing):

1. check the request (label, directories, rule settings) and, with ``--until-verdict``
   against a finished baseline, build the stopping rule;
2. take the campaign's lock (two processes never write one campaign);
3. on resume, check that the campaign is this request's (label, target, scenario, rule);
4. prepare the target (:meth:`kit.launch.TargetPlugin.prepare`) and, on resume, check that
   its build and launch options are the campaign's;
5. make (or reopen) the campaign with its whole ``campaign.json``, open the target, run the
   launches (one campaign, or two interleaved), close the target, record the provenance the
   target learned (``finish``) and how the rule ended;
6. say how many planned launches were abandoned, and with which exit code.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any, Sequence

from ..analysis.sequential import InterleavedRule, StopRule, make_stop_rule
from ..analysis.stage import StageRule, first_stage
from ..analysis.sprt import SLOW_RULE_LAUNCHES
from ..analysis.verdict import RACE_DETECTED, RACE_WITNESSED, count_events
from ..errors import UsageError
from ..records import LaunchRecord
from ..launch import PreparedTarget, TargetPlugin
from .interleave import InterleavedSchedule
from .loop import Arm, CampaignSchedule, StagedSchedule, abandoned_slots, run_arms
from ..store.meta import CampaignMeta, PairMeta, RuleMeta
from ..store.opened import OpenCampaign, WriteMode, open_to_write
from .request import (CampaignRequest, CampaignRun, RuleRequest, SessionObserver,
                      SessionResult, compare_argv, resume_command)
from ..store.resume import (check_identity, check_kept_rule, check_launches,
                            check_same_setup, conflict)
from ..store.store import Campaign, load_campaign

__all__ = ["RuleRequest", "CampaignRequest", "SessionObserver", "CampaignRun",
           "SessionResult", "run_session", "compare_argv", "stop_rule_for", "resume_command"]


class _Seeded:
    """Forwards ``recorded`` to the session observer, with ``started`` sent once."""

    def __init__(self, observer: SessionObserver, title: str, total: int,
                 records: Sequence[LaunchRecord]) -> None:
        self.observer = observer
        observer.started(title, total, records)

    def started(self, total: int, done: int) -> None:
        pass

    def recorded(self, record: LaunchRecord) -> None:
        self.observer.recorded(record)


def _check_rule(request: CampaignRequest, prepared: Sequence[PreparedTarget]) -> None:
    """Refuse rule settings that cannot work, before anything is made."""
    rule = request.rule
    assert rule is not None
    if not str(rule.baseline).strip():
        raise UsageError("--until-verdict is empty", "give the baseline campaign's directory")
    if Path(rule.baseline).resolve() == Path(request.out).resolve():
        raise UsageError(f"--until-verdict names this run's own --out ({request.out})",
                         "give the baseline campaign's directory")
    if rule.stop_at_first_below and rule.interleaved:
        raise UsageError("--stop-at-first-below is a variant of the rule against a finished "
                         "baseline; an interleaved run compares by the e-value",
                         "leave out --stop-at-first-below, or run the baseline first")
    for setup in (p.setup for p in prepared):
        witness = setup.witness or f"off: the {request.target} target has no race witness"
        if rule.settings.signature == RACE_WITNESSED and not setup.witnessed:
            raise UsageError(f"--event race-witnessed counts only launches the race "
                             f"witness watched, and this run has none ({witness})",
                             "run with the witness on the host, or give a crash class as "
                             "--event")
        if rule.settings.signature == RACE_DETECTED and setup.detector is None:
            raise UsageError("--event race-detected counts only launches run under the "
                             "race detector, and this run has none",
                             "add --detector drd (host), or give a crash class as "
                             "--event")


def _check_resumed_rule(path: Path, meta: CampaignMeta, rule: RuleRequest | None) -> None:
    kept = meta.until_verdict
    if kept is None:
        if rule is not None:
            raise conflict("rule-added", path)
        return
    if rule is None:
        raise conflict("rule-dropped", path, old=kept.baseline)
    s = rule.settings
    check_kept_rule(path, kept, {
        "until_verdict": str(rule.baseline), "signature": s.signature, "alpha": s.alpha,
        "ceiling": s.ceiling, "beta": rule.beta,
        "design_rate": rule.design(meta.launches).design_rate,
        "stop_at_first_below": rule.stop_at_first_below})
    if kept.interleaved != rule.interleaved:
        raise conflict("interleaving", path,
                       how="without" if kept.interleaved else "with",
                       old="interleaved" if kept.interleaved
                       else "against a finished baseline")


class _Made:
    """Removes a directory this session made if the session is refused before it writes a
    campaign there (only the lock file is in it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.existed = path.exists()

    def undo(self) -> None:
        if self.existed or not self.path.is_dir():
            return
        if {p.name for p in self.path.iterdir()} <= {".coldstart.lock"}:
            shutil.rmtree(self.path, ignore_errors=True)


def run_session(target: TargetPlugin[Any], request: CampaignRequest, observer: SessionObserver,
                opened: OpenCampaign | None = None) -> SessionResult:
    """Run one request (module doc) on ``target`` (the registry's target named
    ``request.target``, :func:`kit.targets.registry.get_plugin`). ``opened``: the campaign
    ``request.out`` as the caller already opened it to resume
    (:func:`kit.store.opened.open_to_write`, so that it is read once); the session closes
    it when it ends. Every campaign it writes it opens through that one door.

    Raises:
        UsageError: a bad request, a campaign of another setup, a campaign in use.
        InfraError: the target could not be prepared, or a record could not be written.
        KeyboardInterrupt: after the launches in flight are stopped; every finished launch
            is kept and ``--resume`` goes on.
    """
    if target.name != request.target:
        raise ValueError(f"target {target.name!r} given for a request of {request.target!r}")
    if opened is None and request.resume:  # opened here: the one campaign the session closes
        opened = open_to_write(request.out, mode="resume")
    held: list[OpenCampaign] = [] if opened is None else [opened]
    made: list[_Made] = []
    try:
        if request.rule is not None and request.rule.interleaved:
            return _run_interleaved(request, target, observer, made, held, opened)
        return _run_single(request, target, observer, made, held, opened)
    except BaseException:
        for m in made:
            m.undo()
        raise
    finally:
        for camp in held:
            camp.close()


def _open(path: str | os.PathLike[str], mode: WriteMode, made: list[_Made], held: list[OpenCampaign],
          flag: str = "--out") -> OpenCampaign:
    """Open ``path`` to write (:func:`kit.store.opened.open_to_write`), kept in ``held``
    (closed when the session ends) and ``made`` (a directory made for a refused session is
    removed)."""
    made.append(_Made(Path(path)))
    camp = open_to_write(path, mode=mode, flag=flag)
    held.append(camp)
    return camp


def _open_for_run(request: CampaignRequest, made: list[_Made], held: list[OpenCampaign],
                  opened: OpenCampaign | None) -> OpenCampaign:
    """Lock ``request.out``; check what is there. On resume, the campaign read once
    (``opened``, which the caller or :func:`run_session` read), else one with no meta yet."""
    if request.resume:
        assert opened is not None  # run_session opened it
        camp = opened
        meta = camp.meta
        assert meta is not None
        check_identity(camp.path, meta, label=request.label, target=request.target,
                       scenario=request.scenario.key())
        _check_resumed_rule(camp.path, meta, request.rule)
        return camp
    return _open(request.out, "new", made, held)


def _setup_fields(target: TargetPlugin[Any], config: Any,
                  prepared: PreparedTarget) -> dict[str, Any]:
    """What ``campaign.json`` keeps of a prepared target: the typed config (JSON) and run
    setup, and the target's provenance."""
    return {"build": prepared.build, "devices": prepared.devices, "options": prepared.options,
            "build_identity": prepared.identity, "config": target.config_to_json(config),
            "run_setup": prepared.setup}


def _write_setup(camp: OpenCampaign, request: CampaignRequest, label: str,
                 prepared: PreparedTarget, setup: dict[str, Any]) -> None:
    """Make the campaign with its whole setup, or (resumed) check the setup is the
    campaign's and write the new ``launches`` and rule; no read of ``campaign.json``."""
    if camp.meta is None:
        camp.create(label=label, target=request.target, scenario=request.scenario,
                    launches=request.launches, extra=setup)
        return
    check_same_setup(camp.path, camp.meta, prepared.build, prepared.options,
                     prepared.learned, prepared.per_device)
    check_launches(camp.path, camp.meta, camp.records, request.launches)
    extended = {}
    if request.launches > camp.meta.launches and any(r.counted for r in camp.records):
        # more launches planned after some were seen: the campaign's size now depends on
        # what it showed, which the exact comparison against a finished baseline must know
        extended = {"extended_from": [*camp.meta.extended_from, camp.meta.launches]}
    camp.update(launches=request.launches, **extended,
                **{**setup, **_devices_kept(camp.meta, prepared)})


def _devices_kept(meta: CampaignMeta, prepared: PreparedTarget) -> dict[str, Any]:
    """A resumed campaign's ``devices`` and per-device options
    (:attr:`PreparedTarget.per_device`): each device it ran on before, with this run's
    devices updated in place or added (resumed on another device, it ran on both)."""
    new = {d.get("id"): d for d in prepared.devices}
    devices = [new.pop(d.get("id"), d) for d in meta.devices] + list(new.values())
    options = dict(prepared.options)
    for key in prepared.per_device:
        old, mine = meta.options.get(key), options.get(key)
        if isinstance(old, dict) and isinstance(mine, dict):
            options[key] = {**old, **mine}
    return {"devices": devices, "options": options}


def stop_rule_for(rule: RuleRequest, target: str | None, launches: int,
                  baseline: Campaign | None = None) -> StopRule:
    """The stopping rule of a run of ``launches`` on ``target`` against the finished
    baseline ``rule.baseline`` (``baseline``: that campaign, already loaded).

    Raises:
        UsageError: the baseline is missing, of another target, without a positive control,
            or too strong a demand for ``launches`` (see
            :func:`kit.analysis.sequential.make_stop_rule`).
    """
    if baseline is None:
        baseline = load_campaign(rule.baseline)
    if target is not None and baseline.meta.target != target:
        raise UsageError(f"the baseline {rule.baseline} ran on target "
                         f"{baseline.meta.target!r}, this run on {target!r}: compare refuses "
                         f"such a pair", "give a baseline campaign of the same target")
    design = rule.design(launches)
    return make_stop_rule(baseline, rule.settings, beta=rule.beta,
                          design_rate=design.design_rate, max_launches=design.max_launches,
                          stop_at_first_below=rule.stop_at_first_below)


def _rule_meta(meta: dict[str, Any]) -> RuleMeta:
    return RuleMeta.from_dict(meta, "until_verdict")


def _finish(prepared: PreparedTarget, camp: OpenCampaign) -> None:
    """The target's ``finish`` with the records the loop holds (no reload), then ``close``;
    what it learned goes into ``build``."""
    try:
        learned = prepared.finish(list(camp.records))
    finally:
        prepared.close()
    if learned:
        camp.update(build=learned)


def _run_single(request: CampaignRequest, target: TargetPlugin[Any], observer: SessionObserver,
                made: list[_Made], held: list[OpenCampaign],
                opened: OpenCampaign | None) -> SessionResult:
    camp = _open_for_run(request, made, held, opened)
    store = camp.store
    prepared = target.prepare(request.config, request.scenario, observer.note)
    should_stop: StopRule | None = None
    base: Campaign | None = None
    if request.rule is not None:  # before the campaign is made: a bad rule leaves nothing
        _check_rule(request, [prepared])
        if request.launches >= SLOW_RULE_LAUNCHES:
            observer.note(f"until-verdict: computing the rule's exact thresholds for "
                          f"{request.launches} launches (this can take a minute)")
        base = load_campaign(request.rule.baseline)  # once: the rule and its notes
        should_stop = stop_rule_for(request.rule, request.target, request.launches, base)
    baseline_dir = str(request.rule.baseline) if request.rule is not None else ""
    kept: dict[str, Any] = {} if should_stop is None else {"until_verdict": _rule_meta(
        should_stop.to_meta(baseline_dir, None, "not finished"))}
    staged = StageRule(request.stage) if request.stage is not None else None
    if staged is not None:  # declared before the first launch: campaign.json keeps it
        kept["stage"] = request.stage
    # build, options and rule go into campaign.json as it is made, so that a kill -9 at any
    # moment leaves a campaign that --resume continues as it was started
    before = len(camp.records)
    _write_setup(camp, request, request.label, prepared,
                 {**_setup_fields(target, request.config, prepared), **kept})
    observer.note(f"{request.target} campaign {request.label}: {request.scenario.describe()} "
                  f"-> {store.path}")
    if should_stop is not None:
        assert base is not None
        _rule_notes(request, should_stop, prepared, base, observer)
    if staged is not None:
        observer.note(f"{staged.describe()} ({request.launches})")
    arm = Arm(store, camp.records, prepared.launchers, request.label, request.scenario,
              request.launches, request.timeout_s, request.retry)
    prepared.open()
    try:
        watcher = _Seeded(observer, request.label, request.launches, camp.records)
        run_arms([arm], CampaignSchedule(should_stop) if staged is None else
                 StagedSchedule(staged), observer=watcher)
    finally:
        _finish(prepared, camp)
    all_records = camp.records
    stopped = why = compare = None
    if should_stop is not None:
        stopped, why = should_stop.decision([r for r in all_records if r.counted])
        camp.update(until_verdict=_rule_meta(
            should_stop.to_meta(baseline_dir, stopped, why)))
        compare = compare_argv(baseline_dir, store.path, should_stop.settings)
    if staged is not None:
        met = staged.met(all_records)
        events, n = first_stage(all_records, staged.stage)
        observer.note(f"stage: {events} {staged.stage.event} in the first {n} launches: "
                      + ("met, the baseline stops there" if met else
                         "missed, the baseline goes on to its --launches"
                         if n >= staged.stage.launches else "not made yet"))
    else:
        met = False
    # a run its rule (or its met stage) stopped needs no more launches: none of the rest is
    # abandoned
    lost = 0 if stopped or met else len(abandoned_slots(all_records, request.launches))
    return SessionResult((_result(camp, request.launches, before, lost),), stopped, why,
                         compare)


def _result(camp: OpenCampaign, planned: int, before: int, abandoned: int) -> CampaignRun:
    records = camp.records
    counted = len({r.index for r in records if r.counted})
    new = records[before:]
    assert camp.meta is not None
    return CampaignRun(camp.path, camp.meta.label, planned, counted, abandoned,
                       sum(1 for r in new if not r.counted), camp.campaign())


def _rule_notes(request: CampaignRequest, rule: StopRule, prepared: PreparedTarget,
                base: Campaign, observer: SessionObserver) -> None:
    from ..analysis.summary import unfinished_note
    from ..analysis.verdict import option_differences

    assert request.rule is not None
    observer.note(f"until-verdict against {request.rule.baseline} ({rule.baseline_events}/"
                  f"{rule.baseline_n}): {rule.design.describe()}")
    if rule.not_exact is not None:
        observer.note(f"note: the baseline's size was not fixed before it ran "
                      f"({rule.not_exact}): the rule compares the builds by the anytime-valid "
                      f"e-value, not at the exact level, whose error rate assumes a baseline "
                      f"size chosen in advance (docs/verdict.md)")
    else:
        unfinished = unfinished_note(base)
        if unfinished:
            observer.note(f"note: the baseline {unfinished}; the rule takes its counts as "
                          f"they stand")
    differ = option_differences(base.meta.setup.compared, prepared.setup.compared)
    if differ:
        observer.note(f"note: the baseline ran with other launch options ({'; '.join(differ)})"
                      f": the verdict will compare them as well as the builds")


def _check_baseline_dir(base: Path, meta: CampaignMeta | None,
                        records: Sequence[LaunchRecord], out: Path,
                        request: CampaignRequest) -> None:
    """Refuse an interleaved run's baseline directory that holds a campaign it cannot
    continue: another target or scenario, more launches planned than ``--launches``, one
    already finished (then the run is an ordinary ``--until-verdict`` against it), or the
    baseline of another interleaved run."""
    if meta is None:
        return
    flag = f"--until-verdict {base}"
    for key, want in (("target", request.target), ("scenario", request.scenario.key())):
        if getattr(meta, key) != want:
            raise UsageError(f"{flag} holds a campaign of another {key} "
                             f"({getattr(meta, key)!r}; this run: {want!r})",
                             "give the baseline another directory, or this run the "
                             "baseline's options")
    theirs = meta.interleaved.candidate if meta.interleaved is not None else None
    if theirs is not None and Path(theirs).resolve() != out.resolve():
        raise UsageError(f"{flag} is the baseline of the interleaved run {theirs}",
                         f"resume that run (--resume --out {shlex.quote(theirs)}), or give "
                         f"this run a baseline directory of its own")
    if meta.launches > request.launches:
        raise UsageError(f"{flag} plans {meta.launches} launches, more than this run's "
                         f"--launches {request.launches}",
                         f"give --launches {meta.launches} (each build makes at most "
                         f"--launches)")
    if theirs is not None:
        return
    made = len({r.index for r in records})
    if made >= meta.launches:
        raise UsageError(f"{flag} is a finished campaign ({made} of {meta.launches} "
                         f"launches): no baseline launch is left to interleave",
                         "drop the baseline build option to run against it as it is")


def _run_interleaved(request: CampaignRequest, target: TargetPlugin[Any],
                     observer: SessionObserver, made: list[_Made], held: list[OpenCampaign],
                     opened: OpenCampaign | None) -> SessionResult:
    """Make both builds' launches, alternating, until the verdict is settled (the candidate
    in ``out``, the baseline in the rule's ``baseline``, made or continued), each at most
    ``launches``, under :class:`kit.analysis.sequential.InterleavedRule`."""
    rule_req = request.rule
    assert rule_req is not None
    if str(rule_req.baseline).strip() and Path(rule_req.baseline).resolve() == Path(
            request.out).resolve():
        raise UsageError(f"--until-verdict names this run's own --out ({request.out})",
                         "give the baseline campaign's directory")
    rule = InterleavedRule(rule_req.design(request.launches), rule_req.settings)
    camp = _open_for_run(request, made, held, opened)  # this run's own campaign first
    store = camp.store
    out = store.path
    # the baseline: continued when there (read once, holding its lock), else made
    base_camp = _open(rule_req.baseline, "either", made, held, "--until-verdict")
    base_path = base_camp.path
    base_meta = base_camp.meta
    base_label = base_meta.label if base_meta is not None else "baseline"
    _check_baseline_dir(base_path, base_meta, base_camp.records, out, request)
    if base_label == request.label:
        raise UsageError(f"the baseline and this run are both labelled {request.label!r}",
                         "give this run another --label, e.g. --label patched")
    candidate = target.prepare(request.config, request.scenario, observer.note)
    baseline = target.prepare(rule_req.baseline_config, request.scenario, observer.note)
    _check_rule(request, [baseline, candidate])
    if camp.meta is not None:
        check_same_setup(store.path, camp.meta, candidate.build, candidate.options,
                         candidate.learned, candidate.per_device)
    if base_meta is not None:
        check_same_setup(base_path, base_meta, baseline.build, baseline.options,
                         baseline.learned, baseline.per_device)

    def kept(stopped: bool | None, why: str) -> RuleMeta:  # absolute: cwd may change
        m = rule.to_meta(str(base_path.resolve()), stopped, why)
        return _rule_meta({**m, **rule_req.baseline_options})

    def pair(stopped: bool | None, why: str) -> PairMeta:
        return PairMeta.from_dict({"candidate": str(out.resolve()),
                                   **kept(stopped, why).to_dict()}, "interleaved")

    before = (len(base_camp.records), len(camp.records))
    _write_setup(camp, request, request.label, candidate,
                 {**_setup_fields(target, request.config, candidate),
                  "until_verdict": kept(None, "not finished")})
    _write_setup(base_camp, request, base_label, baseline,
                 {**_setup_fields(target, rule_req.baseline_config, baseline),
                  "interleaved": pair(None, "not finished")})
    observer.note(f"{request.target} campaigns {base_label} -> {base_path} and "
                  f"{request.label} -> {out}, interleaved: {request.scenario.describe()}")
    observer.note(f"until-verdict, both builds at most {request.launches} launches: "
                  f"{rule.design.describe()}")
    arms = [Arm(c.store, c.records, p.launchers, lab, request.scenario, request.launches,
                request.timeout_s, request.retry)
            for c, p, lab in ((base_camp, baseline, base_label),
                              (camp, candidate, request.label))]
    for p in (baseline, candidate):
        p.open()
    try:
        watcher = _Seeded(observer, f"{base_label} + {request.label}", 2 * request.launches,
                          [*base_camp.records, *camp.records])
        why = run_arms(arms, InterleavedSchedule(rule), observer=watcher)
    finally:
        try:
            _finish(baseline, base_camp)
        finally:
            _finish(candidate, camp)
    sig = rule.settings.signature
    need_b, need_c, _ = rule.needs_counts(*count_events(base_camp.records, sig),
                                          *count_events(camp.records, sig))
    stopped = not (need_b or need_c)
    base_camp.update(interleaved=pair(stopped, why))
    camp.update(until_verdict=kept(stopped, why))
    # the rule decides how many slots each build makes: only a slot that was started and
    # never counted is abandoned
    results = tuple(_result(c, request.launches, n, 0 if stopped else
                            _abandoned_started(c.records))
                    for c, n in ((base_camp, before[0]), (camp, before[1])))
    return SessionResult(results, stopped, why, compare_argv(base_path, out, rule.settings))


def _abandoned_started(records: Sequence[LaunchRecord]) -> int:
    """Slots that were started but never got a counted record (their attempts ran out)."""
    return len({r.index for r in records} - {r.index for r in records if r.counted})


