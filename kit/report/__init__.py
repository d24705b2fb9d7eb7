"""Reports from a campaign or a comparison: ``summary.json``, ``junit.xml``, ``report.html``
and ``summary.md`` (issue #4).

Every renderer works from one JSON-ready dict (:func:`report_dict`, written as
``summary.json``) whose strings have all been through :func:`kit.redact.redact_text`, so a
credential that reached a record (an Appium URL in an infra error) reaches no report. The
HTML page also gets each launch's label, device, start time and outcome for its timeline.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

from .. import __version__
from ..campaign import Campaign, utc_now
from ..redact import redact_text
from ..analysis.stats import Rate
from ..analysis.summary import CampaignSummary, summarize
from ..analysis.verdict import Comparison, Verdict

__all__ = ["REPORT_SCHEMA", "REPORT_SCHEMA_VERSION", "TimelinePoint", "report_dict",
           "timeline_points", "write_reports", "rate_text", "REPORT_FILES"]

REPORT_SCHEMA = "coldstart-report"
#: Bumped when a key of ``summary.json`` changes meaning or disappears.
REPORT_SCHEMA_VERSION = 1
#: The files :func:`write_reports` writes, by kind.
REPORT_FILES = {"json": "summary.json", "junit": "junit.xml", "html": "report.html",
                "markdown": "summary.md"}


@dataclasses.dataclass(frozen=True)
class TimelinePoint:
    """One launch on the HTML timeline: build label, device, start (ISO 8601 UTC, may be
    empty), launch index and outcome."""

    label: str
    device: str
    started_at: str
    index: int
    outcome: str


def rate_text(r: dict[str, Any] | None) -> str:
    """A rate dict of ``summary.json`` (``count``, ``n``, ``low``, ``high``, ``confidence``)
    as :meth:`kit.analysis.stats.Rate.text` writes it: ``12/20 (60.0%, 95% CI 36.1%-80.9%)``."""
    if not r:
        return "-"
    return Rate(r["count"], r["n"], r["low"], r["high"], r.get("confidence", 0.95)).text()


def _redacted(value: Any) -> Any:
    """Every string in a JSON-like value through :func:`redact_text` (keys kept; no masking
    by key name, since ``signature`` here is a crash signature, not a secret)."""
    if isinstance(value, str):
        return redact_text(value)
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


def timeline_points(campaigns: Sequence[Campaign]) -> list[TimelinePoint]:
    """Every record of ``campaigns`` as a :class:`TimelinePoint` (infra errors included)."""
    return [TimelinePoint(c.label, redact_text(r.device), r.started_at, r.index,
                          r.outcome.value) for c in campaigns for r in c.records]


def write_reports(out_dir: str | Path, campaigns: Sequence[Campaign],
                  comparison: Comparison | None = None, *, signature: str | None = None,
                  fail_on: Sequence[Verdict] = ()) -> dict[str, Path]:
    """Write the four reports into ``out_dir`` (created) and return their paths by kind
    (:data:`REPORT_FILES`).

    Args:
        campaigns: the campaigns reported (baseline first, then candidate, for a comparison).
        comparison: from :func:`kit.analysis.verdict.compare_campaigns`, or ``None``.
        signature: target class to plot for campaign reports (a comparison's wins).
        fail_on: verdicts that the JUnit report marks as failures (``not-fixed`` always is).
    """
    from . import html_report, json_report, junit, markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = report_dict([summarize(c) for c in campaigns], comparison, signature=signature,
                       fail_on=fail_on)
    paths = {kind: out / name for kind, name in REPORT_FILES.items()}
    json_report.write(data, paths["json"])
    junit.write(data, paths["junit"])
    html_report.write(data, timeline_points(campaigns), paths["html"])
    markdown.write(data, paths["markdown"])
    return paths
