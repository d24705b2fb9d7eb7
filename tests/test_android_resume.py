"""Resuming an Android campaign (``coldstart run android --resume``) against scripted
devices on a real adb server: after a ``kill -9`` of the driver in the middle of a launch,
and on another device than the one the campaign started on.

The driver killed mid-launch is a real ``python -m kit.cli`` process, sent SIGKILL by the
scripted device itself at a fixed point of the launch's timeline (no sleep decides when).
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.records import Outcome
from tests.conftest import ROOT
from tests.doubles.fake_adb_device import AppBehaviour as B
from tests.doubles.fake_adb_device import LaunchScript
from tests.helpers.android import PKG, Rigs, records_by_id, run_android
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S


#: how long the killed driver may take to reach its second launch on a loaded machine
DRIVER_S = 240


class Driver:
    """A ``coldstart run android`` process that a scripted device can SIGKILL once."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self._started = threading.Event()
        self.killed = threading.Event()

    def start(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "kit.cli", *argv], cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._started.set()

    def kill(self) -> None:
        """SIGKILL the driver (the first call only: a resumed launch of the same id runs
        the same behaviour)."""
        self._started.wait(DRIVER_S)
        if not self.killed.is_set() and self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.killed.set()


def wait_for_tombstone(rigs: Rigs, serial: str, pid: int) -> None:
    """Until the device's DropBox holds the tombstone of ``pid`` (read through adb)."""
    deadline = time.monotonic() + DRIVER_S
    while time.monotonic() < deadline:
        shown = rigs.server.adb_cmd("-s", serial, "shell", "dumpsys", "dropbox", "--print",
                                    "SYSTEM_TOMBSTONE").stdout
        if f"pid: {pid}," in shown:
            return
        time.sleep(0.05)
    raise AssertionError(f"no tombstone of pid {pid} on {serial}")


@pytest.mark.parametrize("case", ["apk", "package", "crashed"])
def test_a_launch_in_flight_at_kill_9_is_redone_cleanly_on_resume(
        case: str, rigs: Rigs, apk: tuple[Path, str], tmp_path: Path) -> None:
    # r-00001 is in flight (models-ready logged) when its driver gets SIGKILL; its process
    # goes on, to `done` (apk, package) or to a native crash with its tombstone, exit-info
    # and DropBox entries (crashed). The resumed run makes r-00001 again under the same
    # launch id, and it completes: the old process (reinstalled away with --apk,
    # force-stopped with --package, or dead), its late lines and its reports must not be
    # taken for the new launch's
    driver = Driver()
    killed_run = B.native_crash("inference") if case == "crashed" else B.completed()
    script = LaunchScript({"r-00001": dataclasses.replace(
        killed_run, after="models-ready", kill_driver=True, phase_gap_ms=150)})
    rig = rigs.add(apk[1], script, on_kill_driver=driver.kill)
    out = tmp_path / "c"
    common = ["--adb-server", f"127.0.0.1:{rigs.server.port}", "--serial", rig.serial,
              "--out", str(out), "--report-wait", f"{REPORT_WAIT_S:g}",
              "--reconnect-timeout", "15", "--poll", "0.5", "--timeout", f"{LAUNCH_S:g}"]
    driver.start(["run", "android", *common, "--apk", str(apk[0]), "--launches", "3",
                  "--label", "r"])
    assert driver.proc is not None
    _, err = driver.proc.communicate(timeout=DRIVER_S)
    assert driver.killed.is_set() and driver.proc.returncode == -signal.SIGKILL, err
    assert [r.launch_id for r in load_campaign(out).records] == ["r-00000"]
    old_pid = rig.device._last_launch[PKG][1]  # the killed launch's process
    if case == "crashed":
        wait_for_tombstone(rigs, rig.serial, old_pid)
        script.behaviours["r-00001"] = B.completed(phase_gap_ms=150)  # made again: no crash
    chosen = ["--package", PKG] if case == "package" else ["--apk", str(apk[0])]
    assert run_android(rigs.server, out, "--serial", rig.serial, *chosen, "--resume",
                       "--timeout", f"{LAUNCH_S:g}") == 0
    recs = records_by_id(out)
    assert sorted(recs) == ["r-00000", "r-00001", "r-00002"]
    redone = recs["r-00001"]
    assert (redone.outcome, redone.attempt, redone.last_phase, redone.crash,
            redone.error) == (Outcome.COMPLETED, 1, "done", None, None)
    assert list(redone.phases) == ["start", "models-ready", "sessions-created",
                                   "inference-done", "sessions-released", "done"]
    assert redone.extra["android"]["pid"] == old_pid + 1  # the new process, not the old
    assert redone.extra["android"]["stale_lines"] == 1  # the old process's late `done`
    assert recs["r-00002"].outcome is Outcome.COMPLETED
    assert load_campaign(out).infra_errors == []


def test_a_campaign_resumed_on_another_device_goes_on_there_and_keeps_both(
        rigs: Rigs, apk: tuple[Path, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # a device farm hands the resumed run another device of the same build: the campaign
    # goes on there, and campaign.json keeps each device it ran on with its poisoning method
    script = LaunchScript()
    first, second = rigs.add(apk[1], script), rigs.add(apk[1], script, model="Pixel 7")
    out = tmp_path / "c"
    common = ["--apk", str(apk[0]), "--timeout", f"{LAUNCH_S:g}"]
    assert run_android(rigs.server, out, "--serial", first.serial, *common, "--launches",
                       "2", "--label", "d") == 0
    capsys.readouterr()
    code = run_android(rigs.server, out, "--serial", second.serial, *common, "--resume",
                       "--launches", "4")
    assert code == 0, capsys.readouterr().err
    campaign = load_campaign(out)
    assert [(r.launch_id, r.device, r.outcome) for r in campaign.records] == [
        ("d-00000", first.serial, Outcome.COMPLETED), ("d-00001", first.serial,
                                                       Outcome.COMPLETED),
        ("d-00002", second.serial, Outcome.COMPLETED), ("d-00003", second.serial,
                                                        Outcome.COMPLETED)]
    assert [(d["id"], d["model"]) for d in campaign.meta.devices] == [
        (first.serial, "Pixel 8"), (second.serial, "Pixel 7")]
    assert campaign.meta.options["poison_methods"] == {first.serial: None,
                                                       second.serial: None}


def test_a_device_the_campaign_ran_on_must_keep_its_poisoning_method(tmp_path: Path) -> None:
    # options.poison_methods maps each device to its method: another device joins the
    # campaign with its own; the same device with another method is another setup
    from kit.errors import UsageError
    from kit.scenario import parse_scenario
    from kit.store.resume import check_same_setup
    from tests.helpers import prepare_store

    store, _ = prepare_store(tmp_path / "c", label="m", target="android",
                             scenario=parse_scenario("mode=concurrent"), launches=2,
                             resume=False, meta_extra={"options": {
                                 "poison": "malloc-debug",
                                 "poison_methods": {"emulator-5554": "wrap.sh"}}})
    meta = store.read_meta()
    check_same_setup(Path("c"), meta, {}, {"poison": "malloc-debug", "poison_methods": {
        "emulator-5556": "wrap-property"}}, per_device=("poison_methods",))
    with pytest.raises(UsageError) as refused:
        check_same_setup(Path("c"), meta, {}, {"poison": "malloc-debug", "poison_methods": {
            "emulator-5554": "wrap-property"}}, per_device=("poison_methods",))
    assert refused.value.message == (
        "cannot resume c with other settings: options.poison_methods['emulator-5554'] was "
        "'wrap.sh', now 'wrap-property'")
    assert refused.value.hint == ("resume with the campaign's own options, or choose "
                                  "another --out")
