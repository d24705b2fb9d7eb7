"""One Android device through an adb server (adbutils): :class:`ServerTransport`.

The server is local or remote (``ANDROID_ADB_SERVER_HOST``/``_PORT``, ``adb -H/-P``); that is
what emulators and device farms expose. Exit codes come from the shell v2 protocol (the
device's ``shell_v2`` feature: 5-byte ``id, u32 length`` frames, id 3 carries the exit
status; AOSP ``adb/shell_protocol.h``), else from an appended ``echo`` of ``$?``. A device
that drops off closes the server's connection (EOF), which ends a call at once.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from ...errors import UsageError
from ...redact import redact_text
from .transport import (DEFAULT_CALL_TIMEOUT_S, HOSTPORT_RE, RC_MARK, SERIAL_RE, LineStream,
                        ShellResult, TransportError, keep_alive, parse_port,
                        reconnect_with_backoff, short_command, split_rc)

__all__ = ["ServerTransport", "server_address", "ensure_server", "list_server_devices"]


def _take_frames(buf: bytearray) -> list[tuple[int, bytes]]:
    """Remove the complete shell v2 frames (``u8 id, u32 length, payload``) at the start of
    ``buf`` and return them as ``(id, payload)``; a partial frame stays in ``buf``."""
    frames = []
    while len(buf) >= 5:
        ident, length = buf[0], struct.unpack("<I", bytes(buf[1:5]))[0]
        if len(buf) < 5 + length:
            break
        frames.append((ident, bytes(buf[5:5 + length])))
        del buf[:5 + length]
    return frames


def server_address(address: str | None = None) -> tuple[str, int]:
    """``(host, port)`` of the adb server: ``address`` (``HOST:PORT`` or ``PORT``), else
    ``ANDROID_ADB_SERVER_HOST``/``ANDROID_ADB_SERVER_PORT``, else ``127.0.0.1:5037``.

    Raises:
        UsageError: ``address`` is not ``HOST:PORT``.
    """
    if address:
        if address.isdigit():
            return "127.0.0.1", parse_port(address, "--adb-server")
        m = HOSTPORT_RE.match(address)
        if m is None:
            raise UsageError(f"--adb-server {redact_text(address)!r} is not HOST:PORT",
                             "e.g. --adb-server 127.0.0.1:5037")
        return m.group("host").strip("[]"), parse_port(m.group("port"), "--adb-server")
    host = os.environ.get("ANDROID_ADB_SERVER_HOST") or "127.0.0.1"
    port_text = os.environ.get("ANDROID_ADB_SERVER_PORT") or "5037"
    return host, parse_port(port_text, "ANDROID_ADB_SERVER_PORT")


def _reachable(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def ensure_server(host: str, port: int, start: bool = True) -> None:
    """Make sure an adb server answers on ``host:port``; start a local one (``adb -P PORT
    start-server``, the adb on PATH or the one adbutils ships) when it does not and ``start``.

    Raises:
        TransportError: no server, and it cannot be started here (remote host, no adb).
    """
    if _reachable(host, port):
        return
    local = host in ("127.0.0.1", "localhost", "::1")
    if not (start and local):
        raise TransportError(f"no adb server answers on {host}:{port}",
                             "start it (`adb -P PORT start-server`) or point --adb-server "
                             "at the farm's server")
    from adbutils import adb_path
    from adbutils.errors import AdbError

    try:
        adb = adb_path()
    except AdbError:
        raise TransportError("no adb server is running and no adb binary was found",
                             "install platform-tools (Debian: apt-get install adb)") from None
    proc = subprocess.run([adb, "-P", str(port), "start-server"], capture_output=True,
                          text=True, timeout=30)
    if proc.returncode != 0 or not _reachable(host, port, 2.0):
        raise TransportError(f"could not start an adb server on port {port}: "
                             f"{(proc.stderr or proc.stdout).strip()[-200:]}",
                             "start it yourself with `adb start-server`")


def _client(host: str, port: int, timeout_s: float) -> Any:
    from adbutils import AdbClient

    return AdbClient(host=host, port=port, socket_timeout=timeout_s)


def list_server_devices(host: str, port: int, timeout_s: float = 10.0) -> list[tuple[str, str]]:
    """``[(serial, state)]`` the adb server knows (``adb devices``).

    Raises:
        TransportError: the server does not answer.
    """
    from adbutils.errors import AdbError

    if not _reachable(host, port):
        raise TransportError(f"no adb server answers on {host}:{port}",
                             "start one with `adb start-server` or pass --adb-server")
    try:
        with _client(host, port, timeout_s).make_connection(timeout=timeout_s) as conn:
            conn.send_command("host:devices")
            conn.check_okay()
            text = conn.read_string_block()
    except (AdbError, OSError, EOFError) as exc:
        raise TransportError(f"adb server {host}:{port} failed: {exc}") from None
    out = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 2:
            out.append((parts[0], parts[1]))
    return out


class ServerTransport:
    """One device through an adb server (see the module doc).

    Args:
        serial: the device's serial in the server's list.
        host, port: the adb server.
    """

    kind = "server"

    def __init__(self, serial: str, host: str = "127.0.0.1", port: int = 5037) -> None:
        if not SERIAL_RE.match(serial):
            raise UsageError(f"serial {serial!r} is not a device serial",
                             "copy it from `coldstart devices`")
        self.serial = serial
        self.host = host
        self.port = port
        self.round_trips = 0
        self._v2: bool | None = None
        self._lock = threading.Lock()

    def _count(self) -> None:
        with self._lock:
            self.round_trips += 1

    def _fail(self, exc: BaseException, what: str) -> TransportError:
        text = str(exc) or type(exc).__name__
        state = None
        if "offline" in text:
            state = "offline"
        elif "unauthorized" in text:
            state = "unauthorized"
        elif "not found" in text:
            state = "absent"
        return TransportError(f"{self.serial}: {what} failed: {text}",
                              "check `adb devices`", state=state)

    def _open(self, service: str, timeout_s: float) -> Any:
        """A server connection switched to this device with ``service`` opened."""
        from adbutils.errors import AdbError

        try:
            conn = _client(self.host, self.port, timeout_s).make_connection(timeout=timeout_s)
        except (AdbError, OSError) as exc:
            raise TransportError(f"adb server {self.host}:{self.port} does not answer ({exc})",
                                 "start it, or check --adb-server") from None
        keep_alive(conn.conn)  # a remote server that vanishes fails reads within seconds
        try:
            conn.send_command(f"host:transport:{self.serial}")
            conn.check_okay()
            conn.send_command(service)
            conn.check_okay()
        except (AdbError, OSError, EOFError) as exc:
            conn.close()
            raise self._fail(exc, service.split(":", 1)[0]) from None
        return conn

    def _features(self, timeout_s: float) -> set[str]:
        from adbutils.errors import AdbError

        try:
            with _client(self.host, self.port, timeout_s).make_connection(
                    timeout=timeout_s) as conn:
                conn.send_command(f"host-serial:{self.serial}:features")
                conn.check_okay()
                return set(conn.read_string_block().split(","))
        except (AdbError, OSError, EOFError) as exc:
            raise self._fail(exc, "features") from None

    def _use_v2(self, timeout_s: float) -> bool:
        if self._v2 is None:
            self._v2 = "shell_v2" in self._features(timeout_s)
        return self._v2

    def shell(self, command: str, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> ShellResult:
        """See :meth:`AdbTransport.shell`."""
        started = time.monotonic()
        deadline = started + timeout_s
        v2 = self._use_v2(timeout_s)
        line = command if v2 else f"{command}; echo {RC_MARK}$?"
        self._count()
        conn = self._open(("shell,v2,raw:" if v2 else "shell:") + line, timeout_s)
        sock: socket.socket = conn.conn
        chunks: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        code: int | None = None
        buf = bytearray()
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TransportError(f"{self.serial}: `{short_command(command)}` gave no "
                                         f"answer within {timeout_s:g} s",
                                         "the device is slow or hung")
                sock.settimeout(left)
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    continue
                except OSError as exc:
                    raise self._fail(exc, "shell") from None
                if not data:
                    break
                if not v2:
                    chunks[1] += data
                    continue
                buf += data
                for ident, payload in _take_frames(buf):
                    if ident in (1, 2):
                        chunks[ident] += payload
                    elif ident == 3 and payload:
                        code = payload[0]
                if code is not None:
                    break
        finally:
            conn.close()
        stdout = chunks[1].decode("utf-8", "replace")
        stderr = chunks[2].decode("utf-8", "replace")
        if not v2:
            stdout, code = split_rc(stdout)
        if code is None:
            raise TransportError(f"{self.serial}: the connection closed during "
                                 f"`{short_command(command)}`", "the device dropped off; it is "
                                 "reconnected and the launch retried", state="offline")
        return ShellResult(code, stdout, stderr, (time.monotonic() - started) * 1000.0)

    def stream(self, command: str, connect_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
               ) -> LineStream:
        """See :meth:`AdbTransport.stream` (stdout only with shell v2)."""
        v2 = self._use_v2(connect_timeout_s)
        self._count()
        conn = self._open(("shell,v2,raw:" if v2 else "shell:") + command, connect_timeout_s)
        out = LineStream(command, closer=conn.close)
        sock: socket.socket = conn.conn
        sock.settimeout(None)

        def reader() -> None:
            buf = bytearray()
            errors = bytearray()  # the command's stderr: its last words name why it ended
            try:
                while True:
                    data = sock.recv(65536)
                    if not data:
                        out.end("the connection closed")
                        return
                    if not v2:
                        out.feed(data)
                        continue
                    buf += data
                    for ident, payload in _take_frames(buf):
                        if ident == 1:
                            out.feed(payload)
                        elif ident == 2:
                            errors = (errors + payload)[-400:]
                        elif ident == 3:
                            said = errors.decode("utf-8", "replace").strip().splitlines()
                            out.end(f"the command exited ({payload[0] if payload else '?'})"
                                    + (f": {said[-1]}" if said else ""))
                            return
            except OSError as exc:
                out.end(f"the connection failed ({exc})")

        threading.Thread(target=reader, daemon=True, name=f"adb-stream-{self.serial}").start()
        return out

    def push(self, local: Path, remote: str, timeout_s: float = 300.0) -> None:
        """See :meth:`AdbTransport.push` (the sync protocol through the server)."""
        from adbutils.errors import AdbError

        self._count()
        try:
            device = _client(self.host, self.port, timeout_s).device(serial=self.serial)
            device.sync.push(str(local), remote)
        except (AdbError, OSError, EOFError) as exc:
            raise self._fail(exc, f"push of {local.name}") from None

    def state(self) -> str:
        """See :meth:`AdbTransport.state`."""
        try:
            devices = dict(list_server_devices(self.host, self.port, timeout_s=5.0))
        except TransportError:
            return "no-server"
        return devices.get(self.serial, "absent")

    def connect_tcp(self, timeout_s: float = 5.0, fresh: bool = False) -> str | None:
        """``adb connect`` a ``host:port`` serial (a TCP device or a farm's bridge), after
        ``adb disconnect`` when ``fresh`` (the server keeps a dropped TCP device ``offline``
        and retries on its own schedule); returns the server's answer (``connected to ...``,
        ``failed to connect ...``), or ``None`` for other serials or when the server cannot
        be asked. Never raises."""
        if HOSTPORT_RE.match(self.serial) is None:
            return None
        answer = None
        for request in ((f"host:disconnect:{self.serial}",) if fresh else ()) + (
                f"host:connect:{self.serial}",):
            try:
                with _client(self.host, self.port, timeout_s).make_connection(
                        timeout=timeout_s) as conn:
                    conn.send_command(request)
                    conn.check_okay()
                    answer = str(conn.read_string_block())
            except Exception:  # the answer is only advice; the device list tells the outcome
                answer = None
        return answer

    def reconnect(self, timeout_s: float, should_stop: Callable[[], bool] = lambda: False
                  ) -> None:
        """Wait (with backoff) until the server lists the device as ``device`` and a shell
        answers; a ``host:port`` device is ``adb connect``-ed again on each try, and a local
        server that is gone is started again (:func:`ensure_server`)."""
        def attempt() -> bool:
            # a local server that was killed (``adb kill-server``, a crash) is started
            # again, as the first call did; a remote one is the farm's to restart
            ensure_server(self.host, self.port)
            self.connect_tcp(fresh=self.state() == "offline")
            state = self.state()
            if state != "device":
                raise TransportError(f"state {state}", state=state)
            self._v2 = None
            return self.shell("echo ok", timeout_s=5.0).stdout.strip() == "ok"

        reconnect_with_backoff(attempt, timeout_s, self.serial, should_stop=should_stop)

    def close(self) -> None:
        """Nothing to release: every call opens its own server connection."""
