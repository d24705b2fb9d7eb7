"""``plan`` as one library call (:func:`plan_run`), for the CLI (``coldstart plan``) and
the pytest plugin (``coldstart.plan``) alike: the limits of what it designs for, the
baseline's rate (given, or counted in a baseline campaign) and the sequential plan
(:func:`kit.analysis.plan.plan_sequential`)."""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

from ..errors import UsageError
from ..store.store import Campaign, load_campaign
from .plan import SequentialPlan, plan_sequential
from .target import DEFAULT_SIGNATURE

__all__ = ["PLAN_MIN_ALPHA", "PLAN_MAX_POWER", "PLAN_MAX_BETA", "PlannedRun", "plan_run",
           "check_plan_limits"]

#: the edges of what ``plan`` designs for (beyond them its search runs for many minutes)
PLAN_MIN_ALPHA = 0.001
PLAN_MAX_POWER = 0.99
PLAN_MAX_BETA = 0.5


@dataclasses.dataclass(frozen=True)
class PlannedRun:
    """A plan and what it was made from.

    Attributes:
        baseline_rate: the baseline's rate planned from (given, or the campaign's
            events/launches, or its lower bound when every launch showed the event).
        event: the counted event, when the rate came from a baseline campaign, else
            ``None``.
        plan: the sequential plan (:class:`kit.analysis.plan.SequentialPlan`).
    """

    baseline_rate: float
    event: str | None
    plan: SequentialPlan


def check_plan_limits(alpha: float, power: float, beta: float) -> None:
    """Refuse settings past what plan designs for (the design's search grows without bound
    toward them: alpha 1e-9 or power 1 - 1e-16 ran for longer than 400 s).

    Raises:
        UsageError: alpha under :data:`PLAN_MIN_ALPHA`, power outside 0.5 ..
            :data:`PLAN_MAX_POWER`, beta over :data:`PLAN_MAX_BETA`.
    """
    for name, value, ok, want in (("--alpha", alpha, alpha >= PLAN_MIN_ALPHA,
                                   f"at least {PLAN_MIN_ALPHA:g}"),
                                  ("--power", power, 0.5 <= power <= PLAN_MAX_POWER,
                                   f"between 0.5 and {PLAN_MAX_POWER:g}"),
                                  ("--beta", beta, beta <= PLAN_MAX_BETA,
                                   f"at most {PLAN_MAX_BETA:g}")):
        if not ok:
            raise UsageError(f"plan's {name} {value} is outside what it designs for "
                             f"({want})", f"give {name} {want}")


def plan_run(*, baseline: Campaign | str | os.PathLike[str] | None = None,
             baseline_rate: float | None = None, event: str | None = None,
             ceiling: float = 0.05, alpha: float = 0.05, power: float = 0.8,
             candidate_rate: float = 0.0, beta: float = 0.2,
             design_rate: float | None = None,
             log: Callable[[str], None] = lambda _m: None,
             budget_s: float | None = None) -> PlannedRun:
    """Plan a verdict from a baseline campaign (its rate of ``event``, default
    ``xnnpack-allocator-uaf``) or a given ``baseline_rate``; ``log`` takes progress lines
    (a slow design is said first); ``budget_s`` bounds the rule search in seconds
    (:func:`kit.analysis.plan.plan_sequential`), ``None`` for no bound.

    Raises:
        UsageError: settings past :func:`check_plan_limits`, both or neither baseline
            given, ``event`` without a baseline, an unknown event, or a baseline that never
            showed it.
    """
    from .stats import lower_bound
    from .verdict import check_signature, count_events

    check_plan_limits(alpha, power, beta)
    if (baseline is None) == (baseline_rate is None):
        raise UsageError("plan needs the baseline's rate: a baseline campaign or a rate",
                         "give --baseline DIR or --baseline-rate RATE")
    if alpha < 0.01 or power > 0.9:
        log("plan: a small alpha or a high power makes a long design; this can take a few "
            "minutes")
    if event is not None and baseline is None:
        raise UsageError("plan's --event only applies with --baseline DIR (it picks the "
                         "events counted there)", "drop --event, or give --baseline DIR")
    if baseline is not None:
        event = event or DEFAULT_SIGNATURE
        check_signature(event)
        campaign = (baseline if isinstance(baseline, Campaign)
                    else load_campaign(baseline, stream=True))
        events, n = count_events(campaign.iter_records(), event)
        if events == 0:
            where = campaign.path if isinstance(baseline, Campaign) else baseline
            raise UsageError(f"the baseline {where} never showed {event} "
                             f"({events}/{n}): no rate to plan from",
                             "make the baseline crash first (heap poisoning, more sessions, "
                             "more cores), or give --baseline-rate")
        p_b = events / n
        if events == n:  # the best positive control there is; plan from its lower bound
            p_b = lower_bound(events, n, 1 - alpha)
            log(f"The baseline showed {event} in all {n} launches: planning from its "
                f"{1 - alpha:.0%} lower bound, {p_b:.3g}.")
    else:
        assert baseline_rate is not None
        p_b = baseline_rate
    result = plan_sequential(p_b, ceiling=ceiling, alpha=alpha, power=power,
                             candidate_rate=candidate_rate, beta=beta,
                             design_rate=design_rate, log=log, budget_s=budget_s)
    return PlannedRun(p_b, event, result)
