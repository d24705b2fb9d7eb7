"""``coldstart devices`` and ``coldstart run android``: thin layers over
:mod:`kit.targets.android` and :mod:`kit.targets.adb_transport`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..cli_common import TargetSetup, add_campaign_options, run_setup, scenario_from_args, \
    seconds_arg, stderr_console
from ..errors import UsageError
from ..redact import redact_text
from . import adb_transport as adbt
from . import android

__all__ = ["register", "list_devices", "open_transports"]


def _seconds(text: str) -> float:
    """argparse type: :func:`kit.cli_common.seconds_arg` (0..600 s), above 0."""
    value = seconds_arg(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 seconds is not allowed here")
    return value


def _connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("adb")
    group.add_argument("--adb-server", metavar="HOST:PORT", default=None,
                       help="adb server to use (default: ANDROID_ADB_SERVER_HOST/PORT, "
                            "else 127.0.0.1:5037; a local one is started if needed)")
    group.add_argument("--direct", metavar="HOST:PORT", action="append", default=[],
                       help="talk to a TCP device's adbd directly (adb-shell, no server); "
                            "repeatable")
    group.add_argument("--adbkey", metavar="PATH", default=None,
                       help="private key for --direct (default: ~/.android/adbkey)")
    group.add_argument("--auth-timeout", type=_seconds, default=30.0, metavar="S",
                       help="for --direct: how long to wait for the device to accept the "
                            "key (default 30)")


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``devices`` and ``run android``."""
    devices = commands.add_parser("devices", help="list reachable Android devices with "
                                                  "model, ABI, SDK level and state")
    _connection_options(devices)
    devices.add_argument("--json", action="store_true", help="one JSON object per device")
    devices.set_defaults(func=_devices)

    run = run_targets.add_parser(
        "android", help="cold-launch the app on Android devices and emulators over adb",
        description="Install the APK, then cold-launch it with the scenario as a deep link, "
                    "once per launch; several --serial values run in parallel into one "
                    "campaign.")
    run.add_argument("--serial", action="append", default=[], metavar="S",
                     help="device serial from `coldstart devices` (repeatable; default: the "
                          "only device)")
    app = run.add_mutually_exclusive_group()
    app.add_argument("--apk", metavar="APK", help="install this APK (pm install -r -t) and "
                                                   "record its provenance")
    app.add_argument("--package", metavar="PKG",
                     help="use the app already installed under this package")
    run.add_argument("--poison", choices=[m.value for m in android.PoisonMode], default=None,
                     help="heap poisoning: gwp-asan (APK with gwpAsanMode=always) or "
                          "malloc-debug (debuggable APK with wrap.sh, or the wrap property "
                          "on a root / emulator image)")
    _connection_options(run)
    tuning = run.add_argument_group("timing")
    tuning.add_argument("--report-wait", type=_seconds, default=8.0, metavar="S",
                        help="after a death, wait up to S s for its report (default 8)")
    tuning.add_argument("--reconnect-timeout", type=_seconds, default=60.0, metavar="S",
                        help="how long to try to get a dropped device back (default 60)")
    tuning.add_argument("--poll", type=_seconds, default=1.0, metavar="S",
                        help="check the process with pidof after S s without a log line "
                             "(default 1)")
    add_campaign_options(run, default_timeout_s=60.0)
    run.set_defaults(func=_run, setup=_setup)


def _server(args: argparse.Namespace) -> tuple[str, int]:
    return adbt.server_address(args.adb_server)


def _key(args: argparse.Namespace) -> Path | None:
    return Path(args.adbkey).expanduser() if args.adbkey else None


def list_devices(server: tuple[str, int] | None, direct: Sequence[str],
                 key_path: Path | None = None, auth_timeout_s: float = 30.0
                 ) -> list[adbt.DeviceInfo]:
    """Every device the adb server lists (``server`` None: skip it) plus each ``direct``
    address, described (model, ABI, SDK) when usable.

    Raises:
        TransportError: the adb server does not answer and cannot be started.
    """
    found: list[adbt.DeviceInfo] = []
    if server is not None:
        host, port = server
        adbt.ensure_server(host, port)
        for serial, state in adbt.list_server_devices(host, port):
            if state != "device" or not adbt.SERIAL_RE.match(serial):
                found.append(adbt.DeviceInfo(serial, state, "server"))
                continue
            found.append(adbt.describe(adbt.ServerTransport(serial, host, port)))
    for address in direct:
        transport = adbt.DirectTransport(address, key_path=key_path,
                                         auth_timeout_s=auth_timeout_s)
        try:
            found.append(adbt.describe(transport))
        finally:
            transport.close()
    return found


def _devices(args: argparse.Namespace) -> int:
    infos = list_devices(_server(args), args.direct, _key(args), args.auth_timeout)
    if args.json:
        for info in infos:
            print(json.dumps(info.to_dict(), separators=(",", ":")))
        return 0
    from rich.console import Console
    from rich.table import Table

    if not infos:
        print("no devices (connect one, start an emulator, or `adb connect HOST:PORT`)",
              file=sys.stderr)
        return 0
    table = Table(title="Android devices")
    for column in ("serial", "state", "model", "ABI", "SDK", "transport"):
        table.add_column(column)
    for info in infos:
        table.add_row(info.serial, info.state, info.model or "-", info.abi or "-",
                      str(info.sdk) if info.sdk is not None else "-", info.transport)
    Console().print(table)
    return 0


def open_transports(serials: Sequence[str], direct: Sequence[str],
                    server: tuple[str, int], key_path: Path | None = None,
                    auth_timeout_s: float = 30.0) -> list[adbt.AdbTransport]:
    """Transports for the requested devices; with none requested, the only device the
    server lists.

    Raises:
        UsageError: no device, several devices and none chosen, a serial given twice.
    """
    chosen = list(serials)
    transports: list[adbt.AdbTransport] = []
    if not chosen and not direct:
        host, port = server
        adbt.ensure_server(host, port)
        ready = [s for s, state in adbt.list_server_devices(host, port) if state == "device"]
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
        adbt.ensure_server(host, port)
        for serial in chosen:
            transport = adbt.ServerTransport(serial, host, port)
            if transport.state() == "absent":
                transport.connect_tcp()  # a host:port serial the server has not met yet
            transports.append(transport)
    transports += [adbt.DirectTransport(a, key_path=key_path, auth_timeout_s=auth_timeout_s)
                   for a in direct]
    return transports


def _setup(args: argparse.Namespace, log: Callable[[str], None] | None = None) -> TargetSetup:
    """Check the APK, open the transports and prepare every device of ``run android`` (what
    the CLI and the pytest plugin both call).

    Raises:
        UsageError: no app, an APK without the coldstart:// activity, bad devices.
        InfraError: a device cannot be reached.
    """
    scenario_from_args(args)  # a bad scenario is refused before any device is touched
    apk = android.inspect_apk(args.apk) if args.apk else None
    if apk is None and not args.package:
        raise UsageError("no app given", "pass --apk APK (installs it) or --package PKG "
                                         "(already installed)")
    if apk is not None and apk.link_activity is None:
        raise UsageError(f"activity not found: {Path(apk.path).name} declares no activity "
                         f"for {android.APP_SCHEME}:// links",
                         "build the coldstart app (its MainActivity has the intent filter)")
    package = apk.package if apk is not None else args.package
    poison = android.PoisonMode(args.poison) if args.poison else None
    transports = open_transports(args.serial, args.direct, _server(args), _key(args),
                                 args.auth_timeout)
    if log is None:
        console = stderr_console()
        log = lambda m: console.print(f"android: {m}")  # noqa: E731
    setups = [android.prepare_device(t, package=package, apk=apk, poison=poison, log=log)
              for t in transports]
    timeouts = android.AndroidTimeouts(poll_s=args.poll, report_wait_s=args.report_wait,
                                       reconnect_s=args.reconnect_timeout)
    launchers = [android.AndroidLauncher(t, s, timeouts) for t, s in zip(transports, setups)]
    build: dict[str, Any] = {"package": package}
    if apk is not None:
        build.update(apk.provenance())
    options = {"poison": args.poison, "poison_methods": {s.serial: s.poison_method
                                                         for s in setups},
               "timeout_s": args.timeout, "report_wait_s": args.report_wait,
               "reconnect_timeout_s": args.reconnect_timeout, "poll_s": args.poll,
               "adb_server": redact_text(f"{_server(args)[0]}:{_server(args)[1]}")}

    def close() -> None:
        for launcher in launchers:
            launcher.close()

    return TargetSetup(target="android", launchers=launchers, build=build, options=options,
                       devices=[s.to_dict() for s in setups], close=close)


def _run(args: argparse.Namespace) -> int:
    code = run_setup(args, _setup(args))
    _record_reported_ort(args, scenario_from_args(args))
    return code


def _record_reported_ort(args: argparse.Namespace, scenario: Any) -> None:
    """Add the ORT versions the app reported to the campaign's build provenance."""
    from ..campaign import CampaignStore, load_campaign, update_meta

    label = args.label or scenario.mode
    out = Path(args.out) if args.out else Path("runs") / label
    if not (out / "campaign.json").exists():
        return
    versions = sorted({r.ort_version for r in load_campaign(out).records if r.ort_version})
    update_meta(CampaignStore(out), build={"ort_versions_reported": versions})
