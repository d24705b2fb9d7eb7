"""Lower bounds on any sequential rule's launches (kit/analysis/wald.py, issue #27): the
Neyman-Pearson power against a linear program, Wald's bound against the kit's exact SPRT
(which nearly attains it) and against the finished-baseline rule."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from kit.analysis.finished import operating_finished, staged_baseline_mean
from kit.analysis.sprt import ALPHA_MARGIN, SprtDesign
from kit.analysis.wald import (least_baseline_launches, least_launches_any_baseline,
                               least_mean_launches, least_total_launches, np_power,
                               wald_mean_launches)


@pytest.mark.parametrize("n, p0, p1, level", [(8, 0.0125, 0.5, 0.0475), (30, 0.0125, 0.1, 0.0475),
                                             (5, 0.2, 0.6, 0.05), (40, 0.03, 0.05, 0.1)])
def test_np_power_is_the_linear_program_optimum(n: int, p0: float, p1: float,
                                                level: float) -> None:
    # the most powerful (randomized) test: max sum phi_x P1(x) with sum phi_x P0(x) <= level
    x = np.arange(n + 1)
    best = optimize.linprog(-stats.binom.pmf(x, n, p1), A_ub=[stats.binom.pmf(x, n, p0)],
                            b_ub=[level], bounds=[(0, 1)] * (n + 1), method="highs")
    assert np_power(n, p0, p1, level) == pytest.approx(-best.fun, abs=1e-9)


def test_least_baseline_launches_is_the_first_size_with_the_power() -> None:
    n = least_baseline_launches(0.1, 0.8, 0.0475, 0.0125)
    assert np_power(n, 0.0125, 0.1, 0.0475) >= 0.8 > np_power(n - 1, 0.0125, 0.1, 0.0475)


@pytest.mark.parametrize("ceiling, launches", [(0.05, 600), (0.3, 120)])
def test_the_exact_sprt_comes_within_a_few_percent_of_walds_bound(ceiling: float,
                                                                  launches: int) -> None:
    # a long truncation: the SPRT is the test that attains Wald's bound, up to the overshoot
    design = SprtDesign(ceiling, ceiling / 4, 0.05, 0.2, launches)
    at_h1, at_c = design.operating(ceiling / 4), design.operating(ceiling)
    bound = wald_mean_launches(at_h1.p_fixed, at_c.p_fixed, ceiling / 4, ceiling)
    assert bound <= at_h1.expected_launches <= 1.15 * bound


def test_the_finished_rule_is_never_under_its_bound() -> None:
    design = SprtDesign(0.3, 0.075, 0.05, 0.2, 40, 8)
    for p_b in (0.3, 0.6, 0.9):
        point = operating_finished(design, 8, p_b, 0.075)
        side = design.operating(0.3).p_fixed
        assert 8 + point.expected_launches >= least_mean_launches(p_b, 8, point.p_fixed, side,
                                                                  0.075, 0.3)


def test_a_staged_rule_is_never_under_its_bound_at_the_baselines_mean() -> None:
    """A staged baseline (2:2 up to 5) bounds the candidate as its most launches do, and
    costs its mean: the rule's exact mean is never under that, at any baseline rate."""
    stage = (2, 2, 5)
    design = SprtDesign(0.3, 0.075, 0.05, 0.2, 24, 2, True, stage)
    side = design.operating(0.3).p_fixed
    for p_b in (0.4, 0.7, 0.9):
        point = operating_finished(design, 2, p_b, 0.075)
        mean = staged_baseline_mean(stage, p_b)
        bound = least_mean_launches(p_b, 5, point.p_fixed, side, 0.075, 0.3, mean)
        assert mean + point.expected_launches >= bound
        assert bound == pytest.approx(least_mean_launches(p_b, 5, point.p_fixed, side, 0.075,
                                                          0.3) - (5 - mean), rel=1e-12)


def test_least_total_launches_minimises_over_the_baseline() -> None:
    bound, n_b = least_total_launches(0.9, 0.8, 0.0475, 0.075, 0.3)
    assert n_b >= least_baseline_launches(0.9, 0.8, 0.0475, 0.075)
    for other in range(n_b, n_b + 20):
        assert least_mean_launches(0.9, other, 0.8, 0.0475, 0.075, 0.3) >= bound
    # a baseline that sees the target less often than the power cannot have it
    assert least_mean_launches(0.9, 0, 0.8, 0.0475, 0.075, 0.3) == float("inf")


@pytest.mark.parametrize("p_b", [0.05, 0.3, 0.9])
def test_a_baseline_stopped_at_its_first_event_attains_the_any_baseline_bound(p_b: float
                                                                               ) -> None:
    """The baseline's first part of the any-baseline bound, power / p_b, is attained by the
    baseline that stops at its first event or at n launches (its exact mean, summed over the
    first-event times, is P(seen) / p_b); the second is Wald's between p_b and p1."""
    for n in (1, 4, 30):
        k = np.arange(1, n + 1)
        first = p_b * (1 - p_b) ** (k - 1)  # P(first event at launch k)
        seen = float(first.sum())
        mean = float((k * first).sum() + n * (1 - p_b) ** n)
        assert mean == pytest.approx(seen / p_b, rel=1e-12)
        candidate = wald_mean_launches(seen, 0.0475, 0.025, 0.1)
        baseline = max(mean, wald_mean_launches(seen, 0.0475, p_b, 0.025))
        assert least_launches_any_baseline(p_b, seen, 0.0475, 0.025, 0.1) == pytest.approx(
            baseline + candidate, rel=1e-12)


def test_no_rule_the_kit_designs_is_under_the_any_baseline_bound() -> None:
    """Staged and single-size baselines, both variants: baseline mean plus the candidate's
    exact mean at the design rate is never under the bound at the rule's own power and the
    false ``fixed`` its calibration guarantees (0.95 alpha at the ceiling and below it)."""
    for stage, at_first in (((1, 1, 2), False), ((2, 2, 5), True), (None, False),
                            (None, True)):
        n_b = 4 if stage is None else stage[0]
        design = SprtDesign(0.1, 0.025, 0.05, 0.2, 82, n_b, at_first, stage)
        # calibrated to 0.95 alpha within its own tolerance (kit.analysis.sprt._calibrate)
        assert design.operating(0.1).p_fixed <= ALPHA_MARGIN * 0.05 + 1e-12
        for p_b in (0.5, 0.9):
            point = operating_finished(design, n_b, p_b, 0.025)
            mean = float(n_b) if stage is None else staged_baseline_mean(stage, p_b)
            bound = least_launches_any_baseline(p_b, point.p_fixed, ALPHA_MARGIN * 0.05,
                                                0.025, 0.1)
            assert mean + point.expected_launches >= bound
            assert bound > 0.7 * (mean + point.expected_launches)  # and not far under
