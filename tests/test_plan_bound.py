"""``plan`` answers a weak baseline in bounded time, with progress (issue #46, family 5: at a
2% baseline and a 5% ceiling it printed nothing for 900 s): the rule search says which rule
it tries, and past its bound gives the best rule found so far."""

from __future__ import annotations

from kit.analysis.plan import plan_sequential
from kit.analysis.sprt import ALPHA_MARGIN


def test_a_two_percent_baseline_is_planned_within_the_bound_with_progress() -> None:
    said: list[str] = []
    plan = plan_sequential(0.02, ceiling=0.05, log=said.append, budget_s=0.0)
    progress = [m for m in said if m.startswith("plan: rule ")]
    assert progress and progress[0].startswith("plan: rule 1 of 8 (goes on), a baseline of 213")
    assert any("reached its bound (0 s): the best rule found so far is given" in m
               for m in said)
    assert len(progress) == 1  # past the bound, no other baseline is tried
    d = plan.design
    assert (plan.baseline_launches, d.baseline_stage) == (213, None)
    assert plan.power >= plan.reference_power  # the reference's power, kept
    assert plan.baseline_launches + plan.cap <= 1.3 * plan.reference.total_launches
    assert d.operating(d.ceiling, plan.cap).p_fixed <= ALPHA_MARGIN * d.alpha
