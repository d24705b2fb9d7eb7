"""The Android target end to end, against scripted devices on a real adb server.

Each device is a FakeAdbd (adbd's wire protocol on loopback) backed by a FakeAndroidDevice
that replays Android's text (am start -W, logcat, tombstones, exit-info, DropBox); the adb
server is the real binary (Debian's adb or the one adbutils ships) on a private port, killed
at teardown. The kit is driven through its CLI, exactly as a user would.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.records import Outcome
from tests.doubles.android_adb_server import DeviceRig
from tests.doubles.android_apk_double import ApkSpec, build_apk_double
from tests.doubles.fake_adb_device import AppBehaviour as B
from tests.doubles.fake_adb_device import EXIT_INFO_RING, FakeAndroidDevice, FakeApp, \
    LaunchScript
from tests.helpers.android import PKG, Rigs, records_by_id, run_android
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

@pytest.mark.slow
def test_campaign_gives_exactly_the_scripted_outcomes(rigs: Rigs, apk: tuple[Path, str],
                                                      tmp_path: Path) -> None:
    script = LaunchScript({
        "a-00001": B.native_crash("creation"),
        "a-00002": B.native_crash("inference"),
        "a-00003": B.native_crash("release"),
        "a-00004": B(kind="js-error", after="models-ready"),
        "a-00005": B.hang(after="sessions-created"),
        "a-00006": B(kind="js-fatal", after="start"),
        "a-00007": B(kind="other-crash", after="sessions-created"),
        "a-00008": B.drop(after="models-ready", offline_s=0.6),
        "a-00009": B.completed(wrong_output=True),
    })
    rig = rigs.add(apk[1], script)
    out = tmp_path / "campaign"
    code = run_android(rigs.server, out, "--serial", rig.serial, "--apk", str(apk[0]),
                       "--launches", "10", "--label", "a", "--timeout", f"{LAUNCH_S:g}")
    assert code == 0
    recs = records_by_id(out)
    expected = {
        "a-00000": (Outcome.COMPLETED, "done", None),
        "a-00001": (Outcome.CRASHED, "models-ready", "xnnpack-allocator-uaf"),
        "a-00002": (Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf"),
        "a-00003": (Outcome.CRASHED, "inference-done", "xnnpack-allocator-uaf"),
        "a-00004": (Outcome.APP_ERROR, "models-ready", None),
        "a-00005": (Outcome.HUNG, "sessions-created", None),
        "a-00006": (Outcome.CRASHED, "start", "js-error"),
        "a-00007": (Outcome.CRASHED, "sessions-created", "abort"),
        "a-00008": (Outcome.INFRA_ERROR, None, None),
        "a-00008.r2": (Outcome.COMPLETED, "done", None),
        "a-00009": (Outcome.WRONG_OUTPUT, "done", None),
    }
    assert {k: (r.outcome, r.last_phase, r.crash_class) for k, r in recs.items()} == expected
    # the #32461 crashes carry the stack of their phase
    assert recs["a-00001"].signature.split(" | ")[1] == "xnn_create_fully_connected_nc_f32"
    assert "reshape_fully_connected_nc" in recs["a-00002"].signature
    assert "xnn_destroy_operator" in recs["a-00003"].signature
    crash = recs["a-00001"].crash
    assert crash["signal"] == 11 and crash["signal_name"] == "SIGSEGV"
    assert crash["pid"] == recs["a-00001"].extra["android"]["pid"]
    assert recs["a-00001"].signal == 11
    assert recs["a-00001"].extra["android"]["exit_info"]["reason"] == 5
    # raw text is kept, and the parsed record points at it: the best DropBox report read.
    # The double writes SYSTEM_TOMBSTONE and data_app_native_crash at once, but the kit
    # reads them one after the other in one shell command and stops at the first report
    # for the pid, so on a loaded machine the write can fall between the two reads (seen:
    # only data_app_native_crash read). Whenever the tombstone was read, it is the one parsed.
    art = out / crash["raw_artifact"]
    assert art.exists() and "xnn_aligned_allocate" in art.read_text()
    reports_read = [a for a in recs["a-00001"].artifacts if "/dropbox-" in a]
    assert reports_read and crash["raw_artifact"] == reports_read[0]
    assert crash["raw_artifact"].endswith(("-SYSTEM_TOMBSTONE.txt", "-data_app_native_crash.txt"))
    if any(a.endswith("-SYSTEM_TOMBSTONE.txt") for a in reports_read):
        assert crash["raw_artifact"].endswith("-SYSTEM_TOMBSTONE.txt")
    for name in ("exit-info.txt", "logcat-crash.txt", "logcat.txt", "am-start.txt"):
        assert (out / "artifacts" / "a-00002" / name).exists()
    # the app-error keeps the app's message, the hang was force-stopped at the timeout
    assert "Protobuf parsing failed" in recs["a-00004"].error
    assert recs["a-00005"].error == f"no done within {LAUNCH_S:g} s; force-stopped"
    assert recs["a-00005"].wall_ms >= LAUNCH_S * 1000  # never stopped before the timeout
    # and stopped then, with no wait for a crash report: a hang has none to collect
    assert not (out / "artifacts" / "a-00005" / "exit-info.txt").exists()
    # completed launches carry what the app reported
    ok = recs["a-00000"]
    assert ok.ort_version == "1.24.1" and ok.eps == ["xnnpack", "cpu"]
    assert [s.model for s in ok.sessions] == ["melspectrogram", "embedding_model",
                                             "hey_jarvis_v0.1"]
    assert ok.extra["android"]["launch_state"] == "COLD"
    assert ok.device == rig.serial
    # the late "done" of the previous launch id was seen and ignored
    assert recs["a-00009"].extra["android"]["stale_lines"] >= 1
    # infra errors are retried and never counted
    campaign = load_campaign(out)
    assert len(campaign.counted) == 10 and len(campaign.infra_errors) == 1
    meta = json.loads((out / "campaign.json").read_text())
    assert meta["build"]["ort_versions_reported"] == ["1.24.1"]
    assert meta["build"]["apk_sha256"] == apk[1]
    assert [lib["path"] for lib in meta["build"]["ort_libraries"]] == [
        "lib/arm64-v8a/libonnxruntime.so", "lib/arm64-v8a/libonnxruntime4j_jni.so",
        "lib/x86_64/libonnxruntime.so", "lib/x86_64/libonnxruntime4j_jni.so"]
    assert {lib["ort_version"] for lib in meta["build"]["ort_libraries"]
            if lib["ort_core"]} == {"1.24.1"}
    assert meta["devices"][0]["component"] == f"{PKG}/.MainActivity"


def test_two_devices_run_in_parallel_into_one_campaign(rigs: Rigs, apk: tuple[Path, str],
                                                       tmp_path: Path) -> None:
    # each device's first cold start waits for the other's: both get launches, whatever
    # the load (a kit driving them one after another would leave one device without any)
    script = LaunchScript({"p-00003": B.native_crash("creation")}, together=2)
    one = rigs.add(apk[1], script, model="Pixel 8", abi="arm64-v8a")
    two = rigs.add(apk[1], script, model="sdk_gphone64_x86_64", abi="x86_64", sdk=35)
    out = tmp_path / "campaign"
    assert run_android(rigs.server, out, "--serial", one.serial, "--serial", two.serial,
                       "--apk", str(apk[0]), "--launches", "8", "--label", "p",
                       "--timeout", f"{LAUNCH_S:g}") == 0
    recs = records_by_id(out)
    assert sorted(recs) == [f"p-{i:05d}" for i in range(8)]
    devices = {r.device for r in recs.values()}
    assert devices == {one.serial, two.serial}
    # each record names the device that really ran it
    ran_on = dict(script.launched)
    assert all(ran_on[k] == ("dev0" if r.device == one.serial else "dev1")
               for k, r in recs.items())
    assert recs["p-00003"].crash_class == "xnnpack-allocator-uaf"
    abi = "arm64" if recs["p-00003"].device == one.serial else "x86_64"
    assert recs["p-00003"].crash["abi"] == abi
    meta = json.loads((out / "campaign.json").read_text())
    assert {d["model"] for d in meta["devices"]} == {"Pixel 8", "sdk_gphone64_x86_64"}


def test_reboot_mid_launch_is_an_infra_error_retried_after_reconnect(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    script = LaunchScript({"r-00001": B.drop(after="sessions-created", offline_s=0.8,
                                             reboot=True)})
    rig = rigs.add(apk[1], script)
    out = tmp_path / "campaign"
    capsys.readouterr()
    assert run_android(rigs.server, out, "--serial", rig.serial, "--apk", str(apk[0]),
                       "--launches", "3", "--label", "r", "--timeout", f"{LAUNCH_S:g}",
                       "--json") == 0
    # --json: stdout is JSON Lines, one per record, in the campaign's order; the
    # reconnect's progress lines went to stderr
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    recs = records_by_id(out)
    assert [r["launch_id"] for r in printed] == [r.launch_id for r in load_campaign(out).records]
    assert recs["r-00001"].outcome is Outcome.INFRA_ERROR
    assert recs["r-00001.r2"].outcome is Outcome.COMPLETED
    assert all(recs[k].outcome is Outcome.COMPLETED for k in ("r-00000", "r-00002"))
    assert [k for k, _ in script.launched] == ["r-00000", "r-00001", "r-00001.r2", "r-00002"] \
        or [k for k, _ in script.launched] == ["r-00000", "r-00001", "r-00002", "r-00001.r2"]


def test_slow_device_with_latency_still_completes(rigs: Rigs, apk: tuple[Path, str],
                                                  tmp_path: Path) -> None:
    script = LaunchScript({"s-00001": B.native_crash("release")})
    rig = rigs.add(apk[1], script, slowness=4.0, latency_s=0.03)
    out = tmp_path / "campaign"
    assert run_android(rigs.server, out, "--serial", rig.serial, "--apk", str(apk[0]),
                       "--launches", "2", "--label", "s", "--timeout", f"{LAUNCH_S:g}") == 0
    recs = records_by_id(out)
    assert recs["s-00000"].outcome is Outcome.COMPLETED
    assert recs["s-00000"].extra["android"]["total_time_ms"] == 480
    assert recs["s-00001"].crash_class == "xnnpack-allocator-uaf"
    assert recs["s-00001"].last_phase == "inference-done"


def test_exit_info_ring_of_16_is_matched_by_pid(rigs: Rigs, apk: tuple[Path, str],
                                               tmp_path: Path) -> None:
    # every force-stop adds an entry; by launch 18 the ring has wrapped
    n = EXIT_INFO_RING + 2
    script = LaunchScript({f"x-{n - 1:05d}": B.native_crash("inference")},
                          default=B.completed(first_frame_ms=20, phase_gap_ms=5))
    rig = rigs.add(apk[1], script)
    out = tmp_path / "campaign"
    assert run_android(rigs.server, out, "--serial", rig.serial, "--apk", str(apk[0]),
                       "--launches", str(n), "--label", "x", "--timeout", f"{LAUNCH_S:g}") == 0
    recs = records_by_id(out)
    last = recs[f"x-{n - 1:05d}"]
    assert last.outcome is Outcome.CRASHED and last.crash_class == "xnnpack-allocator-uaf"
    exit_info = (out / "artifacts" / last.launch_id / "exit-info.txt").read_text()
    assert exit_info.count("ApplicationExitInfo #") == EXIT_INFO_RING
    assert last.extra["android"]["exit_info"]["pid"] == last.extra["android"]["pid"]
    assert sum(r.outcome is Outcome.COMPLETED for r in recs.values()) == n - 1


def test_direct_adbd_path_runs_the_same_campaign(rigs: Rigs, apk: tuple[Path, str],
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from adb_shell.auth.keygen import keygen
    from cryptography.hazmat.primitives import serialization

    key = tmp_path / "adbkey"
    keygen(str(key))
    public = serialization.load_pem_private_key(key.read_bytes(), None).public_key()
    pem = public.public_bytes(serialization.Encoding.PEM,
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    script = LaunchScript({"d-00001": B.native_crash("creation")})
    device = FakeAndroidDevice("direct", (FakeApp(PKG, apk[1]),), script)
    rig = DeviceRig(device, None, auth_keys=(pem,))
    rigs.rigs.append(rig)
    rig.start()
    out = tmp_path / "campaign"
    assert main(["run", "android", "--direct", rig.address, "--adbkey", str(key), "--apk",
                 str(apk[0]), "--launches", "3", "--label", "d", "--timeout", f"{LAUNCH_S:g}",
                 "--out", str(out), "--report-wait", f"{REPORT_WAIT_S:g}", "--poll",
                 "0.5"]) == 0
    recs = records_by_id(out)
    assert {k: r.outcome for k, r in recs.items()} == {
        "d-00000": Outcome.COMPLETED, "d-00001": Outcome.CRASHED, "d-00002": Outcome.COMPLETED}
    assert recs["d-00001"].crash_class == "xnnpack-allocator-uaf"
    assert recs["d-00000"].device == rig.address
    # a key the device does not trust: one line, exit 2, no traceback
    other = tmp_path / "otherkey"
    keygen(str(other))
    capsys.readouterr()
    code = main(["run", "android", "--direct", rig.address, "--adbkey", str(other),
                 "--auth-timeout", "1", "--package", PKG, "--launches", "1", "--out",
                 str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is unauthorized" in err[0]


def test_devices_lists_model_abi_sdk_and_state(rigs: Rigs, apk: tuple[Path, str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    script = LaunchScript()
    one = rigs.add(apk[1], script, model="Pixel 8", abi="arm64-v8a", sdk=34)
    two = rigs.add(apk[1], script, model="sdk_gphone64_x86_64", abi="x86_64", sdk=35)
    capsys.readouterr()
    assert main(["devices", "--adb-server", f"127.0.0.1:{rigs.server.port}", "--json"]) == 0
    rows = {d["serial"]: d for d in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows[one.serial] == {"serial": one.serial, "state": "device", "transport": "server",
                                "model": "Pixel 8", "abi": "arm64-v8a", "sdk": 34,
                                "error": None}
    assert (rows[two.serial]["model"], rows[two.serial]["abi"], rows[two.serial]["sdk"]) == (
        "sdk_gphone64_x86_64", "x86_64", 35)
    # a dropped device shows as offline (or is gone) without breaking the listing, once the
    # adb server has seen its connection close (at once when idle, later when loaded)
    one.adbd.drop(30.0)
    deadline = time.monotonic() + 30
    while rigs.server.states().get(one.serial) == "device" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert main(["devices", "--adb-server", f"127.0.0.1:{rigs.server.port}", "--json"]) == 0
    rows = {d["serial"]: d for d in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows.get(one.serial, {"state": "offline"})["state"] == "offline"
    assert rows[two.serial]["state"] == "device"


@pytest.mark.parametrize("case", ["missing-apk", "wrong-package", "no-activity", "no-device",
                                  "gwp-asan-unsupported", "malloc-debug-unsupported"])
def test_bad_input_is_one_line_exit_2(case: str, rigs: Rigs, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    apk_path, sha = build_apk_double(tmp_path / "app.apk", ApkSpec(
        scheme=None if case == "no-activity" else "coldstart"))
    rig = rigs.add(sha, LaunchScript())
    args = {"missing-apk": ["--apk", str(tmp_path / "nope.apk")],
            "wrong-package": ["--package", "org.example.notinstalled"],
            "no-activity": ["--apk", str(apk_path)],
            "no-device": ["--apk", str(apk_path)],
            "gwp-asan-unsupported": ["--apk", str(apk_path), "--poison", "gwp-asan"],
            "malloc-debug-unsupported": ["--apk", str(apk_path), "--poison",
                                         "malloc-debug"]}[case]
    serial = "emulator-5998" if case == "no-device" else rig.serial
    capsys.readouterr()
    code = run_android(rigs.server, tmp_path / "out", "--serial", serial, "--launches", "1",
                       *args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("coldstart: error: ")
    expected = {"missing-apk": "nope.apk not found",
                "wrong-package": "package org.example.notinstalled is not installed",
                "no-activity": "activity not found",
                "no-device": "no device emulator-5998",
                "gwp-asan-unsupported": 'does not set android:gwpAsanMode="always"',
                "malloc-debug-unsupported": "malloc-debug is not available"}[case]
    assert expected in err[0]
    assert not (tmp_path / "out" / "launches.jsonl").exists()


def test_a_tcp_serial_is_adb_connected_and_reconnected(rigs: Rigs, apk: tuple[Path, str],
                                                        tmp_path: Path) -> None:
    script = LaunchScript({"t-00001": B.drop(after="sessions-created", offline_s=0.5)})
    rig = rigs.add(apk[1], script, server=False)  # not announced: the kit connects it
    out = tmp_path / "campaign"
    assert run_android(rigs.server, out, "--serial", rig.address, "--apk", str(apk[0]),
                       "--launches", "3", "--label", "t", "--timeout", f"{LAUNCH_S:g}") == 0
    recs = records_by_id(out)
    assert {k: r.outcome for k, r in recs.items()} == {
        "t-00000": Outcome.COMPLETED, "t-00001": Outcome.INFRA_ERROR,
        "t-00001.r2": Outcome.COMPLETED, "t-00002": Outcome.COMPLETED}
    assert {r.device for r in recs.values()} == {rig.address}
    rigs.server.adb_cmd("disconnect", rig.address)
