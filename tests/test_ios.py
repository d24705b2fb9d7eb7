"""iOS targets against the xcrun double (tests/doubles/xcrun_double): `coldstart run ios-sim`
and `coldstart run ios-device` end to end, with real app processes, real signals and .ips
reports written after a delay, parsed and classified by kit.crash."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from kit import crash as crashlib
from kit.campaign import load_campaign
from kit.cli import main
from kit.records import Outcome
from kit.targets import ios
from tests.doubles.xcrun_double import XcrunDouble
from tests.helpers.ios import DEVICE_UDID, UDID, run_sim
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

def test_a_crash_no_poll_saw_takes_its_pid_from_the_report(
        double: XcrunDouble, app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on a loaded machine the app can start and crash between two polls of the process
    # list: the kit then never sees its pid, and the crash report must supply it
    from kit.targets import ios

    monkeypatch.setattr(ios.Simctl, "app_pid", lambda self, udid, bundle_id: None)
    double.script(["crash@sessions-created"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 1) == 0
    record = load_campaign(out).records[0]
    assert record.outcome is Outcome.CRASHED and record.crash["pid"] is not None
    assert record.extra["pid"] == record.crash["pid"]


@pytest.mark.slow
def test_sim_campaign_gives_scripted_outcomes_phases_and_classes(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    double.script(["completed", "crash@models-ready", "crash@sessions-created",
                   "crash@inference-done", "error@models-ready", "hang@sessions-created",
                   "js-fatal@sessions-created", "wrong-output"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 8) == 0
    camp = load_campaign(out)
    got = [(r.outcome, r.last_phase, r.crash_class) for r in
           sorted(camp.records, key=lambda r: r.index)]
    js_class = camp.records[6].crash_class
    assert got == [
        (Outcome.COMPLETED, "done", None),
        (Outcome.CRASHED, "models-ready", "xnnpack-allocator-uaf"),
        (Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf"),
        (Outcome.CRASHED, "inference-done", "xnnpack-allocator-uaf"),
        (Outcome.APP_ERROR, "models-ready", None),
        (Outcome.HUNG, "sessions-created", None),
        (Outcome.CRASHED, "models-ready", js_class),
        (Outcome.WRONG_OUTPUT, "done", None),
    ]
    by_index = {r.index: r for r in camp.records}
    # the crash in creation: the report's own frames, kept raw as an artifact
    created = by_index[1]
    assert created.signal_name == "SIGSEGV"
    assert created.crash["exception"] == "EXC_BAD_ACCESS"
    assert created.crash["fault_address"] == "0x5555555555555555"
    assert created.signature.startswith(
        "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate | "
        "xnn_create_fully_connected_nc_f32")
    assert created.extra["pid"] == created.crash["pid"]
    raw = (out / f"artifacts/{created.launch_id}/crash.ips").read_text()
    assert UDID in raw and raw.splitlines()[0].startswith('{"app_name":"ColdstartApp"')
    assert f"artifacts/{created.launch_id}/crash.ips" in created.artifacts
    # the JS fatal error: RCTFatal's abort, classified by the kit's rules from its own text
    js = by_index[6]
    assert js.crash["abort_message"].startswith(
        "*** Terminating app due to uncaught exception 'RCTFatalException: Unhandled JS")
    assert js_class == crashlib.classify(crashlib.parse_text(
        (out / f"artifacts/{js.launch_id}/crash.ips").read_text(), hint="ips")).crash_class
    # completed launch: protocol fields reached the record
    done = by_index[0]
    assert done.ort_version == "1.24.3" and done.eps == ["xnnpack", "cpu"]
    assert [s.model for s in done.sessions] == ["melspectrogram", "embedding_model",
                                                 "hey_jarvis_v0.1"]
    assert done.scores == [0.998019]
    assert by_index[4].error == "InferenceSession.create rejected: no such file"
    assert by_index[5].error == f"no done within {LAUNCH_S:g} s; terminated"
    meta = json.loads((out / "campaign.json").read_text())
    assert meta["target"] == "ios-sim" and meta["build"]["bundle_id"] == "org.coldstart.app"
    assert meta["devices"] == [{"id": UDID, "kind": "ios-simulator", "name": "iPhone 16",
                                "runtime": "com.apple.CoreSimulator.SimRuntime.iOS-18-2"}]


def test_sim_boots_a_shut_down_simulator_and_poisons_through_launchd(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    with double.state() as st:
        st["devices"][next(iter(st["devices"]))][0]["state"] = "Shutdown"
    double.script(["completed"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 1, "--poison") == 0
    assert double.sim_state(UDID) == "Booted"
    record = load_campaign(out).records[0]
    assert record.outcome is Outcome.COMPLETED
    argvs = [c["argv"] for c in double.calls()]
    assert ["simctl", "bootstatus", UDID, "-b"] in argvs
    assert ["simctl", "spawn", UDID, "launchctl", "setenv", "MallocScribble", "1"] in argvs
    assert ["simctl", "spawn", UDID, "launchctl", "unsetenv", "MallocScribble"] in argvs
    # the app saw the variables (it reports them in `start`)
    log = (out / f"artifacts/{record.launch_id}/log.ndjson").read_text()
    assert '\\"MallocScribble\\":\\"1\\"' in log
    assert argvs.index(["simctl", "install", UDID, str(app)]) < next(
        i for i, a in enumerate(argvs) if a[:2] == ["simctl", "openurl"])


def test_sim_launch_arguments_carry_scenario_and_simctl_child_env(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    double.script(["crash@sessions-created"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 1, "--deliver", "args", "--poison") == 0
    record = load_campaign(out).records[0]
    assert (record.outcome, record.last_phase) == (Outcome.CRASHED, "sessions-created")
    launch = next(c for c in double.calls() if c["argv"][:2] == ["simctl", "launch"])
    # one request terminates the running app and starts it cold with the scenario
    assert launch["argv"][2:6] == ["--terminate-running-process", UDID, "org.coldstart.app",
                                   "-coldstartScenario"]
    assert launch["argv"][6] == record.scenario
    assert launch["env"]["SIMCTL_CHILD_MallocScribble"] == "1"
    assert record.crash["pid"] == record.extra["pid"]


def _counted_once_each(records: list[Any], planned: int) -> None:
    """Every planned slot has exactly one counted record; nothing else was counted."""
    counted = sorted(r.index for r in records if r.counted)
    assert counted == list(range(planned))


@pytest.mark.parametrize("script, deliver", [
    (["completed", "shutdown", "completed"], "url"),  # at the launch request
    (["completed", "shutdown:1", "completed"], "url"),  # "Shutting Down" for 1 s first
    (["completed", "shutdown@models-ready:1", "completed", "completed"], "url"),  # mid-launch
    (["completed", "shutdown@sessions-created", "completed", "completed"], "args"),
])
def test_sim_that_shuts_down_mid_campaign_gives_infra_errors_never_counted(
        double: XcrunDouble, app: Path, tmp_path: Path, script: list[str], deliver: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the simulator is booted again (waiting for boot) and every planned launch is counted
    double.script(script)
    out = tmp_path / "run"
    assert run_sim(double, app, out, 3, "--deliver", deliver, "--poison") == 0
    records = sorted(load_campaign(out).records, key=lambda r: (r.index, r.attempt))
    _counted_once_each(records, 3)
    assert all(r.outcome is not Outcome.CRASHED for r in records)
    lost = [r for r in records if r.outcome is Outcome.INFRA_ERROR]
    if "@" in script[1]:  # the launch in flight could not be observed: infra, retried
        assert [(r.index, r.attempt) for r in lost] == [(1, 1)]
        assert "went Shutting Down during the launch" in lost[0].error or \
            "went Shutdown during the launch" in lost[0].error
        assert f"artifacts/{lost[0].launch_id}/log.ndjson" in lost[0].artifacts
    else:  # the request failed on the state: the simulator was booted and asked again
        assert lost == []
    argvs = [c["argv"] for c in double.calls()]
    assert argvs.count(["simctl", "bootstatus", UDID, "-b"]) == 2  # setup, then once more
    assert double.sim_state(UDID) == "Booted"
    if deliver == "url":  # launchd lost the poison environment with the reboot: set again
        assert argvs.count(["simctl", "spawn", UDID, "launchctl", "setenv", "MallocScribble",
                            "1"]) == 2
    assert f"simulator iPhone 16 ({UDID}) is Shutdown: booting it again" in \
        capsys.readouterr().err


def test_sim_death_without_report_is_a_crash_with_a_note(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    double.script(["vanish@sessions-created"])
    out = tmp_path / "run"
    assert main(["run", "ios-sim", "--udid", UDID, "--app", str(app), "--launches", "1",
                 "--out", str(out), "--timeout", f"{LAUNCH_S:g}", "--report-wait", "0.5",
                 "--diagnostic-reports", str(double.reports)]) == 0
    record = load_campaign(out).records[0]
    assert (record.outcome, record.last_phase, record.crash) == (
        Outcome.CRASHED, "sessions-created", None)
    assert record.error == (f"the app died before done and no crash report for it appeared "
                            f"in {double.reports} within 0.5 s")


def test_diagnostic_reports_folder_from_the_environment(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ios.DIAGNOSTIC_REPORTS_ENV, str(tmp_path / "r"))
    assert ios.diagnostic_reports_dir() == tmp_path / "r"
    assert ios.diagnostic_reports_dir(str(tmp_path / "o")) == tmp_path / "o"
    monkeypatch.delenv(ios.DIAGNOSTIC_REPORTS_ENV)
    assert ios.diagnostic_reports_dir() == Path("~/Library/Logs/DiagnosticReports").expanduser()


@pytest.mark.parametrize("argv, message", [
    (["--udid", "00000000-0000-0000-0000-000000000000"],
     "coldstart: error: no simulator with UDID 00000000-0000-0000-0000-000000000000 (pick one "
     f"of: iPhone 16 ({UDID}, Booted))"),
    (["--device-name", "iPhone 99"], "coldstart: error: no simulator with name 'iPhone 99'"),
    (["--udid", UDID, "--app", "DEVICE_APP"], "is not built for the simulator "
     "(CFBundleSupportedPlatforms: iPhoneOS) (build it with `-sdk iphonesimulator`"),
    (["--udid", UDID], "coldstart: error: no app given (pass --app App.app"),
    (["--udid", "not-a-udid!"], "argument --udid: 'not-a-udid!' is not a UDID"),
])
def test_sim_bad_input_is_one_line_exit_2(double: XcrunDouble, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          argv: list[str], message: str) -> None:
    device_app = XcrunDouble.make_app(tmp_path / "dev" / "ColdstartApp.app",
                                      platform="iPhoneOS")
    argv = [str(device_app) if a == "DEVICE_APP" else a for a in argv]
    try:
        code = main(["run", "ios-sim", *argv, "--out", str(tmp_path / "o")])
    except SystemExit as exc:  # argparse's own errors exit from the parser
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not (tmp_path / "o").exists()


def test_no_xcode_tools_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code = main(["run", "ios-sim", "--udid", UDID, "--app", str(tmp_path / "x.app")])
    assert code == 2
    assert capsys.readouterr().err == (
        "coldstart: error: xcrun was not found on PATH: the Xcode tools are missing (install "
        "Xcode and run `xcode-select --install` (iOS targets need a Mac))\n")


def test_read_app_bundle_xml_plist_and_ipa(tmp_path: Path) -> None:
    import zipfile

    app = XcrunDouble.make_app(tmp_path / "A.app", binary=False, platform="iPhoneOS")
    info = ios.read_app_bundle(app)
    assert (info.bundle_id, info.executable, info.platforms, info.url_schemes) == (
        "org.coldstart.app", "ColdstartApp", ("iPhoneOS",), ("coldstart",))
    ipa = tmp_path / "A.ipa"
    with zipfile.ZipFile(ipa, "w") as archive:
        archive.write(app / "Info.plist", "Payload/A.app/Info.plist")
    assert ios.read_app_bundle(ipa).for_device
    with pytest.raises(ios.UsageError, match="is not an .app folder or an .ipa file"):
        ios.read_app_bundle(tmp_path / "missing.app")


def test_device_campaign_completed_and_crash_with_device_report(
        double: XcrunDouble, tmp_path: Path) -> None:
    double.add_device(DEVICE_UDID, "Test iPhone", "A1B2C3D4-0000-4000-8000-00000000CAFE")
    ipa_app = XcrunDouble.make_app(tmp_path / "dev" / "ColdstartApp.app", platform="iPhoneOS")
    double.script(["completed", "crash@models-ready"])
    out = tmp_path / "run"
    assert main(["run", "ios-device", "--udid", DEVICE_UDID, "--ipa", str(ipa_app),
                 "--launches", "2", "--out", str(out), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}",
                 "--poison"]) == 0
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [(r.outcome, r.last_phase, r.crash_class) for r in records] == [
        (Outcome.COMPLETED, "done", None),
        (Outcome.CRASHED, "models-ready", "xnnpack-allocator-uaf")]
    assert records[1].crash["platform"] == "ios" and records[1].crash["pid"] is not None
    launch = next(c["argv"] for c in double.calls()
                  if c["argv"][:4] == ["devicectl", "device", "process", "launch"])
    env = json.loads(launch[launch.index("--environment-variables") + 1])
    assert env == {"OS_ACTIVITY_DT_MODE": "YES", **ios.POISON_ENV}
    assert launch[launch.index("--payload-url") + 1] == records[0].scenario
    console = (out / f"artifacts/{records[0].launch_id}/console.txt").read_text()
    assert "[javascript] COLDSTART {" in console


def test_device_unknown_udid_is_exit_2(double: XcrunDouble, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "ios-device", "--udid", DEVICE_UDID, "--bundle-id",
                 "org.coldstart.app", "--out", str(tmp_path / "o")])
    assert code == 2
    assert capsys.readouterr().err.startswith(
        f"coldstart: error: no paired device with UDID {DEVICE_UDID} (connected devices: none")


def test_app_that_never_starts_is_an_infra_error_not_a_crash(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    from kit.campaign import run_campaign
    from tests.helpers import prepare_store
    from kit.scenario import Scenario

    double.script(["nostart", "completed"])
    simctl, device, bundle = ios.setup_simulator(ios.Xcrun(), udid=UDID, name=None,
                                                 app_path=str(app), bundle_id=None)
    # the app that does start must appear within start_wait_s on a loaded machine too (the
    # double's app is a fresh Python process); the one that never starts costs all of it
    start_wait_s = LAUNCH_S / 2
    launcher = ios.SimulatorLauncher(simctl, device, bundle,
                                     ios.DiagnosticReports(double.reports), report_wait_s=0.5,
                                     start_wait_s=start_wait_s)
    store, old = prepare_store(tmp_path / "run", label="b", target="ios-sim",
                               scenario=Scenario(), launches=1, resume=False)
    try:
        records = run_campaign(store, old, [launcher], label="b", scenario=Scenario(),
                               launches=1, timeout_s=LAUNCH_S, max_attempts=2)
    finally:
        launcher.close()  # stops the campaign's log stream
    assert [(r.attempt, r.outcome) for r in records] == [(1, Outcome.INFRA_ERROR),
                                                        (2, Outcome.COMPLETED)]
    assert records[0].error.startswith(f"the app did not start on simulator {UDID} within "
                                       f"{start_wait_s:g} s")
    evidence = (tmp_path / "run" / "artifacts" / records[0].launch_id / "infra-error.txt")
    assert "-- evidence --" in evidence.read_text()  # the log window the launcher saw
    assert f"artifacts/{records[0].launch_id}/log.ndjson" in records[0].artifacts


def _device(double: XcrunDouble, tmp_path: Path) -> Path:
    double.add_device(DEVICE_UDID, "Test iPhone", "A1B2C3D4-0000-4000-8000-00000000CAFE")
    return XcrunDouble.make_app(tmp_path / "dev" / "ColdstartApp.app", platform="iPhoneOS")


def _run_device(ipa: Path, out: Path, launches: int, *extra: str) -> int:
    return main(["run", "ios-device", "--udid", DEVICE_UDID, "--ipa", str(ipa), "--launches",
                 str(launches), "--out", str(out), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--reconnect-timeout", "30",
                 "--label", "baseline", *extra])


@pytest.mark.parametrize("script, style", [
    (["completed", "drop:3", "completed"], "unavailable"),  # gone at the launch request
    (["completed", "drop@models-ready:3", "completed"], "unavailable"),  # gone mid-launch
    (["completed", "drop:3", "completed"], "absent"),  # not even listed while gone
    # the console goes quiet for longer than the launch may take
    (["completed", f"mute@models-ready:{LAUNCH_S + 4:g}", "completed"], "unavailable"),
])
def test_device_that_drops_off_is_waited_for_and_every_launch_counted(
        double: XcrunDouble, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        script: list[str], style: str) -> None:
    ipa = _device(double, tmp_path)
    with double.state() as st:
        st["drop_style"] = style
    double.script(script)
    out = tmp_path / "run"
    assert _run_device(ipa, out, 3) == 0
    records = sorted(load_campaign(out).records, key=lambda r: (r.index, r.attempt))
    _counted_once_each(records, 3)
    assert [(r.index, r.attempt, r.outcome) for r in records if not r.counted] == [
        (1, 1, Outcome.INFRA_ERROR)]
    assert records[1].error.startswith(f"device Test iPhone ({DEVICE_UDID}) " + (
        "stopped answering" if script[1].startswith("mute") else "dropped off"))
    assert all(r.outcome is Outcome.COMPLETED for r in records if r.counted)
    err = capsys.readouterr().err
    assert f"ios: device Test iPhone ({DEVICE_UDID}) is not reachable: waiting up to 30 s " \
           "for it to come back" in err and "ios: device Test iPhone is back" in err


@pytest.mark.parametrize("where", ["ios-sim", "ios-device"])
def test_fatal_js_error_with_its_report_arriving_later_is_a_js_error_crash(
        double: XcrunDouble, app: Path, tmp_path: Path, where: str) -> None:
    # an `error` line, then death by SIGABRT via RCTFatal, the .ips written 2.2 s later;
    # then an `error` line with the app alive
    double.script(["error-fatal@sessions-created~2.2", "error@models-ready"])
    out = tmp_path / "run"
    if where == "ios-sim":
        assert run_sim(double, app, out, 2, "--report-wait", "8") == 0
    else:
        assert _run_device(_device(double, tmp_path), out, 2, "--report-wait", "8") == 0
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [(r.outcome, r.last_phase, r.crash_class) for r in records] == [
        (Outcome.CRASHED, "sessions-created", "js-error"),
        (Outcome.APP_ERROR, "models-ready", None)]
    fatal = records[0]
    assert fatal.error == "Unhandled JS Exception: TypeError: undefined is not a function"
    assert fatal.signal_name == "SIGABRT"
    assert fatal.crash["abort_message"].startswith(
        "*** Terminating app due to uncaught exception 'RCTFatalException: Unhandled JS")
    assert f"artifacts/{fatal.launch_id}/crash.ips" in fatal.artifacts
    assert fatal.crash["pid"] == fatal.extra["pid"]
    assert records[1].error == "InferenceSession.create rejected: no such file"


def test_inference_without_scores_or_ok_is_never_a_pass(double: XcrunDouble, app: Path,
                                                        tmp_path: Path) -> None:
    double.script(["unchecked"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 1) == 0
    record = load_campaign(out).records[0]
    assert (record.outcome, record.last_phase) == (Outcome.WRONG_OUTPUT, "done")
    assert record.error == ("inference ran but its outputs cannot be checked (no scores the "
                            "kit can check, and no ok from the app)")


@pytest.mark.parametrize("where", ["ios-sim", "ios-device"])
def test_run_json_stdout_is_json_lines(double: XcrunDouble, app: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str], where: str) -> None:
    out = tmp_path / "run"
    if where == "ios-sim":  # a reboot mid-campaign: its progress lines go to stderr
        double.script(["completed", "shutdown", "crash@models-ready"])
        assert run_sim(double, app, out, 2, "--json") == 0
    else:
        double.script(["completed", "drop:3", "crash@models-ready"])
        assert _run_device(_device(double, tmp_path), out, 2, "--json") == 0
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert [(r["index"], r["outcome"]) for r in records if r["outcome"] != "infra-error"] \
        == [(0, "completed"), (1, "crashed")]
    assert ("booting it again" if where == "ios-sim" else "is not reachable") in captured.err


def test_infra_error_keeps_the_tools_output(double: XcrunDouble, tmp_path: Path) -> None:
    # the app was never installed: openurl fails (no app handles the scheme), the
    # simulator is fine: an infra error with simctl's own words kept as the evidence
    out = tmp_path / "run"
    assert main(["run", "ios-sim", "--udid", UDID, "--bundle-id", "org.coldstart.app",
                 "--no-install", "--launches", "1", "--out", str(out), "--max-attempts", "1",
                 "--diagnostic-reports", str(double.reports)]) == 3
    record = load_campaign(out).records[0]
    assert record.outcome is Outcome.INFRA_ERROR
    assert record.error.startswith("`xcrun simctl openurl` failed: Simulator device failed "
                                   "to open coldstart://run?id=")
    assert record.wall_ms > 0
    evidence = (out / f"artifacts/{record.launch_id}/infra-error.txt").read_text()
    assert f"$ xcrun simctl openurl {UDID} 'coldstart://run?id=baseline-00000" not in evidence
    assert f"$ xcrun simctl openurl {UDID} 'coldstart://run?id={record.launch_id}" in evidence
    assert "(domain=NSOSStatusErrorDomain, code=-10814)" in evidence


def test_process_watch_sees_the_end_of_a_process_that_is_not_its_child() -> None:
    import subprocess
    import threading

    from kit.targets.ios.procwatch import ProcessWatch

    # a grandchild, as a simulator's app is to the kit (launchd_sim starts it)
    out = subprocess.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"],
                         capture_output=True, text=True, check=True).stdout
    pid = int(out.strip())
    woken = threading.Event()
    watch = ProcessWatch.start(pid, woken.set)
    assert watch is not None and not watch.exited.is_set()
    os.kill(pid, 9)
    assert woken.wait(30) and watch.exited.is_set()
    watch.stop()
    gone = ProcessWatch.start(pid, lambda: None)  # already ended (reaped or a zombie)
    assert gone is not None and gone.exited.wait(30)
    gone.stop()


@pytest.mark.parametrize("source", ["none", "invisible"])
def test_sim_without_process_exit_events_asks_launchctl(
        double: XcrunDouble, app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        source: str) -> None:
    # no process-exit event on this host ("none"), or the app's pid is not visible from it
    # ("invisible": the watch ends at once while the simulator still runs the app)
    from kit.targets.ios import simulator

    class Gone:
        exited = threading.Event()
        exited.set()

        def stop(self) -> None:
            pass

    monkeypatch.setattr(simulator.ProcessWatch, "start", staticmethod(
        lambda pid, on_exit: None if source == "none" else Gone()))
    double.script(["crash@models-ready", "completed"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 2) == 0
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [(r.outcome, r.last_phase, r.crash_class) for r in records] == [
        (Outcome.CRASHED, "models-ready", "xnnpack-allocator-uaf"),
        (Outcome.COMPLETED, "done", None)]
    assert ["simctl", "spawn", UDID, "launchctl", "list"] in [c["argv"]
                                                              for c in double.calls()]


def test_sim_app_that_exits_during_its_launch_request_with_a_report_is_a_crash(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    # the app aborts before its first line (e.g. a framework that does not load): simctl
    # launch fails with FBProcessExit, and ReportCrash writes the app's report. That is the
    # app's crash, counted, not an infra error retried until the campaign gives up
    double.script(["completed", "launch-exit", "completed"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 3, "--deliver", "args") == 0
    assert double.unused_script() == []
    records = sorted(load_campaign(out).records, key=lambda r: (r.index, r.attempt))
    assert [(r.index, r.attempt, r.outcome) for r in records] == [
        (0, 1, Outcome.COMPLETED), (1, 1, Outcome.CRASHED), (2, 1, Outcome.COMPLETED)]
    _counted_once_each(records, 3)
    crashed = records[1]
    assert crashed.last_phase is None
    assert crashed.crash is not None and crashed.extra["pid"] == crashed.crash["pid"]
    assert f"artifacts/{crashed.launch_id}/simctl-launch.txt" in crashed.artifacts
    kept = (out / "artifacts" / crashed.launch_id / "simctl-launch.txt").read_text()
    assert "(domain=FBProcessExit, code=128)" in kept


def test_sim_launch_request_that_fails_with_no_report_stays_an_infra_error(
        double: XcrunDouble, tmp_path: Path) -> None:
    # an app that is not installed: FBSOpenApplicationServiceErrorDomain code=4 and no
    # report; never a crash
    out = tmp_path / "run"
    assert main(["run", "ios-sim", "--udid", UDID, "--bundle-id", "org.coldstart.app",
                 "--no-install", "--deliver", "args", "--launches", "1", "--out", str(out),
                 "--max-attempts", "1", "--report-wait", "1",
                 "--diagnostic-reports", str(double.reports)]) == 3
    record = load_campaign(out).records[0]
    assert record.outcome is Outcome.INFRA_ERROR and record.crash is None
    assert "The request to open \"org.coldstart.app\" failed." in record.error
