"""Reading the race witness's output into a launch record's ``race`` field (issue #8).

The witness (``coldstart_witness.c`` next to this module) writes one JSON object per line to
the file named by ``COLDSTART_WITNESS_FILE`` (or, unset, to stderr after the prefix
``COLDSTART-WITNESS ``):

* ``{"event":"loaded","pid":P,"t_ns":T,"resolved":true}``: the library was preloaded;
  ``resolved`` says whether the real ``xnn_initialize`` was found behind it;
* ``{"event":"images","objects":[{"name":"...","base":"0x.."}, ...]}``: every object loaded
  when the witness was, with its load base (kept in :attr:`RaceObservation.images`);
* ``{"event":"xnn_initialize","seq":S,"tid":N,"t_ns":T,"allocator":"0x..",
  "context":"0x..","status":0}``: one call, with the arrival order ``seq``, the calling
  thread, its CLOCK_MONOTONIC arrival time in ns, the ``struct xnn_allocator*`` passed and
  that wrapper's ``context`` (onnxruntime's allocator) at entry, and the real call's status.

:func:`parse_witness` turns those lines into :class:`RaceObservation`, whose
:meth:`~RaceObservation.to_dict` is ``LaunchRecord.race``::

    {"available": bool, "witnessed": bool, "contexts": ["0x..", ...],
     "calls": [{"tid": int, "t_ns": int, "context": "0x.."}, ...],
     "skew_us": float | None, "reason": str | None}

``witnessed`` is true when two or more different contexts reached ``xnn_initialize`` in one
process: onnxruntime 1.21 publishes ``stored_allocator.get()`` into one static wrapper before
every call, and that value changes only when a second allocator was created, i.e. the
unsynchronised "is it null? create one" of onnxruntime#32461 was won by two threads.
``skew_us`` is the arrival skew between the first two calls (in arrival order), in
microseconds. When the witness could not watch (XNNPACK linked statically, witness off, the
library did not load), ``available`` is false with a ``reason`` and ``witnessed`` is false:
it never claims a race was absent.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Iterable

from ...._bounded import MiB, read_bytes_bounded
from ....errors import DataError, UsageError

__all__ = ["WitnessCall", "RaceObservation", "parse_witness", "read_witness_file",
           "unavailable", "STDERR_PREFIX", "ENV_FILE", "STATIC_REASON", "OFF_REASON"]

#: Prefix of the witness's lines when it writes to stderr (no ``COLDSTART_WITNESS_FILE``).
STDERR_PREFIX = "COLDSTART-WITNESS "
#: largest witness side file read back (a launch logs tens of calls, each ~200 bytes)
WITNESS_MAX_BYTES = 32 * MiB
#: Environment variable naming the witness's output file.
ENV_FILE = "COLDSTART_WITNESS_FILE"
#: Reason given when onnxruntime links XNNPACK statically (the mobile builds).
STATIC_REASON = ("onnxruntime links XNNPACK statically, so xnn_initialize cannot be "
                 "interposed: races are not observable on this runtime (absence not claimed)")
#: Reason given when the user turned the witness off.
OFF_REASON = "the race witness was turned off (--no-witness)"
_HEX_RE = re.compile(r"^0x[0-9a-f]{1,16}$")


@dataclasses.dataclass(frozen=True)
class WitnessCall:
    """One ``xnn_initialize`` call the witness saw.

    Attributes:
        seq: arrival order (0 first), from an atomic counter taken at entry.
        tid: the calling thread's kernel thread id.
        t_ns: CLOCK_MONOTONIC arrival time, ns.
        context: the allocator wrapper's ``context`` at entry, as ``0x`` + lowercase hex.
        allocator: the ``struct xnn_allocator*`` passed, same format.
        status: the real call's ``xnn_status`` (0 success; -1: the real one was not found).
    """

    seq: int
    tid: int
    t_ns: int
    context: str
    allocator: str
    status: int

    def to_dict(self) -> dict[str, Any]:
        """``{"tid", "t_ns", "context"}``: the record's shape of a call."""
        return {"tid": self.tid, "t_ns": self.t_ns, "context": self.context}


@dataclasses.dataclass(frozen=True)
class RaceObservation:
    """What the witness says about one launch.

    Attributes:
        available: the witness was loaded, found the real ``xnn_initialize`` and its output
            was read; when false, nothing is known about the race.
        calls: every call seen, in arrival order (by ``t_ns``, then ``seq``).
        reason: why it is unavailable, or a note about bad lines that were skipped.
        images: ``(name, load base)`` of every object loaded when the witness was (its
            ``images`` line; ``""`` is the main program); not part of :meth:`to_dict`.
    """

    available: bool
    calls: tuple[WitnessCall, ...] = ()
    reason: str | None = None
    images: tuple[tuple[str, int], ...] = ()

    @property
    def contexts(self) -> tuple[str, ...]:
        """Distinct allocator contexts, in order of first arrival."""
        return tuple(dict.fromkeys(c.context for c in self.calls))

    @property
    def witnessed(self) -> bool:
        """Two or more different contexts reached XNNPACK: the race happened."""
        return self.available and len(self.contexts) >= 2

    @property
    def skew_us(self) -> float | None:
        """Arrival skew between the first two calls, in microseconds (``None`` below 2)."""
        if not self.available or len(self.calls) < 2:
            return None
        return (self.calls[1].t_ns - self.calls[0].t_ns) / 1000.0

    def to_dict(self) -> dict[str, Any]:
        """The ``LaunchRecord.race`` dict (see the module doc)."""
        return {"available": self.available, "witnessed": self.witnessed,
                "contexts": list(self.contexts), "calls": [c.to_dict() for c in self.calls],
                "skew_us": self.skew_us, "reason": self.reason}


def unavailable(reason: str) -> dict[str, Any]:
    """``LaunchRecord.race`` for a launch the witness could not watch (``reason`` says why)."""
    return RaceObservation(available=False, reason=reason).to_dict()


def _as_call(obj: dict[str, Any]) -> WitnessCall | None:
    try:
        call = WitnessCall(seq=int(obj["seq"]), tid=int(obj["tid"]), t_ns=int(obj["t_ns"]),
                           context=str(obj["context"]), allocator=str(obj["allocator"]),
                           status=int(obj.get("status", 0)))
    except (KeyError, TypeError, ValueError):
        return None
    if not (_HEX_RE.match(call.context) and _HEX_RE.match(call.allocator)) or call.t_ns < 0:
        return None
    return call


def parse_witness(lines: Iterable[str]) -> RaceObservation:
    """Parse the witness's lines (a side file's, or stderr with :data:`STDERR_PREFIX`).

    Lines without the witness's JSON (other stderr output, a line cut by a crash) are
    skipped; the result's ``reason`` counts malformed witness lines. Never raises.

    Returns:
        ``available=False`` when no ``loaded`` line was seen (the library did not load) or
        the real ``xnn_initialize`` was not found; else every call in arrival order.
    """
    loaded: bool | None = None
    calls: list[WitnessCall] = []
    images: list[tuple[str, int]] = []
    bad = 0
    for raw in lines:
        line = raw.strip()
        at = line.find(STDERR_PREFIX)
        if at >= 0:
            line = line[at + len(STDERR_PREFIX):]
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if not isinstance(obj, dict):
            bad += 1
            continue
        event = obj.get("event")
        if event == "loaded":
            loaded = bool(loaded) or obj.get("resolved") is True
        elif event == "images" and not images:
            for item in obj.get("objects") or []:
                base = item.get("base") if isinstance(item, dict) else None
                if isinstance(base, str) and _HEX_RE.match(base):
                    images.append((str(item.get("name", "")), int(base, 16)))
        elif event == "xnn_initialize":
            call = _as_call(obj)
            if call is None:
                bad += 1
            else:
                calls.append(call)
    note = f"{bad} malformed witness line(s) skipped" if bad else None
    if loaded is None:
        return RaceObservation(False, reason="the race witness wrote nothing: it was not "
                                             "preloaded, or the process died before it loaded")
    if not loaded:
        return RaceObservation(False, reason="the race witness found no xnn_initialize "
                                             "behind it: XNNPACK is not a shared library here")
    calls.sort(key=lambda c: (c.t_ns, c.seq))
    return RaceObservation(True, tuple(calls), note, tuple(images))


def read_witness_file(path: Path) -> RaceObservation:
    """:func:`parse_witness` over a side file; a missing or unreadable file gives
    ``available=False`` with the reason. Never raises."""
    try:
        text = read_bytes_bounded(path, WITNESS_MAX_BYTES, what=path.name,
                                  missing=f"cannot read {path.name} (no such file)").decode(
            "utf-8", "replace")
    except UsageError as exc:
        return RaceObservation(False, reason=f"the race witness wrote nothing: {exc.message}")
    except DataError as exc:
        return RaceObservation(False, reason=f"the race witness is not read: {exc.message}")
    return parse_witness(text.splitlines())
