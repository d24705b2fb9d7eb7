"""The Android target's pieces without an adb server: text parsers, quoting, the APK reader,
poisoning checks (against the scripted device through the direct adbd transport)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Iterator

import pytest

from kit.errors import UsageError
from kit.targets import adb_transport as adbt
from kit.targets import android
from tests.doubles.android_adb_server import DeviceRig
from tests.doubles.android_apk_double import ApkSpec, build_apk_double
from tests.doubles.fake_adb_device import FakeAndroidDevice, FakeApp, LaunchScript
from tests.doubles.fake_adb_reports import am_start_error, am_start_ok, dropbox_dump

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
    line = adbt.shell_join(["am", "start", "-d", url], ["logcat", "*:S"])
    first, second = line.split("; logcat")
    assert shlex.split(first) == ["am", "start", "-d", url]
    assert shlex.split("logcat" + second) == ["logcat", "*:S"]


def test_bad_serials_packages_and_addresses_are_refused() -> None:
    for serial in ("emulator-5554;reboot", "a b", "", "$(id)"):
        with pytest.raises(UsageError):
            adbt.ServerTransport(serial)
    with pytest.raises(UsageError):
        adbt.server_address("host:notaport")
    assert adbt.server_address("10.0.0.2:5038") == ("10.0.0.2", 5038)
    assert adbt.server_address("5039") == ("127.0.0.1", 5039)
    assert not android.PACKAGE_RE.match("org.x;reboot")
    assert android.PACKAGE_RE.match(PKG)


def test_dropbox_output_is_split_into_entries_with_time_and_tag() -> None:
    import datetime as dt

    when = dt.datetime(2026, 5, 1, 12, 0, 2)
    text = dropbox_dump("SYSTEM_TOMBSTONE", [(when, "SYSTEM_TOMBSTONE", "pid: 1, tid: 2\n"),
                                             (when, "SYSTEM_TOMBSTONE", "pid: 3, tid: 4\n")], 5)
    entries = android._dropbox_entries(text)
    assert [(t, tag) for t, tag, _ in entries] == [("2026-05-01 12:00:02",
                                                    "SYSTEM_TOMBSTONE")] * 2
    assert "pid: 3," in entries[1][2] and entries[1][2].startswith("=====")
    assert android._dropbox_entries(dropbox_dump("x", [], 0)) == []


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
    transport = adbt.DirectTransport(rig.address, key_path=key)
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
    transport = adbt.DirectTransport(rig.address, key_path=key)
    try:
        with pytest.raises(UsageError, match="INSTALL_PARSE_FAILED_NOT_APK"):
            android.prepare_device(transport, package=PKG, apk=android.inspect_apk(path))
    finally:
        transport.close()


def test_a_log_quiet_for_longer_than_the_call_timeout_is_a_hang_not_an_infra_error(
        direct, tmp_path: Path) -> None:
    from kit.campaign import prepare_store, run_campaign
    from kit.records import Outcome
    from kit.scenario import parse_scenario
    from tests.doubles.fake_adb_device import AppBehaviour

    make, key = direct
    path, sha = build_apk_double(tmp_path / "app.apk")
    rig = make(sha)
    rig.device.script.behaviours["q-00000"] = AppBehaviour.hang(after="start")
    transport = adbt.DirectTransport(rig.address, key_path=key)
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
