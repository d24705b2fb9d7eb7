"""A private, real adb server for tests, and scripted devices adopted by it.

:class:`PrivateAdbServer` runs the adb binary (the one on PATH, e.g. Debian's ``adb``, or
the one adbutils ships) as a server on a free port of its own, so tests never touch a user's
server on 5037; :meth:`PrivateAdbServer.stop` kills it (``adb -P PORT kill-server``).
:class:`DeviceRig` is one scripted device: a :class:`FakeAndroidDevice` behind a
:class:`FakeAdbd`, announced to the server as an emulator.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import time

from tests.doubles.fake_adb_device import FakeAndroidDevice
from tests.doubles.fake_adbd import FakeAdbd

__all__ = ["PrivateAdbServer", "DeviceRig", "free_port", "HERMETIC_ENV"]


#: how many free ports a server or device tries when another process took the one it picked
PORT_ATTEMPTS = 5
#: A real adb server scans the local emulator ports (5555 up to
#: ``ADB_LOCAL_TRANSPORT_MAX_PORT``, default 5585) when it starts and every few seconds
#: after, and adopts whatever answers there: a maintainer's emulator, or any program on
#: those ports (adb's ``adb --help``, "environment variables"). ``ADB_EMU=0`` turns that
#: scanner off, and a maximum below the first port (5555) leaves nothing to scan for an
#: adb that does not know ``ADB_EMU``; the scripted devices announce themselves
#: (``host:emulator:<port>``, what the emulator binary does), so they are still adopted.
#: mDNS discovery is off too (``ADB_MDNS=0``): no device of the network either.
HERMETIC_ENV = {"ADB_EMU": "0", "ADB_LOCAL_TRANSPORT_MAX_PORT": "5554", "ADB_MDNS": "0",
                "ADB_MDNS_AUTO_CONNECT": ""}


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (outside the emulator range 5554-5585).
    Another process may take it before it is bound again: whoever binds it retries."""
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
        self._use_port(free_port())

    def _use_port(self, port: int) -> None:
        self.port = port
        self.env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(self.port), **HERMETIC_ENV}
        for name in ("ANDROID_ADB_SERVER_HOST", "ADB_VENDOR_KEYS", "ANDROID_SERIAL",
                     "ADB_SERVER_SOCKET"):
            self.env.pop(name, None)

    def start(self) -> "PrivateAdbServer":
        """Start the server; on a port another process took meanwhile, on another one."""
        for attempt in range(PORT_ATTEMPTS):
            # the port is free again only if nobody listens there: an adb server of another
            # run that picked the same port would otherwise be silently shared
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", self.port))
                except OSError:
                    self._use_port(free_port())
                    continue
            proc = subprocess.run([self.adb, "-P", str(self.port), "start-server"],
                                  env=self.env, capture_output=True, timeout=60)
            if proc.returncode == 0:
                return self
            if attempt == PORT_ATTEMPTS - 1:
                raise AssertionError(f"adb start-server on port {self.port} failed: "
                                     f"{proc.stderr.decode(errors='replace')}")
            self._use_port(free_port())
        raise AssertionError(f"no free port for the adb server in {PORT_ATTEMPTS} tries")

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
        self.adbd = FakeAdbd(device, port=_odd_free_port(), latency_s=latency_s,
                             auth_keys=auth_keys)
        device.on_drop = lambda offline_s, reboot: self.adbd.drop(offline_s)

    def start(self) -> "DeviceRig":
        for attempt in range(PORT_ATTEMPTS):
            try:
                self.adbd.start()
                break
            except OSError as exc:  # the port was taken since it was picked: another one
                if exc.errno != errno.EADDRINUSE or attempt == PORT_ATTEMPTS - 1:
                    raise
                self.adbd.port = _odd_free_port()
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


def _odd_free_port() -> int:
    """A free port with an odd number: the adb server names an emulator after its console
    port (adb port - 1), so the serial looks like a real one."""
    port = free_port()
    while port % 2 == 0:
        port = free_port()
    return port
