"""Statistics: known values from BACKGROUND.md / issue #4, and cross-checks of every shortcut
against scipy's own tests or a brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from kit.errors import UsageError
from kit.analysis.plan import design_power, plan_launches
from kit.analysis.stats import (StratumTable, fisher_p_vector, holm, launches_to_bound,
                                launches_to_see, lower_bound, lower_rate_test, rate,
                                stratified_exact_p, upper_bound)


def test_known_values_from_the_issue() -> None:
    t = lower_rate_test(12, 20, 0, 100)
    assert t.fisher_p == pytest.approx(1.2e-11, rel=0.01)
    assert lower_rate_test(1, 150, 0, 150).fisher_p == pytest.approx(0.5)
    assert upper_bound(0, 100) == pytest.approx(0.0295, abs=1e-4)  # "about 3%"
    assert launches_to_bound(0.01) == 299
    assert launches_to_bound(0.005) == 598
    assert [launches_to_see(p) for p in (0.6, 0.05, 0.01)] == [4, 59, 299]


def test_launches_to_bound_is_the_first_n_below_the_ceiling() -> None:
    for ceiling, count in ((0.01, 0), (0.05, 0), (0.05, 2), (0.2, 1)):
        n = launches_to_bound(ceiling, count=count)
        assert upper_bound(count, n) < ceiling <= upper_bound(count, n - 1)


def test_clopper_pearson_interval_matches_published_values() -> None:
    r = rate(12, 20)
    assert (r.low, r.high) == (pytest.approx(0.3605, abs=1e-4), pytest.approx(0.8088, abs=1e-4))
    assert r.value == 0.6 and r.text() == "12/20 (60.0%, 95% CI 36.1%-80.9%)"
    empty = rate(0, 0)
    assert (empty.value, empty.low, empty.high) == (None, 0.0, 1.0)
    assert lower_bound(0, 50) == 0.0
    assert lower_bound(10, 10) == pytest.approx(0.05 ** (1 / 10))


@pytest.mark.parametrize("bad", [(-1, 5), (6, 5), (1, -1)])
def test_bad_counts_are_usage_errors(bad: tuple[int, int]) -> None:
    with pytest.raises(UsageError):
        rate(*bad)


def test_boschloo_is_used_and_never_above_fisher() -> None:
    for table in ((12, 20, 0, 100), (1, 150, 0, 150), (3, 3, 0, 3), (5, 40, 1, 40)):
        t = lower_rate_test(*table)
        assert t.method == "boschloo"
        assert t.boschloo_p is not None and t.p == t.boschloo_p <= t.fisher_p
    big = lower_rate_test(300, 600, 10, 600)  # 361k tables: Fisher only
    assert big.method == "fisher" and big.boschloo_p is None
    assert lower_rate_test(0, 0, 0, 5).p == 1.0
    assert lower_rate_test(0, 10, 0, 10).p == 1.0  # no event at all: no evidence


def test_fisher_vector_matches_scipy_fisher_exact() -> None:
    for x_b, n_b, x_c, n_c in itertools.product((0, 1, 4, 9), (9, 20), (0, 2, 7), (7, 30)):
        if x_b > n_b or x_c > n_c:
            continue
        want = sps.fisher_exact([[x_b, n_b - x_b], [x_c, n_c - x_c]],
                                alternative="greater").pvalue
        assert float(fisher_p_vector(x_b, n_b, x_c, n_c)) == pytest.approx(want, rel=1e-9)


def _brute_stratified(strata: list[StratumTable]) -> float:
    """P(sum of baseline events >= observed) by enumerating every table of every stratum."""
    dists = []
    for s in strata:
        k = s.x_b + s.x_c
        dist = {}
        for x in range(max(0, k - s.n_c), min(k, s.n_b) + 1):
            dist[x] = math.comb(s.n_b, x) * math.comb(s.n_c, k - x) / math.comb(s.n_b + s.n_c, k)
        dists.append(dist)
    observed = sum(s.x_b for s in strata)
    total = 0.0
    for combo in itertools.product(*(d.items() for d in dists)):
        if sum(x for x, _ in combo) >= observed:
            total += math.prod(p for _, p in combo)
    return total


def test_stratified_exact_test_matches_enumeration_and_fisher() -> None:
    one = [StratumTable("a", 12, 20, 0, 100)]
    assert stratified_exact_p(one) == pytest.approx(lower_rate_test(12, 20, 0, 100).fisher_p)
    two = [StratumTable("a", 5, 12, 1, 10), StratumTable("b", 2, 15, 0, 9),
           StratumTable("c", 3, 6, 2, 8)]
    assert stratified_exact_p(two) == pytest.approx(_brute_stratified(two), rel=1e-9)


def test_a_device_that_ran_one_build_cannot_carry_the_verdict() -> None:
    # baseline only on a crashy device, candidate only on a quiet one: pooled looks fixed
    confounded = [StratumTable("crashy", 30, 60, 0, 0), StratumTable("quiet", 0, 0, 0, 60)]
    assert lower_rate_test(30, 60, 0, 60).fisher_p < 1e-9
    assert stratified_exact_p(confounded) == 1.0
    # one informative device plus one that only adds noise-free zeros
    mixed = [StratumTable("a", 6, 10, 0, 10), StratumTable("b", 0, 30, 0, 30)]
    assert stratified_exact_p(mixed) == pytest.approx(lower_rate_test(6, 10, 0, 10).fisher_p)


def test_holm_adjustment() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([]) == []


def test_plan_for_the_worked_numbers() -> None:
    p = plan_launches(0.5, ceiling=0.01)
    assert p.candidate_launches == 299 == p.clean_bound_launches
    assert p.achieved_power >= 0.8
    assert design_power(0.5, p.baseline_launches - 1, 0.0, 299, alpha=0.05,
                        ceiling=0.01) < 0.8


def test_design_power_matches_an_independent_sum_over_fisher_exact() -> None:
    p_b, n_b, n_c, alpha, ceiling = 0.1, 40, 59, 0.05, 0.05
    want = sum(sps.binom.pmf(x, n_b, p_b) for x in range(1, n_b + 1)
               if sps.fisher_exact([[x, n_b - x], [0, n_c]], alternative="greater").pvalue
               <= alpha)
    assert design_power(p_b, n_b, 0.0, n_c, alpha=alpha, ceiling=ceiling) == pytest.approx(
        want, rel=1e-9)
    # a candidate with a true rate: checked by simulation
    rng = np.random.default_rng(3)
    xb = rng.binomial(60, 0.2, 20000)
    xc = rng.binomial(150, 0.005, 20000)
    bounded = {int(x): upper_bound(int(x), 150) < 0.05 for x in np.unique(xc)}
    ok = (xb >= 1) & (fisher_p_vector(xb, 60, xc, 150) <= 0.05) & np.array(
        [bounded[int(x)] for x in xc])
    assert design_power(0.2, 60, 0.005, 150, alpha=0.05, ceiling=0.05) == pytest.approx(
        ok.mean(), abs=0.01)


def test_plan_with_a_rare_baseline_needs_a_larger_candidate_too() -> None:
    p = plan_launches(1 / 150, ceiling=0.05)
    assert p.candidate_launches > launches_to_bound(0.05)
    assert p.achieved_power >= 0.8


@pytest.mark.parametrize("kwargs", [dict(baseline_rate=0.5, ceiling=0.05, candidate_rate=0.06),
                                    dict(baseline_rate=0.02, ceiling=0.05, candidate_rate=0.03),
                                    dict(baseline_rate=1.5)])
def test_impossible_plans_are_usage_errors(kwargs: dict) -> None:
    with pytest.raises(UsageError):
        plan_launches(**kwargs)
