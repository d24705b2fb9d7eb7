"""Interleaved campaigns: two builds' campaigns run alternately (ABAB...), one round of
launches per launcher set, under :class:`kit.analysis.sequential.InterleavedRule`
(docs/verdict.md, "Interleaving baseline and candidate"). :class:`InterleavedSchedule`
only picks which build runs next; :func:`kit.campaign.loop.run_arms` makes the launches and
keeps each build's retry budget and persistent-infra stop for the whole run."""

from __future__ import annotations

import collections
import dataclasses
from typing import Sequence

from ..analysis.sequential import InterleavedRule
from ..analysis.target import DEFAULT_SIGNATURE
from ..analysis.verdict import count_events
from ..records import LaunchRecord
from .loop import Arm, CampaignObserver, Step, run_arms

__all__ = ["Arm", "InterleavedResult", "InterleavedSchedule", "run_interleaved"]


@dataclasses.dataclass(frozen=True)
class InterleavedResult:
    """How an interleaved run ended: both builds' records and why it stopped."""

    baseline_records: list[LaunchRecord]
    candidate_records: list[LaunchRecord]
    why: str


class InterleavedSchedule:
    """Rounds of ``[baseline, candidate]``: at the start of each round ``rule`` says which
    build still needs launches (without a rule, both until their ``launches``); each chosen
    build makes one launch per launcher in its step. The run ends when neither needs more,
    both reach their ``launches``, the baseline reaches its ``launches`` without an event of
    the rule's signature (no positive control), or the loop halted a build (its infra budget
    spent, a persistent infra error): then the comparison cannot go on, and the run stops
    with the other build's slots left for ``--resume``."""

    def __init__(self, rule: InterleavedRule | None) -> None:
        self.rule = rule
        self._round: collections.deque[Arm] = collections.deque()

    def settled(self, arm: Arm) -> bool:
        return False  # the rule is asked between rounds, never inside one

    def next_step(self, arms: Sequence[Arm]) -> Step | str:
        baseline, candidate = arms
        for role, arm in (("baseline", baseline), ("candidate", candidate)):
            if arm.halted is not None:
                return f"the {role} ({arm.label}) stopped: {arm.halted}"
        if not self._round:
            chosen = self._next_round(baseline, candidate)
            if isinstance(chosen, str):
                return chosen
            self._round.extend(chosen)
        arm = self._round.popleft()
        return Step(arm, min(arm.launches, arm.slots + len(arm.launchers)))

    def _next_round(self, baseline: Arm, candidate: Arm) -> list[Arm] | str:
        rule = self.rule
        sig = rule.settings.signature if rule is not None else DEFAULT_SIGNATURE
        need_b = need_c = True
        why = "both builds reached their launches"
        if rule is not None:
            x_b, n_b = count_events(baseline.records, sig)
            need_b, need_c, why = rule.needs_counts(x_b, n_b,
                                                    *count_events(candidate.records, sig))
            if not (need_b or need_c):
                return why
            if baseline.slots >= baseline.launches and x_b == 0:
                return (f"the baseline never reproduced {sig} in its {baseline.launches} "
                        f"launches (no positive control)")
        chosen = [arm for arm, need in ((baseline, need_b), (candidate, need_c))
                  if need and arm.slots < arm.launches]
        if chosen:
            return chosen
        if rule is None:
            return why
        full = [arm.slots >= arm.launches for arm in (baseline, candidate)]
        if all(full):
            return f"both builds reached their launches ({why})"
        which, arm = ("baseline", baseline) if full[0] else ("candidate", candidate)
        return (f"the {which} reached its {arm.launches} launches and the other build "
                f"needs no more ({why})")


def run_interleaved(baseline: Arm, candidate: Arm, rule: InterleavedRule | None = None, *,
                    observer: CampaignObserver | None = None) -> InterleavedResult:
    """Run two campaigns alternately (ABAB...) under :class:`InterleavedSchedule`.

    Without a rule both builds run to their ``launches``, still interleaved (drift in the
    devices then hits both builds alike). Records, infra-error retries, the budget and
    ``--resume`` work as in a single campaign (one :func:`kit.campaign.loop.run_arms`).

    Raises:
        KeyboardInterrupt: after the launches in flight are aborted (records are kept).
    """
    why = run_arms([baseline, candidate], InterleavedSchedule(rule), observer=observer)
    return InterleavedResult(baseline.records, candidate.records, why)
