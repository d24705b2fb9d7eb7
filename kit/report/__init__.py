"""Reports from a campaign or a comparison: ``summary.json``, ``junit.xml``, ``report.html``
and ``summary.md`` (issue #4).

Every renderer works from one JSON-ready dict (:func:`report_dict`, written as
``summary.json``) whose strings have all been through :func:`kit.redact.redact_text`, so a
credential that reached a record (an Appium URL in an infra error) reaches no report. The
HTML page also gets each campaign's launch timeline (start times and outcomes, binned when
there are many). Each campaign is read once (:mod:`kit.analysis.scan`).

``--out`` is never a place where a user's files get overwritten: :func:`write_reports`
keeps a manifest (:data:`MANIFEST`) of what it wrote, with each file's sha256, and refuses a
directory holding a report file it did not write (or one changed since). Two report runs
into one directory take turns (:func:`writing_reports`): each writes its files whole.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Sequence

from ..version import __version__
from ..store.store import Campaign, utc_now
from .._bounded import (describe_path, open_regular_if_exists, path_kind, read_bytes_bounded,
                        write_atomic)
from ..errors import DataError, UsageError
from .._terminal import printable
from ..redact import redact_text
from ..analysis.scan import Scan, scan_campaign
from ..analysis.summary import CampaignSummary, summarize
from ..analysis.verdict import Comparison, Verdict
from .parts import Timeline, rate_text

__all__ = ["REPORT_SCHEMA", "REPORT_SCHEMA_VERSION", "Timeline", "report_dict",
           "timelines", "write_reports", "rate_text", "REPORT_FILES", "MANIFEST",
           "check_report_dir", "writing_reports", "REPORT_WAIT_S"]

REPORT_SCHEMA = "coldstart-report"
#: Bumped when a key of ``summary.json`` changes meaning or disappears (2: ``verdict`` may be
#: ``removed``/``not-removed`` for one build under two scenarios; ``infra_errors`` lists the
#: first 200, ``infra_error_count`` counts them all).
REPORT_SCHEMA_VERSION = 2
#: The files :func:`write_reports` writes, by kind.
REPORT_FILES = {"json": "summary.json", "junit": "junit.xml", "html": "report.html",
                "markdown": "summary.md"}
#: what :func:`write_reports` wrote into a directory, with each file's sha256
MANIFEST = ".coldstart-report.json"
_MANIFEST_SCHEMA = "coldstart-report-manifest"


def _redacted(value: Any) -> Any:
    """Every string in a JSON-like value through :func:`redact_text` (keys kept; no masking
    by key name, since ``signature`` here is a crash signature, not a secret), and its
    control characters written as visible escapes (:func:`kit._terminal.printable`): a
    ``summary.md`` shown with ``cat`` or a plot's label never carries an escape sequence."""
    if isinstance(value, str):
        return printable(redact_text(value))
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(v) for v in value]
    return value


def report_dict(summaries: Sequence[CampaignSummary], comparison: Comparison | None = None,
                *, signature: str | None = None, fail_on: Sequence[Verdict] = ()
                ) -> dict[str, Any]:
    """The content of ``summary.json`` (schema :data:`REPORT_SCHEMA_VERSION`).

    Keys: ``schema``, ``schema_version``, ``kind`` (``campaign`` or ``comparison``),
    ``generated_at``, ``coldstart_version``, ``signature`` (the target, or ``None``),
    ``fail_on`` (verdicts that fail CI), ``campaigns`` (one
    :meth:`~kit.analysis.summary.CampaignSummary.to_dict` each), ``comparison``
    (:meth:`~kit.analysis.verdict.Comparison.to_dict` or ``None``).
    """
    if comparison is not None:
        signature = comparison.settings.signature
    data = {"schema": REPORT_SCHEMA, "schema_version": REPORT_SCHEMA_VERSION,
            "kind": "comparison" if comparison is not None else "campaign",
            "generated_at": utc_now(), "coldstart_version": __version__,
            "signature": signature, "fail_on": [v.value for v in fail_on],
            "campaigns": [s.to_dict() for s in summaries],
            "comparison": comparison.to_dict() if comparison is not None else None}
    return _redacted(data)


def timelines(campaigns: Sequence[Campaign], scans: Sequence[Scan]) -> list[Timeline]:
    """Each campaign's :class:`Timeline`, from its scan (with the launches that show the
    scan's counted event, when it has one)."""
    return [Timeline(c.label, s.timeline_seconds, s.timeline_index, bytes(s.timeline_outcome),
                     bytes(s.timeline_event) if s.signature else b"", s.signature)
            for c, s in zip(campaigns, scans)]


def _sha256(path: Path) -> str | None:
    """sha256 of a regular file (``None``: missing); a device or FIFO is refused (UsageError,
    :func:`kit._bounded.open_regular`), never read."""
    fd = open_regular_if_exists(path, "report file")
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        digest = hashlib.sha256()
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest(out: Path) -> dict[str, set[str]]:
    """The files a report run wrote into ``out`` and the sha256 each may have (one, or two
    while a run replaces them; empty: none, or a manifest that is not ours)."""
    try:  # a device or FIFO in its place is refused (UsageError), not read
        data = json.loads(read_bytes_bounded(out / MANIFEST, 1 << 20, what="report manifest"))
    except UsageError:
        if path_kind(out / MANIFEST) != "missing":
            raise
        return {}
    except (DataError, ValueError, RecursionError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get(
        "schema") == _MANIFEST_SCHEMA else None
    if not isinstance(files, dict):
        return {}
    return {k: {v} if isinstance(v, str) else {h for h in v if isinstance(h, str)}
            for k, v in files.items()
            if isinstance(k, str) and (isinstance(v, str) or isinstance(v, list))}


def _write_manifest(out: Path, files: dict[str, Any]) -> None:
    manifest = {"schema": _MANIFEST_SCHEMA, "files": files}
    write_atomic(out / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))


def check_report_dir(out_dir: str | Path) -> None:
    """Refuse ``out_dir`` when a report file there (:data:`REPORT_FILES`) was not written by
    a report run, or was changed since (its sha256 is not the manifest's): the user's own
    files are never overwritten.

    Raises:
        UsageError: such a file is there, or ``out_dir`` is a file.
    """
    out = Path(out_dir)
    if path_kind(out) not in ("missing", "a directory"):
        raise UsageError(f"--out {out} {describe_path(out)}", "choose a directory")
    if not out.is_dir():
        return
    ours = _manifest(out)
    for name in REPORT_FILES.values():
        path = out / name
        if path.exists() or path.is_symlink():
            if path.is_symlink() or not path.is_file() or _sha256(path) not in ours.get(
                    name, set()):
                raise UsageError(f"--out {out} holds {name}, which no coldstart report wrote "
                                 f"(or it was changed since): it is not overwritten",
                                 "give an empty or new --out directory, or move the file")


def write_reports(out_dir: str | Path, campaigns: Sequence[Campaign],
                  comparison: Comparison | None = None, *, signature: str | None = None,
                  fail_on: Sequence[Verdict] = (), scans: Sequence[Scan] | None = None
                  ) -> dict[str, Path]:
    """Write the four reports into ``out_dir`` (created) and return their paths by kind
    (:data:`REPORT_FILES`); a manifest of them (:data:`MANIFEST`) lets a later run replace
    them.

    Args:
        campaigns: the campaigns reported (baseline first, then candidate, for a
            comparison), loaded or streamed (:func:`kit.store.store.load_campaign`).
        comparison: from :func:`kit.analysis.verdict.compare_campaigns`, or ``None``.
        signature: target class to plot for campaign reports (a comparison's wins).
        fail_on: verdicts that the JUnit report marks as failures (``not-fixed`` and
            ``not-removed`` always are).
        scans: the campaigns' scans when already made (else each is read once here).

    Raises:
        UsageError: ``out_dir`` holds a report file no report run wrote
            (:func:`check_report_dir`).
    """
    out = Path(out_dir)
    check_report_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    with writing_reports(out):
        return _write_reports(out, campaigns, comparison, signature, fail_on, scans)


#: seconds a report run waits for another one writing into the same directory
REPORT_WAIT_S = 120.0


@contextlib.contextmanager
def writing_reports(out: Path) -> Any:
    """Hold ``out`` (a report directory) for one report run: an exclusive ``flock(2)`` on
    the directory itself (nothing is written for it; a killed run lets go with its
    process), waited for up to :data:`REPORT_WAIT_S`. Two runs into one directory (two
    ``coldstart report`` of one campaign) would otherwise replace each other's temporary
    files (:func:`kit._bounded.write_atomic`) and one would end with ENOENT.

    Raises:
        UsageError: ``out`` is not a directory, or another run held it
            for :data:`REPORT_WAIT_S`.
    """
    try:
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        raise UsageError(f"--out {out} {describe_path(out)}, not a directory the report can "
                         f"hold", "choose a directory") from None
    try:
        deadline = time.monotonic() + REPORT_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise UsageError(f"another coldstart report has been writing into {out} "
                                     f"for {REPORT_WAIT_S:g} s", "wait for it to end, or "
                                     "give another --out") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # lets go of the lock


def _write_reports(out: Path, campaigns: Sequence[Campaign], comparison: Comparison | None,
                   signature: str | None, fail_on: Sequence[Verdict],
                   scans: Sequence[Scan] | None) -> dict[str, Path]:
    """:func:`write_reports` holding ``out`` (:func:`writing_reports`)."""
    from . import html_report, json_report, junit, markdown

    check_report_dir(out)  # again, holding it: what another run wrote is its own
    event = comparison.settings.signature if comparison is not None else signature
    if scans is None or any(s.signature != event for s in scans):
        # every plot shows the report's own event: the scans must count it
        scans = [scan_campaign(c, event) for c in campaigns]
    data = report_dict([summarize(c, scan=s) for c, s in zip(campaigns, scans)], comparison,
                       signature=signature, fail_on=fail_on)
    paths = {kind: out / name for kind, name in REPORT_FILES.items()}
    contents = {"json": json_report.dumps(data).encode("utf-8"),
                "junit": junit.to_bytes(data),
                "html": html_report.render(data, timelines(campaigns, scans)).encode("utf-8"),
                "markdown": markdown.render(data).encode("utf-8")}
    new = {REPORT_FILES[k]: hashlib.sha256(v).hexdigest() for k, v in contents.items()}
    old = {name: _sha256(out / name) for name in REPORT_FILES.values()}
    # first a manifest that owns both the old and the new content of each file: a kill -9
    # while the files are replaced leaves each one old or new (each write is atomic), and
    # a later run still knows them all as its own
    _write_manifest(out, {name: [h for h in (old[name], new[name]) if h]
                          for name in REPORT_FILES.values()})
    for kind, blob in contents.items():
        write_atomic(paths[kind], blob)
    _write_manifest(out, new)
    return paths
