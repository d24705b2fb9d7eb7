"""A baseline staged by design (kit.analysis.stage, --stage N:R): its exact level is the
whole procedure's, the rule and compare use it, and the loop never makes launches past a
stage it met (issue #27)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from kit.analysis.finished import max_size, operating_finished, staged_baseline_mean
from kit.analysis.sequential import StopRule, make_stop_rule, sequential_fixed
from kit.analysis.sprt import SprtDesign
from kit.analysis.stage import StageRule, parse_stage, stage_problem
from kit.analysis.summary import size_not_fixed
from kit.analysis.verdict import VerdictSettings
from kit.campaign import load_campaign
from kit.store.store import CampaignStore
from kit.campaign.loop import Arm, RetryPolicy, StagedSchedule, run_arms
from kit.scenario import parse_scenario
from kit.store.meta import StageMeta
from tests.doubles.scripted_launcher import ScriptedLauncherDouble
from tests.helpers import counts, make_campaign, prepare_store, update_meta

C, STAGE, CAP = 0.3, (2, 2, 5), 24


def _rule_fixed(design: SprtDesign, settings: VerdictSettings, x_b: int, n_b: int,
                p_c: float) -> float:
    """P(fixed) of the candidate asking the rule itself at every state (no program)."""
    rule = StopRule(design, settings, x_b, n_b)
    alive = {0: 1.0}
    fixed = 0.0
    for n in range(1, design.max_launches + 1):
        nxt: dict[int, float] = {}
        for x, pr in alive.items():
            for dx, q in ((0, 1 - p_c), (1, p_c)):
                nxt[x + dx] = nxt.get(x + dx, 0.0) + pr * q
        alive = {}
        for x, pr in nxt.items():
            stop, why = rule.decision_counts(x, n)
            if stop:
                fixed += pr if why.startswith("fixed:") else 0.0
            elif n < design.max_launches:
                alive[x] = pr
            elif sequential_fixed(x_b, n_b, x, n, settings, design):
                fixed += pr  # at --launches compare judges what is left
    return fixed


@pytest.mark.parametrize("first", [True, False])
def test_the_staged_program_matches_the_rule_asked_state_by_state(first: bool) -> None:
    settings = VerdictSettings(ceiling=C)
    n1, r, n2 = STAGE
    design = SprtDesign(C, C / 4, 0.05, 0.2, CAP, n1, first, STAGE)
    for p_b, p_c in ((0.9, C / 4), (0.2, 0.2), (0.05, 0.1)):
        want = 0.0
        b1 = stats.binom.pmf(np.arange(n1 + 1), n1, p_b)
        for j in range(n1 + 1):
            if j >= r:
                if j:
                    want += b1[j] * _rule_fixed(SprtDesign(C, C / 4, 0.05, 0.2, CAP, n1, first,
                                                           STAGE), settings, j, n1, p_c)
                continue
            more = stats.binom.pmf(np.arange(n2 - n1 + 1), n2 - n1, p_b)
            for k in range(n2 - n1 + 1):
                if j + k:
                    d2 = SprtDesign(C, C / 4, 0.05, 0.2, CAP, n2, first, STAGE)
                    want += b1[j] * more[k] * _rule_fixed(d2, settings, j + k, n2, p_c)
        got = operating_finished(design, n1, p_b, p_c).p_fixed
        assert got == pytest.approx(want, abs=1e-9)
    # one level for both sizes, its size at most 0.95 alpha
    assert max_size(design, n1, design.comparison_alpha) <= 0.0475 + 1e-12
    assert staged_baseline_mean(STAGE, 0.9) == pytest.approx(2 + 3 * (1 - 0.81))


def test_parse_stage_refuses_what_is_not_n_colon_r() -> None:
    assert parse_stage(" 12:2 ") == (12, 2)
    for bad in ("12", "2:3", "0:0", "a:b", "12:-1", "1e3:2"):
        with pytest.raises(ValueError, match="--stage"):
            parse_stage(bad)


def _staged(tmp_path: Path, name: str, records: list, planned: int, event: str = "any-crash"):
    camp = make_campaign(tmp_path, name, records)
    update_meta(CampaignStore(camp.path), launches=planned,
                stage={"launches": 6, "events": 2, "event": event})
    return load_campaign(camp.path)


def test_a_staged_baseline_made_as_declared_gets_the_procedures_level(tmp_path: Path) -> None:
    settings = VerdictSettings(signature="any-crash", ceiling=0.3)
    met = _staged(tmp_path, "met", counts("met", 3, 6), 12)
    assert size_not_fixed(met, signature="any-crash") is None
    rule = make_stop_rule(met, settings, max_launches=30)
    assert rule.design.baseline_stage == (6, 2, 12) and rule.design.finished
    assert rule.to_meta(str(met.path), None, "")["baseline_stage"] == [6, 2, 12]
    missed = _staged(tmp_path, "missed", counts("missed", 1, 6)
                     + counts("missed", 5, 6, start=6), 12)
    assert size_not_fixed(missed, signature="any-crash") is None
    rule2 = make_stop_rule(missed, settings, max_launches=30)
    assert rule2.design.baseline_stage == (6, 2, 12) and rule2.baseline_n == 12
    # the two ends of one procedure share its level
    assert rule2.design.comparison_alpha == pytest.approx(rule.design.comparison_alpha)


@pytest.mark.parametrize("records, planned, event, reason", [
    (counts("b", 3, 8), 12, "any-crash", "it met its stage (3 events in 6 launches) but went "
                                         "on to 8 launches"),
    (counts("b", 1, 6) + counts("b", 3, 3, start=6), 12, "any-crash", "it missed its stage (1 events in 6 launches) and "
                                         "made 9 of the 12 planned launches after it"),
    (counts("b", 3, 4), 12, "any-crash", "it made 4 of the 6 launches of its first stage"),
    (counts("b", 3, 6), 12, "xnnpack-allocator-uaf", "its stage counted "
                                                     "xnnpack-allocator-uaf, and this "
                                                     "comparison counts any-crash")])
def test_a_staged_baseline_not_made_as_declared_is_compared_by_the_e_value(
        tmp_path: Path, records: list, planned: int, event: str, reason: str) -> None:
    camp = _staged(tmp_path, "b", records, planned, event)
    why = size_not_fixed(camp, signature="any-crash")
    assert why is not None and why.startswith(reason)
    rule = make_stop_rule(camp, VerdictSettings(signature="any-crash", ceiling=0.3),
                          max_launches=60)
    assert not rule.design.finished and rule.not_exact == why


def _arm(tmp_path: Path, name: str, script, launches: int, stage: StageMeta):
    scenario = parse_scenario("mode=concurrent")
    store, records = prepare_store(tmp_path / name, label=name, target="host",
                                   scenario=scenario, launches=launches, resume=False)
    launchers = [ScriptedLauncherDouble(script, device=f"d{k}") for k in (1, 2, 3)]
    return Arm(store, records, launchers, name, scenario, launches, 5.0,
               RetryPolicy(backoff_s=0.0, backoff_cap_s=0.0)), launchers


def test_the_loop_stops_at_a_met_stage_even_with_launchers_in_parallel(tmp_path: Path) -> None:
    stage = StageMeta(launches=6, events=2, event="any-crash")
    arm, _ = _arm(tmp_path, "met", lambda i, a: "crashed" if i % 2 else "completed", 20, stage)
    why = run_arms([arm], StagedSchedule(StageRule(stage)))
    assert why == "met met its stage"
    assert sorted(r.index for r in arm.records) == list(range(6))
    assert stage_problem(arm.records, stage, 20, 6, "any-crash") is None
    # resumed, it makes no launch
    assert run_arms([arm], StagedSchedule(StageRule(stage))) == why and len(arm.records) == 6


def test_the_loop_goes_on_past_a_missed_stage_and_over_an_infra_error(tmp_path: Path) -> None:
    stage = StageMeta(launches=6, events=2, event="any-crash")
    # slot 2 fails every attempt: the first stage takes one more slot to be made
    script = (lambda i, a: "raise" if i == 2 else "crashed" if i in (1, 7) else "completed")
    arm, _ = _arm(tmp_path, "missed", script, 12, stage)
    run_arms([arm], StagedSchedule(StageRule(stage)))
    counted = sorted(r.index for r in arm.records if r.counted)
    assert counted == [i for i in range(12) if i != 2]
    assert not StageRule(stage).met(arm.records)


def test_plan_stages_the_baseline_where_it_saves_launches() -> None:
    from kit.analysis.plan import plan_sequential

    plan = plan_sequential(0.9, ceiling=0.3)
    ref, d = plan.reference, plan.design
    assert plan.baseline_stage is not None and d.baseline_stage is not None
    n1, r, n2 = d.baseline_stage
    assert plan.baseline_stage == (n1, r) and plan.baseline_launches == n2
    assert plan.power >= plan.reference_power
    assert n2 + plan.cap <= 1.3 * ref.total_launches
    point = operating_finished(d, n1, 0.9, d.design_rate)
    assert plan.power == pytest.approx(point.p_fixed, abs=1e-12)
    assert plan.expected_launches == pytest.approx(
        staged_baseline_mean(d.baseline_stage, 0.9) + point.expected_launches, abs=1e-9)
    # issue #27's goal, not met by a single-size baseline here (17.46 of 23)
    assert plan.expected_launches <= 0.70 * ref.total_launches
    assert max_size(d, n1, d.comparison_alpha) <= 0.0475 + 1e-12
    single = plan_sequential(0.9, ceiling=0.3, staged=False)
    assert plan.expected_launches < single.expected_launches
    assert plan.to_dict()["sequential"]["baseline_stage"] == {"launches": n1, "events": r}
