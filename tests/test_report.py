"""Reports: summary.json, JUnit XML, Markdown and the HTML page (rendered in headless
Chromium), plus the compare / plan / report commands and their exit codes."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kit.cli import main
from kit.report import REPORT_SCHEMA_VERSION, write_reports
from kit.report.markdown import escape
from kit.analysis.verdict import Verdict, compare_campaigns
from tests.helpers import counts, make_campaign, record
from tests.helpers.report import check_html_renders_its_plots

EVIL = "<script>alert(1)</script>"
SECRET_URL = "https://alice:s3cr3tKey@hub.example.com/wd/hub?token=tok123456"


@pytest.fixture()
def pair(tmp_path: Path):
    crash = {"frames": [{"index": 0, "symbol": f"xnn_aligned_allocate{EVIL}", "offset": 4,
                         "module": "libonnxruntime.so"}]}
    base_recs = counts("baseline", 12, 20, device="emulator-5554") + [
        record("baseline", 20, "infra-error", device="emulator-5554",
               error=f"appium session failed at {SECRET_URL}")]
    base_recs[0] = record("baseline", 0, "crashed", crash_class="xnnpack-allocator-uaf",
                          signature=f"xnn_aligned_allocate | {EVIL}", crash=crash,
                          device="emulator-5554")
    cand_recs = counts("candidate", 0, 100, device="emulator-5554")
    cand_recs[0] = record("candidate", 0, "crashed", crash_class="abort",
                          device="emulator-5554", last_phase="sessions-released")
    base = make_campaign(tmp_path, "baseline", base_recs)
    cand = make_campaign(tmp_path, "candidate", cand_recs, scenario="mode=serial")
    return base, cand


def _all_text(paths: dict[str, Path]) -> str:
    return "".join(p.read_text() for p in paths.values())


def test_comparison_reports(pair, tmp_path: Path) -> None:
    base, cand = pair
    comparison = compare_campaigns(base, cand)
    assert comparison.verdict is Verdict.FIXED
    paths = write_reports(tmp_path / "out", [base, cand], comparison)
    assert sorted(p.name for p in paths.values()) == ["junit.xml", "report.html", "summary.json",
                                                      "summary.md"]
    data = json.loads(paths["json"].read_text())
    assert data["schema"] == "coldstart-report"
    assert data["schema_version"] == REPORT_SCHEMA_VERSION == 2
    assert data["kind"] == "comparison" and data["comparison"]["verdict"] == "fixed"
    assert data["comparison"]["baseline"]["events"] == 12
    assert [c["label"] for c in data["campaigns"]] == ["baseline", "candidate"]
    assert data["campaigns"][0]["infra_errors"][0]["launch_id"] == "baseline-00020"
    # credentials never reach a report
    text = _all_text(paths)
    assert "s3cr3tKey" not in text and "tok123456" not in text
    assert "hub.example.com" in text


def test_junit_has_the_verdict_checks_and_crash_classes(pair, tmp_path: Path) -> None:
    base, cand = pair
    paths = write_reports(tmp_path / "out", [base, cand], compare_campaigns(base, cand))
    root = ET.parse(paths["junit"]).getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "coldstart compare baseline vs candidate (xnnpack-allocator-uaf)", "campaign baseline",
        "campaign candidate"]
    comp = suites[0]
    cases = {c.get("name"): c for c in comp.findall("testcase")}
    assert cases["verdict"].find("failure") is None and cases["verdict"].find("skipped") is None
    # the scenarios differ: a check that did not pass, skipped since the verdict passes
    same = cases["same scenario in both campaigns"]
    assert same.find("skipped") is not None and same.find("failure") is None
    by_class = {c.get("name"): c for c in comp.findall("testcase")
                if c.get("classname") == "coldstart.crash-class"}
    assert set(by_class) == {"xnnpack-allocator-uaf", "abort"}
    assert "rose" in by_class["abort"].find("system-out").text  # 0/20 -> 1/100: not significant
    props = {p.get("name"): p.get("value") for p in comp.find("properties")}
    assert props["verdict"] == "fixed"
    assert root.get("failures") == "0"
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    lower = cases["candidate's xnnpack-allocator-uaf rate lower than the baseline's (alpha 0.05)"]
    detail = lower.find("system-out").text
    assert detail.startswith("p = ") and "stratified" not in detail  # one device: no such p


def test_junit_marks_not_fixed_and_fail_on(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 10, 20))
    cand = make_campaign(tmp_path, "c", counts("c", 9, 20))
    paths = write_reports(tmp_path / "o1", [base, cand], compare_campaigns(base, cand))
    verdict = ET.parse(paths["junit"]).getroot().find("testsuite/testcase[@name='verdict']")
    assert verdict.find("failure").get("type") == "not-fixed"
    clean = make_campaign(tmp_path, "c2", counts("c2", 0, 5))
    inconclusive = compare_campaigns(base, clean)
    assert inconclusive.verdict is Verdict.INCONCLUSIVE
    for fail_on, tag in (((), "skipped"), ((Verdict.INCONCLUSIVE,), "failure")):
        paths = write_reports(tmp_path / f"o-{tag}", [base, clean], inconclusive,
                              fail_on=fail_on)
        root = ET.parse(paths["junit"]).getroot()
        assert root.find("testsuite/testcase[@name='verdict']").find(tag) is not None
        assert (root.get("failures") != "0") == (tag == "failure")


def test_html_escapes_crash_text_and_is_self_contained(pair, tmp_path: Path) -> None:
    base, cand = pair
    paths = write_reports(tmp_path / "out", [base, cand], compare_campaigns(base, cand))
    html = paths["html"].read_text()
    assert EVIL not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert len(re.findall(r'<img class="plot" alt="[^"]+" src="data:image/png;base64,', html)) == 4
    assert not re.search(r'(src|href)="(?!data:)', html)  # nothing loaded from outside
    assert "<script" not in html


def test_markdown_is_short_and_inert(pair, tmp_path: Path) -> None:
    base, cand = pair
    paths = write_reports(tmp_path / "out", [base, cand], compare_campaigns(base, cand))
    md = paths["markdown"].read_text()
    assert md.startswith("### coldstart: ✅ **fixed** — `xnnpack-allocator-uaf`")
    assert "| `xnnpack-allocator-uaf` | 12/20 (60.0%, 95% CI 36.1%-80.9%) |" in md
    assert len(md.splitlines()) < 40
    assert escape("a|b *c* [x](y) <img>") == r"a\|b \*c\* \[x\](y) &lt;img>"


@pytest.mark.slow
def test_html_opens_in_headless_chromium_with_its_plots(pair, tmp_path: Path) -> None:
    base, cand = pair
    paths = write_reports(tmp_path / "out", [base, cand], compare_campaigns(base, cand))
    check_html_renders_its_plots(paths["html"], tmp_path)


def test_compare_command_exit_codes(pair, tmp_path: Path, capsys) -> None:
    base, cand = pair
    assert main(["compare", str(base.path), str(cand.path)]) == 0
    out = capsys.readouterr().out
    assert "FIXED" in out and "12/20" in out and "0/100" in out
    assert (cand.path / "comparison" / "report.html").exists()
    weak = make_campaign(tmp_path, "weak", counts("weak", 0, 5))
    assert main(["compare", str(base.path), str(weak.path), "--no-reports"]) == 0
    assert main(["compare", str(base.path), str(weak.path), "--fail-on", "inconclusive",
                 "--no-reports"]) == 1
    assert main(["compare", str(base.path), str(weak.path), "--fail-on", "not-fixed",
                 "--no-reports"]) == 0
    capsys.readouterr()
    assert main(["compare", str(base.path), str(tmp_path / "missing")]) == 2
    android = make_campaign(tmp_path, "droid", counts("droid", 0, 5), target="android")
    assert main(["compare", str(base.path), str(android.path)]) == 2
    with pytest.raises(SystemExit) as bad_alpha:  # argparse's own exit, with code 2
        main(["compare", str(base.path), str(cand.path), "--alpha", "2"])
    assert bad_alpha.value.code == 2
    err = capsys.readouterr().err
    assert "different" not in err and err.count("coldstart: error:") == 3
    assert main(["compare", str(base.path), str(cand.path), "--json", "--out",
                 str(tmp_path / "j")]) == 0
    assert json.loads(capsys.readouterr().out)["comparison"]["verdict"] == "fixed"


def test_plan_command(capsys) -> None:
    assert main(["plan", "--baseline-rate", "0.5", "--ceiling", "0.01", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fixed_design"]["candidate_launches"] == 299
    # Wald's LR >= 20 would take ln(20) / ln((1 - 0.0025) / (1 - 0.01)) = 396.9 clean
    # launches; the rule plan designs (a 7-launch baseline, --launches 1003: with it at most
    # 1.3 times the fixed-size design at the design rate, 4 + 773) takes 388
    # (plan may now stage the baseline: then baseline_launches is its most)
    seq = data["sequential"]
    assert seq["clean_launches"] < 397
    assert seq["max_launches"] + seq["baseline_launches"] <= 1.3 * 777
    assert seq["power"] >= seq["reference_power"] > 0.8
    assert seq["expected_launches"] <= 0.7 * 777
    assert seq["lr_upper"] < 20 and seq["lr_lower"] > 0.2
    at_ceiling = next(o for o in seq["operating"] if o["true_rate"] == 0.01)
    assert 0.045 < at_ceiling["p_fixed"] <= 0.0475
    assert main(["plan", "--baseline-rate", "0.5", "--ceiling", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "59 clean candidate launches" in out and "Sequential rule" in out
    assert main(["plan", "--baseline-rate", "0.9999"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("Baseline rate 0.9999, ceiling 0.05")  # not rounded to 1
    assert "1 baseline launch sees the target at least once with 95% probability" in out
    assert main(["plan", "--baseline-rate", "1/150", "--json"]) == 0  # a ratio, as docs quote
    assert json.loads(capsys.readouterr().out)["fixed_design"]["candidate_launches"] == 1098
    assert main(["plan", "--baseline-rate", "0.5", "--event", "race-witnessed"]) == 2
    assert "plan's --event only applies with --baseline DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["plan", "--baseline-rate", "1/0"])
    assert "'1/0' is not a number" in capsys.readouterr().err
    assert main(["plan", "--baseline-rate", "0.01", "--ceiling", "0.05",
                 "--candidate-rate", "0.02"]) == 2
    assert main(["plan", "--baseline-rate", "0.5", "--design-rate", "0.05"]) == 2
    assert "design rate 0.05 is not below the ceiling 0.05" in capsys.readouterr().err
    with pytest.raises(SystemExit) as negative:
        main(["plan", "--baseline-rate", "0.5", "--candidate-rate", "-1"])
    assert negative.value.code == 2
    assert "-1 is not a rate in [0, 1)" in capsys.readouterr().err


def test_plan_for_a_rare_baseline_sizes_the_rule_for_the_exact_test(capsys) -> None:
    # 1/150: the smallest fixed design is 641 baseline + 1098 candidate launches; a baseline
    # under the design rate leaves no power there to keep, so the rule is the reference's
    # baseline with --launches up to 1.3 times the reference: 2260 - 641 (not sized from the
    # 153 the candidate side alone needs)
    assert main(["plan", "--baseline-rate", "0.0066666667", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fixed_design"]["candidate_launches"] == 1098
    assert data["sequential"]["max_launches"] == 1619
    assert data["sequential"]["baseline_launches"] == 641
    assert main(["plan", "--baseline-rate", "0.0066666667"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "that test needs about 1098 clean candidate launches" in out
    assert "is not above the ceiling: an unchanged candidate is below the ceiling too" in out


def test_plan_from_a_baseline_that_always_crashed(tmp_path: Path, capsys) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 10, 10))
    assert main(["plan", "--baseline", str(base.path), "--json"]) == 0
    captured = capsys.readouterr()
    # planned from the 95% Clopper-Pearson lower bound of 10/10: 0.05 ** (1/10) = 0.741
    assert "lower bound, 0.741" in captured.err
    assert json.loads(captured.out)["fixed_design"]["baseline_rate"] == pytest.approx(
        0.05 ** 0.1)


def test_report_command_for_campaigns(pair, tmp_path: Path, capsys) -> None:
    base, cand = pair
    assert main(["report", str(base.path), "--event", "xnnpack-allocator-uaf"]) == 0
    out = capsys.readouterr().out
    assert "By crash class" in out and str(base.path / "report") in out
    junit = ET.parse(base.path / "report" / "junit.xml").getroot()
    failed = {c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None}
    assert failed == {"xnnpack-allocator-uaf"}  # a campaign report fails on crash classes
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "both"), "--quiet"]) == 0
    data = json.loads((tmp_path / "both" / "summary.json").read_text())
    assert data["kind"] == "campaign" and len(data["campaigns"]) == 2
    assert main(["report", str(tmp_path / "nothing")]) == 2
    # a campaign named twice is reported once
    assert main(["report", str(base.path), str(base.path), "--out", str(tmp_path / "twice"),
                 "--quiet"]) == 0
    twice = json.loads((tmp_path / "twice" / "summary.json").read_text())
    assert len(twice["campaigns"]) == 1


def test_files_where_campaign_directories_belong_are_named_as_files(pair, tmp_path: Path,
                                                                     capsys) -> None:
    base, cand = pair
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    assert main(["compare", str(afile), str(cand.path)]) == 2
    assert main(["report", str(afile)]) == 2
    assert main(["plan", "--baseline", str(afile)]) == 2
    assert main(["compare", str(base.path), str(cand.path), "--out", str(afile)]) == 2
    assert main(["compare", str(base.path), str(cand.path), "--out", str(afile / "x")]) == 2
    err = capsys.readouterr()
    lines = err.err.strip().splitlines()
    assert lines == [
        f"coldstart: error: campaign directory {afile} is a file (give the --out directories "
        f"of two `coldstart run` campaigns)",
        f"coldstart: error: {afile} is a file (give campaign directories)",
        f"coldstart: error: {afile} is a file, not a campaign directory (point at a directory "
        f"made by `coldstart run`)",
        f"coldstart: error: --out {afile} is a file (choose a directory)",
        f"coldstart: error: --out {afile / 'x'} cannot be made: {afile} is a file (choose a "
        f"directory)"]
    assert "FIXED" not in err.out  # --out is checked before the verdict is printed


def test_markdown_tells_campaigns_with_one_label_apart(tmp_path: Path) -> None:
    first = make_campaign(tmp_path / "a", "baseline", counts("baseline", 1, 5))
    second = make_campaign(tmp_path / "b", "baseline", counts("baseline", 0, 5))
    alone = make_campaign(tmp_path / "c", "patched", counts("patched", 0, 5))
    md = write_reports(tmp_path / "out", [first, second, alone])["markdown"].read_text()
    rows = [line for line in md.splitlines() if line.startswith("| baseline")
            or line.startswith("| patched")]
    assert [r.split(" | ")[0] for r in rows] == [
        f"| baseline (`{first.path}`)", f"| baseline (`{second.path}`)", "| patched"]


def test_report_out_never_overwrites_files_it_did_not_write(pair, tmp_path: Path,
                                                            capsys) -> None:
    # issue #13: report overwrote a user's files in --out
    base, cand = pair
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.md").write_text("my notes")
    assert main(["report", str(base.path), "--out", str(out), "--quiet"]) == 2
    assert (out / "summary.md").read_text() == "my notes"
    assert not (out / "summary.json").exists()
    err = capsys.readouterr().err
    assert f"--out {out} holds summary.md, which no coldstart report wrote" in err
    assert main(["compare", str(base.path), str(cand.path), "--out", str(out)]) == 2
    assert "FIXED" not in capsys.readouterr().out  # refused before the verdict
    # its own outputs from an earlier run are replaced; once changed by hand, they are not
    again = tmp_path / "again"
    assert main(["report", str(base.path), "--out", str(again), "--quiet"]) == 0
    assert main(["report", str(base.path), "--out", str(again), "--quiet"]) == 0
    assert json.loads((again / ".coldstart-report.json").read_text())["files"].keys() == {
        "summary.json", "junit.xml", "report.html", "summary.md"}
    (again / "report.html").write_text("edited")
    assert main(["report", str(base.path), "--out", str(again), "--quiet"]) == 2
    assert (again / "report.html").read_text() == "edited"


def test_plots_one_any_crash_series_from_zero_and_a_binned_timeline(tmp_path: Path) -> None:
    # issue #13: "any crash" and "any-crash" were two series, the y-axis went below 0%, and
    # the timeline was one solid block at 100k launches
    from kit.analysis.scan import scan_campaign
    from kit.analysis.summary import summarize
    from kit.analysis.verdict import VerdictSettings
    from kit.report import report_dict, timelines
    from kit.report.html_report import TIMELINE_BINS, builds_figure, timeline_figure

    base = make_campaign(tmp_path, "b", counts("b", 12, 20, crash_class="abort"))
    cand = make_campaign(tmp_path, "c", counts("c", 0, 500))
    comp = compare_campaigns(base, cand, VerdictSettings(signature="any-crash"))
    data = report_dict([summarize(base), summarize(cand)], comp)
    ax = builds_figure(data).axes[0]
    assert ax.get_legend_handles_labels()[1] == ["any-crash (target)"]
    assert ax.get_ylim()[0] == 0.0
    named = report_dict([summarize(base)], signature="abort")
    ax = builds_figure(named).axes[0]
    assert ax.get_legend_handles_labels()[1] == ["any-crash", "abort"]
    assert ax.get_ylim()[0] == 0.0
    scans = [scan_campaign(base), scan_campaign(cand)]
    fig = timeline_figure(timelines([base, cand], scans))
    ax = fig.axes[0]
    assert "520 launches: outcome shares in 120 bins" in ax.get_title()
    assert len(ax.collections) == 0  # no scatter of 520 markers
    assert 0 < len(ax.patches) <= 2 * TIMELINE_BINS * 2  # bars: two outcomes, two rows
    small = timeline_figure(timelines([base], scans[:1])).axes[0]
    assert small.get_title() == "Launch timeline" and len(small.collections) == 2


def test_every_plot_names_and_shows_the_verdicts_own_event(tmp_path: Path) -> None:
    # issue #39: a race-detected verdict whose plots said "Crash rates per build", showed 0%
    # per device for both builds and marked no launch on the timeline
    import dataclasses

    from kit.analysis.scan import scan_campaign
    from kit.analysis.summary import summarize
    from kit.analysis.verdict import VerdictSettings
    from kit.report import report_dict, timelines
    from kit.report.html_report import builds_figure, devices_figure, render, timeline_figure

    def judged(label: str, i: int, raced: bool):
        return dataclasses.replace(record(label, i), detector={
            "tool": "drd", "on_target": raced, "race_count": 4 if raced else 0,
            "on_target_race_count": 4 if raced else 0, "races": []})

    base = make_campaign(tmp_path, "baseline", [judged("baseline", i, True) for i in range(10)])
    cand = make_campaign(tmp_path, "fix", [judged("fix", i, False) for i in range(10)])
    settings = VerdictSettings(signature="race-detected", ceiling=0.3)
    comp = compare_campaigns(base, cand, settings)
    assert comp.verdict is Verdict.FIXED
    data = report_dict([summarize(base), summarize(cand)], comp)
    builds = builds_figure(data).axes[0]
    assert builds.get_title() == ("race-detected rate per build (mechanism tier), with any "
                                  "crash")
    devices = devices_figure(data).axes[0]
    assert devices.get_title() == "race-detected rate per device (mechanism tier)"
    heights = sorted(float(y) for line in devices.get_lines() for y in line.get_ydata())
    assert heights[-1] == 100.0  # the baseline's 10/10 races, not its 0% crashes
    scans = [scan_campaign(base, "race-detected"), scan_campaign(cand, "race-detected")]
    timeline = timeline_figure(timelines([base, cand], scans)).axes[0]
    assert timeline.get_title() == ("Launch timeline: 10 launches with race-detected "
                                    "(mechanism tier) marked")
    ring = timeline.collections[-1]
    assert len(ring.get_offsets()) == 10 and list(ring.get_offsets()[:, 1]) == [0.0] * 10
    page = render(data, timelines([base, cand], scans))
    assert "What the mechanism tier sees:" in page and "race-detected rate per build" in page
    assert "Crash rates per build" not in page


def test_junit_and_markdown_type_the_verdict_by_tier_and_kind(tmp_path: Path) -> None:
    lib = {"ort_library_sha256": "ab" * 32}
    base = make_campaign(tmp_path, "b", counts("b", 900, 900), build=lib)
    cand = make_campaign(tmp_path, "c", counts("c", 0, 900), scenario="mode=serial", build=lib)
    comparison = compare_campaigns(base, cand)
    assert comparison.verdict is Verdict.REMOVED
    paths = write_reports(tmp_path / "o", [base, cand], comparison)
    root = ET.parse(paths["junit"]).getroot()
    suite = root.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert (props["verdict"], props["tier"], props["kind"], props["change"]) == (
        "removed", "failure", "scenario", "mode=concurrent -> mode=serial")
    assert props["p"] == "< 1e-300"
    verdict = suite.find("testcase[@name='verdict']")
    assert verdict.find("failure") is None and verdict.find("skipped") is None
    assert verdict.find("system-out").text.startswith("removed (failure tier, scenario): the "
                                                      "change mode=concurrent -> mode=serial "
                                                      "removes")
    assert root.get("failures") == "0"
    md = paths["markdown"].read_text()
    assert md.startswith("### coldstart: ✅ **removed** — `xnnpack-allocator-uaf`")
    assert ("_failure tier (a crash); one build, the scenario changed: "
            "`mode=concurrent -> mode=serial`._") in md
    assert "One-sided exact test p = < 1e-300" in md and "p = 0 " not in md
    html = paths["html"].read_text()
    assert "(failure tier; one build, the scenario changed: mode=concurrent -&gt; mode=serial)" \
        in html
    data = json.loads(paths["json"].read_text())["comparison"]
    assert (data["verdict"], data["kind"], data["tier"]) == ("removed", "scenario", "failure")
    assert data["decision"]["p_text"] == "< 1e-300"
    still = make_campaign(tmp_path, "s", counts("s", 800, 900), scenario="mode=serial",
                          build=lib)
    paths = write_reports(tmp_path / "o2", [base, still], compare_campaigns(base, still))
    verdict = ET.parse(paths["junit"]).getroot().find("testsuite/testcase[@name='verdict']")
    assert verdict.find("failure").get("type") == "not-removed"


def test_race_detected_reaches_every_report(tmp_path: Path) -> None:
    from kit.analysis.verdict import VerdictSettings
    from tests.helpers import with_detector

    base = make_campaign(tmp_path, "b", [with_detector(record("b", i), i < 8, races=2 * (i < 8))
                                         for i in range(20)])
    cand = make_campaign(tmp_path, "c", [with_detector(record("c", i), False)
                                         for i in range(80)])
    comparison = compare_campaigns(base, cand, VerdictSettings(signature="race-detected"))
    assert comparison.verdict is Verdict.FIXED
    paths = write_reports(tmp_path / "o", [base, cand], comparison)
    data = json.loads(paths["json"].read_text())
    assert data["comparison"]["tier"] == "mechanism"
    assert data["campaigns"][0]["detector"]["detected"]["count"] == 8
    assert data["campaigns"][0]["detector"]["races_per_launch"] == pytest.approx(0.8)
    suite = ET.parse(paths["junit"]).getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["tier"] == "mechanism"
    assert suite.find("testcase[@name='race-detected']") is not None
    md = paths["markdown"].read_text()
    assert "_mechanism tier (a data race on the allocator statics); two builds._" in md
    assert "b: Race detector (tsan): 8/20 judged launches had a data race" in md
    html = paths["html"].read_text()
    assert "(mechanism tier)" in html and "Race detector (tsan): 8/20" in html


def test_piped_compare_prints_the_whole_reason_in_its_box(pair, capsys,
                                                           monkeypatch) -> None:
    # not a terminal (CI logs, `| tee`): the box wraps its text instead of cropping it
    from kit.analysis.compare import compare_campaigns as compare_them

    base, cand = pair
    for columns in ("", "80"):
        monkeypatch.setenv("COLUMNS", columns)
        assert main(["compare", str(base.path), str(cand.path), "--no-reports"]) == 0
        out = capsys.readouterr().out
        box = out[:out.index("╰")]
        text = " ".join(line.strip("│╭╮ ").strip() for line in box.splitlines()[1:])
        reason = compare_them(base, cand).decision.reason
        assert " ".join(reason.lower().split()) in " ".join(text.lower().split()), (columns, out)
        if columns:
            assert max(len(line) for line in out.splitlines()) <= 80


def test_the_old_spelling_of_event_still_works_and_says_so(pair, capsys) -> None:
    """``--event`` names the counted event; ``--signature``, its old spelling, is hidden
    from the help, does the same and says once that it is deprecated."""
    from kit.cli import build_parser

    base, cand = pair
    runs = {}
    for spelling in ("--event", "--signature"):
        assert main(["compare", str(base.path), str(cand.path), spelling, "any-crash",
                     "--no-reports", "--json"]) == 0
        runs[spelling] = capsys.readouterr()
    new, old = (json.loads(runs[s].out) for s in ("--event", "--signature"))
    assert new["signature"] == old["signature"] == "any-crash"
    assert new["comparison"]["verdict"] == old["comparison"]["verdict"]
    assert "deprecated" not in runs["--event"].err
    assert runs["--signature"].err.count("\n") == 1
    assert runs["--signature"].err == ("coldstart: --signature is deprecated, use --event (the "
                                       "same counted event)\n")
    parser = build_parser()
    args = parser.parse_args(["run", "host", "--until-verdict", "b", "--signature", "abort"])
    assert args.signature == "abort"
    capsys.readouterr()
    for command in (["compare", "--help"], ["plan", "--help"], ["run", "host", "--help"]):
        with pytest.raises(SystemExit):
            parser.parse_args(command)
        shown = capsys.readouterr().out
        assert "--event" in shown and "--signature" not in shown


def test_the_plugins_compare_takes_the_event_and_its_old_name(pair) -> None:
    from kit.analysis.summary import summarize
    from kit.pytest_plugin import CampaignResult, Coldstart

    base, cand = pair
    props: list[tuple[str, str]] = []
    fixture = Coldstart(None, Path("unused"), None, None,
                        lambda key, value: props.append((key, value)))
    results = [CampaignResult(c, summarize(c), {}) for c in (base, cand)]
    new = fixture.compare(*results, event="any-crash")
    with pytest.warns(DeprecationWarning, match="use event="):
        old = fixture.compare(*results, signature="any-crash")
    assert new.settings.signature == old.settings.signature == "any-crash"
    assert new.verdict is old.verdict
    assert props == [("coldstart_verdict", new.verdict.value)] * 2
