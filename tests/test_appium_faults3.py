"""Issue #23 over Appium: the families of device faults that can happen through an Appium
session, played by tests/doubles/appium_lifecycle_double.py in front of a real Appium 3
server (the fake driver): a log endpoint that errors mid-launch before the app crashes,
React Native's fatal JS error read from logcat, and a locked device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.records import Outcome
from tests.doubles.appium_lifecycle_double import AppiumLifecycleDouble
from tests.doubles.appium_server import AppiumServer, appium_server, fake_caps  # noqa: F401
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S


@pytest.fixture
def caps_file(tmp_path: Path) -> Path:
    path = tmp_path / "caps.json"
    path.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": "emulator-5554"})))
    return path


def _run(double: AppiumLifecycleDouble, caps: Path, out: Path, platform: str, launches: int,
         *extra: str) -> int:
    return main(["run", "appium", "--server", double.url, "--platform", platform, "--caps",
                 str(caps), "--launches", str(launches), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--out", str(out), "--label",
                 "baseline", *extra])


@pytest.mark.parametrize("platform", ["android", "ios"])
def test_a_log_endpoint_that_errors_mid_launch_keeps_the_crash_that_follows(
        platform: str, appium_server: AppiumServer, caps_file: Path, tmp_path: Path) -> None:
    # from the app's start the session's log reads fail (HTTP 500, the driver's proxy
    # error) six times while the rest of the session answers; the app crashes meanwhile:
    # the crash is recorded with its class and signature once the log answers again
    double = AppiumLifecycleDouble(appium_server.url, platform=platform, script=[
        "completed", "crash@sessions-created+logdown:6", "completed"])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, platform, 3) == 0
    finally:
        double.stop()
    assert double.unused_script() == [] and double.log_failures == 6
    loaded = load_campaign(out)
    assert list(loaded.infra_errors) == []
    records = sorted(loaded.counted, key=lambda r: r.index)
    assert [(r.index, r.outcome) for r in records] == [
        (0, Outcome.COMPLETED), (1, Outcome.CRASHED), (2, Outcome.COMPLETED)]
    crash = records[1]
    assert (crash.last_phase, crash.crash_class) == ("sessions-created",
                                                     "xnnpack-allocator-uaf")
    assert crash.signature.startswith(
        "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate")
