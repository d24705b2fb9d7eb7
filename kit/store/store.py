"""A campaign directory: ``campaign.json``, ``launches.jsonl`` and ``artifacts/`` (docs/design.md).

* ``campaign.json`` (:mod:`kit.store.meta`): label, target, scenario, planned launches,
  devices, build provenance, tool versions, options, the rule. Complete from the moment it
  is made, rewritten atomically.
* ``launches.jsonl``: one :class:`~kit.records.LaunchRecord` per line, each written whole in
  one ``write`` call, then flushed and fsynced, so ``Ctrl-C`` or ``kill -9`` never loses a
  finished launch. A line cut by ``kill -9`` mid-write is ignored by readers and cut off by
  the next append. A write that fails (disk full, file-size limit) is truncated back, so no
  half line is left, and tried again while space may return.
* ``artifacts/<launch-id>/``: raw output, crash text, log excerpts.
* ``.coldstart.lock``: held (``flock``) by the one process that writes the campaign, with
  the campaign directory itself (so that removing or replacing the file lets no second
  writer in); a second writer is refused with the holder's pid. Before each append the
  writer checks that the paths still name what it locked (inode), and stops with exit 3 if
  not. Readers never lock; they can ask whether a writer holds it
  (:meth:`CampaignStore.writer_pid`).
* Nothing is written through a symbolic link: the records and the lock are opened with
  ``O_NOFOLLOW`` relative to the locked directory, whole files go through
  :func:`kit._bounded.write_atomic`, and a campaign whose entries are links, FIFOs or
  devices is refused (:meth:`CampaignStore.check_entries`).

Reading is bounded and streamed: a record line over :data:`MAX_RECORD_BYTES` or one that is
not a valid record is a one-line :class:`~kit.errors.DataError` naming the line, and so are
duplicate launch ids; ``coldstart repair`` rewrites such a file keeping what it can.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import errno
import json
import os
import platform
import shlex
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from .._bounded import (MiB, check_writable_entries, describe_path, iter_lines_bounded,
                        open_regular_if_exists, open_regular_rw, path_kind)
from ..errors import DataError, InfraError, UsageError
from ..records import LaunchRecord
from ..scenario import Scenario, parse_scenario
from .lock import LOCK_NAME, CampaignLock
from .meta import LABEL_RE, SCHEMA_VERSION, CampaignMeta, read_meta, write_meta

__all__ = ["Campaign", "CampaignStore", "load_campaign",
           "iter_campaign_dirs", "check_label", "LABEL_RE", "SCHEMA_VERSION", "launch_id_for",
           "utc_now", "tool_versions", "MAX_RECORD_BYTES", "LOCK_NAME", "check_out_dir"]

#: a record is a few KiB (a crash with all its frames, tens): a longer line is not one
MAX_RECORD_BYTES = 8 * MiB
#: how long an append that fails for want of space keeps trying before the campaign stops
WRITE_RETRY_S = 60.0
_NO_SPACE = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
_REPAIR = "coldstart repair {path}"
#: what the kit writes in a campaign directory (``/``: a directory)
WRITTEN_ENTRIES = ("campaign.json", "launches.jsonl", LOCK_NAME, "artifacts/")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with milliseconds and ``Z``."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def check_label(label: str) -> str:
    """Validate a build label (``[A-Za-z0-9][A-Za-z0-9._-]{0,39}``). Raises UsageError."""
    if not isinstance(label, str) or not LABEL_RE.match(label):
        shown = label[:60] + "..." if isinstance(label, str) and len(label) > 60 else label
        raise UsageError(f"label {shown!r} is invalid",
                         "use 1-40 characters from A-Z a-z 0-9 . _ - starting with a letter "
                         "or digit, e.g. baseline or patched-1.21")
    return label


def launch_id_for(label: str, index: int, attempt: int) -> str:
    """``<label>-<index:05d>``, with ``.r<attempt>`` appended for retries (attempt >= 2)."""
    base = f"{label}-{index:05d}"
    return base if attempt == 1 else f"{base}.r{attempt}"


def tool_versions() -> dict[str, str]:
    """Versions of the kit, Python and the OS, for ``campaign.json``."""
    from ..version import __version__

    return {"coldstart": __version__, "python": platform.python_version(),
            "platform": platform.platform()}


@dataclasses.dataclass
class Campaign:
    """One campaign as a command reads it: ``path``, ``meta`` (``campaign.json``), ``notes``
    (what a reader should know: a cut last line, a writer still running) and its records,
    either loaded (``records``: every line of ``launches.jsonl``, retries included, in file
    order) or left on disk (``records`` is ``None``, for analyses that must not hold a
    large campaign in memory), as :func:`load_campaign` opens it; :meth:`iter_records`
    gives the records either way."""

    path: Path
    meta: CampaignMeta
    records: list[LaunchRecord] | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    #: the pid of the coldstart still writing it (-1: one whose pid is unknown), else None
    writer: int | None = None

    @property
    def label(self) -> str:
        return self.meta.label

    @property
    def scenario(self) -> Scenario:
        return parse_scenario(self.meta.scenario)

    @property
    def loaded(self) -> bool:
        """Whether the records are in memory (else :meth:`iter_records` streams them)."""
        return self.records is not None

    @property
    def counted(self) -> list[LaunchRecord]:
        """Records that enter rates: every outcome but ``infra-error``."""
        return [r for r in self.iter_records() if r.counted]

    @property
    def infra_errors(self) -> list[LaunchRecord]:
        return [r for r in self.iter_records() if not r.counted]

    def iter_records(self) -> Iterator[LaunchRecord]:
        """The records: from memory when loaded, else streamed from ``launches.jsonl``
        (checked line by line; raises as :meth:`CampaignStore.iter_records`)."""
        if self.records is not None:
            return iter(self.records)
        return CampaignStore(self.path).iter_records()


class CampaignStore:
    """Reads and appends one campaign directory. :meth:`append` is thread-safe; one process
    writes a campaign at a time (:meth:`lock`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.meta_path = self.path / "campaign.json"
        self.launches_path = self.path / "launches.jsonl"
        self.lock_path = self.path / LOCK_NAME
        self._append_lock = threading.Lock()
        self._lock = CampaignLock(self.path)

    def exists(self) -> bool:
        """Whether the directory holds a campaign (``campaign.json``: anything by that name,
        so that :meth:`read_meta` names a FIFO or a device there rather than it being
        taken for no campaign)."""
        return path_kind(self.meta_path) != "missing"  # a FIFO there is refused when read

    def read_meta(self) -> CampaignMeta:
        """``campaign.json``, typed. Raises UsageError (missing) or DataError (invalid)."""
        return read_meta(self.path)

    def write_meta(self, meta: CampaignMeta) -> None:
        """Write ``campaign.json`` atomically (a writer whose lock is gone raises
        InfraError, :meth:`check_lock`, and writes nothing)."""
        self.check_lock()
        write_meta(self.path, meta)

    # -- locking (kit/store/lock.py) -------------------------------------------------------
    def lock(self) -> None:
        """Become the campaign's one writer (:meth:`CampaignLock.take`: the directory and
        ``.coldstart.lock``, held until :meth:`unlock` or the process ends).

        Raises:
            UsageError: another process holds it (its pid is named), or the lock file is a
                link, a FIFO, a device or a directory.
        """
        self._lock.take()

    def check_lock(self) -> None:
        """Raise InfraError (exit 3) when this writer's lock is gone (:meth:`CampaignLock.check`)."""
        self._lock.check()

    def unlock(self) -> None:
        """Release :meth:`lock` (the lock file stays: an empty lock is harmless)."""
        self._lock.release()

    def writer_pid(self) -> int | None:
        """The pid of a process writing this campaign now, else ``None`` (never blocks;
        :meth:`CampaignLock.writer_pid`).

        Raises:
            UsageError: the lock file is a device, FIFO, socket or directory.
        """
        return self._lock.writer_pid()

    def _in_progress_note(self, pid: int | None) -> str | None:
        """The note a reader gets for a campaign that ``pid`` (:meth:`writer_pid`) is still
        writing, else ``None``."""
        if pid is None:
            return None
        return ("a campaign in progress: another coldstart "
                f"({'pid ' + str(pid) if pid > 0 else 'process'}) is still writing it; "
                f"these are its records so far")

    # -- records ---------------------------------------------------------------------------
    def iter_records(self, *, dedupe_check: bool = True) -> Iterator[LaunchRecord]:
        """Stream the records of ``launches.jsonl`` (none for a missing file). A last line
        with no newline (cut by ``kill -9``) is skipped.

        Raises:
            DataError: a line over :data:`MAX_RECORD_BYTES`, a line that is not a valid
                record, or (``dedupe_check``) a launch id or a counted launch slot seen
                twice; the message names the line and the repair command.
        """
        if not self.launches_path.exists() and not self.launches_path.is_symlink():
            return
        repair = _REPAIR.format(path=shlex.quote(str(self.path)))
        seen_ids: set[str] = set()
        counted: dict[int, str] = {}  # counted slot -> the launch id that holds it
        for line in iter_lines_bounded(self.launches_path, MAX_RECORD_BYTES,
                                       what="launches.jsonl"):
            if not line.complete:
                return  # cut by kill -9: the next append removes it
            where = f"{self.launches_path} line {line.number}"
            if line.too_long:
                raise DataError(f"{where} is longer than {MAX_RECORD_BYTES // MiB} MiB: not a "
                                f"launch record", f"`{repair}` keeps the readable records")
            if not line.data.strip():
                continue
            try:
                data = json.loads(line.data)
            except (ValueError, RecursionError):
                raise DataError(f"{where} is not JSON", f"`{repair}` keeps the readable "
                                                        f"records") from None
            try:
                record = LaunchRecord.from_dict(data, where)
            except DataError as exc:  # the record readers know no path: fill in the real one
                raise DataError(exc.message, (exc.hint or "").replace(
                    "coldstart repair DIR", repair) or None) from None
            if dedupe_check:
                if record.launch_id in seen_ids or (record.counted and record.index in counted):
                    what = (f"launch id {record.launch_id}" if record.launch_id in seen_ids
                            else f"launch slot {record.index} of {counted[record.index]}")
                    raise DataError(f"{where} repeats {what}: two processes wrote this "
                                    f"campaign, and its counts would be wrong",
                                    f"`{repair}` keeps the first record of each launch")
                seen_ids.add(record.launch_id)
                if record.counted:
                    counted[record.index] = record.launch_id
            yield record

    def _read_records(self) -> tuple[list[LaunchRecord], list[str]]:
        """Every record (see :meth:`iter_records`, which raises the same) and notes: a cut
        last line is noted."""
        records = list(self.iter_records())
        note = self.cut_tail_note()
        return records, [note] if note else []

    def _cut_tail_bytes(self) -> int:
        """Length of a last line without its newline (0: none, or no records file).

        Raises:
            UsageError: ``launches.jsonl`` is a device, FIFO, socket or directory.
        """
        fd = open_regular_if_exists(self.launches_path, "launches.jsonl")
        if fd is None:
            return 0
        with os.fdopen(fd, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if not size:
                return 0
            back = min(size, MAX_RECORD_BYTES + 1)
            fh.seek(size - back)
            data = fh.read(back)
        return len(data) - (data.rfind(b"\n") + 1)

    def cut_tail_note(self) -> str | None:
        """The note a reader gives for a cut last line, naming this campaign's directory
        (labels can repeat across campaigns), else ``None``. Raises as
        :meth:`_cut_tail_bytes`."""
        tail = self._cut_tail_bytes()
        if not tail:
            return None
        size = (f"more than {MAX_RECORD_BYTES} bytes" if tail > MAX_RECORD_BYTES else
                f"{tail} bytes")  # the read is bounded: a longer tail is not measured
        return f"dropped an incomplete last line of {self.launches_path} ({size})"

    def append(self, record: LaunchRecord, *, retry_s: float = WRITE_RETRY_S,
               sleep: Any = time.sleep) -> None:
        """Append one record as one JSON line (one write, then flush and fsync).

        A last line left without its newline by ``kill -9`` is cut off first (here, not
        when the campaign is opened, so that a refused ``--resume`` changes nothing). A
        write that fails is truncated back to where it began, so no half line is left; for
        want of space (ENOSPC, EFBIG, EDQUOT) it is tried again with backoff for up to
        ``retry_s`` seconds.

        Raises:
            InfraError: the record could not be written (the path and the cause are named;
                the campaign stops with exit 3 and ``--resume`` goes on from here).
        """
        data = (json.dumps(record.to_dict(), separators=(",", ":")) + "\n").encode("utf-8")
        deadline = time.monotonic() + retry_s
        delay = 0.5
        with self._append_lock:
            while True:
                try:
                    self._write_line(data)
                    return
                except OSError as exc:
                    if exc.errno not in _NO_SPACE or time.monotonic() + delay > deadline:
                        raise InfraError(f"cannot record launch {record.launch_id} in "
                                         f"{self.launches_path}: "
                                         f"{exc.strerror or exc}",
                                         "free space (or raise the file-size limit), then "
                                         "go on with `--resume`") from None
                sleep(delay)
                delay = min(delay * 2, 8.0)

    def _write_line(self, data: bytes) -> None:
        self.check_lock()  # a writer whose lock is gone never writes on
        if self._lock.dir_fd is not None:  # relative to the locked directory, never a link
            fd = open_regular_rw("launches.jsonl", "launches.jsonl", dir_fd=self._lock.dir_fd,
                                 shown=str(self.launches_path))
        else:
            fd = open_regular_rw(self.launches_path, "launches.jsonl")
        try:
            end = os.lseek(fd, 0, os.SEEK_END)
            if end:
                back = min(end, MAX_RECORD_BYTES + 1)
                tail = os.pread(fd, back, end - back)
                if not tail.endswith(b"\n"):
                    end = end - back + tail.rfind(b"\n") + 1
                    os.ftruncate(fd, end)
            try:
                written = 0
                while written < len(data):
                    written += os.pwrite(fd, data[written:], end + written)
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)
                raise
        finally:
            os.close(fd)

    def artifacts_dir(self, launch_id: str) -> tuple[Path, str]:
        """Create an empty ``artifacts/<launch-id>/`` and return (absolute, relative) paths.
        Leftovers of an interrupted attempt with the same id (this campaign's own: only its
        one writer gets here) are removed first."""
        rel = f"artifacts/{launch_id}"
        path = self.path / rel
        self.check_entries()  # never into (or rmtree through) a link planted in the campaign
        check_writable_entries(self.path / "artifacts", [f"{launch_id}/"])
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path, rel

    def check_entries(self) -> None:
        """Refuse a campaign directory where an entry the kit writes (``campaign.json``,
        ``launches.jsonl``, the lock, ``artifacts/``) is a symbolic link, a FIFO or a
        device (:func:`kit._bounded.check_writable_entries`). Raises UsageError."""
        check_writable_entries(self.path, WRITTEN_ENTRIES)


def load_campaign(path: str | os.PathLike[str], *, stream: bool = False) -> Campaign:
    """Open a campaign directory for reading: the one way a command reads a campaign
    (the one way to write one is :func:`kit.store.opened.open_to_write`). Never locks.

    ``campaign.json`` is read and checked; ``notes`` say what a reader should know (a cut
    last line, a writer still running, :attr:`Campaign.writer`). The records are loaded
    (every line of ``launches.jsonl`` read and checked now), or with ``stream`` left on disk
    (``records`` is ``None``; :meth:`Campaign.iter_records` streams and checks them, for
    analyses that must not hold a large campaign in memory).

    Raises:
        UsageError: ``path`` has no ``campaign.json``, or an entry is a FIFO or a device.
        DataError: ``campaign.json`` or a record is invalid (see
            :meth:`CampaignStore.iter_records`; with ``stream``, when it is streamed).
    """
    store = CampaignStore(path)
    meta = store.read_meta()
    records: list[LaunchRecord] | None = None
    if stream:
        note = store.cut_tail_note()
        notes = [note] if note else []
    else:
        records, notes = store._read_records()
    pid = store.writer_pid()
    note = store._in_progress_note(pid)
    return Campaign(path=Path(path), meta=meta, records=records,
                    notes=notes + ([note] if note else []), writer=pid)


def check_out_dir(path: Path, flag: str = "--out") -> None:
    """Refuse a directory that a fresh campaign cannot be made in: one that holds anything
    but (at most) a stale lock file.

    Raises:
        UsageError: it is a file, or holds a campaign, or holds other files.
    """
    kind = path_kind(path)
    if kind == "missing":
        return
    if kind != "a directory":
        raise UsageError(f"{flag} {path} {describe_path(path)}", "choose a directory")
    if path_kind(path / "campaign.json") != "missing":
        raise UsageError(f"{path} already holds a campaign",
                         "pass --resume to go on with it, or choose another --out")
    others = [p.name for p in path.iterdir() if p.name != LOCK_NAME]
    if others:
        shown = ", ".join(sorted(others)[:3]) + (", ..." if len(others) > 3 else "")
        raise UsageError(f"{flag} {path} is not empty ({shown}) and holds no campaign",
                         "give a new or empty directory; a campaign never moves into other "
                         "files")


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


