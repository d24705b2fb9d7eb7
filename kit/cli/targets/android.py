"""``coldstart devices``: the Android target's own command (its ``run`` options are
:mod:`kit.targets.android.options`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ...targets import android
from ...targets.android import list_devices
from ...targets.android.options import add_connection_options

__all__ = ["register", "register_commands"]


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """:data:`kit.cli.COMMAND_MODULES`' hook."""
    register_commands(commands)


def register_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``devices``."""
    devices = commands.add_parser("devices", help="list reachable Android devices with "
                                                  "model, ABI, SDK level and state")
    add_connection_options(devices)
    devices.add_argument("--json", action="store_true", help="one JSON object per device")
    devices.set_defaults(func=_devices)


def _server(args: argparse.Namespace) -> tuple[str, int]:
    return android.server_address(args.adb_server)


def _key(args: argparse.Namespace) -> Path | None:
    return Path(args.adbkey).expanduser() if args.adbkey else None


def _devices(args: argparse.Namespace) -> int:
    infos = list_devices(_server(args), args.direct, _key(args), args.auth_timeout)
    if args.json:
        for info in infos:
            print(json.dumps(info.to_dict(), separators=(",", ":")))
        return 0
    from ..progress import stdout_console
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
    stdout_console().print(table)
    return 0


