"""Text an Android device prints, read for a launch: ``logcat -v threadtime`` lines,
``am start -W`` output (and when it means the launch was not made), ``dumpsys dropbox
--print`` entries, one ``ApplicationExitInfo`` entry of ``dumpsys activity exit-info``, and
the crash buffer's lines of one process.

Formats: docs/formats.md section D2 and docs/formats.md sections 1-3 (AOSP
``liblog`` threadtime, ``ActivityManagerShellCommand``, ``DropBoxManagerService.dump()``,
``ApplicationExitInfo.dump()``, debuggerd). Every function here is pure and never raises on
odd text, except :func:`check_am_start`, whose error is the point.
"""

from __future__ import annotations

import dataclasses
import re

from ...errors import InfraError
from .transport import ShellResult

__all__ = ["LogLine", "parse_threadtime", "parse_am_start", "check_am_start", "AmStartFailed",
           "process_crash_lines", "START_PROC", "DIED",
           "FATAL_SIGNAL", "JAVA_PROCESS", "NO_SERVICE", "marked_command", "read_marked",
           "MARKED_VALUES"]

#: ``ActivityManager``: ``Start proc 4242:org.x/u0a87 for ...``
START_PROC = re.compile(r"^Start proc (\d+):([^/\s]+)")
#: ``ActivityManager``: ``Process org.x (pid 4242) has died: ...``
DIED = re.compile(r"^Process (\S+) \(pid (\d+)\) has died")
#: ``libc``: ``Fatal signal 11 (SIGSEGV), code 1 (...), fault addr ... in tid N (t), pid P (p)``
FATAL_SIGNAL = re.compile(r"^Fatal signal \d+ .* pid (\d+) \(")
#: ``AndroidRuntime``: ``Process: org.x, PID: 4242`` (the second line of FATAL EXCEPTION)
JAVA_PROCESS = re.compile(r"^Process: (\S+), PID: (\d+)")
#: what ``cmd`` / ``dumpsys`` print while the system server is not up
NO_SERVICE = re.compile(r"Can't find service: ?(\S*)")


#: What a value read by :func:`read_marked` must look like to be taken (a first line that
#: does not match, e.g. ``cat: /proc/sys/kernel/random/boot_id: Permission denied`` mixed
#: into stdout where stderr is not separate, is unknown: ``""``).
MARKED_VALUES = {
    "boot_completed": re.compile(r"^[0-9]+$"),
    "boot_id": re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
                          re.I),
    "date": re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"),
    "uptime": re.compile(r"^\d+(?:\.\d+)?(?=\s|$)"),
    "system_pid": re.compile(r"^\d+(?=\s|$)"),
    "apk_path": re.compile(r"^package:(/\S+\.apk)$"),
    "apk_sha256": re.compile(r"^[0-9a-f]{64}(?=\s)"),
}


def marked_command(mark: str, values: list[tuple[str, list[str]]]) -> list[list[str]]:
    """argv lists that print each value after its own marker line (``echo <mark>:<name>``),
    for :func:`read_marked`; join them with
    :func:`~kit.targets.android.transport.shell_join`."""
    out: list[list[str]] = []
    for name, argv in values:
        out += [["echo", f"{mark}:{name}"], argv]
    return out


def read_marked(text: str, mark: str) -> dict[str, str]:
    """The values of a :func:`marked_command`'s output by name: the first line after each
    marker that has the value's form (:data:`MARKED_VALUES`; ``apk_path`` gives the
    ``base.apk`` path of ``pm path``), else ``""``. A value that is missing or unreadable
    is unknown and never moves another one (issue #23: a failing ``cat`` of the boot id
    once shifted the clock into the boot id). Never raises."""
    values: dict[str, str] = {}
    name: str | None = None
    section: dict[str, list[str]] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(mark + ":"):
            name = stripped[len(mark) + 1:]
            section[name] = []
        elif name is not None and stripped:
            section[name].append(stripped)
    for key, lines in section.items():
        form = MARKED_VALUES.get(key)
        found = ""
        for line in lines:
            m = form.match(line) if form is not None else re.match(r".*", line)
            if m is None:
                continue
            found = m.group(1) if m.groups() else m.group(0)
            if key != "apk_path" or found.endswith("/base.apk"):
                break
        values[key] = found
    return values


@dataclasses.dataclass(frozen=True)
class LogLine:
    """One ``logcat -v threadtime`` line: ``MM-DD HH:MM:SS.mmm PID TID L TAG: msg``."""

    time: str
    pid: int
    tid: int
    level: str
    tag: str
    msg: str


_THREADTIME = re.compile(r"^(?P<time>\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+)\s+(?P<pid>\d+)\s+"
                         r"(?P<tid>\d+)\s+(?P<level>[VDIWEFS])\s+(?P<tag>.*?)\s*: (?P<msg>.*)$")


def parse_threadtime(line: str) -> LogLine | None:
    """Split a threadtime line (liblog's default format); ``None`` for other lines
    (``--------- beginning of crash`` and the like). Never raises."""
    m = _THREADTIME.match(line)
    if m is None:
        return None
    return LogLine(m.group("time"), int(m.group("pid")), int(m.group("tid")),
                   m.group("level"), m.group("tag"), m.group("msg"))


def parse_am_start(text: str) -> dict[str, str]:
    """``am start -W`` output as ``Key: value`` pairs (``Status``, ``LaunchState``,
    ``Activity``, ``TotalTime``, ``WaitTime``, ``Error``, ``Warning``...; docs/formats.md
    section D2). Older releases print ``ThisTime`` and no ``LaunchState``; every key is kept
    as printed. Never raises."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            out.setdefault(key.strip(), value.strip())
    return out


class AmStartFailed(InfraError):
    """``am start`` did not make the launch (an infra error of the device: the launch is
    retried, never counted). ``evidence`` holds what ``am`` printed; ``no_service`` is set
    when the system server was not up (the device must be waited for)."""

    def __init__(self, message: str, hint: str, evidence: str, no_service: bool) -> None:
        super().__init__(message, hint)
        self.evidence = evidence
        self.no_service = no_service


#: the first release whose ``am start -W`` prints ``LaunchState`` for sure (Android 11)
_LAUNCH_STATE_SDK = 30


def check_am_start(result: ShellResult, sdk: int | None, what: str) -> dict[str, str]:
    """The fields of an ``am start -W`` that made a launch (:func:`parse_am_start`).

    ``am`` exits 0 on most errors, so its text decides: a launch was made when the exit
    status is 0, no ``Can't find service``, no ``Error:``, ``Status: ok``, no ``Warning:
    Activity not started`` (the app was still running: not a cold start), and a
    ``LaunchState`` (Android 11 and later; older releases: a ``TotalTime``, ``ThisTime`` or
    ``WaitTime``).

    Raises:
        AmStartFailed: any of these is missing (``what`` names the device).
    """
    text = result.output
    fields = parse_am_start(text)
    no_service = NO_SERVICE.search(text)
    status = fields.get("Status")
    timed = any(k in fields for k in ("TotalTime", "ThisTime", "WaitTime"))
    why = hint = None
    if no_service is not None:
        why = (f"the system's {no_service.group(1) or 'activity'} service is not running "
               f"(`{no_service.group(0)}`, exit status {result.exit_code})")
        hint = "the device is booting or its system server restarted; it is waited for"
    elif result.exit_code != 0:
        why = f"am exited with status {result.exit_code}"
    elif "Error" in fields:
        why = fields["Error"]
        hint = "check that the app is still installed"
    elif status != "ok":
        why = f"Status: {status}" if status is not None else "no Status line"
    elif "Activity not started" in fields.get("Warning", ""):
        why = f"not a cold start ({fields['Warning']})"
        hint = "the app was still running after its force-stop"
    elif "LaunchState" not in fields and (sdk is None or sdk >= _LAUNCH_STATE_SDK):
        why = "no LaunchState line"
    elif not timed and "LaunchState" not in fields:
        why = "no TotalTime / WaitTime line"
    if why is None:
        return fields
    last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "no output")
    raise AmStartFailed(f"{what}: am start made no launch: {why}",
                        hint or f"am printed {last[:120]!r}; the launch is retried",
                        evidence=text[-8000:], no_service=no_service is not None)


def process_crash_lines(text: str, pid: int) -> str:
    """The lines of ``logcat -b crash`` output that belong to process ``pid``: its own
    lines (``libc`` ``Fatal signal``, ``AndroidRuntime`` ``FATAL EXCEPTION``) and the
    tombstone that debuggerd's ``crash_dump`` logged for it (``DEBUG`` lines, from the
    dumper's own pid, whose block names ``pid: <pid>,``). ``""`` when none."""
    parsed = [(line, parse_threadtime(line)) for line in text.splitlines()]
    dumps: dict[int, bool] = {}
    for _line, entry in parsed:
        if entry is not None and entry.tag == "DEBUG" and f"pid: {pid}," in entry.msg:
            dumps[entry.pid] = True
    kept = [line for line, entry in parsed if entry is not None and (
        entry.pid == pid or (entry.tag == "DEBUG" and entry.pid in dumps))]
    return "\n".join(kept) + "\n" if kept else ""
