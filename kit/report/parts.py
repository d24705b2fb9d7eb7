"""What every report renderer shares (imported by the package and by each renderer, so that
no renderer imports the package it belongs to): :class:`Timeline` and :func:`rate_text`."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from ..analysis.stats import Rate

__all__ = ["Timeline", "rate_text"]


@dataclasses.dataclass(frozen=True)
class Timeline:
    """One campaign's launches for the HTML timeline: its label, and per record (infra
    errors included) the start time in seconds since the epoch (``nan`` when unknown), the
    launch index and the outcome (an index into
    :data:`kit.analysis.scan.OUTCOME_ORDER`), as compact arrays; and which launches show the report's counted event (a crash class,
    ``race-detected``, ``race-witnessed``), so the timeline marks them."""

    label: str
    seconds: Sequence[float]
    index: Sequence[int]
    outcome: bytes
    #: per record, 1 when it shows the report's counted event (``event_name``), else 0;
    #: empty when the report has no event
    event: bytes = b""
    event_name: str | None = None


def rate_text(r: dict[str, Any] | None) -> str:
    """A rate dict of ``summary.json`` (``count``, ``n``, ``low``, ``high``, ``confidence``)
    as :meth:`kit.analysis.stats.Rate.text` writes it: ``12/20 (60.0%, 95% CI 36.1%-80.9%)``."""
    if not r:
        return "-"
    return Rate(r["count"], r["n"], r["low"], r["high"], r.get("confidence", 0.95)).text()
