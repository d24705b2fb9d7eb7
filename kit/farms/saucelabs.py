"""Sauce Labs: real devices (RDC jobs) and emulators/simulators (virtual-cloud job assets).

Source: Sauce Labs' REST docs (https://docs.saucelabs.com/dev/api/rdc/,
https://docs.saucelabs.com/dev/api/jobs/) and its own clients (saucerest-java,
node-saucelabs), as docs/farms.md quotes them.

Real devices (``saucelabs``):

1. the RDC job id is not the WebDriver session id (``/v1/rdc/jobs/<webdriver id>`` is a
   404, node-saucelabs#238), and the listing's entities do not carry the session id
   (https://docs.saucelabs.com/dev/api/rdc/, "Get Real Device Jobs"): ``GET
   {api}/v1/rdc/jobs?limit=&offset=`` is paged through and each Appium job of the
   campaign's time is read in detail (``GET {api}/v1/rdc/jobs/{id}``, which has
   ``appium_session_id``) until it is the session's, polled while none is;
2. ``GET {api}/v1/rdc/jobs/{id}``, polled until ``device_log_url`` is set ("not processed
   yet": saucerest-java polls the job up to a minute);
3. ``device_log_url`` (JSON lines ``{"timestamp", "level", "message"}``) and
   ``crash_log_url`` (``crash.json``; it needs app instrumentation and does not support
   React Native, so the device log is what carries the RN app's crashes).

Emulators and simulators (``saucelabs-vdc``): the job id is the session id;
``GET {api}/rest/v1/{user}/jobs/{id}/assets`` (404 until the job has ended), then
``logcat.log`` / ``ios-syslog.log`` from ``.../assets/{file}``.

Auth: HTTP Basic ``SAUCE_USERNAME:SAUCE_ACCESS_KEY``; ``--farm-region`` picks
``api.<region>.saucelabs.com`` (``us-west-1``, ``us-east-4``, ``eu-central-1``).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from ..errors import InfraError, UsageError
from .attribute import epoch_of
from .base import FarmSettings, FetchContext, SessionEvidence, credentials
from .http import Deadline

__all__ = ["SauceRealDevices", "SauceVirtual", "make", "make_vdc", "ENV", "api_for"]

ENV = ("SAUCE_USERNAME", "SAUCE_ACCESS_KEY")
_REGION_RE = re.compile(r"^[a-z]{2}-[a-z]+-[0-9]$")
#: jobs asked for per page of ``/v1/rdc/jobs``, and pages read before giving up on a round
PAGE = 50
MAX_PAGES = 40
#: job details read at most while looking for a session's job
MAX_DETAILS = 200
#: seconds a farm's and the kit's clocks may disagree on a session's span
WINDOW_SLACK_S = 3600.0
#: virtual-cloud assets that hold the device's log
_VDC_LOGS = ("logcat.log", "ios-syslog.log")


def api_for(settings: FarmSettings) -> str:
    """The API base URL: ``--farm-api``, else ``https://api.<region>.saucelabs.com``.

    Raises:
        UsageError: a region that is not of the ``us-west-1`` form.
    """
    if settings.api:
        return settings.api.rstrip("/")
    region = settings.region or "us-west-1"
    if not _REGION_RE.match(region):
        raise UsageError(f"--farm-region {region[:40]!r} is not a Sauce Labs region",
                         "e.g. us-west-1, us-east-4 or eu-central-1")
    return f"https://api.{region}.saucelabs.com"


class SauceRealDevices:
    """:class:`kit.farms.base.Farm` for Sauce Labs real devices."""

    name = "saucelabs"

    def __init__(self, api: str) -> None:
        self.api = api
        self.api_urls = (api,)

    def _detail(self, job_id: str, ctx: FetchContext, deadline: Deadline
                ) -> tuple[dict[str, Any], Any] | None:
        """``GET /v1/rdc/jobs/{id}``: the job and its answer (``None`` for a 404)."""
        url = f"{self.api}/v1/rdc/jobs/{quote(job_id, safe='')}"
        answer = ctx.http.get(url, deadline, what="Sauce RDC job")
        if answer.status == 404:
            return None
        if answer.status != 200:
            raise InfraError(f"Sauce RDC job {job_id}: HTTP {answer.status}",
                             "check --farm-region / --farm-api")
        data = answer.json()
        if not isinstance(data, dict):
            raise InfraError(f"Sauce RDC job {job_id} is not a JSON object", "check --farm-api")
        return data, answer

    def _find_job(self, ref: str, ctx: FetchContext, deadline: Deadline
                  ) -> tuple[str, tuple[dict[str, Any], Any] | None] | None:
        """The RDC job whose ``appium_session_id`` is ``ref``: the list's entities carry
        no such field (https://docs.saucelabs.com/dev/api/rdc/: ``id``, ``name``, ``status``,
        ``start_time``, ``end_time``, ``automation_backend``...), only the job detail
        does, so each Appium job listed (newest first) is read in detail until one
        matches; a listed field of that name is used when a listing has it. Jobs that
        ended before ``ctx.window``'s start or began after its end (the campaign's own
        times, with :data:`WINDOW_SLACK_S`) are not read."""
        window = getattr(ctx, "window", None)
        read = 0
        for page in range(MAX_PAGES):
            answer = ctx.http.get(f"{self.api}/v1/rdc/jobs", deadline, what="Sauce RDC jobs",
                                  params={"limit": PAGE, "offset": page * PAGE})
            if answer.status != 200:
                raise InfraError(f"Sauce RDC job list: HTTP {answer.status}",
                                 "check --farm-region / --farm-api")
            data = answer.json()
            entities = data.get("entities") if isinstance(data, dict) else None
            if not isinstance(entities, list):
                raise InfraError("Sauce RDC job list has no entities", "check --farm-api")
            for job in entities:
                if not isinstance(job, dict) or not job.get("id"):
                    continue
                if job.get("appium_session_id") == ref:
                    return str(job["id"]), None
                if "appium_session_id" in job or not _may_be(job, window):
                    continue
                if read >= MAX_DETAILS:
                    return None
                read += 1
                detail = self._detail(str(job["id"]), ctx, deadline)
                if detail is not None and detail[0].get("appium_session_id") == ref:
                    return str(job["id"]), detail
            more = (data.get("metaData") or {}).get("moreAvailable") \
                if isinstance(data.get("metaData"), dict) else None
            if more is False or len(entities) < PAGE:
                return None
        return None

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        ev = SessionEvidence(farm=self.name, session=ref)
        job_id, _first = ctx.http.poll(f"the Sauce RDC job of session {ref}",
                                       lambda d: self._find_job(ref, ctx, d), ctx.deadline)

        def processed(deadline: Deadline) -> tuple[dict[str, Any], Any] | None:
            got = self._detail(job_id, ctx, deadline)
            return got if got is not None and got[0].get("device_log_url") else None

        job, answer = ctx.http.poll(f"Sauce RDC job {job_id}", processed, ctx.deadline)
        ev.artifacts.append(ctx.keep_answer("job.json", answer))
        ev.device = job.get("device_name")
        summary = job.get("application_summary")
        app: dict = summary if isinstance(summary, dict) else {}
        ev.identity = {"app_id": app.get("packageName"), "app_version": app.get("version"),
                       "build": job.get("build"), "start": epoch_of(job.get("start_time")),
                       "end": epoch_of(job.get("end_time"))}
        log = ctx.wait_download(job["device_log_url"], "deviceLogs.jsonl", "device-log",
                                "Sauce device log")
        if log is not None:
            ev.artifacts.append(log)
        crash_url = job.get("crash_log_url")
        if crash_url:
            crash = ctx.download(crash_url, "crash.json", "crash-log", "Sauce crash log")
            if crash is None and not ctx.last_refused:
                ev.notes.append("crash.json: 404, no crash captured by instrumentation")
                ev.absent.append((crash_url, "crash.json", "crash-log", "Sauce crash log"))
            elif crash is not None:
                ev.artifacts.append(crash)
        else:
            ev.notes.append("no crash_log_url (Sauce crash capture needs app instrumentation "
                            "and does not support React Native): the device log is the "
                            "evidence")
        return ev


def _may_be(job: dict[str, Any], window: tuple[float, float] | None) -> bool:
    """Whether a listed job may be the campaign's: an Appium job (``automation_backend``,
    when the listing says) whose times (ms) are not all outside ``window``."""
    backend = job.get("automation_backend")
    if isinstance(backend, str) and backend and backend.upper() != "APPIUM":
        return False
    if window is None:
        return True
    start, end = epoch_of(job.get("start_time")), epoch_of(job.get("end_time"))
    if end is not None and end < window[0] - WINDOW_SLACK_S:
        return False
    return not (start is not None and start > window[1] + WINDOW_SLACK_S)


class SauceVirtual:
    """:class:`kit.farms.base.Farm` for Sauce Labs emulators and simulators."""

    name = "saucelabs-vdc"

    def __init__(self, api: str, user: str) -> None:
        self.api = api
        self.user = user
        self.api_urls = (api,)

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        ev = SessionEvidence(farm=self.name, session=ref)
        base = f"{self.api}/rest/v1/{quote(self.user, safe='')}/jobs/{quote(ref, safe='')}"

        def listed(deadline: Deadline) -> tuple[dict[str, Any], Any] | None:
            answer = ctx.http.get(f"{base}/assets", deadline, what="Sauce job assets")
            if answer.status == 404:
                return None
            data = answer.json()
            if not isinstance(data, dict):
                raise InfraError(f"Sauce job {ref} assets are not a JSON object",
                                 "check --farm-api")
            return data, answer

        assets, answer = ctx.http.poll(f"Sauce job {ref} assets", listed, ctx.deadline)
        ev.artifacts.append(ctx.keep_answer("assets.json", answer))
        names = [v for v in assets.values() if isinstance(v, str)]
        wanted = [n for n in _VDC_LOGS if n in names]
        if not wanted:
            ev.notes.append("the job lists no logcat.log / ios-syslog.log asset")
        for name in wanted:
            art = ctx.wait_download(f"{base}/assets/{quote(name, safe='')}", name,
                                    "device-log", f"Sauce asset {name}")
            if art is not None:
                ev.artifacts.append(art)
        return ev


def make(settings: FarmSettings) -> tuple[SauceRealDevices, tuple[str, str]]:
    """The real-device adapter and its Basic-auth pair. Raises UsageError (credentials,
    region)."""
    return SauceRealDevices(api_for(settings)), credentials(settings, ENV)


def make_vdc(settings: FarmSettings) -> tuple[SauceVirtual, tuple[str, str]]:
    """The emulator/simulator adapter and its Basic-auth pair. Raises UsageError."""
    auth = credentials(settings, ENV)
    return SauceVirtual(api_for(settings), auth[0]), auth
