"""The one way to write a campaign: :func:`open_to_write` locks its directory (two processes
never write one campaign) and makes a new campaign there or reopens the one there, reading
``campaign.json`` and ``launches.jsonl`` once. Every later change is made to the values in
memory and written whole (never read back). The session, the loop and the renderers all
take the campaign from here, so a command parses each campaign's ``campaign.json`` once.
(The one way to read a campaign is :func:`kit.store.store.load_campaign`.)"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, Literal

from .._bounded import describe_path, path_kind
from ..errors import UsageError
from ..records import LaunchRecord
from ..scenario import Scenario
from .meta import CampaignMeta, merged_meta
from .store import Campaign, CampaignStore, check_label, check_out_dir, tool_versions, utc_now

__all__ = ["OpenCampaign", "WriteMode", "open_to_write"]

#: how :func:`open_to_write` opens a directory: ``new`` (a new campaign: the directory is
#: missing or empty), ``resume`` (the campaign there, for ``--resume``), ``either`` (the
#: campaign there, else a new one: the baseline an interleaved run makes or continues)
WriteMode = Literal["new", "resume", "either"]


class OpenCampaign:
    """One campaign this process writes (:func:`open_to_write`), its lock held until
    :meth:`close`.

    Attributes:
        store: its :class:`CampaignStore`, locked by this process.
        meta: ``campaign.json`` as read (or as made), kept up to date by :meth:`update`;
            ``None`` until a new campaign is made (:meth:`create`).
        records: every record, as read, then as the loop appends them (the loop's own list).
    """

    def __init__(self, store: CampaignStore, meta: CampaignMeta | None,
                 records: list[LaunchRecord]) -> None:
        self.store = store
        self.meta = meta
        self.records = records

    @property
    def path(self) -> Path:
        return self.store.path

    def create(self, *, label: str, target: str, scenario: Scenario, launches: int,
               extra: dict[str, Any] | None = None) -> CampaignMeta:
        """Make the new campaign on disk: its whole ``campaign.json`` (made now, with this
        kit's tool versions; ``extra`` as :func:`kit.store.meta.merged_meta` takes it) and
        an empty ``launches.jsonl``. Returns the meta (kept here, never read back).

        Raises:
            UsageError: the label is invalid, or the directory is not empty
                (:func:`kit.store.store.check_out_dir`).
        """
        assert self.meta is None, "create() of a campaign that exists"
        meta = _new_meta(label=label, target=target, scenario=scenario, launches=launches,
                         extra=extra)
        check_out_dir(self.path)
        self.store.write_meta(meta)
        self.store.launches_path.touch()
        self.meta = meta
        return meta

    def update(self, **changes: Any) -> CampaignMeta:
        """Merge ``changes`` into the meta (:func:`kit.store.meta.merged_meta`) and write
        ``campaign.json`` whole; never reads it back."""
        assert self.meta is not None, "update() of a campaign not made yet"
        self.meta = merged_meta(self.meta, changes)
        self.store.write_meta(self.meta)
        return self.meta

    def campaign(self) -> Campaign:
        """The campaign as it stands in memory (the records this process knows)."""
        assert self.meta is not None
        return Campaign(path=self.path, meta=self.meta, records=list(self.records))

    def close(self) -> None:
        """Release the lock (the lock file stays: an empty lock is harmless)."""
        self.store.unlock()


def open_to_write(path: str | os.PathLike[str], *, mode: WriteMode,
                  flag: str = "--out") -> OpenCampaign:
    """Lock the campaign directory ``path`` (:meth:`CampaignStore.lock`) and open it to write.

    ``mode`` (:data:`WriteMode`): ``new`` gives an :class:`OpenCampaign` with no meta yet
    (:meth:`OpenCampaign.create` makes it), in a directory that is missing (made, with its
    lock file) or empty but for a stale lock file; ``resume`` reads the campaign there once;
    ``either`` reads the campaign there when there is one (the baseline of an interleaved
    run included), else is ``new``. ``flag`` names the directory in messages. Nothing is
    changed by a refusal but the lock file (and the directory ``new`` made for it). The
    caller closes it (:meth:`OpenCampaign.close`); a refusal here releases the lock.

    Raises:
        UsageError: another process writes it (its pid named first); ``new``: the path is
            a file, or holds a campaign or other files (:func:`check_out_dir`);
            ``resume``: no campaign there, or the baseline of an interleaved run; an entry
            is a link, FIFO or device (:meth:`CampaignStore.check_entries`).
        DataError: its files are invalid.
    """
    store = CampaignStore(path)
    if mode == "either":
        if path_kind(store.path) not in ("missing", "a directory"):
            raise UsageError(f"{flag} {store.path} {describe_path(store.path)}",
                             "choose a directory")
    elif store.writer_pid() is not None:
        store.lock()  # raises, naming the holder, before anything else is said
    if mode == "new":
        check_out_dir(store.path, flag)
    elif mode == "resume" and not store.exists():
        _resumable_meta(store)  # raises: nothing to resume (no directory made for it)
    store.lock()
    try:
        if mode == "resume":
            meta: CampaignMeta | None = _resumable_meta(store)
        elif mode == "either" and store.exists():
            meta = store.read_meta()
        else:
            check_out_dir(store.path, flag)  # again, holding the lock: nobody made one since
            meta = None
        records = list(store.iter_records()) if meta is not None else []
    except BaseException:
        store.unlock()
        raise
    return OpenCampaign(store, meta, records)


def _resumable_meta(store: CampaignStore) -> CampaignMeta:
    """``campaign.json`` of the campaign ``--resume`` continues.

    Raises:
        UsageError: the path is a file, or holds no campaign (one line, what to do), or it
            is the baseline of an interleaved run.
        DataError: ``campaign.json`` is invalid.
    """
    if not store.exists():
        if path_kind(store.path) not in ("missing", "a directory"):
            raise UsageError(f"--out {store.path} {describe_path(store.path)}",
                             "give the campaign's directory")
        raise UsageError(f"nothing to resume: {store.path} holds no campaign",
                         "drop --resume to start one, or fix --out")
    store.check_entries()
    meta = store.read_meta()
    if meta.interleaved is not None:
        raise UsageError(f"{store.path} is the baseline of the interleaved run "
                         f"{meta.interleaved.candidate}: resuming it alone would ignore "
                         f"the run's rule", f"resume that run: coldstart run {meta.target} "
                                            f"--resume --out "
                                            f"{shlex.quote(meta.interleaved.candidate)}")
    return meta


def _new_meta(*, label: str, target: str, scenario: Scenario, launches: int,
              extra: dict[str, Any] | None = None) -> CampaignMeta:
    """The ``campaign.json`` of a new campaign, made now with this kit's tool versions."""
    meta = CampaignMeta(label=check_label(label), target=target, scenario=scenario.key(),
                        scenario_description=scenario.describe(), launches=launches,
                        created_at=utc_now(), tools=tool_versions())
    return merged_meta(meta, extra or {})
