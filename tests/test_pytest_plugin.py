"""The pytest plugin (kit/pytest_plugin.py, entry point pytest11 `coldstart`): real pytest runs in
a subprocess on throwaway test modules, against iOS simulators of the xcrun double."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from kit.pytest_plugin import parse_target_spec
from tests.doubles.xcrun_double import XcrunDouble
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

UDIDS = ("6F1C2A4B-1D2E-4F60-9A7B-0C1D2E3F4A5B", "7A2B3C4D-5E6F-4A1B-8C9D-0E1F2A3B4C5D")

TEST_MODULE = f'''
def test_no_uaf(coldstart):
    result = coldstart.run("candidate", launches=2, timeout_s={LAUNCH_S!r})
    result.assert_launched()
    result.assert_no_crash("xnnpack-allocator-uaf")
'''


@pytest.fixture
def double(tmp_path: Path) -> Any:
    xd = XcrunDouble(tmp_path)
    for i, udid in enumerate(UDIDS):
        xd.add_simulator(udid, f"iPhone 16 #{i}")
    yield xd
    xd.kill_apps()
    assert xd.unused_script() == [], "the test scripted launches that were never made"


def _pytest(double: XcrunDouble, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **double.env()}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                           "-p", "no:cacheprovider", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)  # 141 s seen loaded


def _target(double: XcrunDouble, app: Path, udid: str) -> str:
    return (f"ios-sim --udid {udid} --app {app} --diagnostic-reports {double.reports} "
            f"--report-wait {REPORT_WAIT_S:g}")


@pytest.mark.slow
def test_campaign_passes_and_writes_the_report_modules_junit(double: XcrunDouble,
                                                              tmp_path: Path) -> None:
    app = XcrunDouble.make_app(tmp_path / "ColdstartApp.app")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_farm.py").write_text(TEST_MODULE)
    proc = _pytest(double, tmp_path / "t", "--coldstart-target", _target(double, app, UDIDS[0]),
                   "--coldstart-report-dir", str(tmp_path / "reports"),
                   "--junitxml", str(tmp_path / "pytest.xml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    junit = tmp_path / "reports" / f"ios-sim-{UDIDS[0]}" / "candidate" / "junit.xml"
    suites = ET.parse(junit).getroot()
    assert suites.tag == "testsuites" and int(suites.get("failures", "0")) == 0
    assert {p.name for p in junit.parent.iterdir()} == {"summary.json", "junit.xml",
                                                       "report.html", "summary.md",
                                                       ".coldstart-report.json"}
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "pytest.xml").iter(
        "property")}
    assert props == {"coldstart_candidate_crashed": "0/2"}


@pytest.mark.slow
def test_crash_fails_the_test_with_rates_and_signature(double: XcrunDouble,
                                                        tmp_path: Path) -> None:
    app = XcrunDouble.make_app(tmp_path / "ColdstartApp.app")
    double.script(["completed", "crash@models-ready"])
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_farm.py").write_text(TEST_MODULE)
    proc = _pytest(double, tmp_path / "t", "--coldstart-target", _target(double, app, UDIDS[0]))
    assert proc.returncode == 1
    assert "1/2 launches crashed with xnnpack-allocator-uaf (50.0% [1.3%, 98.7%]); " \
           "candidate-00001: xnnpack-allocator-uaf at models-ready (onnxruntime::xnnpack::" \
           "(anonymous namespace)::xnn_aligned_allocate | xnn_create_fully_connected_nc_f32" \
           in proc.stdout


@pytest.mark.slow
def test_xdist_shards_targets_over_workers(double: XcrunDouble, tmp_path: Path) -> None:
    app = XcrunDouble.make_app(tmp_path / "ColdstartApp.app")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_farm.py").write_text(TEST_MODULE)
    proc = _pytest(double, tmp_path / "t", "-n", "2", "--dist", "loadgroup", "-v", "-v",
                   "--coldstart-out", str(tmp_path / "out"),
                   "--coldstart-target", _target(double, app, UDIDS[0]),
                   "--coldstart-target", _target(double, app, UDIDS[1]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    workers = {line.split("]")[0] for line in proc.stdout.splitlines()
               if "PASSED" in line and line.startswith("[gw")}
    assert workers == {"[gw0", "[gw1"}
    devices = set()
    for meta in (tmp_path / "out").glob("*/candidate/campaign.json"):
        devices.add(meta.read_text().split('"id": "')[1].split('"')[0])
    assert devices == set(UDIDS)


def test_no_target_is_a_usage_error(double: XcrunDouble, tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_farm.py").write_text(TEST_MODULE)
    proc = _pytest(double, tmp_path / "t")
    assert proc.returncode == 2  # a collection error: nothing runs
    assert "test_farm.py::test_no_uaf needs a target: pass --coldstart-target" in proc.stdout


def test_bad_target_input_fails_with_the_clis_one_line(double: XcrunDouble,
                                                        tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_farm.py").write_text(TEST_MODULE)
    proc = _pytest(double, tmp_path / "t", "--coldstart-target",
                   "ios-sim --udid 00000000-0000-0000-0000-000000000000 --app /x.app")
    assert proc.returncode == 1
    assert "coldstart: no simulator with UDID 00000000-0000-0000-0000-000000000000" in \
        proc.stdout


def test_target_ids_never_carry_urls() -> None:
    spec = parse_target_spec("appium --server https://alice:k3y@hub.example/wd/hub "
                             "--platform android --caps 'my caps.json'")
    assert spec.id == "appium-android"
    assert spec.argv[-1] == "my caps.json"
    with pytest.raises(pytest.UsageError,
                       match="must start with one of host, android, ios-sim, ios-device, "
                             "appium, not 'windows'"):
        parse_target_spec("windows --serial x")
