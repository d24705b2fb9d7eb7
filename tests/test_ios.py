"""iOS targets against the xcrun double (tests/doubles/xcrun_double): `coldstart run ios-sim`
and `coldstart run ios-device` end to end, with real app processes, real signals and .ips
reports written after a delay, parsed and classified by kit.crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit import crash as crashlib
from kit.campaign import load_campaign
from kit.cli import main
from kit.records import Outcome
from kit.targets import ios
from tests.doubles.xcrun_double import XcrunDouble
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

UDID = "6F1C2A4B-1D2E-4F60-9A7B-0C1D2E3F4A5B"
DEVICE_UDID = "00008110-001A2B3C4D5E801E"


@pytest.fixture
def double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    xd = XcrunDouble(tmp_path)
    xd.add_simulator(UDID, "iPhone 16")
    for key, value in xd.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv(ios.DIAGNOSTIC_REPORTS_ENV, raising=False)
    yield xd
    xd.kill_apps()


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return XcrunDouble.make_app(tmp_path / "build" / "ColdstartApp.app")


def _run_sim(double: XcrunDouble, app: Path, out: Path, launches: int, *extra: str) -> int:
    return main(["run", "ios-sim", "--udid", UDID, "--app", str(app), "--launches",
                 str(launches), "--out", str(out), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--diagnostic-reports",
                 str(double.reports), "--label", "baseline", *extra])


def test_a_crash_no_poll_saw_takes_its_pid_from_the_report(
        double: XcrunDouble, app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on a loaded machine the app can start and crash between two polls of the process
    # list: the kit then never sees its pid, and the crash report must supply it
    from kit.targets import ios

    monkeypatch.setattr(ios.Simctl, "app_pid", lambda self, udid, bundle_id: None)
    double.script(["crash@sessions-created"])
    out = tmp_path / "run"
    assert _run_sim(double, app, out, 1) == 0
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
    assert _run_sim(double, app, out, 8) == 0
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
    assert _run_sim(double, app, out, 1, "--poison") == 0
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
    assert _run_sim(double, app, out, 1, "--deliver", "args", "--poison") == 0
    record = load_campaign(out).records[0]
    assert (record.outcome, record.last_phase) == (Outcome.CRASHED, "sessions-created")
    launch = next(c for c in double.calls() if c["argv"][:2] == ["simctl", "launch"])
    assert launch["argv"][2:5] == [UDID, "org.coldstart.app", "-coldstartScenario"]
    assert launch["argv"][5] == record.scenario
    assert launch["env"]["SIMCTL_CHILD_MallocScribble"] == "1"
    assert record.crash["pid"] == record.extra["pid"]


def test_sim_that_shuts_down_mid_campaign_gives_infra_errors_never_counted(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    double.script(["completed", "shutdown"])
    out = tmp_path / "run"
    assert _run_sim(double, app, out, 2, "--max-attempts", "2") == 0
    records = sorted(load_campaign(out).records, key=lambda r: (r.index, r.attempt))
    assert [(r.index, r.attempt, r.outcome) for r in records] == [
        (0, 1, Outcome.COMPLETED), (1, 1, Outcome.INFRA_ERROR), (1, 2, Outcome.INFRA_ERROR)]
    assert "Unable to lookup in current state: Shutdown" in records[1].error


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
    from kit.campaign import prepare_store, run_campaign
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
    records = run_campaign(store, old, [launcher], label="b", scenario=Scenario(),
                           launches=1, timeout_s=LAUNCH_S, max_attempts=2)
    assert [(r.attempt, r.outcome) for r in records] == [(1, Outcome.INFRA_ERROR),
                                                        (2, Outcome.COMPLETED)]
    assert records[0].error.startswith(f"the app did not start on simulator {UDID} within "
                                       f"{start_wait_s:g} s")
