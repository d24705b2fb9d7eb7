"""The verdict: known values from the issue, each branch's reason, and campaign comparisons
(infra errors, scenarios, targets, devices, moved crashes, race witness)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.errors import UsageError
from kit.analysis.verdict import (HEAP_ADVICE, Verdict, VerdictSettings, compare_campaigns, decide,
                         is_event)
from tests.helpers import counts, make_campaign, record


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
    assert d.reason.startswith("the candidate still crashes with xnnpack-allocator-uaf "
                               "(failure tier: a crash) in 40/100 launches")
    assert decide(0, 100, 3, 100).verdict is Verdict.NOT_FIXED
    race = decide(1, 2, 2, 3, VerdictSettings(signature="race-witnessed", ceiling=0.02))
    assert race.verdict is Verdict.NOT_FIXED  # a witnessed race is shown, not crashed with
    assert race.reason.startswith("the candidate still shows race-witnessed (mechanism tier: "
                                  "a data race on the allocator statics) in 2/3 launches")
    assert race.tier == "mechanism" and d.tier == "failure"
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
    same = compare_campaigns(base, cand)
    assert ("both campaigns ran the same build (ort_library_sha256 abababababab...): the "
            "verdict is about nothing: the scenario and options are the same too") in same.notes
    assert same.verdict is Verdict.INCONCLUSIVE and same.decision.kind == "none"
    assert "there is no change to judge" in same.decision.reason
    other = make_campaign(tmp_path, "c3", counts("c", 0, 100),
                          build={"ort_library_sha256": "cd" * 32, "runtime": "patched"})
    assert not any("same build" in n for n in compare_campaigns(base, other).notes)
    # the same library in another program (a host workload) is another build
    prog_b = make_campaign(tmp_path, "b4", counts("b", 12, 20),
                           build={**lib, "workload": "/w/coldstart-workload"})
    prog_c = make_campaign(tmp_path, "c4", counts("c", 0, 100),
                           build={**lib, "workload": "/w/crashing_workload.py"})
    assert compare_campaigns(prog_b, prog_c).decision.kind == "build"


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
                                      "contexts": ["0x1", "0x2"] if seen else ["0x1"], "skew_us": 12.0})

    base = make_campaign(tmp_path, "b", [witnessed("b", i, i < 8) for i in range(20)] +
                         [witnessed("b", 20 + i, False, available=False) for i in range(5)])
    cand = make_campaign(tmp_path, "c", [witnessed("c", i, False) for i in range(80)])
    c = compare_campaigns(base, cand, VerdictSettings(signature="race-witnessed"))
    assert (c.baseline.events, c.baseline.eligible, c.baseline.counted) == (8, 20, 25)
    assert c.verdict is Verdict.FIXED
    assert any("5 b launches had no race witness" in n for n in c.notes)
    assert is_event(base.records[0], "race-witnessed")
    assert not is_event(base.records[0], "xnnpack-allocator-uaf")


def test_an_interrupted_campaign_is_said(tmp_path: Path) -> None:
    from kit.campaign import load_campaign
    from kit.store.store import CampaignStore
    from tests.helpers import update_meta
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
    from kit.campaign import load_campaign
    from kit.store.store import CampaignStore
    from tests.helpers import update_meta

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


def test_one_candidate_event_with_a_weak_baseline_says_what_was_seen_and_what_settles_it(
        ) -> None:
    # issue #14: 1/150 vs 1/1000 was not-fixed (its bound is 0.47%, far under the 5%
    # ceiling), while 0/1000 was inconclusive
    d = decide(1, 150, 1, 1000)
    assert d.verdict is Verdict.INCONCLUSIVE
    assert d.reason.startswith("too few launches: the candidate showed xnnpack-allocator-uaf "
                               "(failure tier: a crash) in 1/1000 launches against the "
                               "baseline's 1/150: not yet shown lower")
    assert "though its rate is below 0.473% at 95%, under the 5% ceiling" in d.reason
    assert d.needed is not None and d.needed.plan is not None
    assert "a new pair at the baseline's observed rate (0.667%) needs about 641 baseline and " \
           "1098 candidate launches" in d.advice
    assert decide(1, 150, 0, 1000).verdict is Verdict.INCONCLUSIVE
    # a candidate rate at least the baseline's is not-fixed
    assert decide(1, 150, 7, 1000).verdict is Verdict.NOT_FIXED


def test_a_p_value_a_double_cannot_hold_prints_as_a_bound() -> None:
    from kit.analysis.verdict import p_text

    d = decide(900, 900, 0, 900)
    assert d.test is not None and d.test.fisher_p == 0.0  # underflows
    assert p_text(0.0) == p_text(1e-310) == "< 1e-300" and p_text(2e-300) == "2e-300"
    assert "one-sided p = < 1e-300" in d.reason and "p = 0," not in d.reason


def test_an_injected_crash_is_never_a_positive_control(tmp_path: Path) -> None:
    # issue #13: inject=segv against a clean candidate of the same library was FIXED
    lib = {"ort_library_sha256": "ab" * 32}
    base = make_campaign(tmp_path, "b", counts("b", 20, 20, crash_class="other-native-crash"),
                         scenario="inject=segv@sessions-created", build=lib)
    cand = make_campaign(tmp_path, "c", counts("c", 0, 100), build=lib)
    for sig in ("any-crash", "other-native-crash"):
        c = compare_campaigns(base, cand, VerdictSettings(signature=sig))
        assert c.verdict is Verdict.INCONCLUSIVE
        assert c.decision.reason.startswith("the baseline's scenario injects crashes "
                                            "(segv@sessions-created)")
        assert "no positive control" in c.decision.reason
    other = make_campaign(tmp_path, "c2", counts("c2", 0, 100),
                          build={"ort_library_sha256": "cd" * 32})
    assert compare_campaigns(base, other, VerdictSettings(signature="any-crash")
                             ).verdict is Verdict.INCONCLUSIVE  # another build: the same


def test_one_build_under_two_scenarios_is_judged_as_the_scenario_change(tmp_path: Path
                                                                        ) -> None:
    lib = {"ort_library_sha256": "ab" * 32}
    base = make_campaign(tmp_path, "b", counts("b", 12, 20), build={**lib, "runtime": "a"})
    cand = make_campaign(tmp_path, "c", counts("c", 0, 100), scenario="mode=serial",
                         build={**lib, "runtime": "b"})
    c = compare_campaigns(base, cand)
    assert c.verdict is Verdict.REMOVED and c.verdict.passed
    assert c.decision.kind == "scenario"
    assert c.decision.change == "mode=concurrent -> mode=serial"
    assert c.decision.reason.startswith("the change mode=concurrent -> mode=serial removes "
                                        "xnnpack-allocator-uaf: the baseline reproduced")
    data = c.to_dict()
    assert (data["verdict"], data["kind"], data["tier"]) == ("removed", "scenario", "failure")
    still = make_campaign(tmp_path, "c2", counts("c2", 10, 20), scenario="mode=serial",
                          build=lib)
    worse = compare_campaigns(base, still)
    assert worse.verdict is Verdict.NOT_REMOVED and worse.verdict.failed
    assert worse.decision.advice == ("the change mode=concurrent -> mode=serial does not "
                                     "remove xnnpack-allocator-uaf")


def test_race_detected_counts_launches_the_detector_judged(tmp_path: Path) -> None:
    from kit.analysis.verdict import count_events, is_eligible

    def judged(label: str, i: int, on_target, *, races=None, in_extra=True):
        payload = {"tool": "tsan", "races": races if races is not None else
                   ([{"kind": "data race"}] if on_target else []), "on_target": on_target,
                   "reason": "a race on xnn_params" if on_target else "none there"}
        r = record(label, i)
        if in_extra:
            import dataclasses
            return dataclasses.replace(r, extra={"detector": payload})
        return r

    base_recs = ([judged("b", i, True) for i in range(6)] + [judged("b", 6 + i, False)
                                                            for i in range(14)]
                 + [judged("b", 20 + i, None) for i in range(4)] + [record("b", 24)])
    assert count_events(base_recs, "race-detected") == (6, 20)
    assert is_event(base_recs[0], "race-detected")
    assert not is_eligible(base_recs[20], "race-detected")  # unknown: left out
    assert not is_eligible(base_recs[24], "race-detected")  # no detector at all
    base = make_campaign(tmp_path, "b", base_recs)
    cand = make_campaign(tmp_path, "c", [judged("c", i, False) for i in range(80)])
    c = compare_campaigns(base, cand, VerdictSettings(signature="race-detected"))
    assert (c.baseline.events, c.baseline.eligible, c.baseline.counted) == (6, 20, 25)
    assert c.verdict is Verdict.FIXED and c.decision.tier == "mechanism"
    assert "race-detected (mechanism tier: a data race on the allocator statics)" in \
        c.decision.reason
    assert ("5 b launches had no race detector verdict (on_target unknown) and are left out "
            "of the race-detected rate") in c.notes
    none = make_campaign(tmp_path, "n", [record("n", i) for i in range(5)])
    empty = compare_campaigns(base, none, VerdictSettings(signature="race-detected"))
    assert empty.decision.reason == ("the candidate campaign has no launches a race detector "
                                     "judged")


def test_notes_are_capped_and_merged(tmp_path: Path) -> None:
    import dataclasses

    from kit.analysis.compare import MAX_NOTES

    base = make_campaign(tmp_path, "b", counts("b", 12, 20))
    cand = make_campaign(tmp_path, "c", counts("c", 0, 100))
    noisy = dataclasses.replace(cand, notes=[f"line {i} is binary junk" for i in range(40)]
                                + ["line 0 is binary junk"] * 5)
    notes = compare_campaigns(base, noisy).notes
    assert len(notes) == MAX_NOTES == 10
    assert notes[-1].startswith("and 31 more notes of the same kind")
    assert len(set(notes)) == len(notes)
