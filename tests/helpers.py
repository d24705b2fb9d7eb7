"""Helpers that many test files share: launch records as a launcher returns them and
campaigns written through the kit's own store, as `coldstart run` writes them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterable

from kit.campaign import Campaign, load_campaign, prepare_store
from kit.records import LaunchRecord, Outcome, SessionTiming
from kit.scenario import parse_scenario

__all__ = ["record", "make_campaign", "counts", "timing", "with_detector"]


def record(label: str, index: int, outcome: str = "completed", *, crash_class: str | None = None,
           device: str = "host:a", last_phase: str | None = None, attempt: int = 1,
           sessions: list[SessionTiming] | None = None, race: dict[str, Any] | None = None,
           error: str | None = None, signature: str | None = None,
           crash: dict[str, Any] | None = None, target: str = "host",
           started_at: str | None = None) -> LaunchRecord:
    """A launch record as a launcher returns it."""
    launch_id = f"{label}-{index:05d}" + (f".r{attempt}" if attempt > 1 else "")
    if last_phase is None:
        last_phase = {"completed": "done", "crashed": "sessions-created", "hung": "start",
                      "infra-error": None}.get(outcome, "start")
    if outcome == "crashed" and signature is None:
        signature = f"sig-of-{crash_class}"
    return LaunchRecord(
        launch_id=launch_id, index=index, attempt=attempt, label=label, target=target,
        device=device, scenario=f"coldstart://run?id={launch_id}&mode=concurrent",
        outcome=Outcome(outcome), last_phase=last_phase, crash_class=crash_class,
        sessions=sessions or [], race=race, error=error, signature=signature, crash=crash,
        started_at=started_at or f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}.000Z")


def make_campaign(root: Path, label: str, records: Iterable[LaunchRecord], *,
                  scenario: str = "mode=concurrent", target: str = "host",
                  build: dict[str, Any] | None = None) -> Campaign:
    """Write a campaign directory with ``records`` and load it back."""
    records = list(records)
    store, _ = prepare_store(root / label, label=label, target=target,
                             scenario=parse_scenario(scenario),
                             launches=len({r.index for r in records}), resume=False,
                             meta_extra={"build": build or {}})
    for r in records:
        store.append(r)
    return load_campaign(store.path)


def counts(label: str, events: int, n: int, *, crash_class: str = "xnnpack-allocator-uaf",
           device: str = "host:a", start: int = 0) -> list[LaunchRecord]:
    """``events`` crashed launches of ``crash_class`` then ``n - events`` completed ones."""
    return [record(label, start + i, "crashed" if i < events else "completed",
                   crash_class=crash_class if i < events else None, device=device)
            for i in range(n)]


def timing(starts: list[float], ends: list[float]) -> list[SessionTiming]:
    return [SessionTiming(i, f"m{i}", s, e) for i, (s, e) in enumerate(zip(starts, ends))]


def with_detector(r: LaunchRecord, on_target: Any, races: int = 0, tool: str = "tsan"
                  ) -> LaunchRecord:
    """``r`` with a race-detector payload in ``extra["detector"]`` (as the host target
    stores it)."""
    payload = {"tool": tool, "races": [{"kind": "data race"}] * races, "on_target": on_target,
               "reason": "hand-built"}
    return dataclasses.replace(r, extra={**r.extra, "detector": payload})
