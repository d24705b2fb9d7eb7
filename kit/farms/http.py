"""The farms' one HTTP layer: an injected :class:`httpx.Client`, a deadline, capped
exponential backoff, ``429`` with and without ``Retry-After``, and bounded downloads.

Every farm keeps its evidence behind a REST API that answers "not ready yet" for a while
after a session ends (``*_url`` fields null, ``404`` until processed, a status not yet
done) and ``429`` when called too often (docs/farms.md). :class:`FarmHTTP` is the one place
that waits: a caller asks :meth:`FarmHTTP.get` for one answer (transport errors and ``5xx``
are retried, ``429`` waits for ``Retry-After`` seconds or an HTTP date, RFC 9110 section
10.2.3, else for the backoff) or :meth:`FarmHTTP.poll` until its own readiness test passes.
Past the deadline both raise :class:`EvidenceNotReady`, an :class:`~kit.errors.InfraError`
(exit 3): a farm that is down or slow is an infrastructure error of the evidence, never a
crash and never a pass. Every URL in a message is redacted (:class:`kit.redact.Redactor`).

The clock and the sleep are injected, so no test waits in real time.
"""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..errors import InfraError, UsageError
from ..redact import Redactor

__all__ = ["FarmHTTP", "Answer", "Deadline", "EvidenceNotReady", "Download",
           "DEFAULT_DEADLINE_S", "MAX_BACKOFF_S", "MAX_DOCUMENT_BYTES", "MAX_ARTIFACT_BYTES"]

T = TypeVar("T")
#: Seconds a session's evidence may take to be ready (the farms' own clients wait 1-2 min:
#: saucerest-java polls a job 1 min, public BrowserStack scripts 2.5 min then 1 min).
DEFAULT_DEADLINE_S = 300.0
#: The longest single wait between two tries, in seconds.
MAX_BACKOFF_S = 30.0
FIRST_BACKOFF_S = 1.0
#: The most bytes of a JSON document read (a session record is a few KiB).
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
#: The most bytes of one artifact kept (AWS truncates a device log at 1 GB).
MAX_ARTIFACT_BYTES = 1024 * 1024 * 1024


class EvidenceNotReady(InfraError):
    """The farm did not give the evidence before the deadline (down, slow, throttling)."""


@dataclasses.dataclass(frozen=True)
class Answer:
    """One HTTP answer: ``status``, ``body`` (at most :data:`MAX_DOCUMENT_BYTES`),
    ``headers`` (lower-case names) and the redacted ``url``."""

    status: int
    body: bytes
    headers: dict[str, str]
    url: str

    def json(self) -> Any:
        """The body as JSON. Raises InfraError when it is not JSON (an auth page is HTML)."""
        import json

        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            raise InfraError(f"{self.url} answered HTTP {self.status} with a body that is not "
                             f"JSON", "check the farm's API host and credentials") from None


@dataclasses.dataclass(frozen=True)
class Download:
    """An artifact written to disk: ``path``, ``sha256`` and ``size`` of the bytes as
    fetched, ``truncated`` when it was cut at the limit, and the redacted source ``url``."""

    path: Path
    sha256: str
    size: int
    truncated: bool
    url: str


class Deadline:
    """A point in time of an injected monotonic ``clock`` (seconds)."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.seconds = seconds
        self.at = clock() + seconds

    def left(self) -> float:
        return self.at - self.clock()


def retry_after_s(value: str | None, now_epoch: float) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait: delay-seconds or an HTTP-date (RFC
    9110 section 10.2.3); ``None`` when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now_epoch)


class FarmHTTP:
    """GETs and polls against one farm through an injected client.

    Args:
        client: an :class:`httpx.Client` (its auth and headers set by the farm adapter).
        redactor: redacts every URL and message.
        deadline_s: seconds one :meth:`deadline` allows.
        clock, sleep, wall: injected monotonic clock, sleep and epoch clock.
        max_backoff_s: the cap of the exponential backoff.
    """

    def __init__(self, client: Any, redactor: Redactor, *,
                 deadline_s: float = DEFAULT_DEADLINE_S,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 wall: Callable[[], float] = time.time,
                 max_backoff_s: float = MAX_BACKOFF_S) -> None:
        self.client = client
        self.redactor = redactor
        self.deadline_s = deadline_s
        self.clock = clock
        self.sleep = sleep
        self.wall = wall
        self.max_backoff_s = max_backoff_s
        self.waited_s = 0.0  #: seconds slept so far (what a report can show)
        self.throttled = 0  #: 429 answers met

    def deadline(self) -> Deadline:
        return Deadline(self.deadline_s, self.clock)

    def wait(self, seconds: float, deadline: Deadline, why: str) -> None:
        """Sleep ``seconds`` (injected sleep), or raise :class:`EvidenceNotReady` saying
        ``why`` when that would pass the deadline."""
        left = deadline.left()
        if left <= 0 or seconds > left:
            raise EvidenceNotReady(f"{why}; gave up after the {deadline.seconds:g} s deadline",
                                   "the launch records are kept: pull again later with "
                                   "`coldstart farm pull DIR`")
        self.sleep(seconds)
        self.waited_s += seconds

    def backoff(self, tries: int) -> float:
        """The wait after the ``tries``-th failed try: 1, 2, 4 ... s, capped."""
        return min(self.max_backoff_s, FIRST_BACKOFF_S * 2 ** max(0, tries - 1))

    def get(self, url: str, deadline: Deadline, *, what: str, headers: dict[str, str]
            | None = None, params: dict[str, Any] | None = None) -> Answer:
        """One answer for ``GET url`` (any status but ``429``, ``5xx`` and transport
        failures, which are waited out). ``401``/``403`` raise UsageError (credentials).

        Raises:
            EvidenceNotReady: the deadline passed. UsageError: the farm refused the
                credentials.
        """
        import httpx

        shown = self.redactor.url(url)
        tries = 0
        while True:
            tries += 1
            try:
                with self.client.stream("GET", url, headers=headers, params=params) as resp:
                    body = _read_bounded(resp, MAX_DOCUMENT_BYTES)
                    status = resp.status_code
                    got = {k.lower(): v for k, v in resp.headers.items()}
            except httpx.HTTPError as exc:
                self.wait(self.backoff(tries), deadline,
                           f"{what}: {shown} did not answer ({type(exc).__name__}: "
                           f"{self.redactor.text(str(exc))[:120]})")
                continue
            if self._waited_out(status, got, tries, deadline, what, shown):
                continue
            return Answer(status=status, body=body, headers=got, url=shown)

    def _waited_out(self, status: int, headers: dict[str, str], tries: int,
                    deadline: Deadline, what: str, shown: str) -> bool:
        """Wait out a ``429`` (its ``Retry-After``, else the backoff) or a ``5xx`` and
        return ``True`` (try again); ``False`` for any other status.

        Raises:
            UsageError: ``401``/``403`` (the farm refused the credentials).
            EvidenceNotReady: the wait would pass the deadline.
        """
        if status == 429:
            self.throttled += 1
            asked = retry_after_s(headers.get("retry-after"), self.wall())
            wait = min(self.max_backoff_s * 4, asked) if asked is not None else \
                self.backoff(tries)
            self.wait(wait, deadline, f"{what}: {shown} kept answering HTTP 429 (too many "
                                      f"requests)")
            return True
        if status >= 500:
            self.wait(self.backoff(tries), deadline, f"{what}: {shown} answered HTTP {status}")
            return True
        if status in (401, 403):
            raise UsageError(f"{what}: {shown} refused the credentials (HTTP {status})",
                             "check the farm credentials in the environment (docs/farms.md)")
        return False

    def poll(self, what: str, attempt: Callable[[Deadline], T | None],
             deadline: Deadline | None = None) -> T:
        """Call ``attempt(deadline)`` until it returns something (``None``: not ready yet),
        with capped exponential backoff between tries.

        Raises:
            EvidenceNotReady: still not ready at the deadline.
        """
        deadline = deadline or self.deadline()
        tries = 0
        while True:
            tries += 1
            value = attempt(deadline)
            if value is not None:
                return value
            self.wait(self.backoff(tries), deadline, f"{what} was not ready")

    def download(self, url: str, dest: Path, deadline: Deadline, *, what: str,
                 headers: dict[str, str] | None = None,
                 limit: int = MAX_ARTIFACT_BYTES) -> Download | None:
        """Stream ``GET url`` to ``dest`` (at most ``limit`` bytes, the rest cut and noted)
        with its sha256; ``None`` for a ``404`` (the caller says what that means). Waits
        out ``429``, ``5xx`` and transport failures as :meth:`get` does.

        Raises:
            EvidenceNotReady, UsageError: as :meth:`get`; InfraError: another 4xx.
        """
        import httpx

        shown = self.redactor.url(url)
        tries = 0
        while True:
            tries += 1
            try:
                with self.client.stream("GET", url, headers=headers) as resp:
                    status = resp.status_code
                    got = {k.lower(): v for k, v in resp.headers.items()}
                    if status == 200:
                        return _stream_to(resp, dest, limit, shown)
                    _read_bounded(resp, 64 * 1024)
            except httpx.HTTPError as exc:
                self.wait(self.backoff(tries), deadline,
                           f"{what}: {shown} did not answer ({type(exc).__name__})")
                continue
            if status == 404:
                return None
            if self._waited_out(status, got, tries, deadline, what, shown):
                continue
            raise InfraError(f"{what}: {shown} answered HTTP {status}",
                             "pull again later with `coldstart farm pull DIR`")


def _read_bounded(resp: Any, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    for chunk in resp.iter_bytes():
        take = chunk[:max(0, limit - total)]
        chunks.append(take)
        total += len(take)
        if total >= limit:
            break
    return b"".join(chunks)


def _stream_to(resp: Any, dest: Path, limit: int, shown: str) -> Download:
    digest = hashlib.sha256()
    size = 0
    truncated = False
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as fh:  # the caller's .part file, renamed once it is redacted
        for chunk in resp.iter_bytes():
            if size + len(chunk) > limit:
                chunk = chunk[:limit - size]
                truncated = True
            fh.write(chunk)
            digest.update(chunk)
            size += len(chunk)
            if truncated:
                break
    return Download(path=dest, sha256=digest.hexdigest(), size=size, truncated=truncated,
                    url=shown)
