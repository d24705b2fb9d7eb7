"""The pytest plugin (kit/pytest_plugin.py, entry point pytest11 `coldstart`): real pytest runs
through pytest's ``pytester`` on throwaway test modules, against iOS simulators of the xcrun
double. No run names the plugin: the entry point loads it, as it does for a user."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from kit.pytest_plugin import parse_target_spec
from tests.doubles.xcrun_double import XcrunDouble
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

pytest_plugins = ("pytester",)

UDIDS = ("6F1C2A4B-1D2E-4F60-9A7B-0C1D2E3F4A5B", "7A2B3C4D-5E6F-4A1B-8C9D-0E1F2A3B4C5D")

TEST_MODULE = f'''
def test_no_uaf(coldstart):
    result = coldstart.run("candidate", launches=2, timeout_s={LAUNCH_S!r})
    result.assert_launched()
    result.assert_no_crash("xnnpack-allocator-uaf")
'''
#: pytest's own flags for every inner run (the user's plugins and cache stay out of it)
FLAGS = ("-q", "-p", "no:randomly", "-p", "no:cacheprovider")


@pytest.fixture
def double(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The xcrun double with two simulators, on PATH for the inner runs, and the test
    module in pytester's folder."""
    xd = XcrunDouble(pytester.path / "xcrun")
    for i, udid in enumerate(UDIDS):
        xd.add_simulator(udid, f"iPhone 16 #{i}")
    for key, value in xd.env().items():
        monkeypatch.setenv(key, value)
    pytester.makepyfile(test_farm=TEST_MODULE)
    yield xd
    xd.kill_apps()
    assert xd.unused_script() == [], "the test scripted launches that were never made"


def _pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*FLAGS, *args, timeout=600)  # 141 s seen loaded


def _target(double: XcrunDouble, app: Path, udid: str) -> str:
    return (f"ios-sim --udid {udid} --app {app} --diagnostic-reports {double.reports} "
            f"--report-wait {REPORT_WAIT_S:g}")


@pytest.mark.slow
def test_campaign_passes_and_writes_the_report_modules_junit(double: XcrunDouble,
                                                              pytester: pytest.Pytester) -> None:
    app = XcrunDouble.make_app(pytester.path / "ColdstartApp.app")
    reports, junit_xml = pytester.path / "reports", pytester.path / "pytest.xml"
    result = _pytest(pytester, "--coldstart-target", _target(double, app, UDIDS[0]),
                     "--coldstart-report-dir", str(reports), "--junitxml", str(junit_xml))
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)
    junit = reports / f"ios-sim-{UDIDS[0]}" / "candidate" / "junit.xml"
    suites = ET.parse(junit).getroot()
    assert suites.tag == "testsuites" and int(suites.get("failures", "0")) == 0
    assert {p.name for p in junit.parent.iterdir()} == {"summary.json", "junit.xml",
                                                       "report.html", "summary.md",
                                                       ".coldstart-report.json"}
    props = {p.get("name"): p.get("value") for p in ET.parse(junit_xml).iter("property")}
    assert props == {"coldstart_candidate_crashed": "0/2"}


@pytest.mark.slow
def test_crash_fails_the_test_with_rates_and_signature(double: XcrunDouble,
                                                        pytester: pytest.Pytester) -> None:
    app = XcrunDouble.make_app(pytester.path / "ColdstartApp.app")
    double.script(["completed", "crash@models-ready"])
    result = _pytest(pytester, "--coldstart-target", _target(double, app, UDIDS[0]))
    assert result.ret == 1
    result.assert_outcomes(failed=1)
    assert "1/2 launches crashed with xnnpack-allocator-uaf (50.0% [1.3%, 98.7%]); " \
           "candidate-00001: xnnpack-allocator-uaf at models-ready (onnxruntime::xnnpack::" \
           "(anonymous namespace)::xnn_aligned_allocate | xnn_create_fully_connected_nc_f32" \
           in result.stdout.str()


@pytest.mark.slow
def test_xdist_shards_targets_over_workers(double: XcrunDouble,
                                           pytester: pytest.Pytester) -> None:
    app = XcrunDouble.make_app(pytester.path / "ColdstartApp.app")
    out = pytester.path / "out"
    result = _pytest(pytester, "-n", "2", "--dist", "loadgroup", "-v", "-v",
                     "--coldstart-out", str(out),
                     "--coldstart-target", _target(double, app, UDIDS[0]),
                     "--coldstart-target", _target(double, app, UDIDS[1]))
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2)
    workers = {line.split("]")[0] for line in result.outlines
               if "PASSED" in line and line.startswith("[gw")}
    assert workers == {"[gw0", "[gw1"}
    devices = set()
    for meta in out.glob("*/candidate/campaign.json"):
        devices.add(meta.read_text().split('"id": "')[1].split('"')[0])
    assert devices == set(UDIDS)


def test_no_target_is_a_usage_error(double: XcrunDouble, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(*FLAGS)
    assert result.ret == 4  # pytest's usage error, in one line: nothing runs
    assert "test_farm.py::test_no_uaf needs a target: pass --coldstart-target" in \
        result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("value, said", [
    ("", "--coldstart-target must start with one of host, rn-host, android, ios-sim, ios-device, "
         "appium, not 'nothing'"),
    ("   ", "not 'nothing'"),
    ("windows --serial x", "not 'windows'"),
    ("host --runtime 'unclosed", "--coldstart-target \"host --runtime 'unclosed\": "
                                 "No closing quotation"),
])
def test_a_bad_target_is_a_one_line_usage_error(pytester: pytest.Pytester, value: str,
                                                said: str) -> None:
    """An empty, unknown or badly quoted ``--coldstart-target`` is refused as the plugin's
    other options are: pytest's usage error, one line, before collection."""
    pytester.makepyfile(test_farm=TEST_MODULE)
    result = pytester.runpytest_subprocess(*FLAGS, "--coldstart-target", value)
    assert result.ret == 4
    assert said in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_bad_target_input_fails_with_the_clis_one_line(double: XcrunDouble,
                                                        pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        *FLAGS, "--coldstart-target",
        "ios-sim --udid 00000000-0000-0000-0000-000000000000 --app /x.app")
    assert result.ret == 1
    result.assert_outcomes(failed=1)
    assert "coldstart: no simulator with UDID 00000000-0000-0000-0000-000000000000" in \
        result.stdout.str()


def test_target_ids_never_carry_urls() -> None:
    spec = parse_target_spec("appium --server https://alice:k3y@hub.example/wd/hub "
                             "--platform android --caps 'my caps.json'")
    assert spec.id == "appium-android"
    assert spec.argv[-1] == "my caps.json"
    with pytest.raises(pytest.UsageError,
                       match="must start with one of host, rn-host, android, ios-sim, ios-device, "
                             "appium, not 'windows'"):
        parse_target_spec("windows --serial x")


@pytest.mark.parametrize("option, said", [
    ("--coldstart-launches=0", "argument --coldstart-launches: 0 is out of range 1..1000000"),
    ("--coldstart-launches=-5", "argument --coldstart-launches: -5 is out of range"),
    ("--coldstart-launches=x", "argument --coldstart-launches: 'x' is not a whole number"),
    ("--coldstart-out=", "--coldstart-out is empty (give a directory)"),
    ("--coldstart-out=/dev/null", "--coldstart-out /dev/null is a character device"),
    ("--coldstart-report-dir=/dev/null/r", "--coldstart-report-dir /dev/null/r cannot be made: "
                                           "/dev/null is a character device"),
])
def test_bad_plugin_options_are_usage_errors_before_any_test(
        pytester: pytest.Pytester, option: str, said: str) -> None:
    pytester.makepyfile(test_farm=TEST_MODULE)
    result = pytester.runpytest_subprocess(*FLAGS, "--coldstart-target", "host", option)
    assert result.ret == 4  # pytest's usage error: nothing collected, nothing run
    assert said in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("kwargs, said", [
    ({"launches": 0}, "launches=0 is not a whole number in 1..1000000"),
    ({"launches": 2.5}, "launches=2.5 is not a whole number"),
    ({"launches": 3, "stage": "3:4"}, "--stage 3:4: the events R must be between 1 and the "
                                      "launches N"),
    ({"launches": 3, "stage": (1, 1, 1)}, "stage '(1, 1, 1)' is not N1:R"),
    ({"launches": 3, "stage": "5:1"}, "--stage 5:1 needs --launches above 5"),
    ({"launches": 3, "stage": "1:1", "event": "nope"}, "signature 'nope' is not a crash class"),
])
def test_bad_run_arguments_fail_the_test_in_one_line(tmp_path: Path, kwargs: dict[str, Any],
                                                     said: str) -> None:
    from kit.pytest_plugin import Coldstart

    session = Coldstart(parse_target_spec("host"), tmp_path, None, None, lambda *a: None)
    with pytest.raises(pytest.fail.Exception) as info:
        session.run("baseline", **kwargs)
    assert said in str(info.value)
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_plan_is_the_library_call_the_cli_makes(tmp_path: Path) -> None:
    """``coldstart.plan`` (the fixture's) gives what ``coldstart plan --json`` prints."""
    import json as _json

    from kit.pytest_plugin import Coldstart
    from tests.conftest import coldstart as cli

    session = Coldstart(parse_target_spec("host"), tmp_path, None, None, lambda *a: None)
    planned = session.plan(baseline_rate=0.9, ceiling=0.3)  # a quick design
    assert planned.baseline_rate == 0.9 and planned.event is None
    proc = cli("plan", "--baseline-rate", "0.9", "--ceiling", "0.3", "--json")
    assert proc.returncode == 0, proc.stderr
    assert _json.loads(proc.stdout) == _json.loads(_json.dumps(planned.plan.to_dict()))
    with pytest.raises(pytest.fail.Exception, match="plan's --alpha 1e-05 is outside"):
        session.plan(baseline_rate=0.5, alpha=1e-5)
