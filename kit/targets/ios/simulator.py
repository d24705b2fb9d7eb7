"""One cold launch per call on an iOS simulator (``xcrun simctl``).

A campaign keeps one ``simctl spawn <udid> log stream --style ndjson --level info
--predicate 'subsystem == "com.facebook.react.log"'`` running (React Native's JS console;
each launch reads the lines of its own launch id). One launch:

1. the simulator is made ready: nothing to do while the log stream runs and the last
   command worked; else its state is read (``simctl list -j devices``), a state it passes
   through (``Shutting Down``, ``Booting``) is waited out, a shut-down simulator is booted
   again and waited for (``simctl bootstatus <udid> -b``), the poison environment is set
   again and the log stream restarted;
2. the installed app is checked to be the campaign's (an erased simulator, another build
   installed: the ``.app`` is installed again, :mod:`.installed`); the app is started cold
   with the scenario: ``simctl terminate`` then ``simctl openurl <udid> <url>``
   (``--deliver url``: the app reads it with ``Linking.getInitialURL()``), or ``simctl
   launch --terminate-running-process <udid> <bundle> -coldstartScenario <url>``
   (``--deliver args``, which prints the pid). A request that fails because the simulator
   is not booted (CoreSimulator's "Unable to lookup in current state: Shutdown") boots it
   and makes the request once more; one that fails because the app's process exited during
   it (``FBProcessExit``) is the app's crash when its crash report appears;
3. the launch is watched by events, not polling: each log line wakes it, the first line
   of this launch gives the app's pid (``processID``), and the end of that process (an
   ordinary host process of the Mac, see :mod:`.procwatch`) wakes it. Only where the host
   gives no process-exit event is ``simctl spawn <udid> launchctl list`` asked, every
   ``poll_s``; and while no line has named the pid, once a second;
   A log stream that ends while the simulator stays booted is started again, and the
   unified log is read again over the launch's window (``simctl spawn <udid> log show
   --start ...``, :meth:`~.simctl.Simctl.log_show`): the lines the dying stream did not
   deliver are taken from there (issue #44: a crash is placed at its phase, a ``done``
   logged before the new stream started ends the launch at once); a stream that cannot
   be started again is replaced by that read once a second. Only when that read fails
   does the launch count only as a crash with its report (lines may be lost);
4. it ends at ``done``, after one look at the app's process (its exit event, checked at
   once, or ``launchctl list`` where the host gives none): an app that died in teardown,
   its last lines delivered after its death (the unified log is asynchronous), is a death;
   at an ``error`` line once ``error_grace_s`` has passed with the app alive (a fatal JS
   error logs ``error``, then React Native's RCTFatal aborts the app: a death within the
   grace is a crash); at the app's death; or at the timeout (hung; the app is terminated);
5. after a death or a timeout the simulator's state is read: a simulator that is no
   longer booted makes the launch an infra error (never counted); else, after a death, the
   crash report of this
   simulator and pid is awaited in the DiagnosticReports folder for up to
   ``report_wait_s`` (ReportCrash writes it seconds later), parsed and classified. A
   report that names the launch's pid is taken whatever its time, and one that does not is
   kept from the launch's start moved back by a clock set back meanwhile (the Mac's: the
   simulator's; :func:`.reports.window_start`).

What was observed becomes the record through :func:`kit.observe.make_record`.

Heap poisoning (``--poison``): :data:`~.app.POISON_ENV`. With ``simctl launch`` the
variables go as ``SIMCTL_CHILD_<name>``; a deep link carries no environment, so with
``openurl`` they are set in the simulator's launchd (``simctl spawn <udid> launchctl
setenv``) before the campaign, again after every boot, and unset after the campaign.
"""

from __future__ import annotations

import enum
import threading
import time
from typing import Any, Callable

from ...launch import LaunchContext
from ...store.store import utc_now
from ...errors import InfraError, UsageError
from ...observe import CrashEvidence, Observation, ProcessEnd, crash_evidence, make_record
from ...records import LaunchRecord
from .app import POISON_ENV, SCENARIO_ARGUMENT, AppBundle
from .installed import ForeignBuild, InstalledApp
from .procwatch import ProcessWatch
from .reports import DEFAULT_REPORT_WAIT_S, DiagnosticReports, report_matcher
from .seen import LaunchSeen
from .simctl import BOOTED, SETTLING_STATES, LogStream, SimDevice, Simctl
from .simsetup import setup_simulator
from .xcrun import XcrunError, infra_error, wait_until

__all__ = ["Delivery", "SimulatorLauncher", "setup_simulator", "ForeignBuild"]


#: how long a ``log stream`` that ends at once is tried again (with backoff) before a
#: launch, s
_STREAM_START_S = 15.0
#: how far before a launch's start the unified log is read again (s; ``log show --start``
#: takes whole seconds)
_REREAD_MARGIN_S = 2.0


class Delivery(str, enum.Enum):
    """How the scenario reaches the app."""

    URL = "url"  #: ``simctl openurl`` cold-starts the app with the deep link
    ARGS = "args"  #: ``simctl launch ... -coldstartScenario <url>`` (launch arguments)

    def __str__(self) -> str:
        return self.value


class SimulatorLauncher:
    """Cold-launches an app on one iOS simulator (see the module doc).

    Args:
        simctl: the simctl transport.
        device: the (booted) simulator.
        app: the installed app's bundle info.
        reports: the DiagnosticReports folder to collect crash reports from.
        poison: set :data:`POISON_ENV` for the app.
        delivery: how the scenario reaches the app (:class:`Delivery`).
        report_wait_s: seconds to wait for a crash report after a death.
        poll_s: seconds between ``launchctl list`` checks where the host gives no
            process-exit event.
        start_wait_s: seconds the app may take to appear (a log line or a process) after
            the launch request; an app never seen is an infra error, unless a crash report
            shows it died.
        error_grace_s: seconds a death after an ``error`` line still makes the launch a
            crash.
        boot_timeout_s: seconds a simulator may take to finish a state change and boot.
        log: progress lines for the user (stderr).
    """

    target = "ios-sim"

    def __init__(self, simctl: Simctl, device: SimDevice, app: AppBundle,
                 reports: DiagnosticReports, poison: bool = False,
                 delivery: Delivery = Delivery.URL,
                 report_wait_s: float = DEFAULT_REPORT_WAIT_S, poll_s: float = 0.2,
                 start_wait_s: float = 10.0, error_grace_s: float = 2.0,
                 boot_timeout_s: float = 300.0,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.simctl = simctl
        self.sim = device
        self.device = device.udid
        self.app = app
        self.reports = reports
        self.poison = poison
        self.delivery = delivery
        self.report_wait_s = report_wait_s
        self.poll_s = poll_s
        self.start_wait_s = start_wait_s
        self.error_grace_s = error_grace_s
        self.boot_timeout_s = boot_timeout_s
        self.log = log
        #: how often the kit booted the simulator again during the campaign
        self.boots = 0
        self._abort = threading.Event()
        self._wake = threading.Event()
        self._stream: LogStream | None = None
        self._suspect = True  # check the state before the first launch
        self._env_set = False
        self._pid_events: bool | None = None  # can host process-exit events see the app?
        self._past_pids: set[int] = set()  # earlier launches' (their reports are not ours)
        #: the campaign's app on this simulator, checked when something may have changed
        #: it: the first launch, after the simulator was made ready again (an erase needs
        #: a shutdown), after a death no report explains, when the app the last launch
        #: left running is gone at the next (``--deliver url``), and at every launch with
        #: ``--deliver args`` (whose request gives no such sign)
        self.installed = InstalledApp(simctl, device, app, log)
        self._check_app = True
        self._left_running = False  # the last launch ended with the app running

    # -- campaign lifecycle -------------------------------------------------------------
    def prepare(self) -> None:
        """Before the campaign: with ``poison`` and URL delivery, set the variables in the
        simulator's launchd (see the module doc). Raises XcrunError."""
        if self.poison and self.delivery is Delivery.URL:
            self.simctl.launchctl_setenv(self.device, POISON_ENV)
            self._env_set = True

    def close(self) -> None:
        """After the campaign: stop the log stream, terminate the app and unset what
        :meth:`prepare` set (errors ignored: the simulator may be gone)."""
        if self._stream is not None:
            self._stream.stop()
            self._stream = None
        try:
            self.simctl.terminate(self.device, self.app.bundle_id)
            if self._env_set:
                self.simctl.launchctl_setenv(self.device, POISON_ENV, unset=True)
                self._env_set = False
        except (InfraError, UsageError):
            pass

    def abort(self) -> None:
        """Stop the launch in flight (Ctrl-C)."""
        self._abort.set()
        self._wake.set()

    # -- readiness ----------------------------------------------------------------------
    def _settled(self) -> SimDevice:
        """The simulator's state once it is not passing through one (``Shutting Down``,
        ``Booting``), waited for up to ``boot_timeout_s``.

        Raises:
            InfraError: the simulator is gone, or stayed in such a state.
        """
        found: list[SimDevice | None] = [None]

        def settled() -> bool:
            found[0] = self.simctl.device(self.device)
            return found[0] is None or found[0].state not in SETTLING_STATES

        if not wait_until(settled, self.boot_timeout_s, abort=self._abort.is_set):
            state = found[0].state if found[0] is not None else "unknown"
            raise InfraError(f"simulator {self.sim.name} ({self.device}) stayed "
                             f"{state!r} for {self.boot_timeout_s:g} s",
                             "check it in Xcode's Devices window")
        if found[0] is None:
            raise InfraError(f"simulator {self.device} is no longer listed by `xcrun simctl "
                             "list devices`", "was it deleted? pick another with --udid")
        return found[0]

    def _recover(self) -> None:
        """Make the simulator ready: booted, the poison environment set, a log stream
        running (module doc, step 1). Raises InfraError (XcrunError)."""
        device = self._settled()
        booted = False
        if device.state != BOOTED:
            self.log(f"simulator {self.sim.name} ({self.device}) is {device.state}: booting "
                     "it again")
            self.simctl.boot(self.device, self.boot_timeout_s)
            self.boots += 1
            booted = True
        restarted = self._stream is not None
        if self._stream is not None:
            self._stream.stop()
            self._stream = None
        if self._env_set and (booted or restarted):
            self.simctl.launchctl_setenv(self.device, POISON_ENV)
        delay, give_up = 0.25, time.monotonic() + _STREAM_START_S
        while True:  # a stream that ends at once (logd unreachable) is tried again
            stream = self.simctl.log_stream(self.device, on_line=self._wake.set)
            if stream.wait_ready(30.0):
                break
            stream.stop()
            if time.monotonic() + delay > give_up or self._abort.is_set():
                raise InfraError(f"`log stream` did not start on simulator {self.device}",
                                 "check the simulator is booted (`xcrun simctl list "
                                 "devices`)")
            self._abort.wait(delay)
            delay = min(delay * 2, 4.0)
        self._stream = stream
        self._suspect = False
        self._check_app = True

    def _ready(self) -> LogStream:
        if self._suspect or self._stream is None or not self._stream.alive:
            self._recover()
        assert self._stream is not None
        return self._stream

    # -- one launch ---------------------------------------------------------------------
    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch (module doc). Never raises for what the app does.

        Raises:
            InfraError: the simulator could not be made ready, the launch request failed,
                or the app was never seen (with the log window as evidence).
        """
        self._abort.clear()
        started_at = utc_now()
        t0 = time.monotonic()
        t0_epoch = time.time()
        before = self.reports.snapshot()
        try:
            pid, requested = self._start(ctx)
            seen = self._watch(ctx, pid, requested)
        except ForeignBuild as exc:
            return exc.record(ctx, target=self.target, device=self.device,
                              started_at=started_at, t0=t0)
        except XcrunError as exc:
            self._suspect = True
            record = self._exited_at_request(ctx, exc, before, t0_epoch, started_at, t0)
            if record is None:
                raise
            return record
        except InfraError:
            self._suspect = True
            raise
        evidence: CrashEvidence | None = None
        artifacts = [f"{ctx.artifacts_rel}/log.ndjson"]
        payloads: dict[str, Any] = {}
        if seen.end in (ProcessEnd.DIED, ProcessEnd.TIMED_OUT, None) and seen.infra is None:
            seen.infra = self._shut_down_note()
        if seen.stream_lost and seen.infra is None:
            self._reread(seen, t0)  # the unified log has what the dead stream missed
            seen.take(self._stream, ctx.launch_id)
        if seen.infra is None and seen.stream_lost and not seen.reread and \
                seen.end not in (ProcessEnd.DIED, None):
            seen.infra = ("the simulator's log stream ended during the launch: lines may be "
                          "lost, and the app did not die with a crash report")
        if seen.infra is not None:
            seen.end = ProcessEnd.LOST
        elif seen.end in (ProcessEnd.DIED, None):
            found = self.reports.wait_for(
                before, t0_epoch, report_matcher(seen.pid, self.app.executable,
                                                 self.app.bundle_id, self.device,
                                                 self._past_pids),
                self.report_wait_s, abort=self._abort, since_monotonic_s=t0, pid=seen.pid)
            if found is not None:
                path, text = found
                evidence, rel = crash_evidence(text, ctx.artifacts_dir, ctx.artifacts_rel,
                                               "crash" + path.suffix, hint="ips")
                artifacts.append(rel)
                payloads["crash_report"] = path.name
                if seen.pid is None and evidence.crash is not None:
                    seen.pid = evidence.crash.get("pid")  # it died before a line named it
                seen.end = ProcessEnd.DIED
            elif seen.end is not None:
                # no report: a lost stream or another build's install says it was no crash
                seen.infra = ("the simulator's log stream ended during the launch and no "
                              "crash report of the app appeared: its fate is unknown") \
                    if seen.stream_lost and not seen.reread else self.installed.replaced()
                self._check_app = self._check_app or seen.infra is not None
                when = "after" if any(e.phase == "done" for e in seen.events) else "before"
                if seen.infra is not None:
                    seen.end = ProcessEnd.LOST
                else:
                    evidence = CrashEvidence(note=(
                        f"the app died {when} done and no crash report for it appeared in "
                        f"{self.reports.directory} within {self.report_wait_s:g} s"))
        stream = self._stream
        if seen.end is ProcessEnd.DIED and stream is not None:
            seen.take(stream, ctx.launch_id)  # lines that were still on their way
        window = seen.earlier_raw + (stream.raw_window() if stream is not None else "\n")
        (ctx.artifacts_dir / "log.ndjson").write_text(window)
        if seen.shown_raw:
            (ctx.artifacts_dir / "log-show.ndjson").write_text(seen.shown_raw)
            artifacts.append(f"{ctx.artifacts_rel}/log-show.ndjson")
        if seen.end is None:  # never seen, no report: a setup problem, not a crash
            self._suspect = True
            raise infra_error(
                f"the app did not start on simulator {self.device} within "
                f"{self.start_wait_s:g} s of the launch request (no process, no COLDSTART "
                "line)", "check the app is installed and opens coldstart:// URLs, or use "
                "--deliver args", evidence=window)
        if seen.end is ProcessEnd.LOST:
            self._suspect = True
        if seen.end is ProcessEnd.TIMED_OUT:
            try:
                self.simctl.terminate(self.device, self.app.bundle_id)
            except InfraError:
                self._suspect = True
        if seen.pid is not None:
            self._past_pids.add(seen.pid)
        self._left_running = seen.end is ProcessEnd.ALIVE
        observation = Observation(events=tuple(seen.events), end=seen.end,
                                  timeout_s=ctx.timeout_s, infer=ctx.scenario.infer,
                                  crash=evidence, infra=seen.infra, killed_note="terminated")
        return make_record(ctx, target=self.target, device=self.device,
                           observation=observation, started_at=started_at,
                           wall_ms=(time.monotonic() - t0) * 1000.0, artifacts=artifacts,
                           pid=seen.pid, **payloads)

    def _exited_at_request(self, ctx: LaunchContext, exc: XcrunError, before: Any,
                           t0_epoch: float, started_at: str, t0: float
                           ) -> LaunchRecord | None:
        """A launch request that failed because the app's process exited during it
        (``FBProcessExit`` in simctl's error: the app aborted before finishing launching,
        e.g. a framework that does not load) and left a crash report of the app: that
        crash, counted, with no phase (it printed no line). ``None`` when simctl's error
        says no process exited or no report of the app appears within ``report_wait_s``
        (an infra error: nothing of the app is known)."""
        if "FBProcessExit" not in exc.output:
            return None
        found = self.reports.wait_for(
            before, t0_epoch, report_matcher(None, self.app.executable, self.app.bundle_id,
                                             self.device, self._past_pids),
            self.report_wait_s, abort=self._abort, since_monotonic_s=t0)
        if found is None:
            return None
        path, text = found
        (ctx.artifacts_dir / "simctl-launch.txt").write_text(exc.output)
        evidence, rel = crash_evidence(text, ctx.artifacts_dir, ctx.artifacts_rel,
                                       "crash" + path.suffix, hint="ips")
        pid = evidence.crash.get("pid") if evidence.crash is not None else None
        if pid is not None:
            self._past_pids.add(pid)
        observation = Observation(events=(), end=ProcessEnd.DIED, timeout_s=ctx.timeout_s,
                                  infer=ctx.scenario.infer, crash=evidence,
                                  killed_note="terminated")
        return make_record(ctx, target=self.target, device=self.device,
                           observation=observation, started_at=started_at,
                           wall_ms=(time.monotonic() - t0) * 1000.0,
                           artifacts=[f"{ctx.artifacts_rel}/simctl-launch.txt", rel],
                           pid=pid, crash_report=path.name)

    def _request(self, url: str) -> int | None:
        """Ask simctl to start the app cold with ``url``; the pid when simctl gives one."""
        if self.delivery is Delivery.ARGS:
            pid = self.simctl.launch(self.device, self.app.bundle_id, [SCENARIO_ARGUMENT, url],
                                     env=POISON_ENV if self.poison else None)
            return pid if pid > 0 else None
        running = self.simctl.terminate(self.device, self.app.bundle_id)
        if self._left_running and not running:  # gone since: an install terminates it
            self.installed.check()
        self._left_running = False
        self.simctl.openurl(self.device, url)
        return None

    def _start(self, ctx: LaunchContext) -> tuple[int | None, float]:
        """Make the simulator ready and start the app (module doc, steps 1-2).

        Returns:
            The pid when simctl gave one, and the monotonic time of the request that
            started the app (the launch's timeout runs from there).
        """
        self._ready()
        if self._check_app or self.delivery is Delivery.ARGS:
            self.installed.check()
            self._check_app = False
        assert self._stream is not None
        self._stream.open_window()
        self._wake.clear()
        requested = time.monotonic()
        try:
            return self._request(ctx.scenario.to_url()), requested
        except XcrunError:
            device = self._settled()
            if device.state == BOOTED:
                raise  # not the simulator's state: an infra error of this launch
        self._recover()  # it shut down: boot it and ask once more
        self.installed.check()
        assert self._stream is not None
        self._stream.open_window()
        requested = time.monotonic()
        return self._request(ctx.scenario.to_url()), requested

    def _restart_stream(self, seen: LaunchSeen) -> LogStream | None:
        """A new log stream after one ended under the launch with the simulator still
        booted; ``None`` when it does not start."""
        old = self._stream
        if old is not None:
            seen.earlier_raw += old.raw_window()
            old.stop()
        self._stream = None
        try:
            stream = self.simctl.log_stream(self.device, on_line=self._wake.set)
        except InfraError:
            return None
        if not stream.wait_ready(10.0):
            stream.stop()
            return None
        self._stream = stream
        seen.consumed, seen.stream_lost = 0, True
        return stream

    def _reread(self, seen: LaunchSeen, t0: float) -> None:
        """Read the unified log again over the launch's window (from its start by the
        host clock as it is now, less ``date``'s whole second and a margin) into
        ``seen.recovered``; ``seen.reread`` says whether it worked (module doc, step 3)."""
        since = time.time() - (time.monotonic() - t0) - _REREAD_MARGIN_S
        try:
            lines, raw = self.simctl.log_show(self.device, since)
        except InfraError as exc:
            seen.reread = False
            seen.earlier_raw += f"[coldstart: log show failed: {exc.message}]\n"
            return
        seen.recovered.extend(lines)
        seen.shown_raw = raw
        seen.reread = True

    def _shut_down_note(self) -> str | None:
        """Why the launch could not be observed when the simulator is no longer booted
        (``None`` when it is)."""
        try:
            device = self.simctl.device(self.device)
        except InfraError as exc:
            return f"the simulator did not answer after the app ended: {exc.message}"
        if device is not None and device.state == BOOTED:
            return None
        state = device.state if device is not None else "gone"
        return (f"simulator {self.sim.name} ({self.device}) went {state} during the launch: "
                "the app's fate is unknown")

    def _gone_at_done(self, pid: int | None, watch: ProcessWatch | None) -> bool:
        """Whether the app that reported ``done`` is already gone (module doc, step 4):
        its exit event checked now, or, where the host gives none, ``launchctl list``."""
        if watch is not None:
            return watch.ended()
        if pid is None:
            return False
        return self.simctl.app_pid(self.device, self.app.bundle_id) != pid

    def _watch(self, ctx: LaunchContext, pid: int | None, t0: float) -> LaunchSeen:
        """Wait for the launch's end (module doc, steps 3-4), woken by log lines and the
        app's exit."""
        seen = LaunchSeen(pid=pid)
        stream = self._stream
        assert stream is not None
        deadline = t0 + ctx.timeout_s
        start_deadline = time.monotonic() + self.start_wait_s  # from the request's answer
        next_lookup = time.monotonic() + 1.0
        next_poll: float | None = None
        error_at: float | None = None
        watch: ProcessWatch | None = None
        done = False
        unstreamed = False  # the log stream could not be started again: log show instead
        next_reread = 0.0

        def follow(new_pid: int) -> None:
            nonlocal watch, next_poll
            seen.pid = new_pid
            if self._pid_events is not False:
                watch = ProcessWatch.start(new_pid, self._wake.set)
                if watch is not None and watch.exited.is_set() and \
                        self.simctl.app_pid(self.device, self.app.bundle_id) == new_pid:
                    watch = None  # alive in the simulator, not visible from here
                    self._pid_events = False
                elif watch is not None:
                    self._pid_events = True
            if watch is None:
                next_poll = time.monotonic()

        try:
            if pid is not None:
                follow(pid)
            while True:
                for event, line_pid in seen.take(stream, ctx.launch_id):
                    done = done or event.phase == "done"
                    if event.phase == "error" and error_at is None:
                        error_at = time.monotonic()
                    if seen.pid is None and line_pid is not None:
                        follow(line_pid)
                now = time.monotonic()
                if done:
                    seen.end = ProcessEnd.DIED if self._gone_at_done(seen.pid, watch) \
                        else ProcessEnd.ALIVE
                    return seen
                if watch is not None and watch.exited.is_set():
                    seen.end = ProcessEnd.DIED
                    return seen
                if next_poll is not None and now >= next_poll:
                    if self.simctl.app_pid(self.device, self.app.bundle_id) != seen.pid:
                        seen.end = ProcessEnd.DIED
                        return seen
                    next_poll = now + self.poll_s
                if error_at is not None and now >= error_at + self.error_grace_s:
                    seen.end = ProcessEnd.ALIVE  # an error line, and the app lived on
                    return seen
                if now >= deadline and error_at is None:  # an error line ends by its grace
                    seen.end = ProcessEnd.TIMED_OUT if (seen.pid or seen.events) else None
                    return seen
                if not stream.alive and not unstreamed:
                    # a dead log stream is not a dead app: with the simulator booted the
                    # stream is started again and the app's process and report are still
                    # watched (issue #23), and the unified log is read again (issue #44)
                    seen.infra = self._shut_down_note()
                    restarted = self._restart_stream(seen) if seen.infra is None else None
                    if restarted is None and seen.infra is None:
                        # no new stream: the unified log is read again every second, and
                        # the process watched by launchctl (issue #44)
                        seen.stream_lost = True
                        self._reread(seen, t0)
                        if seen.reread:
                            unstreamed = True
                            next_reread = time.monotonic() + 1.0
                            if seen.pid is not None and watch is None and next_poll is None:
                                next_poll = time.monotonic()
                            continue
                    if restarted is None:
                        seen.infra = seen.infra or (
                            "the simulator's log stream ended during the launch and could "
                            "not be started again")
                        return seen
                    stream = restarted
                    self._reread(seen, t0)  # after the new stream started: no gap
                    continue
                if unstreamed and now >= next_reread:
                    self._reread(seen, t0)
                    next_reread = time.monotonic() + 1.0
                    continue
                if seen.pid is None and not seen.events:
                    last = now >= start_deadline
                    if last or now >= next_lookup:  # ask the simulator, once a second
                        found = self.simctl.app_pid(self.device, self.app.bundle_id)
                        next_lookup = time.monotonic() + 1.0
                        if found is not None:
                            follow(found)
                            continue
                        if last:
                            return seen  # never seen: the caller looks for a report
                if self._abort.is_set():
                    raise InfraError("launch aborted", "resume with --resume")
                wake_at = [deadline] if error_at is None else [error_at + self.error_grace_s]
                if next_poll is not None:
                    wake_at.append(next_poll)
                if seen.pid is None and not seen.events:
                    wake_at += [next_lookup, start_deadline]
                if unstreamed:
                    wake_at.append(next_reread)
                self._wake.wait(max(0.0, min(wake_at) - time.monotonic()))
                self._wake.clear()
        finally:
            if watch is not None:
                watch.stop()
