"""One TCP Android device through adbd directly (adb-shell), with no adb server:
:class:`DirectTransport`.

For a device in ``adb tcpip`` mode or an emulator's adb port. The user's ``~/.android/adbkey``
is reused so the device already trusts it. adb-shell has no shell v2, so the exit status is
always echoed.

Timeouts (issue #16): adb-shell reads until its ``read_timeout_s`` and takes an empty read as
"no data yet", so a socket at EOF (a dropped device) used to read as silence until the whole
call's timeout (90 s for an ``am start``). :class:`SlicedTcpTransport`, the transport layer
under adb-shell's ``AdbDevice``, keeps the two apart: each socket read waits at most
``slice_s`` and an EOF raises at once, while adb-shell's ``read_timeout_s``/``timeout_s``
carry the call's overall deadline; TCP keepalive catches a peer that vanished silently.
"""

from __future__ import annotations

import select
import threading
import time
from pathlib import Path
from typing import Any, Callable

from adb_shell.transport.tcp_transport import TcpTransport

from ...errors import UsageError
from .transport import (DEFAULT_CALL_TIMEOUT_S, HOSTPORT_RE, RC_MARK, LineStream, ShellResult,
                        TransportError, keep_alive, parse_port, reconnect_with_backoff,
                        short_command, split_rc)

__all__ = ["DirectTransport", "SlicedTcpTransport"]


class SlicedTcpTransport(TcpTransport):
    """adb-shell's TCP transport with reads in short slices and EOF surfaced.

    Args:
        host, port: adbd's address.
        slice_s: the longest one socket read waits before answering "no data yet"
            (``b""``, which adb-shell retries until its own deadline).
        write_timeout_s: the longest a write waits when the caller gives no timeout.
    """

    def __init__(self, host: str, port: int, slice_s: float = 0.5,
                 write_timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> None:
        super().__init__(host, port)
        self.slice_s = slice_s
        self.write_timeout_s = write_timeout_s

    def connect(self, transport_timeout_s: float | None) -> None:
        """Connect (bounded by ``transport_timeout_s``), non-blocking, with keepalive."""
        super().connect(transport_timeout_s or self.write_timeout_s)
        keep_alive(self._connection)

    def bulk_read(self, numbytes: int, transport_timeout_s: float | None) -> bytes:
        """Up to ``numbytes``, or ``b""`` after ``slice_s`` without data.

        Raises:
            ConnectionResetError: the peer closed the connection (EOF), or it was closed here.
        """
        connection = self._connection
        if connection is None:
            raise ConnectionResetError(f"{self._host}:{self._port}: the connection is closed")
        wait = self.slice_s if transport_timeout_s is None else min(self.slice_s,
                                                                     transport_timeout_s)
        try:
            readable, _, _ = select.select([connection], [], [], wait)
        except (ValueError, OSError):  # closed by another thread (a stream stopped)
            raise ConnectionResetError(f"{self._host}:{self._port}: the connection is closed"
                                       ) from None
        if not readable:
            return b""
        data = connection.recv(numbytes)
        if not data:
            raise ConnectionResetError(f"{self._host}:{self._port} closed the connection")
        return data

    def bulk_write(self, data: bytes, transport_timeout_s: float | None) -> int:
        """See ``TcpTransport.bulk_write`` (never unbounded)."""
        if self._connection is None:
            raise ConnectionResetError(f"{self._host}:{self._port}: the connection is closed")
        return super().bulk_write(data, transport_timeout_s or self.write_timeout_s)


#: the most bytes of an adb key file read (a 2048-bit PEM key is about 1.7 KB, its .pub 0.7)
KEY_MAX_BYTES = 64 << 10


def _load_signer(key_path: Path) -> Any:
    """adb-shell's signer for the private key at ``key_path`` and its public half at
    ``key_path.pub`` (the pair ``adb keygen`` writes), each read bounded
    (:data:`KEY_MAX_BYTES`; a device such as /dev/zero is refused, never read).

    Raises:
        UsageError: either file is missing, not a regular file, too large or not a key.
    """
    from adb_shell.auth.sign_pythonrsa import PythonRSASigner

    from ..._bounded import read_bytes_bounded
    from ...errors import DataError

    public = Path(f"{key_path}.pub")
    try:
        priv = read_bytes_bounded(key_path, KEY_MAX_BYTES, what="adb key",
                                  missing=f"adb key {key_path} not found",
                                  missing_hint="run `adb keygen ~/.android/adbkey` (or any adb "
                                               "command once), or pass --adbkey")
        pub = read_bytes_bounded(public, KEY_MAX_BYTES, what="adb public key",
                                 missing=f"adb public key {public} not found (it sits beside "
                                         f"the private key {key_path})",
                                 missing_hint=f"write it with `adb pubkey {key_path} > "
                                              f"{public}`")
    except DataError as exc:  # larger than a key
        raise UsageError(exc.message, "pass the private key adb made (~/.android/adbkey)"
                         ) from None
    try:
        return PythonRSASigner(pub.decode("utf-8"), priv.decode("utf-8"))
    except Exception as exc:
        raise UsageError(f"adb key {key_path} cannot be read ({type(exc).__name__})",
                         "pass the private key adb made (~/.android/adbkey)") from None


class DirectTransport:
    """One TCP device through adbd directly (adb-shell; see the module doc).

    Args:
        address: ``HOST:PORT`` of the device's adbd.
        key_path: private key the device trusts (default ``~/.android/adbkey``).
        auth_timeout_s: how long to wait for the user to accept an unknown key.
    """

    kind = "direct"

    def __init__(self, address: str, key_path: Path | None = None,
                 auth_timeout_s: float = 30.0) -> None:
        m = HOSTPORT_RE.match(address)
        if m is None:
            raise UsageError(f"--direct {address!r} is not HOST:PORT",
                             "e.g. --direct 192.168.1.20:5555")
        self.serial = address
        self.host = m.group("host").strip("[]")
        self.port = parse_port(m.group("port"), "--direct")
        self.key_path = key_path or Path.home() / ".android" / "adbkey"
        self.auth_timeout_s = auth_timeout_s
        self.round_trips = 0
        self._signer = _load_signer(self.key_path)
        self._device: Any = None
        self._last_state = "absent"

    def _errors(self) -> tuple[type[BaseException], ...]:
        from adb_shell import exceptions as e

        return (OSError, e.TcpTimeoutException, e.AdbTimeoutError, e.AdbConnectionError,
                e.InvalidResponseError, e.InvalidChecksumError, e.DeviceAuthError,
                e.PushFailedError, e.AdbCommandFailureException)

    def _connect(self, timeout_s: float, transport: Any = None) -> Any:
        from adb_shell.adb_device import AdbDevice
        from adb_shell.exceptions import DeviceAuthError

        device = AdbDevice(transport or SlicedTcpTransport(self.host, self.port),
                           default_transport_timeout_s=timeout_s)
        offered: list[bool] = []
        try:
            device.connect(rsa_keys=[self._signer], transport_timeout_s=timeout_s,
                           auth_timeout_s=self.auth_timeout_s, read_timeout_s=timeout_s,
                           auth_callback=lambda _dev: offered.append(True))
        except DeviceAuthError:
            self._last_state = "unauthorized"
            device.close()
            raise TransportError(f"{self.serial}: the device refused the adb key "
                                 f"{self.key_path}", "accept the key on the device, or pass "
                                 "--adbkey", state="unauthorized") from None
        except self._errors() as exc:
            device.close()
            if offered:  # adb-shell offered our public key and the device never accepted it
                self._last_state = "unauthorized"
                raise TransportError(f"{self.serial}: the device did not accept the adb key "
                                     f"{self.key_path} within {self.auth_timeout_s:g} s",
                                     "accept the USB debugging prompt on the device, or pass "
                                     "--adbkey", state="unauthorized") from None
            self._last_state = "absent" if isinstance(exc, ConnectionRefusedError) else "offline"
            raise TransportError(f"{self.serial}: cannot connect to adbd: "
                                 f"{type(exc).__name__}: {exc}",
                                 "check that the device is in `adb tcpip` mode and reachable",
                                 state=self._last_state) from None
        self._last_state = "device"
        return device

    def _dev(self, timeout_s: float) -> Any:
        if self._device is None or not self._device.available:
            self.round_trips += 1
            self._device = self._connect(timeout_s)
        return self._device

    def _drop(self) -> None:
        if self._device is not None:
            try:
                self._device.close()
            except Exception:  # already broken
                pass
            self._device = None

    def shell(self, command: str, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> ShellResult:
        """See :meth:`AdbTransport.shell` (status from an appended echo)."""
        started = time.monotonic()
        device = self._dev(timeout_s)
        self.round_trips += 1
        try:
            # reads wait in slices and fail at EOF (SlicedTcpTransport); the call's deadline
            # is adb-shell's read_timeout_s / timeout_s
            text = device.shell(f"{command}; echo {RC_MARK}$?", transport_timeout_s=timeout_s,
                                read_timeout_s=timeout_s, timeout_s=timeout_s)
        except self._errors() as exc:
            self._drop()
            self._last_state = "offline"
            raise TransportError(f"{self.serial}: `{short_command(command)}` failed: "
                                 f"{type(exc).__name__}: {exc}",
                                 "the device dropped off or is too slow", state="offline"
                                 ) from None
        stdout, code = split_rc(text if isinstance(text, str) else text.decode())
        if code is None:
            self._drop()
            raise TransportError(f"{self.serial}: `{short_command(command)}` ended without a "
                                 "status", "the device dropped off", state="offline")
        return ShellResult(code, stdout, "", (time.monotonic() - started) * 1000.0)

    def stream(self, command: str, connect_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
               ) -> LineStream:
        """See :meth:`AdbTransport.stream`: a second adbd connection of its own, so closing
        it stops the command and never disturbs the calls on the first."""
        tcp = SlicedTcpTransport(self.host, self.port)
        device = self._connect(connect_timeout_s, tcp)
        self.round_trips += 2  # connect + open
        # closing the socket itself wakes the reader at its next slice (AdbDevice.close would
        # wait for the reader's lock, held while it waits on a quiet log)
        out = LineStream(command, closer=tcp.close)

        def reader() -> None:
            try:
                # a quiet log is no error: no overall deadline; a drop ends it (EOF)
                for chunk in device.streaming_shell(command, read_timeout_s=10 ** 9,
                                                    decode=False):
                    out.feed(chunk)
                out.end("the command exited")
            except Exception as exc:  # adb-shell raises many types on a closed socket
                out.end(f"the connection failed ({type(exc).__name__}: {exc})")

        threading.Thread(target=reader, daemon=True, name=f"adbd-stream-{self.serial}").start()
        return out

    def push(self, local: Path, remote: str, timeout_s: float = 300.0) -> None:
        """See :meth:`AdbTransport.push`."""
        device = self._dev(timeout_s)
        self.round_trips += 1
        try:
            device.push(str(local), remote, transport_timeout_s=timeout_s,
                        read_timeout_s=timeout_s)
        except self._errors() as exc:
            self._drop()
            raise TransportError(f"{self.serial}: push of {local.name} failed: "
                                 f"{type(exc).__name__}: {exc}") from None

    def state(self) -> str:
        """See :meth:`AdbTransport.state` (connects when not connected)."""
        try:
            self._dev(5.0)
        except TransportError as exc:
            return exc.state or "offline"
        return "device"

    def reconnect(self, timeout_s: float, should_stop: Callable[[], bool] = lambda: False
                  ) -> None:
        """Close and connect again with backoff until a shell answers."""

        def attempt() -> bool:
            self._drop()
            return self.shell("echo ok", timeout_s=5.0).stdout.strip() == "ok"

        reconnect_with_backoff(attempt, timeout_s, self.serial, should_stop=should_stop)

    def close(self) -> None:
        """Close the adbd connection."""
        self._drop()
