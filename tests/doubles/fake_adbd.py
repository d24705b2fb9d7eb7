"""FakeAdbd: a test double of ``adbd``, the daemon an Android device runs, on loopback TCP.

It speaks adbd's wire protocol (AOSP ``packages/modules/adb/protocol.txt``): 24-byte
little-endian headers ``command, arg0, arg1, length, checksum, magic`` built with adb-shell's
real packer, ``CNXN`` / ``AUTH`` / ``OPEN`` / ``OKAY`` / ``WRTE`` / ``CLSE``, one ``WRTE`` in
flight per stream until the peer's ``OKAY``, the ``shell:`` (raw) and ``shell,v2`` services
(the shell protocol: 5-byte ``id, u32 length`` frames, id 1 stdout, 2 stderr, 3 exit) and the
``sync:`` service for pushes (``STAT`` / ``SEND`` + ``DATA``... ``DONE`` -> ``OKAY``).

What the device *does* with a command is not here: a :class:`FakeAndroidDevice` (module
:mod:`tests.doubles.fake_adb_device`) answers each shell command. This module only moves
bytes, so the kit's transports meet the same framing a phone or emulator gives them.

A real adb server adopts the double the way it adopts an emulator: :meth:`FakeAdbd.announce`
sends ``host:emulator:<port>`` to the server (what the emulator binary does at boot), and the
server lists it as ``emulator-<port - 1>``. adb-shell connects to the port directly; then
``auth_keys`` (public keys) make the double ask for ``AUTH`` like a real device.

Fault injection: :meth:`FakeAdbd.drop` closes every connection and refuses new ones for a
while (a cable pulled, adbd restarting, a reboot); ``latency_s`` delays the answer to every
``OPEN`` (one round trip per adb call, as over a network or a farm).
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Callable, Protocol

from adb_shell import constants
from adb_shell.adb_message import AdbMessage, checksum

__all__ = ["FakeAdbd", "ShellHandler", "Stream", "A_VERSION", "MAX_PAYLOAD"]

#: Protocol version a current adbd sends (A_VERSION_SKIP_CHECKSUM).
A_VERSION = 0x01000001
#: Largest payload the double sends in one packet (adbd's MAX_PAYLOAD is 1 MiB; smaller is
#: allowed and exercises the clients' reassembly).
MAX_PAYLOAD = 32 * 1024
_FEATURES = ("shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,"
             "fixed_push_symlink_timestamp,abb_exec,remount_shell,track_app")
_WIRE_TO_ID = constants.WIRE_TO_ID


class ShellHandler(Protocol):
    """What answers the commands a stream carries (the device model)."""

    def banner(self) -> bytes:
        """The ``device::...`` banner sent in ``CNXN``."""
        ...

    def run_shell(self, command: str, stream: "Stream") -> int:
        """Run one shell command line, writing output to ``stream``; return its exit
        status. May block (``logcat`` follows until the stream closes)."""
        ...

    def push_file(self, path: str, mode: int, data: bytes) -> str | None:
        """Store a pushed file; return ``None`` or an error text for ``FAIL``."""
        ...

    def stat_file(self, path: str) -> tuple[int, int, int]:
        """``(mode, size, mtime)`` of a device path, zeros when absent."""
        ...


class Stream:
    """One adb stream (service connection) as seen from the device side."""

    def __init__(self, conn: "_Connection", local_id: int, remote_id: int, v2: bool) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.v2 = v2
        self.closed = threading.Event()
        self._credit = threading.Semaphore(1)
        self._inbox: list[bytes] = []
        self._inbox_cv = threading.Condition()

    # -- device -> host ---------------------------------------------------------------
    def _write_raw(self, data: bytes) -> bool:
        for start in range(0, len(data), MAX_PAYLOAD):
            chunk = data[start:start + MAX_PAYLOAD]
            while not self._credit.acquire(timeout=0.05):
                if self.closed.is_set() or self.conn.dead.is_set():
                    return False
            if self.closed.is_set():
                return False
            if not self.conn.send(constants.WRTE, self.local_id, self.remote_id, chunk):
                return False
        return True

    def write(self, data: bytes | str, fd: int = 1) -> bool:
        """Write stdout (``fd`` 1) or stderr (2). Returns False once the stream is gone."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not data:
            return not self.closed.is_set()
        if self.v2:
            data = bytes([fd]) + struct.pack("<I", len(data)) + data
        return self._write_raw(data)

    def exit(self, status: int) -> None:
        """Send the v2 exit frame (v1 has none), then close."""
        if self.v2:
            self._write_raw(bytes([3]) + struct.pack("<I", 1) + bytes([status & 0xFF]))
        self.close()

    def close(self) -> None:
        """Close the stream from the device side (``CLSE``)."""
        if not self.closed.is_set():
            self.closed.set()
            self.conn.send(constants.CLSE, self.local_id, self.remote_id, b"")
            self.conn.streams.pop(self.local_id, None)

    # -- host -> device ---------------------------------------------------------------
    def _okay(self) -> None:
        self._credit.release()

    def _deliver(self, data: bytes) -> None:
        with self._inbox_cv:
            self._inbox.append(data)
            self._inbox_cv.notify_all()

    def read(self, n: int, timeout_s: float = 5.0) -> bytes:
        """Read exactly ``n`` bytes the host wrote (sync protocol); b'' on close/timeout."""
        deadline = time.monotonic() + timeout_s
        with self._inbox_cv:
            while sum(len(b) for b in self._inbox) < n:
                left = deadline - time.monotonic()
                if left <= 0 or self.closed.is_set():
                    return b""
                self._inbox_cv.wait(min(left, 0.05))
            joined = b"".join(self._inbox)
            self._inbox = [joined[n:]] if len(joined) > n else []
            return joined[:n]


class _Connection:
    """One TCP connection from a host (an adb server or adb-shell)."""

    def __init__(self, adbd: "FakeAdbd", sock: socket.socket) -> None:
        self.adbd = adbd
        self.sock = sock
        self.dead = threading.Event()
        self.streams: dict[int, Stream] = {}
        self._send_lock = threading.Lock()
        self._connected = False
        self._token = b""

    def send(self, command: bytes, arg0: int, arg1: int, data: bytes) -> bool:
        message = AdbMessage(command, arg0, arg1, data)
        try:
            with self._send_lock:
                self.sock.sendall(message.pack() + data)
            return True
        except OSError:
            self.kill()
            return False

    def kill(self) -> None:
        if self.dead.is_set():
            return
        self.dead.set()
        for stream in list(self.streams.values()):
            stream.closed.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def _recv_exact(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def serve(self) -> None:
        try:
            while not self.dead.is_set():
                header = self._recv_exact(constants.MESSAGE_SIZE)
                if header is None:
                    break
                cmd, arg0, arg1, length, crc, magic = struct.unpack(constants.MESSAGE_FORMAT,
                                                                    header)
                data = self._recv_exact(length) if length else b""
                if data is None or magic != cmd ^ 0xFFFFFFFF:
                    break
                if crc and crc != checksum(data):
                    break
                self._handle(_WIRE_TO_ID.get(cmd, b"????"), arg0, arg1, data)
        finally:
            self.kill()
            self.adbd._forget(self)

    def _handle(self, cmd: bytes, arg0: int, arg1: int, data: bytes) -> None:
        adbd = self.adbd
        if cmd == constants.CNXN:
            if adbd.auth_keys and not self._connected:
                self._token = os.urandom(20)
                self.send(constants.AUTH, constants.AUTH_TOKEN, 0, self._token)
                return
            self._connected = True
            self.send(constants.CNXN, A_VERSION, MAX_PAYLOAD, adbd.handler.banner())
        elif cmd == constants.AUTH:
            if arg0 == constants.AUTH_SIGNATURE and adbd._signature_ok(self._token, data):
                self._connected = True
                self.send(constants.CNXN, A_VERSION, MAX_PAYLOAD, adbd.handler.banner())
            elif arg0 == constants.AUTH_SIGNATURE:
                self._token = os.urandom(20)
                self.send(constants.AUTH, constants.AUTH_TOKEN, 0, self._token)
            # AUTH_RSAPUBLICKEY: a real device shows the "Allow USB debugging?" dialog; the
            # double never accepts unknown keys, so the host times out as it would unattended.
        elif not self._connected:
            return
        elif cmd == constants.OPEN:
            service = data.rstrip(b"\x00").decode("utf-8", "replace")
            local_id = adbd._next_id()
            threading.Thread(target=self._open, args=(service, local_id, arg0), daemon=True,
                             name=f"fake-adbd-{local_id}").start()
        elif cmd == constants.OKAY:
            stream = self.streams.get(arg1)
            if stream is not None:
                stream._okay()
        elif cmd == constants.WRTE:
            stream = self.streams.get(arg1)
            if stream is not None:
                self.send(constants.OKAY, arg1, arg0, b"")
                stream._deliver(data)
        elif cmd == constants.CLSE:
            stream = self.streams.pop(arg1, None)
            if stream is not None and not stream.closed.is_set():
                stream.closed.set()  # adbd answers a host's close with its own
                self.send(constants.CLSE, arg1, arg0, b"")

    def _open(self, service: str, local_id: int, remote_id: int) -> None:
        adbd = self.adbd
        adbd.opens.append(service)
        if adbd.latency_s > 0:
            time.sleep(adbd.latency_s)
        kind, command = _split_service(service)
        if kind is None or self.dead.is_set():
            self.send(constants.CLSE, 0, remote_id, b"")
            return
        stream = Stream(self, local_id, remote_id, v2=(kind == "shell-v2"))
        self.streams[local_id] = stream
        if not self.send(constants.OKAY, local_id, remote_id, b""):
            return
        try:
            if kind == "sync":
                _serve_sync(adbd.handler, stream)
                stream.close()
            else:
                status = adbd.handler.run_shell(command, stream)
                stream.exit(status)
        except Exception as exc:  # the double must never hang its host on its own bug
            stream.write(f"fake adbd internal error: {exc!r}\n", fd=2)
            stream.exit(255)
            raise


def _split_service(service: str) -> tuple[str | None, str]:
    """``shell,v2,raw:cmd`` -> ``("shell-v2", "cmd")``; ``shell:cmd`` -> ``("shell", ...)``;
    ``sync:`` -> ``("sync", "")``; anything else -> ``(None, "")``."""
    name, _, rest = service.partition(":")
    if name == "sync":
        return "sync", ""
    if name == "exec":
        return "shell", rest
    parts = name.split(",")
    if parts[0] != "shell":
        return None, ""
    return ("shell-v2" if "v2" in parts[1:] else "shell"), rest


def _serve_sync(handler: ShellHandler, stream: Stream) -> None:
    """The file sync protocol (``SEND``/``DATA``/``DONE``, ``STAT``, ``QUIT``)."""
    while not stream.closed.is_set():
        head = stream.read(8)
        if len(head) < 8:
            return
        ident, length = head[:4], struct.unpack("<I", head[4:])[0]
        if ident == b"QUIT":
            return
        if ident == b"STAT":
            path = stream.read(length).decode("utf-8", "replace")
            mode, size, mtime = handler.stat_file(path)
            stream._write_raw(b"STAT" + struct.pack("<3I", mode, size, mtime))
        elif ident == b"SEND":
            spec = stream.read(length).decode("utf-8", "replace")
            path, _, mode_text = spec.rpartition(",")
            data = bytearray()
            while True:
                chunk_head = stream.read(8)
                if len(chunk_head) < 8:
                    return
                chunk_id, chunk_len = chunk_head[:4], struct.unpack("<I", chunk_head[4:])[0]
                if chunk_id == b"DATA":
                    data += stream.read(chunk_len)
                elif chunk_id == b"DONE":
                    break
                else:
                    return
            error = handler.push_file(path, int(mode_text or "420"), bytes(data))
            if error is None:
                stream._write_raw(b"OKAY" + struct.pack("<I", 0))
            else:
                raw = error.encode()
                stream._write_raw(b"FAIL" + struct.pack("<I", len(raw)) + raw)
        else:
            raw = b"unknown sync command"
            stream._write_raw(b"FAIL" + struct.pack("<I", len(raw)) + raw)
            return


class FakeAdbd:
    """A scripted device's adbd on ``127.0.0.1:port``.

    Args:
        handler: the device model that answers commands.
        port: TCP port, 0 for any free one (see :attr:`port` after :meth:`start`).
        latency_s: delay before answering each ``OPEN`` (one round trip per adb call).
        auth_keys: PEM public keys allowed to connect; empty means no ``AUTH`` (what an
            adb server sees from an emulator, whose adbd trusts the host).

    Attributes:
        opens: every service opened, in order (``shell,v2,raw:pidof ...``); tests count
            round trips with it.
    """

    def __init__(self, handler: ShellHandler, port: int = 0, latency_s: float = 0.0,
                 auth_keys: tuple[bytes, ...] = ()) -> None:
        self.handler = handler
        self.port = port
        self.latency_s = latency_s
        self.auth_keys = auth_keys
        self.opens: list[str] = []
        self._listener: socket.socket | None = None
        self._conns: set[_Connection] = set()
        self._lock = threading.Lock()
        self._ids = 0
        self._accepting = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._announce_to: int | None = None

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def _signature_ok(self, token: bytes, signature: bytes) -> bool:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding, utils

        for pem in self.auth_keys:
            key = serialization.load_pem_public_key(pem)
            try:  # adb signs the 20-byte token as if it were a SHA-1 digest
                key.verify(signature, token, padding.PKCS1v15(),  # type: ignore[union-attr]
                           utils.Prehashed(hashes.SHA1()))
                return True
            except Exception:
                continue
        return False

    def _forget(self, conn: _Connection) -> None:
        with self._lock:
            self._conns.discard(conn)

    def start(self) -> "FakeAdbd":
        """Listen and serve in background threads. Returns self."""
        self._listen()
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"fake-adbd-accept-{self.port}")
        self._thread.start()
        return self

    def _listen(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", self.port))
        except OSError:  # e.g. EADDRINUSE: the caller may try another port
            sock.close()
            raise
        sock.listen(16)
        sock.settimeout(0.05)
        self.port = sock.getsockname()[1]
        self._listener = sock
        self._accepting.set()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            listener = self._listener
            if listener is None or not self._accepting.is_set():
                time.sleep(0.02)
                continue
            try:
                sock, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, sock)
            with self._lock:
                self._conns.add(conn)
            threading.Thread(target=conn.serve, daemon=True,
                             name=f"fake-adbd-conn-{self.port}").start()

    def announce(self, server_port: int) -> None:
        """Tell an adb server on ``server_port`` about this device, as an emulator does at
        boot (``host:emulator:<port>``); it then lists ``emulator-<port - 1>``."""
        self._announce_to = server_port
        request = f"host:emulator:{self.port}".encode()
        with socket.create_connection(("127.0.0.1", server_port), timeout=2.0) as sock:
            sock.sendall(b"%04x" % len(request) + request)

    @property
    def serial(self) -> str:
        """The serial an adb server gives the announced double."""
        return f"emulator-{self.port - 1}"

    @property
    def connections(self) -> int:
        """Open host connections."""
        with self._lock:
            return len(self._conns)

    def drop(self, offline_s: float, on_return: Callable[[], None] | None = None) -> None:
        """Close every connection now and refuse new ones for ``offline_s`` seconds (in the
        background); then listen again, call ``on_return`` and announce again."""
        self._accepting.clear()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            conn.kill()

        def come_back() -> None:
            if self._stopped.wait(offline_s):
                return
            self._listen()
            if on_return is not None:
                on_return()
            if self._announce_to is not None:
                try:
                    self.announce(self._announce_to)
                except OSError:
                    pass

        threading.Thread(target=come_back, daemon=True, name="fake-adbd-return").start()

    def stop(self) -> None:
        """Stop listening and close every connection."""
        self._stopped.set()
        self._accepting.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            conn.kill()
        if self._thread is not None:
            self._thread.join(2)
