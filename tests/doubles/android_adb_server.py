"""A private, real adb server for tests, and scripted devices adopted by it.

:class:`PrivateAdbServer` runs the adb binary (the one on PATH, e.g. Debian's ``adb``, or
the one adbutils ships) as a server on a free port of its own, so tests never touch a user's
server on 5037; :meth:`PrivateAdbServer.stop` kills it (``adb -P PORT kill-server``).
:class:`DeviceRig` is one scripted device: a :class:`FakeAndroidDevice` behind a
:class:`FakeAdbd`, announced to the server as an emulator.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

from tests.doubles.fake_adb_device import FakeAndroidDevice
from tests.doubles.fake_adbd import FakeAdbd

__all__ = ["PrivateAdbServer", "DeviceRig", "free_port"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (outside the emulator range 5554-5585)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if not 5554 <= port <= 5586:
            return port


class PrivateAdbServer:
    """A real adb server on a private port (see the module doc)."""

    def __init__(self, adb: str | None = None) -> None:
        if adb is None:
            from adbutils import adb_path

            adb = adb_path()
        self.adb = adb
        self.port = free_port()
        self.env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(self.port)}
        self.env.pop("ANDROID_ADB_SERVER_HOST", None)
        self.env.pop("ADB_VENDOR_KEYS", None)

    def start(self) -> "PrivateAdbServer":
        subprocess.run([self.adb, "-P", str(self.port), "start-server"], env=self.env,
                       capture_output=True, timeout=30, check=True)
        return self

    def adb_cmd(self, *args: str, timeout_s: float = 30.0) -> subprocess.CompletedProcess:
        """Run the adb client against this server."""
        return subprocess.run([self.adb, "-P", str(self.port), *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout_s)

    def states(self) -> dict[str, str]:
        out = self.adb_cmd("devices").stdout
        return dict(line.split("\t") for line in out.splitlines()[1:] if "\t" in line)

    def wait_for(self, serial: str, state: str = "device", timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.states().get(serial) == state:
                return
            time.sleep(0.05)
        raise AssertionError(f"{serial} never became {state}: {self.states()}")

    def stop(self) -> None:
        subprocess.run([self.adb, "-P", str(self.port), "kill-server"], env=self.env,
                       capture_output=True, timeout=30)


class DeviceRig:
    """A scripted device on its own port, adopted by ``server`` as ``emulator-<port-1>``."""

    def __init__(self, device: FakeAndroidDevice, server: PrivateAdbServer | None,
                 latency_s: float = 0.0, auth_keys: tuple[bytes, ...] = ()) -> None:
        self.device = device
        self.server = server
        # the adb server names an emulator after its console port (adb port - 1): use an
        # odd adb port so the serial looks like a real one
        port = free_port()
        while port % 2 == 0:
            port = free_port()
        self.adbd = FakeAdbd(device, port=port, latency_s=latency_s, auth_keys=auth_keys)
        device.on_drop = lambda offline_s, reboot: self.adbd.drop(offline_s)

    def start(self) -> "DeviceRig":
        self.adbd.start()
        if self.server is not None:
            self.adbd.announce(self.server.port)
            self.server.wait_for(self.serial)
        return self

    @property
    def serial(self) -> str:
        return self.adbd.serial

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.adbd.port}"

    def stop(self) -> None:
        self.adbd.stop()
        self.device.close()
