"""One cold launch per call on a physical iOS device (``xcrun devicectl``, Xcode 15+).

One launch:

1. after anything went wrong on this device (a failed command, a lost console), the kit
   first waits for the device to be listed as reachable again (``devicectl list
   devices``) and to answer a command (``device info processes``), with backoff (0.25,
   0.5, 1, 2, 4, 4... s) for up to ``reconnect_s``;
2. ``devicectl device process launch --console --terminate-existing --payload-url <url>
   --environment-variables {...} <bundle>`` starts the app cold with the scenario;
   ``OS_ACTIVITY_DT_MODE=YES`` makes the app's os_log lines (``Name[pid:tid] ...``) reach
   the console, which ends when the app dies;
3. each console line wakes the launch; it ends at ``done`` (the app is then looked for
   once, in the console's end or ``device info processes``: an app that died in teardown,
   its last line relayed after its death, is a death), at an ``error`` line once
   ``error_grace_s`` passed with the console open (a fatal JS error logs ``error`` and then
   aborts: a death within the grace is a crash), at the console's end, or at the timeout
   (hung: the app is terminated);
4. a console that ended early is a death only when the device is still reachable; a
   device that dropped off makes the launch an infra error (never counted), and a launch
   request devicectl refused with no line from the app is one too, and so is a timeout
   when the device is no longer reachable (a console that went quiet), and a timeout with
   no line and no process of the app on the device (devicectl's launch request hung: a
   tool failure, not the app hanging; issue #44). A console that ended with devicectl's
   own error (``CoreDeviceError error 4``: the relay was interrupted) while the app still
   runs is not the launch's end: the app's process is watched (``device info
   processes``) until it ends or the launch's timeout, and a death then waits for its
   ``.ips`` like any other (issue #44: the crash that followed 0.1 s later was lost);
   still running at the timeout, the launch could not be observed (infra error). After a
   death, the device's ``systemCrashLogs`` entries that are new, name the app (or are a
   ``JetsamEvent`` that names it) and this launch's pid are awaited for up to
   ``report_wait_s``, copied and parsed.

The app is left running after ``done`` (the next launch's ``--terminate-existing`` stops
it; :meth:`DeviceLauncher.close` after the last): one devicectl command per launch. An
app left running by a launch that was given up (an infra error) is terminated before the
next launch request (a request that hangs would not stop it).
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from pathlib import Path
from typing import Callable

from ...launch import LaunchContext
from ...store.store import utc_now
from ...errors import InfraError, UsageError
from ...observe import CrashEvidence, Observation, ProcessEnd, crash_evidence, make_record
from ...protocol import ProtocolEvent, iter_events
from ...records import LaunchRecord
from .app import POISON_ENV, AppBundle, bundle_for_id, read_app_bundle
from .console import Console
from .devicectl import Devicectl, PhysicalDevice
from .installed import ForeignBuild
from .reports import DEFAULT_REPORT_WAIT_S, read_report, report_matcher
from .xcrun import Xcrun, infra_error, wait_until

__all__ = ["DeviceLauncher", "setup_device"]

#: what devicectl says when a launch request meets a locked device (SpringBoard's denial
#: "for reason: Locked", FBSOpenApplicationErrorDomain error 7, ``BSErrorCodeDescription =
#: Locked``; docs/ios.md)
_LOCKED = re.compile(r"BSErrorCodeDescription = Locked|for reason: Locked|"
                     r"device was not, or could not,? be, unlocked")


class DeviceLauncher:
    """Cold-launches an app on one physical iOS device (see the module doc).

    Args:
        devicectl: the devicectl transport.
        device: the device.
        app: the app's bundle info.
        poison: set :data:`POISON_ENV` for the app.
        report_wait_s: seconds to wait for the device's crash report after a death.
        error_grace_s: seconds a death after an ``error`` line still makes it a crash.
        reconnect_s: seconds to wait for a device that dropped off to come back.
        log: progress lines for the user (stderr).
    """

    target = "ios-device"

    def __init__(self, devicectl: Devicectl, device: PhysicalDevice, app: AppBundle,
                 poison: bool = False, report_wait_s: float = DEFAULT_REPORT_WAIT_S,
                 error_grace_s: float = 2.0, reconnect_s: float = 60.0,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.devicectl = devicectl
        self.phone = device
        self.device = device.udid
        self.app = app
        self.poison = poison
        self.report_wait_s = report_wait_s
        self.error_grace_s = error_grace_s
        self.reconnect_s = reconnect_s
        self.log = log
        #: how often the device dropped off and came back during the campaign
        self.reconnects = 0
        self._abort = threading.Event()
        self._wake = threading.Event()
        self._console: Console | None = None
        self._suspect = False
        self._known: set[str] | None = None  # crash-log names already judged
        self._past_pids: set[int] = set()
        self._stopping: list[threading.Thread] = []
        self._pid_re = re.compile(rf"\b{re.escape(app.executable)}(?:\([^)]*\))?\[(\d+)")
        #: where the campaign's build is installed (``devicectl device info apps``: a new
        #: location at every install), once seen
        self._app_url: str | None = None
        #: installs of the app again after it was removed or replaced
        self.reinstalls = 0
        self._deadline = 0.0  # the launch in flight's timeout (monotonic)
        self._left_running = False  # a given-up launch may have left the app running

    def abort(self) -> None:
        """Stop the launch in flight (Ctrl-C)."""
        self._abort.set()
        self._wake.set()

    def close(self) -> None:
        """After the campaign: terminate the app (errors ignored) and wait for the last
        console to be stopped."""
        self._terminate_app()
        for stopper in self._stopping:
            stopper.join(5)
        self._stopping = []

    def _terminate_app(self) -> None:
        try:
            for proc in self.devicectl.processes(self.phone.identifier):
                exe = str(proc.get("executable") or "")
                if exe.rstrip("/").endswith(f"/{self.app.executable}") and \
                        isinstance(proc.get("processIdentifier"), int):
                    self.devicectl.terminate(self.phone.identifier, proc["processIdentifier"])
        except InfraError:
            pass

    def _reachable(self, probe: bool = False) -> bool:
        """Listed and not ``unavailable``; with ``probe``, it also answers a command
        (``device info processes``: its tunnel is up again)."""
        try:
            found = self.devicectl.find(self.phone.identifier)
            if found is None or not found.reachable:
                return False
            if probe:
                self.devicectl.processes(self.phone.identifier)
            return True
        except InfraError:
            return False

    def _ready(self) -> None:
        """Wait for a device that dropped off (module doc, step 1). Raises InfraError."""
        if not self._suspect:
            return
        if not self._reachable(probe=True):
            self.log(f"device {self.phone.name} ({self.device}) is not reachable: waiting up "
                     f"to {self.reconnect_s:g} s for it to come back")
            if not wait_until(lambda: self._reachable(probe=True), self.reconnect_s,
                              abort=self._abort.is_set):
                raise InfraError(f"device {self.phone.name} ({self.device}) did not come "
                                 f"back within {self.reconnect_s:g} s",
                                 "check the cable or network, unlock the device, and resume "
                                 "with --resume")
            self.reconnects += 1
            self.log(f"device {self.phone.name} is back")
        self._suspect = False

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch (module doc). Never raises for what the app does.

        Raises:
            InfraError: the device did not come back, devicectl failed, or the app never
                started (with the console as evidence).
        """
        self._abort.clear()
        started_at = utc_now()
        t0 = time.monotonic()
        try:
            self._ready()
            if self._left_running:  # stopped before the next request (issue #44)
                self._terminate_app()
                self._left_running = False
            self._check_app()
            if self._known is None:
                self._known = set(self.devicectl.crash_logs(self.phone.identifier))
            end, events, pid, console = self._run_unlocked(ctx)
        except ForeignBuild as exc:
            return exc.record(ctx, target=self.target, device=self.device,
                              started_at=started_at, t0=t0)
        except InfraError:
            self._suspect = True
            self._left_running = True
            raise
        text = console.text()
        (ctx.artifacts_dir / "console.txt").write_text(text)
        artifacts = [f"{ctx.artifacts_rel}/console.txt"]
        infra = evidence = None
        if end is ProcessEnd.DIED:
            infra, evidence, rel = self._judge_end(ctx, console, text, events, pid)
            if rel is not None:
                artifacts.append(rel)
            if evidence is not None and pid is None:
                pid = (evidence.crash or {}).get("pid")  # it died before a line named it
        if end is ProcessEnd.TIMED_OUT and not self._reachable():
            infra = (f"device {self.phone.name} ({self.device}) stopped answering during the "
                     "launch (the console went quiet, the device is unreachable): the app's "
                     "fate is unknown")
        elif end is ProcessEnd.TIMED_OUT and not events and not self._app_started():
            infra = (f"devicectl's launch request did not start the app within "
                     f"{ctx.timeout_s:g} s (no line from the app, no process of it on the "
                     "device): a tool failure, not the app hanging")
        if infra is not None:
            self._suspect = True
            self._left_running = True
            end = ProcessEnd.LOST
        if end is ProcessEnd.TIMED_OUT:
            self._terminate_app()
        if pid is not None:
            self._past_pids.add(pid)
        observation = Observation(events=tuple(events), end=end, timeout_s=ctx.timeout_s,
                                  infer=ctx.scenario.infer, crash=evidence, infra=infra,
                                  killed_note="terminated")
        return make_record(ctx, target=self.target, device=self.device,
                           observation=observation, started_at=started_at,
                           wall_ms=(time.monotonic() - t0) * 1000.0, artifacts=artifacts,
                           pid=pid)

    def _app_started(self) -> bool:
        """Whether a process of the app that no earlier launch ran is on the device (one
        ``device info processes``; ``True`` when it cannot be told: the launch then stays
        the app's)."""
        try:
            return self._new_app_pid(strict=True) is not None
        except InfraError:
            return True

    def _new_app_pid(self, strict: bool = False) -> int | None:
        """The pid of a process of the app that no earlier launch ran (one ``device info
        processes``), else ``None``; a device that does not answer gives ``None``, or,
        with ``strict``, raises InfraError."""
        try:
            running = self.devicectl.processes(self.phone.identifier)
        except InfraError:
            if strict:
                raise
            return None
        for proc in running:
            pid = proc.get("processIdentifier")
            if str(proc.get("executable") or "").rstrip("/").endswith(
                    f"/{self.app.executable}") and isinstance(pid, int) and \
                    pid not in self._past_pids:
                return pid
        return None

    def _wait_gone(self, pid: int) -> bool:
        """Watch the app's process (``device info processes`` every half second) until it
        is gone (``True``) or the launch's timeout passes (``False``); a check that cannot
        be made counts as still running."""
        while True:
            if self._gone_at_done(pid):
                return True
            left = self._deadline - time.monotonic()
            if left <= 0 or self._abort.is_set():
                return False
            self._abort.wait(min(0.5, left))

    def _check_app(self) -> None:
        """Before a launch: the installed app is the campaign's build (issue #23). Every
        install gets a new bundle location, so a location other than the one seen after
        the kit's install means someone else installed the app (another build, or the
        same one: it cannot be told apart here); the campaign's app is installed again,
        or, with no app to install, the campaign stops.

        Raises:
            ForeignBuild: see above. XcrunError: devicectl failed.
        """
        url = self.devicectl.app_url(self.phone.identifier, self.app.bundle_id)
        if url is not None and (self._app_url is None or url == self._app_url):
            self._app_url = url
            return
        why = ("the app is not installed" if url is None else
               f"{self.app.bundle_id} was installed again by someone else ({url})")
        no_app = not self.app.path or not Path(self.app.path).exists()
        if no_app and url is None and self._app_url is None:
            return  # never seen installed, nothing to install: the request says why
        if no_app:
            raise ForeignBuild(f"device {self.phone.name} ({self.device}): {why}: the "
                               "campaign stops and its remaining launches are abandoned",
                               "pass --ipa so that the kit can install it again, then run "
                               "again with --resume")
        self.log(f"device {self.phone.name}: {why}: installing {Path(self.app.path).name} "
                 "again")
        self.devicectl.install(self.phone.identifier, self.app.path)
        self.reinstalls += 1
        self._app_url = self.devicectl.app_url(self.phone.identifier, self.app.bundle_id)

    def _replaced(self) -> str | None:
        """Why a death with no crash report is not the app's own: the app was removed or
        installed again during the launch (an install terminates the running app and
        writes no report). ``None`` when it is as the kit left it, or cannot be told."""
        try:
            url = self.devicectl.app_url(self.phone.identifier, self.app.bundle_id)
        except InfraError:
            return None
        if self._app_url is None or url == self._app_url:
            return None
        return ("the app was uninstalled during the launch" if url is None else
                f"{self.app.bundle_id} was installed again by someone else during the launch "
                "(the install terminated the app)")

    def _run_unlocked(self, ctx: LaunchContext
                      ) -> tuple[ProcessEnd, list[ProtocolEvent], int | None, Console]:
        """:meth:`_run`, waiting out a locked device: a request devicectl refuses because
        the device is locked (issue #23: three attempts were spent in 4 s) is made again,
        with backoff, for up to ``reconnect_s``, after one line that asks to unlock it.

        Raises:
            InfraError: still locked after ``reconnect_s`` (or aborted).
        """
        give_up = time.monotonic() + self.reconnect_s
        delay = 0.5
        told = False
        while True:
            end, events, pid, console = self._run(ctx)
            if events or end is not ProcessEnd.DIED or not _LOCKED.search(console.text()):
                return end, events, pid, console
            if not told:
                self.log(f"device {self.phone.name} ({self.device}) is locked: unlock the "
                         f"device (waiting up to {self.reconnect_s:g} s)")
                told = True
            left = give_up - time.monotonic()
            if left <= 0 or self._abort.is_set():
                raise infra_error(f"device {self.phone.name} ({self.device}) stayed locked "
                                  f"for {self.reconnect_s:g} s", "unlock the device (or "
                                  "raise --reconnect-timeout) and resume with --resume",
                                  evidence=console.text())
            self._abort.wait(min(delay, left))
            delay = min(delay * 2, 4.0)

    def _run(self, ctx: LaunchContext
             ) -> tuple[ProcessEnd, list[ProtocolEvent], int | None, Console]:
        """Launch and read the console until the launch's end (module doc, steps 2-3); the
        timeout runs from the launch request."""
        env = {"OS_ACTIVITY_DT_MODE": "YES", **(POISON_ENV if self.poison else {})}
        self._wake.clear()
        t0 = time.monotonic()
        proc = self.devicectl.launch_console(self.phone.identifier, self.app.bundle_id,
                                             ctx.scenario.to_url(), env)
        console = Console(proc, self._wake)
        events: list[ProtocolEvent] = []
        pid: int | None = None
        consumed = 0
        error_at: float | None = None
        deadline = t0 + ctx.timeout_s
        self._deadline = deadline
        ended = False
        try:
            while True:
                ended = console.ended.is_set()  # read before the lines: none is missed
                lines = console.protocol_lines(consumed)
                consumed += len(lines)
                for line in lines:
                    for event in iter_events([line], ctx.launch_id):
                        events.append(event)
                        if pid is None:
                            match = self._pid_re.search(line)
                            pid = int(match.group(1)) if match else None
                        if event.phase == "error" and error_at is None:
                            error_at = time.monotonic()
                now = time.monotonic()
                if any(e.phase == "done" for e in events):
                    # a console that died with devicectl's own error is not the app's end:
                    # the device says whether the app still runs (issue #23)
                    gone = (ended and console.own_error() is None) or self._gone_at_done(pid)
                    return ProcessEnd.DIED if gone else ProcessEnd.ALIVE, events, pid, console
                if ended:
                    return ProcessEnd.DIED, events, pid, console
                if error_at is not None and now >= error_at + self.error_grace_s:
                    return ProcessEnd.ALIVE, events, pid, console
                if now >= deadline and error_at is None:  # an error line ends by its grace
                    return ProcessEnd.TIMED_OUT, events, pid, console
                if self._abort.is_set():
                    raise InfraError("launch aborted", "resume with --resume")
                wake_at = deadline if error_at is None else error_at + self.error_grace_s
                self._wake.wait(max(0.0, wake_at - time.monotonic()))
                self._wake.clear()
        finally:
            if ended:
                console.stop()
            else:  # devicectl still relays: stop it while the record is made (not waited on)
                stopper = threading.Thread(target=console.stop, daemon=True,
                                           name="devicectl-stop")
                stopper.start()
                self._stopping = [t for t in self._stopping if t.is_alive()] + [stopper]

    def _gone_at_done(self, pid: int | None) -> bool:
        """Whether the app that reported ``done`` is no longer running (module doc, step
        3): one ``device info processes``. A check that cannot be made (no pid known, the
        device not answering) leaves the launch as the app reported it; the next launch
        checks the device first."""
        if pid is None:
            return False
        try:
            running = self.devicectl.processes(self.phone.identifier)
        except InfraError:
            self._suspect = True
            return False
        return not any(p.get("processIdentifier") == pid for p in running)

    def _judge_end(self, ctx: LaunchContext, console: Console, text: str,
                   events: list[ProtocolEvent], pid: int | None
                   ) -> tuple[str | None, CrashEvidence | None, str | None]:
        """What a console that ended before ``done`` means (module doc, step 4):
        ``(infra, evidence, artifact)``; a crash without a report has a note as evidence.

        Raises:
            InfraError: nothing of the app was seen (it may never have started).
        """
        dropped = (f"device {self.phone.name} ({self.device}) dropped off during the launch: "
                   "the app's fate is unknown")
        own_error = next((ln.strip() for ln in reversed(console.lines)
                          if ln.startswith("ERROR")), None)
        tool_failed = console.exit_status() not in (0, None) and own_error is not None
        if not self._reachable():
            return dropped, None, None
        if tool_failed and not events and pid is None:
            pid = self._new_app_pid()  # the relay died before the app's first line?
        if tool_failed and not events and pid is None:  # refused: nothing started
            raise infra_error(f"devicectl could not launch the app: {(own_error or '')[:200]}",
                              "unlock the device and check the app is installed",
                              evidence=text)
        if tool_failed and pid is not None and not self._wait_gone(pid):
            # the console died under an app that ran on to the launch's timeout: its fate
            # cannot be seen from here, and no crash report will come (no report wait).
            # One that ends before is a death, its report awaited below (issue #44)
            return (f"the console ended with devicectl's own error ({(own_error or '')[:200]}) while "
                    "the app still runs (watched to the launch's timeout): the launch could "
                    "not be observed to its end"), None, None
        found = self._collect_crash(ctx, pid)
        if found is not None:
            return None, found[0], found[1]
        if not self._reachable():
            return dropped, None, None
        if not events:
            raise infra_error("the app ended before its first line and the device had no "
                              f"crash report for it within {self.report_wait_s:g} s: it may "
                              "never have started", "check the app is installed and opens "
                              "coldstart:// URLs", evidence=text)
        if tool_failed:
            return (f"the console ended with devicectl's own error ({(own_error or '')[:200]}) and no "
                    "crash report appeared: the app's fate is unknown"), None, None
        replaced = self._replaced()
        if replaced is not None:
            return replaced, None, None
        when = "after" if any(e.phase == "done" for e in events) else "before"
        return None, CrashEvidence(note=(
            f"the app died {when} done and the device had no new crash report for it within "
            f"{self.report_wait_s:g} s")), None

    def _collect_crash(self, ctx: LaunchContext, pid: int | None
                       ) -> tuple[CrashEvidence, str] | None:
        """The device's crash report of this launch, awaited (module doc, step 4)."""
        deadline = time.monotonic() + self.report_wait_s
        known = self._known if self._known is not None else set()
        accept = report_matcher(pid, self.app.executable, self.app.bundle_id,
                                past_pids=self._past_pids)
        staging = ctx.artifacts_dir / "device-reports"
        try:
            while True:
                try:
                    names = self.devicectl.crash_logs(self.phone.identifier)
                except InfraError:
                    names = []
                new = [n for n in names if n not in known and (
                    Path(n).name.startswith(self.app.executable)
                    or Path(n).name.startswith("JetsamEvent"))]
                for name in sorted(new, key=lambda n: not Path(n).name.startswith(
                        self.app.executable)):
                    try:
                        path = self.devicectl.copy_crash_log(self.phone.identifier, name,
                                                             staging)
                    except InfraError:
                        continue  # listed but not readable yet: try next round
                    text = read_report(path)
                    if text is None or not text.strip():
                        continue
                    known.add(name)
                    jetsam = Path(name).name.startswith("JetsamEvent")
                    if jetsam and self.app.executable not in text:
                        continue
                    if not jetsam and not accept(text):
                        continue
                    return crash_evidence(text, ctx.artifacts_dir, ctx.artifacts_rel,
                                          "crash" + (Path(name).suffix or ".ips"), hint="ips")
                if time.monotonic() >= deadline or self._abort.is_set():
                    return None
                self._abort.wait(0.5)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def setup_device(xcrun: Xcrun, *, udid: str, app_path: str | None, bundle_id: str | None,
                 install: bool = True, log: Callable[[str], None] = lambda _m: None
                 ) -> tuple[Devicectl, PhysicalDevice, AppBundle]:
    """Resolve the device, check and install the app (``.ipa`` or device ``.app``).

    Raises:
        UsageError: unknown device, an app built for the simulator, no app.
        XcrunError: devicectl failed.
    """
    devicectl = Devicectl(xcrun)
    device = devicectl.resolve(udid)
    if app_path:
        app = read_app_bundle(app_path)
        if app.for_simulator and not app.for_device:
            raise UsageError(f"{app_path} is built for the simulator, not for devices",
                             "archive and export an .ipa (or build with -sdk iphoneos)")
        if install:
            log(f"installing {app.path} on {device.name}")
            devicectl.install(device.identifier, app.path)
    elif bundle_id:
        app = bundle_for_id(bundle_id)
    else:
        raise UsageError("no app given", "pass --ipa App.ipa (or --bundle-id of an installed "
                         "app)")
    return devicectl, device, app
