"""LambdaTest (TestMu AI) App Automation: the session record, its device and crash logs.

Source: LambdaTest's debugging-logs page (https://www.lambdatest.com/support/docs/debugging-logs/)
and, for the key names, a third-party reader of its API (secondary), as docs/farms.md says:

1. ``GET {api}/mobile-automation/api/v1/sessions/{id}`` -> ``{"data": {..., "device_logs_url",
   "crash_logs_url", ...}}``, polled while it answers 404 or no ``*_url`` is set yet;
2. ``device_logs_url`` (needs the capability ``devicelog: true``; off by default), retried
   while it answers 404;
3. ``crash_logs_url`` (captured automatically): 404 or no URL means no crash log.

Auth: HTTP Basic ``LT_USERNAME:LT_ACCESS_KEY``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..errors import InfraError
from .attribute import epoch_of
from .base import FarmSettings, FetchContext, SessionEvidence, credentials
from .http import Deadline

__all__ = ["LambdaTest", "make", "ENV", "DEFAULT_API"]

DEFAULT_API = "https://mobile-api.lambdatest.com"
ENV = ("LT_USERNAME", "LT_ACCESS_KEY")
_URL_KEYS = ("console_logs_url", "network_logs_url", "command_logs_url", "appium_logs_url",
             "device_logs_url", "crash_logs_url", "video_url")


class LambdaTest:
    """:class:`kit.farms.base.Farm` for LambdaTest App Automation."""

    name = "lambdatest"

    def __init__(self, api: str) -> None:
        self.api = api.rstrip("/")
        #: the only origins that get the credentials (the session's S3 / CloudFront
        #: URLs are presigned and fetched bare)
        self.api_urls = (self.api, DEFAULT_API)

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        ev = SessionEvidence(farm=self.name, session=ref)
        url = f"{self.api}/mobile-automation/api/v1/sessions/{quote(ref, safe='')}"

        def ready(deadline: Deadline) -> tuple[dict[str, Any], Any] | None:
            answer = ctx.http.get(url, deadline, what="LambdaTest session")
            if answer.status == 404:
                return None
            if answer.status != 200:
                raise InfraError(f"LambdaTest session {ref}: HTTP {answer.status}",
                                 "check the session id and --farm-api")
            data = answer.json()
            session = data.get("data") if isinstance(data, dict) else None
            if not isinstance(session, dict):
                raise InfraError(f"LambdaTest session {ref}: no data in the answer",
                                 "check --farm-api")
            if not any(session.get(k) for k in _URL_KEYS):
                return None  # not processed yet
            return session, answer

        session, answer = ctx.http.poll(f"LambdaTest session {ref}", ready, ctx.deadline)
        ev.artifacts.append(ctx.keep_answer("session.json", answer))
        ev.device = session.get("device") or session.get("device_name")
        ev.identity = {"app": session.get("app_id") or session.get("app"),
                       "app_version": session.get("app_version"),
                       "build": session.get("build_name"),
                       "start": epoch_of(session.get("create_timestamp")
                                         or session.get("start_timestamp")
                                         or session.get("created_at")),
                       "end": epoch_of(session.get("end_timestamp")),
                       "duration_s": session.get("duration")}
        logs_url = session.get("device_logs_url")
        if logs_url:
            art = ctx.wait_download(logs_url, "device_logs.txt", "device-log",
                                    "LambdaTest device log")
            if art is not None:
                ev.artifacts.append(art)
        else:
            ev.notes.append("no device_logs_url: device logs are off (set the devicelog "
                            "capability to true)")
        crash_url = session.get("crash_logs_url")
        crash = ctx.download(crash_url, "crash_logs.txt", "crash-log",
                             "LambdaTest crash log") if crash_url else None
        if crash is None:
            ev.notes.append("no crash log for the session")
            if crash_url and not ctx.last_refused:
                ev.absent.append((crash_url, "crash_logs.txt", "crash-log",
                                  "LambdaTest crash log"))
        else:
            ev.artifacts.append(crash)
        return ev


def make(settings: FarmSettings) -> tuple[LambdaTest, tuple[str, str]]:
    """The adapter and its Basic-auth pair. Raises UsageError (credentials)."""
    return LambdaTest(settings.api or DEFAULT_API), credentials(settings, ENV)
