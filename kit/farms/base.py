"""What every farm adapter is and returns: :class:`Farm` (the protocol), :class:`FarmSettings`
(what a user configures), :class:`Artifact` and :class:`SessionEvidence` (what a fetch
kept), and :class:`FetchContext` (where it keeps it, through one :class:`FarmHTTP`).

Artifacts live under ``artifacts/farm/<farm>/<session>/`` of the campaign. Each keeps the
bytes as fetched (their ``sha256`` and ``size``) and the redacted source URL; a JSON
document (a session record, which carries ``?auth_token=``/``?token=`` URLs) and any text
holding a known credential are stored redacted (``redacted: true``, ``stored_sha256`` of
what is on disk).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Mapping, Protocol

from .._bounded import write_atomic, write_atomic_stream
from ..redact import Redactor
from .http import Answer, Deadline, FarmHTTP

__all__ = ["Farm", "FarmSettings", "Artifact", "SessionEvidence", "FetchContext",
           "KINDS", "safe_name", "credentials"]

#: Artifact kinds: what the attribution reads each as.
KINDS = ("session-record", "device-log", "crash-log", "test-result", "test-issues",
         "customer-artifact", "shell-dump", "other")
_SAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, limit: int = 80) -> str:
    """``text`` as one safe path component (``[A-Za-z0-9._-]``, at most ``limit`` chars)."""
    name = _SAFE_RE.sub("_", text).strip("._") or "x"
    return name[-limit:]


@dataclasses.dataclass(frozen=True)
class FarmSettings:
    """A farm as configured.

    Attributes:
        name: the farm (:data:`kit.farms.FARMS`).
        api: the API base URL (``None``: the farm's documented default for ``region``).
        region: a region where the farm has several (Sauce ``us-west-1``, AWS ``us-west-2``).
        deadline_s: seconds one session's evidence may take to be ready.
        env: where credentials are read from (``os.environ``); never written anywhere.
        ref: a farm reference the records do not carry (AWS: the run or job ARN; Firebase
            Test Lab: ``gs://bucket/dir``).
        steps: Firebase Test Lab's Tool Results execution
            (``projects/P/histories/H/executions/E``), or ``None``.
    """

    name: str
    api: str | None = None
    region: str | None = None
    deadline_s: float = 300.0
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    ref: str | None = None
    steps: str | None = None


@dataclasses.dataclass(frozen=True)
class Artifact:
    """One artifact kept from a farm (see the module doc); ``path`` is relative to the
    campaign directory."""

    name: str
    kind: str
    path: str
    sha256: str
    size: int
    source_url: str
    truncated: bool = False
    redacted: bool = False
    stored_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if out["stored_sha256"] is None:
            del out["stored_sha256"]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Artifact":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclasses.dataclass
class SessionEvidence:
    """What one farm session (or job, or results directory) gave.

    Attributes:
        farm, session: the farm and the session/job reference (redacted).
        artifacts: every artifact kept.
        issues: structured crash verdicts (Firebase Tool Results ``testIssues``), each a
            dict with ``type``, ``severity``, ``errorMessage`` and, when present, a
            ``stackTrace`` text.
        notes: what a reader should know (a log the farm did not record, 404 = none).
        device: the farm's device name, when it says.
        identity: what the farm says the session ran (each ``None`` when it does not say):
            ``app_id`` (package / bundle id), ``app`` (the upload's reference, e.g.
            ``bs://...``), ``app_version``, ``build`` (the farm's build name), ``start`` and
            ``end`` (epoch seconds); :mod:`kit.farms.pull` checks it against the campaign.
        absent: optional artifacts that answered ``404`` (a crash log "not there"), each
            ``(url, name, kind, what)``: the pull fetches them again while a launch that
            died has no evidence (:mod:`kit.farms.pull`).
    """

    farm: str
    session: str
    artifacts: list[Artifact] = dataclasses.field(default_factory=list)
    issues: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    device: str | None = None
    identity: dict[str, Any] = dataclasses.field(default_factory=dict)
    absent: list[tuple[str, str, str, str]] = dataclasses.field(default_factory=list)

    def of_kind(self, kind: str) -> list[Artifact]:
        return [a for a in self.artifacts if a.kind == kind]


class FetchContext:
    """Where one session's artifacts go, and the HTTP layer that fetches them.

    Args:
        http: the farm's :class:`FarmHTTP`.
        campaign_dir: the campaign directory.
        farm, session: name the folder ``artifacts/farm/<farm>/<session>/``.
    """

    def __init__(self, http: FarmHTTP, campaign_dir: Path, farm: str, session: str) -> None:
        self.http = http
        self.redactor: Redactor = http.redactor
        self.rel = f"artifacts/farm/{safe_name(farm)}/{safe_name(session)}"
        self.dir = campaign_dir / self.rel
        _make_dirs(campaign_dir, self.rel)
        self.deadline: Deadline = http.deadline()
        #: the epoch time the fetch began (its deadline counts from there)
        self.started_wall: float = http.wall()
        #: artifacts lost to a refusal (one line each); the pull adds them to the notes
        self.notes: list[str] = []
        #: whether the last :meth:`download` was refused (not a 404)
        self.last_refused = False

    def wait_download(self, url: str, name: str, kind: str, what: str) -> Artifact | None:
        """:meth:`download`, fetched again while it answers ``404`` (not processed yet)
        until the deadline; ``None`` when it was refused (noted).

        Raises:
            EvidenceNotReady: still ``404`` at the deadline.
        """
        def attempt(_d: Deadline) -> tuple[Artifact | None] | None:
            art = self.download(url, name, kind, what)
            return (art,) if art is not None or self.last_refused else None

        return self.http.poll(what, attempt, self.deadline)[0]

    def keep_json(self, name: str, value: Any, url: str, raw: bytes) -> Artifact:
        """Store a JSON document redacted (its ``sha256`` is of ``raw``, as fetched)."""
        data = (json.dumps(self.redactor.value(value), indent=1, sort_keys=True) + "\n"
                ).encode()
        path = self.dir / safe_name(name)
        write_atomic(path, data, durable=False)
        stored = hashlib.sha256(data).hexdigest()
        raw_sha = hashlib.sha256(raw).hexdigest()
        return Artifact(name=path.name, kind="session-record", path=f"{self.rel}/{path.name}",
                        sha256=raw_sha, size=len(raw), source_url=self.redactor.url(url),
                        redacted=stored != raw_sha, stored_sha256=stored)

    def keep_answer(self, name: str, answer: Answer, kind: str = "session-record"
                    ) -> Artifact:
        """Store a JSON answer (:meth:`keep_json`)."""
        art = self.keep_json(name, answer.json(), answer.url, answer.body)
        return dataclasses.replace(art, kind=kind)

    def keep_text(self, name: str, kind: str, text: str, source_url: str) -> Artifact:
        """Store ``text`` (taken out of another artifact, e.g. a zip member) redacted;
        its ``sha256`` is of the text as found."""
        raw = text.encode("utf-8", "surrogateescape")
        clean = self.redactor.text(text).encode("utf-8", "surrogateescape")
        path = self.dir / safe_name(name)
        write_atomic(path, clean, durable=False)
        raw_sha = hashlib.sha256(raw).hexdigest()
        stored = hashlib.sha256(clean).hexdigest()
        return Artifact(name=path.name, kind=kind, path=f"{self.rel}/{path.name}",
                        sha256=raw_sha, size=len(raw), source_url=source_url,
                        redacted=stored != raw_sha,
                        stored_sha256=stored if stored != raw_sha else None)

    def download(self, url: str, name: str, kind: str, what: str,
                 headers: dict[str, str] | None = None) -> Artifact | None:
        """Download an artifact (``None`` for a 404, and for a refused one, which is noted
        in :attr:`notes`: one refused artifact loses only itself). The bytes are streamed
        to ``<name>.part`` and then, redacted in blocks of whole lines (text holding a
        credential the redactor knows), to ``<name>``; both through the kit's one
        link-refusing atomic writer, never held whole."""
        from .http import ArtifactRefused

        path = self.dir / safe_name(name)
        part = path.with_name(path.name + ".part")  # raw bytes never stay under the name
        self.last_refused = False
        try:
            got = self.http.download(url, part, self.deadline, what=what, headers=headers)
        except ArtifactRefused as exc:
            self.notes.append(self.redactor.text(exc.one_line()))
            self.last_refused = True
            _unlink(part)
            return None
        if got is None:
            _unlink(part)
            return None
        digest = hashlib.sha256()
        changed = {"any": False}

        def blocks() -> Any:
            for block in _line_blocks(part):
                text = block.decode("utf-8", "surrogateescape")
                clean = self.redactor.text(text)
                data = clean.encode("utf-8", "surrogateescape") if clean != text else block
                changed["any"] = changed["any"] or clean != text
                digest.update(data)
                yield data

        write_atomic_stream(path, blocks(), durable=False)
        _unlink(part)
        redacted = bool(changed["any"])
        return Artifact(name=path.name, kind=kind, path=f"{self.rel}/{path.name}",
                        sha256=got.sha256, size=got.size, source_url=got.url,
                        truncated=got.truncated, redacted=redacted,
                        stored_sha256=digest.hexdigest() if redacted else None)


#: bytes of a downloaded artifact redacted at a time (cut at a line's end)
_BLOCK = 1 << 20


def _line_blocks(path: Path) -> Any:
    """``path``'s bytes in blocks of about :data:`_BLOCK` bytes, each ending at a newline
    (a line longer than that is cut at the block: a URL or token over a MiB long is not a
    credential)."""
    from .._bounded import open_regular

    with os.fdopen(open_regular(path, "farm artifact"), "rb") as fh:
        carry = b""
        while True:
            chunk = fh.read(_BLOCK)
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n")
            if cut < 0 and len(data) < 4 * _BLOCK:
                carry = data
                continue
            if cut < 0:
                cut = len(data) - 1
            carry = data[cut + 1:]
            yield data[:cut + 1]
        if carry:
            yield carry


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _make_dirs(root: Path, rel: str) -> None:
    """``root/rel`` made one directory at a time, refusing a symbolic link or a
    non-directory on the way (a link planted at ``artifacts/farm`` would put the files
    elsewhere).

    Raises:
        UsageError: a component is a link or not a directory.
    """
    from .._bounded import lstat_kind
    from ..errors import UsageError

    here = root
    for part in rel.split("/"):
        here = here / part
        kind = lstat_kind(here)
        if kind == "missing":
            here.mkdir(exist_ok=True)
            kind = lstat_kind(here)
        if kind != "a directory":
            raise UsageError(f"{here} is {kind}, not a directory the kit made: the kit "
                             "never writes through a link", "remove it, then pull again")


def credentials(settings: FarmSettings, names: tuple[str, str]) -> tuple[str, str]:
    """The pair of environment variables ``names`` (user, key) from ``settings.env``.

    Raises:
        UsageError: one is unset or empty.
    """
    from ..errors import UsageError

    user, key = (settings.env.get(n) for n in names)
    if not user or not key:
        raise UsageError(f"--farm {settings.name} needs {names[0]} and {names[1]} in the "
                         "environment", "export them (they are never written to a file)")
    return user, key


class Farm(Protocol):
    """One farm adapter (one module under :mod:`kit.farms`).

    ``name`` is its registry name; :meth:`fetch` turns one session or job reference into
    its :class:`SessionEvidence`, waiting (through ``ctx.http``) until the farm has it.

    Raises (from ``fetch``):
        EvidenceNotReady: not ready by the deadline (exit 3). UsageError: bad credentials.
        InfraError: the farm answered something the kit cannot use.
    """

    name: str

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence: ...
