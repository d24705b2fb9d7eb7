"""Helpers that many test files share: launch records as a launcher returns them and
campaigns written through the kit's own store (its one writing door,
:func:`kit.store.opened.open_to_write`), as `coldstart run` writes them."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from kit.analysis.sequential import InterleavedRule, StopRule
from kit.records import LaunchRecord, Outcome, SessionTiming
from kit.scenario import Scenario, parse_scenario
from kit.store.meta import CampaignMeta, merged_meta
from kit.store.opened import open_to_write
from kit.store.resume import check_identity, check_launches
from kit.store.store import Campaign, CampaignStore, check_label, load_campaign

if TYPE_CHECKING:
    from kit.campaign.request import CampaignRequest
    from kit.launch import TargetPlugin

__all__ = ["record", "make_campaign", "counts", "timing", "with_detector", "prepare_store",
           "update_meta", "request_from_argv", "stop_rule_from_args",
           "interleaved_rule_from_args"]


def prepare_store(out: str | os.PathLike[str], *, label: str, target: str, scenario: Scenario,
                  launches: int, resume: bool, meta_extra: dict[str, Any] | None = None
                  ) -> tuple[CampaignStore, list[LaunchRecord]]:
    """A campaign made (or, ``resume``, reopened and checked as ``coldstart run --resume``
    checks it: label, target, scenario, ``launches``) through the kit's writing door, then
    unlocked again, so that a test can append records to it or run ``coldstart`` on it.

    Returns:
        The store and the records already in it (empty for a new campaign).

    Raises:
        UsageError, DataError: as :func:`kit.store.opened.open_to_write` and the resume
            checks (:mod:`kit.store.resume`).
    """
    check_label(label)  # before anything is made
    camp = open_to_write(out, mode="resume" if resume else "new")
    try:
        if camp.meta is None:
            camp.create(label=label, target=target, scenario=scenario, launches=launches,
                        extra=meta_extra)
        else:
            check_identity(camp.path, camp.meta, label=label, target=target,
                           scenario=scenario.key())
            check_launches(camp.path, camp.meta, camp.records, launches)
    finally:
        camp.close()
    return camp.store, camp.records


def update_meta(store: CampaignStore, **changes: Any) -> CampaignMeta:
    """Merge ``changes`` into ``campaign.json`` (:func:`kit.store.meta.merged_meta`) and
    write it, as a test sets up a campaign an earlier run (or kit) left."""
    meta = merged_meta(store.read_meta(), changes)
    store.write_meta(meta)
    return meta


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


def request_from_argv(plugin: TargetPlugin[Any], argv: Sequence[str]) -> CampaignRequest:
    """The request ``coldstart run <plugin> ARGV`` would run (nothing is launched):
    :func:`kit.campaign.build.build_request` of :func:`~kit.campaign.build.parse_run_args`."""
    from kit.campaign.build import build_request, parse_run_args

    return build_request(plugin, parse_run_args(plugin, argv))


def stop_rule_from_args(args: argparse.Namespace, target: str | None = None
                        ) -> StopRule | None:
    """The stopping rule that ``--until-verdict BASELINE_DIR`` (``None`` without it) and
    the rule's options in ``args`` give a run on ``target`` against a finished baseline."""
    from kit.campaign.options import rule_from_args
    from kit.campaign.session import stop_rule_for

    rule = rule_from_args(args, None, getattr(args, "out", None))
    if rule is None:
        return None
    return stop_rule_for(rule, target, args.launches)


def interleaved_rule_from_args(args: argparse.Namespace) -> InterleavedRule | None:
    """The rule of a run that makes both builds (``None`` without ``--until-verdict``), with
    exact thresholds for ``args.launches`` per build."""
    from kit.campaign.options import rule_from_args

    rule = rule_from_args(args, None, getattr(args, "out", None))
    if rule is None:
        return None
    return InterleavedRule(rule.design(args.launches), rule.settings)
