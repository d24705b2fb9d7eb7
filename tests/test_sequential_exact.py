"""The exact rule against a finished baseline (kit/analysis/finished.py, issue #27): its
first-stop program against the rule itself, its level's guarantee at every common rate,
and plan's design of it."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from kit.analysis.finished import MAX_LEVEL, fixed_chance, max_size
from kit.analysis.sequential import SprtDesign, StopRule, sequential_fixed
from kit.analysis.sprt import ALPHA_MARGIN
from kit.analysis.verdict import VerdictSettings

SETTINGS = VerdictSettings(signature="any-crash", ceiling=0.3)
#: a 30% ceiling keeps the runs short: at most 40 candidate launches after 8 baseline ones
DESIGN = SprtDesign(0.3, 0.075, 0.05, 0.2, 40, 8)


def _by_the_rule(design: SprtDesign, p_b: float, p_c: float) -> float:
    """P(fixed), asking the rule itself at every state: for each baseline count, a dynamic
    program over the candidate's (launches, events) that stops where
    :meth:`StopRule.decision_counts` stops and counts :func:`sequential_fixed` there."""
    n_b, cap = design.baseline_launches, design.max_launches
    total = 0.0
    for x_b in range(1, n_b + 1):
        rule = StopRule(design, SETTINGS, x_b, n_b)
        if rule.out_of_reach(0):
            continue  # refused before the first launch
        alive = {0: 1.0}
        for n in range(1, cap + 1):
            moved: dict[int, float] = {}
            for x, w in alive.items():
                moved[x] = moved.get(x, 0.0) + w * (1 - p_c)
                moved[x + 1] = moved.get(x + 1, 0.0) + w * p_c
            alive = {}
            for x, w in moved.items():
                if n == cap or rule.decision_counts(x, n)[0]:
                    total += (stats.binom.pmf(x_b, n_b, p_b) * w
                              * sequential_fixed(x_b, n_b, x, n, SETTINGS, design))
                else:
                    alive[x] = w
    return float(total)


@pytest.mark.parametrize("p_b, p_c", [(0.7, 0.075), (0.7, 0.3), (0.2, 0.2), (0.6, 0.0),
                                      (0.12, 0.15)])
def test_the_first_stop_program_matches_the_rule_itself(p_b: float, p_c: float) -> None:
    assert fixed_chance(DESIGN, 8, p_b, p_c) == pytest.approx(_by_the_rule(DESIGN, p_b, p_c),
                                                              abs=1e-9)


def test_the_level_keeps_false_fixed_under_the_margin_at_every_common_rate() -> None:
    level = DESIGN.comparison_alpha
    assert 0.05 < level < MAX_LEVEL  # above alpha: the first stop is itself strong evidence
    goal = ALPHA_MARGIN * 0.05
    for rate in np.linspace(0.01, 0.3, 30):  # as bad as the baseline, below the ceiling
        assert _by_the_rule(DESIGN, rate, rate) <= goal
    for p_b, p_c in ((0.9, 0.3), (0.05, 0.3), (0.3, 0.45)):  # at or above the ceiling
        assert _by_the_rule(DESIGN, p_b, p_c) <= goal
    # and the level is the largest that does: 1% more breaks the margin somewhere
    assert max_size(DESIGN, 8, level) <= goal < max_size(DESIGN, 8, level * 1.01)


def test_a_wrong_fixed_stays_under_alpha_by_simulation_too() -> None:
    # brute force, no dynamic program: Bernoulli launches of both builds at 0.12, the rule's
    # stop and compare's conditions; 20,000 runs put a 0.0475 chance within 0.006 (3 sd)
    rng = np.random.default_rng(3)
    runs, fixed = 20000, 0
    rules = {x: StopRule(DESIGN, SETTINGS, x, 8) for x in range(1, 9)}
    for _ in range(runs):
        x_b = int((rng.random(8) < 0.12).sum())
        if x_b == 0 or rules[x_b].out_of_reach(0):
            continue
        events = np.cumsum(rng.random(40) < 0.12)
        for n in range(1, 41):
            if n == 40 or rules[x_b].decision_counts(int(events[n - 1]), n)[0]:
                fixed += sequential_fixed(x_b, 8, int(events[n - 1]), n, SETTINGS, DESIGN)
                break
    assert fixed / runs == pytest.approx(_by_the_rule(DESIGN, 0.12, 0.12), abs=0.006)


def test_plan_designs_the_rule_within_its_goals() -> None:
    from kit.analysis.plan import plan_sequential

    plan = plan_sequential(0.9, ceiling=0.3)
    ref = plan.reference
    assert (ref.baseline_launches, ref.candidate_launches) == (4, 19)  # at the design rate
    assert plan.design.finished and plan.design.baseline_launches == plan.baseline_launches
    assert plan.baseline_launches + plan.cap <= 1.3 * ref.total_launches
    assert plan.power >= plan.reference_power
    assert plan.power == pytest.approx(fixed_chance(plan.design, plan.baseline_launches, 0.9,
                                                    0.075), abs=1e-12)
    assert plan.design.operating(0.3).p_fixed <= ALPHA_MARGIN * 0.05
    # a clean candidate needs no more launches than the fixed-size design
    assert plan.baseline_launches + plan.design.clean_launches() <= ref.total_launches
