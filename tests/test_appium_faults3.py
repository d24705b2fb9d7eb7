"""Issue #23 over Appium: the families of device faults that can happen through an Appium
session, played by tests/doubles/appium_lifecycle_double.py in front of a real Appium 3
server (the fake driver): a log endpoint that errors mid-launch before the app crashes,
React Native's fatal JS error read from logcat, and a locked device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.records import Outcome
from tests.doubles.appium_lifecycle_double import AppiumLifecycleDouble
from tests.doubles.appium_server import AppiumServer, appium_server, fake_caps  # noqa: F401
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S


@pytest.fixture
def caps_file(tmp_path: Path) -> Path:
    path = tmp_path / "caps.json"
    path.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": "emulator-5554"})))
    return path


def _run(double: AppiumLifecycleDouble, caps: Path, out: Path, platform: str, launches: int,
         *extra: str) -> int:
    return main(["run", "appium", "--server", double.url, "--platform", platform, "--caps",
                 str(caps), "--launches", str(launches), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--out", str(out), "--label",
                 "baseline", *extra])


# on iOS two logs are read after a death (syslog, then crashlog): an odd and an even count
# of failures end the outage on either, so the crash text may come back before the lines
@pytest.mark.parametrize("platform, failures", [("android", 6), ("ios", 5), ("ios", 6)])
def test_a_log_endpoint_that_errors_mid_launch_keeps_the_crash_that_follows(
        platform: str, failures: int, appium_server: AppiumServer, caps_file: Path,
        tmp_path: Path) -> None:
    # from the app's start the session's log reads fail (HTTP 500, the driver's proxy
    # error) a few times while the rest of the session answers; the app crashes meanwhile:
    # the crash is recorded with its class and signature once the log answers again
    double = AppiumLifecycleDouble(appium_server.url, platform=platform, script=[
        "completed", f"crash@sessions-created+logdown:{failures}", "completed"])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, platform, 3) == 0
    finally:
        double.stop()
    assert double.unused_script() == [] and double.log_failures == failures
    loaded = load_campaign(out)
    assert list(loaded.infra_errors) == []
    records = sorted(loaded.counted, key=lambda r: r.index)
    assert [(r.index, r.outcome) for r in records] == [
        (0, Outcome.COMPLETED), (1, Outcome.CRASHED), (2, Outcome.COMPLETED)]
    crash = records[1]
    assert (crash.last_phase, crash.crash_class) == ("sessions-created",
                                                     "xnnpack-allocator-uaf")
    assert crash.signature.startswith(
        "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate")


def test_react_natives_fatal_js_error_read_from_logcat_is_a_js_error(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path) -> None:
    # the FATAL EXCEPTION block of React Native 0.7x+ (`JavascriptException: Error: ...,
    # js engine: hermes, stack:`, the JS frames, a blank line, the Java frames), drained
    # from logcat over the session: its class, message and JS frames are read
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["js-fatal@sessions-created"])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "android", 1) == 0
    finally:
        double.stop()
    [fatal] = load_campaign(out).counted
    assert (fatal.outcome, fatal.crash_class) == (Outcome.CRASHED, "js-error")
    assert fatal.crash["exception"] == "com.facebook.react.common.JavascriptException"
    assert fatal.crash["message"] == "Error: Cannot read property 'dims' of undefined"
    assert [f["symbol"] for f in fatal.crash["frames"]] == ["runPipeline", "loadModels",
                                                            "anonymous"]


def test_a_locked_device_is_waited_for_with_one_line(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the iPhone is locked for 3 s from the second launch request: XCUITest's launch
    # requests fail meanwhile; the kit asks mobile: isLocked, waits, then asks again
    double = AppiumLifecycleDouble(appium_server.url, platform="ios",
                                   script=["completed", "locked:3", "crash@models-ready"])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "ios", 3) == 0
    finally:
        double.stop()
    assert double.unused_script() == []
    loaded = load_campaign(out)
    assert list(loaded.infra_errors) == []
    records = sorted(loaded.counted, key=lambda r: r.index)
    assert [(r.outcome, r.crash_class) for r in records] == [
        (Outcome.COMPLETED, None), (Outcome.CRASHED, "xnnpack-allocator-uaf"),
        (Outcome.COMPLETED, None)]
    assert capsys.readouterr().err.count("is locked: unlock the device") == 1


def test_a_device_locked_past_the_reconnect_timeout_is_an_infra_error_not_a_crash(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="ios", script=["locked:60"])
    out = tmp_path / "run"
    try:
        code = _run(double, caps_file, out, "ios", 1, "--reconnect-timeout", "1")
    finally:
        double.stop()
    loaded = load_campaign(out)
    assert code == 3 and list(loaded.counted) == []
    assert loaded.records and all("stayed locked for 1 s" in r.error for r in loaded.records)


def test_another_build_installed_over_appium_is_never_counted(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # someone installs another build on the iPhone after models-ready: the app ends with no
    # crash text; that launch is an infra error, and the campaign's app (--app) is
    # installed again before the next one
    double = AppiumLifecycleDouble(appium_server.url, platform="ios",
                                   script=["completed", "foreign@models-ready", "completed"])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "ios", 3, "--app", "/builds/ColdstartApp.ipa",
                    "--report-wait", "2") == 0
    finally:
        double.stop()
    assert double.unused_script() == []
    loaded = load_campaign(out)
    counted = sorted(loaded.counted, key=lambda r: r.index)
    assert [(r.index, r.outcome) for r in counted] == [
        (0, Outcome.COMPLETED), (1, Outcome.COMPLETED), (2, Outcome.COMPLETED)]
    [foreign] = loaded.infra_errors
    assert foreign.index == 1 and "another build of org.coldstart.app was installed during " \
        "the launch" in foreign.error
    assert double.installs == ["/builds/ColdstartApp.ipa"]
    assert "installing /builds/ColdstartApp.ipa again" in capsys.readouterr().err


def test_another_build_with_no_app_to_install_stops_the_campaign(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="ios",
                                   script=["foreign@models-ready"])
    out = tmp_path / "run"
    try:
        code = _run(double, caps_file, out, "ios", 3, "--report-wait", "2")
    finally:
        double.stop()
    assert code == 3 and double.installs == []
    loaded = load_campaign(out)
    assert list(loaded.counted) == []
    last = loaded.records[-1]
    assert last.outcome is Outcome.INFRA_ERROR and "another build of org.coldstart.app is " \
        "installed" in last.error and "remaining launches are abandoned" in last.error


def test_an_app_erased_under_appium_is_installed_again(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the simulator is erased under the running app (its apps are gone, no crash text):
    # that launch is an infra error, and the campaign's app is installed again
    double = AppiumLifecycleDouble(appium_server.url, platform="ios",
                                   script=["erase@models-ready", "completed"])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "ios", 2, "--app", "/builds/ColdstartApp.app",
                    "--report-wait", "2") == 0
    finally:
        double.stop()
    loaded = load_campaign(out)
    assert sorted((r.index, r.outcome) for r in loaded.counted) == [
        (0, Outcome.COMPLETED), (1, Outcome.COMPLETED)]
    [erased] = loaded.infra_errors
    assert "org.coldstart.app was uninstalled during the launch" in erased.error
    assert double.installs == ["/builds/ColdstartApp.app"]
    assert "org.coldstart.app is not installed: installing" in capsys.readouterr().err


def test_a_driver_that_cannot_list_apps_leaves_the_build_unchecked(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path) -> None:
    # mobile: listApps fails (a driver that lists apps on real devices only): the launches
    # go on unchecked, and a crash is still a crash
    double = AppiumLifecycleDouble(appium_server.url, platform="ios",
                                   script=["completed", "crash@models-ready"],
                                   no_list_apps="listApps is only supported on real devices")
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "ios", 2) == 0
    finally:
        double.stop()
    loaded = load_campaign(out)
    assert list(loaded.infra_errors) == []
    assert sorted((r.index, r.outcome, r.crash_class) for r in loaded.counted) == [
        (0, Outcome.COMPLETED, None), (1, Outcome.CRASHED, "xnnpack-allocator-uaf")]
    assert any(p.get("script") == "mobile: listApps" for _m, _p, p in double.calls)


@pytest.mark.parametrize("shell", [False, True], ids=["listApps-versionCode", "pm-path"])
def test_another_build_installed_over_appium_on_android_is_never_counted(
        shell: bool, appium_server: AppiumServer, caps_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # someone installs another build on the Android device after models-ready: the app ends
    # with no crash text (PACKAGE UPDATED kills it); that launch is an infra error, never a
    # crash, and the campaign's app (--app) is installed again before the next one. Without a
    # shell the driver's listApps versionCode tells it; with one, pm path's new APK path
    from tests.doubles.appium_shell_double import AppiumShellDouble

    script = ["completed", "foreign@models-ready", "completed"]
    double = (AppiumShellDouble(appium_server.url, platform="android", shell="allowed",
                                script=script) if shell else
              AppiumLifecycleDouble(appium_server.url, platform="android", script=script))
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "android", 3, "--app", "/builds/app-release.apk",
                    "--report-wait", "2", *(["--appium-shell"] if shell else [])) == 0
    finally:
        double.stop()
    assert double.unused_script() == []
    loaded = load_campaign(out)
    assert sorted((r.index, r.outcome) for r in loaded.counted) == [
        (0, Outcome.COMPLETED), (1, Outcome.COMPLETED), (2, Outcome.COMPLETED)]
    [foreign] = loaded.infra_errors
    assert foreign.index == 1 and "another build of org.coldstart.app was installed during " \
        "the launch" in foreign.error
    assert ("/base.apk" in foreign.error) is shell
    assert ("versionCode 2" in foreign.error) is not shell
    assert double.installs == ["/builds/app-release.apk"]
    assert "installing /builds/app-release.apk again" in capsys.readouterr().err
    if shell:
        assert ["pm", "path", "org.coldstart.app"] in double.shell_calls
