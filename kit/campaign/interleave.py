"""Interleaved campaigns: two builds' campaigns run alternately (ABAB...), one round of
launches per launcher set, under :class:`kit.analysis.sequential.InterleavedRule`
(docs/verdict.md, "Interleaving baseline and candidate")."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ..analysis.sequential import InterleavedRule, interleave
from ..analysis.verdict import count_target
from ..records import LaunchRecord
from ..scenario import Scenario
from .loop import CampaignObserver, Launcher, run_campaign
from .store import CampaignStore

__all__ = ["Arm", "InterleavedResult", "run_interleaved"]


@dataclasses.dataclass
class Arm:
    """One build's side of an interleaved run: what :func:`kit.campaign.run_campaign` needs.

    ``launches`` is this build's maximum; ``records`` is updated as the run goes.
    """

    store: CampaignStore
    records: list[LaunchRecord]
    launchers: Sequence[Launcher]
    label: str
    scenario: Scenario
    launches: int
    timeout_s: float
    max_attempts: int = 3


@dataclasses.dataclass(frozen=True)
class InterleavedResult:
    """How an interleaved run ended: both builds' records and why it stopped."""

    baseline_records: list[LaunchRecord]
    candidate_records: list[LaunchRecord]
    why: str


class _RecordsOnly:
    """Forwards ``recorded`` and reports ``started`` once for the whole interleaved run."""

    def __init__(self, inner: CampaignObserver | None, total: int, done: int) -> None:
        self.inner = inner
        if inner is not None:
            inner.started(total, done)

    def started(self, total: int, done: int) -> None:
        pass

    def recorded(self, record: LaunchRecord) -> None:
        if self.inner is not None:
            self.inner.recorded(record)


@dataclasses.dataclass
class _CampaignSide:
    arm: Arm
    watcher: CampaignObserver

    @property
    def slots(self) -> int:
        return 1 + max((r.index for r in self.arm.records), default=-1)

    @property
    def launches(self) -> int:
        return self.arm.launches

    def counts(self, signature: str) -> tuple[int, int]:
        return count_target(self.arm.records, signature)

    def step(self) -> None:
        arm = self.arm
        arm.records = run_campaign(
            arm.store, arm.records, arm.launchers, label=arm.label, scenario=arm.scenario,
            launches=min(arm.launches, self.slots + len(arm.launchers)),
            timeout_s=arm.timeout_s, max_attempts=arm.max_attempts, observer=self.watcher)


def run_interleaved(baseline: Arm, candidate: Arm, rule: InterleavedRule | None = None, *,
                    observer: CampaignObserver | None = None) -> InterleavedResult:
    """Run two campaigns alternately (ABAB...), each round one launch per launcher of a
    build, until ``rule`` says neither build needs more or both reach their ``launches``
    (see :func:`interleave`).

    Without a rule both builds run to their ``launches``, still interleaved (drift in the
    devices then hits both builds alike). Each round is a :func:`kit.campaign.run_campaign`
    call, so records, infra-error retries and ``--resume`` work as in a single campaign.

    Raises:
        KeyboardInterrupt: after the launches in flight are aborted (records are kept).
    """
    counted = sum(1 for r in [*baseline.records, *candidate.records] if r.counted)
    watcher = _RecordsOnly(observer, baseline.launches + candidate.launches, counted)
    why = interleave(_CampaignSide(baseline, watcher), _CampaignSide(candidate, watcher), rule)
    return InterleavedResult(baseline.records, candidate.records, why)
