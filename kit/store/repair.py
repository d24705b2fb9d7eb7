"""``coldstart repair DIR``: make a damaged campaign readable again, keeping every valid
record once and a backup of the old ``launches.jsonl``."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from .._bounded import AtomicFile, iter_lines_bounded
from ..errors import DataError
from ..records import LaunchRecord
from .store import MAX_RECORD_BYTES, CampaignStore, utc_now

__all__ = ["RepairReport", "repair_campaign"]


@dataclasses.dataclass(frozen=True)
class RepairReport:
    """What :func:`repair_campaign` did: records kept, lines dropped (with why, the first
    few), and the backup of the old file."""

    kept: int
    dropped: int
    reasons: tuple[str, ...]
    backup: Path | None


def repair_campaign(path: str | os.PathLike[str]) -> RepairReport:
    """Rewrite ``launches.jsonl`` keeping every valid record once: lines that are not valid
    records (too long, not JSON, wrong fields) are dropped, and of records that repeat a
    launch id, or a counted launch slot, the first is kept. The old file is kept beside it as
    ``launches.jsonl.bak-<time>``; nothing is changed when nothing needs repair.

    Raises:
        UsageError: no campaign there, or another process writes it.
    """
    store = CampaignStore(path)
    store.read_meta()  # a campaign, or a one-line error
    store.lock()
    try:
        if not store.launches_path.exists():
            return RepairReport(0, 0, (), None)
        # the kept lines stream into the new file as they are read: a campaign of 10^6
        # records is never held whole (the ids and slots seen are)
        out = AtomicFile(store.launches_path)
        try:
            kept, dropped, reasons = _keep_valid(store, out)
            if not dropped:
                out.discard()
                return RepairReport(kept, 0, (), None)
            backup = store.path / f"launches.jsonl.bak-{utc_now().replace(':', '')}"
            try:  # the old file stays where it is until the new one replaces it
                os.link(store.launches_path, backup, follow_symlinks=False)
            except OSError:  # no hard links here: moved aside first, as before
                os.replace(store.launches_path, backup)
            out.commit()
        except BaseException:
            out.discard()
            raise
        return RepairReport(kept, dropped, tuple(reasons), backup)
    finally:
        store.unlock()


def _keep_valid(store: CampaignStore, out: AtomicFile) -> tuple[int, int, list[str]]:
    """Write every valid record of ``store``'s ``launches.jsonl`` once to ``out``:
    ``(kept, dropped, the first five reasons)`` (:func:`repair_campaign`)."""
    kept = dropped = 0
    reasons: list[str] = []
    ids: dict[str, int] = {}  # launch id -> line kept
    slots: dict[int, tuple[str, int]] = {}  # counted slot -> (launch id, line) kept
    for line in iter_lines_bounded(store.launches_path, MAX_RECORD_BYTES,
                                   what="launches.jsonl"):
        why = None
        record = None
        if line.too_long:
            why = "longer than a record can be"
        elif not line.data.strip():
            continue
        else:
            try:
                record = LaunchRecord.from_dict(json.loads(line.data), "record")
            except (ValueError, RecursionError, DataError) as exc:
                why = (exc.message if isinstance(exc, DataError) else "not JSON")
        if record is not None and record.launch_id in ids:
            why = (f"repeats launch id {record.launch_id} (line "
                   f"{ids[record.launch_id]})")
        elif record is not None and record.counted and record.index in slots:
            first_id, first_line = slots[record.index]
            why = (f"{record.launch_id} repeats launch slot {record.index} of "
                   f"{first_id} (line {first_line})")
        if not line.complete:
            why = why or "cut by an interrupted write"
        if why is not None:
            dropped += 1
            if len(reasons) < 5:
                reasons.append(f"line {line.number}: {why[:120]}")
            continue
        assert record is not None
        ids[record.launch_id] = line.number
        if record.counted:
            slots[record.index] = (record.launch_id, line.number)
        out.write(line.data + b"\n")
        kept += 1
    return kept, dropped, reasons
