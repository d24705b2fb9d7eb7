"""The exact rule against a finished baseline (kit/analysis/finished.py, issue #27): its
first-passage program against the rule itself (P(fixed) and the mean launches), its level's
guarantee at every common rate, and plan's design of it above and below the ceiling."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from kit.analysis.finished import MAX_LEVEL, fixed_chance, max_size, operating_finished
from kit.analysis.sequential import SprtDesign, SprtState, StopRule, sequential_fixed
from kit.analysis.sprt import ALPHA_MARGIN
from kit.analysis.verdict import VerdictSettings

SETTINGS = VerdictSettings(signature="any-crash", ceiling=0.3)
#: a 30% ceiling keeps the runs short: at most 40 candidate launches after 8 baseline ones
DESIGN = SprtDesign(0.3, 0.075, 0.05, 0.2, 40, 8)


def _by_the_rule_with_mean(design: SprtDesign, p_b: float, p_c: float
                           ) -> tuple[float, float]:
    """``(P(fixed), mean candidate launches)``, asking the rule itself at every state: for
    each baseline count, a dynamic program over the candidate's (launches, events) that
    stops where :meth:`StopRule.decision_counts` stops and counts :func:`sequential_fixed`
    there."""
    n_b, cap = design.baseline_launches, design.max_launches
    total = mean = 0.0
    for x_b in range(1, n_b + 1):
        w_b = float(stats.binom.pmf(x_b, n_b, p_b))
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
                    total += w_b * w * sequential_fixed(x_b, n_b, x, n, SETTINGS, design)
                    mean += w_b * w * n
                else:
                    alive[x] = w
    return float(total), float(mean)


def _by_the_rule(design: SprtDesign, p_b: float, p_c: float) -> float:
    return _by_the_rule_with_mean(design, p_b, p_c)[0]


@pytest.mark.parametrize("p_b, p_c", [(0.7, 0.075), (0.7, 0.3), (0.2, 0.2), (0.6, 0.0),
                                      (0.12, 0.15)])
def test_the_first_passage_program_matches_the_rule_itself(p_b: float, p_c: float) -> None:
    fixed, mean = _by_the_rule_with_mean(DESIGN, p_b, p_c)
    point = operating_finished(DESIGN, 8, p_b, p_c)
    assert point.p_fixed == fixed_chance(DESIGN, 8, p_b, p_c) == pytest.approx(fixed, abs=1e-9)
    assert point.expected_launches == pytest.approx(mean, abs=1e-9)
    assert point.launches.sum() == pytest.approx(1.0, abs=1e-12)
    assert (np.arange(41) * point.launches).sum() == pytest.approx(mean, abs=1e-9)


def test_the_rule_goes_on_while_the_comparison_does_not_hold() -> None:
    # 2/8 against a clean candidate: below the ceiling from 0/11 on (the SPRT), but Fisher's
    # one-sided p reaches the level (0.074) only at 0/21 (0.069; 0.074 at 0/20 is just
    # over); the run goes on until then. 1/8 never gets there within 40: refused
    level = DESIGN.comparison_alpha
    rule = StopRule(DESIGN, SETTINGS, 2, 8)
    first_below = next(n for n in range(1, 41)
                       if DESIGN.state(0, n) is SprtState.BELOW_CEILING)
    stop = next(n for n in range(1, 41) if rule.decision_counts(0, n)[0])
    assert (first_below, stop) == (11, 21) and 0.0737 < level < 0.0738

    def fisher(n: int) -> float:
        return float(stats.fisher_exact([[2, 6], [0, n]], alternative="greater")[1])

    assert fisher(stop) <= level < fisher(stop - 1)
    assert rule.decision_counts(0, stop)[1].startswith("fixed: 0/21")
    assert StopRule(DESIGN, SETTINGS, 1, 8).out_of_reach(0)


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

    plan = plan_sequential(0.9, ceiling=0.3, staged=False)  # staged: test_baseline_stage.py
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
    assert plan.expected_launches == pytest.approx(plan.baseline_launches + operating_finished(
        plan.design, plan.baseline_launches, 0.9, 0.075).expected_launches, abs=1e-9)


def test_plan_keeps_the_power_below_the_ceiling_within_its_launches() -> None:
    # a baseline under the ceiling (0.2 against 0.3): the comparison, not the ceiling, is
    # what the candidate must be shown below; the rule goes on until it is, within 1.3 times
    # the fixed-size (clean-candidate) design, and has at least that design's power there
    from kit.analysis.plan import plan_sequential

    plan = plan_sequential(0.2, ceiling=0.3)
    ref = plan.reference
    assert plan.baseline_launches + plan.cap <= 1.3 * ref.total_launches
    assert plan.power >= plan.reference_power > 0.0
    assert plan.power == pytest.approx(fixed_chance(plan.design, plan.baseline_launches, 0.2,
                                                    0.075), abs=1e-12)
    assert max_size(plan.design, plan.baseline_launches,
                    plan.design.comparison_alpha) <= ALPHA_MARGIN * 0.05
