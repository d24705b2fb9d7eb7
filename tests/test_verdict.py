"""The verdict: known values from the issue, each branch's reason, and campaign comparisons
(infra errors, scenarios, targets, devices, moved crashes, race witness)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.errors import UsageError
from kit.analysis.verdict import (HEAP_ADVICE, Verdict, VerdictSettings, compare_campaigns, decide,
                         is_target)
from tests.test_summary import counts, make_campaign, record


def test_12_of_20_vs_0_of_100_is_fixed() -> None:
    d = decide(12, 20, 0, 100)
    assert d.verdict is Verdict.FIXED
    assert d.test is not None and d.test.fisher_p == pytest.approx(1.2e-11, rel=0.01)
    assert d.candidate_upper == pytest.approx(0.0295, abs=1e-4)
    assert "positive control" in d.reason and "under the 5% ceiling" in d.reason
    assert d.advice is None


def test_1_of_150_vs_0_of_150_is_inconclusive_with_launches_needed() -> None:
    d = decide(1, 150, 0, 150)
    assert d.verdict is Verdict.INCONCLUSIVE
    assert d.test is not None and d.test.fisher_p == pytest.approx(0.5)
    assert d.reason.startswith("too few launches")
    # Fisher's p with one event in all is 150 / (300 + m): <= 0.05 from m = 2700
    assert d.needed is not None and d.needed.candidate_more == 2700
    assert "2700 more candidate launches" in d.advice


def test_0_of_300_vs_0_of_300_is_inconclusive_for_want_of_a_positive_control() -> None:
    d = decide(0, 300, 0, 300)
    assert d.verdict is Verdict.INCONCLUSIVE
    assert "no positive control" in d.reason
    assert d.advice.startswith(HEAP_ADVICE)
    assert "unlikely to help" in d.advice
    few = decide(0, 3, 0, 3)
    assert "too few launches to rule out a rarer crash" in few.advice


def test_candidate_still_crashing_at_a_rate_not_shown_lower_is_not_fixed() -> None:
    d = decide(50, 100, 40, 100)
    assert d.verdict is Verdict.NOT_FIXED
    assert "still crashes with xnnpack-allocator-uaf in 40/100" in d.reason
    assert decide(0, 100, 3, 100).verdict is Verdict.NOT_FIXED
    race = decide(1, 1, 1, 3, VerdictSettings(signature="race-witnessed", ceiling=0.02))
    assert race.verdict is Verdict.NOT_FIXED  # a witnessed race is shown, not crashed with
    assert race.reason.startswith("the candidate still shows race-witnessed in 1/3 launches")
    assert race.advice == ("the candidate does not remove the race: check that it contains the "
                           "fix (build provenance)")  # no crash stacks to look at


def test_reduced_but_above_the_ceiling_is_not_fixed() -> None:
    d = decide(50, 100, 20, 100)
    assert d.verdict is Verdict.NOT_FIXED
    assert "reduced, not removed" in d.reason


def test_lower_but_not_bounded_below_the_ceiling_is_inconclusive() -> None:
    d = decide(3, 3, 0, 3)
    assert d.verdict is Verdict.INCONCLUSIVE
    assert "not under the 5% ceiling" in d.reason
    assert d.needed is not None and d.needed.candidate_more == 59 - 3
    loose = decide(3, 3, 0, 3, VerdictSettings(ceiling=0.7))
    assert loose.verdict is Verdict.FIXED


def test_one_candidate_crash_can_still_be_fixed_below_the_ceiling() -> None:
    d = decide(30, 100, 1, 100)
    assert d.verdict is Verdict.FIXED and d.candidate_upper < 0.05


def test_empty_campaign_is_inconclusive() -> None:
    d = decide(0, 0, 0, 10)
    assert d.verdict is Verdict.INCONCLUSIVE and "baseline campaign has no counted" in d.reason


@pytest.mark.parametrize("kwargs", [dict(alpha=0), dict(ceiling=1.5), dict(signature="Bad Sig"),
                                    dict(signature="other-native-crsh")])
def test_bad_settings_are_usage_errors(kwargs: dict) -> None:
    with pytest.raises(UsageError):
        VerdictSettings(**kwargs)


def test_compare_campaigns_leaves_infra_errors_out(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "baseline", counts("baseline", 12, 20) + [
        record("baseline", 20 + i, "infra-error", error="adb offline") for i in range(5)])
    cand = make_campaign(tmp_path, "candidate", counts("candidate", 0, 100))
    c = compare_campaigns(base, cand)
    assert c.verdict is Verdict.FIXED
    assert (c.baseline.events, c.baseline.eligible, c.baseline.infra_errors) == (12, 20, 5)
    assert c.notes == ()
    assert c.devices == () and c.stratified_p is None
    assert c.to_dict()["verdict"] == "fixed"


def test_different_scenarios_are_said(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 12, 20), scenario="mode=concurrent")
    cand = make_campaign(tmp_path, "c", counts("c", 0, 100), scenario="mode=serial")
    c = compare_campaigns(base, cand)
    assert any("different scenarios" in n and "serial" in n for n in c.notes)


def test_same_build_provenance_is_said(tmp_path: Path) -> None:
    build = {"app": "ColdstartApp.app", "bundle_id": "org.coldstart.app"}
    base = make_campaign(tmp_path, "b", counts("b", 12, 20), build=build)
    cand = make_campaign(tmp_path, "c", counts("c", 0, 100), build=build)
    assert any("same build provenance" in n for n in compare_campaigns(base, cand).notes)
    # two host runtimes of one library are one build, whatever their names
    lib = {"ort_library_sha256": "ab" * 32}
    base = make_campaign(tmp_path, "b2", counts("b", 12, 20), build={**lib, "runtime": "debian"})
    cand = make_campaign(tmp_path, "c2", counts("c", 0, 100), build={**lib, "runtime": "patched"})
    assert ("both campaigns ran the same build (ort_library_sha256 abababababab...): check "
            "that the candidate really is a different build") in compare_campaigns(base, cand).notes
    other = make_campaign(tmp_path, "c3", counts("c", 0, 100),
                          build={"ort_library_sha256": "cd" * 32, "runtime": "patched"})
    assert not any("same build" in n for n in compare_campaigns(base, other).notes)


def test_different_targets_or_the_same_campaign_are_refused(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 3, 5))
    other = make_campaign(tmp_path, "c", counts("c", 0, 5), target="android")
    with pytest.raises(UsageError, match="target"):
        compare_campaigns(base, other)
    with pytest.raises(UsageError, match="same campaign"):
        compare_campaigns(base, base)


def test_moved_crashes_are_reported(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 12, 40) + [
        record("b", 40, "crashed", crash_class="abort")])
    cand_recs = counts("c", 0, 40)
    cand_recs[:10] = [record("c", i, "crashed", crash_class="other-native-crash")
                      for i in range(10)]
    cand_recs[10] = record("c", 10, "hung")
    cand = make_campaign(tmp_path, "c", cand_recs)
    c = compare_campaigns(base, cand)
    moved = {m.key: m for m in c.moved}
    assert set(moved) == {"other-native-crash", "hung"}
    assert moved["other-native-crash"].significant
    assert (moved["other-native-crash"].candidate.count, moved["other-native-crash"].baseline.count
            ) == (10, 0)
    assert not moved["hung"].significant
    assert moved["other-native-crash"].p_holm >= moved["other-native-crash"].p


def test_several_devices_use_the_stratified_test(tmp_path: Path) -> None:
    # the baseline ran only on a crashy device, the candidate only on a quiet one
    base = make_campaign(tmp_path, "b", counts("b", 30, 60, device="emulator-1"))
    cand = make_campaign(tmp_path, "c", counts("c", 0, 100, device="emulator-2"))
    c = compare_campaigns(base, cand)
    assert c.stratified_p == 1.0
    assert c.verdict is Verdict.INCONCLUSIVE
    assert any("no device ran both builds" in n for n in c.notes)
    assert [d.device for d in c.devices] == ["emulator-1", "emulator-2"]
    # both builds on both devices: the stratified test decides, and it is fixed
    base2 = make_campaign(tmp_path, "b2", counts("b2", 10, 30, device="d1") +
                          counts("b2", 8, 30, device="d2", start=30))
    cand2 = make_campaign(tmp_path, "c2", counts("c2", 0, 60, device="d1") +
                          counts("c2", 0, 60, device="d2", start=60))
    c2 = compare_campaigns(base2, cand2)
    assert c2.verdict is Verdict.FIXED
    assert c2.stratified_p is not None and c2.stratified_p < 1e-6
    assert c2.decision.p == c2.stratified_p
    assert all(d.fisher_p is not None and d.fisher_p < 0.01 for d in c2.devices)


def test_race_witnessed_target_counts_launches_with_a_witness(tmp_path: Path) -> None:
    def witnessed(label: str, i: int, seen: bool, available: bool = True):
        return record(label, i, race={"witnessed": seen, "available": available,
                                      "contexts": [1, 2] if seen else [1], "skew_us": 12.0})

    base = make_campaign(tmp_path, "b", [witnessed("b", i, i < 8) for i in range(20)] +
                         [witnessed("b", 20 + i, False, available=False) for i in range(5)])
    cand = make_campaign(tmp_path, "c", [witnessed("c", i, False) for i in range(80)])
    c = compare_campaigns(base, cand, VerdictSettings(signature="race-witnessed"))
    assert (c.baseline.events, c.baseline.eligible, c.baseline.counted) == (8, 20, 25)
    assert c.verdict is Verdict.FIXED
    assert any("5 b launches had no race witness" in n for n in c.notes)
    assert is_target(base.records[0], "race-witnessed")
    assert not is_target(base.records[0], "xnnpack-allocator-uaf")


def test_an_interrupted_campaign_is_said(tmp_path: Path) -> None:
    from kit.campaign import CampaignStore, load_campaign, update_meta
    from kit.analysis.summary import summarize

    base = make_campaign(tmp_path, "b", counts("b", 12, 20))
    cand = make_campaign(tmp_path, "c", counts("c", 0, 3))
    update_meta(CampaignStore(cand.path), launches=30)
    cand = load_campaign(cand.path)
    note = ("the candidate campaign made 3 of its 30 planned launches (interrupted: finish it "
            "with --resume)")
    assert note in compare_campaigns(base, cand).notes
    assert summarize(cand).notes[-1] == "this" + note[len("the candidate"):]
    assert not any("planned launches" in n for n in summarize(base).notes)
    assert summarize(cand).unfinished == summarize(cand).notes[-1]
    from kit.report import write_reports
    import xml.etree.ElementTree as ET

    junit = ET.parse(write_reports(tmp_path / "r", [cand])["junit"]).getroot()
    case = junit.find("testsuite/testcase[@name='finished (every planned launch made, or "
                      "ended by its rule)']")
    assert case is not None and case.find("failure") is not None
    # a run that ended under its sequential rule is finished, settled or not
    for stopped in (True, False):
        update_meta(CampaignStore(cand.path), until_verdict={"stopped": stopped, "why": "w"})
        assert note not in compare_campaigns(base, load_campaign(cand.path)).notes


def test_different_launch_options_are_said(tmp_path: Path) -> None:
    from kit.campaign import CampaignStore, load_campaign, update_meta

    base = make_campaign(tmp_path, "b", counts("b", 12, 20))
    cand = make_campaign(tmp_path, "c", counts("c", 0, 100))
    update_meta(CampaignStore(base.path), options={"poison": None, "timeout_s": 30,
                                                   "witness": "on", "model_set": "a1"})
    update_meta(CampaignStore(cand.path), options={"poison": "glibc", "timeout_s": 60,
                                                   "witness": "on", "model_set": "a1"})
    notes = compare_campaigns(load_campaign(base.path), load_campaign(cand.path)).notes
    assert ("the campaigns ran with different launch options (poison: baseline None, "
            "candidate 'glibc'), so the verdict compares the options as well as the builds"
            ) in notes  # a timeout is not a launch option that changes what a launch does


def test_a_p_value_just_under_alpha_does_not_read_as_alpha() -> None:
    from kit.analysis.verdict import p_text

    assert (p_text(0.04974, 0.05), p_text(0.016, 0.05), p_text(0.05, 0.05)) == (
        "0.04974", "0.016", "0.05")
    assert p_text(0.0496) == "0.05"  # without alpha: two digits


def test_a_build_that_never_creates_its_sessions_is_not_fixed(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 12, 20))
    dead = [record("c", i, "crashed", crash_class="abort", last_phase="start")
            for i in range(35)]
    c = compare_campaigns(base, make_campaign(tmp_path, "c", dead))
    # aborting at start, it never reached the phases where the target crash happens
    assert c.verdict is Verdict.INCONCLUSIVE and c.candidate.eligible == 0
    assert c.decision.reason == ("the candidate campaign has no counted launches that reached "
                                 "session creation")
    assert ("35 c launches ended before creating sessions (they cannot show it) and are left "
            "out of the xnnpack-allocator-uaf rate") in c.notes
    late = [record("c", i, "crashed", crash_class="abort", last_phase="inference-done")
            for i in range(35)]  # reached creation: an abort later counts as a launch
    assert compare_campaigns(base, make_campaign(tmp_path, "c2", late)).candidate.eligible == 35
