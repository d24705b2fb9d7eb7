"""The sequential stopping rule (--until-verdict): its error bounds, exactly and by
simulation, and the stop decisions on campaign records."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pytest

from kit.errors import UsageError
from kit.sequential import (InterleavedRule, SprtDesign, SprtState, add_until_verdict_options,
                            interleaved_rule_from_args, make_stop_rule, stop_rule_from_args)
from kit.stats import upper_bound
from kit.verdict import VerdictSettings
from tests.test_summary import counts, make_campaign, record

DESIGN = SprtDesign(ceiling=0.05, design_rate=0.0125, alpha=0.05, beta=0.2)


def test_error_rates_hold_exactly() -> None:
    for true_rate in (0.05, 0.08, 0.2):  # at or above the ceiling: false fixed <= alpha
        assert DESIGN.operating(true_rate, 3000).p_below <= 0.05
    for true_rate in (0.0125, 0.005):  # at or below the design rate: false stop <= beta
        assert DESIGN.operating(true_rate, 3000).p_not_below <= 0.2
    clean = DESIGN.operating(0.0, 500)
    assert clean.p_below == 1.0 and clean.expected_launches == DESIGN.clean_launches() == 78


def test_clean_launches_are_where_the_state_turns() -> None:
    n = DESIGN.clean_launches()
    assert DESIGN.state(0, n) is SprtState.BELOW_CEILING
    assert DESIGN.state(0, n - 1) is SprtState.CONTINUE
    assert DESIGN.state(2, 10) is SprtState.NOT_BELOW


def test_lr_crossing_implies_the_clopper_pearson_bound_is_below_the_ceiling() -> None:
    # at the first n where LR >= 1/alpha for each event count x, the one-sided bound agrees
    for x in range(0, 8):
        n = next(n for n in range(x, 5000) if DESIGN.state(x, n) is SprtState.BELOW_CEILING)
        assert upper_bound(x, n, 0.95) <= 0.05 + 1e-12


def _simulate(design: SprtDesign, rate: float, cap: int, runs: int, seed: int
              ) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    events = np.cumsum(rng.random((runs, cap)) < rate, axis=1)
    n = np.arange(1, cap + 1)
    llr = events * design.step_event + (n - events) * design.step_clean
    up = llr >= -math.log(design.alpha)
    low = llr <= math.log(design.beta)
    stop = up | low
    first = np.where(stop.any(axis=1), stop.argmax(axis=1), cap - 1)
    hit_up = up[np.arange(runs), first]
    hit_low = low[np.arange(runs), first]
    return float(hit_up.mean()), float(hit_low.mean()), float((first + 1).mean())


@pytest.mark.parametrize("rate", [0.0125, 0.05, 0.03])
def test_exact_operating_figures_match_simulation(rate: float) -> None:
    exact = DESIGN.operating(rate, 400)
    p_up, p_low, mean_n = _simulate(DESIGN, rate, 400, 20000, seed=7)
    assert p_up == pytest.approx(exact.p_below, abs=0.012)
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


def test_stop_rule_waits_while_the_baseline_is_weak() -> None:
    # LR is past 1/alpha after 78 clean launches, but 1/150 vs 0/78 is no evidence yet
    rule = make_stop_rule(counts("b", 1, 150), VerdictSettings())
    assert not rule(counts("c", 0, 200))
    # Fisher's p for 1/150 vs 0/m is 150 / (150 + m): alpha from m = 2850
    assert not rule(counts("c", 0, 2849))
    assert rule(counts("c", 0, 2850))


def test_stop_rule_needs_a_positive_control(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 0, 50))
    with pytest.raises(UsageError, match="never reproduced"):
        make_stop_rule(base, VerdictSettings())


def test_interleaved_rule_stops_the_baseline_once_it_is_enough() -> None:
    rule = InterleavedRule(SprtDesign(0.5, 0.125), VerdictSettings(signature="abort",
                                                                   ceiling=0.5))
    assert rule.needs_counts(0, 2, 0, 2)[:2] == (True, True)
    assert rule.needs_counts(3, 3, 0, 3)[:2] == (False, True)  # Fisher p = 0.05
    assert rule.needs_counts(3, 3, 0, 6)[:2] == (False, False)  # fixed
    assert rule.needs_counts(3, 3, 3, 3)[:2] == (False, False)  # not below the ceiling


def test_argparse_helpers(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 3, 3, crash_class="other-native-crash"))
    parser = argparse.ArgumentParser()
    add_until_verdict_options(parser)
    assert stop_rule_from_args(parser.parse_args([])) is None
    args = parser.parse_args(["--until-verdict", str(base.path), "--signature",
                              "other-native-crash", "--ceiling", "0.5"])
    rule = stop_rule_from_args(args)
    assert rule is not None and (rule.baseline_events, rule.baseline_n) == (3, 3)
    assert rule.design.design_rate == 0.125 and rule.design.clean_launches() == 6
    inter = interleaved_rule_from_args(args)
    assert inter is not None and inter.settings.signature == "other-native-crash"
    with pytest.raises(UsageError):
        stop_rule_from_args(parser.parse_args(["--until-verdict", str(tmp_path / "none")]))
    with pytest.raises(UsageError):
        stop_rule_from_args(parser.parse_args(["--until-verdict", str(base.path),
                                               "--design-rate", "0.9"]))
