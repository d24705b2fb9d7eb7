"""What the Android launcher keeps of one device and one launch: the device's recent adb
calls (:class:`CallLog`, the evidence an infra error keeps) and what the log said about one
launch (:class:`LaunchWatch`: its protocol events, its pid and a death), read from
``logcat -v threadtime`` lines (:mod:`.text`)."""

from __future__ import annotations

import collections
import time

from ...store.store import utc_now
from ...protocol import ProtocolEvent, parse_line
from .text import DIED, FATAL_SIGNAL, JAVA_PROCESS, START_PROC, parse_threadtime
from .transport import AdbTransport, ShellResult, TransportError, short_command

__all__ = ["CallLog", "LaunchWatch"]


class CallLog:
    """The device's transport, with each shell call written to a short log (the evidence
    an infra error keeps)."""

    def __init__(self, transport: AdbTransport, limit: int = 60) -> None:
        self.transport = transport
        self.lines: collections.deque[str] = collections.deque(maxlen=limit)

    def note(self, text: str) -> None:
        self.lines.append(f"{utc_now()} {text}")

    def shell(self, command: str, timeout_s: float) -> ShellResult:
        started = time.monotonic()
        try:
            result = self.transport.shell(command, timeout_s)
        except TransportError as exc:
            self.note(f"`{short_command(command, 90)}` failed after "
                      f"{time.monotonic() - started:.3f} s: {exc.message}")
            raise
        last = next((ln.strip() for ln in reversed(result.output.splitlines()) if ln.strip()),
                    "")
        self.note(f"`{short_command(command, 90)}` -> status {result.exit_code} in "
                  f"{result.duration_ms:.0f} ms: {last[:160]}")
        return result

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class LaunchWatch:
    """What the log said about one launch: its events, its pid, and a death."""

    def __init__(self, launch_id: str, package: str, old_pids: frozenset[int]) -> None:
        self.launch_id = launch_id
        self.package = package
        self.old_pids = old_pids
        self.events: list[ProtocolEvent] = []
        self.pid: int | None = None
        self.death: str | None = None
        self.stale = 0
        self.done = False
        self.error_at: float | None = None

    def _ours(self, pid: int) -> bool:
        return pid not in self.old_pids and (self.pid is None or pid == self.pid)

    def take(self, line: str, now: float) -> None:
        entry = parse_threadtime(line)
        if entry is None:
            return
        if entry.tag == "ReactNativeJS":
            event = parse_line(entry.msg).event
            if event is None:
                return
            # another launch's line, or this id's from a process of before this launch
            # (a driver killed mid-launch ran this id, and --resume runs it again)
            if event.id != self.launch_id or entry.pid in self.old_pids or (
                    self.pid is not None and entry.pid != self.pid):
                self.stale += 1
                return
            self.pid = self.pid if self.pid is not None else entry.pid
            self.events.append(event)
            if event.phase == "done":
                self.done = True
            elif event.phase == "error" and self.error_at is None:
                self.error_at = now
        elif entry.tag == "ActivityManager":
            started, died = START_PROC.match(entry.msg), DIED.match(entry.msg)
            if started and started.group(2) == self.package:
                pid = int(started.group(1))
                if self.pid is None and pid not in self.old_pids:
                    self.pid = pid
                elif self.pid is not None and pid != self.pid:
                    self.death = f"a new process {pid} started: pid {self.pid} is gone"
            elif died and died.group(1) == self.package and self._ours(int(died.group(2))):
                self.pid, self.death = int(died.group(2)), entry.msg
        elif entry.tag == "libc":
            fatal = FATAL_SIGNAL.match(entry.msg)
            if fatal and self._ours(int(fatal.group(1))) and (
                    self.pid is not None or f"({self.package[:15]})" in entry.msg):
                self.pid, self.death = int(fatal.group(1)), entry.msg
        elif entry.tag == "AndroidRuntime":
            java = JAVA_PROCESS.match(entry.msg)
            if java and java.group(1) == self.package and self._ours(int(java.group(2))):
                self.pid, self.death = int(java.group(2)), entry.msg
