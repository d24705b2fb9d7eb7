"""End-of-run summary of one campaign: counts, rates with Clopper-Pearson intervals,
create-overlap figures and the infra errors (listed, never in a denominator).

The run commands call :func:`summarize` then :func:`render_summary` when a campaign ends;
:mod:`kit.report` writes the same figures to JSON, JUnit, HTML and Markdown. A campaign is
read in one streamed pass (:mod:`kit.analysis.scan`); long lists (signatures, infra
errors) are printed up to :data:`SHOWN_ROWS` rows and an "and N more" line.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
from typing import Any, Iterable, Sequence

from ..store.meta import CampaignMeta
from ..store.store import Campaign
from ..errors import ColdstartError
from ..records import LaunchRecord
from ..scenario import parse_scenario
from .scan import NO_PHASE, Scan, example_frames, scan_campaign
from .stats import Rate, rate

__all__ = ["CountRow", "DeviceRow", "OverlapSummary", "RaceSummary", "DetectorSummary",
           "InfraErrorRow", "SignatureRow", "CampaignSummary", "summarize", "render_summary",
           "example_frames", "NO_PHASE", "unfinished_note", "size_not_fixed", "SHOWN_ROWS",
           "more_text", "detector_line"]

#: rows of a long table (signatures, infra errors) printed before "and N more"
SHOWN_ROWS = 20


def more_text(hidden: int, what: str) -> str:
    """``"and 1,279 more signatures (all in summary.json)"``."""
    return f"and {hidden:,} more {what} (all in summary.json)"


@dataclasses.dataclass(frozen=True)
class CountRow:
    """One key (an outcome, crash class, phase, target) and its rate among counted launches."""

    key: str
    rate: Rate

    @property
    def count(self) -> int:
        return self.rate.count

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, **self.rate.to_dict()}


@dataclasses.dataclass(frozen=True)
class DeviceRow:
    """One device: counted launches, crashes among them, and infra errors (kept apart)."""

    device: str
    target: str
    crashed: Rate
    infra_errors: int

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "target": self.target, "crashed": self.crashed.to_dict(),
                "infra_errors": self.infra_errors}


@dataclasses.dataclass(frozen=True)
class OverlapSummary:
    """Did the creates of a launch really run at the same time?

    From each launch's ``sessions`` (``start_ms``/``end_ms`` per create, protocol phase
    ``sessions-created``). A launch *overlapped* when every create was in flight at once
    (``min(end) > max(start)``, :func:`kit.records.overlap_ms` > 0).

    Attributes:
        timed: counted launches with at least two create timings.
        overlapped: how many of those overlapped, with its interval.
        median_overlap_ms: median of ``min(end) - max(start)`` (negative: no overlap).
        median_start_spread_ms: median of ``max(start) - min(start)``, the arrival skew.
        max_start_spread_ms: the largest arrival skew seen.
    """

    timed: int
    overlapped: Rate
    median_overlap_ms: float | None
    median_start_spread_ms: float | None
    max_start_spread_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"timed": self.timed, "overlapped": self.overlapped.to_dict(),
                "median_overlap_ms": self.median_overlap_ms,
                "median_start_spread_ms": self.median_start_spread_ms,
                "max_start_spread_ms": self.max_start_spread_ms}


@dataclasses.dataclass(frozen=True)
class RaceSummary:
    """Host race witness (issue #8): launches whose witness was available, and how many of
    those saw two allocator contexts (the race happened, crash or not)."""

    witnessed: Rate
    #: median arrival skew at XNNPACK init (first two ``xnn_initialize`` calls), in us,
    #: over launches with two or more calls, and over witnessed launches only
    median_skew_us: float | None = None
    median_witnessed_skew_us: float | None = None
    #: witnessed launches whose process then crashed (any crash class)
    witnessed_crashed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"witnessed": self.witnessed.to_dict(), "median_skew_us": self.median_skew_us,
                "median_witnessed_skew_us": self.median_witnessed_skew_us,
                "witnessed_crashed": self.witnessed_crashed}


@dataclasses.dataclass(frozen=True)
class DetectorSummary:
    """A race detector's verdicts (``detector`` payloads: ThreadSanitizer, Helgrind...):
    launches it judged (``on_target`` true or false; unknown ones are left out, as
    launches without a witness are), how many of those had a data race on the allocator
    statics (``race-detected``), the races it reported per judged launch, and how many
    detected launches crashed.

    Attributes:
        detected: launches with ``on_target`` true, over judged launches.
        races_per_launch: races reported (``races`` lists) per judged launch.
        unknown: launches with a payload whose ``on_target`` is null.
        detected_crashed: detected launches whose process crashed.
        tools: the detectors that ran (``tool``), most frequent first.
    """

    detected: Rate
    races_per_launch: float | None
    unknown: int
    detected_crashed: int
    tools: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"detected": self.detected.to_dict(), "races_per_launch": self.races_per_launch,
                "unknown": self.unknown, "detected_crashed": self.detected_crashed,
                "tools": list(self.tools)}


@dataclasses.dataclass(frozen=True)
class InfraErrorRow:
    """One infra error: listed in every summary, never counted in a rate."""

    launch_id: str
    index: int
    attempt: int
    device: str
    error: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class SignatureRow:
    """One crash signature: its class, how many launches hit it, and one example stack."""

    signature: str
    crash_class: str
    count: int
    example_launch_id: str
    example_frames: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "example_frames": list(self.example_frames)}


@dataclasses.dataclass(frozen=True)
class CampaignSummary:
    """What one campaign found. Rates are over counted launches (infra errors excluded).

    Attributes:
        label, target, scenario, scenario_description: from ``campaign.json`` (or the
            records, when summarised from records alone).
        path: the campaign directory, or ``None``.
        planned_launches: ``launches`` from ``campaign.json`` (``None`` if unknown).
        unfinished: the note for a campaign interrupted before its planned launches
            (:func:`unfinished_note`), else ``None``.
        records, counted: lines in ``launches.jsonl`` and those that enter rates.
        crashed: launches whose outcome is ``crashed``.
        outcomes, crash_classes, last_phases, targets: one :class:`CountRow` per key, most
            frequent first (crash classes: crashed launches without a class are
            ``unclassified``).
        crash_phases: crashed launches by the last phase they reached (where the crash
            surfaced: creation, inference or release), as rates over counted launches.
        devices: per device, crashes and infra errors.
        overlap: create-overlap figures.
        race: race-witness figures, or ``None`` when no record carries a witness.
        detector: race-detector figures, or ``None`` when no record carries a detector.
        signatures: distinct crash signatures with one example each, most frequent first.
        infra_errors: the first :data:`kit.analysis.scan.MAX_LISTED` infra-error records;
            infra_error_count: all of them.
        notes: problems met while reading the campaign.
        confidence: of every interval (0.95).
    """

    label: str
    target: str
    scenario: str
    scenario_description: str
    path: str | None
    planned_launches: int | None
    records: int
    counted: int
    crashed: Rate
    outcomes: tuple[CountRow, ...]
    crash_classes: tuple[CountRow, ...]
    last_phases: tuple[CountRow, ...]
    crash_phases: tuple[CountRow, ...]
    targets: tuple[CountRow, ...]
    devices: tuple[DeviceRow, ...]
    overlap: OverlapSummary
    race: RaceSummary | None
    signatures: tuple[SignatureRow, ...]
    infra_errors: tuple[InfraErrorRow, ...]
    notes: tuple[str, ...]
    confidence: float = 0.95
    unfinished: str | None = None
    detector: DetectorSummary | None = None
    infra_error_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the ``campaigns[]`` entries of ``summary.json``)."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, tuple):
                value = [v.to_dict() if hasattr(v, "to_dict") else v for v in value]
            elif hasattr(value, "to_dict"):
                value = value.to_dict()
            out[field.name] = value
        return out


def _rows(counter: collections.Counter[str], n: int, confidence: float) -> tuple[CountRow, ...]:
    return tuple(CountRow(key, rate(count, n, confidence))
                 for key, count in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if len(values) else None


def _overlap(scan: Scan, confidence: float) -> OverlapSummary:
    hit = sum(1 for v in scan.overlaps if v > 0)
    return OverlapSummary(len(scan.overlaps), rate(hit, len(scan.overlaps), confidence),
                          _median(scan.overlaps), _median(scan.spreads),
                          max(scan.spreads) if len(scan.spreads) else None)


def _race(scan: Scan, confidence: float) -> RaceSummary | None:
    if not scan.race_seen:
        return None
    return RaceSummary(rate(scan.race_witnessed, scan.race_available, confidence),
                       median_skew_us=_median(scan.race_skews),
                       median_witnessed_skew_us=_median(scan.race_witnessed_skews),
                       witnessed_crashed=scan.race_witnessed_crashed)


def _detector(scan: Scan, confidence: float) -> DetectorSummary | None:
    if not scan.detector_seen:
        return None
    judged = scan.detector_judged
    return DetectorSummary(rate(scan.detector_detected, judged, confidence),
                           scan.detector_races / judged if judged else None,
                           scan.detector_seen - judged, scan.detector_detected_crashed,
                           tuple(t for t, _ in scan.detector_tools.most_common()))


def _signatures(scan: Scan) -> tuple[SignatureRow, ...]:
    rows = [SignatureRow(signature, crash_class, count, example, tuple(frames))
            for (signature, crash_class), (count, example, frames) in scan.signatures.items()]
    return tuple(sorted(rows, key=lambda r: (-r.count, r.signature)))


def _scenario_key(url: str) -> str:
    try:
        return parse_scenario(url).key()
    except ColdstartError:
        return url


def _until_verdict_note(meta: CampaignMeta) -> tuple[str, ...]:
    """A note for a campaign run under ``--until-verdict`` (``campaign.json``'s
    ``until_verdict``), or the baseline of an interleaved run (its ``interleaved``), so that
    a rule's stop is not mistaken for an interrupted run."""
    rule, pair = meta.until_verdict, meta.interleaved
    if rule is not None:
        head = (f"run under --until-verdict against {rule.baseline}"
                f"{', interleaved' if rule.interleaved else ''} (event {rule.signature}, "
                f"ceiling {rule.ceiling})")
        stopped, why = rule.stopped, rule.why
    elif pair is not None:  # the baseline's side
        head = (f"baseline of a run interleaved with {pair.candidate} (event "
                f"{pair.rule.get('signature')}, ceiling {pair.rule.get('ceiling')})")
        stopped, why = pair.stopped, pair.why
    else:
        return ()
    if stopped is True:
        return (f"{head}: stopped by the rule: {why}",)
    if stopped is False:
        return (f"{head}: ended without settling: {why}",)
    return (f"{head}: interrupted before the rule settled",)


def unfinished_note(campaign: Campaign, made: int | None = None) -> str | None:
    """``"campaign made 3 of its 30 planned launches (...)"`` for a campaign that was
    interrupted before its ``launches`` (``campaign.json``), else ``None``; a campaign run
    under a sequential rule that ended (settled or not) is finished, and one still being
    written is not interrupted. ``made``: the launch
    slots it made, when known (else its records are read)."""
    if campaign.writer is not None:
        return None  # still running: its in-progress note says so, and --resume would wait
    planned = campaign.meta.launches
    if made is None:
        made = len({r.index for r in campaign.iter_records()})
    if made >= planned:
        return None
    for kept in (campaign.meta.until_verdict, campaign.meta.interleaved):
        if kept is not None and kept.stopped is not None:  # None while running
            return None  # ended under its rule (settled, or nothing more it could do)
    if campaign.meta.stage is not None:
        from .stage import StageRule

        if StageRule(campaign.meta.stage).met(campaign.iter_records()):
            return None  # a staged baseline that met its first stage is finished there
    return (f"campaign made {made} of its {planned} planned launches (interrupted: finish it "
            f"with --resume)")


def size_not_fixed(campaign: Campaign, made: int | None = None,
                   signature: str | None = None) -> str | None:
    """Why ``campaign``'s number of launches may depend on its own results, or ``None``
    where it was fixed before its first launch: its planned launches were raised by a
    ``--resume`` after launches had been made (``extended_from``), it ran under a sequential
    rule (its own ``until_verdict``, or the baseline of an interleaved run), or it was
    interrupted short of its plan (:func:`unfinished_note`). The exact comparison against a
    finished baseline (:mod:`kit.analysis.finished`) is computed for a size fixed in
    advance: a baseline extended because it looked weak reached 0.068 false ``fixed`` at
    alpha 0.05 (docs/verdict.md), so such a baseline is compared by the anytime-valid
    e-value instead, which holds however its size came about. ``made``: as
    :func:`unfinished_note`'s. A baseline staged by design (``campaign.json``'s ``stage``,
    :mod:`kit.analysis.stage`) is fixed in this sense when it ended as its stage declared,
    counting ``signature`` (the rule's event; default the stage's own):
    :func:`kit.analysis.stage.stage_problem` says why not."""
    from .stage import stage_problem

    meta = campaign.meta
    if meta.extended_from:
        return (f"its planned launches were raised from {meta.extended_from[0]} to "
                f"{meta.launches} after launches had been made (--resume --launches)")
    if meta.until_verdict is not None:
        return "it ran under --until-verdict, which stopped it on its own results"
    if meta.interleaved is not None:
        return "it is the baseline of an interleaved run, which paused it on its results"
    if meta.stage is not None:
        records = list(campaign.iter_records())
        if made is None:
            made = len({r.index for r in records})
        return stage_problem(records, meta.stage, meta.launches, made,
                             signature if signature is not None else meta.stage.event)
    return unfinished_note(campaign, made)


def summarize(campaign_or_records: Campaign | Iterable[LaunchRecord],
              confidence: float = 0.95, *, scan: Scan | None = None) -> CampaignSummary:
    """Summarise a campaign (or records, e.g. of one in progress) in one streamed pass.

    Args:
        campaign_or_records: a :class:`~kit.store.store.Campaign` (loaded, or its
            records streamed from disk), or launch records (infra errors included; they are listed and left out of every
            denominator).
        confidence: of every Clopper-Pearson interval.
        scan: the campaign's :class:`~kit.analysis.scan.Scan` when already made (compare
            and the reports share one pass).

    Returns:
        A :class:`CampaignSummary`.
    """
    if isinstance(campaign_or_records, Campaign):
        campaign = campaign_or_records
        scan = scan if scan is not None else scan_campaign(campaign)
        meta: CampaignMeta | None = campaign.meta
        path: str | None = str(campaign.path)
        note = unfinished_note(campaign, len(scan.slots))
        unfinished = f"this {note}" if note else None
        notes = (tuple(campaign.notes) + _until_verdict_note(campaign.meta)
                 + ((unfinished,) if unfinished else ()))
    else:
        scan = scan if scan is not None else scan_campaign(campaign_or_records)
        first = scan.first
        meta = CampaignMeta(label=first.label, target=first.target,
                            scenario=_scenario_key(first.scenario), launches=0) if first else None
        path, notes, unfinished = None, (), None
    n = scan.counted
    devices = tuple(DeviceRow(device, target, rate(crashed, counted, confidence), infra)
                    for device, (target, counted, crashed, infra) in sorted(scan.devices.items()))
    return CampaignSummary(
        label=meta.label if meta else "", target=meta.target if meta else "",
        scenario=meta.scenario if meta else "",
        scenario_description=meta.scenario_description if meta else "",
        path=path, planned_launches=meta.launches if meta and path else None,
        records=scan.records, counted=n, crashed=rate(scan.crashed, n, confidence),
        outcomes=_rows(scan.outcomes, n, confidence),
        crash_classes=_rows(scan.classes, n, confidence),
        last_phases=_rows(scan.last_phases, n, confidence),
        crash_phases=_rows(scan.crash_phases, n, confidence),
        targets=_rows(scan.targets, n, confidence),
        devices=devices, overlap=_overlap(scan, confidence),
        race=_race(scan, confidence), signatures=_signatures(scan),
        infra_errors=tuple(InfraErrorRow(*row) for row in scan.infra_listed),
        notes=notes, confidence=confidence, unfinished=unfinished,
        detector=_detector(scan, confidence), infra_error_count=scan.infra_count)


def detector_line(detector: DetectorSummary | None) -> str | None:
    """``"Race detector (tsan): 3/10 judged launches had a data race on the allocator
    statics ...; 0.4 races reported per launch; 1 of those crashed"``, or ``None``."""
    if detector is None:
        return None
    tools = ", ".join(detector.tools) or "unknown"
    unknown = (f"; {detector.unknown} launches it could not judge (left out)"
               if detector.unknown else "")
    d = detector.detected
    if not d.n:
        return f"Race detector ({tools}): no launch judged{unknown}"
    return (f"Race detector ({tools}): {d.count}/{d.n} judged launches had a data race on "
            f"the allocator statics {_rate_cell(d)}; {detector.races_per_launch:.2f} races "
            f"reported per launch; {detector.detected_crashed} of those crashed{unknown}")


def _rate_cell(r: Rate) -> str:
    if not r.n:
        return "-"
    return f"{r.count / r.n:.1%} [{r.low:.1%}, {r.high:.1%}]"


def render_summary(summary: CampaignSummary, console: "Any") -> None:
    """Print ``summary`` as rich tables on ``console`` (a :class:`rich.console.Console`).

    Untrusted text (error messages, signatures) is printed with markup disabled.
    """
    from rich.table import Table
    from rich.text import Text

    pct = f"{summary.confidence:.0%} CI"
    head = Text()
    head.append(f"Campaign {summary.label}", style="bold")
    head.append(f"  target {summary.target}  {summary.scenario_description or summary.scenario}")
    if summary.path:
        head.append(f"\n{summary.path}", style="dim")
    console.print(head)
    planned = (f" of {summary.planned_launches} planned" if summary.planned_launches
               else "")
    console.print(Text(
        f"{summary.counted} counted launches{planned}, {summary.infra_error_count} infra errors "
        f"(not counted); crashed {summary.crashed.count}/{summary.counted} "
        f"{_rate_cell(summary.crashed)}"))

    def table(title: str, rows: Sequence[CountRow], what: str) -> None:
        t = Table(title=title, title_justify="left")
        t.add_column(what)
        t.add_column("launches", justify="right")
        t.add_column(f"rate [{pct}]", justify="right")
        for row in rows:
            t.add_row(Text(row.key), f"{row.count}/{row.rate.n}", _rate_cell(row.rate))
        console.print(t)

    table("By outcome", summary.outcomes, "outcome")
    if summary.crash_classes:
        table("By crash class", summary.crash_classes, "crash class")
    table("By last phase reached", summary.last_phases, "last phase")
    if len(summary.targets) > 1:
        table("By target", summary.targets, "target")
    dev = Table(title="By device", title_justify="left")
    for col in ("device", "target", "crashed", f"rate [{pct}]", "infra errors"):
        dev.add_column(col, justify="left" if col in ("device", "target") else "right")
    for d in summary.devices:
        dev.add_row(Text(d.device), Text(d.target), f"{d.crashed.count}/{d.crashed.n}",
                    _rate_cell(d.crashed), str(d.infra_errors))
    console.print(dev)
    o = summary.overlap
    if o.timed:
        console.print(Text(
            f"Create overlap: {o.overlapped.count}/{o.timed} launches had every create in "
            f"flight at once {_rate_cell(o.overlapped)}; median overlap "
            f"{o.median_overlap_ms:.2f} ms, median arrival skew "
            f"{o.median_start_spread_ms:.2f} ms (max {o.max_start_spread_ms:.2f} ms)"))
    else:
        console.print(Text("Create overlap: no launch reported two or more create timings"))
    if summary.race is not None and summary.race.witnessed.n == 0:
        console.print(Text("Race witness: no launch had it (off, or not available for this "
                           "runtime: campaign.json's options.witness says why)"))
    elif summary.race is not None:
        w = summary.race.witnessed
        skew = summary.race.median_skew_us
        skew_text = "" if skew is None else f"; median arrival skew at XNNPACK init " \
            f"{skew:.1f} us"
        if summary.race.median_witnessed_skew_us is not None:
            skew_text += f" ({summary.race.median_witnessed_skew_us:.1f} us when witnessed)"
        console.print(Text(f"Race witness: {w.count}/{w.n} launches with a witness saw two "
                           f"allocator contexts {_rate_cell(w)}{skew_text}; "
                           f"{summary.race.witnessed_crashed} of those crashed"))
    line = detector_line(summary.detector)
    if line:
        console.print(Text(line))
    if summary.signatures:
        sig = Table(title="Crash signatures", title_justify="left")
        for col in ("signature", "class", "launches", "example"):
            sig.add_column(col)
        for s in summary.signatures[:SHOWN_ROWS]:
            sig.add_row(Text(s.signature), Text(s.crash_class), str(s.count),
                        Text(s.example_launch_id))
        console.print(sig)
        if len(summary.signatures) > SHOWN_ROWS:
            console.print(Text(more_text(len(summary.signatures) - SHOWN_ROWS, "signatures")))
    if summary.infra_errors:
        inf = Table(title="Infra errors (retried; never counted)", title_justify="left")
        for col in ("launch", "device", "error"):
            inf.add_column(col)
        for e in summary.infra_errors[:SHOWN_ROWS]:
            inf.add_row(Text(e.launch_id), Text(e.device), Text(e.error[:200]))
        console.print(inf)
        if summary.infra_error_count > SHOWN_ROWS:
            console.print(Text(more_text(summary.infra_error_count - SHOWN_ROWS,
                                         "infra errors")))
    for note in summary.notes:
        console.print(Text(f"note: {note}", style="yellow"))

