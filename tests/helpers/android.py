"""Shared by the Android test modules: scripted devices on a private adb server
(:class:`Rigs`; the fixtures ``adb_server``, ``rigs``, ``apk`` and ``adbkey`` are in
tests/conftest.py) and ``coldstart run android`` driven as a user runs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from tests.doubles.android_adb_server import DeviceRig, PrivateAdbServer
from tests.doubles.fake_adb_device import FakeAndroidDevice, FakeApp, LaunchScript
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

__all__ = ["PKG", "Rigs", "TRANSPORTS", "records_by_id", "run", "run_android", "split"]

PKG = "org.coldstart.app"


class Rigs:
    """Starts scripted devices for one test and stops them all at teardown."""

    def __init__(self, server: PrivateAdbServer) -> None:
        self.server = server
        self.rigs: list[DeviceRig] = []

    def add(self, sha: str, script: LaunchScript, *, server: bool = True,
            latency_s: float = 0.0, **device_kw: Any) -> DeviceRig:
        name = f"dev{len(self.rigs)}"
        device = FakeAndroidDevice(name, (FakeApp(PKG, sha),), script, **device_kw)
        rig = DeviceRig(device, self.server if server else None, latency_s=latency_s)
        self.rigs.append(rig)
        return rig.start()

    def stop(self) -> None:
        for rig in self.rigs:
            rig.stop()
        for script in {id(r.device.script): r.device.script for r in self.rigs}.values():
            script.assert_used_up()


def run_android(server: PrivateAdbServer, out: Path, *args: str) -> int:
    return main(["run", "android", "--adb-server", f"127.0.0.1:{server.port}",
                 "--out", str(out), "--report-wait", f"{REPORT_WAIT_S:g}",
                 "--reconnect-timeout", "15", "--poll", "0.5", *args])


def records_by_id(out: Path) -> dict[str, Any]:
    return {r.launch_id: r for r in load_campaign(out).records}


def run(transport: str, rigs: Rigs, adbkey: tuple[Path, bytes], sha: str,
        script: LaunchScript, out: Path, *args: str, **device_kw: Any
        ) -> tuple[DeviceRig, int]:
    """``coldstart run android`` on one new scripted device over ``transport``
    (``server``: the private adb server; ``direct``: adbd over TCP)."""
    common = ["--out", str(out), "--report-wait", f"{REPORT_WAIT_S:g}",
              "--reconnect-timeout", "15", "--poll", "0.5", "--timeout", f"{LAUNCH_S:g}",
              *args]
    if transport == "server":
        rig = rigs.add(sha, script, **device_kw)
        return rig, main(["run", "android", "--adb-server", f"127.0.0.1:{rigs.server.port}",
                          "--serial", rig.serial, *common])
    device = FakeAndroidDevice("direct", (FakeApp(PKG, sha),), script, **device_kw)
    rig = DeviceRig(device, None, auth_keys=(adbkey[1],))
    rigs.rigs.append(rig)
    rig.start()
    return rig, main(["run", "android", "--direct", rig.address, "--adbkey",
                      str(adbkey[0]), *common])


def split(out: Path) -> tuple[dict[str, Any], list[Any], list[Any]]:
    loaded = load_campaign(out)
    return records_by_id(out), list(loaded.counted), list(loaded.infra_errors)


TRANSPORTS = pytest.mark.parametrize("transport", ["server", "direct"])
