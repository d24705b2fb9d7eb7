"""A baseline staged by design: ``coldstart run <target> --launches N2 --stage N1:R``
makes ``N1`` launches, stops there when they show at least ``R`` target events, and else
goes on to ``N2``, as declared before its first launch and kept in ``campaign.json``
(:class:`kit.store.meta.StageMeta`).

Why: the exact comparison of ``--until-verdict`` against a finished baseline
(:mod:`kit.analysis.finished`) is computed for a baseline whose size is fixed in advance;
one extended *after* it ran because it looked weak breaks it (0.068 false ``fixed`` at
alpha 0.05: docs/verdict.md). A baseline whose extension is part of its declared design
keeps it: the level is computed for the whole staged procedure
(:func:`kit.analysis.finished.staged_size`), and a strong baseline stops early, which is
what saves launches (``coldstart plan`` designs the stage, issue #27).

The launches counted are the event's eligible launches (:func:`kit.analysis.target.count_events`),
the same ones the rule's baseline counts are made of, taken in launch order.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from ..records import LaunchRecord
from ..store.meta import StageMeta
from .target import count_events, is_eligible

__all__ = ["StageRule", "first_stage", "stage_problem", "staged_design", "parse_stage"]


def parse_stage(text: str) -> tuple[int, int]:
    """``"12:2"`` -> ``(12, 2)``: launches of the first stage and the events that end it.

    Raises:
        ValueError: not two whole numbers ``N:R`` with ``1 <= R <= N`` (one line).
    """
    head, sep, tail = str(text).strip().partition(":")
    if not sep or not head.isdigit() or not tail.isdigit():
        raise ValueError(f"--stage must be N:R (launches, events), e.g. 12:2, not {text!r}")
    n, r = int(head), int(tail)
    if not 1 <= r <= n:
        raise ValueError(f"--stage {n}:{r}: the events R must be between 1 and the "
                         f"launches N")
    return n, r


def first_stage(records: Iterable[LaunchRecord], stage: StageMeta) -> tuple[int, int]:
    """``(events, eligible launches)`` of the stage's event among the first
    ``stage.launches`` eligible launches in launch order (fewer while they are not made)."""
    eligible = sorted((r for r in records if is_eligible(r, stage.event)),
                      key=lambda r: (r.index, r.attempt))
    return count_events(eligible[:stage.launches], stage.event)


class StageRule:
    """When a staged baseline stops: once its first stage is made and shows at least
    ``stage.events`` events (:class:`kit.campaign.loop.StagedSchedule` asks it with all the
    records so far; infra errors are not eligible)."""

    def __init__(self, stage: StageMeta) -> None:
        self.stage = stage

    def met(self, records: Iterable[LaunchRecord]) -> bool:
        """Whether the first stage is made and shows enough events."""
        events, n = first_stage(records, self.stage)
        return n >= self.stage.launches and events >= self.stage.events

    def describe(self) -> str:
        s = self.stage
        return (f"staged baseline: stops after {s.launches} {s.event}-eligible launches when "
                f"they show at least {s.events} {s.event}, else goes on to its --launches")


def stage_problem(records: Sequence[LaunchRecord], stage: StageMeta, planned: int,
                  made: int, signature: str) -> str | None:
    """Why a staged baseline's size is not the one its stage declared, or ``None``: another
    counted event than ``signature`` (the rule's), a first stage not made, a campaign that
    went on past a stage it met, or one that did not reach its ``planned`` launches
    (``made``: its launch slots) after a stage it missed."""
    if stage.event != signature:
        return (f"its stage counted {stage.event}, and this comparison counts {signature}, "
                f"whose count decided nothing about its size")
    events, n = first_stage(records, stage)
    if n < stage.launches:
        return (f"it made {n} of the {stage.launches} launches of its first stage "
                f"(--stage {stage.launches}:{stage.events})")
    total = count_events(records, stage.event)[1]
    if events >= stage.events:
        if total > stage.launches:
            return (f"it met its stage ({events} events in {stage.launches} launches) but "
                    f"went on to {total} launches")
        return None
    if made < planned:
        return (f"it missed its stage ({events} events in {stage.launches} launches) and "
                f"made {made} of the {planned} planned launches after it (interrupted: "
                f"finish it with --resume)")
    if total <= stage.launches:
        return (f"it missed its stage and has no eligible launch past it ({total} in all)")
    return None


def staged_design(records: Sequence[LaunchRecord], stage: StageMeta, planned: int
                  ) -> tuple[int, int, int]:
    """``(n1, r, n2)`` of :attr:`kit.analysis.sprt.SprtDesign.baseline_stage` for a staged
    baseline made as declared (:func:`stage_problem` is ``None``): ``n2`` is its eligible
    launches where it went on past the stage, else its ``planned`` launches."""
    events, _n = first_stage(records, stage)
    total = count_events(records, stage.event)[1]
    n2 = planned if events >= stage.events else total
    return stage.launches, stage.events, max(n2, stage.launches + 1)
