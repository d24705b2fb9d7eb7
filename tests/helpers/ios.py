"""Shared by the iOS test modules: ``coldstart run ios-sim`` / ``ios-device`` on the xcrun
double (tests/doubles/xcrun_double; the fixtures ``double`` and ``app`` are in
tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.campaign import load_campaign
from kit.cli import main
from tests.doubles.xcrun_double import XcrunDouble
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

__all__ = ["CORE_ID", "DEVICE_UDID", "UDID", "by_index", "run_device", "run_sim"]

CORE_ID = "A1B2C3D4-0000-4000-8000-00000000CAFE"
UDID = "6F1C2A4B-1D2E-4F60-9A7B-0C1D2E3F4A5B"
DEVICE_UDID = "00008110-001A2B3C4D5E801E"


def run_sim(double: XcrunDouble, app: Path, out: Path, launches: int, *extra: str) -> int:
    return main(["run", "ios-sim", "--udid", UDID, "--app", str(app), "--launches",
                 str(launches), "--out", str(out), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--diagnostic-reports",
                 str(double.reports), "--label", "baseline", *extra])


def by_index(out: Path) -> tuple[dict[int, Any], list[Any]]:
    """``(counted record by slot, infra errors)``."""
    loaded = load_campaign(out)
    return {r.index: r for r in loaded.counted}, list(loaded.infra_errors)


def run_device(double: XcrunDouble, tmp_path: Path, launches: int, *extra: str) -> int:
    double.add_device(DEVICE_UDID, "Test iPhone", CORE_ID)
    ipa_app = XcrunDouble.make_app(tmp_path / "dev" / "ColdstartApp.app", platform="iPhoneOS")
    return main(["run", "ios-device", "--udid", DEVICE_UDID, "--ipa", str(ipa_app),
                 "--launches", str(launches), "--out", str(tmp_path / "run"), "--timeout",
                 f"{LAUNCH_S:g}", "--report-wait", f"{REPORT_WAIT_S:g}", *extra])
