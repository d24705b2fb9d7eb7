"""Launch records: one line of ``launches.jsonl`` per launch (docs/design.md, "campaign").

A record is written by a target's launcher once the launch has ended and is never changed
afterwards. The JSON shape (schema version :data:`RECORD_VERSION`) is the dict of
:class:`LaunchRecord`; unknown keys are kept in ``extra`` so newer kits' records still load.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from .payloads import (CrashClass, CrashRecord, DetectorPayload, HoldPayload, RacePayload,
                       XnnpackNodes)

__all__ = ["Outcome", "LaunchRecord", "RECORD_VERSION", "SessionTiming", "overlap_ms",
           "PERSISTENT_INFRA_KEY"]

RECORD_VERSION = 1
#: The ``extra`` key (true) of an ``infra-error`` record that every retry would meet again
#: (a resource limit of the environment): the campaign stops instead of retrying.
PERSISTENT_INFRA_KEY = "infra_persistent"


class Outcome(str, enum.Enum):
    """How a launch ended (docs/design.md). Only ``infra-error`` is left out of every rate."""

    COMPLETED = "completed"  #: reached ``done`` with outputs within tolerance
    CRASHED = "crashed"  #: the process died (native crash, abort, kill by signal)
    APP_ERROR = "app-error"  #: the app reported an ``error`` phase (e.g. a rejected create)
    WRONG_OUTPUT = "wrong-output"  #: reached ``done`` but a score was out of tolerance
    HUNG = "hung"  #: no ``done`` before the timeout; the process was killed by the kit
    INFRA_ERROR = "infra-error"  #: the launch could not be made or observed; retried

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class SessionTiming:
    """One ``InferenceSession`` create as the app reported it: index ``i``, ``model`` name,
    ``start_ms`` and ``end_ms`` (ms since the app's start)."""

    i: int
    model: str
    start_ms: float
    end_ms: float


def overlap_ms(sessions: list[SessionTiming]) -> float:
    """How long all creates were in flight at once: ``min(end) - max(start)``, in ms
    (negative or zero: some create finished before another began; they never overlapped)."""
    if len(sessions) < 2:
        return 0.0
    return min(s.end_ms for s in sessions) - max(s.start_ms for s in sessions)


@dataclasses.dataclass(frozen=True)
class LaunchRecord:
    """One launch, as stored in ``launches.jsonl``.

    Attributes:
        launch_id: unique id, ``<label>-<index:05d>`` plus ``.r<attempt>`` on retries.
        index: 0-based slot in the campaign; a retried infra error keeps its index.
        attempt: 1 for the first try of ``index``, 2+ for retries after infra errors.
        label: the build label (``baseline``, ``patched``, ...).
        target: ``host``, ``android``, ``ios-sim``, ``ios-device`` or ``appium``.
        device: the device's id (serial, UDID, ``host:<hostname>``).
        scenario: the canonical scenario URL with this launch's id.
        outcome: see :class:`Outcome`.
        last_phase: last phase the app reported (``None``: not even ``start``).
        phases: phase name -> ``t_ms`` reported by the app.
        started_at: ISO 8601 UTC wall-clock time the launch began.
        wall_ms: host-side duration of the whole launch, in ms.
        sessions: per-create timings (``sessions-created``).
        ort_version: ORT version the app reported.
        eps: EPs the app asked for.
        xnnpack_nodes: evidence that XNNPACK took nodes (:class:`kit.payloads.XnnpackNodes`).
        scores: keyword scores the app reported; ``max_score_diff`` vs ``expected.json``.
        exit_code: the process's exit status when it exited normally.
        signal: the number of the signal that ended the process (``None`` if none).
        signal_name: e.g. ``SIGSEGV``.
        error: the app's ``error`` message, or why the launch is an infra error.
        crash: the crash record (:class:`kit.payloads.CrashRecord`), or ``None``.
        crash_class: :class:`kit.payloads.CrashClass` (``xnnpack-allocator-uaf``, ``abort``,
            ...; equal to its string); ``None`` for no crash.
        signature: the crash signature string, or ``None``.
        artifacts: paths relative to the campaign dir (``artifacts/<launch-id>/...``).
        race: the host race witness's observation (:class:`kit.payloads.RacePayload`), or
            ``None``.
        detector: the host race detector's answer (:class:`kit.payloads.DetectorPayload`),
            or ``None`` (written only when present).
        hold: what the host amplifier ``hold=MS`` did (:class:`kit.payloads.HoldPayload`:
            the hold asked for and how many times it engaged), or ``None`` for a launch that
            asked for no hold (written only when present).
        extra: the target's own details (``android``: pid, launch state, exit-info...;
            ``pid``/``crash_report`` on iOS; ``status_text`` on Appium) and any key this kit
            does not know, kept as JSON for forward compatibility.

    Payloads given as their JSON dicts are typed on construction.
    """

    launch_id: str
    index: int
    attempt: int
    label: str
    target: str
    device: str
    scenario: str
    outcome: Outcome
    last_phase: str | None = None
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    started_at: str = ""
    wall_ms: float = 0.0
    sessions: list[SessionTiming] = dataclasses.field(default_factory=list)
    ort_version: str | None = None
    eps: list[str] = dataclasses.field(default_factory=list)
    xnnpack_nodes: XnnpackNodes | None = None
    scores: list[float] = dataclasses.field(default_factory=list)
    max_score_diff: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    signal_name: str | None = None
    error: str | None = None
    crash: CrashRecord | None = None
    crash_class: CrashClass | None = None
    signature: str | None = None
    artifacts: list[str] = dataclasses.field(default_factory=list)
    race: RacePayload | None = None
    detector: DetectorPayload | None = None
    hold: HoldPayload | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.detector is None and isinstance(self.extra, dict) and "detector" in self.extra:
            extra = dict(self.extra)  # where the detector's payload was first kept
            object.__setattr__(self, "detector", extra.pop("detector"))
            object.__setattr__(self, "extra", extra)
        for name, kind in _PAYLOADS.items():
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                object.__setattr__(self, name, kind.from_dict(value, name))
        if self.crash_class is not None and not isinstance(self.crash_class, CrashClass):
            try:
                object.__setattr__(self, "crash_class", CrashClass(self.crash_class))
            except ValueError:
                from .errors import DataError

                raise DataError(f"crash_class {str(self.crash_class)[:40]!r} is not one of "
                                f"{', '.join(c.value for c in CrashClass)}",
                                _REPAIR_HINT) from None

    @property
    def counted(self) -> bool:
        """False for infra errors, which never enter a rate's denominator."""
        return self.outcome is not Outcome.INFRA_ERROR

    @property
    def create_overlap_ms(self) -> float | None:
        """:func:`overlap_ms` of the creates, or ``None`` with fewer than 2 timings."""
        return overlap_ms(self.sessions) if len(self.sessions) >= 2 else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``launches.jsonl`` (with ``"v": RECORD_VERSION``)."""
        out: dict[str, Any] = {"v": RECORD_VERSION}
        for field in dataclasses.fields(self):
            if field.name == "extra":
                continue
            value = getattr(self, field.name)
            if field.name in ("outcome", "crash_class") and value is not None:
                value = value.value
            elif field.name == "sessions":
                value = [dataclasses.asdict(s) for s in value]
            elif field.name in _PAYLOADS and value is not None:
                value = value.to_dict()
            elif field.name in ("detector", "hold"):
                continue  # written only when present
            out[field.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "launch record") -> "LaunchRecord":
        """Rebuild a record from :meth:`to_dict` output, checking every field's type.

        Raises:
            DataError: not an object, a required key missing, or a field of the wrong type
                (one line naming ``where`` and the field).
        """
        from ._fields import FieldReader, type_name
        from .errors import DataError

        if not isinstance(data, dict):
            raise DataError(f"{where} is not a JSON object but {type_name(data)}",
                            _REPAIR_HINT)
        r = FieldReader(data, where, _REPAIR_HINT)
        try:
            outcome = Outcome(data.get("outcome"))
        except ValueError:
            raise DataError(f"{where}: outcome {str(data.get('outcome'))[:40]!r} is not one of "
                            f"{', '.join(o.value for o in Outcome)}", _REPAIR_HINT) from None
        sessions = []
        for item in r.objs("sessions"):
            s = FieldReader(item, f"{where}: sessions[]", _REPAIR_HINT)
            sessions.append(SessionTiming(i=s.int("i"), model=s.str("model"),
                                          start_ms=s.num("start_ms"), end_ms=s.num("end_ms")))
        phases = r.obj("phases")
        for name in phases:
            FieldReader(phases, f"{where}: phases", _REPAIR_HINT).num(name)
        names = {f.name for f in dataclasses.fields(cls)}
        from .argtypes import MAX_ATTEMPTS, MAX_LAUNCHES

        return cls(launch_id=r.str("launch_id"), index=r.int("index", high=MAX_LAUNCHES - 1),
                   attempt=r.int("attempt", low=1, high=MAX_ATTEMPTS), label=r.str("label"),
                   target=r.str("target"), device=r.str("device"),
                   scenario=r.str("scenario"), outcome=outcome,
                   last_phase=r.opt_str("last_phase"),
                   phases={k: float(v) for k, v in phases.items()},
                   started_at=r.str("started_at", ""), wall_ms=r.num("wall_ms", 0.0),
                   sessions=sessions, ort_version=r.opt_str("ort_version"),
                   eps=r.strs("eps"),
                   xnnpack_nodes=_typed(XnnpackNodes, r.opt_obj("xnnpack_nodes"),
                                        f"{where}: xnnpack_nodes"),
                   scores=r.nums("scores"), max_score_diff=r.opt_num("max_score_diff"),
                   exit_code=r.opt_int("exit_code"), signal=r.opt_int("signal"),
                   signal_name=r.opt_str("signal_name"), error=r.opt_str("error"),
                   crash=_typed(CrashRecord, r.opt_obj("crash"), f"{where}: crash"),
                   crash_class=_crash_class(r.opt_str("crash_class"), where),
                   signature=r.opt_str("signature"), artifacts=r.strs("artifacts"),
                   race=_typed(RacePayload, r.opt_obj("race"), f"{where}: race"),
                   detector=_typed(DetectorPayload, r.opt_obj("detector"), f"{where}: detector"),
                   hold=_typed(HoldPayload, r.opt_obj("hold"), f"{where}: hold"),
                   extra={k: v for k, v in data.items() if k not in names and k != "v"})


_REPAIR_HINT = "`coldstart repair DIR` keeps the readable records (it backs up the file first)"
_PAYLOADS: dict[str, Any] = {"crash": CrashRecord, "race": RacePayload,
                             "detector": DetectorPayload, "xnnpack_nodes": XnnpackNodes,
                             "hold": HoldPayload}


def _crash_class(value: str | None, where: str) -> CrashClass | None:
    from .errors import DataError

    try:
        return None if value is None else CrashClass(value)
    except ValueError:
        raise DataError(f"{where}: crash_class {str(value)[:40]!r} is not one of "
                        f"{', '.join(c.value for c in CrashClass)}", _REPAIR_HINT) from None


def _typed(kind: Any, value: dict[str, Any] | None, where: str) -> Any:
    return None if value is None else kind.from_dict(value, where)
