"""Statistics: known values from docs/design.md / issue #4, and cross-checks of every shortcut
against scipy's own tests or a brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from kit.errors import UsageError
from kit.analysis.plan import design_power, plan_launches
from kit.analysis.stats import (StratumTable, boschloo_p, fisher_p_vector, holm,
                                launches_to_bound, launches_to_see, lower_bound,
                                lower_rate_test, rate, stratified_exact_p, upper_bound)


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


def _reference_boschloo(x_b: int, n_b: int, x_c: int, n_c: int) -> float:
    """Boschloo's one-sided p (baseline rate > candidate rate), computed independently of
    scipy: the rejection region {tables with Fisher's one-sided p <= the observed one} is
    found in exact integer arithmetic over every table with the builds' launch counts, and
    P(region) = sum_s w_s pi^s (1 - pi)^(N - s) is maximised over the common rate pi by a
    dense grid refined around its five best points (Boschloo 1970)."""
    from scipy.optimize import minimize_scalar

    n = n_b + n_c
    cb = [math.comb(n_b, i) for i in range(n_b + 1)]
    cc = [math.comb(n_c, j) for j in range(n_c + 1)]
    tails: dict[int, dict[int, tuple[int, int]]] = {}
    for k in range(n + 1):  # Fisher's p = P(X >= i | total k), as numerator/denominator
        lo, hi = max(0, k - n_c), min(k, n_b)
        acc, total, row = 0, math.comb(n, k), {}
        for i in range(hi, lo - 1, -1):
            acc += cb[i] * cc[k - i]
            row[i] = (acc, total)
        tails[k] = row
    a, b = tails[x_b + x_c][x_b]
    w = [0] * (n + 1)
    for i in range(n_b + 1):
        for j in range(n_c + 1):
            c, d = tails[i + j][i]
            if c * b <= a * d:  # Fisher p of (i, j) <= the observed one, exactly
                w[i + j] += cb[i] * cc[j]
    s = np.arange(n + 1)
    log_w = np.array([math.log(v) if v else -np.inf for v in w])

    def log_p(pi: float) -> float:
        if pi <= 0.0 or pi >= 1.0:
            v = w[0] if pi <= 0.0 else w[n]
            return math.log(v) if v else -math.inf
        terms = log_w + s * math.log(pi) + (n - s) * math.log1p(-pi)
        top = terms.max()
        return float(top + math.log(np.exp(terms - top).sum()))

    grid = np.linspace(0.0, 1.0, 1201)
    values = np.array([log_p(pi) for pi in grid])
    best = values.max()
    for k in np.argsort(values)[-5:]:
        found = minimize_scalar(lambda pi: -log_p(pi), method="bounded",
                                bounds=(grid[max(0, k - 1)], grid[min(1200, k + 1)]),
                                options={"xatol": 1e-13})
        best = max(best, -found.fun)
    return min(1.0, math.exp(best))


@pytest.mark.parametrize("table, want", [((3, 43, 0, 59), 0.0515), ((2, 55, 0, 153), 0.0518),
                                         ((1, 9, 0, 93), 0.0475), ((12, 20, 0, 100), 4.2e-12)])
def test_boschloo_takes_the_builds_as_the_tables_columns(table, want) -> None:
    # issue #14: scipy's boschloo_exact treats columns as the two binomial samples; the
    # transposed table gave 0.040 (fixed), 0.045 (fixed), 0.051 (inconclusive), 2.2e-12
    x_b, n_b, x_c, n_c = table
    t = lower_rate_test(*table)
    assert t.boschloo_p == pytest.approx(want, rel=2e-3)
    # scipy's own test, given one column per build, agrees (to its optimiser's precision)
    columns = [[x_b, x_c], [n_b - x_b, n_c - x_c]]
    assert sps.boschloo_exact(columns, alternative="greater").pvalue == pytest.approx(
        t.boschloo_p, rel=1e-7)
    if n_b * n_c < 6000:
        assert t.boschloo_p == pytest.approx(_reference_boschloo(*table), rel=1e-9)


@pytest.mark.parametrize("table", [(1, 150, 0, 150), (1, 400, 0, 400), (2, 120, 0, 120),
                                   (3, 90, 1, 90), (1, 60, 0, 60)])
def test_boschloo_keeps_exactly_tied_tables_in_its_region(table) -> None:
    # issue #27: in 1/150 vs 0/150 the table 150/150 vs 149/150 has Fisher's p of exactly
    # 1/2 too; the log-space tail put it 1.1e-13 above, past scipy's 1e-13 tie tolerance,
    # and the p came out 0.4769631 instead of 0.4769862. Near-ties are now decided in
    # integers; symmetric designs, where such ties are everywhere, agree with scipy
    x_b, n_b, x_c, n_c = table
    want = sps.boschloo_exact([[x_b, x_c], [n_b - x_b, n_c - x_c]],
                              alternative="greater").pvalue
    assert boschloo_p(*table) == pytest.approx(want, rel=1e-9)
    if table == (1, 150, 0, 150):
        assert boschloo_p(*table) == pytest.approx(0.4769862, abs=1e-7)


def test_boschloo_matches_an_independent_exact_computation_on_100_random_pairs() -> None:
    rng = np.random.default_rng(14)
    checked = 0
    while checked < 100:
        n_b, n_c = int(rng.integers(1, 31)), int(rng.integers(1, 31))
        x_b, x_c = int(rng.integers(0, n_b + 1)), int(rng.integers(0, n_c + 1))
        if x_b + x_c in (0, n_b + n_c):
            continue  # no information: the kit says 1.0 (scipy says nan)
        got = lower_rate_test(x_b, n_b, x_c, n_c).boschloo_p
        assert got == pytest.approx(_reference_boschloo(x_b, n_b, x_c, n_c), rel=1e-9), (
            x_b, n_b, x_c, n_c)
        checked += 1


def test_boschloo_keeps_its_size_at_alpha() -> None:
    # the transposed table's test rejected 5.04% at 10 x 40 launches; the right one stays
    # at or below alpha at every common rate
    n_b, n_c = 10, 40
    reject = [(i, j) for i in range(n_b + 1) for j in range(n_c + 1)
              if lower_rate_test(i, n_b, j, n_c).p <= 0.05]
    for pi in np.linspace(0.01, 0.99, 99):
        size = sum(sps.binom.pmf(i, n_b, pi) * sps.binom.pmf(j, n_c, pi) for i, j in reject)
        assert size <= 0.05 + 1e-9, pi


def test_boschloo_is_used_and_never_above_fisher() -> None:
    for table in ((12, 20, 0, 100), (1, 150, 0, 150), (3, 3, 0, 3), (5, 40, 1, 40)):
        t = lower_rate_test(*table)
        assert t.method == "boschloo"
        assert t.boschloo_p is not None and t.p == t.boschloo_p <= t.fisher_p
    big = lower_rate_test(700, 1400, 10, 1400)  # 1.96 million tables: Fisher only
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


def _brute_force_plan(p_b: float, p_c: float, ceiling: float, max_b: int, max_c: int
                      ) -> int:
    """The fewest launches in all of any design with n_b <= max_b, n_c <= max_c that reaches
    power 0.8, trying every pair."""
    best = None
    for n_c in range(1, max_c + 1):
        for n_b in range(1, max_b + 1):
            if best is not None and n_b + n_c >= best:
                break
            if design_power(p_b, n_b, p_c, n_c, alpha=0.05, ceiling=ceiling) >= 0.8:
                best = n_b + n_c
                break
    assert best is not None
    return best


@pytest.mark.parametrize("p_b, p_c, ceiling, max_b, max_c, want", [
    (0.5, 0.0, 0.05, 8, 70, (3, 59)),      # issue #14: 5 + 59 was returned
    (0.3, 0.02, 0.1, 30, 90, None),
    (0.6, 0.0, 0.2, 12, 40, None)])
def test_plan_is_the_smallest_design_found_by_brute_force(p_b, p_c, ceiling, max_b, max_c,
                                                          want) -> None:
    p = plan_launches(p_b, ceiling=ceiling, candidate_rate=p_c)
    assert p.achieved_power >= 0.8
    assert p.total_launches == _brute_force_plan(p_b, p_c, ceiling, max_b, max_c)
    if want is not None:
        assert (p.baseline_launches, p.candidate_launches) == want


def test_plan_finds_the_minimum_the_old_search_missed() -> None:
    # issue #14: 66 + 59 and 1007 + 858 were returned; 113 and 641 + 1098 = 1739 are minimal
    assert plan_launches(0.1, ceiling=0.05).total_launches == 113
    rare = plan_launches(1 / 150, ceiling=0.05)
    assert (rare.baseline_launches, rare.candidate_launches) == (641, 1098)
