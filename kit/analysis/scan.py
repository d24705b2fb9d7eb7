"""One streamed pass over a campaign's records, gathering everything compare, the
summaries and the reports need, in counters and compact arrays: a campaign of 100,000
launches is never held as 100,000 record objects (issue #13: compare took 2.1 GB for
2 x 100k launches).

* a :class:`~kit.store.store.Campaign` loaded or opened with its records left on disk
  (:func:`kit.store.store.load_campaign` with ``stream``):
  :meth:`~kit.store.store.Campaign.iter_records` gives them either way.
* :class:`Scan`: feed it records one by one (:meth:`Scan.add`), or :func:`scan_campaign`.
"""

from __future__ import annotations

import array
import collections
import datetime as _dt
from typing import Any, Iterable

from ..store.store import Campaign
from ..records import LaunchRecord, Outcome
from .target import detector_of, hold_never_engaged, is_eligible, is_event

__all__ = ["Scan", "scan_campaign", "OUTCOME_ORDER", "MAX_LISTED", "example_frames", "NO_PHASE"]

#: rows of a list (infra errors) kept for reports; the rest are counted
MAX_LISTED = 200
#: ``last_phase`` shown for launches that did not even report ``start``.
NO_PHASE = "none"
#: outcome codes of :attr:`Scan.timeline_outcome`
OUTCOME_ORDER = tuple(o.value for o in Outcome)


def example_frames(record: LaunchRecord, limit: int = 8) -> tuple[str, ...]:
    """The crashing thread's top ``limit`` frames of ``record.crash`` as text lines
    (``#00 symbol+offset (module)``); empty when the record has no frames."""
    if record.crash is None:
        return ()
    lines: list[str] = []
    for frame in record.crash.frames[:limit]:
        symbol = frame.symbol or frame.pc or "??"
        text = f"#{frame.index:02d} {symbol}"
        if frame.offset is not None and frame.symbol:
            text += f"+{frame.offset}"
        if frame.module:
            text += f" ({frame.module})"
        lines.append(text)
    return tuple(lines)


def _seconds(stamp: str) -> float:
    try:
        return _dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError, TypeError):
        return float("nan")


class Scan:
    """What one pass over a campaign's records gathers (counts over counted launches
    unless said otherwise). ``signature``: the target whose events and eligible launches
    are counted per device (``None``: none)."""

    def __init__(self, signature: str | None = None) -> None:
        self.signature = signature
        self.records = 0
        self.counted = 0
        self.crashed = 0
        self.slots: set[int] = set()  # launch indices made (any record)
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.classes: collections.Counter[str] = collections.Counter()  # "unclassified" too
        self.crash_class: collections.Counter[str] = collections.Counter()  # as recorded
        self.last_phases: collections.Counter[str] = collections.Counter()
        self.crash_phases: collections.Counter[str] = collections.Counter()
        self.targets: collections.Counter[str] = collections.Counter()
        #: device -> [target, counted, crashed, infra errors]
        self.devices: dict[str, list[Any]] = {}
        #: device -> [target events, eligible launches] of ``signature``
        self.target_by_device: dict[str, list[int]] = {}
        self.overlaps = array.array("d")
        self.spreads = array.array("d")
        self.race_seen = False
        self.race_available = self.race_witnessed = self.race_witnessed_crashed = 0
        self.race_skews = array.array("d")
        self.race_witnessed_skews = array.array("d")
        #: counted launches that asked for hold=MS, those held at least once, and those
        #: whose hold never engaged (left out of failure-tier rates)
        self.hold_asked = self.hold_engaged = self.hold_unengaged = 0
        self.detector_seen = 0  # counted launches with a detector payload
        self.detector_judged = self.detector_detected = self.detector_detected_crashed = 0
        self.detector_races = 0  # races reported, over judged launches
        self.detector_tools: collections.Counter[str] = collections.Counter()
        #: (signature, class) -> [launches, example launch id, example frames]
        self.signatures: dict[tuple[str, str], list[Any]] = {}
        self.infra_listed: list[tuple[str, int, int, str, str]] = []
        self.infra_count = 0
        self.timeline_seconds = array.array("d")
        self.timeline_index = array.array("q")
        self.timeline_outcome = bytearray()
        #: per record: 1 when it shows ``signature`` (the counted event), else 0
        self.timeline_event = bytearray()
        self.first: LaunchRecord | None = None

    @property
    def target_events(self) -> tuple[int, int]:
        """``(events, eligible)`` of :attr:`signature` over every device."""
        return (sum(v[0] for v in self.target_by_device.values()),
                sum(v[1] for v in self.target_by_device.values()))

    def add(self, r: LaunchRecord) -> None:
        """Count one record (infra errors included: listed, never in a rate)."""
        if self.first is None:
            self.first = r
        self.records += 1
        self.slots.add(r.index)
        self.timeline_seconds.append(_seconds(r.started_at))
        self.timeline_index.append(r.index)
        self.timeline_outcome.append(OUTCOME_ORDER.index(r.outcome.value))
        self.timeline_event.append(1 if self.signature is not None and r.counted
                                   and is_event(r, self.signature) else 0)
        device = self.devices.setdefault(r.device, [r.target, 0, 0, 0])
        if not r.counted:
            device[3] += 1
            self.infra_count += 1
            if len(self.infra_listed) < MAX_LISTED:
                self.infra_listed.append((r.launch_id, r.index, r.attempt, r.device,
                                          r.error or ""))
            return
        self.counted += 1
        device[1] += 1
        crashed = r.outcome is Outcome.CRASHED
        self.outcomes[r.outcome.value] += 1
        self.last_phases[r.last_phase or NO_PHASE] += 1
        self.targets[r.target] += 1
        if r.crash_class:
            self.crash_class[r.crash_class] += 1
        if r.crash_class or crashed:
            self.classes[r.crash_class or "unclassified"] += 1
            key = (r.signature or "(no signature)", r.crash_class or "unclassified")
            row = self.signatures.get(key)
            if row is None:
                self.signatures[key] = [1, r.launch_id, example_frames(r)]
            else:
                row[0] += 1
                if not row[2]:
                    frames = example_frames(r)
                    if frames:
                        row[1], row[2] = r.launch_id, frames
        if crashed:
            self.crashed += 1
            device[2] += 1
            self.crash_phases[r.last_phase or NO_PHASE] += 1
        overlap = r.create_overlap_ms
        if overlap is not None:
            self.overlaps.append(overlap)
            starts = [s.start_ms for s in r.sessions]
            self.spreads.append(max(starts) - min(starts))
        self._race(r, crashed)
        self._detector(r, crashed)
        if r.hold is not None and r.hold.ms > 0:
            self.hold_asked += 1
            self.hold_engaged += r.hold.engaged > 0
            self.hold_unengaged += hold_never_engaged(r)
        if self.signature is not None:
            counts = self.target_by_device.setdefault(r.device, [0, 0])
            if is_eligible(r, self.signature):
                counts[1] += 1
                counts[0] += is_event(r, self.signature)

    def _race(self, r: LaunchRecord, crashed: bool) -> None:
        race = r.race
        if race is None:
            return
        self.race_seen = True
        if not race.available:
            return
        self.race_available += 1
        if race.skew_us is not None:
            self.race_skews.append(race.skew_us)
        if race.witnessed:
            self.race_witnessed += 1
            self.race_witnessed_crashed += crashed
            if race.skew_us is not None:
                self.race_witnessed_skews.append(race.skew_us)

    def _detector(self, r: LaunchRecord, crashed: bool) -> None:
        payload = detector_of(r)
        if payload is None:
            return
        self.detector_seen += 1
        self.detector_tools[payload.tool or "unknown"] += 1
        if payload.on_target is None:
            return
        self.detector_judged += 1
        self.detector_races += payload.race_count  # all reported, not only those kept
        if payload.on_target:
            self.detector_detected += 1
            self.detector_detected_crashed += crashed


def scan_campaign(campaign: Campaign | Iterable[LaunchRecord],
                  signature: str | None = None) -> Scan:
    """One :class:`Scan` over a campaign (loaded or streamed) or an iterable of records."""
    scan = Scan(signature)
    records = campaign.iter_records() if isinstance(campaign, Campaign) else iter(campaign)
    for record in records:
        scan.add(record)
    return scan
