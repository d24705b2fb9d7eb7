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
   through :func:`kit.observe.make_record`.

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
from .config import AppiumConfig, Platform
from .session import AppiumSession, AppState, parse_server_url

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
    """

    target = "appium"

    def __init__(self, config: AppiumConfig, redactor: Redactor,
                 session_factory: Callable[[AppiumConfig, Redactor], AppiumSession]
                 = AppiumSession) -> None:
        self.config = config
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
        try:
            record = self._launch(session, ctx)
        except InfraError:
            session.quit()
            self.session = None
            raise
        if self._session_lost:  # the death was seen, then the session broke
            session.quit()
            self.session = None
        return record

    def _launch(self, session: AppiumSession, ctx: LaunchContext) -> LaunchRecord:
        started_at = utc_now()
        t0 = time.monotonic()
        log_type = _LOG_TYPE[self.config.platform.value]
        crash_type = _CRASH_LOG_TYPE.get(self.config.platform.value)
        self._drain(session)
        session.terminate()
        env = dict(POISON_ENV) if self.config.poison and \
            self.config.platform is Platform.IOS else None
        session.start(ctx.scenario.to_url(), env, use_args=self.config.deliver == "args")
        lines: list[str] = []
        status_seen: list[str] = []
        seen_running = False
        error_at: float | None = None
        deadline = t0 + ctx.timeout_s

        def events() -> list[ProtocolEvent]:
            return list(iter_events(lines + status_seen, ctx.launch_id))

        while True:
            text = session.status_text()
            if _shown_event(text, ctx.launch_id) is not None:
                status_seen.append(text)
            if log_type in self.log_types:
                lines.extend(session.log_lines(log_type))
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
            if rel is not None:
                artifacts.append(rel)
            elif never_seen:
                raise InfraError("the app did not start within 10 s of the launch request "
                                 "(never running, no COLDSTART line)", "check --app-id and "
                                 "that the app is installed and opens coldstart:// URLs")
        else:
            session.terminate()
        (ctx.artifacts_dir / f"{log_type}.txt").write_text(
            self.redactor.text("\n".join(lines)) + "\n")
        observation = Observation(events=tuple(events()), end=end, timeout_s=ctx.timeout_s,
                                  infer=ctx.scenario.infer, crash=evidence,
                                  killed_note="terminated")
        return make_record(ctx, target=self.target, device=self.device,
                           observation=observation, started_at=started_at,
                           wall_ms=(time.monotonic() - t0) * 1000.0, artifacts=artifacts,
                           status_text=status_seen[-1] if status_seen else None,
                           session_id=session.session_id)

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
        if _shown_event(text, launch_id) is not None:
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
            if log_type in self.log_types:
                lines.extend(session.log_lines(log_type))
            if crash_type and crash_type in self.log_types:
                crash_texts.extend(session.log_lines(crash_type))
            for text in crash_texts:
                if self.config.app_id in text or "RCTFatal" in text:
                    return crash_evidence(self.redactor.text(text), ctx.artifacts_dir,
                                          ctx.artifacts_rel, "crash.ips", hint="ips")
            if self.config.platform is Platform.ANDROID:
                text = "\n".join(lines) + "\n"
                if _android_crash_complete(text):
                    return crash_evidence(self.redactor.text(text), ctx.artifacts_dir,
                                          ctx.artifacts_rel, "crash.txt", hint="logcat")
            if time.monotonic() >= deadline or self._abort.is_set():
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
