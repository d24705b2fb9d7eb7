"""Crash reports of iOS launches: the host's DiagnosticReports folder (simulators) and what
belongs to one launch.

macOS ReportCrash writes a simulator app's crash report on the host, seconds after the
death, as ``<Name>-<date>-<time>.ips`` (``.crash`` before macOS 12) in
``~/Library/Logs/DiagnosticReports``; a report belongs to a simulator when it names the
simulator's UDID (``coalitionName`` ``com.apple.CoreSimulator.SimDevice.<UDID>``,
``procPath`` under ``CoreSimulator/Devices/<UDID>``; the XCUITest driver matches reports the
same way) and to a launch when it names the launch's pid (docs/formats.md section 4).
Devices keep theirs in the ``systemCrashLogs`` domain (:mod:`.devicectl`).

A report is new when its name was not in the folder at the launch's start and it was
modified since (:func:`window_start`); a clock set back during the launch (issue #23: the
report then predates the launch's start) is measured by the kit's monotonic clock and
allowed for, and a report that names the launch's pid needs no time at all (the folder's
names at the start are its window).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Callable, Collection

from ..._bounded import MiB, read_bytes_bounded
from ...errors import ColdstartError

__all__ = ["DiagnosticReports", "diagnostic_reports_dir", "report_matcher", "window_start",
           "report_complete", "read_report", "DIAGNOSTIC_REPORTS_ENV",
           "DEFAULT_DIAGNOSTIC_REPORTS", "DEFAULT_REPORT_WAIT_S", "REPORT_LIMIT"]

#: Environment variable naming the DiagnosticReports folder (``--diagnostic-reports``).
DIAGNOSTIC_REPORTS_ENV = "COLDSTART_DIAGNOSTIC_REPORTS"
DEFAULT_DIAGNOSTIC_REPORTS = "~/Library/Logs/DiagnosticReports"
#: Seconds to wait for ReportCrash to write a report after the app died.
DEFAULT_REPORT_WAIT_S = 15.0
#: The largest crash report read (issue #13: 64 MiB per crash file); larger ones are skipped.
REPORT_LIMIT = 64 * MiB
_POLL_S = 0.1
#: seconds of slack for coarse file times and for reading the two clocks one call apart
_SLACK_S = 1.0


def window_start(start_epoch_s: float, start_monotonic_s: float | None,
                 wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> float:
    """The earliest wall time (epoch s) a report of a launch may carry: the launch's start
    ``start_epoch_s``, or, when the clock was set back since (the wall clock advanced less
    than the monotonic clock since ``start_monotonic_s``, both read at the start), that much
    earlier. ``None`` for the monotonic start keeps the start as it is. Never raises."""
    if start_monotonic_s is None:
        return start_epoch_s
    jump = (wall() - start_epoch_s) - (monotonic() - start_monotonic_s)
    return start_epoch_s + min(0.0, jump)


def report_pid(text: str) -> int | None:
    """The pid a crash report names (``pid`` of an ``.ips``, ``Process: Name [pid]`` of a
    ``.crash``), or ``None`` when it names none or cannot be parsed."""
    from ... import crash as crashlib

    try:
        return crashlib.parse_text(text, hint="ips").pid
    except Exception:  # noqa: BLE001 - a report the parser cannot read names no pid
        return None


def diagnostic_reports_dir(option: str | None = None) -> Path:
    """The DiagnosticReports folder: ``option`` (``--diagnostic-reports``), else
    ``$COLDSTART_DIAGNOSTIC_REPORTS``, else ``~/Library/Logs/DiagnosticReports``."""
    raw = option or os.environ.get(DIAGNOSTIC_REPORTS_ENV) or DEFAULT_DIAGNOSTIC_REPORTS
    return Path(raw).expanduser()


def read_report(path: Path) -> str | None:
    """A report's text (bounded by :data:`REPORT_LIMIT`, regular files only), or ``None``
    when it cannot be read (gone, too large, not a file)."""
    try:
        return read_bytes_bounded(path, REPORT_LIMIT, what="crash report").decode(
            "utf-8", "replace")
    except (ColdstartError, OSError):
        return None


def report_complete(name: str, text: str) -> bool:
    """An ``.ips`` is complete once its second JSON object parses (ReportCrash writes the
    one-line header first, then the body); other reports once they have any text."""
    if not name.endswith(".ips"):
        return bool(text.strip())
    _head, sep, body = text.partition("\n")
    if not sep:
        return False
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return False
    return True


def report_matcher(pid: int | None, executable: str, bundle_id: str,
                   udid: str | None = None, past_pids: Collection[int] = ()
                   ) -> Callable[[str], bool]:
    """Predicate for a crash report of this launch: it names ``udid`` (simulators), and the
    process: its pid when both the launch and the report know one, else its name or bundle
    id, and then not the pid of an earlier launch (``past_pids``: a report can arrive after
    its own launch stopped waiting for it)."""

    def accept(text: str) -> bool:
        if udid is not None and udid.lower() not in text.lower():
            return False
        from ... import crash as crashlib

        try:
            record = crashlib.parse_text(text, hint="ips")
        except Exception:  # noqa: BLE001 - a report the parser cannot read is not ours
            return False
        if pid is not None and record.pid is not None:
            return record.pid == pid
        if record.pid is not None and record.pid in past_pids:
            return False
        return record.process in (executable, bundle_id) or bundle_id in text
    return accept


class DiagnosticReports:
    """A folder of crash reports (``*.ips``, ``*.crash``), watched across one launch.

    Args:
        directory: the folder (see :func:`diagnostic_reports_dir`).
    """

    SUFFIXES = (".ips", ".crash")

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def snapshot(self) -> set[str]:
        """Names of the reports in the folder now (empty when it does not exist yet)."""
        try:
            return {e.name for e in os.scandir(self.directory)
                    if e.name.endswith(self.SUFFIXES)}
        except OSError:
            return set()

    def new_reports(self, before: set[str], since_epoch_s: float | None) -> list[Path]:
        """Reports not in ``before`` and modified at or after ``since_epoch_s`` (1 s of
        slack for coarse file times; ``None``: any time), oldest first."""
        found = []
        for name in self.snapshot() - before:
            path = self.directory / name
            try:
                mtime = path.stat().st_mtime
            except OSError:
                continue
            if since_epoch_s is None or mtime >= since_epoch_s - _SLACK_S:
                found.append((mtime, name, path))
        return [path for _m, _n, path in sorted(found)]

    def wait_for(self, before: set[str], since_epoch_s: float,
                 accept: Callable[[str], bool], wait_s: float,
                 abort: threading.Event | None = None, *,
                 since_monotonic_s: float | None = None,
                 pid: int | None = None) -> tuple[Path, str] | None:
        """Wait up to ``wait_s`` for a new, complete report whose text ``accept`` s (the
        folder is listed every 0.1 s: no subprocess, a few microseconds a look).

        A report counts as new when it was modified since the launch's start
        ``since_epoch_s`` (moved back by a clock set back since ``since_monotonic_s``, the
        monotonic time of the same start: :func:`window_start`), or, whatever its time,
        when it names ``pid`` (the launch's process; issue #23).

        Returns:
            ``(path, text)`` of the first accepted report, or ``None``.
        """
        deadline = time.monotonic() + wait_s
        judged: set[str] = set()
        while True:
            since = window_start(since_epoch_s, since_monotonic_s)
            timed = {p.name for p in self.new_reports(before, since)}
            for path in self.new_reports(before, None if pid is not None else since):
                if path.name in judged:
                    continue
                text = read_report(path)
                if text is None or not report_complete(path.name, text):
                    continue  # still being written: look again next round
                if path.name not in timed and report_pid(text) != pid:
                    continue  # older than the launch and not its pid: judged again later
                judged.add(path.name)
                if accept(text):
                    return path, text
            if time.monotonic() >= deadline or (abort is not None and abort.is_set()):
                return None
            if abort is not None:
                abort.wait(_POLL_S)
            else:
                time.sleep(_POLL_S)
