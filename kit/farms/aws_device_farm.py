"""AWS Device Farm: a job's (or a run's jobs') artifacts through boto3.

Source: the Device Farm API reference (``GetJob``, ``ListJobs``, ``ListArtifacts``:
https://docs.aws.amazon.com/devicefarm/latest/APIReference/API_ListArtifacts.html; the
``Artifact.type`` enum: API_Artifact.html) and boto3's ``devicefarm`` client, as
docs/farms.md quotes them:

1. ``GetJob(arn)``, polled until the job's ``status`` is ``COMPLETED`` (artifacts are listed
   only after that); a run ARN is first expanded with ``ListJobs`` (every page);
2. ``ListArtifacts(arn=job, type=FILE|LOG|SCREENSHOT)``, every page (``nextToken``), for
   all three categories (the docs do not say which holds a crash report; the Jenkins plugin
   queries all three, and forgets to paginate);
3. a plain GET of each kept artifact's presigned ``url`` (``X-Amz-Signature`` and
   friends, redacted from every file): ``DEVICE_LOG`` (logcat / syslog, truncated by the
   farm at 1 GB), ``APPLICATION_CRASH_REPORT``, ``CUSTOMER_ARTIFACT`` (what a custom test
   spec wrote to ``$DEVICEFARM_LOG_DIR``: the zip's ``coldstart-shell/<dump>.txt`` files,
   the ``dumpsys dropbox`` / ``exit-info`` dumps of :mod:`kit.farms.testspec`'s spec, are
   kept as ``shell-dump`` artifacts and matched per launch by :mod:`kit.farms.pull`).

Throttling (``ThrottlingException``, a per-API token bucket) and connection failures are
waited out by :class:`kit.farms.http.FarmHTTP`'s deadline and backoff, and each throttle is
counted there. botocore's own retries are off: ``retries={"total_max_attempts": 1}``
(botocore's retry guide: ``total_max_attempts`` counts the first call, ``max_attempts``
counts retries only, so ``max_attempts: 1`` would still retry once), so its sleeps never
bypass the injected clock and every throttle reaches the kit. Expired or refused
credentials (``ExpiredTokenException``, ``UnrecognizedClientException``...) are a
UsageError: exit 2, one line.

Auth: AWS SigV4 through boto3's credential chain (``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, a profile, a role); region from
``--farm-region`` (Device Farm is in ``us-west-2``). The reference is ``--farm-ref`` (a job or
run ARN).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable

from ..errors import InfraError, UsageError
from .base import FarmSettings, FetchContext, SessionEvidence, safe_name
from .http import Deadline

__all__ = ["AwsDeviceFarm", "make", "KEPT_TYPES", "ARN_RE"]

#: ``Artifact.type`` -> the kit's artifact kind
KEPT_TYPES = {"DEVICE_LOG": "device-log", "APPLICATION_CRASH_REPORT": "crash-log",
              "CUSTOMER_ARTIFACT": "customer-artifact"}
CATEGORIES = ("FILE", "LOG", "SCREENSHOT")
ARN_RE = re.compile(r"^arn:aws:devicefarm:[a-z0-9-]+:\d{12}:(run|job):[A-Za-z0-9/._-]+$")
_RETRY_CODES = {"ThrottlingException", "LimitExceededException", "ServiceUnavailable",
                "ServiceAccountException", "InternalServiceError", "TooManyRequestsException",
                "RequestLimitExceeded"}
#: the codes that are a throttle (counted in ``farm-evidence.json``'s ``throttled``)
_THROTTLE_CODES = {"ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded",
                   "LimitExceededException"}
#: the codes of credentials that are wrong, expired or revoked (exit 2, one line)
_CREDENTIAL_CODES = {"AccessDeniedException", "UnrecognizedClientException",
                     "InvalidSignatureException", "ExpiredTokenException", "ExpiredToken",
                     "InvalidClientTokenId", "SignatureDoesNotMatch", "IncompleteSignature",
                     "MissingAuthenticationToken", "RequestExpired", "AuthFailure"}
MAX_PAGES = 200


class AwsDeviceFarm:
    """:class:`kit.farms.base.Farm` for AWS Device Farm (``client``: a boto3 ``devicefarm``
    client)."""

    name = "aws-device-farm"

    def __init__(self, client: Any) -> None:
        self.client = client

    def _call(self, ctx: FetchContext, deadline: Deadline, what: str,
              fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        from botocore.exceptions import (BotoCoreError, ClientError, EndpointConnectionError,
                                         NoCredentialsError)

        tries = 0
        while True:
            tries += 1
            try:
                return fn()
            except NoCredentialsError:
                raise UsageError("AWS Device Farm: no AWS credentials",
                                 "export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or set a "
                                 "profile (never written to a file)") from None
            except ClientError as exc:
                code = str(exc.response.get("Error", {}).get("Code", ""))
                if code in _RETRY_CODES:
                    ctx.http.throttled += code in _THROTTLE_CODES
                    ctx.http.wait(ctx.http.backoff(tries), deadline,
                                  f"AWS Device Farm {what}: {code}")
                    continue
                if code in _CREDENTIAL_CODES:
                    expired = "Expired" in code or code == "RequestExpired"
                    raise UsageError(
                        f"AWS Device Farm {what}: {code}: the AWS credentials are "
                        + ("expired" if expired else "refused (wrong, revoked or without "
                           "devicefarm:Get*/List* permission)"),
                        "refresh them (e.g. `aws sso login`, a new AWS_SESSION_TOKEN) and "
                        "pull again; check --farm-region") from None
                raise InfraError(f"AWS Device Farm {what}: {code or 'error'}: "
                                 f"{ctx.redactor.text(str(exc))[:160]}",
                                 "check --farm-ref and --farm-region") from None
            except (EndpointConnectionError, BotoCoreError) as exc:
                ctx.http.wait(ctx.http.backoff(tries), deadline,
                               f"AWS Device Farm {what}: {type(exc).__name__}")

    def jobs(self, ref: str, ctx: FetchContext) -> list[str]:
        """The job ARNs of ``ref`` (itself for a job ARN; ``ListJobs`` pages for a run)."""
        match = ARN_RE.match(ref)
        if not match:
            raise UsageError(f"--farm-ref {ref[:80]!r} is not a Device Farm run or job ARN",
                             "e.g. arn:aws:devicefarm:us-west-2:123456789012:job:P/R/00000")
        if match.group(1) == "job":
            return [ref]
        arns: list[str] = []
        token: str | None = None
        for _ in range(MAX_PAGES):
            kwargs: dict[str, Any] = {"arn": ref}
            if token:
                kwargs["nextToken"] = token
            page = self._call(ctx, ctx.deadline, "ListJobs",
                              functools.partial(self.client.list_jobs, **kwargs))
            arns.extend(str(j["arn"]) for j in page.get("jobs", []) if j.get("arn"))
            token = page.get("nextToken")
            if not token:
                break
        return arns

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        ev = SessionEvidence(farm=self.name, session=ref)
        for job_arn in self.jobs(ref, ctx):
            self._fetch_job(job_arn, ctx, ev)
        return ev

    def _fetch_job(self, arn: str, ctx: FetchContext, ev: SessionEvidence) -> None:
        def completed(deadline: Deadline) -> dict[str, Any] | None:
            job = self._call(ctx, deadline, "GetJob",
                             lambda: self.client.get_job(arn=arn)).get("job") or {}
            return job if job.get("status") == "COMPLETED" else None

        job = ctx.http.poll(f"AWS Device Farm job {arn.rsplit('/', 1)[-1]}", completed,
                            ctx.deadline)
        ev.device = ((job.get("device") or {}).get("name")) or ev.device
        start, end = _when(job.get("started") or job.get("created")), _when(job.get("stopped"))
        if start is not None:
            ev.identity["start"] = min(start, ev.identity.get("start") or start)
        if end is not None:
            ev.identity["end"] = max(end, ev.identity.get("end") or end)
        tag = safe_name(arn.rsplit(":", 1)[-1].replace("/", "_"), 40)
        record = _jsonable(job)
        ev.artifacts.append(ctx.keep_json(f"{tag}-job.json", record, f"devicefarm:GetJob:{arn}",
                                          json.dumps(record, sort_keys=True).encode()))
        seen: set[str] = set()
        for category in CATEGORIES:
            token: str | None = None
            for _ in range(MAX_PAGES):
                kwargs: dict[str, Any] = {"arn": arn, "type": category}
                if token:
                    kwargs["nextToken"] = token
                page = self._call(ctx, ctx.deadline, "ListArtifacts",
                                  functools.partial(self.client.list_artifacts, **kwargs))
                for item in page.get("artifacts", []):
                    kind = KEPT_TYPES.get(str(item.get("type")))
                    if kind is None or not item.get("url") or item.get("arn") in seen:
                        continue
                    seen.add(str(item.get("arn")))
                    name = f"{tag}-{item.get('name', 'artifact')}.{item.get('extension', 'txt')}"
                    art = ctx.download(str(item["url"]), name, kind,
                                       f"AWS artifact {item.get('type')}")
                    if art is None and not ctx.last_refused:
                        ev.notes.append(f"{item.get('type')} {item.get('name')}: 404 (the "
                                        "presigned URL expired? pull again)")
                    if art is None:
                        continue
                    ev.artifacts.append(art)
                    if kind == "customer-artifact":
                        self._shell_dumps(ctx, ev, art, tag)
                token = page.get("nextToken")
                if not token:
                    break


    @staticmethod
    def _shell_dumps(ctx: FetchContext, ev: SessionEvidence, art: Any, tag: str) -> None:
        """The shell dumps the kit's test spec wrote (:mod:`kit.farms.testspec`) out of the
        customer artifacts zip, each kept as a ``shell-dump`` artifact."""
        from .._bounded import MiB
        from .shell import dumps_from_zip

        with open(ctx.dir / art.name, "rb") as fh:
            data = fh.read(512 * MiB)
        dumps = dumps_from_zip(data)
        if not dumps:
            ev.notes.append(f"{art.name}: no coldstart-shell dumps (run the tests with the "
                            "spec of `coldstart farm testspec` for dumpsys dropbox and "
                            "exit-info)")
        for name, text in dumps.items():
            ev.artifacts.append(ctx.keep_text(f"{tag}-shell-{name}.txt", "shell-dump", text,
                                              f"{art.source_url}#{name}.txt"))


def _when(value: Any) -> float | None:
    """A boto3 timestamp (a ``datetime``) or an ISO / epoch value as epoch seconds."""
    import datetime as _dt

    from .attribute import epoch_of

    if isinstance(value, _dt.datetime):
        return value.timestamp() if value.tzinfo else None
    return epoch_of(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)  # datetimes


def make(settings: FarmSettings) -> tuple[AwsDeviceFarm, None]:
    """The adapter with a boto3 ``devicefarm`` client (region ``--farm-region``, default
    ``us-west-2``; endpoint ``--farm-api`` when given; boto3's retries off). Credentials
    are boto3's chain, read from ``settings.env`` first."""
    import boto3
    from botocore.config import Config

    env = settings.env
    session = boto3.session.Session(
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
        aws_session_token=env.get("AWS_SESSION_TOKEN") or None,
        region_name=settings.region or "us-west-2")
    client = session.client("devicefarm", endpoint_url=settings.api or None,
                            config=Config(retries={"total_max_attempts": 1,
                                                   "mode": "standard"},
                                          connect_timeout=20, read_timeout=60))
    return AwsDeviceFarm(client), None
