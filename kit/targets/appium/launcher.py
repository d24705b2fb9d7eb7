"""The Appium launcher: one cold launch per call through one Appium session
(:class:`kit.launch.Launcher`).

One session serves every launch of a device (a session per launch would pay the
UiAutomator2/WebDriverAgent start-up each time); a lost session is opened again at the next
launch. One launch (docs/formats.md section D3):

1. drain the platform log (``logcat`` / ``syslog`` / ``crashlog``) so old lines are dropped;
2. ``mobile: terminateApp``;
3. start it cold with the scenario: Android ``mobile: deepLink {url, package}``; iOS
   ``mobile: deepLink {url, bundleId}``, or with ``--poison`` / ``deliver=args``
   ``mobile: launchApp {bundleId, arguments: [-coldstartScenario, url], environment}``
   (XCUITest ignores arguments and environment for an app that is already running, hence the
   terminate first);
4. poll, every ``poll_s``: the app's status element (React Native ``testID``
   :data:`STATUS_TEST_ID`, whose text is the last ``COLDSTART {json}`` line; lines of other
   launches are ignored), the platform log, and ``mobile: queryAppState`` (0 not installed,
   1 not running, 2-4 running); when the log shows the end (``done`` / ``error``) before the
   screen did, the status element is read once more, so the recorded ``status_text`` is a
   screen read after the end was logged, not one from before it;
5. the launch ends at ``done``, after one ``mobile: queryAppState`` (an app that died in
   teardown, its last line read from the log after its death, is a death); at an
   ``error`` line once ``error_grace_s`` has passed with the app running (a fatal JS error
   is logged, then React Native ends the app: a death within the grace is a crash); when
   the app stops running; or at the timeout. After a death the crash text is awaited in
   the log (tombstone or Java/JS fatal in ``logcat``, the ``.ips`` of the XCUITest
   ``crashlog`` type) and parsed by :mod:`kit.crash`; what was observed becomes the record
   through :func:`kit.observe.make_record`;
6. with a shell route (``--appium-shell``, ``--farm saucelabs``, ``--farm headspin``;
   Android), the in-session shell pass: ``dumpsys dropbox`` and ``exit-info`` matched to
   the launch (:mod:`kit.farms.shell`); a DropBox tombstone of a death becomes its crash
   report, and the record's ``extra.shell`` says what was matched, or why not (a refused
   shell is a note, never a crash or an infra error).

A log read that fails while the session still answers (the driver's log endpoint erroring,
HTTP 500 ``unknown error``) is not the launch's end: the launch goes on by the status element
and ``mobile: queryAppState``, and the log is read again at the next poll, up to
``report_wait_s`` after a death, before the crash text is given up as unreadable (issue #23:
a dying log stream must not lose a crash that follows).

The installed build is checked at the first launch and after a death no crash text
explains (iOS: ``mobile: listApps``, its location, new at every install, and
``CFBundleVersion``; Android: ``pm path``, the APK's path, new at every install, where a
shell route is allowed, else ``mobile: listApps``' ``versionCode``, which tells only another
version apart): another build installed during a launch makes it an infra error, never a crash
(an install terminates the running app and writes no report), and before the next launch
the campaign's app (``--app``) is installed again, or, with none given, the campaign stops
(a persistent infra error naming the abandoned launches; issue #23).

A launch request that fails, or an app never seen running, on a device whose screen is
locked (``mobile: isLocked``) is waited out: one line asks to unlock the device, the lock
is asked again with backoff for up to ``reconnect_s``, and the request is made again
(issue #23: a locked device spent a slot's attempts in seconds); still locked, the attempt
is an infra error.

Retries never turn a crash into a pass: only transport failures (the server or session
gone) raise InfraError, which :func:`kit.campaign.run_campaign` records and retries without
counting; a crash is always recorded as a crash. A session that fails after the death was
seen (while the crash text is read) leaves a ``crashed`` record with a note saying why its
text is missing; the session is opened again for the next launch.

"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ...launch import LaunchContext
from ...store.store import utc_now
from ...errors import InfraError, UsageError
from ...observe import CrashEvidence, Observation, ProcessEnd, crash_evidence, make_record
from ...protocol import ProtocolEvent, iter_events, parse_line
from ...records import LaunchRecord
from ...redact import Redactor
from ..ios.app import POISON_ENV
from ..ios.installed import ForeignBuild
from .config import AppiumConfig, Platform
from .session import AppiumSession, AppState, SessionGone, parse_server_url

__all__ = ["AppiumLauncher"]

_LOG_TYPE = {"android": "logcat", "ios": "syslog"}
_CRASH_LOG_TYPE = {"ios": "crashlog"}
#: Seconds an app may take to be seen running (or to log) after the launch request.
_START_WAIT_S = 10.0


class AppiumLauncher:
    """Cold-launches the app through one Appium session (see the module doc).

    Args:
        config: the campaign's :class:`AppiumConfig`.
        redactor: the campaign's redactor (knows the server URL's secrets).
        session_factory: builds a session (default :class:`AppiumSession`).
        shell_factory: builds the in-session shell of a session (:mod:`kit.farms.shell`:
            ``mobile: shell``, HeadSpin's adb API), or ``None`` for no shell pass.
        log: progress lines for the user (stderr).
    """

    target = "appium"

    def __init__(self, config: AppiumConfig, redactor: Redactor,
                 session_factory: Callable[[AppiumConfig, Redactor], AppiumSession]
                 = AppiumSession,
                 shell_factory: Callable[[AppiumSession], Any] | None = None,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.config = config
        self.log = log
        self.shell_factory = shell_factory
        #: why the shell was refused (the pass is not tried again in this campaign)
        self.shell_refused: str | None = None
        self._refusal_told = False  # a record has said why the shell was refused
        self.redactor = redactor
        self.session_factory = session_factory
        self.session: AppiumSession | None = None
        caps = config.caps
        udid = caps.get("appium:udid") or caps.get("udid") or caps.get("appium:deviceName")
        host = parse_server_url(config.server_url, redactor).host
        self.device = str(udid) if udid else f"{config.platform.value}@{host}"
        self.server_info: dict[str, Any] = {}
        self.log_types: list[str] = []
        self._abort = threading.Event()
        self._session_lost = False
        self._log_error: InfraError | None = None  # the last log read's failure, if it failed
        #: the campaign's build as :meth:`AppiumSession.installed_build` gives it, once seen
        self._build: str | None = None
        self._check_build = True  # check it before the next launch
        #: installs of the campaign's app again after another build replaced it
        self.reinstalls = 0

    def open(self) -> None:
        """Open the session and check that the driver has the app lifecycle commands.

        Raises:
            UsageError: capabilities refused, or the driver lacks ``mobile: queryAppState``
                (not a UiAutomator2 / XCUITest driver).
            InfraError: the server went away.
        """
        session = self.session_factory(self.config, self.redactor)
        try:
            session.app_state()
        except InfraError as exc:
            if "Unsupported execute method" in exc.message or "unknown method" in \
                    exc.message.lower():
                session.quit()
                raise UsageError(f"the Appium driver of this session has no app lifecycle "
                                 f"commands ({exc.message})", "use UiAutomator2 (--platform "
                                 "android) or XCUITest (--platform ios)") from None
            session.quit()
            raise
        self.log_types = session.log_types()
        self.session = session

    def close(self) -> None:
        """Terminate the app and end the session."""
        if self.session is not None:
            try:
                self.session.terminate()
            except InfraError:
                pass
            self.session.quit()
            self.session = None

    def abort(self) -> None:
        self._abort.set()

    def _drain(self, session: AppiumSession) -> None:
        for log_type in self._wanted_logs():
            session.log_lines(log_type)

    def _wanted_logs(self) -> list[str]:
        wanted = [_LOG_TYPE[self.config.platform.value]]
        crash = _CRASH_LOG_TYPE.get(self.config.platform.value)
        if crash:
            wanted.append(crash)
        return [t for t in wanted if t in self.log_types]

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch. Raises InfraError when the server or session fails (the
        session is dropped and opened again at the next launch)."""
        self._abort.clear()
        if self.session is None:
            self.open()
        session = self.session
        assert session is not None
        self._session_lost = False
        self._log_error = None
        try:
            record = self._launch(session, ctx)
        except ForeignBuild as exc:
            return exc.record(ctx, target=self.target, device=self.device,
                              started_at=utc_now(), t0=time.monotonic())
        except InfraError:
            session.quit()
            self.session = None
            raise
        if self._session_lost:  # the death was seen, then the session broke
            session.quit()
            self.session = None
        return record

    def _read_log(self, session: AppiumSession, log_type: str) -> list[str]:
        """New entries of ``log_type``; ``[]`` when the read failed while the session may
        still answer (the failure is kept in ``self._log_error`` until a read works).

        Raises:
            SessionGone: the server no longer knows the session.
        """
        try:
            lines = session.log_lines(log_type)
        except SessionGone:
            raise
        except InfraError as exc:
            self._log_error = exc
            return []
        self._log_error = None
        return lines

    def _launch(self, session: AppiumSession, ctx: LaunchContext) -> LaunchRecord:
        started_at = utc_now()
        t0 = time.monotonic()
        log_type = _LOG_TYPE[self.config.platform.value]
        crash_type = _CRASH_LOG_TYPE.get(self.config.platform.value)
        self._ensure_build(session)
        self._drain(session)
        session.terminate()
        env = dict(POISON_ENV) if self.config.poison and \
            self.config.platform is Platform.IOS else None
        try:
            session.start(ctx.scenario.to_url(), env, use_args=self.config.deliver == "args")
        except SessionGone:
            raise
        except InfraError:
            if not self._waited_for_unlock(session):
                raise
            t0 = time.monotonic()
            session.start(ctx.scenario.to_url(), env, use_args=self.config.deliver == "args")
        lines: list[str] = []
        status_seen: list[str] = []
        seen_running = False
        error_at: float | None = None
        deadline = t0 + ctx.timeout_s
        unlock_waited = False

        def events() -> list[ProtocolEvent]:
            return list(iter_events(lines + status_seen, ctx.launch_id))

        while True:
            text = session.status_text()
            if text is not None and _shown_event(text, ctx.launch_id) is not None:
                status_seen.append(text)
            if log_type in self.log_types:
                lines.extend(self._read_log(session, log_type))
            phases = {e.phase for e in events()}
            if "done" in phases:
                self._read_final_screen(session, ctx.launch_id, status_seen)
                running = session.app_state() >= AppState.RUNNING_IN_BACKGROUND_SUSPENDED
                end = ProcessEnd.ALIVE if running else ProcessEnd.DIED
                break
            if "error" in phases and error_at is None:
                self._read_final_screen(session, ctx.launch_id, status_seen)
                error_at = time.monotonic()
            state = session.app_state()
            now = time.monotonic()
            if state >= AppState.RUNNING_IN_BACKGROUND_SUSPENDED:
                seen_running = True
            elif not (seen_running or phases) and now - t0 > _START_WAIT_S and \
                    not unlock_waited and self._waited_for_unlock(session):
                unlock_waited = True  # never seen on a locked device: asked again
                session.start(ctx.scenario.to_url(), env,
                              use_args=self.config.deliver == "args")
                t0 = time.monotonic()
                deadline = t0 + ctx.timeout_s
            elif seen_running or phases or now - t0 > _START_WAIT_S:
                end = ProcessEnd.DIED
                break
            if error_at is not None and now >= error_at + self.config.error_grace_s:
                end = ProcessEnd.ALIVE  # an error line, and the app ran on
                break
            if now >= deadline and error_at is None:  # an error line ends by its grace
                end = ProcessEnd.TIMED_OUT
                break
            if self._abort.is_set():
                raise InfraError("launch aborted", "resume with --resume")
            time.sleep(self.config.poll_s)
        artifacts = [f"{ctx.artifacts_rel}/{log_type}.txt"]
        evidence: CrashEvidence | None = None
        infra: str | None = None
        if end is ProcessEnd.DIED:
            when = "after" if "done" in {e.phase for e in events()} else "before"
            never_seen = not seen_running and not status_seen and not events()
            try:
                evidence, rel = self._collect_crash(session, ctx, lines, log_type,
                                                    crash_type, when)
            except InfraError as exc:
                # the death is already observed (queryAppState said so): the launch is a
                # crash whose text is unknown, never an infra error (a retry could turn a
                # crash into a pass). A launch never seen is not a death at all.
                if never_seen:
                    raise
                self._session_lost = True
                evidence, rel = CrashEvidence(note=(
                    f"the app died {when} done; its crash text could not be read: "
                    f"{exc.message}")), None
            if rel is None and not never_seen and evidence is not None and \
                    evidence.crash is None:
                infra = self._replaced(session)  # no crash text: was the app replaced?
            if rel is not None:
                artifacts.append(rel)
            elif never_seen:
                raise InfraError("the app did not start within 10 s of the launch request "
                                 "(never running, no COLDSTART line)", "check --app-id and "
                                 "that the app is installed and opens coldstart:// URLs")
        else:
            session.terminate()
        payloads: dict[str, Any] = {}
        if self.shell_factory is not None and infra is None and \
                self.config.platform is Platform.ANDROID:
            wait = end is ProcessEnd.DIED and (evidence is None or evidence.crash is None)
            shell_info, better = self._shell_pass(session, ctx, lines, wait)
            payloads["shell"] = shell_info
            if better is not None and end is ProcessEnd.DIED and (
                    evidence is None or evidence.crash is None or
                    better[0].startswith("dropbox")):
                evidence, rel = crash_evidence(self.redactor.text(better[1]),
                                               ctx.artifacts_dir, ctx.artifacts_rel,
                                               f"shell-{better[0]}.txt")
                artifacts.insert(1, rel)
                shell_info["applied"] = rel
        if self._log_error is not None:
            self._session_lost = True  # its log still fails: the next launch opens another
        (ctx.artifacts_dir / f"{log_type}.txt").write_text(
            self.redactor.text("\n".join(lines)) + "\n")
        if infra is not None:
            end, evidence = ProcessEnd.LOST, None
        observation = Observation(events=tuple(events()), end=end, timeout_s=ctx.timeout_s,
                                  infer=ctx.scenario.infer, crash=evidence, infra=infra,
                                  killed_note="terminated")
        return make_record(ctx, target=self.target, device=self.device,
                           observation=observation, started_at=started_at,
                           wall_ms=(time.monotonic() - t0) * 1000.0, artifacts=artifacts,
                           status_text=status_seen[-1] if status_seen else None,
                           session_id=session.session_id, **payloads)

    def _shell_pass(self, session: AppiumSession, ctx: LaunchContext, lines: list[str],
                    wait: bool) -> tuple[dict[str, Any], tuple[str, str] | None]:
        """The in-session shell pass of one launch (:mod:`kit.farms.shell`): DropBox and
        exit-info read after the observation and matched to this launch by its pid and
        window. With ``wait`` (a death with no crash text yet), the dumps are read again
        every second, up to ``report_wait_s``, until a DropBox entry of this launch is
        there. A refusal or a failure is a note (never a crash or an infra
        error of the launch; a failure drops the session for the next launch).

        Returns:
            What goes in the record (``extra.shell``) and the best entry's ``(name,
            text)`` for a crash report, or ``None``.
        """
        from ...farms import shell as shells
        from ...farms.attribute import read_log_lines

        info: dict[str, Any] = {"route": None, "entries": [], "kit_stops": 0, "note": None}
        if self.shell_refused is not None:
            # the first record after a refusal (the build check's pm path may have met it)
            # says it as the pass would have; later ones say it was earlier
            info["note"] = (f"shell refused earlier in this campaign: {self.shell_refused}"
                            if self._refusal_told else f"shell refused: {self.shell_refused}")
            self._refusal_told = True
            return info, None
        window = shells.window_of_log(ctx.launch_id, read_log_lines("\n".join(lines)),
                                      end_slack_s=self.config.report_wait_s + 30.0)
        give_up = time.monotonic() + (self.config.report_wait_s if wait else 0.0)
        assert self.shell_factory is not None
        try:
            shell = self.shell_factory(session)
            info["route"] = shell.route
            while True:
                dumps = shells.run_dumps(shell, self.config.app_id)
                entries = [e for name, text in dumps.items()
                           for e in shells.read_entries(name, text)]
                matches, stops = shells.match_entries(entries, [window], self.config.app_id)
                if any(m.entry.source.startswith("dropbox") for m in matches) or \
                        time.monotonic() >= give_up or self._abort.is_set():
                    break
                time.sleep(1.0)
        except shells.ShellRefused as exc:
            self.shell_refused = self.redactor.text(exc.message)[:300]
            info["note"] = f"shell refused: {self.shell_refused}"
            self._refusal_told = True
            return info, None
        except InfraError as exc:
            self._session_lost = True
            info["note"] = f"shell pass failed: {exc.message}"
            return info, None
        info["kit_stops"] = stops
        info["pid"] = window.pid
        for n, match in enumerate(matches):
            name = f"shell-{match.entry.source.replace(':', '-')}-{n}.txt"
            (ctx.artifacts_dir / name).write_text(self.redactor.text(match.entry.text))
            info["entries"].append({"source": match.entry.source, "pid": match.entry.pid,
                                    "when": match.entry.when, "how": match.how,
                                    "reason": match.entry.reason,
                                    "artifact": f"{ctx.artifacts_rel}/{name}"})
        if not matches:
            info["note"] = "no DropBox or exit-info crash entry of this launch"
        best = shells.best_entry(matches)
        if best is None:
            return info, None
        return info, (best.entry.source.replace(":", "-"), best.entry.text)

    def _ensure_build(self, session: AppiumSession) -> None:
        """Before a launch that follows a sign of change: the installed build is the
        campaign's (see the module doc).

        Raises:
            ForeignBuild: another build (or none) is installed and no ``--app`` was given.
            InfraError: the session failed.
        """
        if not self._check_build:
            return
        self._check_build = False
        found = self._installed_build(session)
        if found is None or (found and (self._build is None or found == self._build)):
            self._build = self._build or found
            return
        why = (f"{self.config.app_id} is not installed" if not found else
               f"another build of {self.config.app_id} is installed ({found})")
        if not self.config.app:
            raise ForeignBuild(f"device {self.device}: {why}: the campaign stops and its "
                               "remaining launches are abandoned", "pass --app so that the "
                               "kit can install it again, then run again with --resume")
        self.log(f"device {self.device}: {why}: installing {self.config.app} again")
        session.install(self.config.app)
        self.reinstalls += 1
        self._build = self._installed_build(session) or None

    def _installed_build(self, session: AppiumSession) -> str | None:
        """Which build of the app is installed (:meth:`AppiumSession.installed_build`'s
        strings). On Android with a shell route (``--appium-shell``, a farm's shell) and
        the shell not refused: ``pm path PACKAGE``'s APK path, new at every install (the
        adb target's check, kit/targets/android); else the driver's answer.

        Raises:
            SessionGone: the server no longer knows the session.
        """
        if self.shell_factory is not None and self.shell_refused is None and \
                self.config.platform is Platform.ANDROID:
            from ...farms import shell as shells

            try:
                out = self.shell_factory(session).run(["pm", "path", self.config.app_id])
            except shells.ShellRefused as exc:
                self.shell_refused = self.redactor.text(exc.message)[:300]
            except InfraError:
                pass
            else:
                paths = sorted(line.strip()[len("package:"):] for line in out.splitlines()
                               if line.strip().startswith("package:"))
                if paths:  # none (not installed, or a shell that printed something else):
                    return " ".join(paths)  # the driver says which
        return session.installed_build()

    def _replaced(self, session: AppiumSession) -> str | None:
        """Why a death with no crash text is not the app's own: another build (or none)
        is installed now. ``None`` when the build is as the kit left it, or unknown."""
        if self._build is None:
            return None
        try:
            found = self._installed_build(session)
        except SessionGone:
            return None
        except InfraError:
            return None
        if found is None or found == self._build:
            return None
        self._check_build = True
        return (f"{self.config.app_id} was uninstalled during the launch" if not found else
                f"another build of {self.config.app_id} was installed during the launch "
                f"({found}; the install terminated the app)")

    def _waited_for_unlock(self, session: AppiumSession) -> bool:
        """Whether the device was locked and has been unlocked since (see the module doc):
        ``False`` when it is not locked, or the driver cannot tell.

        Raises:
            InfraError: still locked after ``reconnect_s``, aborted, or the session failed.
        """
        if not session.is_locked():
            return False
        self.log(f"device {self.device} is locked: unlock the device (waiting up to "
                 f"{self.config.reconnect_s:g} s)")
        give_up = time.monotonic() + self.config.reconnect_s
        delay = 0.5
        while session.is_locked():
            left = give_up - time.monotonic()
            if left <= 0 or self._abort.is_set():
                raise InfraError(f"device {self.device} stayed locked for "
                                 f"{self.config.reconnect_s:g} s", "unlock the device (or "
                                 "raise --reconnect-timeout) and resume with --resume")
            self._abort.wait(min(delay, left))
            delay = min(delay * 2, 4.0)
        self.log(f"device {self.device} is unlocked")
        return True

    def _read_final_screen(self, session: AppiumSession, launch_id: str,
                           status_seen: list[str]) -> None:
        """Read the status element once more after the log showed the launch's end.

        The poll reads the screen before the log, so the line that ended the launch
        (``done`` / ``error``) can come from a log read made after the screen was read; the
        last screen seen may then be any earlier phase (the app ran on between the two
        reads). One read after the log's end keeps what the screen showed at the end
        (``done``, or ``sessions-released`` while the app is still rendering its last line:
        the app logs each line before rendering it, rn-app/src/LaunchScreen.tsx).
        Appends to ``status_seen`` when the screen shows a line of ``launch_id``.
        """
        last = _shown_event(status_seen[-1] if status_seen else None, launch_id)
        if last is not None and last.phase in ("done", "error"):
            return
        text = session.status_text()
        if text is not None and _shown_event(text, launch_id) is not None:
            status_seen.append(text)

    def _collect_crash(self, session: AppiumSession, ctx: LaunchContext, lines: list[str],
                       log_type: str, crash_type: str | None, when: str = "before"
                       ) -> tuple[CrashEvidence, str | None]:
        """Crash text after a death (``when``: ``before`` or ``after`` done, for the
        note): the ``crashlog`` entry naming the app (iOS) or the crash lines of ``logcat``
        (Android), awaited up to ``report_wait_s``.

        Returns:
            The evidence and its artifact, or a note as the evidence and ``None``.
        """
        deadline = time.monotonic() + self.config.report_wait_s
        available = [t for t in (log_type, crash_type) if t and t in self.log_types]
        if not available:
            return CrashEvidence(note=f"the app died {when} done; the session offers no "
                                      "log to read the crash from"), None
        crash_texts: list[str] = []
        while True:
            failed: InfraError | None = None
            if log_type in self.log_types:
                lines.extend(self._read_log(session, log_type))
                failed = self._log_error
            log_read = failed is None  # the app's lines up to its death are all in
            if crash_type and crash_type in self.log_types:
                crash_texts.extend(self._read_log(session, crash_type))
                failed = failed or self._log_error
            over = time.monotonic() >= deadline or self._abort.is_set()
            for text in crash_texts if log_read or over else ():
                if self.config.app_id in text or "RCTFatal" in text:
                    return crash_evidence(self.redactor.text(text), ctx.artifacts_dir,
                                          ctx.artifacts_rel, "crash.ips", hint="ips")
            if self.config.platform is Platform.ANDROID:
                text = "\n".join(lines) + "\n"
                if _android_crash_complete(text):
                    return crash_evidence(self.redactor.text(text), ctx.artifacts_dir,
                                          ctx.artifacts_rel, "crash.txt", hint="logcat")
            if over:
                if failed is not None:
                    raise failed  # the log never answered again: its text is unknown
                return CrashEvidence(note=(
                    f"the app died {when} done and no crash text for it appeared in "
                    f"{'/'.join(available)} within {self.config.report_wait_s:g} s")), None
            time.sleep(self.config.poll_s)


def _shown_event(text: str | None, launch_id: str) -> ProtocolEvent | None:
    """The protocol event the status element shows, when it is one of ``launch_id``
    (``None`` for no element, no text, a line that does not parse, or another launch's
    line, e.g. a screen not yet redrawn after the cold start)."""
    if not text:
        return None
    event = parse_line(text).event
    return event if event is not None and event.id == launch_id else None


def _android_crash_complete(text: str) -> bool:
    """True once logcat holds a whole crash: a native backtrace frame (``#00 pc``) after
    the tombstone header, or a Java/JS ``FATAL EXCEPTION`` with a stack line (logcat
    delivers either in one burst)."""
    if "#00 pc" in text or "#0 pc" in text:
        return True
    return "FATAL EXCEPTION" in text and ("\tat " in text or "    at " in text)
