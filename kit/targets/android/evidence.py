"""The crash evidence of one Android launch whose process died: exit-info, the crash buffer
and DropBox, matched to this launch's pid and time window only (issue #16).

:func:`collect_death` reads, in one round trip each time, ``dumpsys activity exit-info
<pkg>``, ``logcat -d -b crash``, ``dumpsys dropbox --print`` for the crash tags, the boot id
and the device clock, again until the report for that pid is written (at most
``report_wait_s``; docs/formats.md section D2, docs/formats.md section 3). Then:

* the exit-info entry is the one of this pid written since the launch began (pids start
  again after a reboot and the ring outlives it; a device clock set back during the launch
  is measured against ``/proc/uptime`` and allowed for, :func:`window_start`); with no pid
  known, the newest entry written since then by a process of no earlier launch that is not
  a force-stop (the kit's own force-stop of the previous process falls in that window);
* every entry (exit-info, DropBox) must be stamped within the launch's window by the
  device's own clock: not before the launch began (nor before this boot began: ``date``
  minus ``/proc/uptime``), and not after the device's present (issue #44: after a reboot
  with the clock a day back, an earlier boot's tombstone of a reused pid was stamped after
  the device's "now"; :func:`window_end`);
* the report parsed is a DropBox entry of this pid that names the app (a tombstone first
  when the launch's own ``data_app_native_crash`` holds the same crash, else the
  ``data_app_native_crash``), else this pid's lines of the crash buffer, else this pid's
  exit-info entry when its reason is a crash (:data:`CRASH_REASONS`); with none, the
  evidence says that no report was found, and nothing of another process is ever
  borrowed. A bare ``Fatal signal`` line with no frames (its tombstone came later than
  the report wait) is a crash with no class: it is no evidence against the target
  signature (issue #44; the iOS counterpart, a report that comes too late, is the same);
* an entry whose reason is a stop by someone else (:data:`EXTERNAL_STOPS`: force-stop,
  user stop, package update) with no crash report makes the launch an infra error
  (:class:`AppStoppedExternally`); so does a reboot (the boot id changed) or a system
  server that went down (``Can't find service``, or system_server has a new pid: a runtime
  restart kills every app and leaves no record of it). Such entries never become crash
  signatures. An app that is no longer installed (``pm path`` prints nothing: removed by
  someone else, which also drops its exit-info records) with no crash report is the same
  kind of infra error (:class:`AppStoppedExternally`), never a crash (issue #44).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
import uuid
from pathlib import Path
from typing import Any

from ...crash import ExitInfo, ExitReason, parse_exit_info
from ...crash.dumpsys import CRASH_REASONS, DROPBOX_TAGS, dropbox_entries, exit_info_block
from ...errors import InfraError
from ...observe import CrashEvidence, ProcessEnd, crash_evidence, signal_name
from .device import BOOT_ID_PATH, UPTIME_PATH, DeviceNotReady
from .installed import not_listed
from .text import MARKED_VALUES, NO_SERVICE, process_crash_lines
from .transport import TransportError, shell_join

__all__ = ["LaunchWindow", "Death", "collect_death", "AppStoppedExternally", "CRASH_REASONS",
           "EXTERNAL_STOPS", "DROPBOX_TAGS", "window_start", "window_end", "earlier_pids",
           "package_missing"]

#: exit reasons that are a stop by someone or something else than the app
EXTERNAL_STOPS = frozenset({ExitReason.USER_REQUESTED, ExitReason.USER_STOPPED,
                            ExitReason.PACKAGE_UPDATED, ExitReason.PACKAGE_STATE_CHANGE,
                            ExitReason.PERMISSION_CHANGE})
_JAVA_TAG = "data_app_crash"


class AppStoppedExternally(InfraError):
    """The app was stopped by someone else (exit-info says so, and no crash report exists):
    the launch was not observed to its end. ``evidence`` holds the exit-info entry."""

    def __init__(self, message: str, hint: str, evidence: str) -> None:
        super().__init__(message, hint)
        self.evidence = evidence


@dataclasses.dataclass(frozen=True)
class LaunchWindow:
    """Which evidence belongs to one launch.

    Attributes:
        package: the app.
        pid: the launch's process, when known.
        old_pids: processes of earlier launches on this device (never this launch's).
        device_start: the device clock when the launch began (``YYYY-MM-DD HH:MM:SS``,
            device local time, as exit-info and DropBox print it); ``""`` when unknown.
        boot_id: the boot id the launch began under.
        sdk: the device's API level (exit-info exists from 30), or ``None``.
        system_pid: system_server's pid when the launch began, or ``None`` (not shown).
        device_uptime: the device's uptime (s, ``/proc/uptime``) when the launch began, or
            ``None`` when unreadable; with it, a clock set back during the launch is
            measured and allowed for (:func:`window_start`).
    """

    package: str
    pid: int | None
    old_pids: frozenset[int]
    device_start: str
    boot_id: str
    sdk: int | None
    system_pid: str | None = None
    device_uptime: float | None = None


#: how far before the launch's start an entry may be stamped once the device clock was
#: set back (seconds; ``date`` and ``/proc/uptime`` are read one call apart)
_JUMP_SLACK_S = 2.0
_CLOCK = "%Y-%m-%d %H:%M:%S"


def window_start(window: LaunchWindow, clock_now: str, uptime_now: float | None) -> str:
    """The earliest device time an entry of this launch may carry: the launch's start,
    or, when the device clock went back during the launch (its wall time advanced less than
    its uptime; issue #23: a clock set back dropped the tombstone and exit-info), that much
    earlier. An entry must still be this pid's (matched by the caller) in the same boot
    (a reboot ends the collection). Unknown values leave the start as it is. Never
    raises."""
    if not window.device_start or window.device_uptime is None or uptime_now is None:
        return window.device_start
    try:
        start = _dt.datetime.strptime(window.device_start[:19], _CLOCK)
        now = _dt.datetime.strptime(clock_now, _CLOCK)
    except ValueError:
        return window.device_start
    jump = (now - start).total_seconds() - (uptime_now - window.device_uptime)
    if jump >= -_JUMP_SLACK_S:
        return window.device_start
    return (start + _dt.timedelta(seconds=jump - _JUMP_SLACK_S)).strftime(_CLOCK)


def window_end(window: LaunchWindow, clock_now: str, uptime_now: float | None) -> str:
    """The latest device time an entry of this launch may carry: the device's present
    (``clock_now``), moved on by a clock set back during the launch (entries written before
    the jump carry the earlier, later-running clock), plus ``date``'s whole-second slack.
    An entry stamped after it was written under another notion of "now" (an earlier boot,
    before the clock was set back; issue #44). ``""`` (no bound) when the clock is
    unreadable. Never raises."""
    try:
        now = _dt.datetime.strptime(clock_now, _CLOCK)
    except ValueError:
        return ""
    jump = 0.0
    if window.device_start and window.device_uptime is not None and uptime_now is not None:
        try:
            start = _dt.datetime.strptime(window.device_start[:19], _CLOCK)
            jump = (now - start).total_seconds() - (uptime_now - window.device_uptime)
        except ValueError:
            jump = 0.0
    ahead = max(0.0, -jump) + _JUMP_SLACK_S
    return (now + _dt.timedelta(seconds=ahead)).strftime(_CLOCK)


def _boot_start(clock_now: str, uptime_now: float | None) -> str:
    """When this boot began by the device's present clock (``""`` when unknown)."""
    if uptime_now is None:
        return ""
    try:
        now = _dt.datetime.strptime(clock_now, _CLOCK)
    except ValueError:
        return ""
    return (now - _dt.timedelta(seconds=uptime_now + _BOOT_SLACK_S)).strftime(_CLOCK)


def _in_window(stamp: str, since: str, until: str) -> bool:
    stamp = stamp[:19]
    return stamp >= since[:19] and (not until or stamp <= until)


def package_missing(pm_path_output: str) -> bool:
    """Whether ``pm path <package>``'s output says the package is not installed (it
    prints nothing and exits 1; an installed one prints ``package:<path>``)."""
    return not any(line.strip().startswith("package:")
                   for line in pm_path_output.splitlines())


@dataclasses.dataclass(frozen=True)
class Death:
    """What :func:`collect_death` found.

    Attributes:
        end: ``EXITED`` (exit-info ``EXIT_SELF``), ``SIGNALED`` (``SIGNALED``) or ``DIED``.
        pid: the process (from the launch, or from its exit-info entry).
        exit_code, signal: from the exit-info entry when it gives them.
        crash: the evidence for :class:`kit.observe.Observation` (its ``note`` says when no
            report was found).
        exit_info: this pid's exit-info entry as a dict, or ``None``.
        artifacts: files kept, relative to the campaign.
    """

    end: ProcessEnd
    pid: int | None
    exit_code: int | None
    signal: int | None
    crash: CrashEvidence
    exit_info: dict[str, Any] | None
    artifacts: tuple[str, ...]


def _own_exit(entries: list[ExitInfo], window: LaunchWindow, pid: int | None, since: str,
              until: str = "") -> ExitInfo | None:
    # written since the launch began and not after the device's present: pids start again
    # after a reboot, and the ring is kept across boots, so a pid alone could name an
    # older process
    mine = [e for e in entries if (e.process or "").split(":")[0] == window.package and
            _in_window(e.timestamp or "", since, until)]
    if pid is not None:
        return next((e for e in mine if e.pid == pid), None)
    for entry in mine:  # newest first
        if entry.pid in window.old_pids:
            continue
        if entry.reason_enum is ExitReason.USER_REQUESTED:
            continue  # the kit's own force-stop of a process it did not know
        return entry
    return None


def _names_app(entry: str, pid: int, package: str) -> bool:
    """A DropBox entry of ``pid`` of ``package``: a tombstone's ``pid: P, tid: T, name: X
    >>> package <<<`` line, or the ``Process: package`` / ``PID: P`` header AMS writes."""
    if f"PID: {pid}\n" in entry and f"Process: {package}\n" in entry:
        return True
    return any(line.startswith(f"pid: {pid},") and f">>> {package}" in line
               for line in (ln.strip() for ln in entry.splitlines()))


def _crash_line(entry: str) -> tuple[str, str]:
    """The tombstone's ``pid: .., tid: ..`` and ``signal ..`` lines (what names one crash)."""
    lines = [ln.strip() for ln in entry.splitlines()]
    return (next((ln for ln in lines if ln.startswith("pid: ")), ""),
            next((ln for ln in lines if ln.startswith("signal ")), ""))


def _reports(sections: list[str], pid: int | None, since: str, until: str = "",
             package: str = "") -> list[tuple[str, str]]:
    """``(tag, entry)`` DropBox entries of ``pid`` (of ``package``, when given) stamped
    within ``[since, until]``, best first: a ``SYSTEM_TOMBSTONE`` before the
    ``data_app_native_crash`` only when that entry holds the same crash (the same ``pid:
    .., tid: ..`` and ``signal`` lines); AMS writes ``data_app_native_crash`` for this
    app's process at its death, so it is the launch's own."""
    if pid is None:
        return []
    found = [(tag, entry) for text in sections for when, tag, entry in dropbox_entries(text)
             if _in_window(when, since, until) and
             (f"pid: {pid}," in entry or f"PID: {pid}\n" in entry) and
             (not package or _names_app(entry, pid, package))]
    own = [entry for tag, entry in found if tag == "data_app_native_crash"]

    def rank(item: tuple[str, str]) -> int:
        tag, entry = item
        if tag == "SYSTEM_TOMBSTONE" and own and not any(
                _crash_line(entry) == _crash_line(o) for o in own):
            return len(DROPBOX_TAGS)  # not the crash AMS recorded for this process
        return DROPBOX_TAGS.index(tag) if tag in DROPBOX_TAGS else len(DROPBOX_TAGS)

    return sorted(found, key=rank)


def _have_report(reason: ExitReason | None, trigger: str, pid_lines: str,
                 reports: list[tuple[str, str]]) -> bool:
    if reason is ExitReason.CRASH_NATIVE or "Fatal signal" in trigger + pid_lines:
        return any(tag != _JAVA_TAG for tag, _ in reports)
    if reason is ExitReason.CRASH or "FATAL EXCEPTION" in pid_lines:
        return any(tag == _JAVA_TAG for tag, _ in reports) or "FATAL EXCEPTION" in pid_lines
    return True


def _value(name: str, text: str) -> str:
    """The first line of ``text`` that has the form of value ``name``
    (:data:`~kit.targets.android.text.MARKED_VALUES`), else ``""`` (unknown: an error
    message where stderr is mixed into stdout never passes for a value)."""
    form = MARKED_VALUES[name]
    for line in text.splitlines():
        m = form.match(line.strip())
        if m is not None:
            return m.group(0)
    return ""


#: how long after the boot began an exit-info entry must be written to be of that boot (s;
#: ``date`` has whole seconds)
_BOOT_SLACK_S = 2.0


def earlier_pids(transport: Any, package: str, call_timeout_s: float = 30.0) -> frozenset[int]:
    """The pids of ``package``'s processes that ran on this boot before now, in one round
    trip: the one running (``pidof``) and each exit-info entry written since the boot
    began (``date`` minus ``/proc/uptime``; the ring outlives a reboot and pids start
    again, so an older boot's pid may be a new launch's). A launcher takes them for
    processes of earlier launches: where a run was killed mid-launch, the process it left,
    its late log lines and its reports are never taken for a launch of ``--resume``.
    An unreadable part gives no pid.

    Raises:
        TransportError: the device stopped answering.
    """
    mark = f"==coldstart-{uuid.uuid4().hex[:12]}=="
    parts = [["pidof", package], ["date", "+" + _CLOCK], ["cat", UPTIME_PATH],
             ["dumpsys", "activity", "exit-info", package]]
    result = transport.shell(shell_join(*[p for part in parts for p in (part, ["echo", mark])]
                                        [:-1]), call_timeout_s)
    running, clock, uptime, exit_text = (result.stdout.split(mark + "\n") + [""] * 4)[:4]
    pids = {int(p) for p in running.split() if p.isdigit()}
    clock, uptime = _value("date", clock), _value("uptime", uptime)
    try:
        booted = _dt.datetime.strptime(clock, _CLOCK) - _dt.timedelta(
            seconds=float(uptime) - _BOOT_SLACK_S)
    except ValueError:  # no clock or no uptime: no boot to hold entries to
        return frozenset(pids)
    since = booted.strftime(_CLOCK)
    pids |= {e.pid for e in parse_exit_info(exit_text) if e.pid is not None and
             (e.process or "").split(":")[0] == package and (e.timestamp or "") >= since}
    return frozenset(pids)


def collect_death(transport: Any, window: LaunchWindow, artifacts_dir: Path,
                  artifacts_rel: str, *, trigger: str, what: str, report_wait_s: float,
                  call_timeout_s: float = 30.0) -> Death:
    """Gather, match and parse the evidence of a death (see the module doc).

    Args:
        transport: anything with :meth:`~kit.targets.android.transport.AdbTransport.shell`.
        trigger: the line or check that showed the death.
        what: the device, for messages.

    Raises:
        TransportError: the device rebooted (``state="rebooted"``) or stopped answering.
        DeviceNotReady: the system server is down (``Can't find service``).
        AppStoppedExternally: see the module doc.
    """
    mark = f"==coldstart-{uuid.uuid4().hex[:12]}=="
    parts: list[list[str]] = [["dumpsys", "activity", "exit-info", window.package],
                              ["logcat", "-d", "-v", "threadtime", "-b", "crash"]]
    parts += [["dumpsys", "dropbox", "--print", tag] for tag in DROPBOX_TAGS]
    parts += [["pm", "path", window.package]]
    parts += [["cat", BOOT_ID_PATH], ["pidof", "system_server"], ["date", "+" + _CLOCK],
              ["cat", UPTIME_PATH]]
    command = shell_join(*[p for part in parts for p in (part, ["echo", mark])][:-1])
    give_up = time.monotonic() + report_wait_s
    expect_exit_info = window.sdk is None or window.sdk >= 30
    pid = window.pid
    while True:
        result = transport.shell(command, call_timeout_s)
        out = result.output
        sections = (result.stdout.split(mark + "\n") + [""] * len(parts))[:len(parts)]
        exit_text, crash_text = sections[0], sections[1]
        boot_id, system_pid, clock_now, uptime_now = (
            _value(name, text) for name, text in zip(
                ("boot_id", "system_pid", "date", "uptime"), sections[-4:]))
        uptime = float(uptime_now) if uptime_now else None
        since = max(window_start(window, clock_now, uptime), _boot_start(clock_now, uptime))
        until = window_end(window, clock_now, uptime)
        removed = package_missing(sections[2 + len(DROPBOX_TAGS)])
        if boot_id and window.boot_id and boot_id != window.boot_id:
            raise TransportError(f"{what} rebooted during the launch (boot id {window.boot_id}"
                                 f" -> {boot_id})", "the launch is retried once the device "
                                 "is up", state="rebooted")
        down = NO_SERVICE.search("\n".join(sections[:-4]) + result.stderr)
        if down is not None or (window.system_pid and system_pid != window.system_pid):
            why = f"`{down.group(0)}`" if down is not None else \
                f"system_server pid {window.system_pid} -> {system_pid or 'none'}"
            raise DeviceNotReady(f"{what}: the system server went down during the launch "
                                 f"({why})", "the launch is retried once the device is up",
                                 evidence=out[-4000:])
        exit_entry = _own_exit(parse_exit_info(exit_text), window, pid, since, until)
        if pid is None and exit_entry is not None:
            pid = exit_entry.pid
        reason = exit_entry.reason_enum if exit_entry is not None else None
        pid_lines = process_crash_lines(crash_text, pid) if pid is not None else ""
        reports = _reports(sections[2:2 + len(DROPBOX_TAGS)], pid, since, until,
                           window.package)
        have = _have_report(reason, trigger, pid_lines, reports)
        if (reason in EXTERNAL_STOPS or removed) and not reports:
            break
        if (have and (exit_entry is not None or not expect_exit_info)) or \
                time.monotonic() >= give_up:
            break
        time.sleep(0.2)
    (artifacts_dir / "exit-info.txt").write_text(exit_text)
    (artifacts_dir / "logcat-crash.txt").write_text(crash_text)
    kept = [f"{artifacts_rel}/exit-info.txt", f"{artifacts_rel}/logcat-crash.txt"]
    entry_text = exit_info_block(exit_text, exit_entry.index) if exit_entry is not None and \
        exit_entry.index is not None else ""
    crash_report = "Fatal signal" in pid_lines or "FATAL EXCEPTION" in pid_lines
    if removed and not reports and not crash_report and reason not in CRASH_REASONS and \
            not_listed(transport, window.package, call_timeout_s):  # a second look
        raise AppStoppedExternally(
            f"{what}: the app was removed by someone else during the launch (`pm path "
            f"{window.package}` finds no package), pid {pid}", "keep other tools (an MDM, "
            "`adb uninstall`) off the device during a campaign; the kit installs its APK "
            "again and the launch is retried", evidence=entry_text or exit_text[-2000:])
    if reason in EXTERNAL_STOPS and not reports and not crash_report:
        raise AppStoppedExternally(
            f"{what}: the app was stopped by someone else "
            f"({(exit_entry.reason_text if exit_entry is not None else None) or reason})"
            f", pid {pid}", "keep other tools off the device during a campaign; the launch "
            "is retried", evidence=entry_text)
    for n, (tag, entry) in enumerate(reports[1:], 1):
        (artifacts_dir / f"dropbox-{n}-{tag}.txt").write_text(entry)
        kept.append(f"{artifacts_rel}/dropbox-{n}-{tag}.txt")
    status = exit_entry.status if exit_entry is not None else None
    said = f"; exit-info: {exit_entry.reason_text or reason}" if exit_entry is not None else ""
    source: tuple[str, str, str | None] | None
    if reports:
        source = (reports[0][1], f"dropbox-0-{reports[0][0]}.txt", None)
    elif crash_report:
        source = (pid_lines, "logcat-crash-pid.txt", None)
    elif reason in CRASH_REASONS and entry_text:
        source = (entry_text, "exit-info-entry.txt", "exit-info")
    else:
        source = None
    if source is not None:
        evidence, rel = crash_evidence(source[0], artifacts_dir, artifacts_rel, source[1],
                                       hint=source[2])
        kept.insert(0, rel)
        if not reports and evidence.crash is not None and not evidence.crash.get("frames") \
                and evidence.signal is not None:
            # a signal with no frames (the tombstone came later than the report wait) is
            # no evidence against the target signature: a crash, with no class (issue #44)
            evidence = dataclasses.replace(
                evidence, crash_class=None, signature=None,
                note=f"{signal_name(evidence.signal)} with no frames: no tombstone or DropBox "
                     f"entry for pid {pid} was written within {report_wait_s:g} s, so the "
                     f"crash has no class{said}")
    else:
        who = f"pid {pid}" if pid is not None else "this launch's process"
        evidence = CrashEvidence(note=f"no crash report for {who} was found within "
                                      f"{report_wait_s:g} s{said}")
    end = (ProcessEnd.EXITED if reason is ExitReason.EXIT_SELF else
           ProcessEnd.SIGNALED if reason is ExitReason.SIGNALED else ProcessEnd.DIED)
    signal = status if reason in (ExitReason.SIGNALED, ExitReason.CRASH_NATIVE) and status \
        else None
    return Death(end=end, pid=pid, exit_code=status if end is ProcessEnd.EXITED else None,
                 signal=None if evidence.signal is not None else signal, crash=evidence,
                 exit_info=None if exit_entry is None else {
                     "pid": exit_entry.pid, "timestamp": exit_entry.timestamp,
                     "reason": exit_entry.reason, "reason_text": exit_entry.reason_text,
                     "status": exit_entry.status, "description": exit_entry.description},
                 artifacts=tuple(kept))
