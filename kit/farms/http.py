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

Credentials go only to the farm's own API origins (:class:`OriginAuth`: scheme, host and
port, RFC 6454): any other URL a farm names (a presigned S3 / CloudFront / GCS URL in a
session record) is fetched bare, and a redirect to another origin loses the header
(httpx). A ``401``/``403`` from an API origin is a credentials error (UsageError, exit 2,
with the farm's own ``credentials_hint``); any other refusal of one artifact
(:class:`ArtifactRefused`) loses only that artifact. A URL that is not ``http(s)`` or
that httpx cannot send is never retried.

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

__all__ = ["FarmHTTP", "Answer", "Deadline", "EvidenceNotReady", "Download", "OriginAuth",
           "ArtifactRefused", "origin_of", "check_api_url",
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


class ArtifactRefused(InfraError):
    """One artifact's URL answered a refusal (a ``4xx`` other than ``404``/``429``, or
    ``401``/``403`` from a host that is not the farm's API): that artifact is lost, the
    rest of the session's evidence is kept (:meth:`kit.farms.base.FetchContext.download`
    notes it)."""


def origin_of(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an ``http(s)`` URL (RFC 6454 origin; default ports
    filled in), ``None`` for anything else or a URL that cannot be read."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


def check_api_url(url: str, flag: str = "--farm-api") -> str:
    """``url`` when it is an ``http(s)://host[:port][/path]`` URL with no userinfo,
    query, fragment, whitespace or control character.

    Raises:
        UsageError: anything else (``file:///etc/passwd``, ``not a url``), in one line.
    """
    from urllib.parse import urlsplit

    bad = any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url)
    parts = None
    if not bad:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises on a bad port
        except ValueError:
            parts = None
    if bad or parts is None or origin_of(url) is None or "@" in parts.netloc or \
            parts.query or parts.fragment or len(url) > 2048:
        raise UsageError(f"{flag} {url[:80]!r} is not an http(s) URL of the farm's API",
                         "give e.g. https://api.us-west-1.saucelabs.com, or leave it out "
                         "for the farm's documented host")
    return url


def OriginAuth(inner: Any, origins: set[tuple[str, str, int]]) -> Any:  # noqa: N802
    """An :class:`httpx.Auth` that adds the farm's credential (``inner``: an httpx auth, or
    a ``Bearer`` token string) only to requests for one of ``origins`` (see
    :func:`origin_of`); a request anywhere else goes bare."""
    import httpx

    class _OriginAuth(httpx.Auth):
        def auth_flow(self, request: httpx.Request) -> Any:
            if origin_of(str(request.url)) not in origins:
                yield request
                return
            if isinstance(inner, str):
                request.headers["Authorization"] = f"Bearer {inner}"
                yield request
                return
            yield from inner.auth_flow(request)

    return _OriginAuth()


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
        #: the farm's own API origins: the only ones whose 401/403 is a credentials error
        self.origins: set[tuple[str, str, int]] = set()
        #: what a user with refused credentials must do (the farm's own variables)
        self.credentials_hint = "check the farm credentials in the environment " \
                                "(docs/farms.md)"

    def is_api(self, url: str) -> bool:
        """Whether ``url`` is on one of the farm's own API origins."""
        return origin_of(url) in self.origins

    def _unsendable(self, url: str, shown: str, what: str, exc: Exception) -> Exception:
        """The error of a URL httpx cannot send (not http(s), malformed): the user's
        (UsageError) when it is the farm's API, else one refused artifact."""
        why = f"{what}: {shown} cannot be fetched ({type(exc).__name__})"
        if self.is_api(url):
            return UsageError(why, "check --farm-api and --farm-ref")
        return ArtifactRefused(why, "the farm named a URL the kit cannot fetch")

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
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError,
                    UnicodeError, ValueError) as exc:
                raise self._unsendable(url, shown, what, exc) from None
            except httpx.HTTPError as exc:
                self.wait(self.backoff(tries), deadline,
                           f"{what}: {shown} did not answer ({type(exc).__name__}: "
                           f"{self.redactor.text(str(exc))[:120]})")
                continue
            if self._waited_out(status, got, tries, deadline, what, shown, url):
                continue
            return Answer(status=status, body=body, headers=got, url=shown)

    def _waited_out(self, status: int, headers: dict[str, str], tries: int,
                    deadline: Deadline, what: str, shown: str, url: str = "") -> bool:
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
            if url and not self.is_api(url):
                raise ArtifactRefused(f"{what}: {shown} refused the download (HTTP {status}; "
                                      "not the farm's API, so no credential was sent)",
                                      "pull again: the farm signs a new URL each time")
            raise UsageError(f"{what}: {shown} refused the credentials (HTTP {status}): "
                             "expired, revoked or wrong", self.credentials_hint)
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
        with its sha256, through the kit's one link-refusing atomic writer
        (:func:`kit._bounded.write_atomic_stream`); ``None`` for a ``404`` (the caller says
        what that means). Waits out ``429``, ``5xx`` and transport failures as :meth:`get`
        does.

        Raises:
            EvidenceNotReady, UsageError: as :meth:`get`; ArtifactRefused: another 4xx.
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
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError,
                    UnicodeError, ValueError) as exc:
                raise self._unsendable(url, shown, what, exc) from None
            except httpx.HTTPError as exc:
                self.wait(self.backoff(tries), deadline,
                           f"{what}: {shown} did not answer ({type(exc).__name__})")
                continue
            if status == 404:
                return None
            if self._waited_out(status, got, tries, deadline, what, shown, url):
                continue
            raise ArtifactRefused(f"{what}: {shown} answered HTTP {status}",
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
    """The answer's bytes streamed (never held whole) to ``dest``, the caller's ``.part``
    file, through :func:`kit._bounded.write_atomic_stream` (a link there is replaced,
    never written through)."""
    from .._bounded import write_atomic_stream

    digest = hashlib.sha256()
    state = {"size": 0, "truncated": False}

    def chunks() -> Any:
        for chunk in resp.iter_bytes():
            if state["size"] + len(chunk) > limit:
                chunk = chunk[:limit - state["size"]]
                state["truncated"] = True
            digest.update(chunk)
            state["size"] += len(chunk)
            yield chunk
            if state["truncated"]:
                break

    dest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic_stream(dest, chunks(), durable=False)
    return Download(path=dest, sha256=digest.hexdigest(), size=int(state["size"]),
                    truncated=bool(state["truncated"]), url=shown)
