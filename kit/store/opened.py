"""A campaign a command writes, opened once: its lock taken, ``campaign.json`` and
``launches.jsonl`` read once, and every later change made to the values in memory and
written whole (never read back). The session, the loop and the renderers all take it from
here, so a command parses each campaign's ``campaign.json`` once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records import LaunchRecord
from .meta import CampaignMeta, merged_meta
from .store import Campaign, CampaignStore

__all__ = ["OpenCampaign", "open_to_resume"]


class OpenCampaign:
    """One campaign this process writes.

    Attributes:
        store: its :class:`CampaignStore`, locked by this process.
        meta: ``campaign.json`` as read (or as made), kept up to date by :meth:`update`;
            ``None`` until a new campaign is made (:meth:`made`).
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

    def made(self, meta: CampaignMeta) -> None:
        """Record the meta of a campaign just made on disk (no read)."""
        self.meta = meta

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


def open_to_resume(path: Any) -> OpenCampaign:
    """Lock the campaign at ``path`` and read it once for ``--resume``.

    Raises:
        UsageError: another process writes it (its pid named), no campaign there, or the
            baseline of an interleaved run (:meth:`CampaignStore.resumable_meta`).
        DataError: its files are invalid.
    """
    store = CampaignStore(path)
    if store.writer_pid() is not None:
        store.lock()  # raises, naming the holder, before anything else is said
    if not store.exists():
        store.resumable_meta()  # raises: nothing to resume (no directory made for it)
    store.lock()
    try:
        meta = store.resumable_meta()
        records = list(store.iter_records())
    except BaseException:
        store.unlock()
        raise
    return OpenCampaign(store, meta, records)
