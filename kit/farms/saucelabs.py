"""Sauce Labs: real devices (RDC jobs) and emulators/simulators (virtual-cloud job assets).

Source: Sauce Labs' REST docs (https://docs.saucelabs.com/dev/api/rdc/,
https://docs.saucelabs.com/dev/api/jobs/) and its own clients (saucerest-java,
node-saucelabs), as docs/farms.md quotes them.

Real devices (``saucelabs``):

1. the RDC job id is not the WebDriver session id (``/v1/rdc/jobs/<webdriver id>`` is a
   404, node-saucelabs#238): ``GET {api}/v1/rdc/jobs?limit=&offset=`` is paged through
   until an entity's ``appium_session_id`` is the session's, polled while none is;
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
from .base import FarmSettings, FetchContext, SessionEvidence, credentials
from .http import Deadline

__all__ = ["SauceRealDevices", "SauceVirtual", "make", "make_vdc", "ENV", "api_for"]

ENV = ("SAUCE_USERNAME", "SAUCE_ACCESS_KEY")
_REGION_RE = re.compile(r"^[a-z]{2}-[a-z]+-[0-9]$")
#: jobs asked for per page of ``/v1/rdc/jobs``, and pages read before giving up on a round
PAGE = 50
MAX_PAGES = 40
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

    def _find_job(self, ref: str, ctx: FetchContext, deadline: Deadline) -> str | None:
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
                if isinstance(job, dict) and job.get("appium_session_id") == ref and \
                        job.get("id"):
                    return str(job["id"])
            if len(entities) < PAGE:
                return None
        return None

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        ev = SessionEvidence(farm=self.name, session=ref)
        job_id = ctx.http.poll(f"the Sauce RDC job of session {ref}",
                               lambda d: self._find_job(ref, ctx, d), ctx.deadline)
        url = f"{self.api}/v1/rdc/jobs/{quote(job_id, safe='')}"

        def processed(deadline: Deadline) -> tuple[dict[str, Any], Any] | None:
            answer = ctx.http.get(url, deadline, what="Sauce RDC job")
            if answer.status == 404:
                return None
            data = answer.json()
            if not isinstance(data, dict):
                raise InfraError(f"Sauce RDC job {job_id} is not a JSON object",
                                 "check --farm-api")
            return (data, answer) if data.get("device_log_url") else None

        job, answer = ctx.http.poll(f"Sauce RDC job {job_id}", processed, ctx.deadline)
        ev.artifacts.append(ctx.keep_answer("job.json", answer))
        ev.device = job.get("device_name")
        log = ctx.http.poll("Sauce device log", lambda _d: ctx.download(
            job["device_log_url"], "deviceLogs.jsonl", "device-log", "Sauce device log"),
            ctx.deadline)
        ev.artifacts.append(log)
        crash_url = job.get("crash_log_url")
        if crash_url:
            crash = ctx.download(crash_url, "crash.json", "crash-log", "Sauce crash log")
            if crash is None:
                ev.notes.append("crash.json: 404, no crash captured by instrumentation")
            else:
                ev.artifacts.append(crash)
        else:
            ev.notes.append("no crash_log_url (Sauce crash capture needs app instrumentation "
                            "and does not support React Native): the device log is the "
                            "evidence")
        return ev


class SauceVirtual:
    """:class:`kit.farms.base.Farm` for Sauce Labs emulators and simulators."""

    name = "saucelabs-vdc"

    def __init__(self, api: str, user: str) -> None:
        self.api = api
        self.user = user

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
            def fetch(_d: Any, n: str = name) -> Any:
                return ctx.download(f"{base}/assets/{quote(n, safe='')}", n, "device-log",
                                    f"Sauce asset {n}")

            art = ctx.http.poll(f"Sauce asset {name}", fetch, ctx.deadline)
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
