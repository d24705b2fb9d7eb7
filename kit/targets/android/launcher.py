"""The Android launcher: one cold launch per call on one device (a
:class:`kit.launch.Launcher`), observed and turned into a record through
:mod:`kit.observe` (the one outcome table; this module never picks an outcome).

One launch (docs/formats.md sections D2 and D6):

1. the device is made usable first: reconnected after a drop (with backoff), then, after any
   reconnect, a reboot or a sign that the system is down, waited for until it is ready
   (:func:`~kit.targets.android.device.wait_until_ready`: ``sys.boot_completed=1``, the
   activity and package services up); a reboot is noticed by the boot id, logged and kept in
   the next record (``extra.android.reboot``). This happens before the launch is made, so it
   costs no attempt; a device still gone after ``reconnect_s`` is an infra error, and the
   campaign loop's backoff and budget take over (:class:`kit.campaign.RetryPolicy`);
2. one round trip: ``am force-stop``; clear the main, system and crash buffers; log a
   marker (the follower reads nothing before it, so no line of an earlier launch, nor a
   new follower's replay of the buffers, is taken for this one); read, each after its own
   marker, ``sys.boot_completed``, the boot id, the device clock and uptime (crash
   evidence is matched by pid and by device time, never host time) and ``pm path``: the
   installed build must be the campaign's (:class:`~.installed.InstalledBuild`), and an
   app that is no longer installed (removed by someone else) is installed again; a logd
   that is restarting (``logcat -c`` cannot reach it) is waited for first;
3. ``am start -W -a VIEW -d <scenario URL> -n <component>``;
   :func:`~kit.targets.android.text.check_am_start` turns a launch that was not made (exit
   status, ``Can't find service``, no ``Status: ok`` / ``LaunchState``) into an infra
   error, retried and never counted;
4. a ``logcat`` follower that runs for the whole campaign delivers the app's ``COLDSTART``
   lines (tag ``ReactNativeJS``; other launch ids are stale and ignored), ``ActivityManager``
   process starts and deaths, ``libc`` fatal signals and ``AndroidRuntime`` fatal
   exceptions; when the log is quiet for ``poll_s`` a ``pidof`` checks the process; a
   follower that dies under the launch is started again and replays from the marker, with
   backoff (a logd that restarts refuses readers for about 2 s), while ``pidof`` goes on
   watching the process: a death meanwhile is read from exit-info and DropBox (issue #44);
5. the observation ends at ``done`` (lines already received are still read, then one
   ``pidof``: a crash in teardown, its lines still on their way, counts), at a death, at
   the timeout (the app is force-stopped), or ``error_grace_s`` after an ``error`` line: a
   fatal JS error prints ``error`` and then dies, so an ``error`` is only an ``app-error``
   if the process outlives the grace period;
6. on a death, :func:`~kit.targets.android.evidence.collect_death` gathers the evidence of
   this pid only.

Every infra error keeps its evidence: the ``am`` output, the lines seen, and this device's
recent adb calls (``transport-log.txt``, also attached to the error as ``evidence``).
"""

from __future__ import annotations

import collections
import dataclasses
import re
import threading
import time
import uuid
from typing import Any, Callable

from ...launch import LaunchContext
from ...store.store import utc_now
from ...errors import InfraError
from ...observe import Observation, ProcessEnd, make_record
from ...records import LaunchRecord
from .device import (BOOT_ID_PATH, UPTIME_PATH, WRAP_OPTIONS, ApkInfo, DeviceNotReady,
                     DeviceSetup, wait_until_ready, wrap_property)
from .evidence import LaunchWindow, collect_death, earlier_pids, package_missing
from .follow import FOLLOW_COMMAND, MARK_TAG, LogFollow, is_mark
from .installed import ForeignBuild, InstalledBuild
from .text import NO_SERVICE, AmStartFailed, check_am_start, marked_command, read_marked
from .transport import AdbTransport, TransportError, shell_join
from .watch import CallLog, LaunchWatch

__all__ = ["AndroidLauncher", "AndroidTimeouts", "FOLLOW_COMMAND", "ForeignBuild"]

_PREP_MARK = "==coldstart-prep=="
_NO_LOG_TOOL = re.compile(r"\blog: (?:inaccessible or not found|not found|No such file)")
#: what ``logcat`` prints while logd is not up (liblog cannot reach its socket:
#: logcat.cpp's ``Logcat read failure``; ``-c``: ``failed to clear the '<buffer>' log``)
_LOGD_DOWN = re.compile(r"Logcat read failure|failed to clear the '\w+' log")


def _prep_command(package: str, marker: str) -> str:
    """Force-stop, clear the logs, log ``marker`` (the follower skips every line before it:
    a new follower first replays the buffers), then each value after its own marker
    (:func:`~kit.targets.android.text.read_marked`): ``sys.boot_completed``, the boot id,
    the clock, the uptime, system_server's pid and the installed APK's path."""
    return shell_join(["am", "force-stop", package],
                      ["logcat", "-b", "main", "-b", "system", "-b", "crash", "-c"],
                      ["log", "-p", "i", "-t", MARK_TAG, marker],
                      *marked_command(_PREP_MARK, [
                          ("boot_completed", ["getprop", "sys.boot_completed"]),
                          ("boot_id", ["cat", BOOT_ID_PATH]),
                          ("date", ["date", "+%Y-%m-%d %H:%M:%S"]),
                          ("uptime", ["cat", UPTIME_PATH]),
                          ("system_pid", ["pidof", "system_server"]),
                          ("apk_path", ["pm", "path", package])]))


@dataclasses.dataclass(frozen=True)
class _Start:
    """The device clock (``YYYY-MM-DD HH:MM:SS``) and uptime (s) when a launch began;
    ``""`` / ``None`` when unreadable."""

    clock: str
    uptime: float | None


@dataclasses.dataclass(frozen=True)
class AndroidTimeouts:
    """Durations of an Android campaign, in seconds.

    Attributes:
        call_s: any one adb call (``am start`` gets the launch timeout on top).
        poll_s: quiet time after which ``pidof`` checks the process.
        report_wait_s: how long to wait after a death for its report (DropBox entry,
            exit-info) to be written.
        reconnect_s: how long to try to get a dropped device back, and how long a device
            may take to be ready again, before the launch fails.
        error_grace_s: how long to watch for a death after an ``error`` line.
    """

    call_s: float = 30.0
    poll_s: float = 1.0
    report_wait_s: float = 8.0
    reconnect_s: float = 60.0
    error_grace_s: float = 3.0


class AndroidLauncher:
    """Cold-launches the app on one device (see the module doc).

    Args:
        transport: the device's transport.
        setup: from :func:`~kit.targets.android.device.prepare_device`.
        timeouts: see :class:`AndroidTimeouts`.
        log: takes one line for the user (reboots, waits for a device).
        apk: the campaign's APK (installed again when another build replaced it), or
            ``None`` (the build found installed at the first launch is the campaign's).

    Attributes:
        reboots: reboots noticed on this device during the campaign (a new boot id).
        system_restarts: runtime restarts noticed (system_server's pid changed, same boot).
    """

    target = "android"

    def __init__(self, transport: AdbTransport, setup: DeviceSetup,
                 timeouts: AndroidTimeouts | None = None,
                 log: Callable[[str], None] = lambda _line: None,
                 apk: ApkInfo | None = None) -> None:
        self.transport = transport
        self.apk = apk
        self.setup = setup
        self.device = transport.serial
        self.timeouts = timeouts or AndroidTimeouts()
        self.package = setup.package
        self.log = log
        self.reboots = 0
        self.system_restarts = 0
        self._calls = CallLog(transport)
        self._boot_id = setup.boot_id
        #: system_server's pid ("" until seen; None: this device does not show it)
        self._system_pid: str | None = ""
        self._follower: Any = None
        self._broken = False
        self._need_ready = False
        self._abort = threading.Event()
        self._old_pids: collections.deque[int] = collections.deque(maxlen=256)
        self._seeded = False  # the app's processes from before this launcher are known
        self._pending: dict[str, Any] = {}
        self._marks = True  # the device's `log` tool works (else: drop what came before)
        #: the campaign's build on this device (checked before every launch)
        self.build = InstalledBuild(self.package, apk, self.device, log)

    # -- lifecycle --------------------------------------------------------------------
    def abort(self) -> None:
        """Stop the launch in flight (Ctrl-C): its loop ends at the next line or poll."""
        self._abort.set()

    def open(self) -> None:
        """Connect and start the log follower now, outside any launch's time. Never raises
        for the device: a failure is left to the first launch, which recovers or records
        an infra error (retried)."""
        try:
            self._connect()
        except TransportError as exc:
            self._calls.note(f"open failed: {exc.message}")
            self._broken = True
        except DeviceNotReady as exc:
            self._calls.note(f"open failed: {exc.message}")
            self._need_ready = True

    def close(self) -> None:
        """Stop the log follower and release the transport."""
        if self._follower is not None:
            self._follower.close()
            self._follower = None
        self.transport.close()

    def _connect(self) -> None:
        """Reconnect after a drop, wait until the device is ready after a reconnect or a
        sign of a reboot, (re)start the log follower."""
        t = self.timeouts
        if self._follower is not None and not self._follower.alive:
            self._calls.note(f"the log stream ended ({self._follower.end_reason})")
            self._follower, self._broken = None, True
        if self._broken:
            if self._follower is not None:
                self._follower.close()
                self._follower = None
            self._calls.note("reconnecting")
            self.transport.reconnect(t.reconnect_s, should_stop=self._abort.is_set)
            self._broken, self._need_ready = False, True
        if self._need_ready:
            readiness, waited = wait_until_ready(self._calls, self.device, t.reconnect_s,
                                                 t.call_s, should_stop=self._abort.is_set)
            self._need_ready = False
            if waited > 0:
                self._pending["ready_wait_s"] = round(waited, 3)
                self.log(f"{self.device}: ready again after {waited:.1f} s")
            if readiness.boot_id and readiness.boot_id != self._boot_id:
                self._rebooted(readiness.boot_id)
        if self._follower is None:
            self._follower = self.transport.stream(FOLLOW_COMMAND, t.call_s)
        if not self._seeded:  # once, before this launcher's first force-stop
            self._old_pids.extend(earlier_pids(self._calls, self.package, t.call_s))
            self._seeded = True

    def _rebooted(self, boot_id: str) -> None:
        """Note a reboot (a new boot id): pids start again, a wrap property is set again."""
        previous, self._boot_id = self._boot_id, boot_id
        self.reboots += 1
        self._old_pids.clear()
        self._system_pid = "" if self._system_pid is not None else None
        self._pending["reboot"] = {"previous_boot_id": previous, "boot_id": boot_id,
                                   "reboots": self.reboots}
        self._calls.note(f"rebooted: boot id {previous} -> {boot_id}")
        self.log(f"{self.device}: the device rebooted (boot id {previous[:8]} -> "
                 f"{boot_id[:8]}); reboots so far: {self.reboots}")
        if self.setup.poison_method == "wrap-property":
            self._calls.shell(shell_join(["setprop", wrap_property(self.package),
                                          WRAP_OPTIONS]), self.timeouts.call_s)

    def _system_restarted(self, pid: str) -> None:
        """Note a runtime restart (system_server has a new pid, the boot id is the same)."""
        previous, self._system_pid = self._system_pid, pid
        self.system_restarts += 1
        self._old_pids.clear()
        self._pending["system_restart"] = {"previous_pid": previous, "pid": pid,
                                           "system_restarts": self.system_restarts}
        self._calls.note(f"system_server restarted: pid {previous} -> {pid}")
        self.log(f"{self.device}: the system server restarted (pid {previous} -> {pid})")

    # -- one launch -------------------------------------------------------------------
    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch; see the module doc. Never raises for what the app does.

        Raises:
            InfraError: the launch could not be made or observed (device gone, not ready,
                rebooted, ``am start`` failed, the app stopped by someone else), or it was
                aborted; ``evidence`` holds this device's recent adb calls.
        """
        if self._abort.is_set():
            raise InfraError("aborted", "resume with --resume")
        started_at, t0 = utc_now(), time.monotonic()
        round_trips = self.transport.round_trips
        seen: list[str] = []
        watch = LaunchWatch(ctx.launch_id, self.package, frozenset(self._old_pids))
        self._calls.note(f"launch {ctx.launch_id} (attempt {ctx.attempt})")
        marker = f"launch {ctx.launch_id} {uuid.uuid4().hex[:8]}"
        try:
            start = self._begin(marker)
            # the processes of before, as _begin left them (a reboot noticed there clears
            # them: pids start again; a first connect adds those of an earlier run)
            watch.old_pids = frozenset(self._old_pids)
            return self._observe(marker, ctx, watch, start, seen, started_at, t0,
                                 round_trips)
        except ForeignBuild as exc:
            self._keep_evidence(ctx, exc, seen)
            observation = Observation(events=(), end=ProcessEnd.LOST, timeout_s=ctx.timeout_s,
                                      infer=bool(ctx.scenario.infer),
                                      infra=f"{exc.message} ({exc.hint})" if exc.hint
                                      else exc.message, persistent=True)
            return make_record(ctx, target=self.target, device=self.device,
                               observation=observation, started_at=started_at,
                               wall_ms=(time.monotonic() - t0) * 1000.0,
                               artifacts=[f"{ctx.artifacts_rel}/transport-log.txt"],
                               android={"installed_apk": self.build.path})
        except InfraError as exc:
            if isinstance(exc, TransportError):
                self._broken = True
            elif isinstance(exc, (DeviceNotReady, AmStartFailed)):
                self._need_ready = True
            self._keep_evidence(ctx, exc, seen)
            raise
        finally:
            if watch.pid is not None:
                self._old_pids.append(watch.pid)

    def _keep_evidence(self, ctx: LaunchContext, exc: InfraError, seen: list[str]) -> None:
        """Write the lines seen and the adb call log into the launch's artifacts, and attach
        them to ``exc`` as ``evidence`` (kept in ``infra-error.txt`` by the loop)."""
        log = self._calls.text()
        try:
            (ctx.artifacts_dir / "transport-log.txt").write_text(log)
            if seen:
                (ctx.artifacts_dir / "logcat.txt").write_text("\n".join(seen) + "\n")
        except OSError:
            pass
        before = getattr(exc, "evidence", None)
        setattr(exc, "evidence", (f"{before}\n\n" if before else "") +
                f"-- adb calls on {self.device} --\n{log}")

    def _begin(self, marker: str) -> _Start:
        """Make the device usable, force-stop the app, clear the logs, check that the
        installed build is the campaign's (:class:`~.installed.InstalledBuild`); returns the
        device clock
        and uptime. A failure before the launch is made (a drop noticed now, a reboot, a
        system not up) is recovered here: one reconnect, then waits until ready; it costs
        no attempt. A reconnect that fails is the campaign loop's to retry (its backoff).
        Each value is read by its own marker: one that is unreadable (a device whose
        ``boot_id`` cannot be read) is unknown and concludes nothing.

        Raises:
            TransportError, DeviceNotReady: still failing. ForeignBuild: see
                :meth:`~.installed.InstalledBuild.check`.
        """
        for turn in range(3):
            last, reconnecting = turn == 2, self._broken
            try:
                self._connect()
                result = self._calls.shell(_prep_command(self.package, marker),
                                           self.timeouts.call_s)
                result = self._logd_up(result, marker)
            except TransportError:
                if last or reconnecting:  # a reconnect already waited reconnect_s
                    raise
                self._broken = True
                continue
            # stderr (separate over shell v2) holds what failed; each value follows its mark
            out, values = result.output, read_marked(result.stdout, _PREP_MARK)
            booted, boot_id = values.get("boot_completed", ""), values.get("boot_id", "")
            system_pid = values.get("system_pid", "")
            down = NO_SERVICE.search(out)
            if self._marks and _NO_LOG_TOOL.search(out):
                self._marks = False
                self._calls.note("no `log` tool: lines before a launch are dropped as they "
                                 "stand when it begins")
            if self._system_pid == "" and not system_pid and down is None and booted == "1":
                self._system_pid = None  # up, yet no system_server pid: not shown here
            if down is not None or booted != "1" or (self._system_pid and not system_pid):
                self._need_ready = True
                if last:
                    raise DeviceNotReady(f"{self.device} is not ready: "
                                         f"{down.group(0) if down else 'booting'}",
                                         "the launch is retried", evidence=out[-4000:])
                continue
            if boot_id and boot_id != self._boot_id:
                if not self._boot_id:  # unreadable until now: nothing to compare with
                    self._boot_id = boot_id
                else:
                    self._rebooted(boot_id)  # noticed between launches: wait, go again
                    self._need_ready = True
                    continue
            if self._system_pid and system_pid != self._system_pid:
                self._system_restarted(system_pid)
                self._need_ready = True
                continue
            if self._system_pid == "":
                self._system_pid = system_pid
            if package_missing(_after_mark(result.stdout, f"{_PREP_MARK}:apk_path")):
                # removed by someone else (issue #44): installed again, as another build is
                reinstalled = self.build.missing(self._calls, self.timeouts.call_s,
                                                 self.setup.poison_method)
            else:
                reinstalled = self.build.check(self._calls, values.get("apk_path", ""),
                                               self.timeouts.call_s, self.setup.poison_method)
            if reinstalled is not None:
                self._pending["reinstalled"] = reinstalled
            uptime = values.get("uptime", "")
            return _Start(values.get("date", ""), float(uptime) if uptime else None)
        raise DeviceNotReady(f"{self.device} kept rebooting", "the launch is retried")

    def _logd_up(self, result: Any, marker: str) -> Any:
        """The prep's result once logd is up: while ``logcat`` says logd is not (it is
        restarting: its readers are refused and the marker just logged is dropped), the
        prep is made again with backoff, for up to ``reconnect_s``; then it goes on as it
        stands (issue #44)."""
        waited, delay = 0.0, 0.25
        while _LOGD_DOWN.search(result.output) and waited < self.timeouts.reconnect_s and \
                not self._abort.is_set():
            self._calls.note(f"logd is not up: waiting {delay:g} s")
            self._abort.wait(delay)
            waited += delay
            delay = min(delay * 2, 2.0)
            result = self._calls.shell(_prep_command(self.package, marker),
                                       self.timeouts.call_s)
        return result

    def _observe(self, marker: str, ctx: LaunchContext, watch: LaunchWatch, start: _Start,
                 seen: list[str], started_at: str, t0: float, round_trips: int
                 ) -> LaunchRecord:
        t = self.timeouts
        device_start = start.clock
        follow = LogFollow(self, marker)
        if self._marks:
            self._skip_to(marker, follow)
        else:
            self._follower.drain()
        t_am = time.monotonic()
        am = self._calls.shell(shell_join(
            ["am", "start", "-W", "-a", "android.intent.action.VIEW", "-d",
             ctx.scenario.to_url(), "-n", self.setup.component]), ctx.timeout_s + t.call_s)
        (ctx.artifacts_dir / "am-start.txt").write_text(am.output)
        artifacts = [f"{ctx.artifacts_rel}/am-start.txt"]
        am_fields = check_am_start(am, self.setup.sdk, self.device)
        timed_out = self._watch(watch, follow, t_am + ctx.timeout_s, seen)
        android: dict[str, Any] = {
            "pid": watch.pid, "launch_state": am_fields.get("LaunchState"),
            "am_status": am_fields.get("Status"),
            "total_time_ms": _int_or_none(am_fields.get("TotalTime")),
            "wait_time_ms": _int_or_none(am_fields.get("WaitTime")),
            "device_time": device_start, "stale_lines": watch.stale, "boot_id": self._boot_id}
        if follow.restarts:
            android["log_restarts"] = follow.restarts
        end, exit_code, signal, crash = ProcessEnd.ALIVE, None, None, None
        if watch.death is not None:
            window = LaunchWindow(self.package, watch.pid, watch.old_pids, device_start,
                                  self._boot_id, self.setup.sdk, self._system_pid or None,
                                  device_uptime=start.uptime)
            death = collect_death(self._calls, window, ctx.artifacts_dir, ctx.artifacts_rel,
                                  trigger=watch.death, what=self.device,
                                  report_wait_s=t.report_wait_s, call_timeout_s=t.call_s)
            if death.pid is None and not watch.events:
                raise InfraError(f"{self.device}: the app's process was never seen (no Start "
                                 f"proc line, no protocol line, no pid) and is gone: "
                                 f"{watch.death}", "the launch is retried")
            watch.pid = death.pid
            end, exit_code, signal, crash = death.end, death.exit_code, death.signal, \
                death.crash
            artifacts += death.artifacts
            android.update(pid=death.pid, death=watch.death, exit_info=death.exit_info)
        elif timed_out:
            self._force_stop()
            end = ProcessEnd.TIMED_OUT
        (ctx.artifacts_dir / "logcat.txt").write_text("\n".join(seen) + ("\n" if seen else ""))
        artifacts.append(f"{ctx.artifacts_rel}/logcat.txt")
        android["round_trips"] = self.transport.round_trips - round_trips
        android.update(self._pending)
        self._pending = {}
        observation = Observation(events=tuple(watch.events), end=end, timeout_s=ctx.timeout_s,
                                  infer=bool(ctx.scenario.infer), exit_code=exit_code,
                                  signal=signal, crash=crash, killed_note="force-stopped")
        return make_record(ctx, target=self.target, device=self.device,
                           observation=observation, started_at=started_at,
                           wall_ms=(time.monotonic() - t0) * 1000.0, artifacts=artifacts,
                           android=android)

    def _skip_to(self, marker: str, follow: LogFollow, wait_s: float = 5.0) -> None:
        """Drop the follower's lines up to this launch's marker. A marker that does not
        come within ``wait_s`` (a log that hides the tag) turns markers off for this device:
        the launch goes on, dropping what came before it.

        Raises:
            TransportError: the stream ended and could not be started again.
        """
        give_up = time.monotonic() + wait_s
        while True:
            follower = self._follower
            line = follower.get(min(0.25, max(0.0, give_up - time.monotonic())))
            if line is not None:
                if is_mark(line, marker):
                    return
                continue
            if not follower.alive:
                follow.restart([], skip=False)  # waits out the backoff; raises when spent
                give_up = time.monotonic() + wait_s
                continue
            if time.monotonic() >= give_up:
                self._marks = False
                self._calls.note(f"the launch marker did not come within {wait_s:g} s: "
                                 "markers off")
                return

    def _watch(self, watch: LaunchWatch, follow: LogFollow, deadline: float, seen: list[str]
               ) -> bool:
        """Read the log until ``done``, a death, ``error_grace_s`` after an ``error`` line,
        or ``deadline``; returns whether the deadline passed with the process alive. A
        follower that dies under the launch (``logcat: Unexpected EOF!``, exit 1) is
        started again: it replays the buffers from the launch's marker, and the lines
        already read are skipped, so nothing of the launch is lost (issue #23).

        Raises:
            TransportError: the log stream ended and could not be started again.
            InfraError: aborted.
        """
        t = self.timeouts
        quiet_since = time.monotonic()
        while True:
            follower = self._follower
            if self._abort.is_set():
                self._force_stop()
                raise InfraError("aborted", "resume with --resume")
            now = time.monotonic()
            if watch.death is not None:
                return False
            if watch.done:  # lines already here still count (a crash in teardown)
                for line in follower.drain() + follow.release(float("inf")):
                    if not follow.hold(line) and follow.fresh(line):
                        seen.append(line)
                        watch.take(line, now)
                if watch.death is None:
                    self._check_alive_at_done(watch)
                return False
            grace_end = watch.error_at + t.error_grace_s if watch.error_at is not None \
                else None
            if now >= deadline or (grace_end is not None and now >= grace_end):
                self._check_alive(watch)
                if watch.death is None and not follower.alive:
                    # the app lives on, but with no log its done or error is unknown
                    raise TransportError(
                        f"{self.device}: the log stream ended ({follow.why or 'ended'}) and "
                        f"could not be started again ({follow.restarts} tries); the app "
                        "still runs: the launch could not be observed", state="offline")
                return watch.death is None and now >= deadline and grace_end is None
            until = deadline if grace_end is None else min(deadline, grace_end)
            line = follower.get(min(t.poll_s, until - now, 0.25))
            if line is None:
                for held in follow.release(time.monotonic()):
                    if follow.fresh(held):
                        seen.append(held)
                        watch.take(held, time.monotonic())
                if not follower.alive:
                    # a dead log is not a dead app: start it again with backoff, and
                    # meanwhile pidof watches the process (its death is then read from
                    # exit-info, DropBox and the tombstone; issue #44)
                    if follow.due(time.monotonic()):
                        follow.restart(seen)
                        continue
                    self._abort.wait(min(0.1, max(0.0, until - time.monotonic())))
                if time.monotonic() - quiet_since >= t.poll_s:
                    quiet_since = time.monotonic()
                    self._check_alive(watch)
                continue
            if follow.hold(line) or not follow.fresh(line):
                continue
            seen.append(line)
            quiet_since = time.monotonic()
            watch.take(line, quiet_since)

    def _check_alive(self, watch: LaunchWatch) -> None:
        """``pidof``: a process that is gone (or replaced) is a death."""
        result = self._calls.shell(shell_join(["pidof", self.package]), self.timeouts.call_s)
        first = result.stdout.split()[:1]
        running = int(first[0]) if result.exit_code == 0 and first and first[0].isdigit() \
            else None
        if running is None:
            watch.death = "pidof: the process is gone"
        elif watch.pid is None and running not in watch.old_pids:
            watch.pid = running
        elif watch.pid is not None and running != watch.pid:
            watch.death = f"pidof: pid {watch.pid} is gone (now {running})"

    def _check_alive_at_done(self, watch: LaunchWatch) -> None:
        """One ``pidof`` once ``done`` is read: a process that died in teardown, whose
        crash lines are still on their way through logd and adb, is a death (the outcome
        table's row 2), not a completed launch. A check that cannot be made leaves the
        launch as the app reported it (the next launch reconnects)."""
        try:
            self._check_alive(watch)
        except TransportError:
            self._broken = True

    def _force_stop(self) -> None:
        try:
            self._calls.shell(shell_join(["am", "force-stop", self.package]),
                              self.timeouts.call_s)
        except TransportError:
            self._broken = True


def _after_mark(stdout: str, mark: str) -> str:
    """What ``stdout`` holds after the line ``mark`` (up to the next marker line);
    ``"package:"`` when the mark is missing (nothing is known: nothing is concluded)."""
    lines = stdout.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == mark)
    except StopIteration:
        return "package:"
    rest = []
    for line in lines[start + 1:]:
        if line.strip().startswith("==coldstart"):
            break
        rest.append(line)
    return "\n".join(rest)


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
