"""Campaigns: the loop that fills a campaign directory (:mod:`.loop`; the directory itself is
:mod:`kit.store`, re-exported here), interleaved runs of two builds (:mod:`.interleave`) and
the session that runs a whole request (:mod:`.session`, imported on its own: it needs the
analysis layer). The targets' side of a launch is :mod:`kit.launch`."""

from __future__ import annotations

from .loop import CampaignObserver, RetryPolicy, abandoned_slots, run_campaign
from ..store.meta import SCHEMA_VERSION, CampaignMeta, PairMeta, RuleMeta, read_meta, write_meta
from ..store.store import (LABEL_RE, LOCK_NAME, Campaign, CampaignStore, check_label, check_out_dir,
                    iter_campaign_dirs, launch_id_for, load_campaign, prepare_store,
                    tool_versions, update_meta, utc_now)
from ..store.repair import RepairReport, repair_campaign

__all__ = ["Campaign", "CampaignStore", "CampaignMeta", "RuleMeta", "PairMeta",
           "CampaignObserver", "RetryPolicy", "run_campaign",
           "abandoned_slots", "load_campaign", "repair_campaign", "RepairReport", "prepare_store", "update_meta", "read_meta",
           "write_meta", "iter_campaign_dirs", "check_label", "check_out_dir",
           "launch_id_for", "utc_now", "tool_versions", "LABEL_RE", "LOCK_NAME",
           "SCHEMA_VERSION"]
