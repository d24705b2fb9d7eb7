"""A farm's crash log cut into its reports, and the times farms and reports give.

A crash log that a farm keeps per session (BrowserStack's ``crashlogs``, LambdaTest's
``crash_logs_url``) can hold several reports with no logcat prefixes: each is cut out by its
own first line (docs/farms.md). Split from :mod:`kit.farms.attribute`, which
attributes each report to a launch.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

__all__ = ["epoch_of", "report_time", "split_reports", "is_report_head"]

#: the first line of a crash report of its own in a text without logcat prefixes (a farm's
#: crash log holding several): ``FATAL EXCEPTION``, an Apple crash report's ``Incident
#: Identifier:``, an ``.ips`` header line (one JSON object naming its ``bug_type``), a JS
#: error's headline (``TypeError: ...``, ``Unhandled JS Exception: ...``, ``Invariant
#: Violation: ...``); a tombstone's ``*** *** ***`` line is one too (:func:`split_reports`)
_REPORT_HEAD = re.compile(r"^(?:FATAL EXCEPTION|Incident Identifier:|\{.*\"bug_type\"\s*:|"
                          r"(?:Unhandled JS Exception: |Uncaught )?(?:[A-Z][A-Za-z]*Error|"
                          r"Invariant Violation)(?: \[[^\]]*\])?: )")
_TIMESTAMPS = (re.compile(r"^Timestamp: (?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<f>\.\d+)?"
                          r"(?P<z>[+-]\d\d:?\d\d)", re.M),
               re.compile(r"^Date/Time:\s+(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<f>\.\d+)?"
                          r" (?P<z>[+-]\d\d:?\d\d)", re.M),
               re.compile(r"\"timestamp\"\s*:\s*\"(?P<t>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)"
                          r"(?P<f>\.\d+)? (?P<z>[+-]\d\d:?\d\d)\""))


def epoch_of(value: Any) -> float | None:
    """A farm's time as epoch seconds: a number (seconds, or milliseconds when above
    1e11) or an ISO 8601 text with a zone; ``None`` for anything else (never raises)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str) and value:
        try:
            when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if when.tzinfo is None:
            return None
        return when.timestamp()
    return None


def report_time(text: str) -> float | None:
    """The time a crash report says it was written (a tombstone's ``Timestamp:``, an Apple
    report's ``Date/Time:``, an ``.ips`` header's ``"timestamp"``), epoch seconds; ``None``
    when it names none."""
    for pattern in _TIMESTAMPS:
        m = pattern.search(text[:64 * 1024])
        if not m:
            continue
        zone = m.group("z").replace(":", "")
        frac = (m.group("f") or "")[:7]
        try:
            when = _dt.datetime.strptime(f"{m.group('t')}{frac}{zone}",
                                         "%Y-%m-%d %H:%M:%S" + ("%f" if frac else "") + "%z")
        except ValueError:
            continue
        return when.timestamp()
    return None


def split_reports(text: str) -> list[tuple[int, int, str]]:
    """A crash log's text cut into its reports by their own structure, each
    ``(first line, last line, text)``: a report starts at a tombstone's ``*** *** ***``
    line or a :data:`_REPORT_HEAD` line and runs to the next one (a JS error's headline
    followed within 30 lines by the ``FATAL EXCEPTION`` that carries it stays one
    report); lines before the first start belong to the first report (a DropBox entry's
    ``Process:`` / ``PID:`` preamble). Never raises."""
    lines = text.splitlines()
    starts: list[int] = []
    js_at: int | None = None
    for n, line in enumerate(lines):
        bare = line.strip()
        if bare.startswith("*** *** ***") or _REPORT_HEAD.match(bare):
            if bare.startswith("FATAL EXCEPTION") and js_at is not None and n - js_at <= 30 \
                    and starts and starts[-1] == js_at:
                js_at = None
                continue
            starts.append(n)
            js_at = n if (bare[:1].isupper() and "Error" in bare.split(":", 1)[0]) or \
                bare.startswith(("Unhandled JS", "Uncaught", "Invariant")) else None
    if not starts:
        return [(0, max(0, len(lines) - 1), text)] if text.strip() else []
    starts[0] = 0
    out = []
    for k, first in enumerate(starts):
        last = (starts[k + 1] if k + 1 < len(starts) else len(lines)) - 1
        piece = "\n".join(lines[first:last + 1]).strip("\n")
        if piece.strip():
            out.append((first, last, piece + "\n"))
    return out


def is_report_head(text: str) -> bool:
    """Whether ``text`` (a line, leading blanks allowed by the caller's strip) is the first
    line of a report of its own other than a tombstone's (:data:`_REPORT_HEAD`)."""
    return bool(_REPORT_HEAD.match(text))
