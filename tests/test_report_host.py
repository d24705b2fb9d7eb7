"""End to end on the real host target: an injected-crash campaign and a clean serial one of
the same runtime through compare and report (an injected crash is no positive control, and
one build under two scenarios is a scenario comparison), the HTML opened in headless
Chromium; ``run host --until-verdict`` stopping early against a baseline that reproduced the
target (hand-built records: the host's own race does not crash on demand); and an
interleaved pair with real launchers.

Needs the prepared host runtime (scripts/setup.sh). A segv injection is classed
``other-native-crash`` (not the #32461 signature), so that is the target here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kit import modelset
from kit.campaign import load_campaign
from kit.scenario import parse_scenario
from kit.analysis.sequential import InterleavedRule, SprtDesign
from kit.campaign.interleave import Arm, run_interleaved
from kit.analysis.summary import summarize
from kit.targets import host
from kit.analysis.verdict import VerdictSettings, count_events
from tests.helpers.report import check_html_renders_its_plots
from tests.helpers import counts, make_campaign, prepare_store

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.host, pytest.mark.slow]
SIG = "other-native-crash"


def coldstart(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})


def flat(text: str) -> str:
    """Rich output with panel borders and line wrapping folded away."""
    return " ".join(text.replace("│", " ").split())


@pytest.fixture(scope="module")
def host_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    proc = coldstart("runtime", "info")
    assert proc.returncode == 0, ("host runtime not prepared: run scripts/setup.sh "
                                  f"(or `coldstart runtime prepare`): {proc.stderr}")
    root = tmp_path_factory.mktemp("pair")
    # both serial: the real race (about 1 in 1,000 concurrent launches) cannot crash a
    # baseline launch in creation, as another class, before its injected crash
    for scenario, label in (("mode=serial&inject=segv@sessions-created", "baseline"),
                            ("mode=serial", "candidate")):
        proc = coldstart("run", "host", "--launches", "3", "--scenario", scenario, "--label",
                         label, "--out", str(root / label))
        assert proc.returncode == 0, proc.stderr
    return root / "baseline", root / "candidate"


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host baseline that reproduced the target 3 times in 3 launches, without injection
    (hand-built records, on this host: the device a host launcher records)."""
    import socket

    return make_campaign(tmp_path_factory.mktemp("control"), "baseline",
                         counts("baseline", 3, 3, crash_class=SIG,
                                device=f"host:{socket.gethostname()}")).path


def test_host_pair_through_compare_and_report(host_pair: tuple[Path, Path],
                                              tmp_path: Path) -> None:
    base, cand = host_pair
    proc = coldstart("compare", str(base), str(cand), "--event", SIG, "--out",
                     str(tmp_path / "strict"))
    assert proc.returncode == 0, proc.stderr
    # issue #13: the injected segv is the kit's own crash, and both ran one runtime: no
    # positive control, and a scenario comparison, never a bare FIXED
    text = flat(proc.stdout)
    assert "INCONCLUSIVE" in text and "The baseline's scenario injects crashes" in text
    assert "both campaigns ran the same build (ort_library_sha256" in text
    proc = coldstart("compare", str(base), str(cand), "--event", SIG, "--fail-on",
                     "inconclusive", "--no-reports")
    assert proc.returncode == 1
    out = tmp_path / "loose"
    proc = coldstart("compare", str(base), str(cand), "--event", "any-crash",
                     "--ceiling", "0.7", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FIXED" not in proc.stdout and "INCONCLUSIVE" in proc.stdout
    data = json.loads((out / "summary.json").read_text())
    comp = data["comparison"]
    assert (comp["verdict"], comp["kind"], comp["tier"]) == ("inconclusive", "scenario",
                                                             "failure")
    assert comp["change"] == "inject=segv@sessions-created -> inject=none"
    assert (comp["baseline"]["events"], comp["baseline"]["eligible"]) == (3, 3)
    assert (comp["candidate"]["events"], comp["candidate"]["eligible"]) == (0, 3)
    assert data["campaigns"][0]["crash_phases"][0]["key"] == "sessions-created"
    junit = ET.parse(out / "junit.xml").getroot()
    assert junit.get("failures") == "0"
    # the default target was never seen: no positive control
    proc = coldstart("compare", str(base), str(cand), "--no-reports")
    assert "no positive control" in flat(proc.stdout)
    proc = coldstart("report", str(base), str(cand), "--out", str(tmp_path / "report"),
                     "--quiet")
    assert proc.returncode == 0, proc.stderr
    check_html_renders_its_plots(out / "report.html", tmp_path)


def test_run_host_until_verdict_stops_when_settled(control: Path, tmp_path: Path) -> None:
    base = control
    out = tmp_path / "seq"
    proc = coldstart("run", "host", "--launches", "20", "--scenario", "mode=serial",
                     "--label", "candidate", "--out", str(out), "--until-verdict", str(base),
                     "--event", SIG, "--ceiling", "0.5")
    assert proc.returncode == 0, proc.stderr
    # design rate 0.125, exact thresholds for 20 launches: 5 clean launches settle it
    # (Wald's LR >= 20 would take ln 20 / ln(0.875/0.5) = 5.4, so 6)
    assert SprtDesign(0.5, 0.125, max_launches=20).clean_launches() == 5
    assert len(load_campaign(out).counted) == 5
    assert "until-verdict against" in proc.stderr and "exact thresholds for at most 20" in \
        proc.stderr.replace("\n", " ")
    kept = json.loads((out / "campaign.json").read_text())["until_verdict"]
    assert kept["stopped"] is True and kept["why"].startswith("fixed: 0/5")
    assert (kept["max_launches"], kept["design_rate"], kept["baseline"]) == (20, 0.125, str(base))
    assert [n for n in summarize(load_campaign(out)).notes if "stopped by the rule: fixed: 0/5"
            in n]
    proc = coldstart("compare", str(base), str(out), "--event", SIG, "--ceiling", "0.5",
                     "--no-reports")
    assert "FIXED" in proc.stdout


def test_run_host_until_verdict_refuses_too_few_launches(control: Path, host_pair: tuple[
        Path, Path], tmp_path: Path) -> None:
    base = control
    out = tmp_path / "short"
    # a 5% ceiling needs 153 launches of a fixed-size candidate at the design rate: no rule
    # of 20 launches has the default error rates (plan's rules take at most 1.3 times 153)
    proc = coldstart("run", "host", "--launches", "20", "--scenario", "mode=serial",
                     "--out", str(out), "--until-verdict", str(base), "--event", SIG)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "coldstart: error: no sequential rule of at most 20 launches has a false-fixed chance "
        "<= 0.0475 (0.95 alpha) at the ceiling 0.05 and power >= 0.8 at 0.0125 (a fixed-size "
        "candidate needs 153) (give --launches 198 as `coldstart plan` suggests, or raise "
        "--beta or --design-rate)"]
    assert not out.exists()  # refused before the campaign directory is made
    # an injected baseline is no positive control: the rule could never stop with fixed
    proc = coldstart("run", "host", "--launches", "20", "--scenario", "mode=serial",
                     "--out", str(out), "--until-verdict", str(host_pair[0]), "--event",
                     SIG, "--ceiling", "0.5")
    assert proc.returncode == 2
    assert "the baseline's scenario injects crashes (inject=segv@sessions-created)" in \
        proc.stderr
    assert not out.exists()


def test_until_verdict_is_kept_for_resume_and_refused_when_it_cannot_work(
        control: Path, tmp_path: Path) -> None:
    base = control
    out = tmp_path / "kept"
    proc = coldstart("run", "host", "--launches", "20", "--scenario", "mode=serial",
                     "--out", str(out), "--until-verdict", str(base), "--event", SIG,
                     "--ceiling", "0.5")
    assert proc.returncode == 0, proc.stderr
    assert len(load_campaign(out).counted) == 5
    # --resume alone takes the rule (and the 20 launches) from campaign.json: it is already
    # settled, so no launch is made
    proc = coldstart("run", "host", "--out", str(out), "--resume")
    assert proc.returncode == 0, proc.stderr
    assert "until-verdict: stopped: fixed: 0/5" in proc.stderr.replace("\n", " ")
    campaign = load_campaign(out)
    assert len(campaign.counted) == 5 and campaign.meta.launches == 20
    # compare without settings judges the run as its rule did (signature and ceiling kept)
    proc = coldstart("compare", str(base), str(out), "--no-reports")
    text = flat(proc.stdout)
    assert "FIXED" in text and "ceiling 50.00%" in text
    assert (f"note: --event {SIG}, --alpha 0.05, --ceiling 0.5 as in the candidate's "
            f"--until-verdict rule (campaign.json)") in text
    proc = coldstart("compare", str(base), str(out), "--no-reports", "--ceiling", "0.05")
    assert "INCONCLUSIVE" in flat(proc.stdout)  # given settings win: 0/5 is not below 5%
    assert "--ceiling 0.05 as in" not in flat(proc.stdout)
    # another rule, or other --launches, is refused: the thresholds are the campaign's
    for extra, message in ((["--until-verdict", str(base), "--event", SIG, "--ceiling",
                             "0.4"], "under another rule: its --ceiling was 0.5, now 0.4"),
                           (["--alpha", "0.01"], "under another rule: its --alpha was 0.05, "
                                                 "now 0.01"),
                           (["--launches", "40"], "with --launches 40: its rule's thresholds "
                                                  "are for 20")):
        proc = coldstart("run", "host", "--out", str(out), "--resume", *extra)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    for extra, message in (
            (["--until-verdict", ""], "--until-verdict is empty"),
            (["--ceiling", "0.01"], "--ceiling only applies with --until-verdict"),
            (["--event", SIG], "--event only applies with --until-verdict"),
            (["--until-verdict", str(base), "--event", "race-witnessed", "--no-witness"],
             "--event race-witnessed counts only launches the race witness watched")):
        proc = coldstart("run", "host", "--launches", "20", "--out", str(tmp_path / "no"),
                         *extra)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "no").exists()


def test_interleaved_pair_with_real_launchers(tmp_path: Path) -> None:
    ms = modelset.load_modelset()
    runtime = host.load_runtime(host.DEFAULT_RUNTIME)
    settings = VerdictSettings(signature=SIG, ceiling=0.5)
    rule = InterleavedRule(SprtDesign(0.5, 0.125), settings)
    arms = []
    for label, text in (("baseline", "mode=serial&inject=segv@sessions-created"),
                        ("candidate", "mode=serial")):
        scenario = parse_scenario(text)
        store, records = prepare_store(tmp_path / label, label=label, target="host",
                                       scenario=scenario, launches=12, resume=False)
        arms.append(Arm(store, records, [host.HostLauncher(runtime, ms)], label, scenario,
                        launches=12, timeout_s=30.0))
    result = run_interleaved(arms[0], arms[1], rule)  # the library: launches and counts
    assert result.why.startswith("fixed")
    # ABAB until 3/3 settles the comparison (Fisher's test and the e-value) against 0/6,
    # where a clean candidate can first end fixed; then the candidate alone up to 6
    assert count_events(result.baseline_records, SIG) == (3, 3)
    assert count_events(result.candidate_records, SIG) == (0, 6)
    order = sorted([*result.baseline_records, *result.candidate_records],
                   key=lambda r: r.started_at)
    assert [r.label[0] for r in order] == list("bcbcbcccc")
    assert len(load_campaign(tmp_path / "candidate").records) == 6


def test_compare_into_a_closed_pipe_still_writes_its_reports(host_pair: tuple[Path, Path],
                                                             tmp_path: Path) -> None:
    base, cand = host_pair  # `coldstart compare ... | head -1`
    proc = subprocess.Popen([sys.executable, "-m", "kit.cli", "compare", str(base), str(cand),
                             "--event", SIG, "--out", str(tmp_path / "r")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        ".coldstart-report.json", "junit.xml", "report.html", "summary.json", "summary.md"]
