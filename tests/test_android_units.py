"""The Android target's pieces without an adb server: text parsers, quoting, the APK reader,
poisoning checks (against the scripted device through the direct adbd transport)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Iterator

import pytest

from kit import crash
from kit.crash import dumpsys
from kit.errors import UsageError
from kit.targets import android
from kit.targets.android import text as device_text
from tests.doubles.android_adb_server import DeviceRig
from tests.doubles.android_apk_double import ApkSpec, build_apk_double
from tests.doubles.fake_adb_device import FakeAndroidDevice, FakeApp, LaunchScript
from tests.doubles.fake_adb_reports import (am_start_error, am_start_ok, dropbox_dump,
                                           exit_info_dump, exit_info_entry, threadtime)

PKG = "org.coldstart.app"


def test_am_start_output_is_read_as_key_value_pairs() -> None:
    ok = android.parse_am_start(am_start_ok(f"{PKG}/.MainActivity", "coldstart://run?id=x",
                                            "COLD", 412, 415))
    assert (ok["Status"], ok["LaunchState"], ok["TotalTime"], ok["WaitTime"]) == (
        "ok", "COLD", "412", "415")
    assert ok["Activity"] == f"{PKG}/.MainActivity"
    bad = android.parse_am_start(am_start_error(f"{PKG}/.Nope", None,
                                                f"Activity class {{{PKG}/.Nope}} does not "
                                                "exist."))
    assert bad["Error"] == f"Activity class {{{PKG}/.Nope}} does not exist."
    assert "Status" not in bad
    # Android 9 and older: ThisTime, no LaunchState
    old = android.parse_am_start("Starting: Intent { cmp=a.b/.C }\nStatus: ok\n"
                                 "Activity: a.b/.C\nThisTime: 300\nTotalTime: 300\n"
                                 "WaitTime: 320\nComplete\n")
    assert old["ThisTime"] == "300" and "LaunchState" not in old


@pytest.mark.parametrize("output,exit_code,sdk,why", [
    (am_start_ok(f"{PKG}/.MainActivity", "coldstart://run?id=x", "COLD", 412, 415), 0, 34,
     None),
    ("Starting: Intent { cmp=a.b/.C }\nStatus: ok\nActivity: a.b/.C\nThisTime: 300\n"
     "TotalTime: 300\nWaitTime: 320\nComplete\n", 0, 28, None),
    ("", 20, 34, "Can't find service: activity"),  # the text is on stderr (below)
    ("Starting: Intent { cmp=a.b/.C }\nStatus: timeout\nLaunchState: UNKNOWN (0)\n", 0, 34,
     "Status: timeout"),
    ("Starting: Intent { cmp=a.b/.C }\n", 0, 34, "no Status line"),
    ("Starting: Intent { cmp=a.b/.C }\nStatus: ok\nActivity: a.b/.C\nTotalTime: 3\n", 0,
     34, "no LaunchState line"),
    ("Starting: Intent { cmp=a.b/.C }\nWarning: Activity not started, intent has been "
     "delivered to currently running top-most instance.\nStatus: ok\nLaunchState: HOT\n", 0,
     34, "not a cold start"),
    (am_start_error(f"{PKG}/.Nope", None, "Activity class {x} does not exist."), 0, 34,
     "Activity class {x} does not exist."),
    ("Exception occurred while executing 'start':\njava.lang.SecurityException: denied\n",
     255, 34, "am exited with status 255"),
])
def test_am_start_that_made_no_launch_is_refused(output: str, exit_code: int, sdk: int,
                                                why: str | None) -> None:
    stderr = "cmd: Can't find service: activity\n" if exit_code == 20 else ""
    result = android.ShellResult(exit_code, output, stderr)
    if why is None:
        assert android.check_am_start(result, sdk, "dev")["Status"] == "ok"
        return
    with pytest.raises(android.AmStartFailed) as failed:
        android.check_am_start(result, sdk, "dev")
    assert why in failed.value.message and failed.value.message.startswith("dev: ")
    assert failed.value.no_service is (exit_code == 20)
    assert failed.value.evidence == output + stderr


def test_readiness_reads_boot_services_and_boot_id() -> None:
    boot = "6f1f7d0e-3c1a-4b5e-9d2f-0a1b2c3d4e5f"
    up = android.read_readiness(f"1\nService activity: found\nService package: found\n{boot}\n")
    assert (up.ready, up.missing, up.boot_id) == (True, (), boot)
    down = android.read_readiness(f"\nService activity: not found\nService package: found\n"
                                  f"{boot}\n")
    assert (down.ready, down.boot_completed, down.missing) == (False, False, ("activity",))
    assert down.describe() == "sys.boot_completed is not 1; no activity service"
    # no `service` tool: judged by sys.boot_completed alone
    bare = android.read_readiness(f"1\n/system/bin/sh: service: inaccessible or not found\n"
                                  f"{boot}\n")
    assert bare.ready and bare.boot_id == boot


def test_one_exit_info_entry_and_one_process_crash_lines_are_cut_out() -> None:
    import datetime as dt

    when = dt.datetime(2026, 5, 1, 12, 0, 1)
    dump = exit_info_dump(PKG, 10187, [
        exit_info_entry(0, when, 4100, 10187, PKG, 10, "USER REQUESTED", 21, "FORCE STOP", 0,
                        400, "stop due to from pid 31337"),
        exit_info_entry(1, when, 4042, 10187, PKG, 5, "APP CRASH(NATIVE)", 0, "UNKNOWN", 11,
                        100, "crash")])
    block = dumpsys.exit_info_block(dump, 1)
    assert "pid=4042" in block and "pid=4100" not in block and f"package: {PKG}" in block
    parsed = crash.parse_text(block, hint="exit-info")
    assert (parsed.pid, parsed.signal) == (4042, 11)
    assert dumpsys.exit_info_block(dump, 7) == ""
    lines = [threadtime(when, 4042, 4103, "F", "libc", "Fatal signal 11 (SIGSEGV), code 1 "
                        "(SEGV_MAPERR), fault addr 0x18 in tid 4103 (mqt_native_modu), pid 4042 "
                        "(org.coldstart.a)"),
             threadtime(when, 4442, 4442, "F", "DEBUG", "pid: 4042, tid: 4103, name: x  >>> "
                        f"{PKG} <<<"),
             threadtime(when, 4442, 4442, "F", "DEBUG", "backtrace:"),
             threadtime(when, 5000, 5001, "F", "libc", "Fatal signal 6 (SIGABRT) ... pid 5000 "
                        "(other.app)"),
             threadtime(when, 5400, 5400, "F", "DEBUG", "pid: 5000, tid: 5001, name: y")]
    mine = device_text.process_crash_lines("\n".join(lines) + "\n", 4042)
    assert mine.splitlines() == lines[:3]
    assert device_text.process_crash_lines("\n".join(lines), 4200) == ""


def test_threadtime_lines_are_split_and_others_are_none() -> None:
    line = ("11-29 10:48:02.441  4000  4027 I ReactNativeJS: COLDSTART {\"v\":1,\"id\":\"a\","
            "\"phase\":\"start\",\"t_ms\":40}")
    entry = android.parse_threadtime(line)
    assert entry is not None
    assert (entry.pid, entry.tid, entry.level, entry.tag) == (4000, 4027, "I", "ReactNativeJS")
    assert entry.msg.startswith("COLDSTART {")
    assert android.parse_threadtime("--------- beginning of crash") is None
    assert android.parse_threadtime("") is None


def test_every_word_sent_to_the_device_shell_is_quoted() -> None:
    url = "coldstart://run?id=a-00001&mode=serial; rm -rf /data $(reboot) `id`"
    line = android.shell_join(["am", "start", "-d", url], ["logcat", "*:S"])
    first, second = line.split("; logcat")
    assert shlex.split(first) == ["am", "start", "-d", url]
    assert shlex.split("logcat" + second) == ["logcat", "*:S"]


def test_bad_serials_packages_and_addresses_are_refused() -> None:
    for serial in ("emulator-5554;reboot", "a b", "", "$(id)"):
        with pytest.raises(UsageError):
            android.ServerTransport(serial)
    with pytest.raises(UsageError):
        android.server_address("host:notaport")
    assert android.server_address("10.0.0.2:5038") == ("10.0.0.2", 5038)
    assert android.server_address("5039") == ("127.0.0.1", 5039)
    assert not android.PACKAGE_RE.match("org.x;reboot")
    assert android.PACKAGE_RE.match(PKG)


def test_dropbox_output_is_split_into_entries_with_time_and_tag() -> None:
    import datetime as dt

    when = dt.datetime(2026, 5, 1, 12, 0, 2)
    text = dropbox_dump("SYSTEM_TOMBSTONE", [(when, "SYSTEM_TOMBSTONE", "pid: 1, tid: 2\n"),
                                             (when, "SYSTEM_TOMBSTONE", "pid: 3, tid: 4\n")], 5)
    entries = dumpsys.dropbox_entries(text)
    assert [(t, tag) for t, tag, _ in entries] == [("2026-05-01 12:00:02",
                                                    "SYSTEM_TOMBSTONE")] * 2
    assert "pid: 3," in entries[1][2] and entries[1][2].startswith("=====")
    assert dumpsys.dropbox_entries(dropbox_dump("x", [], 0)) == []


def test_apk_provenance(tmp_path: Path) -> None:
    path, sha = build_apk_double(tmp_path / "app.apk", ApkSpec(debuggable=True, gwp_asan=True,
                                                               wrap_sh="#!/system/bin/sh\n"))
    info = android.inspect_apk(path)
    assert info.sha256 == sha and info.package == PKG
    assert info.link_activity == f"{PKG}.MainActivity"
    assert info.main_activity == f"{PKG}.MainActivity"
    assert (info.debuggable, info.gwp_asan) == (True, True)
    assert info.wrap_sh_abis == ("arm64-v8a", "x86_64")
    import hashlib
    import zipfile

    with zipfile.ZipFile(path) as zf:
        want = hashlib.sha256(zf.read("lib/x86_64/libonnxruntime.so")).hexdigest()
    lib = next(x for x in info.ort_libraries if x["path"] == "lib/x86_64/libonnxruntime.so")
    assert (lib["sha256"], lib["size"], lib["abi"]) == (
        want, len(ApkSpec().ort_library_bytes) + len("x86_64"), "x86_64")
    assert lib["ort_version"] == "1.24.1" and lib["ort_core"] is True
    assert info.abis == ("arm64-v8a", "x86_64")
    plain = android.inspect_apk(build_apk_double(tmp_path / "b.apk", ApkSpec(scheme=None))[0])
    assert plain.link_activity is None and not plain.debuggable and not plain.gwp_asan
    (tmp_path / "not.apk").write_bytes(b"not a zip")
    with pytest.raises(UsageError, match="is not an APK"):
        android.inspect_apk(tmp_path / "not.apk")


@pytest.fixture
def direct(tmp_path: Path) -> Iterator[tuple[DeviceRig, Path]]:
    from adb_shell.auth.keygen import keygen

    key = tmp_path / "adbkey"
    keygen(str(key))
    made: list[DeviceRig] = []

    def make(apk_sha: str, **kw: object) -> DeviceRig:
        rig = DeviceRig(FakeAndroidDevice("u", (FakeApp(PKG, apk_sha),), LaunchScript(),
                                          **kw), None)  # type: ignore[arg-type]
        made.append(rig)
        return rig.start()

    yield make, key  # type: ignore[misc]
    for rig in made:
        rig.stop()
    for rig in made:
        rig.device.script.assert_used_up()


@pytest.mark.parametrize("case,spec,device_kw,want", [
    ("gwp-asan", ApkSpec(gwp_asan=True), {}, "manifest"),
    ("gwp-asan", ApkSpec(gwp_asan=True), {"sdk": 29}, "API 30"),
    ("malloc-debug", ApkSpec(debuggable=True, wrap_sh="#!/system/bin/sh\n"), {}, "wrap.sh"),
    ("malloc-debug", ApkSpec(), {"root": True}, "wrap-property"),
    ("malloc-debug", ApkSpec(), {}, "not root"),
])
def test_poison_modes_are_checked_against_device_and_app(direct, tmp_path: Path, case: str,
                                                         spec: ApkSpec, device_kw: dict,
                                                         want: str) -> None:
    make, key = direct
    path, sha = build_apk_double(tmp_path / "app.apk", spec)
    rig = make(sha, **device_kw)
    transport = android.DirectTransport(rig.address, key_path=key)
    info = android.inspect_apk(path)
    mode = android.PoisonMode(case)
    try:
        if want in ("manifest", "wrap.sh", "wrap-property"):
            setup = android.prepare_device(transport, package=PKG, apk=info, poison=mode)
            assert setup.poison_method == want and setup.poison == case
            if want == "wrap-property":
                assert rig.device.props[f"wrap.{PKG}"] == \
                    "LIBC_DEBUG_MALLOC_OPTIONS=fill_on_free logwrapper"
        else:
            with pytest.raises(UsageError, match=want):
                android.prepare_device(transport, package=PKG, apk=info, poison=mode)
            assert PKG not in rig.device.installed  # refused before installing
    finally:
        transport.close()


def test_install_refused_by_the_device_is_one_usage_error(direct, tmp_path: Path) -> None:
    make, key = direct
    rig = make("0" * 64)  # the device knows no APK with this file's hash
    path, _ = build_apk_double(tmp_path / "app.apk")
    transport = android.DirectTransport(rig.address, key_path=key)
    try:
        with pytest.raises(UsageError, match="INSTALL_PARSE_FAILED_NOT_APK"):
            android.prepare_device(transport, package=PKG, apk=android.inspect_apk(path))
    finally:
        transport.close()


def test_a_log_quiet_for_longer_than_the_call_timeout_is_a_hang_not_an_infra_error(
        direct, tmp_path: Path) -> None:
    from kit.campaign import run_campaign
    from tests.helpers import prepare_store
    from kit.records import Outcome
    from kit.scenario import parse_scenario
    from tests.doubles.fake_adb_device import AppBehaviour

    make, key = direct
    path, sha = build_apk_double(tmp_path / "app.apk")
    rig = make(sha)
    rig.device.script.behaviours["q-00000"] = AppBehaviour.hang(after="start")
    transport = android.DirectTransport(rig.address, key_path=key)
    setup = android.prepare_device(transport, package=PKG, apk=android.inspect_apk(path))
    # every adb call of the launch must finish within call_s, on a loaded machine too;
    # the log then stays quiet for about 3 call timeouts, with no pidof meanwhile (poll_s)
    call_s = 2.0
    launcher = android.AndroidLauncher(transport, setup, android.AndroidTimeouts(
        call_s=call_s, poll_s=60.0))
    scenario = parse_scenario("")
    store, old = prepare_store(tmp_path / "c", label="q", target="android",
                               scenario=scenario, launches=1, resume=False)
    try:
        records = run_campaign(store, old, [launcher], label="q", scenario=scenario,
                               launches=1, timeout_s=3 * call_s, max_attempts=1)
    finally:
        launcher.close()
    assert [(r.outcome, r.last_phase) for r in records] == [(Outcome.HUNG, "start")]


def test_a_real_manifest_gives_package_launcher_and_no_link_activity(tmp_path: Path) -> None:
    """io.appium.settings 8.0.10's binary manifest (tests/data/app_inspect/README.md): a
    debuggable app with a launcher activity and no coldstart:// filter."""
    import zipfile

    manifest = Path(__file__).parent / "data" / "app_inspect" / \
        "io.appium.settings-8.0.10.AndroidManifest.xml"
    path = tmp_path / "settings.apk"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("AndroidManifest.xml", manifest.read_bytes())
    info = android.inspect_apk(path)
    assert (info.package, info.main_activity, info.link_activity) == (
        "io.appium.settings", "io.appium.settings.Settings", None)
    assert info.debuggable and not info.gwp_asan and info.ort_libraries == ()


def test_adb_keys_are_read_bounded_and_named_when_wrong(tmp_path: Path) -> None:
    """``--adbkey``: a key pair ``adb keygen`` wrote loads; /dev/zero, a missing ``.pub``,
    a file far larger than a key and one that is not a key are each one UsageError naming
    the file (the private key was read whole before, so /dev/zero never returned)."""
    from adb_shell.auth.keygen import keygen

    from kit.targets.android.direct_transport import _load_signer

    key = tmp_path / "adbkey"
    keygen(str(key))
    assert _load_signer(key).GetPublicKey() == (tmp_path / "adbkey.pub").read_text()
    lone = tmp_path / "lone"
    lone.write_bytes(key.read_bytes())
    huge = tmp_path / "huge"
    huge.write_bytes(b"x" * (1 << 20))
    (tmp_path / "huge.pub").write_bytes(b"x")
    junk = tmp_path / "junk"
    junk.write_text("not a key")
    (tmp_path / "junk.pub").write_text("not a key either")
    for path, said in ((Path("/dev/zero"), "adb key /dev/zero is a character device"),
                       (lone, f"adb public key {lone}.pub not found"),
                       (huge, f"adb key {huge} is larger than"),
                       (junk, f"adb key {junk} cannot be read"),
                       (tmp_path / "none", "not found")):
        with pytest.raises(UsageError) as info:
            _load_signer(path)
        assert said in info.value.one_line()
