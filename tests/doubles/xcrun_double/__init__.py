"""XcrunDouble: sets up the ``xcrun`` stand-in of this folder for one test.

Usage (see tests/test_ios.py)::

    double = XcrunDouble(tmp_path)
    double.add_simulator(udid, "iPhone 16", state="Shutdown")
    app = double.make_app(tmp_path / "ColdstartApp.app")
    double.script(["completed", "crash@models-ready"])
    monkeypatch.setenv("PATH", double.path_env())   # or env=double.env() for a subprocess
    ...
    assert double.unused_script() == []   # the test played what it scripted

The double's behaviour and formats are described in ``xcrun_double.py``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import plistlib
import sys
import time
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
RUNTIME = "com.apple.CoreSimulator.SimRuntime.iOS-18-2"


class XcrunDouble:
    """State of one ``xcrun`` double in ``root/xcrun-home``; crash reports go to
    ``root/DiagnosticReports`` (point the kit there with ``--diagnostic-reports``)."""

    def __init__(self, root: Path, report_delay_s: float = 0.4,
                 phase_delay_s: float = 0.05, boot_s: float = 0.1,
                 drop_style: str = "unavailable") -> None:
        self.home = root / "xcrun-home"
        self.reports = root / "DiagnosticReports"
        self.home.mkdir(parents=True)
        self.reports.mkdir()
        self._write({"devices": {RUNTIME: []}, "physical": [], "installed": {},
                     "running": {}, "script": [], "launches": 0,
                     "reports_dir": str(self.reports), "report_delay_s": report_delay_s,
                     "phase_delay_s": phase_delay_s, "boot_s": boot_s,
                     "drop_style": drop_style,
                     "url_handlers": {"coldstart": "org.coldstart.app"}})

    @contextlib.contextmanager
    def state(self) -> Iterator[dict[str, Any]]:
        """Read-modify-write the state under the double's lock."""
        with open(self.home / "state.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = json.loads((self.home / "state.json").read_text())
            yield state
            self._write(state)

    def _write(self, state: dict[str, Any]) -> None:
        (self.home / "state.json").write_text(json.dumps(state, indent=1))

    def add_simulator(self, udid: str, name: str, state: str = "Booted",
                      available: bool = True) -> None:
        with self.state() as st:
            st["devices"][RUNTIME].append({"udid": udid, "name": name, "state": state,
                                           "isAvailable": available,
                                           "deviceTypeIdentifier":
                                               "com.apple.CoreSimulator.SimDeviceType.iPhone-16",
                                           "dataPath": f"/Users/dev/Library/Developer/"
                                                       f"CoreSimulator/Devices/{udid}/data"})

    def add_device(self, udid: str, name: str, identifier: str) -> None:
        with self.state() as st:
            st["physical"].append({"udid": udid, "name": name, "identifier": identifier})

    def script(self, outcomes: list[str]) -> None:
        """The app's behaviour for the next launches, in order (then ``completed``)."""
        with self.state() as st:
            st["script"] = list(outcomes)
            st["launches"] = 0

    def unused_script(self) -> list[str]:
        """Script entries no launch request has taken yet (a test that scripted a case
        checks that it was played)."""
        with self.state() as st:
            return list(st.get("script", [])[st.get("launches", 0):])

    def requests(self) -> int:
        """Launch requests the double has answered (``launch``, ``openurl``, devicectl
        ``process launch``)."""
        with self.state() as st:
            return int(st.get("launches", 0))

    def sim_state(self, udid: str) -> str:
        with self.state() as st:
            device = next(d for d in st["devices"][RUNTIME] if d["udid"] == udid)
            for step in device.get("next") or []:
                if step["at"] <= time.time():
                    device["state"] = step["state"]
            return device["state"]

    def calls(self) -> list[dict[str, Any]]:
        """Every xcrun invocation so far: ``{"argv": [...], "env": {SIMCTL_CHILD_*}}``."""
        path = self.home / "calls.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def kill_apps(self) -> None:
        """Kill every app process the double started (test teardown)."""
        with self.state() as st:
            for pid in st.get("running", {}).values():
                try:
                    os.kill(pid, 9)
                except (ProcessLookupError, TypeError):
                    pass
            st["running"] = {}

    @staticmethod
    def make_app(path: Path, bundle_id: str = "org.coldstart.app",
                 platform: str = "iPhoneSimulator", binary: bool = True) -> Path:
        """An ``.app`` folder with the Info.plist Xcode writes (binary plist by default)."""
        path.mkdir(parents=True)
        info = {"CFBundleIdentifier": bundle_id, "CFBundleExecutable": "ColdstartApp",
                "CFBundleName": "ColdstartApp", "CFBundleShortVersionString": "1.0",
                "CFBundleVersion": "1", "CFBundleSupportedPlatforms": [platform],
                "CFBundleURLTypes": [{"CFBundleURLSchemes": ["coldstart"]}],
                "DTPlatformName": platform.lower()}
        fmt = plistlib.FMT_BINARY if binary else plistlib.FMT_XML
        (path / "Info.plist").write_bytes(plistlib.dumps(info, fmt=fmt))
        (path / "ColdstartApp").write_bytes(b"\xcf\xfa\xed\xfe")
        return path

    def env(self) -> dict[str, str]:
        """Environment variables that put the double on PATH (for os.environ or a child)."""
        return {"PATH": f"{HERE}{os.pathsep}{os.environ.get('PATH', '')}",
                "XCRUN_DOUBLE_HOME": str(self.home), "XCRUN_DOUBLE_PYTHON": sys.executable}
