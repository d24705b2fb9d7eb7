"""Crash records: one normalised shape for every platform's crash report (DESIGN.md).

Parsers (in this package) turn raw text into a :class:`CrashRecord`; they never raise on bad
crash text, and say in ``notes`` what they could not read.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Frame", "CrashRecord"]


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


@dataclasses.dataclass(frozen=True)
class CrashRecord:
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (frames as a list of dicts)."""
        data = dataclasses.asdict(self)
        data["frames"] = [dataclasses.asdict(f) for f in self.frames]
        data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CrashRecord":
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["frames"] = tuple(Frame(**f) for f in data.get("frames") or ())
        kwargs["notes"] = tuple(data.get("notes") or ())
        return cls(**kwargs)
