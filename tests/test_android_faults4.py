"""Issue #44 on Android: a log channel that dies, late or stale evidence, an app removed by
someone else; over the adb server and over adbd directly, played by the scripted device
(tests/doubles/fake_adb_device.py).

Every adb server here is private (its own free port, outside 5037 and the emulator ports);
the scripted devices listen on free ports of their own.
"""

from __future__ import annotations

from pathlib import Path

from kit.records import Outcome
from tests.doubles.fake_adb_device import AppBehaviour as B
from tests.doubles.fake_adb_device import LaunchScript
from tests.helpers.android import TRANSPORTS, Rigs, run, split



@TRANSPORTS
def test_a_logd_restart_under_a_crash_is_read_from_exit_info_and_dropbox(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    # logd restarts half a second after sessions-created: every reader ends, the buffers
    # are lost, a new logcat is refused for 2 s; the app dies of SIGSEGV 0.5 s after the
    # restart, and only exit-info and DropBox (tombstone) know it
    script = LaunchScript({"d-00001": B.native_crash("inference", after="sessions-created",
                                                     logd_restart_s=2.0,
                                                     phase_gap_ms=1000)})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "3", "--label", "d")
    assert code == 0
    recs, counted, infra = split(out)
    assert infra == [] and len(counted) == 3
    crash = recs["d-00001"]
    assert (crash.outcome, crash.last_phase, crash.crash_class) == (
        Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf")
    assert crash.attempt == 1
    assert crash.extra["android"]["log_restarts"] >= 1
    assert {r.outcome for r in counted if r.launch_id != "d-00001"} == {Outcome.COMPLETED}
    script.assert_used_up()


@TRANSPORTS
def test_a_bare_fatal_signal_whose_tombstone_comes_late_is_a_crash_of_no_class(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    # the Fatal signal 11 line at once; the tombstone and DropBox entries 8 s after the
    # death, later than the 2 s report wait (during the next launch)
    script = LaunchScript({"t-00001": B.native_crash("creation", tombstone_late_s=8.0)})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "3", "--label", "t", "--report-wait", "2")
    assert code == 0
    recs, counted, infra = split(out)
    assert infra == [] and len(counted) == 3
    crash = recs["t-00001"]
    assert (crash.outcome, crash.last_phase, crash.signal) == (
        Outcome.CRASHED, "models-ready", 11)
    assert crash.crash_class is None and crash.signature is None
    assert "no frames" in (crash.error or "")
    # the late tombstone is not the next launch's
    assert (recs["t-00002"].outcome, recs["t-00002"].crash) == (Outcome.COMPLETED, None)


@TRANSPORTS
def test_an_earlier_boots_tombstone_of_a_reused_pid_is_never_taken(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    # the device rebooted with its clock a day back: DropBox holds a tombstone of the
    # earlier boot for pid 4001, stamped after the device's present; the first launch
    # (after the index-0 launch, pid 4000) gets pid 4001 again and dies of #32461
    script = LaunchScript({"b-00001": B.native_crash("inference")})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "3", "--label", "b",
                    earlier_boot_tombstone=(4001, 86400.0 - 600.0))
    assert code == 0
    recs, counted, infra = split(out)
    assert infra == [] and len(counted) == 3
    crash = recs["b-00001"]
    assert crash.extra["android"]["pid"] == 4001
    assert (crash.outcome, crash.crash_class) == (Outcome.CRASHED, "xnnpack-allocator-uaf")
    assert "reshape_fully_connected_nc" in crash.signature
    assert recs["b-00002"].outcome is Outcome.COMPLETED


@TRANSPORTS
def test_an_app_removed_by_someone_else_is_reinstalled_and_the_launch_retried(
        transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], apk: tuple[Path, str],
        tmp_path: Path) -> None:
    # an MDM removes the app after models-ready (pm path prints nothing, exit-info goes
    # with it); the retry of the same launch completes
    script = LaunchScript({"u-00001": (B.completed(after="models-ready", uninstall=True),
                                       B.completed())})
    out = tmp_path / "c"
    rig, code = run(transport, rigs, adbkey, apk[1], script, out, "--apk", str(apk[0]),
                    "--launches", "3", "--label", "u")
    assert code == 0
    recs, counted, infra = split(out)
    assert len(counted) == 3 and {r.outcome for r in counted} == {Outcome.COMPLETED}
    assert [(r.launch_id, r.outcome) for r in infra] == [("u-00001", Outcome.INFRA_ERROR)]
    assert "removed" in infra[0].error
    retried = next(r for r in counted if r.index == 1)
    assert (retried.attempt, retried.outcome) == (2, Outcome.COMPLETED)
    assert retried.extra["android"]["reinstalled"] == {"replaced": "not installed",
                                                       "reinstalls": 1}
    assert rig.device.installed  # installed again
