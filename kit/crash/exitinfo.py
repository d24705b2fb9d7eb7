"""``dumpsys activity exit-info`` entries: one per process death (Android 11+, API 30+).

Layout from AOSP ``ApplicationExitInfo.dump()`` (frameworks/base
``core/java/android/app/ApplicationExitInfo.java``; docs/formats.md section 3). Older
releases print one ``key=value`` per line, newer ones several per line; both read the same
here, by splitting each entry at the known keys::

    ApplicationExitInfo #0:
      timestamp=2024-05-01 12:00:01.234 pid=1234 realUid=10123 packageUid=10123 ...
      process=com.example.app reason=5 (APP CRASH(NATIVE)) subreason=0 (UNKNOWN) status=11
      importance=100 pss=0.00 rss=0.00 description=crash state=empty trace=null

Entries are listed newest first. ``status`` is the signal number for ``SIGNALED`` and
``APP CRASH(NATIVE)`` deaths and the exit code for ``EXIT_SELF``.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any

from ._text import decode, parse_int

__all__ = ["ExitReason", "ExitInfo", "parse_exit_info"]


class ExitReason(enum.IntEnum):
    """``ApplicationExitInfo.REASON_*`` codes (developer.android.com ApplicationExitInfo)."""

    UNKNOWN = 0
    EXIT_SELF = 1
    SIGNALED = 2
    LOW_MEMORY = 3
    CRASH = 4  #: "APP CRASH(EXCEPTION)": an uncaught Java/Kotlin exception
    CRASH_NATIVE = 5  #: "APP CRASH(NATIVE)": a native crash (tombstone)
    ANR = 6
    INITIALIZATION_FAILURE = 7
    PERMISSION_CHANGE = 8
    EXCESSIVE_RESOURCE_USAGE = 9
    USER_REQUESTED = 10
    USER_STOPPED = 11
    DEPENDENCY_DIED = 12
    OTHER = 13
    FREEZER = 14
    PACKAGE_STATE_CHANGE = 15
    PACKAGE_UPDATED = 16


@dataclasses.dataclass(frozen=True)
class ExitInfo:
    """One ``ApplicationExitInfo`` entry.

    Attributes:
        timestamp: wall-clock time as printed (``YYYY-MM-DD HH:MM:SS.mmm``, device local).
        pid: the dead process's pid (match it to a launch's pid).
        process: process name (the package, or ``pkg:service``).
        reason: reason code (see :class:`ExitReason`), ``None`` if unreadable.
        reason_text: reason as printed (``APP CRASH(NATIVE)``).
        subreason: sub-reason code (``0`` unknown) or ``None``; ``subreason_text`` as printed.
        status: signal number or exit status (see module docs), or ``None``.
        description: free text (``crash``, ``stop com.example.app due to from pid 123``...).
        package: the ``package:`` section the entry was listed under, when present.
        index: the entry's ``#N`` (0 is the newest).
        notes: what could not be read.
    """

    timestamp: str | None
    pid: int | None
    process: str | None
    reason: int | None
    reason_text: str | None
    subreason: int | None
    status: int | None
    description: str | None
    subreason_text: str | None = None
    package: str | None = None
    index: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def reason_enum(self) -> ExitReason | None:
        """:class:`ExitReason` for :attr:`reason`, or ``None`` for unknown codes."""
        try:
            return ExitReason(self.reason) if self.reason is not None else None
        except ValueError:
            return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        data = dataclasses.asdict(self)
        data["notes"] = list(self.notes)
        return data


_KEYS = ("timestamp", "pid", "realUid", "packageUid", "definingUid", "user", "process",
         "reason", "subreason", "status", "importance", "pss", "rss", "description", "state",
         "trace", "connectionGroup")
_KEY_RE = re.compile(r"(?:^|(?<=\s))(" + "|".join(_KEYS) + r")=")
_ENTRY = re.compile(r"^\s*ApplicationExitInfo #(\d+):?\s*$", re.M)
_PACKAGE = re.compile(r"^\s*package: (\S+)", re.M)
_CODE_TEXT = re.compile(r"^(-?\d+)(?:\s*\((.*)\))?\s*$", re.S)


def _fields(body: str) -> dict[str, str]:
    flat = " ".join(line.strip() for line in body.splitlines())
    found: dict[str, str] = {}
    marks = list(_KEY_RE.finditer(flat))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(flat)
        found.setdefault(m.group(1), flat[m.end():end].strip())
    return found


def _code(value: str | None) -> tuple[int | None, str | None]:
    if value is None:
        return None, None
    m = _CODE_TEXT.match(value)
    if m is None:
        return None, value or None
    return parse_int(m.group(1)), m.group(2)


def parse_exit_info(text: str | bytes) -> list[ExitInfo]:
    """Every ``ApplicationExitInfo`` entry in ``dumpsys activity exit-info`` output.

    Returns entries in the order printed (newest first within a package); an empty list when
    the text holds none. An entry cut short keeps what it had and says so in ``notes``.
    Never raises on bad text.
    """
    text, _ = decode(text)
    heads = list(_ENTRY.finditer(text))
    packages = [(m.start(), m.group(1)) for m in _PACKAGE.finditer(text)]
    out: list[ExitInfo] = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[head.end():end]
        # stop at the next section header ("package:", "Historical ...") inside the body
        cut = re.search(r"^\s*(?:package:|Historical Process Exit)", body, re.M)
        if cut is not None:
            body = body[:cut.start()]
        fields = _fields(body)
        notes: list[str] = []
        reason, reason_text = _code(fields.get("reason"))
        subreason, subreason_text = _code(fields.get("subreason"))
        if "reason" not in fields:
            notes.append("no reason= field (entry cut?)")
        elif reason is None:
            notes.append(f"unreadable reason {fields['reason']!r}")
        if "pid" not in fields:
            notes.append("no pid= field (entry cut?)")
        package = None
        for pos, name in packages:
            if pos < head.start():
                package = name
        description = fields.get("description")
        out.append(ExitInfo(
            timestamp=fields.get("timestamp") or None, pid=parse_int(fields.get("pid")),
            process=fields.get("process") or None, reason=reason, reason_text=reason_text,
            subreason=subreason, status=parse_int(fields.get("status")),
            description=None if description in (None, "", "null") else description,
            subreason_text=subreason_text, package=package, index=parse_int(head.group(1)),
            notes=tuple(notes)))
    return out
