"""Android transports: run shell commands, follow a command's output, push a file.

Two implementations behind one small interface (:class:`AdbTransport`), chosen per device:

* :class:`ServerTransport` (the default): a client of an adb server through adbutils, local
  or remote (``ANDROID_ADB_SERVER_HOST``/``_PORT``, ``adb -H/-P``); what emulators and device
  farms expose. Exit codes come from the shell v2 protocol (the device's ``shell_v2``
  feature: 5-byte ``id, u32 length`` frames, id 3 carries the exit status; AOSP
  ``adb/shell_protocol.h``), else from an appended ``echo`` of ``$?``.
* :class:`DirectTransport`: adbd directly over TCP through adb-shell (a device in
  ``adb tcpip`` mode, an emulator's adb port) with no server; the user's ``~/.android/adbkey``
  is reused so the device already trusts it. adb-shell has no shell v2, so the exit status
  is always echoed.

Every call takes a ``timeout_s`` and raises :class:`TransportError` (an
:class:`~kit.errors.InfraError`, exit 3) when the device is gone, offline, unauthorized or too
slow, so a launch that meets one is recorded as an infra error and retried. Commands are
built from argv lists with :func:`shell_join` (``shlex.quote`` on every word): nothing a
user types reaches the device shell unquoted. :attr:`AdbTransport.round_trips` counts the
adb calls made (one per command or stream opened) for the benchmark.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import re
import shlex
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Protocol, Sequence

from ..errors import InfraError, UsageError
from ..redact import redact_text

__all__ = ["AdbTransport", "ServerTransport", "DirectTransport", "ShellResult", "LineStream",
           "TransportError", "DeviceInfo", "shell_join", "server_address", "ensure_server",
           "list_server_devices", "reconnect_with_backoff", "describe", "DEFAULT_CALL_TIMEOUT_S",
           "SERIAL_RE", "HOSTPORT_RE"]

DEFAULT_CALL_TIMEOUT_S = 30.0
#: adb serials: USB serials, ``emulator-5554``, ``host:port``, mDNS names.
SERIAL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")
HOSTPORT_RE = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:]+\])"
                         r":(?P<port>[0-9]{1,5})$")
_RC_MARK = "coldstart-rc:"


class TransportError(InfraError):
    """The device could not be reached or answered too late (exit 3; a launch that meets one
    is an infra error, retried). ``state`` is the device's state when known (``offline``,
    ``unauthorized``, ``absent``...)."""

    def __init__(self, message: str, hint: str | None = None, state: str | None = None
                 ) -> None:
        super().__init__(message, hint)
        self.state = state


def shell_join(*commands: Sequence[str]) -> str:
    """Join argv lists into one device shell line, ``; ``-separated, every word quoted.

    >>> shell_join(["am", "force-stop", "org.x"], ["logcat", "-c"])
    'am force-stop org.x; logcat -c'
    """
    return "; ".join(shlex.join(list(argv)) for argv in commands)


@dataclasses.dataclass(frozen=True)
class ShellResult:
    """One shell command's result.

    Attributes:
        exit_code: the command line's exit status (of its last command).
        stdout: standard output (with stderr mixed in when the transport cannot separate
            them: shell v1 and adb-shell).
        stderr: standard error when separated, else ``""``.
        duration_ms: host-side time of the call, in ms.
    """

    exit_code: int
    stdout: str
    stderr: str = ""
    duration_ms: float = 0.0

    @property
    def output(self) -> str:
        """stdout then stderr."""
        return self.stdout + self.stderr


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """A reachable target as ``coldstart devices`` lists it.

    ``state`` is the adb state (``device``, ``offline``, ``unauthorized``, ``recovery``...);
    ``model``, ``abi``, ``sdk`` are ``None`` when the device cannot be asked.
    """

    serial: str
    state: str
    transport: str
    model: str | None = None
    abi: str | None = None
    sdk: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dataclasses.asdict(self)


class LineStream:
    """Lines of a long-running command (``logcat``), read by a background thread.

    ``get(timeout_s)`` returns the next line or ``None`` on timeout; :attr:`ended` is set
    when the command or the connection ended (``end_reason`` says why).
    """

    def __init__(self, description: str) -> None:
        self.description = description
        self._lines: "queue.Queue[str]" = queue.Queue()
        self.ended = threading.Event()
        self.end_reason: str | None = None
        self._closer: Any = None
        self._partial = b""

    def _feed(self, data: bytes) -> None:
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        for raw in complete:
            self._lines.put(raw.rstrip(b"\r").decode("utf-8", "replace"))

    def _end(self, reason: str) -> None:
        if self._partial:
            self._lines.put(self._partial.decode("utf-8", "replace"))
            self._partial = b""
        if not self.ended.is_set():
            self.end_reason = reason
            self.ended.set()

    def get(self, timeout_s: float) -> str | None:
        """The next line, or ``None`` after ``timeout_s`` (or at once when ended and empty)."""
        try:
            return self._lines.get(timeout=max(0.0, timeout_s) if not self.ended.is_set()
                                   else 0.0)
        except queue.Empty:
            return None

    def drain(self) -> list[str]:
        """Every line waiting now."""
        out = []
        while True:
            try:
                out.append(self._lines.get_nowait())
            except queue.Empty:
                return out

    @property
    def alive(self) -> bool:
        return not self.ended.is_set()

    def close(self) -> None:
        """Stop the command (closes its connection)."""
        closer, self._closer = self._closer, None
        if closer is not None:
            try:
                closer()
            except Exception:  # closing a dead connection may fail any way; it is closed
                pass
        self._end("closed by the kit")


class AdbTransport(Protocol):
    """What a launcher needs from a device connection (see the module doc)."""

    serial: str
    kind: str
    round_trips: int

    def shell(self, command: str, timeout_s: float = DEFAULT_CALL_TIMEOUT_S) -> ShellResult:
        """Run one shell line (build it with :func:`shell_join`).

        Raises:
            TransportError: the device is unreachable, or no answer within ``timeout_s``.
        """
        ...

    def stream(self, command: str, connect_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
               ) -> LineStream:
        """Start a long-running command and return its :class:`LineStream`.

        Raises:
            TransportError: the device is unreachable.
        """
        ...

    def push(self, local: Path, remote: str, timeout_s: float = 300.0) -> None:
        """Copy a host file to the device (``remote`` under ``/data/local/tmp``).

        Raises:
            TransportError: the push failed.
        """
        ...

    def state(self) -> str:
        """``device``, ``offline``, ``unauthorized``, ``absent`` (not listed) or another
        adb state; never raises."""
        ...

    def reconnect(self, timeout_s: float) -> None:
        """Make the device usable again (reconnect with backoff, up to ``timeout_s``).

        Raises:
            TransportError: still not usable after ``timeout_s``.
        """
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def _split_rc(text: str) -> tuple[str, int | None]:
    """Split the output of ``CMD; echo coldstart-rc:$?`` into output and status."""
    pos = text.rfind(_RC_MARK)
    if pos < 0:
        return text, None
    tail = text[pos + len(_RC_MARK):].strip()
    try:
        code = int(tail.split()[0]) if tail else None
    except ValueError:
        code = None
    return text[:pos], code


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


def reconnect_with_backoff(attempt: Any, timeout_s: float, what: str,
                           first_delay_s: float = 0.25, max_delay_s: float = 4.0) -> None:
    """Call ``attempt()`` until it returns True, sleeping 0.25, 0.5, 1, 2, 4, 4... s between
    tries, for at most ``timeout_s`` seconds.

    Raises:
        TransportError: no success within ``timeout_s`` (the last error in the message).
    """
    deadline = time.monotonic() + timeout_s
    delay = first_delay_s
    last = "no answer"
    while True:
        try:
            if attempt():
                return
        except TransportError as exc:
            last = exc.message
        left = deadline - time.monotonic()
        if left <= 0:
            raise TransportError(f"{what} did not come back within {timeout_s:g} s ({last})",
                                 "check the cable / network and `adb devices`; the launch "
                                 "is kept as an infra error and retried", state="offline")
        time.sleep(min(delay, left))
        delay = min(delay * 2, max_delay_s)


# -- the adb server (adbutils) ---------------------------------------------------------

def server_address(address: str | None = None) -> tuple[str, int]:
    """``(host, port)`` of the adb server: ``address`` (``HOST:PORT`` or ``PORT``), else
    ``ANDROID_ADB_SERVER_HOST``/``ANDROID_ADB_SERVER_PORT``, else ``127.0.0.1:5037``.

    Raises:
        UsageError: ``address`` is not ``HOST:PORT``.
    """
    if address:
        if address.isdigit():
            return "127.0.0.1", _port(address, "--adb-server")
        m = HOSTPORT_RE.match(address)
        if m is None:
            raise UsageError(f"--adb-server {redact_text(address)!r} is not HOST:PORT",
                             "e.g. --adb-server 127.0.0.1:5037")
        return m.group("host").strip("[]"), _port(m.group("port"), "--adb-server")
    host = os.environ.get("ANDROID_ADB_SERVER_HOST") or "127.0.0.1"
    port_text = os.environ.get("ANDROID_ADB_SERVER_PORT") or "5037"
    return host, _port(port_text, "ANDROID_ADB_SERVER_PORT")


def _port(text: str, what: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise UsageError(f"{what} port {text!r} is not a TCP port", "use 1..65535")
    return int(text)


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
        line = command if v2 else f"{command}; echo {_RC_MARK}$?"
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
                    raise TransportError(f"{self.serial}: `{_short(command)}` gave no answer "
                                         f"within {timeout_s:g} s", "the device is slow or hung")
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
            stdout, code = _split_rc(stdout)
        if code is None:
            raise TransportError(f"{self.serial}: the connection closed during "
                                 f"`{_short(command)}`", "the device dropped off; it is "
                                 "reconnected and the launch retried", state="offline")
        return ShellResult(code, stdout, stderr, (time.monotonic() - started) * 1000.0)

    def stream(self, command: str, connect_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
               ) -> LineStream:
        """See :meth:`AdbTransport.stream` (stdout only with shell v2)."""
        v2 = self._use_v2(connect_timeout_s)
        self._count()
        conn = self._open(("shell,v2,raw:" if v2 else "shell:") + command, connect_timeout_s)
        out = LineStream(command)
        sock: socket.socket = conn.conn
        sock.settimeout(None)
        out._closer = conn.close

        def reader() -> None:
            buf = bytearray()
            try:
                while True:
                    data = sock.recv(65536)
                    if not data:
                        out._end("the connection closed")
                        return
                    if not v2:
                        out._feed(data)
                        continue
                    buf += data
                    for ident, payload in _take_frames(buf):
                        if ident == 1:
                            out._feed(payload)
                        elif ident == 3:
                            out._end(f"the command exited ({payload[0] if payload else '?'})")
                            return
            except OSError as exc:
                out._end(f"the connection failed ({exc})")

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

    def reconnect(self, timeout_s: float) -> None:
        """Wait (with backoff) until the server lists the device as ``device`` and a shell
        answers; a ``host:port`` device is ``adb connect``-ed again on each try."""
        def attempt() -> bool:
            self.connect_tcp(fresh=self.state() == "offline")
            state = self.state()
            if state != "device":
                raise TransportError(f"state {state}", state=state)
            self._v2 = None
            return self.shell("echo ok", timeout_s=5.0).stdout.strip() == "ok"

        reconnect_with_backoff(attempt, timeout_s, self.serial)

    def close(self) -> None:
        """Nothing to release: every call opens its own server connection."""


# -- adbd directly (adb-shell) ---------------------------------------------------------

def _load_signer(key_path: Path) -> Any:
    from adb_shell.auth.sign_pythonrsa import PythonRSASigner

    try:
        return PythonRSASigner.FromRSAKeyPath(str(key_path))
    except FileNotFoundError:
        raise UsageError(f"adb key {key_path} not found",
                         "run `adb keygen ~/.android/adbkey` (or any adb command once), or "
                         "pass --adbkey") from None
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
        self.port = _port(m.group("port"), "--direct")
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
        from adb_shell.transport.tcp_transport import TcpTransport

        # a stream's connection (``transport`` given) must wait for quiet logs without a
        # limit (it is stopped by closing its socket); connecting is bounded either way
        device = AdbDevice(transport or TcpTransport(self.host, self.port),
                           default_transport_timeout_s=None if transport else timeout_s)
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
            text = device.shell(f"{command}; echo {_RC_MARK}$?", transport_timeout_s=timeout_s,
                                read_timeout_s=timeout_s, timeout_s=timeout_s)
        except self._errors() as exc:
            self._drop()
            self._last_state = "offline"
            raise TransportError(f"{self.serial}: `{_short(command)}` failed: "
                                 f"{type(exc).__name__}: {exc}",
                                 "the device dropped off or is too slow", state="offline"
                                 ) from None
        stdout, code = _split_rc(text if isinstance(text, str) else text.decode())
        if code is None:
            self._drop()
            raise TransportError(f"{self.serial}: `{_short(command)}` ended without a status",
                                 "the device dropped off", state="offline")
        return ShellResult(code, stdout, "", (time.monotonic() - started) * 1000.0)

    def stream(self, command: str, connect_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
               ) -> LineStream:
        """See :meth:`AdbTransport.stream`: a second adbd connection of its own, so closing
        it stops the command and never disturbs the calls on the first."""
        from adb_shell.transport.tcp_transport import TcpTransport

        tcp = TcpTransport(self.host, self.port)
        device = self._connect(connect_timeout_s, tcp)
        self.round_trips += 2  # connect + open
        out = LineStream(command)
        # closing the socket itself wakes the reader at once (AdbDevice.close would wait for
        # the reader's lock, held while it blocks on a quiet log)
        out._closer = tcp.close
        errors = self._errors()

        def reader() -> None:
            try:
                for chunk in device.streaming_shell(command, transport_timeout_s=None,
                                                    read_timeout_s=10 ** 9, decode=False):
                    out._feed(chunk)
                out._end("the command exited")
            except errors as exc:
                out._end(f"the connection failed ({type(exc).__name__})")
            except Exception as exc:  # adb-shell raises odd types on a closed socket
                out._end(f"the connection failed ({type(exc).__name__})")

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

    def reconnect(self, timeout_s: float) -> None:
        """Close and connect again with backoff until a shell answers."""

        def attempt() -> bool:
            self._drop()
            return self.shell("echo ok", timeout_s=5.0).stdout.strip() == "ok"

        reconnect_with_backoff(attempt, timeout_s, self.serial)

    def close(self) -> None:
        """Close the adbd connection."""
        self._drop()


def _short(command: str, limit: int = 60) -> str:
    text = " ".join(command.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe(transport: AdbTransport, timeout_s: float = 10.0) -> DeviceInfo:
    """Model, ABI and SDK level of a reachable device (one shell call); a device that cannot
    be asked gets its state and the error instead. Never raises."""
    props = ("ro.product.model", "ro.product.cpu.abi", "ro.build.version.sdk")
    try:
        result = transport.shell(shell_join(*(["getprop", p] for p in props)), timeout_s)
    except TransportError as exc:
        return DeviceInfo(transport.serial, exc.state or "offline", transport.kind,
                          error=exc.message)
    values = (result.stdout.splitlines() + ["", "", ""])[:3]
    sdk = values[2].strip()
    return DeviceInfo(transport.serial, "device", transport.kind,
                      model=values[0].strip() or None, abi=values[1].strip() or None,
                      sdk=int(sdk) if sdk.isdigit() else None)

