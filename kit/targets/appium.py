"""The Appium target: cold launches through a UiAutomator2 (Android) or XCUITest (iOS) session,
on a local server or a remote grid / device farm.

Layers: :func:`check_server` and :class:`AppiumSession` are the transport (the Appium Python
client, every error mapped in one place: a dead server or session becomes an
:class:`~kit.errors.InfraError`); :class:`AppiumLauncher` speaks launch / observe / collect.

One session serves every launch of a device (a session per launch would pay the
UiAutomator2/WebDriverAgent start-up each time); a lost session is opened again at the next
launch. One launch (notes/drivers.md section 3):

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
5. ``done`` -> completed; ``error`` -> app-error; the app stopped running before ``done``
   -> crashed, with the crash text from the log (tombstone or Java/JS fatal in ``logcat``,
   the ``.ips`` of the XCUITest ``crashlog`` type) parsed by :mod:`kit.crash`; the timeout
   with the app still running -> hung.

Retries never turn a crash into a pass: only transport failures (the server or session
gone) raise InfraError, which :func:`kit.campaign.run_campaign` records and retries without
counting; a crash is always recorded as a crash.

Credentials in the server URL (``https://USER:KEY@hub/wd/hub``, ``?token=...``) and in
capabilities are given to the client as its username/password, never written: every
message, record and option stored goes through :class:`kit.redact.Redactor`.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from ..campaign import LaunchContext, utc_now
from ..errors import InfraError, UsageError
from ..protocol import ProtocolEvent, iter_events, parse_line
from ..records import LaunchRecord
from ..redact import Redactor
from .ios import (POISON_ENV, SCENARIO_ARGUMENT, crash_fields, record_for,
                  summarize_events)

__all__ = ["Platform", "AppState", "AppiumConfig", "AppiumSession", "AppiumLauncher",
           "check_server", "build_capabilities", "STATUS_TEST_ID", "DEFAULT_REPORT_WAIT_S"]

#: The React Native ``testID`` of the element showing the last protocol line (docs/app.md;
#: rn-app/src/LaunchScreen.tsx).
STATUS_TEST_ID = "coldstart-status"
#: Seconds to wait for crash text in the log after a death.
DEFAULT_REPORT_WAIT_S = 10.0
_LOG_TYPE = {"android": "logcat", "ios": "syslog"}
_CRASH_LOG_TYPE = {"ios": "crashlog"}


class Platform(str, enum.Enum):
    """The device platform behind the Appium session."""

    ANDROID = "android"
    IOS = "ios"

    def __str__(self) -> str:
        return self.value


class AppState(enum.IntEnum):
    """``mobile: queryAppState`` results (Appium client ``ApplicationState``)."""

    NOT_INSTALLED = 0
    NOT_RUNNING = 1
    RUNNING_IN_BACKGROUND_SUSPENDED = 2
    RUNNING_IN_BACKGROUND = 3
    RUNNING_IN_FOREGROUND = 4


@dataclasses.dataclass(frozen=True)
class AppiumConfig:
    """What an Appium campaign needs.

    Attributes:
        server_url: the server, e.g. ``http://127.0.0.1:4723`` or a farm's
            ``https://USER:KEY@hub.example/wd/hub`` (credentials are redacted everywhere).
        platform: :class:`Platform`.
        app_id: Android package or iOS bundle id of the app.
        caps: extra capabilities (from ``--caps FILE``), passed through unchanged; they
            override the kit's defaults (:func:`build_capabilities`).
        app: path or URL of the app to install (``appium:app``), or ``None`` when it is
            installed already (or named in ``caps``, as farms do with uploaded apps).
        poison: heap poisoning (iOS: :data:`kit.targets.ios.POISON_ENV` through
            ``mobile: launchApp``; Android needs a GWP-ASan or HWASan build instead).
        deliver: ``url`` (deep link) or ``args`` (iOS launch arguments).
        status_test_id: the status element's testID.
        poll_s: seconds between polls of the element, the app state and the log.
        report_wait_s: seconds to wait for crash text after a death.
        command_timeout_s: HTTP timeout of one client command.
    """

    server_url: str
    platform: Platform
    app_id: str
    caps: dict[str, Any] = dataclasses.field(default_factory=dict)
    app: str | None = None
    poison: bool = False
    deliver: str = "url"
    status_test_id: str = STATUS_TEST_ID
    poll_s: float = 0.25
    report_wait_s: float = DEFAULT_REPORT_WAIT_S
    command_timeout_s: float = 120.0


def build_capabilities(config: AppiumConfig) -> dict[str, Any]:
    """The session's capabilities: the kit's defaults for repeated cold launches
    (``noReset``, ``autoLaunch`` off, a ``newCommandTimeout`` longer than a launch) for
    UiAutomator2 or XCUITest, then ``config.caps`` on top (a farm's own keys pass through)."""
    caps: dict[str, Any] = {"appium:noReset": True, "appium:fullReset": False,
                            "appium:autoLaunch": False, "appium:newCommandTimeout": 300}
    if config.platform is Platform.ANDROID:
        caps.update({"platformName": "Android", "appium:automationName": "UiAutomator2",
                     "appium:appPackage": config.app_id})
    else:
        caps.update({"platformName": "iOS", "appium:automationName": "XCUITest",
                     "appium:bundleId": config.app_id})
    if config.app:
        caps["appium:app"] = config.app
    caps.update(config.caps)
    return caps


def _split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``url`` without its userinfo, and the user name and password (percent-decoded)."""
    from urllib.parse import unquote

    parts = urlsplit(url)
    if parts.username is None:
        return url, None, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, unquote(parts.username), unquote(parts.password or "") or None


def check_server(url: str, redactor: Redactor, timeout_s: float = 15.0) -> dict[str, Any]:
    """``GET <url>/status``: the server's build info.

    Raises:
        UsageError: the URL is not http(s), or the server is unreachable or not an Appium
            / WebDriver server (one line; the URL redacted).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--server {redactor.url(url)!r} is not an http(s) URL",
                         "e.g. http://127.0.0.1:4723 or https://USER:KEY@hub.example/wd/hub")
    if parts.query or parts.fragment:
        raise UsageError(f"--server {redactor.url(url)!r} has a query string, which the "
                         "Appium client cannot carry", "give credentials as "
                         "https://USER:KEY@host/path, or as capabilities in --caps")
    clean, user, password = _split_credentials(url)
    request = urllib.request.Request(clean.rstrip("/") + "/status")
    if user is not None:
        token = base64.b64encode(f"{user}:{password or ''}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            data = json.loads(response.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:
        raise UsageError(f"the Appium server at {redactor.url(url)} answered /status with "
                         f"HTTP {exc.code}", "check --server (path such as /wd/hub, "
                         "credentials)") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"the Appium server at {redactor.url(url)} is unreachable: "
                         f"{redactor.text(str(reason))}",
                         "start it (scripts/setup-appium.sh installs one) or check --server"
                         ) from None
    if not isinstance(data, dict) or "value" not in data:
        raise UsageError(f"{redactor.url(url)} is not an Appium server (its /status has no "
                         "value)", "check --server")
    return data["value"] if isinstance(data["value"], dict) else {}


class AppiumSession:
    """One Appium session: the commands the launcher uses, every failure mapped once.

    Args:
        config: the campaign's :class:`AppiumConfig`.
        redactor: redacts every message that leaves this class.

    Raises (from the constructor):
        UsageError: the server refused the capabilities (session not created).
        InfraError: the server could not be reached while creating the session.
    """

    def __init__(self, config: AppiumConfig, redactor: Redactor) -> None:
        from appium import webdriver
        from appium.options.common.base import AppiumOptions
        from appium.webdriver.client_config import AppiumClientConfig
        from selenium.common.exceptions import SessionNotCreatedException, WebDriverException

        self.config = config
        self.redactor = redactor
        clean, user, password = _split_credentials(config.server_url)
        client = AppiumClientConfig(remote_server_addr=clean, direct_connection=False,
                                    keep_alive=True, timeout=int(config.command_timeout_s),
                                    username=user, password=password)
        options = AppiumOptions()
        options.load_capabilities(build_capabilities(config))
        try:
            self.driver = webdriver.Remote(clean, options=options, client_config=client)
        except SessionNotCreatedException as exc:
            raise UsageError(f"the Appium server refused the capabilities: "
                             f"{self._first_line(exc)}",
                             "check --platform, --caps and that the server has the driver "
                             "(appium driver list --installed)") from None
        except WebDriverException as exc:  # e.g. no driver for the automationName
            raise UsageError(f"the Appium server refused the capabilities: "
                             f"{self._first_line(exc)}",
                             "check --platform, --caps and that the server has the driver "
                             "(appium driver list --installed)") from None
        except Exception as exc:  # urllib3 / socket errors: the server went away
            raise InfraError(f"cannot reach the Appium server: {self._first_line(exc)}",
                             "check the server and the network") from None
        self.session_id = str(self.driver.session_id)
        self.capabilities = dict(self.driver.capabilities or {})

    def _first_line(self, exc: BaseException) -> str:
        text = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()),
                    type(exc).__name__)
        return self.redactor.text(line)[:300]

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run one client command; any transport or session failure becomes InfraError
        (``what`` names the command in the message)."""
        from selenium.common.exceptions import (InvalidSessionIdException,
                                                NoSuchElementException,
                                                StaleElementReferenceException,
                                                WebDriverException)

        try:
            return fn()
        except (NoSuchElementException, StaleElementReferenceException):
            raise
        except InvalidSessionIdException as exc:
            raise InfraError(f"the Appium session ended during {what}: "
                             f"{self._first_line(exc)}",
                             "a new session is opened for the next launch (raise "
                             "appium:newCommandTimeout if it expired)") from None
        except WebDriverException as exc:
            raise InfraError(f"Appium {what} failed: {self._first_line(exc)}",
                             "see the Appium server log") from None
        except Exception as exc:  # urllib3 MaxRetryError, ProtocolError, socket errors
            raise InfraError(f"the Appium server stopped answering during {what}: "
                             f"{self._first_line(exc)}", "check the server and the network"
                             ) from None

    def execute(self, method: str, args: dict[str, Any]) -> Any:
        """``execute_script('mobile: ...', args)``."""
        return self.call(method, lambda: self.driver.execute_script(method, args))

    def app_state(self) -> AppState:
        """``mobile: queryAppState`` for the app."""
        key = "appId" if self.config.platform is Platform.ANDROID else "bundleId"
        value = self.execute("mobile: queryAppState", {key: self.config.app_id})
        try:
            return AppState(int(value))
        except (TypeError, ValueError):
            raise InfraError(f"mobile: queryAppState returned {value!r}", "see the server "
                             "log") from None

    def terminate(self) -> None:
        """``mobile: terminateApp`` (no error when it was not running)."""
        key = "appId" if self.config.platform is Platform.ANDROID else "bundleId"
        self.execute("mobile: terminateApp", {key: self.config.app_id})

    def start(self, url: str, env: dict[str, str] | None, use_args: bool) -> None:
        """Start the app cold with the scenario (see the module doc, step 3)."""
        if self.config.platform is Platform.ANDROID:
            self.execute("mobile: deepLink", {"url": url, "package": self.config.app_id,
                                              "waitForLaunch": False})
        elif use_args or env:
            self.execute("mobile: launchApp", {"bundleId": self.config.app_id,
                                               "arguments": [SCENARIO_ARGUMENT, url],
                                               "environment": dict(env or {})})
        else:
            self.execute("mobile: deepLink", {"url": url, "bundleId": self.config.app_id})

    def status_text(self) -> str | None:
        """The status element's text, or ``None`` when it is not on screen."""
        from appium.webdriver.common.appiumby import AppiumBy
        from selenium.common.exceptions import (NoSuchElementException,
                                                StaleElementReferenceException)

        if self.config.platform is Platform.ANDROID:
            by, value = AppiumBy.ID, self.config.status_test_id
        else:
            by, value = AppiumBy.ACCESSIBILITY_ID, self.config.status_test_id
        try:
            return self.call("find the status element",
                             lambda: self.driver.find_element(by, value).text)
        except (NoSuchElementException, StaleElementReferenceException):
            return None

    def log_types(self) -> list[str]:
        """Log types the session offers (``[]`` when the driver has none)."""
        return [str(t) for t in self.call("log types", lambda: self.driver.log_types) or []]

    def log_lines(self, log_type: str) -> list[str]:
        """New entries of ``log_type`` since the previous call (their ``message`` text)."""
        entries = self.call(f"get_log({log_type})", lambda: self.driver.get_log(log_type))
        return [str(e.get("message", "")) for e in entries or [] if isinstance(e, dict)]

    def quit(self) -> None:
        """End the session (errors ignored: the server may be gone)."""
        try:
            self.driver.quit()
        except Exception:
            pass


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
        host = urlsplit(config.server_url).hostname or "appium"
        self.device = str(udid) if udid else f"{config.platform.value}@{host}"
        self.server_info: dict[str, Any] = {}
        self.log_types: list[str] = []
        self._abort = threading.Event()

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
        try:
            return self._launch(session, ctx)
        except InfraError:
            session.quit()
            self.session = None
            raise

    def _launch(self, session: AppiumSession, ctx: LaunchContext) -> LaunchRecord:
        started_at = utc_now()
        t0 = time.monotonic()
        url = ctx.scenario.to_url()
        log_type = _LOG_TYPE[self.config.platform.value]
        crash_type = _CRASH_LOG_TYPE.get(self.config.platform.value)
        self._drain(session)
        session.terminate()
        env = dict(POISON_ENV) if self.config.poison and \
            self.config.platform is Platform.IOS else None
        session.start(url, env, use_args=self.config.deliver == "args")
        lines: list[str] = []
        crash_texts: list[str] = []
        status_seen: list[str] = []
        died = hung = False
        seen_running = False
        deadline = t0 + ctx.timeout_s
        while True:
            text = session.status_text()
            if _shown_event(text, ctx.launch_id) is not None:
                status_seen.append(text)
            if log_type in self.log_types:
                lines.extend(session.log_lines(log_type))
            summary = summarize_events(iter_events(lines + status_seen, ctx.launch_id))
            if summary.done or summary.error is not None:
                self._read_final_screen(session, ctx.launch_id, status_seen)
                break
            state = session.app_state()
            if state >= AppState.RUNNING_IN_BACKGROUND_SUSPENDED:
                seen_running = True
            elif seen_running or summary.last_phase is not None or \
                    time.monotonic() - t0 > 10.0:
                died = True
                break
            if time.monotonic() >= deadline:
                hung = True
                break
            if self._abort.is_set():
                raise InfraError("launch aborted", "resume with --resume")
            time.sleep(self.config.poll_s)
        crash = None
        note = None
        if died:
            crash, note = self._collect_crash(session, ctx, lines, crash_texts, log_type,
                                              crash_type)
            if crash is None and not seen_running and not status_seen and \
                    summarize_events(iter_events(lines, ctx.launch_id)).last_phase is None:
                raise InfraError("the app did not start within 10 s of the launch request "
                                 "(never running, no COLDSTART line)", "check --app-id and "
                                 "that the app is installed and opens coldstart:// URLs")
        else:
            session.terminate()
        summary = summarize_events(iter_events(lines + status_seen, ctx.launch_id))
        artifacts = [f"{ctx.artifacts_rel}/{log_type}.txt"]
        (ctx.artifacts_dir / f"{log_type}.txt").write_text(
            self.redactor.text("\n".join(lines)) + "\n")
        if crash is not None:
            artifacts.append(crash.pop("artifact"))
        return record_for(ctx, target=self.target, device=self.device, summary=summary,
                          started_at=started_at, wall_ms=(time.monotonic() - t0) * 1000.0,
                          artifacts=artifacts, died=died, hung=hung, crash=crash,
                          death_note=note, extra={"status_text": status_seen[-1]
                                                  if status_seen else None})

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
                       crash_texts: list[str], log_type: str, crash_type: str | None
                       ) -> tuple[dict[str, Any] | None, str | None]:
        """Crash text after a death: the ``crashlog`` entry naming the app (iOS) or the
        crash lines of ``logcat`` (Android), awaited up to ``report_wait_s``."""
        deadline = time.monotonic() + self.config.report_wait_s
        available = [t for t in (log_type, crash_type) if t and t in self.log_types]
        if not available:
            return None, "the app died before done; the session offers no log to read the " \
                         "crash from"
        while True:
            if log_type in self.log_types:
                lines.extend(session.log_lines(log_type))
            if crash_type and crash_type in self.log_types:
                crash_texts.extend(session.log_lines(crash_type))
            for text in crash_texts:
                if self.config.app_id in text or "RCTFatal" in text:
                    fields = crash_fields(text, ctx, "crash.ips", hint="ips")
                    fields["artifact"] = f"{ctx.artifacts_rel}/crash.ips"
                    return fields, None
            if self.config.platform is Platform.ANDROID:
                text = "\n".join(lines) + "\n"
                if _android_crash_complete(text):
                    fields = crash_fields(self.redactor.text(text), ctx, "crash.txt",
                                          hint="logcat")
                    fields["artifact"] = f"{ctx.artifacts_rel}/crash.txt"
                    return fields, None
            if time.monotonic() >= deadline or self._abort.is_set():
                return None, (f"the app died before done and no crash text for it appeared "
                              f"in {'/'.join(available)} within "
                              f"{self.config.report_wait_s:g} s")
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
