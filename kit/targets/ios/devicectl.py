"""``xcrun devicectl`` (Xcode 15+): the device commands the kit uses. Every command is run
with ``--json-output <file> --quiet`` and its JSON is read: ``{"info": ..., "result": ...}``,
or ``{"error": {"userInfo": {"NSLocalizedDescription": {"string": ...}}}}`` (docs/formats.md
section D5)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..._bounded import MiB, read_bytes_bounded
from ...errors import ColdstartError, UsageError
from .xcrun import Xcrun, XcrunError

__all__ = ["PhysicalDevice", "Devicectl"]

#: The largest ``--json-output`` read (a device list or a crash-log listing is a few KiB).
_JSON_LIMIT = 32 * MiB


@dataclasses.dataclass(frozen=True)
class PhysicalDevice:
    """One device from ``devicectl list devices``.

    Attributes:
        identifier: the CoreDevice id; ``udid``: ``hardwareProperties.udid``.
        name, os_version: ``deviceProperties.name`` / ``osVersionNumber``.
        tunnel_state: ``connectionProperties.tunnelState`` (``connected``,
            ``disconnected``: usable, the tunnel is made on demand; ``unavailable``: the
            device is not reachable, e.g. unplugged or off the network).
    """

    identifier: str
    udid: str
    name: str
    os_version: str | None
    tunnel_state: str | None = None

    @property
    def reachable(self) -> bool:
        """False when devicectl lists the device as unavailable."""
        return self.tunnel_state != "unavailable"


def _devicectl_error(data: dict[str, Any]) -> str | None:
    error = data.get("error")
    if not isinstance(error, dict):
        return None
    desc = (error.get("userInfo") or {}).get("NSLocalizedDescription")
    if isinstance(desc, dict):
        return str(desc.get("string"))
    return str(desc) if desc else None


class Devicectl:
    """``xcrun devicectl`` commands; every failure is an :class:`XcrunError` carrying the
    tool's output."""

    def __init__(self, xcrun: Xcrun) -> None:
        self.xcrun = xcrun

    def _json(self, *args: str, timeout_s: float = 120.0) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="coldstart-devicectl-") as tmp:
            out = Path(tmp) / "out.json"
            proc = self.xcrun.run("devicectl", *args, "--json-output", str(out), "--quiet",
                                  timeout_s=timeout_s, check=False)
            try:
                data = json.loads(read_bytes_bounded(out, _JSON_LIMIT, what="devicectl output"))
            except (ColdstartError, OSError, ValueError, RecursionError):
                data = {}
        if not isinstance(data, dict):
            data = {}
        if proc.returncode != 0 or "error" in data:
            message = _devicectl_error(data) or (proc.stdout + proc.stderr).strip() or \
                f"exit {proc.returncode}"
            raise XcrunError(f"`xcrun devicectl {' '.join(args[:3])}` failed: {message}",
                             "unlock the device, trust this Mac and check the cable or "
                             "network pairing",
                             output=f"$ xcrun devicectl {' '.join(args)}\n"
                                    f"{proc.stdout}{proc.stderr}",
                             returncode=proc.returncode)
        result = data.get("result")
        return result if isinstance(result, dict) else {}

    def devices(self) -> list[PhysicalDevice]:
        """Paired devices (``devicectl list devices``). Raises XcrunError."""
        result = self._json("list", "devices", timeout_s=60.0)
        found = []
        for item in result.get("devices") or []:
            if not isinstance(item, dict):
                continue
            hw = item.get("hardwareProperties") or {}
            props = item.get("deviceProperties") or {}
            conn = item.get("connectionProperties") or {}
            found.append(PhysicalDevice(identifier=str(item.get("identifier")),
                                        udid=str(hw.get("udid") or item.get("identifier")),
                                        name=str(props.get("name") or hw.get("marketingName")),
                                        os_version=props.get("osVersionNumber"),
                                        tunnel_state=conn.get("tunnelState")))
        return found

    def find(self, udid: str) -> PhysicalDevice | None:
        """The device with this UDID or CoreDevice identifier now, or ``None``."""
        wanted = udid.lower()
        return next((d for d in self.devices()
                     if wanted in (d.udid.lower(), d.identifier.lower())), None)

    def resolve(self, udid: str) -> PhysicalDevice:
        """The device with this UDID or CoreDevice identifier.

        Raises:
            UsageError: no such paired device.
        """
        devices = self.devices()
        for device in devices:
            if udid.lower() in (device.udid.lower(), device.identifier.lower()):
                return device
        known = ", ".join(f"{d.name} ({d.udid})" for d in devices) or "none"
        raise UsageError(f"no paired device with UDID {udid}",
                         f"connected devices: {known} (see `xcrun devicectl list devices`)")

    def install(self, device: str, app_path: str) -> None:
        """``devicectl device install app --device <id> <app>``. Raises XcrunError."""
        self._json("device", "install", "app", "--device", device, app_path,
                   timeout_s=600.0)

    def app_url(self, device: str, bundle_id: str) -> str | None:
        """The installed app's bundle location (``devicectl device info apps --bundle-id``:
        ``result.apps[].url``, a new ``Bundle/Application/<UUID>/`` at every install), or
        ``None`` when the app is not installed. Raises XcrunError."""
        result = self._json("device", "info", "apps", "--device", device, "--bundle-id",
                            bundle_id)
        for item in result.get("apps") or []:
            if isinstance(item, dict) and item.get("bundleIdentifier") == bundle_id:
                return str(item.get("url") or "")
        return None

    def launch_console(self, device: str, bundle_id: str, url: str,
                       env: dict[str, str]) -> "subprocess.Popen[str]":
        """Start ``devicectl device process launch --console --terminate-existing
        --environment-variables <json> --payload-url <url> <bundle>``: it relays the app's
        stdout/stderr until the app exits (``OS_ACTIVITY_DT_MODE`` in ``env`` mirrors
        os_log to stderr)."""
        return self.xcrun.popen("devicectl", "device", "process", "launch", "--device",
                                device, "--console", "--terminate-existing",
                                "--environment-variables", json.dumps(env, sort_keys=True),
                                "--payload-url", url, bundle_id)

    def processes(self, device: str) -> list[dict[str, Any]]:
        """``devicectl device info processes``: ``[{processIdentifier, executable}]``.
        Raises XcrunError."""
        result = self._json("device", "info", "processes", "--device", device)
        return [p for p in result.get("runningProcesses") or [] if isinstance(p, dict)]

    def terminate(self, device: str, pid: int) -> None:
        """``devicectl device process terminate --pid``; errors ignored (already gone)."""
        try:
            self._json("device", "process", "terminate", "--device", device, "--pid",
                       str(pid), "--kill")
        except XcrunError:
            pass

    def crash_logs(self, device: str) -> list[str]:
        """Names in the device's ``systemCrashLogs`` domain. Raises XcrunError."""
        result = self._json("device", "info", "files", "--device", device, "--domain-type",
                            "systemCrashLogs")
        names = []
        for item in result.get("files") or []:
            name = (item.get("relativePath") or item.get("name")) if isinstance(item, dict) \
                else None
            if isinstance(name, str):
                names.append(name)
        return names

    def copy_crash_log(self, device: str, name: str, destination: Path) -> Path:
        """``devicectl device copy from --domain-type systemCrashLogs --source <name>``.
        Raises XcrunError."""
        destination.mkdir(parents=True, exist_ok=True)
        target = destination / Path(name).name
        self._json("device", "copy", "from", "--device", device, "--domain-type",
                   "systemCrashLogs", "--source", name, "--destination", str(target))
        return target
