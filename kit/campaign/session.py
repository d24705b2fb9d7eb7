"""The campaign session: one typed request in, one or two campaigns made, progress and rule
events out through an observer. The CLI turns arguments into a :class:`CampaignRequest` and
renders what the :class:`SessionObserver` hears; the pytest plugin builds the request
directly.

A session, in order (what is there is checked before anything is made, so a refused request
changes nothing):

1. check the request (label, directories, rule settings) and, with ``--until-verdict``
   against a finished baseline, build the stopping rule;
2. take the campaign's lock (two processes never write one campaign);
3. on resume, check that the campaign is this request's (label, target, scenario, rule);
4. prepare the target (:meth:`kit.targets.base.Target.prepare`) and, on resume, check that
   its build and launch options are the campaign's;
5. make (or reopen) the campaign with its whole ``campaign.json``, open the target, run the
   launches (one campaign, or two interleaved), close the target, record the provenance the
   target learned (``finish``) and how the rule ended;
6. say how many planned launches were abandoned, and with which exit code.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any, Sequence

from ..analysis.sequential import InterleavedRule, StopRule, make_stop_rule
from ..analysis.sprt import SLOW_RULE_LAUNCHES
from ..analysis.verdict import RACE_DETECTED, RACE_WITNESSED, count_target
from .._bounded import describe_path, path_kind
from ..errors import UsageError
from ..records import LaunchRecord
from ..targets.base import PreparedTarget, get_target
from .interleave import Arm, run_interleaved
from .loop import abandoned_slots, run_campaign
from .meta import CampaignMeta, PairMeta, RuleMeta
from .request import (CampaignRequest, CampaignResult, RuleRequest, SessionObserver,
                      SessionResult, compare_argv, resume_command)
from .store import CampaignStore, check_label, check_out_dir, load_campaign, prepare_store

__all__ = ["RuleRequest", "CampaignRequest", "SessionObserver", "CampaignResult",
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


def _check_rule(request: CampaignRequest, options: Sequence[dict[str, Any]]) -> None:
    """Refuse rule settings that cannot work, before anything is made."""
    rule = request.rule
    assert rule is not None
    if not str(rule.baseline).strip():
        raise UsageError("--until-verdict is empty", "give the baseline campaign's directory")
    if Path(rule.baseline).resolve() == Path(request.out).resolve():
        raise UsageError(f"--until-verdict names this run's own --out ({request.out})",
                         "give the baseline campaign's directory")
    for opts in options:
        witness = opts.get("witness", f"off: the {request.target} target has no race witness")
        if rule.settings.signature == RACE_WITNESSED and witness != "on":
            raise UsageError(f"--signature race-witnessed counts only launches the race "
                             f"witness watched, and this run has none ({witness})",
                             "run with the witness on the host, or give a crash class as "
                             "--signature")
        if rule.settings.signature == RACE_DETECTED and not opts.get("detector"):
            raise UsageError("--signature race-detected counts only launches run under the "
                             "race detector, and this run has none",
                             "add --detector drd (host), or give a crash class as "
                             "--signature")


def _check_same_setup(store: CampaignStore, meta: CampaignMeta, build: dict[str, Any],
                      options: dict[str, Any]) -> None:
    """Refuse to resume a campaign with another build or other launch options (a campaign
    holds launches of one setup: ``campaign.json`` describes them all)."""
    changed = []
    # options first: they are what the user typed (--poison, --witness...)
    for section, new in (("options", options), ("build", build)):
        old = getattr(meta, section)
        for key, value in new.items():
            if key in old and old[key] != value and key != "ort_versions_reported":
                changed.append(f"{section}.{key} was {old[key]!r}, now {value!r}")
    if changed:
        raise UsageError(f"cannot resume {store.path} with other settings: {changed[0]}"
                         + (f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""),
                         "resume with the campaign's own options, or choose another --out")


def _check_resumed_rule(store: CampaignStore, meta: CampaignMeta,
                        rule: RuleRequest | None) -> None:
    kept = meta.until_verdict
    if kept is None:
        if rule is not None:
            raise UsageError(f"cannot resume {store.path} under --until-verdict: it was "
                             f"started without a rule", "resume without it, or start a new "
                                                        "campaign")
        return
    if rule is None:
        raise UsageError(f"cannot resume {store.path} without its rule (--until-verdict "
                         f"{kept.baseline})", "resume without rule options: they are taken "
                                              "from the campaign")
    s = rule.settings
    mine = {"until_verdict": str(Path(rule.baseline).resolve()), "signature": s.signature,
            "alpha": s.alpha, "ceiling": s.ceiling, "beta": rule.beta,
            "design_rate": rule.design(meta.launches).design_rate}
    theirs = {"until_verdict": str(Path(kept.baseline).resolve()), "signature": kept.signature,
              "alpha": kept.alpha, "ceiling": kept.ceiling, "beta": kept.beta,
              "design_rate": kept.design_rate}
    for key, value in theirs.items():
        if mine[key] != value:
            raise UsageError(f"cannot resume {store.path} under another rule: its "
                             f"--{key.replace('_', '-')} was {value!r}, now {mine[key]!r}",
                             "resume without the --until-verdict options, or start a new "
                             "campaign")
    if kept.interleaved != rule.interleaved:
        raise UsageError(f"cannot resume {store.path} "
                         f"{'without' if kept.interleaved else 'with'} a baseline build: it "
                         f"was started {'interleaved' if kept.interleaved else 'against a finished baseline'}",
                         "resume with the campaign's own options")


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


def _lock(store: CampaignStore, made: list[_Made]) -> None:
    made.append(_Made(store.path))
    store.lock()


def run_session(request: CampaignRequest, observer: SessionObserver) -> SessionResult:
    """Run one request (module doc).

    Raises:
        UsageError: a bad request, a campaign of another setup, a campaign in use.
        InfraError: the target could not be prepared, or a record could not be written.
        KeyboardInterrupt: after the launches in flight are stopped; every finished launch
            is kept and ``--resume`` goes on.
    """
    check_label(request.label)
    if not str(request.out).strip() or str(request.out) in (".", ""):
        raise UsageError("--out is empty", "give the campaign's directory, e.g. runs/baseline")
    target = get_target(request.target)
    out = Path(request.out)
    store = CampaignStore(out)
    stores: list[CampaignStore] = [store]
    made: list[_Made] = []
    try:
        if request.rule is not None and request.rule.interleaved:
            base_store = CampaignStore(request.rule.baseline)
            stores.append(base_store)
            return _run_interleaved(request, target, store, base_store, observer, made)
        return _run_single(request, target, store, observer, made)
    except BaseException:
        for m in made:
            m.undo()
        raise
    finally:
        for s in stores:
            s.unlock()


def _open_for_run(request: CampaignRequest, store: CampaignStore, made: list[_Made]
                  ) -> CampaignMeta | None:
    """Lock ``store``; check what is there. Returns its meta on resume, else ``None``."""
    holder = store.writer_pid()
    if holder is not None:  # named before anything else is said about the directory
        store.lock()  # raises, naming the holder
    if not request.resume:
        check_out_dir(store.path)
    _lock(store, made)
    if not request.resume:
        check_out_dir(store.path)  # again, holding the lock: nobody made one since
        return None
    meta = store.resumable_meta()
    for key, want in (("label", request.label), ("target", request.target),
                      ("scenario", request.scenario.key())):
        if getattr(meta, key) != want:
            raise UsageError(f"cannot resume {store.path}: its {key} is "
                             f"{getattr(meta, key)!r}, not {want!r}",
                             "resume with the same options, or choose another --out")
    _check_resumed_rule(store, meta, request.rule)
    return meta


def _setup_fields(prepared: PreparedTarget) -> dict[str, Any]:
    return {"build": prepared.build, "devices": prepared.devices, "options": prepared.options}


def stop_rule_for(rule: RuleRequest, target: str | None, launches: int) -> StopRule:
    """The stopping rule of a run of ``launches`` on ``target`` against the finished
    baseline ``rule.baseline``.

    Raises:
        UsageError: the baseline is missing, of another target, without a positive control,
            or too strong a demand for ``launches`` (see
            :func:`kit.analysis.sequential.make_stop_rule`).
    """
    baseline = load_campaign(rule.baseline)
    if target is not None and baseline.meta.target != target:
        raise UsageError(f"the baseline {rule.baseline} ran on target "
                         f"{baseline.meta.target!r}, this run on {target!r}: compare refuses "
                         f"such a pair", "give a baseline campaign of the same target")
    design = rule.design(launches)
    return make_stop_rule(baseline, rule.settings, beta=rule.beta,
                          design_rate=design.design_rate, max_launches=design.max_launches)


def _rule_meta(meta: dict[str, Any]) -> RuleMeta:
    return RuleMeta.from_dict(meta, "until_verdict")


def _run_single(request: CampaignRequest, target: Any, store: CampaignStore,
                observer: SessionObserver, made: list[_Made]) -> SessionResult:
    meta = _open_for_run(request, store, made)
    prepared = target.prepare(request.config, request.scenario, observer.note)
    should_stop: StopRule | None = None
    if request.rule is not None:  # before the campaign is made: a bad rule leaves nothing
        _check_rule(request, [prepared.options])
        if request.launches >= SLOW_RULE_LAUNCHES:
            observer.note(f"until-verdict: computing the rule's exact thresholds for "
                          f"{request.launches} launches (this can take a minute)")
        should_stop = stop_rule_for(request.rule, request.target, request.launches)
    kept = {} if should_stop is None else {"until_verdict": _rule_meta(
        should_stop.to_meta(str(request.rule.baseline), None, "not finished"))}
    # build, options and rule go into campaign.json as it is made, so that a kill -9 at any
    # moment leaves a campaign that --resume continues as it was started
    if meta is not None:
        _check_same_setup(store, meta, prepared.build, prepared.options)
    store_, records = prepare_store(store.path, label=request.label, target=request.target,
                                    scenario=request.scenario, launches=request.launches,
                                    resume=request.resume,
                                    meta_extra={**_setup_fields(prepared), **kept})
    if meta is not None:
        from .store import update_meta

        update_meta(store, launches=request.launches, **_setup_fields(prepared), **kept)
    del store_
    observer.note(f"{request.target} campaign {request.label}: {request.scenario.describe()} "
                  f"-> {store.path}")
    if should_stop is not None:
        _rule_notes(request, should_stop, prepared.options, observer)
    prepared.open()
    try:
        watcher = _Seeded(observer, request.label, request.launches, records)
        all_records = run_campaign(store, records, prepared.launchers, label=request.label,
                                   scenario=request.scenario, launches=request.launches,
                                   timeout_s=request.timeout_s, observer=watcher,
                                   should_stop=should_stop, retry=request.retry)
    finally:
        try:
            learned = prepared.finish(list(load_campaign(store.path).records))
        finally:
            prepared.close()
        if learned:
            from .store import update_meta

            update_meta(store, build=learned)
    stopped = why = compare = None
    if should_stop is not None:
        stopped, why = should_stop.decision([r for r in all_records if r.counted])
        from .store import update_meta

        update_meta(store, until_verdict=_rule_meta(
            should_stop.to_meta(str(request.rule.baseline), stopped, why)))
        compare = compare_argv(request.rule.baseline, store.path, should_stop.settings)
    # a run its rule stopped needs no more launches: none of the rest is abandoned
    lost = 0 if stopped else len(abandoned_slots(all_records, request.launches))
    return SessionResult((_result(store.path, request.label, request.launches, all_records,
                                  len(records), lost),), stopped, why, compare)


def _result(path: Path, label: str, planned: int, records: Sequence[LaunchRecord],
            before: int, abandoned: int) -> CampaignResult:
    counted = len({r.index for r in records if r.counted})
    new = records[before:]
    return CampaignResult(path, label, planned, counted, abandoned,
                          sum(1 for r in new if not r.counted))


def _rule_notes(request: CampaignRequest, rule: StopRule, options: dict[str, Any],
                observer: SessionObserver) -> None:
    from ..analysis.summary import unfinished_note
    from ..analysis.verdict import option_differences

    assert request.rule is not None
    observer.note(f"until-verdict against {request.rule.baseline} ({rule.baseline_events}/"
                  f"{rule.baseline_n}): {rule.design.describe()}")
    base = load_campaign(request.rule.baseline)
    unfinished = unfinished_note(base)
    if unfinished:
        observer.note(f"note: the baseline {unfinished}; the rule takes its counts as they "
                      f"stand")
    differ = option_differences(base.meta.options, options)
    if differ:
        observer.note(f"note: the baseline ran with other launch options ({'; '.join(differ)})"
                      f": the verdict will compare them as well as the builds")


def _check_baseline_dir(base: CampaignStore, meta: CampaignMeta | None, out: Path,
                        request: CampaignRequest) -> None:
    """Refuse an interleaved run's baseline directory that holds a campaign it cannot
    continue: another target or scenario, more launches planned than ``--launches``, one
    already finished (then the run is an ordinary ``--until-verdict`` against it), or the
    baseline of another interleaved run."""
    if meta is None:
        return
    flag = f"--until-verdict {base.path}"
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
    made = len({r.index for r in base.iter_records()})
    if made >= meta.launches:
        raise UsageError(f"{flag} is a finished campaign ({made} of {meta.launches} "
                         f"launches): no baseline launch is left to interleave",
                         "drop the baseline build option to run against it as it is")


def _run_interleaved(request: CampaignRequest, target: Any, store: CampaignStore,
                     base_store: CampaignStore, observer: SessionObserver,
                     made: list[_Made]) -> SessionResult:
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
    out = store.path
    meta = _open_for_run(request, store, made)  # this run's own campaign first
    base_path = base_store.path
    if path_kind(base_path) not in ("missing", "a directory"):
        raise UsageError(f"--until-verdict {base_path} {describe_path(base_path)}",
                         "choose a directory")
    _lock(base_store, made)
    base_meta = base_store.read_meta() if base_store.exists() else None
    if base_meta is None:
        check_out_dir(base_path, "--until-verdict")
    base_label = base_meta.label if base_meta is not None else "baseline"
    _check_baseline_dir(base_store, base_meta, out, request)
    if base_label == request.label:
        raise UsageError(f"the baseline and this run are both labelled {request.label!r}",
                         "give this run another --label, e.g. --label patched")
    candidate = target.prepare(request.config, request.scenario, observer.note)
    baseline = target.prepare(rule_req.baseline_config, request.scenario, observer.note)
    _check_rule(request, [baseline.options, candidate.options])
    if meta is not None:
        _check_same_setup(store, meta, candidate.build, candidate.options)
    if base_meta is not None:
        _check_same_setup(base_store, base_meta, baseline.build, baseline.options)

    def kept(stopped: bool | None, why: str) -> RuleMeta:  # absolute: cwd may change
        m = rule.to_meta(str(base_path.resolve()), stopped, why)
        return _rule_meta({**m, **rule_req.baseline_options})

    def pair(stopped: bool | None, why: str) -> PairMeta:
        return PairMeta.from_dict({"candidate": str(out.resolve()),
                                   **kept(stopped, why).to_dict()}, "interleaved")

    base_setup = {**_setup_fields(baseline), "launches": request.launches,
                  "interleaved": pair(None, "not finished")}
    cand_setup = {**_setup_fields(candidate), "launches": request.launches,
                  "until_verdict": kept(None, "not finished")}
    from .store import update_meta

    _, records = prepare_store(out, label=request.label, target=request.target,
                               scenario=request.scenario, launches=request.launches,
                               resume=meta is not None, meta_extra=cand_setup)
    if meta is not None:
        update_meta(store, **cand_setup)
    _, base_records = prepare_store(base_path, label=base_label, target=request.target,
                                    scenario=request.scenario, launches=request.launches,
                                    resume=base_meta is not None, meta_extra=base_setup,
                                    allow_pair_baseline=True)
    if base_meta is not None:
        update_meta(base_store, **base_setup)
    observer.note(f"{request.target} campaigns {base_label} -> {base_path} and "
                  f"{request.label} -> {out}, interleaved: {request.scenario.describe()}")
    observer.note(f"until-verdict, both builds at most {request.launches} launches: "
                  f"{rule.design.describe()}")
    arms = [Arm(s, r, p.launchers, lab, request.scenario, request.launches, request.timeout_s,
                request.retry)
            for s, r, p, lab in ((base_store, base_records, baseline, base_label),
                                 (store, records, candidate, request.label))]
    before = (len(base_records), len(records))
    for p in (baseline, candidate):
        p.open()
    try:
        watcher = _Seeded(observer, f"{base_label} + {request.label}", 2 * request.launches,
                          [*base_records, *records])
        result = run_interleaved(*arms, rule, observer=watcher)
    finally:
        for p, s in ((baseline, base_store), (candidate, store)):
            try:
                learned = p.finish(list(load_campaign(s.path).records))
            finally:
                p.close()
            if learned:
                update_meta(s, build=learned)
    sig = rule.settings.signature
    need_b, need_c, _ = rule.needs_counts(*count_target(result.baseline_records, sig),
                                          *count_target(result.candidate_records, sig))
    stopped = not (need_b or need_c)
    update_meta(base_store, interleaved=pair(stopped, result.why))
    update_meta(store, until_verdict=kept(stopped, result.why))
    # the rule decides how many slots each build makes: only a slot that was started and
    # never counted is abandoned
    results = (_result(base_path, base_label, request.launches, result.baseline_records,
                       before[0], 0 if stopped else _abandoned_started(result.baseline_records)),
               _result(out, request.label, request.launches, result.candidate_records,
                       before[1], 0 if stopped else _abandoned_started(result.candidate_records)))
    return SessionResult(results, stopped, result.why,
                         compare_argv(base_path, out, rule.settings))


def _abandoned_started(records: Sequence[LaunchRecord]) -> int:
    """Slots that were started but never got a counted record (their attempts ran out)."""
    return len({r.index for r in records} - {r.index for r in records if r.counted})


