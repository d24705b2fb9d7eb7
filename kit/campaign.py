"""Campaigns: a directory of launches of one build, and the loop that fills it.

Layout (DESIGN.md):

* ``campaign.json``: label, target, scenario (canonical URL without id), planned launches,
  devices, build provenance, tool versions, options. Written when the campaign starts and
  rewritten (atomically) as devices and provenance become known.
* ``launches.jsonl``: one :class:`~kit.records.LaunchRecord` per line, appended, flushed and
  fsynced as each launch ends, so ``Ctrl-C`` or ``kill -9`` never loses a finished launch. A
  line cut by ``kill -9`` mid-write is dropped (and the file trimmed) on ``--resume``.
* ``artifacts/<launch-id>/``: raw output, crash text, log excerpts.

Resume: indices ``0..launches-1`` each need one *counted* record (any outcome but
``infra-error``). Infra errors are retried up to ``max_attempts`` per index; a resumed
campaign runs exactly the indices that have no counted record yet.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import queue
import re
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from .errors import DataError, UsageError
from .records import LaunchRecord, Outcome
from .scenario import Scenario, parse_scenario

__all__ = ["Campaign", "CampaignStore", "LaunchContext", "Launcher", "CampaignObserver",
           "run_campaign", "load_campaign", "LABEL_RE", "SCHEMA_VERSION", "launch_id_for",
           "utc_now"]

SCHEMA_VERSION = 1
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with milliseconds and ``Z``."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def check_label(label: str) -> str:
    """Validate a build label (``[A-Za-z0-9][A-Za-z0-9._-]{0,39}``). Raises UsageError."""
    if not LABEL_RE.match(label or ""):
        raise UsageError(f"label {label!r} is invalid",
                         "use 1-40 characters from A-Z a-z 0-9 . _ - starting with a letter "
                         "or digit, e.g. baseline or patched-1.21")
    return label


def launch_id_for(label: str, index: int, attempt: int) -> str:
    """``<label>-<index:05d>``, with ``.r<attempt>`` appended for retries (attempt >= 2)."""
    base = f"{label}-{index:05d}"
    return base if attempt == 1 else f"{base}.r{attempt}"


@dataclasses.dataclass(frozen=True)
class LaunchContext:
    """Everything a launcher needs for one launch.

    Attributes:
        scenario: the campaign's scenario bound to this launch's id.
        index, attempt, label: see :class:`~kit.records.LaunchRecord`.
        artifacts_dir: absolute path of ``artifacts/<launch-id>/`` (created, empty).
        artifacts_rel: the same path relative to the campaign dir (for records).
        timeout_s: seconds the launch may take before it counts as ``hung``.
    """

    scenario: Scenario
    index: int
    attempt: int
    label: str
    artifacts_dir: Path
    artifacts_rel: str
    timeout_s: float

    @property
    def launch_id(self) -> str:
        assert self.scenario.id is not None
        return self.scenario.id


class Launcher(Protocol):
    """One target device that can cold-launch the app (one worker thread drives each).

    ``target`` is the target name (``host``, ``android``...), ``device`` the device id.
    """

    target: str
    device: str

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """Make one cold launch and return its record. Must not raise for anything the app
        does; raise :class:`~kit.errors.InfraError` (or return an ``infra-error`` record)
        when the launch could not be made or observed."""
        ...

    def abort(self) -> None:
        """Stop a launch in flight (called from another thread on Ctrl-C)."""
        ...


class CampaignObserver(Protocol):
    """Receives progress: ``started(total, done)`` once, ``recorded(record)`` per record."""

    def started(self, total: int, done: int) -> None: ...

    def recorded(self, record: LaunchRecord) -> None: ...


@dataclasses.dataclass
class Campaign:
    """A loaded campaign: ``meta`` (``campaign.json``), ``records`` (every line of
    ``launches.jsonl``, retries included), ``path`` (the directory) and ``notes`` (lines
    that could not be read, and why)."""

    path: Path
    meta: dict[str, Any]
    records: list[LaunchRecord]
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def label(self) -> str:
        return str(self.meta.get("label", ""))

    @property
    def scenario(self) -> Scenario:
        return parse_scenario(self.meta.get("scenario", ""))

    @property
    def counted(self) -> list[LaunchRecord]:
        """Records that enter rates: every outcome but ``infra-error``."""
        return [r for r in self.records if r.counted]

    @property
    def infra_errors(self) -> list[LaunchRecord]:
        return [r for r in self.records if not r.counted]


class CampaignStore:
    """Reads and appends one campaign directory. Thread-safe for :meth:`append`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.meta_path = self.path / "campaign.json"
        self.launches_path = self.path / "launches.jsonl"
        self._lock = threading.Lock()

    def exists(self) -> bool:
        return self.meta_path.exists()

    def read_meta(self) -> dict[str, Any]:
        """``campaign.json`` as a dict. Raises UsageError/DataError if missing/invalid."""
        try:
            meta = json.loads(self.meta_path.read_text())
            if not isinstance(meta, dict):
                raise ValueError(f"a JSON object was expected, not {type(meta).__name__}")
            return meta
        except (FileNotFoundError, NotADirectoryError):
            what = ("does not exist" if not self.path.exists() else "is a file, not a "
                    "campaign directory" if not self.path.is_dir() else
                    "is not a campaign (no campaign.json)")
            raise UsageError(f"{self.path} {what}",
                             "point at a directory made by `coldstart run`") from None
        except ValueError as exc:
            raise DataError(f"{self.meta_path} is not valid JSON: {exc}",
                            "restore it or start a new campaign") from None

    def write_meta(self, meta: dict[str, Any]) -> None:
        """Write ``campaign.json`` atomically (temp file + rename)."""
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.meta_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n")
        os.replace(tmp, self.meta_path)

    def read_records(self) -> tuple[list[LaunchRecord], list[str]]:
        """Every record in ``launches.jsonl`` and notes on lines that could not be read.

        A last line without its newline (cut by ``kill -9``) is dropped (and cut off the
        file by the next :meth:`append`).
        """
        if not self.launches_path.exists():
            return [], []
        data = self.launches_path.read_bytes()
        notes: list[str] = []
        cut = data.rfind(b"\n") + 1
        if cut < len(data):
            notes.append(f"dropped an incomplete last line ({len(data) - cut} bytes)")
        records = []
        for number, line in enumerate(data[:cut].splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(LaunchRecord.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                notes.append(f"line {number}: unreadable record ({exc})")
        return records, notes

    def append(self, record: LaunchRecord) -> None:
        """Append one record as a JSON line, then flush and fsync. A last line left
        without its newline by ``kill -9`` is cut off first, here rather than when the
        campaign is opened, so that a refused ``--resume`` changes nothing."""
        line = json.dumps(record.to_dict(), separators=(",", ":")) + "\n"
        with self._lock:
            with open(self.launches_path, "a+b") as fh:
                end = fh.seek(0, os.SEEK_END)
                if end:
                    fh.seek(end - 1)
                    if fh.read(1) != b"\n":
                        fh.seek(0)
                        fh.truncate(fh.read().rfind(b"\n") + 1)
                fh.write(line.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())

    def artifacts_dir(self, launch_id: str) -> tuple[Path, str]:
        """Create an empty ``artifacts/<launch-id>/`` and return (absolute, relative) paths.
        Leftovers of an interrupted attempt with the same id are removed first."""
        rel = f"artifacts/{launch_id}"
        path = self.path / rel
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path, rel


def load_campaign(path: str | os.PathLike[str]) -> Campaign:
    """Load a campaign directory (read-only; a cut last line is reported in ``notes``).

    Raises:
        UsageError: ``path`` has no ``campaign.json``.
        DataError: ``campaign.json`` is not valid JSON.
    """
    store = CampaignStore(path)
    meta = store.read_meta()
    records, notes = store.read_records()
    return Campaign(path=Path(path), meta=meta, records=records, notes=notes)


def tool_versions() -> dict[str, str]:
    """Versions of the kit, Python and the OS, for ``campaign.json``."""
    from . import __version__

    return {"coldstart": __version__, "python": platform.python_version(),
            "platform": platform.platform()}


def _plan(records: Sequence[LaunchRecord], launches: int, max_attempts: int) -> list[tuple[
        int, int]]:
    """``(index, attempt)`` pairs still to run."""
    counted = {r.index for r in records if r.counted}
    attempts: dict[int, int] = {}
    for record in records:
        attempts[record.index] = max(attempts.get(record.index, 0), record.attempt)
    todo = []
    for index in range(launches):
        if index in counted:
            continue
        attempt = attempts.get(index, 0) + 1
        if attempt <= max_attempts:
            todo.append((index, attempt))
    return todo


def prepare_store(out: str | os.PathLike[str], *, label: str, target: str,
                  scenario: Scenario, launches: int, resume: bool,
                  meta_extra: dict[str, Any] | None = None) -> tuple[CampaignStore,
                                                                     list[LaunchRecord]]:
    """Create (or reopen with ``resume``) a campaign directory.

    On ``resume``, nothing in ``campaign.json`` is changed here (a partly written last record
    line is cut off): the caller writes a new ``launches`` with :func:`update_meta` once its
    own checks have passed, so that a refused command changes nothing.

    Returns:
        The store and the records already in it (empty for a new campaign).

    Raises:
        UsageError: the directory holds a campaign and ``resume`` is off; or ``resume`` is
            on and the stored label, target or scenario differ from the ones given, or
            ``launches`` is fewer than the campaign has made or plans.
    """
    check_label(label)
    store = CampaignStore(out)
    if store.exists():
        if not resume:
            raise UsageError(f"{store.path} already holds a campaign",
                             "pass --resume to finish it, or choose another --out")
        meta = store.read_meta()
        for key, want in (("label", label), ("target", target), ("scenario", scenario.key())):
            if meta.get(key) != want:
                raise UsageError(f"cannot resume {store.path}: its {key} is "
                                 f"{meta.get(key)!r}, not {want!r}",
                                 "resume with the same options, or choose another --out")
        records, _notes = store.read_records()  # a cut last line is cut by append()
        used = 1 + max((r.index for r in records), default=-1)
        if launches < used:
            raise UsageError(f"cannot resume {store.path} with {launches} launches: it already "
                             f"has {used}", "resume with at least that many --launches")
        planned = meta.get("launches")
        if isinstance(planned, int) and launches < planned:  # it would read as finished
            raise UsageError(f"cannot resume {store.path} with {launches} launches: it plans "
                             f"{planned}", "resume without --launches (compare and report use "
                                           "an unfinished campaign as it is)")
        return store, records  # launches is written by the caller once every check passed
    if resume and store.path.exists() and any(store.path.iterdir()):
        raise UsageError(f"{store.path} is not a campaign", "choose another --out")
    meta = {"schema": SCHEMA_VERSION, "label": label, "target": target,
            "scenario": scenario.key(), "scenario_description": scenario.describe(),
            "launches": launches, "created_at": utc_now(), "devices": [], "build": {},
            "tools": tool_versions(), "options": {}}
    meta.update(meta_extra or {})
    store.write_meta(meta)
    store.launches_path.touch()
    return store, []


def run_campaign(store: CampaignStore, records: list[LaunchRecord],
                 launchers: Sequence[Launcher], *, label: str, scenario: Scenario,
                 launches: int, timeout_s: float, max_attempts: int = 3,
                 observer: CampaignObserver | None = None,
                 should_stop: Callable[[list[LaunchRecord]], bool] | None = None,
                 ) -> list[LaunchRecord]:
    """Run the launches the campaign still needs, one worker per launcher.

    Each worker takes the next ``(index, attempt)`` from a shared queue, makes the launch
    and appends the record at once. An ``infra-error`` (returned, or an
    :class:`~kit.errors.InfraError` raised) is recorded and the index is queued again,
    up to ``max_attempts`` attempts in all; it never counts.

    Args:
        store: from :func:`prepare_store`.
        records: records already in the store (for resume).
        launchers: one per device; all run in parallel.
        should_stop: called before the first launch and after each record with all records
            so far; True stops the campaign early (sequential stopping rules).

    Returns:
        All records of the campaign, old and new.

    Raises:
        KeyboardInterrupt: after aborting the launches in flight; finished records are kept.
    """
    from .errors import ColdstartError

    all_records = list(records)
    todo: "queue.Queue[tuple[int, int]]" = queue.Queue()
    for item in _plan(all_records, launches, max_attempts):
        todo.put(item)
    if observer is not None:
        observer.started(launches, len({r.index for r in all_records if r.counted}))
    stop = threading.Event()
    if should_stop is not None and should_stop(list(all_records)):
        stop.set()  # a resumed campaign that is already settled makes no launch
    lock = threading.Lock()
    failures: list[BaseException] = []

    def work(launcher: Launcher) -> None:
        while not stop.is_set():
            try:
                index, attempt = todo.get_nowait()
            except queue.Empty:
                return
            launch_id = launch_id_for(label, index, attempt)
            art_abs, art_rel = store.artifacts_dir(launch_id)
            ctx = LaunchContext(scenario=scenario.with_id(launch_id), index=index,
                                attempt=attempt, label=label, artifacts_dir=art_abs,
                                artifacts_rel=art_rel, timeout_s=timeout_s)
            started = utc_now()
            try:
                record = launcher.launch(ctx)
            except ColdstartError as exc:
                record = LaunchRecord(launch_id=launch_id, index=index, attempt=attempt,
                                      label=label, target=launcher.target,
                                      device=launcher.device, scenario=ctx.scenario.to_url(),
                                      outcome=Outcome.INFRA_ERROR, started_at=started,
                                      error=exc.one_line())
            if stop.is_set() and record.outcome is Outcome.INFRA_ERROR:
                return  # aborted by Ctrl-C: not a real infra error, leave it to --resume
            store.append(record)
            with lock:
                all_records.append(record)
                if observer is not None:
                    observer.recorded(record)
                if record.outcome is Outcome.INFRA_ERROR and attempt < max_attempts:
                    todo.put((index, attempt + 1))
                if should_stop is not None and should_stop(list(all_records)):
                    stop.set()

    def guarded(launcher: Launcher) -> None:
        try:
            work(launcher)
        except BaseException as exc:  # surfaced in the main thread
            failures.append(exc)
            stop.set()

    if len(launchers) == 1:
        try:
            work(launchers[0])
        except KeyboardInterrupt:
            stop.set()
            launchers[0].abort()
            raise
        return all_records
    threads = [threading.Thread(target=guarded, args=(lr,), daemon=True,
                                name=f"launcher-{lr.device}") for lr in launchers]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    except KeyboardInterrupt:
        stop.set()
        for launcher in launchers:
            launcher.abort()
        for thread in threads:
            thread.join(10)
        raise
    if failures:
        raise failures[0]
    return all_records


def update_meta(store: CampaignStore, **changes: Any) -> dict[str, Any]:
    """Merge ``changes`` into ``campaign.json`` (dicts are merged one level deep)."""
    meta = store.read_meta()
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(meta.get(key), dict):
            meta[key] = {**meta[key], **value}
        else:
            meta[key] = value
    store.write_meta(meta)
    return meta


def iter_campaign_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Expand paths into campaign directories (a path without ``campaign.json`` is searched
    one level down, so ``runs/`` finds ``runs/baseline`` and ``runs/patched``)."""
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if (path / "campaign.json").exists():
            candidates = [path]
        elif path.is_dir():
            candidates = sorted(p.parent for p in path.glob("*/campaign.json"))
        else:
            candidates = []
        for candidate in candidates:  # a campaign named twice is reported once
            if candidate.resolve() not in seen:
                seen.add(candidate.resolve())
                found.append(candidate)
    return found

