"""``compare`` as one library call: :func:`compare_pair` opens both campaigns (when given
their directories), resolves the verdict settings (given, else the candidate's
``--until-verdict`` rule, else the defaults), scans each campaign once and returns a
:class:`ComparedPair`: the comparison with its checks, the scans and the summaries. The CLI
and the pytest plugin call it; the renderers (terminal, JSON, JUnit, HTML, Markdown) print
what it holds and decide nothing."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from .compare import Comparison, compare_campaigns
from .decide import VerdictSettings, setting_option
from ..store.store import Campaign, load_campaign
from .scan import Scan, scan_campaign
from .summary import CampaignSummary, summarize
from .target import DEFAULT_SIGNATURE

__all__ = ["ComparedPair", "compare_pair", "resolve_settings", "VERDICT_DEFAULTS"]

#: compare's verdict settings when neither given nor kept by the candidate's rule
VERDICT_DEFAULTS: dict[str, Any] = {"signature": DEFAULT_SIGNATURE, "alpha": 0.05,
                                    "ceiling": 0.05}


@dataclasses.dataclass(frozen=True)
class ComparedPair:
    """What every renderer of a comparison prints.

    Attributes:
        baseline, candidate: the campaigns (records streamed from disk).
        scans: each campaign's one streamed pass, for the verdict's signature.
        comparison: the verdict, its figures, notes and checks.
        taken: the settings taken from the candidate's rule (``--alpha 0.05``...).
    """

    baseline: Campaign
    candidate: Campaign
    scans: tuple[Scan, Scan]
    comparison: Comparison
    taken: tuple[str, ...]

    def summaries(self) -> list[CampaignSummary]:
        """Both campaigns' summaries, from the scans (no second read)."""
        return [summarize(self.baseline, scan=self.scans[0]),
                summarize(self.candidate, scan=self.scans[1])]


def resolve_settings(candidate: Campaign, *, signature: str | None = None,
                     alpha: float | None = None, ceiling: float | None = None,
                     power: float = 0.8) -> tuple[VerdictSettings, tuple[str, ...]]:
    """The verdict settings: each given one, else the candidate's ``--until-verdict`` rule's
    (so that compare judges the run as its rule did), else :data:`VERDICT_DEFAULTS`.
    Returns them and the options taken from the rule."""
    given = {"signature": signature, "alpha": alpha, "ceiling": ceiling}
    rule = candidate.meta.until_verdict
    taken = []
    values: dict[str, Any] = {}
    for key, default in VERDICT_DEFAULTS.items():
        if given[key] is not None:
            values[key] = given[key]
            continue
        kept = getattr(rule, key) if rule is not None else None
        values[key] = kept if kept is not None else default
        if kept is not None:
            taken.append(f"{setting_option(key)} "
                         + (f"{kept}" if key == "signature" else f"{kept:g}"))
    return VerdictSettings(power=power, **values), tuple(taken)


def compare_pair(baseline: Campaign | str | os.PathLike[str],
                 candidate: Campaign | str | os.PathLike[str], *,
                 signature: str | None = None, alpha: float | None = None,
                 ceiling: float | None = None, power: float = 0.8) -> ComparedPair:
    """Compare ``candidate`` with ``baseline`` (campaigns, or their directories) under the
    settings :func:`resolve_settings` gives.

    Raises:
        UsageError: a missing campaign, the same campaign twice, or two targets.
        DataError: a campaign's files are invalid.
    """
    base = (load_campaign(baseline, stream=True) if isinstance(baseline, (str, os.PathLike))
            else baseline)
    cand = (load_campaign(candidate, stream=True) if isinstance(candidate, (str, os.PathLike))
            else candidate)
    settings, taken = resolve_settings(cand, signature=signature, alpha=alpha,
                                       ceiling=ceiling, power=power)
    scans = (scan_campaign(base, settings.signature), scan_campaign(cand, settings.signature))
    comparison = compare_campaigns(base, cand, settings, scans=scans)
    if taken:
        comparison = dataclasses.replace(comparison, notes=(
            *comparison.notes, f"{', '.join(taken)} as in the candidate's --until-verdict "
                               f"rule (campaign.json)"))
    return ComparedPair(base, cand, scans, comparison, taken)
