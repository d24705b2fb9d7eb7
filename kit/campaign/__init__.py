"""Campaigns: the loop that fills a campaign directory (:mod:`.loop`), interleaved runs of
two builds (:mod:`.interleave`) and the session that runs a whole request (:mod:`.session`,
imported on its own: it needs the analysis layer). The targets' side of a launch is
:mod:`kit.launch`. The directory itself is :mod:`kit.store`; its two doors are re-exported
here for programs that run a campaign themselves: :func:`load_campaign` (read) and
:func:`open_to_write` (write, holding the campaign's lock)."""

from __future__ import annotations

from .loop import CampaignObserver, RetryPolicy, run_campaign
from ..store.opened import OpenCampaign, open_to_write
from ..store.store import Campaign, iter_campaign_dirs, launch_id_for, load_campaign

__all__ = ["Campaign", "CampaignObserver", "OpenCampaign", "RetryPolicy", "iter_campaign_dirs",
           "launch_id_for", "load_campaign", "open_to_write", "run_campaign"]
