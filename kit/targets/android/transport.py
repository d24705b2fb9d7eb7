"""What every Android transport offers (:class:`AdbTransport`) and the values it returns.

Two implementations sit behind this interface, one per module, chosen per device (the
layering adb-shell uses: the launcher above never touches bytes):

* :mod:`.server_transport` (the default): a client of an adb server through adbutils, local
  or remote; what emulators and device farms expose.
* :mod:`.direct_transport`: adbd directly over TCP through adb-shell, with no server.

Every call takes a ``timeout_s`` and raises :class:`TransportError` (an
:class:`~kit.errors.InfraError`, exit 3) when the device is gone, offline, unauthorized or too
slow, so a launch that meets one is recorded as an infra error and retried. Commands are
built from argv lists with :func:`shell_join` (``shlex.quote`` on every word): nothing a
user types reaches the device shell unquoted. :attr:`AdbTransport.round_trips` counts the
adb calls made (one per command or stream opened) for the benchmark.
"""

from __future__ import annotations

import dataclasses
import queue
import re
import shlex
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from ...errors import InfraError, UsageError

__all__ = ["AdbTransport", "ShellResult", "LineStream", "TransportError", "DeviceInfo",
           "shell_join", "reconnect_with_backoff", "state_error", "keep_alive", "describe",
           "parse_port",
           "split_rc", "short_command", "DEFAULT_CALL_TIMEOUT_S", "SERIAL_RE", "HOSTPORT_RE",
           "RC_MARK"]

DEFAULT_CALL_TIMEOUT_S = 30.0
#: adb serials: USB serials, ``emulator-5554``, ``host:port``, mDNS names.
SERIAL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")
HOSTPORT_RE = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:]+\])"
                         r":(?P<port>[0-9]{1,5})$")
#: What a transport without exit statuses appends (``; echo coldstart-rc:$?``).
RC_MARK = "coldstart-rc:"


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


_ENDED = object()


class LineStream:
    """Lines of a long-running command (``logcat``), read by a background thread.

    The transport's reader thread calls :meth:`feed` with each chunk and :meth:`end` once;
    ``get(timeout_s)`` returns the next line or ``None`` on timeout; :attr:`ended` is set
    when the command or the connection ended (``end_reason`` says why).

    Args:
        description: the command, for messages.
        closer: called by :meth:`close` to stop the command (closes its connection).
    """

    def __init__(self, description: str, closer: Callable[[], Any] | None = None) -> None:
        self.description = description
        self._lines: "queue.Queue[Any]" = queue.Queue()
        self.ended = threading.Event()
        self.end_reason: str | None = None
        self._closer = closer
        self._partial = b""

    def feed(self, data: bytes) -> None:
        """Add output bytes; every complete line becomes available to :meth:`get`."""
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        for raw in complete:
            self._lines.put(raw.rstrip(b"\r").decode("utf-8", "replace"))

    def end(self, reason: str) -> None:
        """The command or its connection ended (the first reason given is kept)."""
        if self._partial:
            self._lines.put(self._partial.decode("utf-8", "replace"))
            self._partial = b""
        if not self.ended.is_set():
            self.end_reason = reason
            self.ended.set()
            self._lines.put(_ENDED)  # wakes a reader waiting in get() at once

    def get(self, timeout_s: float) -> str | None:
        """The next line, or ``None`` after ``timeout_s`` (or at once when ended and empty)."""
        try:
            line = self._lines.get(timeout=max(0.0, timeout_s) if not self.ended.is_set()
                                   else 0.0)
        except queue.Empty:
            return None
        return None if line is _ENDED else line

    def drain(self) -> list[str]:
        """Every line waiting now."""
        out: list[str] = []
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return out
            if line is not _ENDED:
                out.append(line)

    @property
    def alive(self) -> bool:
        """Neither the command nor its connection has ended."""
        return not self.ended.is_set()

    def close(self) -> None:
        """Stop the command (closes its connection); ``end_reason`` says so."""
        self.end("closed by the kit")
        closer, self._closer = self._closer, None
        if closer is not None:
            try:
                closer()
            except Exception:  # closing a dead connection may fail any way; it is closed
                pass


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

    def reconnect(self, timeout_s: float, should_stop: Callable[[], bool] = lambda: False
                  ) -> None:
        """Make the device usable again: reconnect with backoff until a shell answers, up
        to ``timeout_s`` (:func:`reconnect_with_backoff`; ``should_stop`` ends it early).
        Whether the device's system is up is the caller's check
        (:func:`kit.targets.android.device.wait_until_ready`).

        Raises:
            TransportError: still not usable after ``timeout_s``.
        """
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def split_rc(text: str) -> tuple[str, int | None]:
    """Split the output of ``CMD; echo coldstart-rc:$?`` into output and status."""
    pos = text.rfind(RC_MARK)
    if pos < 0:
        return text, None
    tail = text[pos + len(RC_MARK):].strip()
    try:
        code = int(tail.split()[0]) if tail else None
    except ValueError:
        code = None
    return text[:pos], code


#: adb states of a device that is not running Android (adb's ``to_string(ConnectionState)``)
_NOT_ANDROID = ("bootloader", "recovery", "rescue", "sideload")


def state_error(serial: str, state: str) -> InfraError | UsageError:
    """The error for a device in adb state ``state`` (anything but ``device``): what the
    user must fix is a :class:`UsageError` (exit 2: ``unauthorized``, ``no permissions
    (...)``, a device in bootloader/recovery/rescue/sideload mode, none listed); a state
    that passes by itself (``offline``, ``connecting``, ``authorizing``) an
    :class:`InfraError` (exit 3). States: adb's ``adb devices`` (packages/modules/adb
    transport.cpp, ``UsbNoPermissionsShortHelpText``)."""
    if state in ("absent", "no-server"):
        return UsageError(f"no device {serial}" + (
            " (no adb server answers)" if state == "no-server" else ""),
            "run `coldstart devices` and pass one of its serials with --serial")
    if state == "unauthorized":
        return UsageError(f"device {serial} is unauthorized",
                          "accept the USB debugging prompt on the device (if there is none, "
                          "replug it or revoke USB debugging authorizations), then run again")
    if state.startswith("no permissions"):
        return UsageError(f"device {serial}: adb has no permissions to open it",
                          "add a udev rule for it (https://developer.android.com/studio/run/"
                          "device), then `adb kill-server` and run again")
    if state in _NOT_ANDROID:
        return UsageError(f"device {serial} is in {state} mode, not running Android",
                          "reboot it into Android (`adb reboot`), then run again")
    return InfraError(f"device {serial} is {state}",
                      "reconnect it (`adb reconnect`) and run again")


def reconnect_with_backoff(attempt: Callable[[], bool], timeout_s: float, what: str,
                           first_delay_s: float = 0.25, max_delay_s: float = 4.0,
                           should_stop: Callable[[], bool] = lambda: False) -> None:
    """Call ``attempt()`` until it returns True, sleeping 0.25, 0.5, 1, 2, 4, 4... s between
    tries, for at most ``timeout_s`` seconds (``should_stop()`` true ends the wait early:
    Ctrl-C).

    Raises:
        TransportError: no success within ``timeout_s``, or stopped (the last error in the
            message).
    """
    deadline = time.monotonic() + timeout_s
    delay = first_delay_s
    last, state = "no answer", None
    while True:
        try:
            if attempt():
                return
        except TransportError as exc:
            last, state = exc.message, exc.state
        left = deadline - time.monotonic()
        if left <= 0 or should_stop():
            # a state only the user can change (unauthorized...) says what to do
            fix = state_error(what, state) if state else None
            hint = fix.hint if isinstance(fix, UsageError) else \
                "check the cable / network and `adb devices`"
            raise TransportError(f"{what} did not come back within {timeout_s:g} s ({last})",
                                 f"{hint}; the launch is kept as an infra error and retried",
                                 state=state if isinstance(fix, UsageError) else "offline")
        time.sleep(min(delay, left))
        delay = min(delay * 2, max_delay_s)


def keep_alive(sock: socket.socket, idle_s: int = 5, interval_s: int = 2,
               probes: int = 3) -> None:
    """Turn on TCP keepalive so that a peer that vanished without a FIN or RST (a cable
    pulled, a farm's bridge gone) fails reads after about ``idle_s + interval_s * probes``
    seconds (Linux ``tcp(7)``: ``TCP_KEEPIDLE``, ``TCP_KEEPINTVL``, ``TCP_KEEPCNT``; other
    systems get the plain ``SO_KEEPALIVE``). Never raises."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (("TCP_KEEPIDLE", idle_s), ("TCP_KEEPINTVL", interval_s),
                            ("TCP_KEEPCNT", probes)):
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
    except OSError:
        pass


def parse_port(text: str, what: str) -> int:
    """``text`` as a TCP port.

    Raises:
        UsageError: not 1..65535 (``what`` names the option).
    """
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise UsageError(f"{what} port {text!r} is not a TCP port", "use 1..65535")
    return int(text)


def short_command(command: str, limit: int = 60) -> str:
    """``command`` on one line, cut to ``limit`` characters (for messages)."""
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

