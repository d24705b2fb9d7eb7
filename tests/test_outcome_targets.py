"""The one outcome table (kit/observe.py) played on every target: the same six cases, each
through the target's real launcher (``coldstart run <target>``, as a user runs it) and its
test double, and the same outcome, last phase and crash class from every one.

Targets and what plays the app:

* ``host``: the real workload on the real runtime wherever it can play the case (a clean
  launch; ``inject=hang@models-ready``; a model set with a cut-off model, whose create
  fails: the workload's own ``error`` line and exit status 1), else
  tests/doubles/recorded_workload.py, registered as a runtime in a private cache: the real
  workload's recorded lines and backtraces, then a real exit, signal or hang;
* ``android``: the scripted adb device (tests/doubles/fake_adb_device.py behind
  FakeAdbd) on a real adb server;
* ``ios-sim``, ``ios-device``: the xcrun double (tests/doubles/xcrun_double), real app
  processes and real signals, ``.ips`` reports written after the death;
* ``appium-android``, ``appium-ios``: a real Appium 3 server with the fake driver, behind
  the Appium lifecycle double (tests/doubles/appium_lifecycle_double.py).

The crash class comes from each target's own evidence, so it is given per target:

* an ``error`` line, then the death: ``js-error`` wherever the evidence is React Native's
  fatal JS error: on Android the ``FATAL EXCEPTION`` with its ``JavascriptException`` (the
  crash buffer, DropBox ``data_app_crash``; through Appium, ``logcat``), on iOS the ``.ips``
  of RCTFatal's abort (the DiagnosticReports folder, the device's crash logs, Appium's
  ``crashlog``). The host runs no JavaScript: its evidence is the signal and the workload's
  own backtrace, so the same case there is ``abort`` (SIGABRT after the ``error`` line);
* ``done``, then a crash in teardown: the #32461 release stack (``xnn_delete_operator``,
  a session released late) on the mobile doubles, ``xnnpack-allocator-uaf``; on the host the
  recorded SIGSEGV backtrace of the workload itself, ``other-native-crash``.

"Teardown", per target. The host waits for the workload to exit, so it sees everything up to
the exit: ``done``, then SIGSEGV. A mobile app keeps running after ``done`` (the next
launch's force-stop or terminate ends it), and each mobile target ends its observation at
``done`` after one look at the app's process: Android a ``pidof`` (after the log lines
already received), the simulator the app's exit event checked at once (or ``launchctl
list``), a device the console's end or ``devicectl device info processes``, Appium ``mobile:
queryAppState``. So the teardown a mobile target observes is a death before that look,
i.e. one whose ``done`` line reaches the kit after the death (logd, the unified log and
Appium's log buffers deliver lines asynchronously); the doubles play the case that way.
Documented limitation: a mobile app that dies later than that look, after it answered
"running", is not this launch's crash; nothing records it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.records import LaunchRecord, Outcome
from kit.targets import ios
from tests.doubles.android_adb_server import DeviceRig
from tests.doubles.android_apk_double import build_apk_double
from tests.doubles.appium_lifecycle_double import AppiumLifecycleDouble
from tests.doubles.appium_server import AppiumServer, appium_server, fake_caps  # noqa: F401
from tests.doubles.fake_adb_device import AppBehaviour as B
from tests.doubles.fake_adb_device import FakeAndroidDevice, FakeApp, LaunchScript
from tests.doubles.recorded_workload import RecordedWorkload
from tests.doubles.xcrun_double import XcrunDouble
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

ROOT = Path(__file__).resolve().parent.parent
LABEL = "case"
LAUNCH_ID = f"{LABEL}-00000"
TARGETS = ("host", "android", "ios-sim", "ios-device", "appium-android", "appium-ios")
MOBILE = TARGETS[1:]


@dataclasses.dataclass(frozen=True)
class Case:
    """One row: what the app does, and what every target must record.

    ``crash_class`` maps each target to its class for a crash (``None``: no crash fields)."""

    name: str
    plays: str
    outcome: Outcome
    last_phase: str
    crash_class: dict[str, str] | None = None


CASES = (
    Case("error-then-death", "an error line after models-ready, then the process dies",
         Outcome.CRASHED, "models-ready",
         {"host": "abort", **{t: "js-error" for t in MOBILE}}),
    Case("error-alive", "an error line after models-ready; the app lives on (the host "
         "workload exits by itself, status 1)", Outcome.APP_ERROR, "models-ready"),
    Case("done-then-teardown-crash", "every phase up to done, then a crash in teardown",
         Outcome.CRASHED, "done",
         {"host": "other-native-crash", **{t: "xnnpack-allocator-uaf" for t in MOBILE}}),
    Case("no-done-by-timeout", "models-ready, then nothing until the launch's timeout",
         Outcome.HUNG, "models-ready"),
    Case("done-unchecked", "done, with inference-done reporting neither scores nor ok",
         Outcome.WRONG_OUTPUT, "done"),
    Case("clean", "a clean launch", Outcome.COMPLETED, "done"),
)


def only_record(out: Path) -> LaunchRecord:
    """The campaign's one record (a retried infra error would show up as a second one)."""
    records = load_campaign(out).records
    assert [(r.launch_id, r.attempt) for r in records] == [(LAUNCH_ID, 1)], \
        [(r.launch_id, r.attempt, r.outcome.value, r.error) for r in records]
    return records[0]


# -- one adapter per target: a case -> that double's script, one launch, its record ------
Play = Callable[[str, Any, Path, pytest.FixtureRequest], LaunchRecord]


@dataclasses.dataclass(frozen=True)
class HostPlay:
    """A host launch: the runtime that plays it, the scenario, a broken model set or not,
    and the recorded workload's script entry (``None`` for the real workload)."""

    runtime: str
    scenario: str
    recorded: str | None = None
    broken_models: bool = False


HOST = {
    "error-then-death": HostPlay("recorded", "mode=serial", "error,signal:6"),
    "error-alive": HostPlay("debian", "mode=serial", broken_models=True),
    "done-then-teardown-crash": HostPlay("recorded", "mode=serial", "completed,signal:11"),
    "no-done-by-timeout": HostPlay("debian", "mode=serial&inject=hang@models-ready"),
    "done-unchecked": HostPlay("recorded", "mode=serial", "unchecked,exit:0"),
    "clean": HostPlay("debian", "mode=serial"),
}


def _broken_model_set(folder: Path) -> Path:
    """The checkout's model set with embedding_model.onnx cut to 4096 bytes (its manifest
    entry updated, so the kit's checks pass and the workload's create fails)."""
    source = ROOT / "models"
    folder.mkdir()
    manifest = json.loads((source / "manifest.json").read_text())
    for name in ("clip.wav", "expected.json"):
        shutil.copy(source / name, folder / name)
    for model in manifest["models"]:
        data = (source / model["file"]).read_bytes()
        if model["name"] == "embedding_model":
            data = data[:4096]
            model.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
        (folder / model["file"]).write_bytes(data)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture(scope="module")
def host_cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A private cache with the prepared runtime as ``debian`` and the recorded workload as
    ``recorded`` (the real runtime's files), and the broken model set."""
    from kit.targets.host import load_runtime

    real = dataclasses.asdict(load_runtime("debian"))  # not prepared: one line that says so
    root = tmp_path_factory.mktemp("host")
    cache = root / "cache"
    (cache / "runtimes" / "debian").mkdir(parents=True)
    (cache / "runtimes" / "debian" / "runtime.json").write_text(json.dumps(real))
    RecordedWorkload.register(cache, real)
    return {"cache": cache, "models": _broken_model_set(root / "broken-models")}


def play_host(_target: str, play: HostPlay, tmp_path: Path,
              request: pytest.FixtureRequest) -> LaunchRecord:
    paths = request.getfixturevalue("host_cache")
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("COLDSTART_CACHE", str(paths["cache"]))
    double = RecordedWorkload(tmp_path)
    monkeypatch.setenv(*double.env())
    double.script([play.recorded] if play.recorded else [])
    out = tmp_path / "run"
    argv = ["run", "host", "--runtime", play.runtime, "--no-witness", "--scenario",
            play.scenario, "--launches", "1", "--timeout", f"{LAUNCH_S:g}", "--out",
            str(out), "--label", LABEL]
    if play.broken_models:
        argv += ["--models", str(paths["models"])]
    assert main(argv) == 0
    assert double.unused_script() == []
    return only_record(out)


ANDROID = {
    "error-then-death": B(kind="js-error-fatal", after="models-ready"),
    "error-alive": B(kind="js-error", after="models-ready"),
    "done-then-teardown-crash": B.native_crash("teardown"),
    "no-done-by-timeout": B.hang(after="models-ready"),
    "done-unchecked": B.completed(unverified=True),
    "clean": B.completed(),
}


def play_android(_target: str, behaviour: B, tmp_path: Path,
                 request: pytest.FixtureRequest) -> LaunchRecord:
    server = request.getfixturevalue("adb_server")
    apk, sha = build_apk_double(tmp_path / "coldstart.apk")
    script = LaunchScript({LAUNCH_ID: behaviour})
    rig = DeviceRig(FakeAndroidDevice("dev0", (FakeApp("org.coldstart.app", sha),), script),
                    server).start()
    out = tmp_path / "run"
    try:
        assert main(["run", "android", "--adb-server", f"127.0.0.1:{server.port}",
                     "--serial", rig.serial, "--apk", str(apk), "--launches", "1",
                     "--timeout", f"{LAUNCH_S:g}", "--report-wait", f"{REPORT_WAIT_S:g}",
                     "--reconnect-timeout", "15", "--poll", "0.5", "--out", str(out),
                     "--label", LABEL]) == 0
    finally:
        rig.stop()
    script.assert_used_up()
    return only_record(out)


#: The xcrun double and the Appium lifecycle double share their script vocabulary.
APP_SCRIPT = {
    "error-then-death": "error-fatal@models-ready",
    "error-alive": "error@models-ready",
    "done-then-teardown-crash": "crash@done",
    "no-done-by-timeout": "hang@models-ready",
    "done-unchecked": "unchecked",
    "clean": "completed",
}
SIM_UDID = "6F1C2A4B-1D2E-4F60-9A7B-0C1D2E3F4A5B"
DEVICE_UDID = "00008110-001A2B3C4D5E801E"


def play_ios(target: str, entry: str, tmp_path: Path,
             request: pytest.FixtureRequest) -> LaunchRecord:
    monkeypatch = request.getfixturevalue("monkeypatch")
    double = XcrunDouble(tmp_path)
    for key, value in double.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv(ios.DIAGNOSTIC_REPORTS_ENV, raising=False)
    double.script([entry])
    out = tmp_path / "run"
    common = ["--launches", "1", "--timeout", f"{LAUNCH_S:g}", "--report-wait",
              f"{REPORT_WAIT_S:g}", "--out", str(out), "--label", LABEL]
    try:
        if target == "ios-sim":
            double.add_simulator(SIM_UDID, "iPhone 16")
            app = XcrunDouble.make_app(tmp_path / "ColdstartApp.app")
            code = main(["run", "ios-sim", "--udid", SIM_UDID, "--app", str(app),
                         "--diagnostic-reports", str(double.reports), *common])
        else:
            double.add_device(DEVICE_UDID, "Test iPhone", "A1B2C3D4-0000-4000-8000-00000000CAFE")
            app = XcrunDouble.make_app(tmp_path / "ColdstartApp.app", platform="iPhoneOS")
            code = main(["run", "ios-device", "--udid", DEVICE_UDID, "--ipa", str(app),
                         "--reconnect-timeout", "30", *common])
    finally:
        double.kill_apps()
    assert code == 0
    assert double.unused_script() == []
    return only_record(out)


def play_appium(target: str, entry: str, tmp_path: Path,
                request: pytest.FixtureRequest) -> LaunchRecord:
    server: AppiumServer = request.getfixturevalue("appium_server")
    platform = target.split("-", 1)[1]
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(fake_caps(tmp_path)))
    double = AppiumLifecycleDouble(server.url, platform=platform, script=[entry])
    out = tmp_path / "run"
    try:
        assert main(["run", "appium", "--server", double.url, "--platform", platform,
                     "--caps", str(caps), "--launches", "1", "--timeout", f"{LAUNCH_S:g}",
                     "--report-wait", f"{REPORT_WAIT_S:g}", "--out", str(out),
                     "--label", LABEL]) == 0
    finally:
        double.stop()
    assert double.unused_script() == []
    return only_record(out)


#: target -> (the case's script entry for that target's double, the adapter that plays it)
ADAPTERS: dict[str, tuple[dict[str, Any], Play]] = {
    "host": (HOST, play_host),
    "android": (ANDROID, play_android),
    "ios-sim": (APP_SCRIPT, play_ios),
    "ios-device": (APP_SCRIPT, play_ios),
    "appium-android": (APP_SCRIPT, play_appium),
    "appium-ios": (APP_SCRIPT, play_appium),
}


def test_every_target_has_an_entry_for_every_case() -> None:
    names = [c.name for c in CASES]
    assert {t: sorted(entries) for t, (entries, _play) in ADAPTERS.items()} == \
        {t: sorted(names) for t in TARGETS}
    for case in CASES:
        if case.crash_class is not None:
            assert sorted(case.crash_class) == sorted(TARGETS), case.name


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("target", [pytest.param(t, marks=[pytest.mark.host] if t == "host"
                                                 else []) for t in TARGETS])
def test_every_target_records_the_tables_answer(target: str, case: Case, tmp_path: Path,
                                                request: pytest.FixtureRequest) -> None:
    entries, play = ADAPTERS[target]
    record = play(target, entries[case.name], tmp_path, request)
    want_class = case.crash_class[target] if case.crash_class is not None else None
    assert (record.outcome, record.last_phase, record.crash_class) == \
        (case.outcome, case.last_phase, want_class), (case.plays, record.error)
    if case.outcome is Outcome.CRASHED:  # the class came from a parsed report
        assert record.crash is not None and record.signature, record.error
    else:
        assert (record.crash, record.crash_class, record.signal) == (None, None, None)
    if case.outcome is Outcome.HUNG:
        assert record.error.startswith(f"no done within {LAUNCH_S:g} s")
