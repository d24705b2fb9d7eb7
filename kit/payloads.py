"""The shapes a launch record carries, each a frozen dataclass with a stable JSON object:
the crash (:class:`CrashRecord`, its :class:`Frame` s and :class:`CrashClass`), the race
witness's observation (:class:`RacePayload`), the race detector's verdict
(:class:`DetectorPayload`) and the XNNPACK node placement (:class:`XnnpackNodes`).

Every payload reads back from its JSON with ``from_dict`` (types checked: a wrong one is a
one-line :class:`~kit.errors.DataError`), writes it with ``to_dict``, and is also a read-only
mapping over that same JSON object (``record.race["witnessed"]`` and
``record.race.witnessed`` say the same), so code that reads records as JSON keeps working.
Keys a payload does not know are kept in its ``extra`` and written back.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, Iterator

from ._fields import FieldReader, type_name
from .errors import DataError

__all__ = ["JsonView", "Frame", "CrashRecord", "CrashClass", "RacePayload", "DetectorPayload",
           "XnnpackNodes", "HoldPayload"]

_HINT = "`coldstart repair DIR` keeps the readable records (it backs up the file first)"


def _reader(data: Any, where: str) -> FieldReader:
    if not isinstance(data, Mapping):
        raise DataError(f"{where} must be an object, not {type_name(data)}", _HINT)
    return FieldReader(data, where, _HINT)


class JsonView(Mapping):  # type: ignore[type-arg]
    """A read-only mapping over a payload's :meth:`to_dict` (subclasses define it)."""

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonView):
            return type(self) is type(other) and self.to_dict() == other.to_dict()
        if isinstance(other, Mapping):
            return self.to_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a JSON object: compared, not hashed


class CrashClass(str, enum.Enum):
    """The closed set of crash classes (compares equal to its string value); the one type of
    ``crash_class`` everywhere (records, verdicts, reports)."""

    XNNPACK_ALLOCATOR_UAF = "xnnpack-allocator-uaf"
    OTHER_NATIVE_CRASH = "other-native-crash"
    ABORT = "abort"
    JS_ERROR = "js-error"
    ANR = "anr"
    OOM = "oom"
    UNPARSED = "unparsed"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class Frame:
    """One stack frame of the crashing thread, innermost first.

    Attributes:
        index: frame number as printed (``#00`` is 0).
        module: library or image name (``libonnxruntime.so``, ``base.apk!libfoo.so``), or
            ``None``.
        symbol: demangled symbol when the report has one, else ``None``.
        offset: offset into ``symbol`` (decimal on Android) or into the module, or ``None``.
        pc: relative pc / image offset as printed (hex string), or ``None``.
        build_id: GNU build-id or image UUID when given, else ``None``.
        path: the full mapping or image path as printed (``/data/app/.../base.apk``), or
            ``None``; ``module`` is its last component.
        file, line: source file and line when the report (or a symbolizer) gave them.
    """

    index: int
    module: str | None = None
    symbol: str | None = None
    offset: int | None = None
    pc: str | None = None
    build_id: str | None = None
    path: str | None = None
    file: str | None = None
    line: int | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class CrashRecord(JsonView):
    """One crash, whatever the platform.

    Attributes:
        platform: ``android``, ``ios``, ``macos`` or ``linux``.
        source: ``tombstone``, ``logcat-crash``, ``dropbox``, ``ips``, ``crash-text``,
            ``host-signal``, ``exit-info``, ... (what the text was).
        format: the detected format name (parser-specific, e.g. ``tombstone-logcat-brief``).
        kind: ``native``, ``java``, ``js``, ``anr``, ``oom`` or ``unknown``.
        signal: signal number (11) or ``None``; ``signal_name`` ``SIGSEGV``.
        exception: platform exception (``EXC_BAD_ACCESS``, ``java.lang.OutOfMemoryError``...).
        code: signal or exception code text (``SEGV_MAPERR``, ``KERN_INVALID_ADDRESS``).
        fault_address: hex string, or ``None`` when the report has none.
        pid, tid: process and crashing thread ids when known.
        process: process or app name; ``thread_name`` the crashing thread's name.
        abort_message: ``Abort message`` / ``asi`` text, when any.
        frames: crashing thread's frames, innermost first.
        notes: what the parser could not read, and why (never an exception).
        raw_artifact: path of the raw text kept as an artifact (relative to the campaign).
        message: the exception's or error's message (Java, JS, ObjC), or the ANR / kill
            reason, when any.
        cause: the tombstone's ``Cause:`` line (``null pointer dereference``,
            ``[GWP-ASan]: Use After Free ...``) or the Apple ``vmRegionInfo`` verdict.
        abi: ``arm64``, ``x86_64``... (tombstone ``ABI:``, Apple ``Code Type``/``arch``).
        timestamp: the report's own time stamp as printed, or ``None``.
        thread_index: the crashing thread's index in the report (Apple ``Thread N``,
            ``faultingThread``), when it has one.
        root_cause: a Java exception's root cause, its last ``Caused by:`` as
            ``type: message`` (the type alone when it has no message), or ``None``.
        cause_frames: the root cause's frames, innermost first (``frames`` are the outer
            exception's).
    """

    platform: str
    source: str
    format: str = "unknown"
    kind: str = "unknown"
    signal: int | None = None
    signal_name: str | None = None
    exception: str | None = None
    code: str | None = None
    fault_address: str | None = None
    pid: int | None = None
    tid: int | None = None
    process: str | None = None
    thread_name: str | None = None
    abort_message: str | None = None
    frames: tuple[Frame, ...] = ()
    notes: tuple[str, ...] = ()
    raw_artifact: str | None = None
    message: str | None = None
    cause: str | None = None
    abi: str | None = None
    timestamp: str | None = None
    thread_index: int | None = None
    root_cause: str | None = None
    cause_frames: tuple[Frame, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (frames as a list of dicts)."""
        data = dataclasses.asdict(self)
        data["frames"] = [dataclasses.asdict(f) for f in self.frames]
        data["cause_frames"] = [dataclasses.asdict(f) for f in self.cause_frames]
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "crash") -> "CrashRecord":
        """Inverse of :meth:`to_dict`; unknown keys are ignored.

        Raises:
            DataError: not an object, or a field of the wrong type (one line).
        """
        r = _reader(data, where)
        stacks: dict[str, list[Frame]] = {"frames": [], "cause_frames": []}
        for key, frames in stacks.items():
            for item in r.objs(key):
                f = FieldReader(item, f"{where}: {key}[]", _HINT)
                frames.append(Frame(index=f.int("index", 0), module=f.opt_str("module"),
                                    symbol=f.opt_str("symbol"), offset=f.opt_int("offset"),
                                    pc=f.opt_str("pc"), build_id=f.opt_str("build_id"),
                                    path=f.opt_str("path"), file=f.opt_str("file"),
                                    line=f.opt_int("line")))
        frames = stacks["frames"]
        return cls(platform=r.str("platform", "unknown"), source=r.str("source", "unknown"),
                   format=r.str("format", "unknown"), kind=r.str("kind", "unknown"),
                   signal=r.opt_int("signal"), signal_name=r.opt_str("signal_name"),
                   exception=r.opt_str("exception"), code=r.opt_str("code"),
                   fault_address=r.opt_str("fault_address"), pid=r.opt_int("pid"),
                   tid=r.opt_int("tid"), process=r.opt_str("process"),
                   thread_name=r.opt_str("thread_name"),
                   abort_message=r.opt_str("abort_message"), frames=tuple(frames),
                   notes=tuple(r.strs("notes")), raw_artifact=r.opt_str("raw_artifact"),
                   message=r.opt_str("message"), cause=r.opt_str("cause"),
                   abi=r.opt_str("abi"), timestamp=r.opt_str("timestamp"),
                   thread_index=r.opt_int("thread_index"),
                   root_cause=r.opt_str("root_cause"),
                   cause_frames=tuple(stacks["cause_frames"]))


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    return {k: v for k, v in data.items() if k not in names}


@dataclasses.dataclass(frozen=True, eq=False)
class RacePayload(JsonView):
    """``LaunchRecord.race``: what the host's race witness saw (docs/race.md).

    Attributes:
        available: the witness watched this launch; when false nothing is known (``reason``).
        witnessed: two or more allocator contexts reached ``xnn_initialize`` (the race).
        contexts: the distinct contexts, in arrival order (``0x`` hex).
        calls: one ``{"tid", "t_ns", "context"}`` per call, in arrival order.
        skew_us: arrival skew of the first two calls, in microseconds, or ``None``.
        reason: why the witness could not watch, or ``None``.
    """

    available: bool = False
    witnessed: bool = False
    contexts: tuple[str, ...] = ()
    calls: tuple[dict[str, Any], ...] = ()
    skew_us: float | None = None
    reason: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, where: str = "race") -> "RacePayload":
        r = _reader(data, where)
        return cls(available=bool(r.opt_bool("available")), witnessed=bool(r.opt_bool("witnessed")),
                   contexts=tuple(r.strs("contexts")), calls=tuple(r.objs("calls")),
                   skew_us=r.opt_num("skew_us"), reason=r.opt_str("reason"),
                   extra=_known(cls, data))

    def to_dict(self) -> dict[str, Any]:
        return {"available": self.available, "witnessed": self.witnessed,
                "contexts": list(self.contexts), "calls": [dict(c) for c in self.calls],
                "skew_us": self.skew_us, "reason": self.reason, **self.extra}


@dataclasses.dataclass(frozen=True, eq=False)
class DetectorPayload(JsonView):
    """``LaunchRecord.detector``: the race detector's answer for one host launch
    (:func:`kit.targets.host.detector.detector_payload`; docs/race.md, "The record").

    Attributes:
        tool, version: ``drd`` or ``helgrind`` and valgrind's version, or ``tsan`` and the
            compiler that instrumented the build (its ``xml`` key then names the text
            report, ``tsan-report.txt``).
        on_target: a data race on the XNNPACK allocator statics: ``True`` (with address
            evidence), ``False`` (the whole report read, both statics located, none on
            them) or ``None`` (unknown, see ``reason``).
        reason: why ``on_target`` is what it is.
        race_count, on_target_race_count: races reported, and those on the statics.
        races: the races kept (on-target first), each a dict with its stacks and segment.
        extra: the rest (evidence, completeness, the XML's artifact path...), as written.
    """

    tool: str | None = None
    version: str | None = None
    on_target: bool | None = None
    reason: str | None = None
    race_count: int = 0
    on_target_race_count: int = 0
    races: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, where: str = "detector") -> "DetectorPayload":
        r = _reader(data, where)
        races = tuple(r.objs("races"))
        return cls(tool=r.opt_str("tool"), version=r.opt_str("version"),
                   on_target=r.opt_bool("on_target"), reason=r.opt_str("reason"),
                   race_count=r.int("race_count", len(races)),
                   on_target_race_count=r.int("on_target_race_count", 0),
                   races=races, extra=_known(cls, data))

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "version": self.version, **self.extra,
                "race_count": self.race_count,
                "on_target_race_count": self.on_target_race_count,
                "races": [dict(x) for x in self.races], "on_target": self.on_target,
                "reason": self.reason}


@dataclasses.dataclass(frozen=True, eq=False)
class XnnpackNodes(JsonView):
    """``LaunchRecord.xnnpack_nodes``: evidence that the XNNPACK EP took nodes.

    Attributes:
        source: where the counts come from (the host: ORT's verbose "Node placements" log).
        totals: nodes per EP, summed over the sessions.
        per_session: one ``{"i", "model", "nodes": {ep: n}}`` per session.
    """

    source: str = ""
    totals: dict[str, int] = dataclasses.field(default_factory=dict)
    per_session: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, where: str = "xnnpack_nodes") -> "XnnpackNodes":
        r = _reader(data, where)
        totals = r.obj("totals")
        for key in totals:
            FieldReader(totals, f"{where}: totals", _HINT).int(key)
        return cls(source=r.str("source", ""), totals=dict(totals),
                   per_session=tuple(r.objs("per_session")), extra=_known(cls, data))

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "totals": dict(self.totals),
                "per_session": [dict(s) for s in self.per_session], **self.extra}


@dataclasses.dataclass(frozen=True, eq=False)
class HoldPayload(JsonView):
    """``LaunchRecord.hold``: what the host amplifier ``hold=MS`` did in one launch
    (kit/scenario.py; docs/race.md, "The hold"). Written only for a launch whose scenario
    asked for a hold.

    Attributes:
        ms: the hold asked for, in milliseconds (> 0).
        engaged: how many times a creating thread was held (the workload's
            ``COLDSTART-HOLD`` lines on stderr, written as each hold begins, and the
            ``hold`` field of ``sessions-created``; the larger count). 0: the allocator's
            creation line never came (another onnxruntime, a CPU-only scenario, a log level
            that drops it), so the launch is not eligible for a verdict with the hold.
        source: where ``engaged`` was read: ``stderr``, ``protocol`` or ``none``.
    """

    ms: int = 0
    engaged: int = 0
    source: str = "none"
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def held(self) -> bool:
        """True when at least one creating thread was held."""
        return self.engaged > 0

    @classmethod
    def from_dict(cls, data: Any, where: str = "hold") -> "HoldPayload":
        r = _reader(data, where)
        return cls(ms=r.int("ms", 0), engaged=r.int("engaged", 0),
                   source=r.str("source", "none"), extra=_known(cls, data))

    def to_dict(self) -> dict[str, Any]:
        return {"ms": self.ms, "engaged": self.engaged, "held": self.held,
                "source": self.source, **{k: v for k, v in self.extra.items() if k != "held"}}
