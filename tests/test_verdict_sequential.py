"""The sequential stopping rule (--until-verdict): its error bounds, exactly and by
simulation, and the stop decisions on campaign records."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from kit.errors import UsageError
from kit.analysis.sequential import (InterleavedRule, SprtDesign, SprtState, StopRule,
                                     interleave, make_stop_rule)
from kit.analysis.stats import k_max_at, upper_bound
from kit.analysis.verdict import Verdict, VerdictSettings, compare_campaigns, decide
from kit.campaign.options import add_until_verdict_options
from tests.helpers import (counts, interleaved_rule_from_args, make_campaign, record,
                           stop_rule_from_args)

WALD = SprtDesign(ceiling=0.05, design_rate=0.0125, alpha=0.05, beta=0.2)
EXACT = SprtDesign(ceiling=0.05, design_rate=0.0125, alpha=0.05, beta=0.2, max_launches=306)


def test_wald_error_bounds_hold_however_long_the_run() -> None:
    for true_rate in (0.05, 0.08, 0.2):  # at or above the ceiling: LR >= 1/alpha <= alpha
        assert WALD.operating(true_rate, 3000).p_below <= 0.05
    for true_rate in (0.0125, 0.005):  # at or below the design rate: LR <= beta <= beta
        assert WALD.operating(true_rate, 3000).p_not_below <= 0.2
    assert (math.exp(WALD.upper), math.exp(WALD.lower)) == pytest.approx((20.0, 0.2))
    clean = WALD.operating(0.0, 500)
    assert clean.p_below == 1.0 and clean.expected_launches == WALD.clean_launches() == 78


def test_exact_thresholds_meet_both_error_rates_and_no_less_conservative_ones_do() -> None:
    at_ceiling = EXACT.operating(0.05)
    # calibrated to 0.95 alpha (issue #27), truncation at 306 and the bound included
    assert 0.045 < at_ceiling.p_fixed <= 0.0475
    for above in (0.06, 0.1, 0.3):  # the false-fixed chance is largest at the ceiling
        assert EXACT.operating(above).p_fixed < at_ceiling.p_fixed
    assert EXACT.operating(0.0125).p_fixed >= 0.8
    assert EXACT.operating(0.005).p_fixed > EXACT.operating(0.0125).p_fixed
    # both thresholds are inside Wald's: LR 17.0 and 0.315 instead of 20 and 0.2
    assert EXACT.upper < WALD.upper and EXACT.lower > WALD.lower
    assert math.exp(EXACT.upper) == pytest.approx(17.01, abs=0.01)
    # a little lower upper threshold breaks alpha, a little higher lower one the power
    looser = dataclasses.replace(WALD)
    object.__setattr__(looser, "upper", EXACT.upper - 1e-5)
    object.__setattr__(looser, "lower", EXACT.lower)
    assert looser.operating(0.05, 306).p_fixed > 0.0475
    object.__setattr__(looser, "upper", EXACT.upper)
    object.__setattr__(looser, "lower", EXACT.lower + 1e-5)
    assert looser.operating(0.0125, 306).p_fixed < 0.8
    assert EXACT.clean_launches() == 74 and EXACT.operating(0.0).expected_launches == 74


def test_operating_drops_nothing_even_for_a_long_cap() -> None:
    # issue #27: the walk used to drop states under 1e-15 and stop with 1e-5 left, so the
    # figures plan printed understated P(fixed) by up to 4e-6; now every state is followed
    long = SprtDesign(0.05, 0.0125, 0.05, 0.2, max_launches=3000)
    for rate in (0.05, 0.0125, 0.03, 0.1):
        point = long.operating(rate)
        assert point.p_pruned == 0.0
        assert point.p_below + point.p_not_below + point.p_undecided == pytest.approx(
            1.0, abs=1e-12)
    at_ceiling = long.operating(0.05)
    assert at_ceiling.p_undecided > 1e-6  # what the old walk dropped is now counted
    assert at_ceiling.p_fixed <= 0.0475
    assert long.operating(0.0125).p_fixed >= 0.8
    assert long.clean_launches() == 73


def test_too_few_launches_for_the_error_rates_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no sequential rule of at most 60 launches"):
        SprtDesign(0.05, 0.0125, 0.05, 0.2, max_launches=60)


def test_clean_launches_are_where_the_state_turns() -> None:
    for design in (WALD, EXACT):
        n = design.clean_launches()
        assert design.state(0, n) is SprtState.BELOW_CEILING
        assert design.state(0, n - 1) is SprtState.CONTINUE
        assert design.state(2, 10) is SprtState.NOT_BELOW


def test_first_fixed_launch_is_where_lr_and_the_clopper_pearson_bound_both_agree() -> None:
    for design in (WALD, EXACT):
        for x in range(0, 6):
            n = design.first_fixed_launch(x)
            assert design.state(x, n) is SprtState.BELOW_CEILING
            assert upper_bound(x, n, 0.95) < 0.05
            assert (design.state(x, n - 1) is not SprtState.BELOW_CEILING
                    or upper_bound(x, n - 1, 0.95) >= 0.05)
    assert [EXACT.first_fixed_launch(x) for x in range(4)] == [74, 111, 147, 184]
    # 7 events need 330 launches, past the campaign's 306, where compare judges what is left
    assert WALD.first_fixed_launch(7) > 306 and EXACT.first_fixed_launch(7) == 306


def _simulate(design: SprtDesign, rate: float, cap: int, runs: int, seed: int
              ) -> tuple[float, float, float]:
    """(P(fixed), P(stop: not below), mean launches) by brute force: Bernoulli launches,
    the LR thresholds and the bound (binomial cdf < alpha, the Clopper-Pearson duality)."""
    rng = np.random.default_rng(seed)
    events = np.cumsum(rng.random((runs, cap)) < rate, axis=1)
    n = np.arange(1, cap + 1)
    llr = events * design.step_event + (n - events) * design.step_clean
    bound = stats.binom.cdf(events, n, design.ceiling) < design.alpha
    up = (llr >= design.upper) & bound
    low = (llr <= design.lower) & ~bound
    stop = up | low
    first = np.where(stop.any(axis=1), stop.argmax(axis=1), cap - 1)
    rows = np.arange(runs)
    fixed = up[rows, first] | (~stop.any(axis=1) & bound[:, -1])
    return float(fixed.mean()), float(low[rows, first].mean()), float((first + 1).mean())


@pytest.mark.parametrize("rate", [0.0125, 0.05, 0.03])
def test_exact_operating_figures_match_simulation(rate: float) -> None:
    exact = EXACT.operating(rate)
    p_fixed, p_low, mean_n = _simulate(EXACT, rate, 306, 20000, seed=7)
    assert p_fixed == pytest.approx(exact.p_fixed, abs=0.012)
    assert p_low == pytest.approx(exact.p_not_below, abs=0.012)
    assert mean_n == pytest.approx(exact.expected_launches, rel=0.03)


def test_stop_rule_on_a_clean_candidate(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 12, 20))
    rule = make_stop_rule(base.path, VerdictSettings())
    n = rule.design.clean_launches()
    assert not rule(counts("c", 0, n - 1))
    # infra errors never count
    assert not rule(counts("c", 0, n - 1) + [record("c", n, "infra-error")])
    stop, why = rule.decision(counts("c", 0, n))
    assert stop and why.startswith("fixed")


def test_stop_rule_stops_a_candidate_that_still_crashes(tmp_path: Path) -> None:
    rule = make_stop_rule(counts("b", 12, 20), VerdictSettings())
    stop, why = rule.decision(counts("c", 3, 10))
    assert stop and "not below" in why


def test_stop_rule_waits_for_the_anytime_valid_comparison() -> None:
    # LR is past its threshold after 78 clean launches, and Fisher's fixed-size test against
    # 3/150 passes from about 257; the comparison that holds at every launch (e-value >= 20)
    # needs 2142
    from kit.analysis.anytime import log_e_lower

    rule = make_stop_rule(counts("b", 3, 150), VerdictSettings())
    assert decide(3, 150, 0, 300).verdict is Verdict.FIXED  # a fixed-size compare would say so
    assert not rule(counts("c", 0, 2141))
    assert rule(counts("c", 0, 2142))
    assert log_e_lower(3, 150, 0, 2141, 0.05) < math.log(20) <= log_e_lower(3, 150, 0, 2142, 0.05)


def test_stop_rule_with_exact_thresholds_for_the_campaign_launches() -> None:
    rule = make_stop_rule(counts("b", 12, 20), VerdictSettings(), max_launches=306)
    assert rule.design == dataclasses.replace(EXACT, baseline_launches=20)
    assert rule.design.upper == EXACT.upper and rule.design.finished
    assert not rule(counts("c", 0, 73)) and rule(counts("c", 0, 74))
    stop, why = rule.decision(counts("c", 2, 40))
    assert stop and "not below" in why and "LR <= 0.315" in why


def test_stop_rule_stops_or_refuses_when_fixed_is_out_of_reach() -> None:
    # 2/150 against even 0/306 is not significant at the exact level: a run of 306 could
    # never end fixed, so it is refused before any launch (the e-value, the fallback, needs
    # 14444 clean launches)
    with pytest.raises(UsageError, match=r"2/150 .* clean candidate needs at least 14444 for "
                                         r"the rule's comparison"):
        make_stop_rule(counts("b", 2, 150), VerdictSettings(), max_launches=306)
    # 3/150 is not refused: the rule goes on past its first "below the ceiling" (0/74) while
    # the comparison does not hold, until Fisher's p of 3/150 against 0/283 (0.0410) is
    # within the exact level (0.0413)
    weak = make_stop_rule(counts("b", 3, 150), VerdictSettings(), max_launches=306)
    assert weak.design.finished and not weak.out_of_reach(0)
    assert weak.design.comparison_alpha == pytest.approx(0.04125, abs=1e-4)
    assert not weak.decision_counts(0, 74)[0] and not weak.decision_counts(0, 282)[0]
    assert weak.decision_counts(0, 283) == (True, "fixed: 0/283 candidate launches against "
                                                  "the baseline's 3/150")
    # 2/20 at a 30% ceiling: the e-value would need 879 clean launches, the exact rule gets
    # there within 100 (Fisher's p of 2/20 against 0/n falls under its level)
    wide = VerdictSettings(signature="any-crash", ceiling=0.3)
    exact = make_stop_rule(counts("b", 2, 20), wide, max_launches=100)
    assert exact.design.finished and not exact.out_of_reach(0)
    with pytest.raises(UsageError, match=r"1/20 any-crash .* clean candidate of 100 launches "
                                         r"\(a clean candidate needs at least 2240925 for"):
        make_stop_rule(counts("b", 1, 20), wide, max_launches=100)
    rule = make_stop_rule(counts("b", 12, 20), VerdictSettings(), max_launches=306)
    k = k_max_at(306, 0.05, 0.05)  # the most events whose bound at 306 is below 5%
    assert not rule.out_of_reach(k) and rule.out_of_reach(k + 1)
    stop, why = rule.decision_counts(k + 1, 150)
    assert stop and why.startswith("fixed is out of reach within 306 launches")


def test_compare_judges_a_rule_run_by_the_rule(tmp_path: Path) -> None:
    # 3/20 vs a clean candidate, a run of at most 306: the exact design stops at the SPRT's
    # first "below the ceiling", 0/74, where Fisher's p (0.0078) is within its level for a
    # 20-launch baseline (0.110); compare of the rule's campaign says fixed there and not
    # before. Under the e-value's comparison (an interleaved run's) it needs 0/106
    from kit.campaign import load_campaign
    from kit.store.store import CampaignStore
    from tests.helpers import update_meta

    rule = make_stop_rule(counts("b", 3, 20), VerdictSettings(), max_launches=306)
    assert rule.design.comparison_alpha == pytest.approx(0.1104, abs=1e-3)
    first = next(n for n in range(1, 307) if rule.decision_counts(0, n)[0])
    assert first == 74 and rule.decision_counts(0, 74)[1].startswith("fixed: 0/74")
    anytime = StopRule(dataclasses.replace(rule.design, baseline_launches=None),
                       rule.settings, 3, 20)
    assert next(n for n in range(1, 307) if anytime.decision_counts(0, n)[0]) == 106
    base = make_campaign(tmp_path, "b", counts("b", 3, 20))
    for which, made, n, want in ((rule, "exact", 73, Verdict.INCONCLUSIVE),
                                 (rule, "exact", 74, Verdict.FIXED),
                                 (anytime, "anytime", 105, Verdict.INCONCLUSIVE),
                                 (anytime, "anytime", 106, Verdict.FIXED)):
        cand = make_campaign(tmp_path / made / str(n), "c", counts("c", 0, n))
        assert compare_campaigns(base, cand).verdict is Verdict.FIXED  # no rule: fixed-size
        update_meta(CampaignStore(cand.path), until_verdict=which.to_meta(str(base.path), True,
                                                                           "fixed"))
        judged = compare_campaigns(base, load_campaign(cand.path))
        assert judged.verdict is want, judged.decision.reason
        assert (judged.decision.e_value is not None) == (made == "anytime")
    assert "exact level for Fisher's p: 0.11" in compare_campaigns(
        base, load_campaign(tmp_path / "exact" / "74" / "c")).decision.reason
    assert "its anytime-valid e-value is 19.96, under 20" in compare_campaigns(
        base, load_campaign(tmp_path / "anytime" / "105" / "c")).decision.reason


def _false_fixed(design: SprtDesign, settings: VerdictSettings, fixed_at, p: float, n_b: int
                 ) -> float:
    """Exact chance that a candidate as bad as a finished baseline (both at ``p``) ends
    fixed: the baseline's binomial outcomes times a dynamic program over the candidate's
    (launches, events), stopping as the SPRT does, fixed where ``fixed_at`` says."""
    cap = design.max_launches
    total = 0.0
    for x_b in range(n_b + 1):
        w_b = float(stats.binom.pmf(x_b, n_b, p))
        alive = {0: 1.0}
        for n in range(cap + 1):
            moved: dict[int, float] = {}
            for x, w in alive.items():
                state = design.state(x, n)
                if state is SprtState.NOT_BELOW:
                    continue
                if (state is SprtState.BELOW_CEILING or n == cap) and fixed_at(x_b, n_b, x, n):
                    total += w_b * w
                    continue
                if n < cap:
                    moved[x] = moved.get(x, 0.0) + w * (1 - p)
                    moved[x + 1] = moved.get(x + 1, 0.0) + w * p
            alive = moved
    return total


def test_a_candidate_as_bad_as_a_baseline_under_the_ceiling_is_rarely_fixed() -> None:
    # issue #14: with the baseline below the ceiling only the comparison protects, and the
    # fixed-size test run after every launch gave 7-8% false fixed at alpha 0.05 here
    import functools

    from kit.analysis.sequential import sequential_fixed

    design = SprtDesign(0.3, 0.075, 0.05, 0.2, 60)
    settings = VerdictSettings(signature="any-crash", ceiling=0.3)

    @functools.lru_cache(maxsize=None)
    def fixed_size(x_b: int, n_b: int, x: int, n: int) -> bool:
        return decide(x_b, n_b, x, n, settings, with_needed=False).verdict is Verdict.FIXED

    @functools.lru_cache(maxsize=None)
    def rule(x_b: int, n_b: int, x: int, n: int) -> bool:
        return sequential_fixed(x_b, n_b, x, n, settings, design)

    for p in (0.1, 0.15, 0.2, 0.25):
        assert _false_fixed(design, settings, rule, p, 20) <= 0.05
    assert _false_fixed(design, settings, fixed_size, 0.15, 20) > 0.07  # the old rule


def test_the_e_value_keeps_alpha_at_every_launch_of_an_interleaved_run() -> None:
    # Ville's inequality, checked exactly: ABAB rounds of builds at one rate p, absorbed the
    # first time the e-value reaches 20 (at any of 40 rounds); that chance stays <= 0.05
    import functools

    from kit.analysis.anytime import e_reaches

    @functools.lru_cache(maxsize=None)
    def hit(x_b: int, x_c: int, n: int) -> bool:
        return e_reaches(x_b, n, x_c, n, alpha=0.05, ceiling=0.3)

    for p in (0.05, 0.15, 0.3, 0.5):
        alive = {(0, 0): 1.0}
        absorbed = 0.0
        for n in range(1, 41):
            moved: dict[tuple[int, int], float] = {}
            for (x_b, x_c), w in alive.items():
                for d_b, w_b in ((0, 1 - p), (1, p)):
                    for d_c, w_c in ((0, 1 - p), (1, p)):
                        key = (x_b + d_b, x_c + d_c)
                        moved[key] = moved.get(key, 0.0) + w * w_b * w_c
            alive = {}
            for (x_b, x_c), w in moved.items():
                if hit(x_b, x_c, n):
                    absorbed += w
                else:
                    alive[(x_b, x_c)] = w
        assert absorbed <= 0.05, p


def test_stop_rule_needs_a_positive_control(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 0, 50))
    with pytest.raises(UsageError, match="never reproduced"):
        make_stop_rule(base, VerdictSettings())


def test_interleaved_rule_stops_the_baseline_once_it_is_enough() -> None:
    rule = InterleavedRule(SprtDesign(0.5, 0.125), VerdictSettings(signature="abort",
                                                                   ceiling=0.5))
    # the candidate cannot end fixed before 6 launches (0 events) or 9 (1 event), so the
    # baseline is judged against 0/6: 3/3 settles both Fisher's test and the e-value there,
    # 2/2 does not (e-value under 20)
    assert rule.design.first_fixed_launch(0) == 6 and rule.design.first_fixed_launch(1) == 9
    assert rule.needs_counts(2, 2, 0, 2)[:2] == (True, True)
    assert rule.needs_counts(3, 3, 0, 2)[:2] == (False, True)
    assert rule.needs_counts(3, 3, 0, 6)[:2] == (False, False)  # fixed
    # below the ceiling with a baseline not yet enough: the baseline alone goes on
    assert rule.needs_counts(2, 2, 0, 6)[:2] == (True, False)
    # a candidate event moves its earliest fixed stop to 9 launches: 3/3 is not enough
    assert rule.needs_counts(3, 3, 1, 4)[:2] == (True, True)
    assert rule.needs_counts(4, 4, 1, 4)[:2] == (False, True)
    assert rule.needs_counts(3, 3, 3, 3)[:2] == (False, False)  # not below the ceiling


def test_argparse_helpers(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 3, 3, crash_class="other-native-crash"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=20)
    add_until_verdict_options(parser)
    assert stop_rule_from_args(parser.parse_args([])) is None
    args = parser.parse_args(["--until-verdict", str(base.path), "--event",
                              "other-native-crash", "--ceiling", "0.5"])
    rule = stop_rule_from_args(args)
    assert rule is not None and (rule.baseline_events, rule.baseline_n) == (3, 3)
    # exact thresholds for 20 launches: 5 clean ones (Wald's LR >= 20 would take 6)
    assert rule.design.design_rate == 0.125 and rule.design.max_launches == 20
    assert rule.design.clean_launches() == 5
    inter = interleaved_rule_from_args(args)
    assert inter is not None and inter.settings.signature == "other-native-crash"
    with pytest.raises(UsageError):
        stop_rule_from_args(parser.parse_args(["--until-verdict", str(tmp_path / "none")]))
    with pytest.raises(UsageError, match="ran on target 'host', this run on 'android'"):
        stop_rule_from_args(args, target="android")
    with pytest.raises(UsageError):
        stop_rule_from_args(parser.parse_args(["--until-verdict", str(base.path),
                                               "--design-rate", "0.9"]))


@pytest.mark.parametrize("ceiling, n_max", [(0.05, 400), (0.5, 60), (0.01, 1600)])
def test_k_max_table_matches_the_one_at_a_time_bound(ceiling: float, n_max: int) -> None:
    from kit.analysis.binomial import k_max_table

    table = k_max_table(n_max, ceiling, 0.05)
    assert table[0] == -1
    for n in (1, 2, 5, 59, 60, n_max // 3, n_max):
        assert table[n] == k_max_at(n, ceiling, 0.05)


@dataclasses.dataclass
class ScriptedSideDouble:
    """A build whose launches have scripted target events (the Side protocol)."""

    events_script: list[int]
    launches: int
    n: int = 0
    events: int = 0

    @property
    def slots(self) -> int:
        return self.n

    def counts(self, signature: str) -> tuple[int, int]:
        return self.events, self.n

    def step(self) -> None:
        self.events += self.events_script[self.n] if self.n < len(self.events_script) else 0
        self.n += 1


def test_an_interleaved_run_says_which_build_ran_out() -> None:
    # the baseline shows 1/3 and may make no more; the candidate is below the ceiling after
    # 11 clean launches, but 1/3 vs 0/11 does not settle the comparison, and neither would
    # twice the baseline at its rate: the candidate goes on too, to its 40 launches
    rule = InterleavedRule(SprtDesign(0.3, 0.075, 0.05, 0.2, 40),
                           VerdictSettings(signature="other-native-crash", ceiling=0.3))
    base, cand = ScriptedSideDouble([1], 3), ScriptedSideDouble([], 40)
    why = interleave(base, cand, rule)
    assert (base.n, cand.n) == (3, 40)
    assert why.startswith("both builds reached their launches (the candidate (0/40) is below "
                          "the ceiling; the baseline (1/3) does not yet show it is lower)")
    short = ScriptedSideDouble([1], 3), ScriptedSideDouble([], 11)
    why = interleave(*short, rule)
    assert why.startswith("both builds reached their launches")
