"""Data never drives the terminal, and odd paths never break a launch (issue #26, item 8):
control characters from records and ``campaign.json`` (OSC window titles, CSI screen
clears) are written as visible escapes; a scenario's ``#fragment`` is refused, not dropped;
a ``%`` in ``--out`` reaches valgrind as a literal (its ``--xml-file`` expands ``%p``,
``%q{VAR}`` and ``%%``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit._terminal import printable
from kit.campaign import load_campaign
from kit.targets.host.detector import record_on_target
from kit.targets.host.detector.tool import ToolInstall, wrap_command
from kit.errors import UsageError
from kit.scenario import parse_scenario
from tests.conftest import coldstart, one_line_error
from tests.helpers import make_campaign, record

OSC = "\x1b]0;owned\x07"  # sets the terminal's window title
CSI = "\x1b[2J\x1b[H"  # clears the screen
BIDI = "\u202e"  # right-to-left override: shows text reversed


def test_printable_escapes_controls_and_keeps_text() -> None:
    assert printable(f"a{OSC}b{CSI}c{BIDI}d\n\te") == (
        "a\\x1b]0;owned\\x07b\\x1b[2J\\x1b[Hc\\u202ed\n\te")
    assert printable("emulator-5554 ünïcode") == "emulator-5554 ünïcode"


def test_report_output_carries_no_escape_sequence_from_a_campaign(tmp_path: Path) -> None:
    rec = record("base", 0, "app-error", error=f"boom{OSC}", device=f"host:{CSI}x")
    campaign = make_campaign(tmp_path, "base", [rec, record("base", 1)],
                             scenario="mode=serial")
    meta = json.loads((campaign.path / "campaign.json").read_text())
    meta["scenario_description"] = f"serial{OSC}"
    meta["devices"] = [{"serial": f"dev{CSI}", "model": f"m{BIDI}"}]
    (campaign.path / "campaign.json").write_text(json.dumps(meta))
    proc = coldstart("report", str(campaign.path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    for written in ("summary.md", "junit.xml", "report.html"):
        shown += (campaign.path / "report" / written).read_text()
    assert "\x1b" not in shown and "\x07" not in shown and BIDI not in shown
    assert "\\x1b" in shown  # the device and the error are still shown, escaped


def test_printable_writes_a_lone_surrogate_as_its_byte() -> None:
    raw = b"runs/r\xff".decode("utf-8", "surrogateescape")  # a non-UTF-8 file name
    assert printable(raw) == "runs/r\\xff"
    assert printable("a\ud800b") == "a\\ud800b"
    printable(raw).encode("utf-8")  # what a report writes: it no longer raises


def test_a_report_on_a_non_utf8_path_is_written(tmp_path: Path) -> None:
    """A campaign in a folder whose name is not UTF-8 (bytes ``r\\xff``): ``report`` writes
    all four files, the path shown with the byte escaped."""
    folder = tmp_path / b"r\xff".decode("utf-8", "surrogateescape")
    campaign = make_campaign(folder, "base", [record("base", 0)], scenario="mode=serial")
    for locale in ("C.UTF-8", None):  # Python's stdout: surrogateescape, else strict
        env = {**os.environ, "PYTHONIOENCODING": "utf-8"} if locale is None else {
            **os.environ, "LC_ALL": locale}
        proc = subprocess.run([sys.executable, "-m", "kit.cli", "report", str(campaign.path)],
                              capture_output=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert b"Traceback" not in proc.stderr and b"report.html" in proc.stdout
    html = (campaign.path / "report" / "report.html").read_text()
    assert "\\xff" in html and "\udcff" not in html


def test_an_error_line_escapes_what_it_echoes(tmp_path: Path) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", 0)], scenario="mode=serial")
    meta = json.loads((campaign.path / "campaign.json").read_text())
    meta["label"] = f"base{OSC}"
    (campaign.path / "campaign.json").write_text(json.dumps(meta))
    proc = coldstart("run", "host", "--resume", "--out", str(campaign.path), "--label",
                     "base", "--no-witness", timeout=120)
    line = one_line_error(proc, "label")
    assert "\x1b" not in proc.stderr and "\\x1b" in line


@pytest.mark.parametrize("text", ["coldstart://run?mode=serial#sessions=8",
                                  "coldstart://run?mode=serial#"])
def test_a_scenario_fragment_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(UsageError, match="#fragment"):
        parse_scenario(text)


def test_a_scenario_without_fragment_still_parses() -> None:
    assert parse_scenario("coldstart://run?mode=serial&sessions=4").sessions == 4


def test_a_percent_in_the_xml_path_is_a_literal_for_valgrind(tmp_path: Path) -> None:
    install = ToolInstall(("valgrind",), {}, (), "3.24.0", "host")
    argv, _env = wrap_command(install, "drd", ["/bin/true"],
                              tmp_path / "100%p%q{HOME}%%" / "detector.xml")
    (xml,) = [a for a in argv if a.startswith("--xml-file=")]
    assert xml == f"--xml-file={tmp_path}/100%%p%%q{{HOME}}%%%%/detector.xml"


@pytest.mark.host
@pytest.mark.slow
def test_a_detector_campaign_in_an_out_with_percent_signs_completes(tmp_path: Path) -> None:
    out = tmp_path / "runs%p%q{HOME}%%" / "serial"
    proc = coldstart("run", "host", "--detector", "drd", "--launches", "1", "--out", str(out),
                     "--scenario", "mode=serial", "--label", "serial", timeout=900)
    assert proc.returncode == 0, proc.stderr
    (rec,) = load_campaign(out).records
    assert rec.outcome.value == "completed", rec.error
    assert record_on_target(rec) is False, rec.detector  # the tool ran and its XML was read
