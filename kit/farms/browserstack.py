"""BrowserStack App Automate: the session record, its device log and its crash log.

Source: BrowserStack's REST reference (sessions, builds) and its own MCP server
(``src/tools/failurelogs-utils/app-automate.ts``), as docs/farms.md quotes them:

1. ``GET {api}/app-automate/sessions/{id}.json`` (the WebDriver session id is the
   ``hashed_id``), polled until ``automation_session.status`` is no longer ``running`` /
   ``queued``;
2. the device log (logcat on Android, syslog on iOS) from ``device_logs_url``, retried while
   it answers 404 (not processed yet);
3. the crash log from ``crash_logs_url`` or, when the record has none, ``device_logs_url``
   with its last segment swapped for ``crashlogs``; **404 means the session had no crash**.

Auth: HTTP Basic ``BROWSERSTACK_USERNAME:BROWSERSTACK_ACCESS_KEY``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..errors import InfraError
from .base import Artifact, FarmSettings, FetchContext, SessionEvidence, credentials
from .http import Deadline

__all__ = ["BrowserStack", "make", "ENV", "DEFAULT_API"]

DEFAULT_API = "https://api-cloud.browserstack.com"
API_HOSTS = ("https://api-cloud.browserstack.com", "https://api.browserstack.com")
ENV = ("BROWSERSTACK_USERNAME", "BROWSERSTACK_ACCESS_KEY")
_RUNNING = {"running", "queued"}


class BrowserStack:
    """:class:`kit.farms.base.Farm` for BrowserStack App Automate."""

    name = "browserstack"

    def __init__(self, api: str) -> None:
        self.api = api.rstrip("/")
        #: the origins that get the credentials: the API given, and BrowserStack's two
        #: documented API hosts (the session record's log URLs name api.browserstack.com)
        self.api_urls = (self.api, *API_HOSTS)

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        ev = SessionEvidence(farm=self.name, session=ref)
        url = f"{self.api}/app-automate/sessions/{quote(ref, safe='')}.json"

        def ready(deadline: Deadline) -> tuple[dict[str, Any], Any] | None:
            answer = ctx.http.get(url, deadline, what="BrowserStack session")
            if answer.status == 404:
                return None
            if answer.status != 200:
                raise InfraError(f"BrowserStack session {ref}: HTTP {answer.status}",
                                 "check the session id and --farm-api")
            data = answer.json()
            session = data.get("automation_session") if isinstance(data, dict) else None
            if not isinstance(session, dict):
                raise InfraError(f"BrowserStack session {ref}: no automation_session in the "
                                 "answer", "check --farm-api (App Automate's API host)")
            if str(session.get("status", "")).lower() in _RUNNING:
                return None
            return session, answer

        session, answer = ctx.http.poll(f"BrowserStack session {ref}", ready, ctx.deadline)
        ev.artifacts.append(ctx.keep_answer("session.json", answer))
        ev.device = session.get("device")
        details = session.get("app_details")
        app: dict = details if isinstance(details, dict) else {}
        ev.identity = {"app": app.get("app_url"), "app_version": app.get("app_version"),
                       "build": session.get("build_name"),
                       "start": _epoch(session.get("created_at")),
                       "duration_s": session.get("duration")}
        logs_url = session.get("device_logs_url")
        if not logs_url:
            ev.notes.append("the session record has no device_logs_url (device logs off: set "
                            "the deviceLogs capability)")
        else:
            art = ctx.wait_download(logs_url, "devicelogs.txt", "device-log",
                                    "BrowserStack device log")
            if art is not None:
                ev.artifacts.append(art)
        crash_url = session.get("crash_logs_url") or (
            logs_url.rsplit("/", 1)[0] + "/crashlogs" if logs_url else None)
        if crash_url:
            crash: Artifact | None = ctx.download(crash_url, "crashlogs.txt", "crash-log",
                                                  "BrowserStack crash log")
            if crash is None and not ctx.last_refused:
                ev.notes.append("crashlogs: 404, the session had no crash")
                ev.absent.append((crash_url, "crashlogs.txt", "crash-log",
                                  "BrowserStack crash log"))
            elif crash is not None:
                ev.artifacts.append(crash)
        return ev


def _epoch(value: Any) -> float | None:
    """An ISO 8601 time with a zone (``2026-03-14T10:00:00Z``, ``...+00:00``) as epoch
    seconds, epoch seconds or milliseconds as themselves; ``None`` otherwise."""
    from .attribute import epoch_of

    return epoch_of(value)


def make(settings: FarmSettings) -> tuple[BrowserStack, tuple[str, str]]:
    """The adapter and its Basic-auth pair (from ``settings.env``).

    Raises:
        UsageError: a credential variable is unset.
    """
    return BrowserStack(settings.api or DEFAULT_API), credentials(settings, ENV)
