"""The Appium transport: the server URL, ``/status``, and one session's commands through the
Appium Python client, every failure mapped in one place (a dead server or session becomes an
:class:`~kit.errors.InfraError`; capabilities the server refuses a
:class:`~kit.errors.UsageError`).

Credentials in the server URL (``https://USER:KEY@hub/wd/hub``) are given to the client as
its username and password, never written: every message that leaves this module goes
through :class:`kit.redact.Redactor`.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import urllib.error
import urllib.request
from typing import Any, Callable
from urllib.parse import unquote, urlsplit, urlunsplit

from ...errors import InfraError, UsageError
from ...redact import MASK, Redactor
from ..ios.app import SCENARIO_ARGUMENT
from .config import AppiumConfig, Platform, build_capabilities

__all__ = ["AppState", "ServerURL", "parse_server_url", "check_server", "AppiumSession",
           "SessionGone"]


class SessionGone(InfraError):
    """The server no longer knows the session (W3C ``invalid session id``, HTTP 404): no
    later command of it can work."""

#: The most bytes of a ``/status`` answer read (a real one is under 1 KiB).
_STATUS_LIMIT = 1024 * 1024
_URL_HINT = "e.g. http://127.0.0.1:4723 or https://USER:KEY@hub.example/wd/hub"


class AppState(enum.IntEnum):
    """``mobile: queryAppState`` results (Appium client ``ApplicationState``)."""

    NOT_INSTALLED = 0
    NOT_RUNNING = 1
    RUNNING_IN_BACKGROUND_SUSPENDED = 2
    RUNNING_IN_BACKGROUND = 3
    RUNNING_IN_FOREGROUND = 4


@dataclasses.dataclass(frozen=True)
class ServerURL:
    """A checked Appium server URL.

    Attributes:
        clean: the URL without its userinfo (what the client connects to).
        user, password: the percent-decoded credentials, or ``None``.
        host: the host name (an IPv6 address without its brackets).
    """

    clean: str
    user: str | None
    password: str | None
    host: str


def _shown(url: str, redactor: Redactor) -> str:
    """``url`` as messages may show it: redacted, any ``#fragment`` masked whole."""
    base, sep, _fragment = url.partition("#")
    return redactor.url(base) + (f"#{MASK}" if sep else "")


def parse_server_url(url: str, redactor: Redactor) -> ServerURL:
    """Check ``--server`` and split off its credentials (RFC 3986 syntax, read with
    :func:`urllib.parse.urlsplit`).

    Raises:
        UsageError: not an http(s) URL with a host, a port outside 1..65535 or not a
            number, a malformed IPv6 host, a query string or a fragment (which the Appium
            client cannot carry). The message shows the URL redacted, a fragment masked.
    """
    shown = _shown(url, redactor)
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535"...
        raise UsageError(f"--server {shown!r} is not a valid URL: "
                         f"{redactor.text(str(exc))}", _URL_HINT) from None
    if parts.scheme not in ("http", "https") or not host:
        raise UsageError(f"--server {shown!r} is not an http(s) URL", _URL_HINT)
    if port == 0:
        raise UsageError(f"--server {shown!r} is not a valid URL: port 0", _URL_HINT)
    if parts.fragment or url.endswith("#"):
        raise UsageError(f"--server {shown!r} has a #fragment, which is never sent to a "
                         "server", "remove it; give credentials as https://USER:KEY@host/"
                                   "path, or as capabilities in --caps")
    if parts.query:
        raise UsageError(f"--server {shown!r} has a query string, which the Appium client "
                         "cannot carry", "give credentials as https://USER:KEY@host/path, or "
                                         "as capabilities in --caps")
    if parts.username is None:
        return ServerURL(clean=url, user=None, password=None, host=host)
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return ServerURL(clean=clean, user=unquote(parts.username),
                     password=unquote(parts.password or "") or None, host=host)


def check_server(url: str, redactor: Redactor, timeout_s: float = 15.0) -> dict[str, Any]:
    """``GET <url>/status``: the server's build info (the W3C WebDriver ``/status``).

    Raises:
        UsageError: a bad URL (:func:`parse_server_url`), or the server is unreachable or
            not an Appium / WebDriver server (one line; the URL redacted).
    """
    server = parse_server_url(url, redactor)
    shown = _shown(url, redactor)
    request = urllib.request.Request(server.clean.rstrip("/") + "/status")
    if server.user is not None:
        token = base64.b64encode(f"{server.user}:{server.password or ''}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            data = json.loads(response.read(_STATUS_LIMIT).decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:
        raise UsageError(f"the Appium server at {shown} answered /status with HTTP "
                         f"{exc.code}", "check --server (path such as /wd/hub, credentials)"
                         ) from None
    except (urllib.error.URLError, OSError, ValueError, RecursionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(f"the Appium server at {shown} is unreachable: "
                         f"{redactor.text(str(reason))}",
                         "start it (scripts/setup-appium.sh installs one) or check --server"
                         ) from None
    if not isinstance(data, dict) or "value" not in data:
        raise UsageError(f"{shown} is not an Appium server (its /status has no value)",
                         "check --server")
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
        server = parse_server_url(config.server_url, redactor)
        clean = server.clean
        client = AppiumClientConfig(remote_server_addr=clean, direct_connection=False,
                                    keep_alive=True, timeout=int(config.command_timeout_s),
                                    username=server.user, password=server.password)
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
            raise SessionGone(f"the Appium session ended during {what}: "
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

    def is_locked(self) -> bool | None:
        """``mobile: isLocked`` (UiAutomator2 and XCUITest): whether the device's screen is
        locked; ``None`` when the driver has no such method.

        Raises:
            InfraError: the server or session failed.
        """
        try:
            return bool(self.execute("mobile: isLocked", {}))
        except SessionGone:
            raise
        except InfraError as exc:
            if "Unsupported execute method" in exc.message or \
                    "unknown method" in exc.message.lower():
                return None
            raise

    def installed_build(self) -> str | None:
        """Which build of the app is installed, as one string; ``""`` when the app is not
        installed; ``None`` when the driver cannot tell (no such method, a failure such as
        a driver version that lists apps on real devices only, an answer without the app's
        keys).

        iOS: XCUITest ``mobile: listApps {applicationType: User}``, the installation
        proxy's map of bundle id to ``Info.plist`` keys and ``Path`` (a new
        ``Bundle/Application/<UUID>/`` at every install): its ``Path`` and
        ``CFBundleVersion``. Android: UiAutomator2 ``mobile: listApps``, a map of package
        name to ``{packageName, versionCode}`` (appium-android-driver
        ``mobileListApps``, ``lib/commands/app-management.ts``): its ``versionCode``, which
        tells only a build of another version apart (:class:`AppiumLauncher` asks
        ``pm path`` first where a shell is allowed).

        Raises:
            SessionGone: the server no longer knows the session.
        """
        ios = self.config.platform is Platform.IOS
        try:
            value = self.execute("mobile: listApps", {"applicationType": "User"} if ios else {})
        except SessionGone:
            raise
        except InfraError:
            return None  # unknown: the launch goes on unchecked
        maps = value if isinstance(value, list) else [value]
        found = [m for m in maps if isinstance(m, dict)]
        if not found:
            return None
        info = next((m[self.config.app_id] for m in found if self.config.app_id in m), None)
        if not isinstance(info, dict):
            return ""
        if not ios:
            code = info.get("versionCode")
            return None if code is None else f"versionCode {code}"
        if not info.get("Path") and not info.get("CFBundleVersion"):
            return None
        return f"{info.get('Path') or '?'} (build {info.get('CFBundleVersion') or '?'})"

    def install(self, app: str) -> None:
        """``mobile: installApp {app}``: install (over) the app from a path or URL."""
        self.execute("mobile: installApp", {"app": app})

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

        by: str
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
