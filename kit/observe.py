"""One observation -> record path: what a target saw of one launch becomes the record's
outcome, last phase and crash fields through one precedence table, the same for every target
(docs/design.md, "One outcome table").

A launcher gathers an :class:`Observation` (the launch's own protocol events, how the process
ended, and any crash evidence that belongs to this launch's process and time window) and calls
:func:`observe`; it never decides an outcome itself. The table, first match wins:

===  =====================================================  ================================
 #   observed                                               outcome
===  =====================================================  ================================
 1   the launch could not be made or observed (``infra``:   ``infra-error`` (retried, never
     device not ready, transport lost before the app's      counted)
     fate was known, the tool around the app died)
 1b  the process was killed by a resource limit of its      ``infra-error``, persistent:
     environment (``SIGXFSZ``: RLIMIT_FSIZE, ``SIGXCPU``:    every retry meets it again, so
     RLIMIT_CPU; setrlimit(2), signal(7))                   the campaign stops
 2   the process died: a signal, an abort, a fatal          ``crashed``, whatever it printed
     exception, a kill by the system (``SIGNALED``,         before (``error`` then death, or
     ``DIED``), or it exited by itself before ``done``      ``done`` then a crash in
     without reporting an ``error``                          teardown); class from the evidence
 3   no ``done`` by the timeout, the process still alive    ``hung``
     (``TIMED_OUT``)
 4   an ``error`` line, the process alive or exited by      ``app-error``
     itself
 5   ``done``, but inference ran and its outputs are out    ``wrong-output`` (never a silent
     of tolerance or cannot be checked                      pass)
 6   ``done``, outputs checked (or no inference)            ``completed``
===  =====================================================  ================================

A launcher that saw ``ALIVE`` with neither ``done`` nor ``error`` nor a timeout has no
verdict for the launch: that is row 1 (an observation that ended too early).

The last phase reached is the furthest :class:`~kit.scenario.Phase` this launch's id reported
(phases are sequential; lines can arrive twice or out of order from two sources, such as a
log and the screen, so arrival order is not used).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import signal as _signal
from pathlib import Path
from typing import Any, TypeGuard, Callable, Iterable, Sequence

from .protocol import ProtocolEvent
from .records import PERSISTENT_INFRA_KEY, LaunchRecord, Outcome, SessionTiming
from .scenario import Phase

__all__ = ["ProcessEnd", "CrashEvidence", "Observation", "Observed", "observe",
           "fold_events", "EventFold", "crash_evidence", "make_record", "signal_name",
           "ScoreCheck", "RESOURCE_LIMIT_SIGNALS", "resource_limit_reason"]

#: ``check(scores) -> (ok, max_abs_diff)`` against the model set's expected scores
#: (:func:`kit.modelset.scores_match`).
ScoreCheck = Callable[[Sequence[float]], "tuple[bool, float]"]
_SIGNAL_NAMES = {s.value: s.name for s in _signal.Signals}
#: Signals the kernel sends when a process passes a resource limit of its environment, not
#: because the app is broken (setrlimit(2), signal(7)): number -> (limit, what it limits,
#: the shell command that lifts it). Same numbers on Linux and Darwin.
RESOURCE_LIMIT_SIGNALS: dict[int, tuple[str, str, str]] = {
    25: ("RLIMIT_FSIZE", "file size", "ulimit -f unlimited"),  # SIGXFSZ
    24: ("RLIMIT_CPU", "CPU time", "ulimit -t unlimited"),  # SIGXCPU
}


def resource_limit_reason(number: int, soft: str | None = None) -> str:
    """The infra-error message of a launch killed by a resource-limit signal (a key of
    :data:`RESOURCE_LIMIT_SIGNALS`); ``soft`` is the limit's value as the kit saw it (e.g.
    ``30 blocks of 1024 bytes``), if known. Raises ``KeyError`` for another signal."""
    limit, what, lift = RESOURCE_LIMIT_SIGNALS[number]
    value = f" ({soft})" if soft else ""
    return (f"killed by {signal_name(number)}: the {what} limit {limit}{value} was reached, "
            f"not an app crash; every retry meets it: run `{lift}`, then resume")


def signal_name(number: int | None) -> str | None:
    """``SIGSEGV`` for 11 and so on (``SIG<n>`` for numbers this OS does not name)."""
    return None if number is None else _SIGNAL_NAMES.get(number, f"SIG{number}")


class ProcessEnd(str, enum.Enum):
    """How the app's process ended, as far as the target could tell."""

    EXITED = "exited"  #: exited by itself with an exit status (``exit_code``)
    SIGNALED = "signaled"  #: ended by a signal the kit did not send (``signal``)
    DIED = "died"  #: gone, cause unknown to the target (mobile: pid gone, exit-info, a report)
    ALIVE = "alive"  #: still running when the observation ended (the kit stops it after)
    TIMED_OUT = "timed-out"  #: still running at the launch's timeout; the kit killed it
    LOST = "lost"  #: the target lost sight of it (transport gone) before its fate was known

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class CrashEvidence:
    """A crash report that belongs to this launch's process and time window.

    Attributes:
        crash: the parsed report (:class:`kit.crash.CrashRecord`) as its dict, or ``None``.
        crash_class: its class (:class:`kit.crash.CrashClass` value), or ``None``.
        signature: its signature, or ``None``.
        signal: the signal number the report names (fills the record's when the target did
            not see one), or ``None``.
        note: what the target says about the evidence (e.g. "no crash report for pid 4242
            appeared within 8 s"); kept as the record's ``error`` when the app printed none.
    """

    crash: dict[str, Any] | None = None
    crash_class: str | None = None
    signature: str | None = None
    signal: int | None = None
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class Observation:
    """Everything a target observed of one launch.

    Attributes:
        events: this launch id's protocol events, in arrival order (duplicates allowed).
        end: how the process ended (:class:`ProcessEnd`).
        timeout_s: the launch's timeout (for the ``hung`` message).
        infer: whether the scenario runs inference (outputs must then be checked).
        exit_code: the exit status for ``EXITED``.
        signal: the signal number for ``SIGNALED`` (or ``DIED`` when the platform said).
        crash: crash evidence for this launch, or ``None``.
        infra: why the launch could not be made or observed; set -> ``infra-error``.
        persistent: with ``infra``, every retry would fail the same way (the campaign
            stops; :data:`kit.records.PERSISTENT_INFRA_KEY`).
        check_scores: the kit's own check of the reported scores against the model set
            (``None`` when the kit has no expected scores; the app's ``ok`` is used then).
        killed_note: how the kit ended a ``TIMED_OUT`` process (``killed``,
            ``force-stopped``, ``terminated``).
    """

    events: tuple[ProtocolEvent, ...]
    end: ProcessEnd
    timeout_s: float
    infer: bool
    exit_code: int | None = None
    signal: int | None = None
    crash: CrashEvidence | None = None
    infra: str | None = None
    persistent: bool = False
    check_scores: ScoreCheck | None = None
    killed_note: str = "killed"


@dataclasses.dataclass(frozen=True)
class EventFold:
    """One launch's protocol events folded into record fields (:func:`fold_events`).

    ``fields`` holds every extra key of the events (later events override earlier ones);
    ``error`` is the first ``error`` event's message; ``ok``/``max_diff`` are the app's own
    score check (``None`` when it reported none).
    """

    phases: dict[str, float]
    last_phase: str | None
    error: str | None
    sessions: list[SessionTiming]
    ort_version: str | None
    eps: list[str]
    scores: list[float]
    ok: bool | None
    max_diff: float | None
    xnnpack_nodes: dict[str, Any] | None
    fields: dict[str, Any]

    @property
    def done(self) -> bool:
        return Phase.DONE.value in self.phases


def _finite(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value)


def _placement_summary(placement: Any) -> dict[str, Any] | None:
    """The host workload's per-session ``placement`` (ORT's verbose "Node placements")
    summed per EP."""
    if not isinstance(placement, list):
        return None
    totals: dict[str, int] = {}
    for entry in placement:
        nodes = entry.get("nodes") if isinstance(entry, dict) else None
        for ep, count in (nodes or {}).items():
            if isinstance(ep, str) and isinstance(count, int) and not isinstance(count, bool):
                totals[ep] = totals.get(ep, 0) + count
    return {"source": "ORT verbose 'Node placements' log", "totals": totals,
            "per_session": placement}


def fold_events(events: Iterable[ProtocolEvent]) -> EventFold:
    """Fold one launch's events into record fields; never raises on odd field values (a
    malformed item is skipped)."""
    phases: dict[str, float] = {}
    fields: dict[str, Any] = {}
    error: str | None = None
    for event in events:
        if event.phase == "error":
            if error is None:
                message = event.fields.get("message")
                error = str(message) if message is not None else "error"
            continue
        phases.setdefault(event.phase, event.t_ms)
        fields.update(event.fields)
    last = max((Phase(p) for p in phases), key=lambda p: p.order, default=None)
    sessions = []
    for item in fields.get("sessions") or []:
        try:
            sessions.append(SessionTiming(i=int(item["i"]), model=str(item["model"]),
                                          start_ms=float(item["start_ms"]),
                                          end_ms=float(item["end_ms"])))
        except (KeyError, TypeError, ValueError):
            continue
    raw_scores = fields.get("scores")
    scores = [float(s) for s in raw_scores if _finite(s)] if isinstance(raw_scores, list) else []
    ok = fields.get("ok") if isinstance(fields.get("ok"), bool) else None
    diff = fields.get("max_diff")
    nodes = _placement_summary(fields.get("placement"))
    if nodes is None and isinstance(fields.get("xnnpack_nodes"), dict):
        nodes = fields["xnnpack_nodes"]
    eps = fields.get("eps")
    version = fields.get("ort_version")
    return EventFold(phases=phases, last_phase=last.value if last is not None else None,
                     error=error, sessions=sessions,
                     ort_version=version if isinstance(version, str) else None,
                     eps=[str(e) for e in eps] if isinstance(eps, list) else [],
                     scores=scores, ok=ok, max_diff=float(diff) if _finite(diff) else None,
                     xnnpack_nodes=nodes, fields=fields)


@dataclasses.dataclass(frozen=True)
class Observed:
    """What :func:`observe` decided: the record fields that follow from an observation."""

    outcome: Outcome
    fold: EventFold
    error: str | None
    exit_code: int | None
    signal: int | None
    max_score_diff: float | None
    crash: dict[str, Any] | None
    crash_class: str | None
    signature: str | None
    persistent: bool = False

    def record_fields(self) -> dict[str, Any]:
        """Keyword arguments for :class:`~kit.records.LaunchRecord`."""
        f = self.fold
        return {"outcome": self.outcome, "last_phase": f.last_phase, "phases": dict(f.phases),
                "sessions": list(f.sessions), "ort_version": f.ort_version,
                "eps": list(f.eps), "xnnpack_nodes": f.xnnpack_nodes,
                "scores": list(f.scores), "max_score_diff": self.max_score_diff,
                "exit_code": self.exit_code, "signal": self.signal,
                "signal_name": signal_name(self.signal), "error": self.error,
                "crash": self.crash, "crash_class": self.crash_class,
                "signature": self.signature}


def _check_outputs(obs: Observation, fold: EventFold) -> tuple[bool, float | None, str | None]:
    """``(ok, max_abs_diff, why_not)`` of a launch that reached ``done``."""
    if not obs.infer:
        return True, None, None
    if Phase.INFERENCE_DONE.value not in fold.phases:
        return False, None, "done without inference-done: the outputs were never reported"
    if fold.scores and obs.check_scores is not None:
        ok, diff = obs.check_scores(fold.scores)
        diff_out = diff if math.isfinite(diff) else None
        if not ok:
            return False, diff_out, ("the scores are not within the model set's tolerance"
                                     if diff_out is not None else
                                     f"{len(fold.scores)} scores reported, not the expected "
                                     f"number")
        return True, diff_out, None
    if fold.ok is not None:
        return fold.ok, fold.max_diff, (None if fold.ok else
                                        "the app's own score check failed")
    return False, None, ("inference ran but its outputs cannot be checked (no scores the "
                         "kit can check, and no ok from the app)")


def observe(obs: Observation) -> Observed:
    """Apply the outcome table (module doc) to one observation. Never raises."""
    fold = fold_events(obs.events)
    evidence = obs.crash or CrashEvidence()
    signal = obs.signal if obs.signal is not None else evidence.signal

    def result(outcome: Outcome, error: str | None, diff: float | None = None,
               crash: bool = False, persistent: bool = False) -> Observed:
        return Observed(outcome=outcome, fold=fold, error=error, persistent=persistent,
                        exit_code=obs.exit_code if obs.end is ProcessEnd.EXITED else None,
                        signal=signal if outcome is Outcome.CRASHED else None,
                        max_score_diff=diff,
                        crash=evidence.crash if crash else None,
                        crash_class=evidence.crash_class if crash else None,
                        signature=evidence.signature if crash else None)

    if obs.infra is not None:
        return result(Outcome.INFRA_ERROR, obs.infra, persistent=obs.persistent)
    died = obs.end in (ProcessEnd.SIGNALED, ProcessEnd.DIED)
    if died and signal in RESOURCE_LIMIT_SIGNALS:
        return result(Outcome.INFRA_ERROR, resource_limit_reason(signal), persistent=True)
    exited_early = (obs.end is ProcessEnd.EXITED and not fold.done and fold.error is None)
    exited_badly = (obs.end is ProcessEnd.EXITED and fold.done and obs.exit_code not in (0, None))
    if died or exited_early or exited_badly:
        why: str | None
        if fold.error is not None:
            why = fold.error
        elif died:
            why = evidence.note
        else:
            status = obs.exit_code
            why = (f"exited with status {status} after done" if exited_badly else
                   f"exited with status {status} before done")
        return result(Outcome.CRASHED, why, crash=True)
    if obs.end is ProcessEnd.LOST:
        return result(Outcome.INFRA_ERROR, "the target lost sight of the app before its fate "
                                           "was known")
    if obs.end is ProcessEnd.TIMED_OUT and not fold.done:
        return result(Outcome.HUNG, f"no done within {obs.timeout_s:g} s; {obs.killed_note}")
    if fold.error is not None:
        return result(Outcome.APP_ERROR, fold.error)
    if not fold.done:
        return result(Outcome.INFRA_ERROR, "the launch ended without done, error, death or "
                                           "timeout")
    ok, diff, why = _check_outputs(obs, fold)
    return result(Outcome.COMPLETED if ok else Outcome.WRONG_OUTPUT, why, diff)


def crash_evidence(text: str, artifacts_dir: Path, artifacts_rel: str, filename: str, *,
                   hint: str | None = None, host_signal: int | None = None,
                   note: str | None = None, refine: Any = None) -> tuple[CrashEvidence, str]:
    """Keep a crash report as ``artifacts/<id>/<filename>``, parse it (:func:`kit.crash.
    parse_text`, or :func:`kit.crash.parse_host` with ``host_signal``), pass the record
    through ``refine`` when given (e.g. symbolization: a function of the record that
    returns the record to classify) and classify it.

    Returns:
        The evidence and the artifact's path relative to the campaign. A parser or rule
        failure (a kit bug) gives evidence of class ``unparsed`` with the failure as its
        note, never an exception: a finished launch's record must not be lost.
    """
    from . import crash as crashlib

    (artifacts_dir / filename).write_text(text)
    rel = f"{artifacts_rel}/{filename}"
    try:
        record = (crashlib.parse_host(host_signal, text) if host_signal is not None
                  else crashlib.parse_text(text, hint=hint))
        record = dataclasses.replace(record, raw_artifact=rel)
        if refine is not None:
            record = refine(record)
        verdict = crashlib.classify(record)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return CrashEvidence(crash_class="unparsed", note=f"crash analysis failed: {exc!r}"), rel
    return CrashEvidence(crash=record.to_dict(), crash_class=str(verdict.crash_class),
                         signature=verdict.signature, signal=record.signal, note=note), rel


def make_record(ctx: Any, *, target: str, device: str, observation: Observation,
                started_at: str, wall_ms: float, artifacts: Sequence[str],
                **payloads: Any) -> LaunchRecord:
    """The launch record of one observation: :func:`observe` plus the launch's identity
    (``ctx``: a :class:`kit.launch.LaunchContext`) and the target's payloads (``race``,
    ``android``, ``pid``... as :class:`~kit.records.LaunchRecord` fields; others go to
    ``extra``)."""
    observed = observe(observation)
    names = {f.name for f in dataclasses.fields(LaunchRecord)}
    known = {k: v for k, v in payloads.items() if k in names and k != "extra"}
    extra = dict(payloads.get("extra") or {})
    extra.update({k: v for k, v in payloads.items() if k not in names})
    if observed.persistent:
        extra[PERSISTENT_INFRA_KEY] = True
    return LaunchRecord(launch_id=ctx.launch_id, index=ctx.index, attempt=ctx.attempt,
                        label=ctx.label, target=target, device=device,
                        scenario=ctx.scenario.to_url(), started_at=started_at,
                        wall_ms=wall_ms, artifacts=list(artifacts), extra=extra,
                        **observed.record_fields(), **known)
