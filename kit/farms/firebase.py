"""Firebase Test Lab: a results directory in Cloud Storage and, optional, Tool Results steps.

Source: FTL's results layout (``gs://<bucket>/<dir>/<device>/logcat``,
``test_result_N.xml``; Flank's fixtures), the Cloud Storage JSON API
(https://cloud.google.com/storage/docs/json_api/v1/objects/list, ``.../objects/get`` with
``alt=media``) and Tool Results v1beta3 (the ``projects.histories.executions.steps``
resource, https://firebase.google.com/docs/test-lab/reference/toolresults/rest), as
docs/farms.md quotes them:

1. ``GET {storage}/storage/v1/b/{bucket}/o?prefix={dir}/`` (every page, ``nextPageToken``),
   polled until a ``logcat`` object is listed (the objects exist once the matrix is
   ``FINISHED``);
2. each ``.../logcat`` (device log; FTL writes it in its own form, ``MM-DD
   HH:MM:SS.mmm: L/Tag( pid): msg``, :mod:`kit.farms.attribute`), ``test_result_N.xml``
   (JUnit) and ``data_app_native_crash_N_<pkg>.txt`` / ``data_app_crash_N_<pkg>.txt``
   (the DropBox entries FTL leaves when the app crashed, Flank#2484; crash logs matched
   by the pid they name) through ``.../o/{object}?alt=media``;
3. with ``--farm-steps projects/P/histories/H/executions/E``: ``GET
   {toolresults}/toolresults/v1beta3/{that}/steps`` (every page), polled until every step's
   ``state`` is ``complete``; each ``testExecutionStep.testIssues[]`` (``nativeCrash``,
   ``fatalException``, ``anr``, ``iosCrash``...) is kept as a structured issue.

Auth: ``Authorization: Bearer $GOOGLE_OAUTH_ACCESS_TOKEN`` (e.g. ``gcloud auth
print-access-token``); never written.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from ..errors import InfraError, UsageError
from .base import FarmSettings, FetchContext, SessionEvidence, safe_name
from .http import Deadline

__all__ = ["FirebaseTestLab", "make", "ENV", "GS_RE", "STEPS_RE"]

ENV = "GOOGLE_OAUTH_ACCESS_TOKEN"
STORAGE_API = "https://storage.googleapis.com"
TOOLRESULTS_API = "https://toolresults.googleapis.com"
GS_RE = re.compile(r"^gs://(?P<bucket>[a-z0-9][a-z0-9._-]{1,220})/(?P<dir>[^\s#?]{1,900})$")
STEPS_RE = re.compile(r"^projects/[A-Za-z0-9._:-]+/histories/[A-Za-z0-9._-]+/executions/"
                      r"[A-Za-z0-9._-]+$")
_RESULT_RE = re.compile(r"(^|/)test_result_\d+\.xml$")
#: the DropBox entries FTL leaves next to the logcat when the app crashed
#: (``<device>/data_app_native_crash_0_<pkg>.txt``, ``data_app_crash_0_<pkg>.txt``,
#: Flank#2484); each is one crash report of the app, kept as a ``crash-log``
_DROPBOX_RE = re.compile(r"(^|/)data_app_(native_crash|crash|anr)_\d+_[A-Za-z0-9._]+\.txt$")
MAX_PAGES = 100


class FirebaseTestLab:
    """:class:`kit.farms.base.Farm` for Firebase Test Lab."""

    name = "firebase"

    def __init__(self, storage: str, toolresults: str, steps: str | None) -> None:
        self.storage = storage.rstrip("/")
        self.toolresults = toolresults.rstrip("/")
        self.steps = steps
        self.api_urls = (self.storage, self.toolresults)

    def _list(self, bucket: str, prefix: str, ctx: FetchContext, deadline: Deadline
              ) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token = None
        for _ in range(MAX_PAGES):
            params = {"prefix": prefix, **({"pageToken": token} if token else {})}
            answer = ctx.http.get(f"{self.storage}/storage/v1/b/{quote(bucket)}/o", deadline,
                                  what="Cloud Storage listing", params=params)
            if answer.status == 404:
                raise InfraError(f"Cloud Storage bucket {bucket}: HTTP 404",
                                 "check --farm-ref (gs://BUCKET/DIR, the --results-bucket "
                                 "and --results-dir of the run)")
            data = answer.json()
            items.extend(i for i in data.get("items", []) if isinstance(i, dict))
            token = data.get("nextPageToken")
            if not token:
                break
        return items

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        match = GS_RE.match(ref)
        if not match:
            raise UsageError(f"--farm-ref {ref[:80]!r} is not gs://BUCKET/DIR",
                             "give the run's --results-bucket and --results-dir")
        bucket, prefix = match.group("bucket"), match.group("dir").rstrip("/") + "/"
        ev = SessionEvidence(farm=self.name, session=ref)

        def listed(deadline: Deadline) -> list[dict[str, Any]] | None:
            items = self._list(bucket, prefix, ctx, deadline)
            return items if any(str(i.get("name", "")).endswith("/logcat")
                                for i in items) else None

        items = ctx.http.poll(f"FTL results in {ref}", listed, ctx.deadline)
        for item in sorted(items, key=lambda i: str(i.get("name"))):
            name = str(item.get("name", ""))
            kind = "device-log" if name.endswith("/logcat") else (
                "test-result" if _RESULT_RE.search(name) else (
                    "crash-log" if _DROPBOX_RE.search(name) else None))
            if kind is None:
                continue
            url = f"{self.storage}/storage/v1/b/{quote(bucket)}/o/{quote(name, safe='')}"
            art = ctx.wait_download(f"{url}?alt=media", safe_name(name[len(prefix):], 120),
                                    kind, "FTL object")
            if art is not None:
                ev.artifacts.append(art)
        if self.steps:
            self._issues(ctx, ev)
        return ev

    def _issues(self, ctx: FetchContext, ev: SessionEvidence) -> None:
        url = f"{self.toolresults}/toolresults/v1beta3/{self.steps}/steps"

        def complete(deadline: Deadline) -> list[tuple[dict[str, Any], Any]] | None:
            pages = []
            token = None
            for _ in range(MAX_PAGES):
                answer = ctx.http.get(url, deadline, what="Tool Results steps",
                                      params={"pageToken": token} if token else None)
                if answer.status != 200:
                    raise InfraError(f"Tool Results steps: HTTP {answer.status}",
                                     "check --farm-steps")
                data = answer.json()
                pages.append((data, answer))
                token = data.get("nextPageToken")
                if not token:
                    break
            steps = [s for d, _a in pages for s in d.get("steps", [])]
            return pages if steps and all(s.get("state") == "complete" for s in steps) \
                else None

        pages = ctx.http.poll("Tool Results steps", complete, ctx.deadline)
        for n, (data, answer) in enumerate(pages):
            ev.artifacts.append(ctx.keep_answer(f"steps-{n}.json", answer, "test-issues"))
            for step in data.get("steps", []):
                for issue in (step.get("testExecutionStep") or {}).get("testIssues", []):
                    trace = ((issue.get("warning") or {}).get("stackTrace") or {})
                    ev.issues.append({"step": step.get("stepId"), "type": issue.get("type"),
                                      "severity": issue.get("severity"),
                                      "errorMessage": issue.get("errorMessage"),
                                      "stackTrace": trace.get("exception")})


def make(settings: FarmSettings) -> tuple[FirebaseTestLab, str]:
    """The adapter and its bearer token. Raises UsageError (no token, a bad
    ``--farm-steps``)."""
    token = settings.env.get(ENV)
    if not token:
        raise UsageError(f"--farm firebase needs {ENV} in the environment",
                         "export GOOGLE_OAUTH_ACCESS_TOKEN=$(gcloud auth print-access-token)")
    steps = settings.steps
    if steps is not None and not STEPS_RE.match(steps):
        raise UsageError(f"--farm-steps {steps[:80]!r} is not projects/P/histories/H/"
                         "executions/E", "copy it from the matrix's Tool Results URL")
    api = settings.api
    return FirebaseTestLab(api or STORAGE_API, api or TOOLRESULTS_API, steps), token
