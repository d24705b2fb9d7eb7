"""Issue #23 on Android: devices that fail the way real ones do, over the adb server and
over adbd directly, played by the scripted device (tests/doubles/fake_adb_device.py).

A log follower that dies under a launch, a React Native fatal error known only from
DropBox, a device without a readable boot id, a clock set back during a launch, another
build installed mid-campaign and a killed local adb server: every planned launch ends
counted (or the run exits 3 saying why), no device fault is a crash, and a real crash is
recorded with its class and signature in its own launch.

Every adb server here is private (its own free port, outside 5037 and the emulator ports);
the scripted devices listen on free ports of their own.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from kit.cli import main
from kit.records import Outcome
from tests.doubles.android_adb_server import PrivateAdbServer
from tests.doubles.fake_adb_device import AppBehaviour as B
from tests.doubles.fake_adb_device import FakeApp, LaunchScript
from tests.helpers.android import PKG, TRANSPORTS, Rigs, run, split
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S



@TRANSPORTS
def test_a_log_follower_that_dies_mid_launch_loses_no_crash(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    # logcat dies (`logcat: Unexpected EOF!`, exit 1) after models-ready; the app crashes
    # in inference about half a second later, and its reports are written after that
    script = LaunchScript({"l-00001": B.native_crash("inference", after="models-ready",
                                                     logcat_eof=True, phase_gap_ms=250)})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "3", "--label", "l")
    assert code == 0
    recs, counted, infra = split(out)
    assert infra == [] and len(counted) == 3
    crash = recs["l-00001"]
    assert (crash.outcome, crash.last_phase, crash.crash_class) == (
        Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf")
    assert "reshape_fully_connected_nc" in crash.signature
    assert crash.extra["android"]["log_restarts"] == 1
    # every line of the launch was read once: the replay of the new follower is skipped
    lines = (out / "artifacts" / "l-00001" / "logcat.txt").read_text().splitlines()
    protocol = [ln for ln in lines if "COLDSTART" in ln and "l-00001" in ln]
    assert len(protocol) == len(set(protocol)) == 3
    assert {r.outcome for r in counted if r.launch_id != "l-00001"} == {Outcome.COMPLETED}


@TRANSPORTS
def test_a_react_native_fatal_error_known_only_from_dropbox_is_a_js_error(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    # nothing in the crash buffer: the data_app_crash entry (Android 14's header, with
    # Frozen and Installer) holds `JavascriptException: Error: ..., js engine: hermes,
    # stack:` and the JS frames
    script = LaunchScript({"j-00001": B(kind="js-error-fatal", after="sessions-created",
                                        crash_buffer=False)})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "2", "--label", "j")
    assert code == 0
    recs, counted, infra = split(out)
    assert infra == [] and len(counted) == 2
    fatal = recs["j-00001"]
    assert (fatal.outcome, fatal.crash_class) == (Outcome.CRASHED, "js-error")
    assert "data_app_crash" in fatal.crash["raw_artifact"]
    assert fatal.crash["exception"] == "com.facebook.react.common.JavascriptException"
    assert fatal.crash["message"] == "Error: Cannot read property 'dims' of undefined"
    assert [f["symbol"] for f in fatal.crash["frames"]][:2] == ["runPipeline", "loadModels"]


@TRANSPORTS
def test_an_unreadable_boot_id_is_unknown_and_shifts_nothing(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    script = LaunchScript({"b-00001": B.native_crash("creation")})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "3", "--label", "b", no_boot_id=True)
    assert code == 0
    recs, counted, infra = split(out)
    assert infra == [] and len(counted) == 3
    for record in counted:  # no reboot concluded, the device time is a time
        assert "reboot" not in record.extra["android"]
        assert record.extra["android"]["device_time"][:2] == "20"
    crash = recs["b-00001"]
    assert crash.crash_class == "xnnpack-allocator-uaf"
    # the evidence window matched this pid's exit-info entry and DropBox report
    assert crash.extra["android"]["exit_info"]["pid"] == crash.extra["android"]["pid"]
    assert "/dropbox-" in crash.crash["raw_artifact"]


@TRANSPORTS
def test_a_clock_set_back_during_a_launch_keeps_its_crash_evidence(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    # the device clock goes back an hour between the launch's start and its crash: the
    # tombstone and exit-info are stamped before the launch's device time
    script = LaunchScript({"t-00001": B.native_crash("inference", after="models-ready",
                                                     clock_back_s=3600.0)})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "3", "--label", "t")
    assert code == 0
    recs, counted, infra = split(out)
    assert infra == [] and len(counted) == 3
    crash = recs["t-00001"]
    assert crash.crash_class == "xnnpack-allocator-uaf"
    assert crash.extra["android"]["exit_info"]["pid"] == crash.extra["android"]["pid"]
    assert crash.extra["android"]["exit_info"]["reason"] == 5
    assert "/dropbox-" in crash.crash["raw_artifact"]
    assert "reboot" not in crash.extra["android"]


FOREIGN = FakeApp(PKG, "f" * 64, version_code=2, ort_version="9.9.9")


@TRANSPORTS
def test_another_build_installed_mid_campaign_is_replaced_and_never_counted(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # someone installs a newer build (versionCode 2) during launch 1: the app is killed
    # (exit-info PACKAGE UPDATED); the campaign's build must be back before launch 1 again
    script = LaunchScript({"p-00001": B(kind="completed", after="models-ready",
                                        foreign_build=FOREIGN, phase_gap_ms=150)})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "4", "--label", "p")
    assert code == 0
    recs, counted, infra = split(out)
    assert len(counted) == 4 and {r.outcome for r in counted} == {Outcome.COMPLETED}
    assert all(r.ort_version == "1.24.1" for r in counted)  # never the other build's
    assert [r.launch_id for r in infra] == ["p-00001"]
    assert "PACKAGE UPDATED" in infra[0].error
    assert rig.device.installed[PKG].apk_sha256 == apk[1]
    assert recs["p-00001.r2"].extra["android"]["reinstalled"]["reinstalls"] == 1
    assert "another build of org.coldstart.app was installed" in capsys.readouterr().err


def test_another_build_with_no_apk_to_reinstall_stops_the_campaign(
        rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    script = LaunchScript({"q-00001": B(kind="completed", after="models-ready",
                                        foreign_build=FOREIGN, phase_gap_ms=150)})
    rig = rigs.add(apk[1], script)
    with rig.device._lock:
        rig.device._install(FakeApp(PKG, apk[1]))  # installed before the campaign
    out = tmp_path / "c"
    code = main(["run", "android", "--adb-server", f"127.0.0.1:{rigs.server.port}",
                 "--serial", rig.serial, "--package", PKG, "--out", str(out),
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--reconnect-timeout", "15",
                 "--poll", "0.5", "--timeout", f"{LAUNCH_S:g}", "--launches", "4",
                 "--label", "q"])
    assert code == 3
    recs, counted, infra = split(out)
    assert [r.launch_id for r in counted] == ["q-00000"]  # never a launch of the other build
    stop = recs["q-00001.r2"]
    assert stop.outcome is Outcome.INFRA_ERROR and "another build" in stop.error
    assert "remaining launches are abandoned" in stop.error
    assert "q-00002" not in recs and "q-00003" not in recs


@pytest.fixture
def own_server() -> Iterator[PrivateAdbServer]:
    """A private adb server of this test alone (it is killed during the test)."""
    server = PrivateAdbServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_a_killed_local_adb_server_is_started_again(
        own_server: PrivateAdbServer, apk: tuple[Path, str], tmp_path: Path) -> None:
    rigs = Rigs(own_server)
    stopped = threading.Event()

    def kill_server() -> None:
        own_server.adb_cmd("kill-server")

        def announce_when_back() -> None:
            # an emulator is found by a new server's scan of 5555-5585; this one listens
            # elsewhere, so it announces itself again once a server answers on the port
            while not stopped.is_set():
                try:
                    with socket.create_connection(("127.0.0.1", own_server.port), 0.2):
                        pass
                    rig.adbd.announce(own_server.port)
                    return
                except OSError:
                    time.sleep(0.1)

        threading.Thread(target=announce_when_back, daemon=True).start()

    script = LaunchScript({"k-00001": B(kind="completed", after="models-ready",
                                        kill_server=True, phase_gap_ms=150)})
    try:
        rig = rigs.add(apk[1], script, on_kill_server=lambda: threading.Thread(
            target=kill_server, daemon=True).start())
        out = tmp_path / "c"
        code = main(["run", "android", "--adb-server", f"127.0.0.1:{own_server.port}",
                     "--serial", rig.serial, "--apk", str(apk[0]), "--out", str(out),
                     "--report-wait", f"{REPORT_WAIT_S:g}", "--reconnect-timeout", "15",
                     "--poll", "0.5", "--timeout", f"{LAUNCH_S:g}", "--launches", "3",
                     "--label", "k"])
        assert code == 0
        recs, counted, infra = split(out)
        assert len(counted) == 3 and {r.outcome for r in counted} == {Outcome.COMPLETED}
        assert len(infra) <= 1
    finally:
        stopped.set()
        rigs.stop()
