"""Issue #16 on Android: device faults in the middle of a campaign, played by the scripted
device (tests/doubles/fake_adb_device.py) behind a real adb server or adb-shell.

In every case the campaign must end with exactly the planned number of counted launches,
no launch that never started may count as a crash, and the exit code and the records must
say what happened (infra errors keep their evidence; reboots and restarts are recorded).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kit.analysis.summary import summarize
from kit.campaign import load_campaign
from kit.cli import main
from kit.records import Outcome
from kit.targets import android
from tests.doubles.android_adb_server import DeviceRig, PrivateAdbServer
from tests.doubles.fake_adb_device import AppBehaviour as B
from tests.doubles.fake_adb_device import FakeAndroidDevice, FakeApp, LaunchScript
from tests.helpers.android import PKG, Rigs, records_by_id, run_android
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S



def campaign(out: Path) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """``(records by id, counted, infra errors)`` of the campaign in ``out``."""
    loaded = load_campaign(out)
    return records_by_id(out), list(loaded.counted), list(loaded.infra_errors)


def play(rigs: Rigs, apk: tuple[Path, str], out: Path, script: LaunchScript, launches: str,
         label: str, timeout: str, *args: str, **device_kw: Any) -> tuple[DeviceRig, int]:
    """Run ``coldstart run android`` on one new scripted device over the adb server;
    returns the device and the exit code."""
    rig = rigs.add(apk[1], script, **device_kw)
    return rig, run_android(rigs.server, out, "--serial", rig.serial, "--apk", str(apk[0]),
                            "--launches", launches, "--label", label, "--timeout", timeout,
                            *args)


def infra_text(out: Path, record: Any) -> str:
    return (out / "artifacts" / record.launch_id / "infra-error.txt").read_text()


def retried_once(recs: dict[str, Any], counted: list[Any], infra: list[Any], launch_id: str,
                 launches: int, why: str) -> None:
    """``launch_id`` alone was an infra error (its error says ``why``), its retry and every
    other launch completed, and all ``launches`` planned are counted."""
    assert [r.launch_id for r in infra] == [launch_id]
    assert why in recs[launch_id].error
    assert recs[f"{launch_id}.r2"].outcome is Outcome.COMPLETED
    assert {r.outcome for r in counted} == {Outcome.COMPLETED} and len(counted) == launches


def no_crash_without_a_start(recs: dict[str, Any]) -> None:
    """Every crashed launch reached the app (it reported a phase or had a pid)."""
    for record in recs.values():
        if record.outcome is Outcome.CRASHED:
            assert record.last_phase is not None or record.extra["android"]["pid"], record


@pytest.mark.parametrize("after", ["sessions-created", "done"])
def test_a_reboot_with_late_services_is_waited_for_and_never_a_crash(
        after: str, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # adbd is back 0.6 s after the reboot, the activity/package services 2 s after that:
    # `echo ok` answers long before `am start` could (the seen bug: status 20, `crashed`)
    script = LaunchScript({"r-00001": B.drop(after=after, offline_s=0.6, reboot=True,
                                             services_late_s=2.0)})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "4", "r", f"{LAUNCH_S:g}")
    recs, counted, infra = campaign(out)
    assert code == 0
    assert sorted(r.index for r in counted) == [0, 1, 2, 3]
    assert {r.outcome for r in counted} == {Outcome.COMPLETED}
    # the reboot is noticed by its boot id and kept in the first record after it
    reboots = [r.extra["android"]["reboot"] for r in counted if "reboot" in r.extra["android"]]
    assert len(reboots) == 1 and reboots[0]["boot_id"] == rig.device.boot_id
    assert reboots[0]["previous_boot_id"] != rig.device.boot_id
    after_reboot = next(r for r in counted if "reboot" in r.extra["android"])
    assert after_reboot.extra["android"]["boot_id"] == rig.device.boot_id
    err = capsys.readouterr().err
    assert f"android: {rig.serial}: the device rebooted (boot id" in err
    # no am start was sent to a system that was not up
    for record in recs.values():
        am = out / "artifacts" / record.launch_id / "am-start.txt"
        assert not am.exists() or "Can't find service" not in am.read_text()
    # a launch cut by the reboot is an infra error with its evidence, retried
    for record in infra:
        assert "-- adb calls on" in infra_text(out, record)
    if after == "sessions-created":
        assert [r.launch_id for r in infra] == ["r-00001"]
        assert recs["r-00001.r2"].outcome is Outcome.COMPLETED


@pytest.mark.parametrize("failure,why", [
    ("no-service", "Can't find service: activity"),
    ("status-timeout", "Status: timeout"),
    ("no-status", "no Status line"),
    ("no-activity-class", "Activity class {org.coldstart.app/"),
    ("task-to-front", "its current task has been brought to the front"),
])
def test_an_am_start_that_made_no_launch_is_an_infra_error_retried(
        failure: str, why: str, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    script = LaunchScript({"s-00001": B(am_start=failure, services_late_s=1.5)})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "3", "s", f"{LAUNCH_S:g}")
    assert code == 0
    recs, counted, infra = campaign(out)
    retried_once(recs, counted, infra, "s-00001", 3, why)
    failed = recs["s-00001"]
    assert "am start made no launch" in failed.error
    assert failed.crash is None and failed.crash_class is None and failed.wall_ms > 0
    # what am printed is kept: as an artifact and in infra-error.txt
    assert any(a.endswith("/am-start.txt") for a in failed.artifacts)
    assert why.split(":")[0] in infra_text(out, failed)
    assert "am start -W" in (out / "artifacts" / "s-00001" / "transport-log.txt").read_text()


@pytest.mark.parametrize("late_s", [0.0, 1.5])
def test_a_runtime_restart_mid_launch_is_an_infra_error_and_recorded(
        late_s: float, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    # system_server restarts: the app dies with it and no exit-info, log line or report
    # says so; the boot id stays the same
    script = LaunchScript({"u-00001": B(kind="runtime-restart", after="sessions-created",
                                        services_late_s=late_s)})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "3", "u", f"{LAUNCH_S:g}")
    assert code == 0
    recs, counted, infra = campaign(out)
    retried_once(recs, counted, infra, "u-00001", 3,
                 "system server went down during the launch")
    restarts = [r.extra["android"]["system_restart"] for r in counted
                if "system_restart" in r.extra["android"]]
    assert len(restarts) == 1 and restarts[0]["pid"] == str(rig.device.system_pid)


def _direct_rig(rigs: Rigs, tmp_path: Path, sha: str, script: LaunchScript) -> tuple[
        DeviceRig, Path]:
    from adb_shell.auth.keygen import keygen
    from cryptography.hazmat.primitives import serialization

    key = tmp_path / "adbkey"
    keygen(str(key))
    public = serialization.load_pem_private_key(key.read_bytes(), None).public_key()
    pem = public.public_bytes(serialization.Encoding.PEM,
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    rig = DeviceRig(FakeAndroidDevice("direct", (FakeApp(PKG, sha),), script), None,
                    auth_keys=(pem,))
    rigs.rigs.append(rig)
    return rig.start(), key


@pytest.mark.parametrize("transport", ["server", "direct"])
def test_a_drop_right_after_done_costs_no_counted_launch(
        transport: str, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    script = LaunchScript({"d-00001": B.drop(after="done", offline_s=1.0)})
    out = tmp_path / "c"
    # a long launch timeout: a drop that read as "no data yet" would stall a call for it
    common = ["--apk", str(apk[0]), "--launches", "3", "--label", "d", "--timeout", "30",
              "--out", str(out), "--report-wait", f"{REPORT_WAIT_S:g}", "--poll", "0.5",
              "--reconnect-timeout", "15"]
    if transport == "server":
        rig = rigs.add(apk[1], script)
        code = main(["run", "android", "--adb-server", f"127.0.0.1:{rigs.server.port}",
                     "--serial", rig.serial, *common])
    else:
        rig, key = _direct_rig(rigs, tmp_path, apk[1], script)
        code = main(["run", "android", "--direct", rig.address, "--adbkey", str(key),
                     *common])
    recs, counted, infra = campaign(out)
    assert code == 0
    # the device drops half a phase gap (20 ms) after `done`: the kit either read `done` first (completed) or
    # not yet (one infra error, the slot made again); which one depends on the machine's
    # load, so either is right, and a counted launch is never lost or made up
    assert recs["d-00001"].outcome in (Outcome.COMPLETED, Outcome.INFRA_ERROR)
    assert sorted(r.index for r in counted) == [0, 1, 2]
    assert {r.outcome for r in counted} == {Outcome.COMPLETED}
    # the drop is seen as a drop (EOF / reset), never as a timeout
    for record in infra:
        assert "timed out" not in record.error and "Timeout" not in record.error, record.error
    assert len(infra) <= 1


@pytest.mark.parametrize("kind", ["server", "direct"])
def test_a_dropped_connection_ends_a_waiting_call_with_a_transport_error(
        kind: str, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    """A call that waits on a quiet device (here a follow of an empty log, with a 60 s
    timeout) fails as soon as the device drops: an EOF is not "no data yet"."""
    if kind == "server":
        rig = rigs.add(apk[1], LaunchScript())
        transport: Any = android.ServerTransport(rig.serial, "127.0.0.1", rigs.server.port)
    else:
        rig, key = _direct_rig(rigs, tmp_path, apk[1], LaunchScript())
        transport = android.DirectTransport(rig.address, key_path=key)
    transport.shell("echo ok", 10)
    dropped: list[float] = []

    def drop() -> None:
        time.sleep(0.5)
        dropped.append(time.monotonic())
        rig.adbd.drop(30.0)

    threading.Thread(target=drop, daemon=True).start()
    try:
        with pytest.raises(android.TransportError) as raised:
            transport.shell(android.shell_join(["logcat", "-v", "threadtime", "Nothing:V",
                                                "*:S"]), 60.0)
    finally:
        transport.close()
    assert dropped, "the call ended before the drop"
    assert "Timeout" not in raised.value.message and "no answer within" not in \
        raised.value.message


@pytest.mark.parametrize("crash_buffer", [True, False])
def test_a_fatal_js_error_is_a_js_error_crash_with_its_report(
        crash_buffer: bool, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    # `error`, then the JavascriptException kills the app 0.4 s later; its DropBox report
    # comes 1.5 s after that (without the crash buffer it is the only report)
    script = LaunchScript({
        "j-00001": B(kind="js-error-fatal", after="models-ready", death_after_ms=400,
                     crash_buffer=crash_buffer, report_delay_s=1.5),
        "j-00002": B(kind="js-error", after="models-ready"),
    })
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "3", "j", f"{LAUNCH_S:g}", "--report-wait", f"{REPORT_WAIT_S:g}")
    assert code == 0
    recs, counted, infra = campaign(out)
    assert infra == [] and len(counted) == 3
    fatal = recs["j-00001"]
    assert (fatal.outcome, fatal.last_phase, fatal.crash_class) == (
        Outcome.CRASHED, "models-ready", "js-error")
    assert "Cannot read property 'dims' of undefined" in fatal.error
    assert "dims" in fatal.signature
    source = fatal.crash["raw_artifact"]
    assert ("logcat-crash-pid" in source) if crash_buffer else ("data_app_crash" in source)
    assert (out / source).exists()
    assert fatal.extra["android"]["exit_info"]["reason"] == 4
    # an error with the process alive through the grace period stays an app-error
    lived = recs["j-00002"]
    assert (lived.outcome, lived.crash, lived.crash_class) == (Outcome.APP_ERROR, None, None)
    assert "Protobuf parsing failed" in lived.error


def test_a_death_with_no_report_never_borrows_an_earlier_force_stop(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    # by launch 4 the exit-info ring holds the kit's force-stops of launches 0-3
    # (USER REQUESTED); launch 4's process vanishes and leaves nothing of its own
    script = LaunchScript({"f-00004": B(kind="vanish", after="sessions-created")})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "5", "f", f"{LAUNCH_S:g}")
    assert code == 0
    recs, counted, infra = campaign(out)
    gone = recs["f-00004"]
    exit_info = (out / "artifacts" / "f-00004" / "exit-info.txt").read_text()
    assert exit_info.count("USER REQUESTED") >= 4  # they were there to be borrowed
    assert (gone.outcome, gone.last_phase) == (Outcome.CRASHED, "sessions-created")
    assert (gone.crash, gone.crash_class, gone.signature) == (None, None, None)
    assert gone.error == (f"no crash report for pid {gone.extra['android']['pid']} was "
                          f"found within {REPORT_WAIT_S:g} s")
    assert gone.extra["android"]["exit_info"] is None
    assert len(counted) == 5 and infra == []
    rows = summarize(load_campaign(out)).signatures
    assert [(r.signature, r.crash_class, r.count) for r in rows] == [
        ("(no signature)", "unclassified", 1)]


def test_after_a_reboot_a_reused_pid_is_not_matched_to_the_older_boots_entry(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    # before the reboot, pid 4001 (launch 1) was force-stopped by the kit (USER REQUESTED);
    # pids start again after it, so launch 3's process is 4001 too, and it vanishes
    script = LaunchScript({"p-00002": B.drop(after="models-ready", offline_s=0.5,
                                             reboot=True, services_late_s=0.5),
                           "p-00003": B(kind="vanish", after="sessions-created")})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "4", "p", f"{LAUNCH_S:g}")
    assert code == 0
    recs, counted, infra = campaign(out)
    gone = recs["p-00003"]
    assert gone.extra["android"]["pid"] == 4001
    exit_info = (out / "artifacts" / "p-00003" / "exit-info.txt").read_text()
    assert "pid=4001" in exit_info and "USER REQUESTED" in exit_info  # the older boot's
    assert (gone.outcome, gone.crash, gone.extra["android"]["exit_info"]) == (
        Outcome.CRASHED, None, None)
    assert gone.error == f"no crash report for pid 4001 was found within {REPORT_WAIT_S:g} s"
    assert [r.launch_id for r in infra] == ["p-00002"] and len(counted) == 4


def test_a_process_never_seen_is_not_a_crash(rigs: Rigs, apk: tuple[Path, str],
                                             tmp_path: Path) -> None:
    # no Start proc line, no protocol line, gone at the first pidof: nothing shows that
    # this launch's process ever ran, so its "death" is not a crash of the app
    script = LaunchScript({"n-00001": B(kind="vanish", after="", log_start=False)})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "2", "n", f"{LAUNCH_S:g}")
    assert code == 0
    recs, counted, infra = campaign(out)
    retried_once(recs, counted, infra, "n-00001", 2, "process was never seen")
    no_crash_without_a_start(recs)


def test_inference_with_outputs_that_cannot_be_checked_is_never_a_pass(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    script = LaunchScript({"v-00000": B.completed(unverified=True)})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "1", "v", f"{LAUNCH_S:g}")
    assert code == 0
    record = records_by_id(out)["v-00000"]
    assert (record.outcome, record.last_phase) == (Outcome.WRONG_OUTPUT, "done")
    assert "cannot be checked" in record.error


@pytest.mark.slow
def test_a_device_gone_for_good_abandons_its_slots_and_exits_3(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    script = LaunchScript({"g-00000": B.drop(after="models-ready", offline_s=600.0)})
    out = tmp_path / "c"
    capsys.readouterr()
    rig, code = play(rigs, apk, out, script, "2", "g", f"{LAUNCH_S:g}", "--max-attempts", "2",
                     "--reconnect-timeout", "1")
    recs, counted, infra = campaign(out)
    assert code == 3
    assert counted == [] and sorted(recs) == ["g-00000", "g-00000.r2", "g-00001",
                                              "g-00001.r2"]
    printed = capsys.readouterr()
    assert "2 of 2 planned launches of g were abandoned" in printed.out + printed.err


def test_a_trimmed_image_without_log_and_service_tools_still_runs_its_campaign(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    # no `log` (no launch marker), no `service` (readiness by sys.boot_completed alone),
    # and system_server's pid hidden from the shell: the checks that need them step aside
    script = LaunchScript({"t-00001": B.native_crash("inference")})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "3", "t", f"{LAUNCH_S:g}", missing_tools=("log", "service"),
                     hidden_system_server=True)
    assert code == 0
    recs, counted, infra = campaign(out)
    assert infra == []
    assert {k: (r.outcome, r.crash_class) for k, r in recs.items()} == {
        "t-00000": (Outcome.COMPLETED, None),
        "t-00001": (Outcome.CRASHED, "xnnpack-allocator-uaf"),
        "t-00002": (Outcome.COMPLETED, None)}
    assert recs["t-00002"].extra["android"]["stale_lines"] >= 1  # t-00001's late line


@pytest.mark.parametrize("log_start", [True, False])
def test_a_crash_in_application_oncreate_before_any_line_is_a_counted_crash(
        log_start: bool, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    # Application.onCreate throws (the native library does not load) before the app logs
    # anything; `am start -W` reports the cancelled launch (Status: ok, LaunchState:
    # UNKNOWN (0), no TotalTime). The process was started, so this is the app's crash,
    # whether or not ActivityManager's Start proc line is seen (the FATAL EXCEPTION names
    # the pid)
    script = LaunchScript({"o-00001": B(kind="init-crash", log_start=log_start)})
    out = tmp_path / "c"
    rig, code = play(rigs, apk, out, script, "3", "o", f"{LAUNCH_S:g}",
                     "--report-wait", f"{REPORT_WAIT_S:g}")
    script.assert_used_up()
    assert code == 0
    recs, counted, infra = campaign(out)
    assert infra == [] and len(counted) == 3
    assert [recs[f"o-0000{i}"].outcome for i in range(3)] == [
        Outcome.COMPLETED, Outcome.CRASHED, Outcome.COMPLETED]
    crashed = recs["o-00001"]
    assert crashed.last_phase is None
    assert crashed.extra["android"]["pid"] is not None
    assert crashed.extra["android"]["launch_state"] == "UNKNOWN (0)"
    assert crashed.extra["android"]["total_time_ms"] is None
    assert crashed.crash is not None  # the report of that pid was found and parsed
    kept = "".join(p.read_text() for p in (out / "artifacts" / "o-00001").iterdir())
    assert "Unable to create application" in kept and "UnsatisfiedLinkError" in kept


def _other_hosts_public_key(tmp_path: Path) -> bytes:
    """The PEM public key of an adb key pair made for another host (the device trusts it
    and not ours, as after "Revoke USB debugging authorizations")."""
    from adb_shell.auth.keygen import keygen
    from cryptography.hazmat.primitives import serialization

    key = tmp_path / "otherhost"
    keygen(str(key))
    return serialization.load_pem_private_key(key.read_bytes(), None).public_key(
        ).public_bytes(serialization.Encoding.PEM,
                       serialization.PublicFormat.SubjectPublicKeyInfo)


def test_an_unauthorized_device_alone_is_named_with_what_to_do_exit_2(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # the device's adbd trusts another host's key only: the real adb server lists it as
    # `unauthorized` (a phone whose "Allow USB debugging?" prompt was never accepted, or
    # after "Revoke USB debugging authorizations"). Without --serial the kit must not say
    # "no device": it names the device, its state and what to do
    pem = _other_hosts_public_key(tmp_path)
    device = FakeAndroidDevice("locked", (FakeApp(PKG, apk[1]),), LaunchScript())
    rig = DeviceRig(device, None, auth_keys=(pem,))
    rigs.rigs.append(rig)
    rig.start()
    # a server of its own: the module's server still lists earlier tests' devices
    server = PrivateAdbServer().start()
    try:
        rig.adbd.announce(server.port)
        server.wait_for(rig.serial, "unauthorized")
        assert server.states() == {rig.serial: "unauthorized"}
        capsys.readouterr()
        out = tmp_path / "c"
        code = run_android(server, out, "--apk", str(apk[0]), "--launches", "2",
                           "--label", "u")
    finally:
        server.stop()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"{rig.serial} is unauthorized" in err[0]
    assert "accept the USB debugging prompt" in err[0]
    assert not (out / "launches.jsonl").exists()


@pytest.mark.parametrize("state, exit_code, says", [
    # what `adb devices` prints (packages/modules/adb: diagnose_usb.cpp's
    # UsbNoPermissionsShortHelpText, transport.cpp's to_string(ConnectionState))
    ("no permissions (missing udev rules? user is in the plugdev group); see "
     "[http://developer.android.com/tools/device.html]", 2, "adb has no permissions"),
    ("no permissions (user alice is not in the plugdev group); see "
     "[http://developer.android.com/tools/device.html]", 2, "udev rule"),
    ("unauthorized", 2, "accept the USB debugging prompt"),
    ("recovery", 2, "is in recovery mode, not running Android"),
    ("sideload", 2, "reboot it into Android"),
    ("bootloader", 2, "is in bootloader mode"),
    ("offline", 3, "is offline"),
    ("authorizing", 3, "is authorizing"),
])
def test_every_adb_state_but_device_is_one_error_that_says_what_to_do(
        state: str, exit_code: int, says: str) -> None:
    error = android.state_error("0A1B2C3D4E", state)
    assert int(error.exit_code) == exit_code
    text = f"{error.message} ({error.hint})"
    assert says in text and "0A1B2C3D4E" in text and "\n" not in text


def test_a_device_that_comes_back_unauthorized_mid_campaign_exits_3_saying_so(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # mid-launch the device drops and comes back trusting another host's key only (USB
    # debugging authorizations revoked, or a reflashed device): the real adb server lists
    # it `unauthorized`. Nothing after that can launch: the slots are infra errors, never
    # counted, the campaign exits 3, and the errors say what to do
    pem = _other_hosts_public_key(tmp_path)
    script = LaunchScript({"v-00001": B.drop(after="models-ready", offline_s=0.3)})
    rig = rigs.add(apk[1], script)
    rig.device.on_drop = lambda offline_s, _reboot: rig.adbd.drop(
        offline_s, on_return=lambda: setattr(rig.adbd, "auth_keys", (pem,)))
    out = tmp_path / "c"
    capsys.readouterr()
    code = run_android(rigs.server, out, "--serial", rig.serial, "--apk", str(apk[0]),
                       "--launches", "3", "--label", "v", "--timeout", f"{LAUNCH_S:g}",
                       "--max-attempts", "2", "--reconnect-timeout", "2")
    recs, counted, infra = campaign(out)
    assert code == 3
    assert [r.launch_id for r in counted] == ["v-00000"]
    assert counted[0].outcome is Outcome.COMPLETED
    assert sorted(r.launch_id for r in infra) == ["v-00001", "v-00001.r2", "v-00002",
                                                  "v-00002.r2"]
    no_crash_without_a_start(recs)
    for record in infra[1:]:
        assert "unauthorized" in record.error, record.error
    printed = capsys.readouterr()
    assert "2 of 3 planned launches of v were abandoned" in printed.out + printed.err
    assert "--resume" in printed.out + printed.err
    assert "accept the USB debugging prompt" in printed.out + printed.err


@pytest.mark.parametrize("failure, says", [
    ("INSTALL_FAILED_INSUFFICIENT_STORAGE", "free space on the device"),
    ("INSTALL_FAILED_UPDATE_INCOMPATIBLE: Existing package org.coldstart.app signatures do "
     "not match newer version; ignoring!", "adb uninstall org.coldstart.app"),
    ("INSTALL_FAILED_NO_MATCHING_ABIS: Failed to extract native libraries, res=-113",
     "no native libraries for the device's ABI"),
])
def test_an_apk_the_device_refuses_is_one_line_exit_2_saying_what_to_do(
        failure: str, says: str, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # a device whose /data is full, or holding another key's build, refuses the install
    rig = rigs.add(apk[1], LaunchScript(), install_failure=failure)
    capsys.readouterr()
    out = tmp_path / "c"
    code = run_android(rigs.server, out, "--serial", rig.serial, "--apk", str(apk[0]),
                       "--launches", "2", "--label", "f")
    err = capsys.readouterr().err.strip().splitlines()
    # one error line, after the progress line of the install
    assert code == 2 and err[-1].startswith("coldstart: error: "), err
    assert [ln for ln in err if "error" in ln] == err[-1:], err
    assert f"{rig.serial} refused the APK: {failure.split(':')[0]}" in err[-1]
    assert says in err[-1]
    assert not (out / "launches.jsonl").exists()
