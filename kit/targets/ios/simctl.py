"""``xcrun simctl``: the simulator commands the kit uses and their output formats (Apple's
``simctl help``; docs/formats.md section D5), and the simulator's unified log as a stream of
lines (``simctl spawn <udid> log stream --style ndjson``)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import threading
import time
from typing import Callable, Sequence

from .app import RN_LOG_SUBSYSTEM
from .xcrun import Xcrun, XcrunError, error_of, kill_group

__all__ = ["SimDevice", "Simctl", "LogStream", "LogLine", "BOOTED", "SETTLING_STATES"]

BOOTED = "Booted"
#: States a simulator passes through on its own; the kit waits for them to end.
SETTLING_STATES = ("Shutting Down", "Booting", "Creating")
_LAUNCH_PID_RE = re.compile(r"^(?P<bundle>[^:\s]+): (?P<pid>\d+)\s*$", re.M)
#: ``simctl terminate`` of an app that is not running (not an error for the kit).
_NOT_RUNNING = ("found nothing to terminate", "No such process")
#: what ``get_app_container`` says of an app that is not installed (NSPOSIXErrorDomain 2)
_NOT_INSTALLED = ("No such file or directory", "code=2)")
#: The longest log line kept (longer ones are cut; a line is one os_log record).
_MAX_LINE = 256 * 1024
#: Raw lines kept per launch window for the artifact (protocol lines are always kept).
_MAX_WINDOW_LINES = 20000


@dataclasses.dataclass(frozen=True)
class SimDevice:
    """One simulator from ``simctl list -j devices``: ``udid``, ``name``, ``state``
    (``Booted``, ``Shutdown``, ``Shutting Down``, ``Booting``...), ``runtime`` (the runtime
    key, e.g. ``com.apple.CoreSimulator.SimRuntime.iOS-18-2``) and ``available``."""

    udid: str
    name: str
    state: str
    runtime: str
    available: bool = True


@dataclasses.dataclass(frozen=True)
class LogLine:
    """One record of ``log stream --style ndjson``: its ``eventMessage`` (one pair of
    quotes around the whole message, which older React Native wrote, removed) and its
    ``processID`` (``None`` when absent)."""

    message: str
    pid: int | None


def parse_ndjson(line: str) -> LogLine | None:
    """The :class:`LogLine` of one ``log stream --style ndjson`` line (``None`` for the
    header and any line that is not a JSON object with an ``eventMessage``)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("eventMessage"), str):
        return None
    message = obj["eventMessage"].strip()
    if len(message) >= 2 and message[0] == message[-1] == "'":
        message = message[1:-1]
    pid = obj.get("processID")
    return LogLine(message, pid if isinstance(pid, int) and not isinstance(pid, bool)
                   and pid > 0 else None)


class LogStream:
    """A running ``simctl spawn <udid> log stream --style ndjson``, read by a thread from its
    first line on (the header line is not JSON and marks readiness).

    One stream serves a whole campaign; each launch reads the window since its
    :meth:`open_window` (older lines are dropped then, so memory stays bounded). ``on_line``
    is called after each line (a launch's wake-up). The stream ends by itself when the
    simulator shuts down (``simctl spawn`` runs it inside the simulator).
    """

    def __init__(self, proc: "subprocess.Popen[str]",
                 on_line: Callable[[], None] | None = None) -> None:
        self.proc = proc
        self.on_line = on_line
        self._raw: list[str] = []
        self._lines: list[LogLine] = []
        self._dropped = 0
        self._ready = threading.Event()
        self._ended = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True, name="log-stream")
        self._thread.start()

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                line = stdout.readline(_MAX_LINE)
                if not line:
                    break
                if not line.endswith("\n"):  # over-long: skip the rest of it
                    while True:
                        rest = stdout.readline(_MAX_LINE)
                        if not rest or rest.endswith("\n"):
                            break
                record = parse_ndjson(line.rstrip("\n"))
                with self._lock:
                    if len(self._raw) < _MAX_WINDOW_LINES:
                        self._raw.append(line.rstrip("\n"))
                    else:
                        self._dropped += 1
                    if record is not None and "COLDSTART " in record.message:
                        self._lines.append(record)
                self._ready.set()
                callback = self.on_line
                if callback is not None:
                    callback()
        except (OSError, ValueError):
            pass
        finally:
            self._ended.set()
            self._ready.set()
            callback = self.on_line
            if callback is not None:
                callback()

    def wait_ready(self, timeout_s: float) -> bool:
        """True once the stream printed its first line (its header) and still runs."""
        return self._ready.wait(timeout_s) and self.alive

    @property
    def alive(self) -> bool:
        """False once the stream ended (the simulator shut down, or it was stopped)."""
        return not self._ended.is_set() and self.proc.poll() is None

    def open_window(self) -> None:
        """Start a launch's window: lines read so far are dropped."""
        with self._lock:
            self._raw, self._lines, self._dropped = [], [], 0

    def protocol_lines(self, start: int = 0) -> list[LogLine]:
        """The window's records that carry a protocol line, from the ``start``-th on."""
        with self._lock:
            return self._lines[start:]

    def raw_window(self) -> str:
        """The window's raw ndjson lines (for the launch's ``log.ndjson`` artifact)."""
        with self._lock:
            text = "\n".join(self._raw) + "\n"
            if self._dropped:
                text += f"[coldstart: {self._dropped} more lines not kept]\n"
            return text

    def stop(self) -> None:
        """Stop the stream (a leaked ``log stream`` slows the simulator down)."""
        self.on_line = None
        kill_group(self.proc)
        self._thread.join(2)
        if self.proc.stdout is not None and not self._thread.is_alive():
            self.proc.stdout.close()


class Simctl:
    """``xcrun simctl`` commands (formats: Apple's ``simctl help``, docs/formats.md section D5)."""

    def __init__(self, xcrun: Xcrun) -> None:
        self.xcrun = xcrun

    def devices(self) -> list[SimDevice]:
        """Every simulator (``simctl list -j devices``).

        Raises:
            XcrunError: simctl failed or printed something that is not its JSON.
        """
        proc = self.xcrun.run("simctl", "list", "-j", "devices", timeout_s=60.0)
        try:
            groups = json.loads(proc.stdout)["devices"]
            items = [(str(runtime), item) for runtime, entries in groups.items()
                     for item in entries or [] if isinstance(item, dict)]
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            raise XcrunError("`xcrun simctl list -j devices` printed no device list",
                             "run it yourself to see what is wrong",
                             output=proc.stdout[:2000]) from None
        return [SimDevice(udid=str(item["udid"]), name=str(item.get("name")),
                          state=str(item.get("state")), runtime=runtime,
                          available=bool(item.get("isAvailable", True)))
                for runtime, item in items if item.get("udid")]

    def device(self, udid: str) -> SimDevice | None:
        """The simulator with this UDID now (its current ``state``), or ``None``."""
        return next((d for d in self.devices() if d.udid.lower() == udid.lower()), None)

    def resolve(self, udid: str | None = None, name: str | None = None) -> SimDevice:
        """The simulator with this UDID, or the available one named ``name`` (a booted one
        first when several share the name).

        Raises:
            UsageError: no such simulator, or it is unavailable (its runtime is missing).
        """
        from ...errors import UsageError

        devices = self.devices()
        if udid:
            match = [d for d in devices if d.udid.lower() == udid.lower()]
            what = f"UDID {udid}"
        else:
            match = sorted((d for d in devices if d.name == name),
                           key=lambda d: (d.state != BOOTED, not d.available))
            what = f"name {(name or '')[:80]!r}"
        if not match:
            known = ", ".join(f"{d.name} ({d.udid}, {d.state})" for d in devices[:8])
            raise UsageError(f"no simulator with {what}",
                             f"pick one of: {known}" if known else
                             "create one with `xcrun simctl create` or in Xcode")
        device = match[0]
        if not device.available:
            raise UsageError(f"simulator {device.name} ({device.udid}) is unavailable",
                             "install its runtime in Xcode, or pick another simulator")
        return device

    def boot(self, udid: str, timeout_s: float = 300.0) -> None:
        """Boot the simulator if needed and wait until it has finished booting
        (``simctl bootstatus <udid> -b``). Raises XcrunError."""
        self.xcrun.run("simctl", "bootstatus", udid, "-b", timeout_s=timeout_s)

    def install(self, udid: str, app_path: str) -> None:
        """``simctl install <udid> <app>``. Raises XcrunError."""
        self.xcrun.run("simctl", "install", udid, app_path, timeout_s=300.0)

    def app_container(self, udid: str, bundle_id: str) -> str | None:
        """``simctl get_app_container <udid> <bundle> app``: the installed ``.app`` folder on
        this Mac, or ``None`` when the app is not installed (an erased simulator).

        Raises:
            XcrunError: any other failure (e.g. the simulator is not booted).
        """
        proc = self.xcrun.run("simctl", "get_app_container", udid, bundle_id, "app",
                              check=False, timeout_s=30.0)
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip().splitlines()[-1]
        if any(mark in proc.stdout + proc.stderr for mark in _NOT_INSTALLED):
            return None
        raise error_of("simctl", ("get_app_container", udid, bundle_id), proc)

    def terminate(self, udid: str, bundle_id: str) -> bool:
        """``simctl terminate``: True when the app was stopped, False when it was not
        running.

        Raises:
            XcrunError: any other failure (e.g. the simulator is not booted).
        """
        proc = self.xcrun.run("simctl", "terminate", udid, bundle_id, check=False,
                              timeout_s=30.0)
        if proc.returncode == 0:
            return True
        if any(mark in proc.stdout + proc.stderr for mark in _NOT_RUNNING):
            return False
        raise error_of("simctl", ("terminate", udid, bundle_id), proc)

    def launch(self, udid: str, bundle_id: str, args: Sequence[str] = (),
               env: dict[str, str] | None = None, terminate_running: bool = True) -> int:
        """``simctl launch [--terminate-running-process] <udid> <bundle> <args...>`` with
        ``env`` passed as ``SIMCTL_CHILD_<name>`` (simctl strips the prefix); returns the
        pid simctl prints (``<bundle>: <pid>``).

        Raises:
            XcrunError: the launch request failed (e.g. the simulator is not booted), or
                simctl printed no pid.
        """
        child_env = {f"SIMCTL_CHILD_{k}": v for k, v in (env or {}).items()}
        flags = ["--terminate-running-process"] if terminate_running else []
        proc = self.xcrun.run("simctl", "launch", *flags, udid, bundle_id, *args,
                              env=child_env, timeout_s=60.0)
        match = _LAUNCH_PID_RE.search(proc.stdout)
        if match is None:
            raise XcrunError(f"`xcrun simctl launch` printed no pid: "
                             f"{proc.stdout.strip()[:200]!r}", "check the app is installed",
                             output=proc.stdout + proc.stderr)
        return int(match.group("pid"))

    def openurl(self, udid: str, url: str) -> None:
        """``simctl openurl <udid> <url>`` (starts the app that handles the scheme).
        Raises XcrunError."""
        self.xcrun.run("simctl", "openurl", udid, url, timeout_s=60.0)

    def launchctl_setenv(self, udid: str, env: dict[str, str], unset: bool = False) -> None:
        """``simctl spawn <udid> launchctl setenv K V`` (or ``unsetenv K``) for each key:
        processes launched afterwards in the simulator inherit them. Raises XcrunError."""
        for key, value in env.items():
            args = ("unsetenv", key) if unset else ("setenv", key, value)
            self.xcrun.run("simctl", "spawn", udid, "launchctl", *args, timeout_s=30.0)

    def app_pid(self, udid: str, bundle_id: str) -> int | None:
        """The pid of the app's ``UIKitApplication:<bundle>[...]`` job in the simulator's
        ``launchctl list`` (columns ``PID``, ``Status``, ``Label``), or ``None`` when it is
        not running.

        Raises:
            XcrunError: the simulator did not answer (e.g. it shut down).
        """
        proc = self.xcrun.run("simctl", "spawn", udid, "launchctl", "list", timeout_s=30.0)
        label = f"UIKitApplication:{bundle_id}["
        for line in proc.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[2].startswith(label):
                return int(parts[0]) if parts[0].strip().isdigit() else None
        return None

    def log_show(self, udid: str, since_epoch: float, limit_bytes: int = 8 * 1024 * 1024
                 ) -> tuple[list[LogLine], str]:
        """The unified log's React Native records since ``since_epoch`` (host time, given
        to ``log show`` as local ``YYYY-MM-DD HH:MM:SS``): ``simctl spawn <udid> log show
        --style ndjson --info --start <time> --predicate 'subsystem == "..."'`` (Apple's
        ``log help show``). The log keeps what a ``log stream`` that died did not deliver
        (issue #44). Returns the records that carry a protocol line and the raw text (cut
        at ``limit_bytes``).

        Raises:
            XcrunError: the simulator did not answer.
        """
        start = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since_epoch))
        proc = self.xcrun.run("simctl", "spawn", udid, "log", "show", "--style", "ndjson",
                              "--info", "--start", start, "--predicate",
                              f'subsystem == "{RN_LOG_SUBSYSTEM}"', timeout_s=60.0)
        raw = proc.stdout[:limit_bytes]
        records = [r for r in (parse_ndjson(line) for line in raw.splitlines()[:200000])
                   if r is not None and "COLDSTART " in r.message]
        return records, raw

    def log_stream(self, udid: str, on_line: Callable[[], None] | None = None,
                   level: str = "info") -> LogStream:
        """Start ``simctl spawn <udid> log stream --style ndjson --level <level>
        --predicate 'subsystem == "com.facebook.react.log"'``."""
        proc = self.xcrun.popen("simctl", "spawn", udid, "log", "stream", "--style", "ndjson",
                                "--level", level, "--predicate",
                                f'subsystem == "{RN_LOG_SUBSYSTEM}"',
                                stderr=subprocess.DEVNULL)
        return LogStream(proc, on_line)
