"""The Android target: cold-launch the React Native app over adb and record every launch.

:class:`AndroidConfig` and :class:`AndroidTarget` (a :class:`kit.launch.Target`) are
what a campaign session sees; the parts, bottom up (no module imports one above it):

* :mod:`.transport` - the :class:`AdbTransport` protocol, :class:`ShellResult`,
  :class:`LineStream`, :class:`TransportError`, quoting (:func:`shell_join`), backoff;
* :mod:`.server_transport` - :class:`ServerTransport`, an adb server's client (adbutils);
* :mod:`.direct_transport` - :class:`DirectTransport`, adbd directly (adb-shell);
* :mod:`.device` - the APK (:func:`inspect_apk`), :func:`prepare_device` (install, activity,
  poisoning) and readiness (:func:`wait_until_ready`);
* :mod:`.text` - what the device prints (logcat lines, ``am start``, DropBox, exit-info);
* :mod:`.evidence` - a death's crash evidence, matched to the launch's pid and time window;
* :mod:`.launcher` - :class:`AndroidLauncher`, one cold launch per call, recorded through
  :mod:`kit.observe`.

docs/android.md is the user's guide.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

from ...errors import UsageError
from ...records import LaunchRecord
from ...redact import redact_text
from ...scenario import Scenario
from ...launch import LogFn, PreparedTarget
from ...store.identity import BuildIdentity
from ...store.meta import RunSetup
from .device import (APP_SCHEME, PACKAGE_RE, REMOTE_APK_DIR, ApkInfo, DeviceNotReady,
                     DeviceSetup, PoisonMode, Readiness, inspect_apk, prepare_device,
                     read_readiness, state_error, wait_until_ready)
from .direct_transport import DirectTransport
from .launcher import FOLLOW_COMMAND, AndroidLauncher, AndroidTimeouts
from .server_transport import ServerTransport, ensure_server, list_server_devices, server_address
from .text import (AmStartFailed, LogLine, check_am_start, parse_am_start, parse_threadtime)
from .transport import (DEFAULT_CALL_TIMEOUT_S, HOSTPORT_RE, SERIAL_RE, AdbTransport,
                        DeviceInfo, LineStream, ShellResult, TransportError, describe,
                        reconnect_with_backoff, shell_join)

__all__ = ["AndroidConfig", "AndroidTarget", "TARGETS", "open_transports", "list_devices",
           # re-exported parts
           "ApkInfo", "inspect_apk", "PoisonMode", "DeviceSetup", "prepare_device",
           "Readiness", "read_readiness", "wait_until_ready", "DeviceNotReady", "state_error",
           "AndroidLauncher", "AndroidTimeouts", "FOLLOW_COMMAND", "parse_am_start",
           "check_am_start", "AmStartFailed", "parse_threadtime", "LogLine", "PACKAGE_RE",
           "APP_SCHEME", "REMOTE_APK_DIR", "AdbTransport", "ServerTransport",
           "DirectTransport", "ShellResult", "LineStream", "TransportError", "DeviceInfo",
           "shell_join", "server_address", "ensure_server", "list_server_devices",
           "reconnect_with_backoff", "describe", "DEFAULT_CALL_TIMEOUT_S", "SERIAL_RE",
           "HOSTPORT_RE"]


@dataclasses.dataclass(frozen=True)
class AndroidConfig:
    """An Android campaign's settings.

    Attributes:
        serials: device serials on the adb server (empty with no ``direct``: the only one).
        direct: ``HOST:PORT`` addresses of adbd to talk to directly (adb-shell).
        adb_server: ``HOST:PORT`` of the adb server (``None``: the environment's, else
            127.0.0.1:5037).
        adbkey: the private key for ``direct`` (``None``: ~/.android/adbkey).
        auth_timeout_s: how long a direct device may take to accept the key.
        apk: the APK to install (its provenance is recorded), or ``None`` with ``package``.
        package: the installed app's package when no APK is given.
        poison: ``gwp-asan`` or ``malloc-debug`` (:class:`PoisonMode`), or ``None``.
        poll_s, report_wait_s, reconnect_s, error_grace_s: see :class:`AndroidTimeouts`
            (``reconnect_s`` also bounds the wait for a device that is still booting).
        timeout_s: a launch's timeout (kept in the campaign's options).
    """

    serials: tuple[str, ...] = ()
    direct: tuple[str, ...] = ()
    adb_server: str | None = None
    adbkey: str | None = None
    auth_timeout_s: float = 30.0
    apk: str | None = None
    package: str | None = None
    poison: str | None = None
    poll_s: float = 1.0
    report_wait_s: float = 8.0
    reconnect_s: float = 60.0
    error_grace_s: float = 3.0
    timeout_s: float = 60.0


def list_devices(server: tuple[str, int] | None, direct: Sequence[str],
                 key_path: Path | None = None, auth_timeout_s: float = 30.0
                 ) -> list[DeviceInfo]:
    """Every device the adb server lists (``server`` None: skip it) plus each ``direct``
    address, described (model, ABI, SDK) when usable.

    Raises:
        TransportError: the adb server does not answer and cannot be started.
    """
    found: list[DeviceInfo] = []
    if server is not None:
        host, port = server
        ensure_server(host, port)
        for serial, state in list_server_devices(host, port):
            if state != "device" or not SERIAL_RE.match(serial):
                found.append(DeviceInfo(serial, state, "server"))
                continue
            found.append(describe(ServerTransport(serial, host, port)))
    for address in direct:
        transport = DirectTransport(address, key_path=key_path,
                                         auth_timeout_s=auth_timeout_s)
        try:
            found.append(describe(transport))
        finally:
            transport.close()
    return found


def open_transports(serials: Sequence[str], direct: Sequence[str],
                    server: tuple[str, int], key_path: Path | None = None,
                    auth_timeout_s: float = 30.0) -> list[AdbTransport]:
    """Transports for the requested devices; with none requested, the only device the
    server lists.

    Raises:
        UsageError: no device, several devices and none chosen, a serial given twice.
    """
    chosen = list(serials)
    transports: list[AdbTransport] = []
    if not chosen and not direct:
        host, port = server
        ensure_server(host, port)
        listed = list_server_devices(host, port)
        ready = [s for s, state in listed if state == "device"]
        if not ready and len(listed) == 1:  # there is one, not usable: say why
            raise state_error(*listed[0])
        if not ready and listed:
            raise UsageError("no usable device: " + ", ".join(
                f"{s} is {state.split(' (')[0]}" for s, state in listed),
                "`coldstart devices` lists them; fix one, or pass it with --serial to see "
                "what to do")
        if not ready:
            raise UsageError("no device", "connect one or start an emulator; "
                             "`coldstart devices` lists what adb sees")
        if len(ready) > 1:
            raise UsageError(f"{len(ready)} devices are connected",
                             "choose with --serial (repeat it to use several)")
        chosen = ready
    if len(set(chosen) | set(direct)) != len(chosen) + len(direct):
        raise UsageError("a device is given twice", "pass each --serial / --direct once")
    if chosen:
        host, port = server
        ensure_server(host, port)
        for serial in chosen:
            transport = ServerTransport(serial, host, port)
            if transport.state() == "absent":
                transport.connect_tcp()  # a host:port serial the server has not met yet
            transports.append(transport)
    transports += [DirectTransport(a, key_path=key_path, auth_timeout_s=auth_timeout_s)
                   for a in direct]
    return transports


class AndroidTarget:
    """:class:`kit.launch.Target` for Android: one launcher per device."""

    name = "android"

    def prepare(self, config: AndroidConfig, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """Check the APK, open the transports and prepare every device.

        Raises:
            UsageError: no app, an APK without the coldstart:// activity, bad devices.
            InfraError: a device cannot be reached.
        """
        apk = inspect_apk(config.apk) if config.apk else None
        if apk is None and not config.package:
            raise UsageError("no app given", "pass --apk APK (installs it) or --package PKG "
                                             "(already installed)")
        if apk is not None and apk.link_activity is None:
            raise UsageError(f"activity not found: {Path(apk.path).name} declares no activity "
                             f"for {APP_SCHEME}:// links",
                             "build the coldstart app (its MainActivity has the intent filter)")
        package = apk.package if apk is not None else config.package
        assert package is not None
        poison = PoisonMode(config.poison) if config.poison else None
        server = server_address(config.adb_server)
        key = Path(config.adbkey).expanduser() if config.adbkey else None
        transports = open_transports(config.serials, config.direct, server, key,
                                     config.auth_timeout_s)
        try:
            setups = [prepare_device(t, package=package, apk=apk, poison=poison,
                                     ready_timeout_s=config.reconnect_s,
                                     log=lambda m: log(f"android: {m}")) for t in transports]
        except BaseException:
            for transport in transports:
                transport.close()
            raise
        timeouts = AndroidTimeouts(poll_s=config.poll_s, report_wait_s=config.report_wait_s,
                                   reconnect_s=config.reconnect_s,
                                   error_grace_s=config.error_grace_s)
        launchers = [AndroidLauncher(t, s, timeouts, log=lambda m: log(f"android: {m}"),
                                     apk=apk) for t, s in zip(transports, setups)]
        build: dict[str, Any] = {"package": package}
        identity = BuildIdentity()
        if apk is not None:
            build.update(apk.provenance())
            versions = {v for v in (lib.get("ort_version") for lib in apk.ort_libraries)
                        if isinstance(v, str) and v}
            identity = BuildIdentity(artifact="apk", path=Path(apk.path).name,
                                     sha256=apk.sha256,
                                     version=versions.pop() if len(versions) == 1 else None)
        options = {"poison": config.poison,
                   "poison_methods": {s.serial: s.poison_method for s in setups},
                   "timeout_s": config.timeout_s, "report_wait_s": config.report_wait_s,
                   "reconnect_timeout_s": config.reconnect_s, "poll_s": config.poll_s,
                   "error_grace_s": config.error_grace_s,
                   "adb_server": redact_text(f"{server[0]}:{server[1]}")}

        def open_all() -> None:
            for launcher in launchers:
                launcher.open()

        def close() -> None:
            for launcher in launchers:
                launcher.close()

        return PreparedTarget(target=self.name, launchers=launchers, build=build,
                              options=options, devices=[s.to_dict() for s in setups],
                              open=open_all, close=close, finish=_reported_ort,
                              setup=RunSetup(timeout_s=config.timeout_s,
                                             poison=config.poison or None,
                                             compared={"poison": config.poison},
                                             learned=("ort_versions_reported",),
                                             per_device=("poison_methods",),
                                             app_id=package),
                              identity=identity)


def _reported_ort(records: Sequence[LaunchRecord]) -> dict[str, Any]:
    """The ORT versions the app reported: the binding pins none, so only the app knows."""
    return {"ort_versions_reported": sorted({r.ort_version for r in records
                                             if r.ort_version})}


TARGETS = (AndroidTarget(),)
