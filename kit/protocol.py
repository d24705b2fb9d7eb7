"""The app <-> driver protocol: one ``COLDSTART {json}`` line per phase.

Format (docs/design.md, "App <-> driver protocol"; version 1):

* a line holds the marker ``COLDSTART `` followed by one JSON object; anything before the
  marker (a logcat or unified-log prefix) is ignored, and so is trailing whitespace;
* required keys: ``v`` (int, protocol version, 1), ``id`` (the launch id the app was given),
  ``phase`` (one of :data:`kit.scenario.PHASES` or ``error``), ``t_ms`` (number, ms since
  the app's start, >= 0);
* ``sessions-created`` carries ``sessions``: ``[{"i", "model", "start_ms", "end_ms"}]``,
  ``eps`` (the EPs asked for) and ``ort_version`` (the ORT that actually loaded);
* ``inference-done`` carries ``scores`` (list of numbers), ``score`` and ``ok`` (within
  tolerance of ``models/expected.json``);
* ``error`` carries ``message``;
* other keys are allowed and kept (e.g. ``xnnpack_nodes``, ``race``).

The writer emits keys ``v, id, phase, t_ms`` first, then the rest in insertion order, with
no spaces (``json.dumps(separators=(',', ':'))``, which matches ``JSON.stringify``). Test
vectors shared with the React Native app live in ``kit/data/protocol_vectors.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, TypeGuard, Iterable, Iterator

from .scenario import PHASES

__all__ = ["MARKER", "VERSION", "ProtocolEvent", "ParseResult", "parse_line", "format_event",
           "iter_events", "vectors_path"]

MARKER = "COLDSTART "
VERSION = 1
_PHASES_AND_ERROR = PHASES + ("error",)


@dataclasses.dataclass(frozen=True)
class ProtocolEvent:
    """One parsed protocol line.

    Attributes:
        id: launch id the app reported.
        phase: a phase name or ``error``.
        t_ms: milliseconds since the app's start.
        fields: every other key of the JSON object (e.g. ``sessions``, ``scores``).
        v: protocol version.
    """

    id: str
    phase: str
    t_ms: float
    fields: dict[str, Any]
    v: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        """The event as the JSON object of its line (required keys first)."""
        return {"v": self.v, "id": self.id, "phase": self.phase, "t_ms": self.t_ms,
                **self.fields}


@dataclasses.dataclass(frozen=True)
class ParseResult:
    """What :func:`parse_line` found: an event, or ``None`` and the reason.

    ``reason`` is ``None`` for a valid line, ``"no marker"`` for lines that are not protocol
    lines at all, or a short description of what is wrong with a malformed one.
    """

    event: ProtocolEvent | None
    reason: str | None = None


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value)


def parse_line(line: str) -> ParseResult:
    """Parse one line of app output.

    Args:
        line: a raw line, possibly with a log prefix before the marker.

    Returns:
        A :class:`ParseResult`; never raises, whatever the input.
    """
    pos = line.find(MARKER)
    if pos < 0:
        return ParseResult(None, "no marker")
    payload = line[pos + len(MARKER):].strip()
    try:
        obj = json.loads(payload)
    except (ValueError, RecursionError):
        return ParseResult(None, "payload is not valid JSON")
    if not isinstance(obj, dict):
        return ParseResult(None, "payload is not a JSON object")
    v, launch_id, phase, t_ms = obj.get("v"), obj.get("id"), obj.get("phase"), obj.get("t_ms")
    if v != VERSION or isinstance(v, bool):
        return ParseResult(None, f"unsupported protocol version {v!r}")
    if not isinstance(launch_id, str) or not launch_id:
        return ParseResult(None, "missing or empty id")
    if phase not in _PHASES_AND_ERROR:
        return ParseResult(None, f"unknown phase {phase!r}")
    if not _number(t_ms) or t_ms < 0:
        return ParseResult(None, "t_ms is not a non-negative number")
    fields = {k: val for k, val in obj.items() if k not in ("v", "id", "phase", "t_ms")}
    return ParseResult(ProtocolEvent(id=launch_id, phase=phase, t_ms=t_ms, fields=fields, v=v))


def _plain_number(value: float) -> float | int:
    value = round(float(value), 3)
    return int(value) if value.is_integer() else value


def format_event(launch_id: str, phase: str, t_ms: float, **fields: Any) -> str:
    """Format one protocol line (without a newline).

    ``t_ms`` is rounded to 3 decimals and written as an integer when whole, as
    ``JSON.stringify`` does, so the Python and TypeScript writers produce the same bytes.

    Raises:
        ValueError: ``phase`` is not a phase or ``error``, or ``t_ms`` is negative.
    """
    if phase not in _PHASES_AND_ERROR:
        raise ValueError(f"unknown phase {phase!r}")
    if not _number(t_ms) or t_ms < 0:
        raise ValueError("t_ms must be a non-negative number")
    obj = {"v": VERSION, "id": launch_id, "phase": phase, "t_ms": _plain_number(t_ms),
           **fields}
    return MARKER + json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def iter_events(lines: Iterable[str], launch_id: str | None = None) -> Iterator[ProtocolEvent]:
    """Yield the valid events in ``lines``, only those of ``launch_id`` when it is given
    (stale lines from earlier launches are dropped)."""
    for line in lines:
        result = parse_line(line)
        if result.event is not None and (launch_id is None or result.event.id == launch_id):
            yield result.event


def vectors_path() -> str:
    """Path of the shared test vectors (a JSON file in the package's ``data`` folder)."""
    from importlib.resources import files

    return str(files("kit") / "data" / "protocol_vectors.json")
