"""Issue #23 on iOS: simulators and devices that fail the way real ones do, played by the
xcrun double (tests/doubles/xcrun_double): a ``log stream`` that ends under a crashing
launch, an erased simulator, another build installed mid-campaign, a locked device and a
devicectl console that dies under a running app. Every planned launch ends counted or the
run exits 3 saying why; no device fault is a crash; a real crash keeps its class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.records import Outcome
from tests.doubles.xcrun_double import XcrunDouble
from tests.helpers.ios import UDID, by_index, run_device, run_sim
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S




def test_a_log_stream_that_ends_under_a_crashing_launch_keeps_the_crash(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    # after sessions-created every `log stream` ends; the app crashes half a second later
    # (in inference) and ReportCrash writes its .ips
    double.script(["completed", "logend-crash@sessions-created"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 3) == 0
    counted, infra = by_index(out)
    assert infra == [] and sorted(counted) == [0, 1, 2]
    crash = counted[1]
    assert (crash.outcome, crash.crash_class) == (Outcome.CRASHED, "xnnpack-allocator-uaf")
    assert crash.signature and crash.crash["pid"] == crash.extra["pid"]
    assert {counted[0].outcome, counted[2].outcome} == {Outcome.COMPLETED}


def test_an_erased_simulator_gets_the_app_installed_again(
        double: XcrunDouble, app: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    double.script(["erase@models-ready"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 3) == 0
    counted, infra = by_index(out)
    assert sorted(counted) == [0, 1, 2]
    assert {r.outcome for r in counted.values()} == {Outcome.COMPLETED}
    assert len(infra) == 1 and "went Shutdown" in infra[0].error  # the erase itself
    assert "the app is not installed (the simulator was erased?): installing" in \
        capsys.readouterr().err


def test_another_build_installed_on_the_simulator_is_never_counted(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    # someone installs another build after models-ready: the app is terminated with no
    # crash report; that is not a crash, and the next launch runs the campaign's build
    double.script(["foreign@models-ready"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 3) == 0
    counted, infra = by_index(out)
    assert sorted(counted) == [0, 1, 2]
    assert {r.outcome for r in counted.values()} == {Outcome.COMPLETED}
    assert len(infra) == 1 and "another build of org.coldstart.app was installed" in \
        infra[0].error
    with double.state() as state:
        installed = Path(state["installed"][UDID]["org.coldstart.app"])
    assert (installed / "ColdstartApp").read_bytes() == (app / "ColdstartApp").read_bytes()


def test_an_erased_simulator_with_no_app_to_install_stops_the_campaign(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    assert main(["run", "ios-sim", "--udid", UDID, "--app", str(app), "--launches", "1",
                 "--out", str(tmp_path / "warm"), "--timeout", f"{LAUNCH_S:g}",
                 "--diagnostic-reports", str(double.reports), "--label", "warm"]) == 0
    double.script(["completed", "erase@models-ready"])
    out = tmp_path / "run"
    code = main(["run", "ios-sim", "--udid", UDID, "--bundle-id", "org.coldstart.app",
                 "--launches", "4", "--out", str(out), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--diagnostic-reports",
                 str(double.reports), "--label", "b"])
    assert code == 3
    loaded = load_campaign(out)
    assert [r.index for r in loaded.counted] == [0]
    last = loaded.records[-1]
    assert last.outcome is Outcome.INFRA_ERROR and "not installed" in last.error
    assert "remaining launches are abandoned" in last.error


def test_a_locked_device_is_waited_for_with_one_line(
        double: XcrunDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # locked for 3 s from the second launch request: the retries within it are refused
    double.script(["completed", "locked:3"])
    assert run_device(double, tmp_path, 3, "--reconnect-timeout", "30") == 0
    counted, infra = by_index(tmp_path / "run")
    assert infra == [] and sorted(counted) == [0, 1, 2]
    assert {r.outcome for r in counted.values()} == {Outcome.COMPLETED}
    err = capsys.readouterr().err
    assert err.count("is locked: unlock the device") == 1


def test_a_device_locked_past_the_reconnect_timeout_is_an_infra_error_not_a_crash(
        double: XcrunDouble, tmp_path: Path) -> None:
    double.script(["locked:60"])
    code = run_device(double, tmp_path, 1, "--reconnect-timeout", "2")
    loaded = load_campaign(tmp_path / "run")
    assert code == 3 and list(loaded.counted) == []
    assert loaded.records and all("stayed locked for 2 s" in r.error
                                  for r in loaded.records)


@pytest.mark.parametrize("at", ["done", "sessions-created"])
def test_a_console_that_dies_under_a_running_app_costs_no_report_wait(
        at: str, double: XcrunDouble, tmp_path: Path) -> None:
    # devicectl's console dies with its own error; the device stays reachable and the app
    # runs on. A long --report-wait: a kit that waited for a report would be seen waiting
    double.script([f"console-exit@{at}"])
    assert run_device(double, tmp_path, 2, "--report-wait", "60") == 0
    loaded = load_campaign(tmp_path / "run")
    first = min(loaded.records, key=lambda r: (r.index, r.attempt))
    if at == "done":  # its fate was known: done, and the app still running
        assert first.outcome is Outcome.COMPLETED
    else:
        assert first.outcome is Outcome.INFRA_ERROR and "while the app still runs" in \
            first.error
    # no report was waited for: the crash logs were listed once, before the first launch
    calls = [json.loads(line)["argv"] for line in
             (double.home / "calls.jsonl").read_text().splitlines()]
    assert sum(argv[:4] == ["devicectl", "device", "info", "files"] for argv in calls) == 1
    assert {r.outcome for r in loaded.counted} == {Outcome.COMPLETED}
    assert len(loaded.counted) == 2


def test_another_build_installed_on_the_device_is_never_counted(
        double: XcrunDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # an install over the running app terminates it with no crash report: not a crash;
    # the campaign's app is installed again before the next launch
    double.script(["completed", "foreign@models-ready"])
    assert run_device(double, tmp_path, 3, "--report-wait", "2") == 0
    counted, infra = by_index(tmp_path / "run")
    assert sorted(counted) == [0, 1, 2]
    assert {r.outcome for r in counted.values()} == {Outcome.COMPLETED}
    assert len(infra) == 1 and "installed again by someone else during the launch" in \
        infra[0].error
    assert "installing ColdstartApp.app again" in capsys.readouterr().err
    with double.state() as state:
        assert state["physical"][0]["installed"][-1].endswith("ColdstartApp.app")
        assert len(state["physical"][0]["installed"]) == 2  # the kit's, then again


# -- family 8: a device clock set back -----------------------------------------------------
def test_a_simulator_clock_set_back_keeps_the_crash_report(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    # the Mac's clock (the simulator's) goes back an hour in inference, and the app crashes:
    # its .ips is stamped an hour before the launch began, and still names the launch's pid
    double.script(["completed", "clockback@sessions-created:3600", "completed"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 3) == 0
    counted, infra = by_index(out)
    assert infra == [] and sorted(counted) == [0, 1, 2]
    crash = counted[1]
    assert (crash.outcome, crash.crash_class) == (Outcome.CRASHED, "xnnpack-allocator-uaf")
    assert crash.signature and crash.crash["pid"] == crash.extra["pid"]
    assert {counted[0].outcome, counted[2].outcome} == {Outcome.COMPLETED}
    assert double.unused_script() == []


def test_a_device_clock_set_back_keeps_the_crash_report(
        double: XcrunDouble, tmp_path: Path) -> None:
    # the device's report names are dated by its clock, set back an hour: the kit's window is
    # the names it had judged before, never a time (a regression guard: no fix was needed)
    double.script(["completed", "clockback@sessions-created:3600", "completed"])
    assert run_device(double, tmp_path, 3) == 0
    counted, infra = by_index(tmp_path / "run")
    assert infra == [] and sorted(counted) == [0, 1, 2]
    crash = counted[1]
    assert (crash.outcome, crash.crash_class) == (Outcome.CRASHED, "xnnpack-allocator-uaf")
    assert crash.crash["pid"] == crash.extra["pid"]


def test_the_report_window_moves_back_by_a_measured_clock_jump() -> None:
    from kit.targets.ios.reports import window_start

    # the wall clock advanced 5 s less than the monotonic one (set back 5 s): 5 s earlier
    assert window_start(1000.0, 50.0, wall=lambda: 1002.0, monotonic=lambda: 57.0) == 995.0
    # no jump, or a clock set forward: the launch's start
    assert window_start(1000.0, 50.0, wall=lambda: 1007.0, monotonic=lambda: 57.0) == 1000.0
    assert window_start(1000.0, 50.0, wall=lambda: 1900.0, monotonic=lambda: 57.0) == 1000.0
    assert window_start(1000.0, None) == 1000.0
