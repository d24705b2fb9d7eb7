"""The sample device-farm test module (examples/devicefarm) run by pytest, through the plugin,
against the real Appium 3 server (fake driver) behind the app-lifecycle double, with farm
credentials in the server URL. Needs scripts/setup-appium.sh (fails with that hint if not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doubles.appium_lifecycle_double import AppiumLifecycleDouble
from tests.doubles.appium_server import AppiumServer, appium_server, fake_caps  # noqa: F401
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "devicefarm"
USER, KEY = "farmuser", "FARM-acc3ss-k3y"


def _run_example(double: AppiumLifecycleDouble, tmp_path: Path
                 ) -> subprocess.CompletedProcess[str]:
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": "farm-device-1"})))
    target = (f"appium --server {double.url} --platform android --caps {caps} "
              f"--timeout {LAUNCH_S:g} --report-wait {REPORT_WAIT_S:g}")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         str(EXAMPLE), "--rootdir", str(EXAMPLE), "--coldstart-target", target,
         "--coldstart-launches", "2", "--coldstart-out", str(tmp_path / "out"),
         "--coldstart-report-dir", str(tmp_path / "reports")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def _stored(tmp_path: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for folder in ("out", "reports")
                     for p in (tmp_path / folder).rglob("*") if p.is_file())


@pytest.mark.slow
def test_sample_farm_module_passes_on_clean_cold_starts(appium_server: AppiumServer,
                                                        tmp_path: Path) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   credentials=(USER, KEY))
    try:
        proc = _run_example(double, tmp_path)
    finally:
        double.stop()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    assert double.launches == 4  # two campaigns of two launches
    junit = tmp_path / "reports" / "appium-android" / "candidate" / "junit.xml"
    assert junit.read_text().startswith("<?xml")
    stored = _stored(tmp_path)
    assert "farm-device-1" in stored
    assert KEY not in stored + proc.stdout + proc.stderr
    assert f"{USER}:" not in stored + proc.stdout + proc.stderr


@pytest.mark.slow
def test_sample_farm_module_fails_on_the_xnnpack_crash(appium_server: AppiumServer,
                                                       tmp_path: Path) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"],
                                   credentials=(USER, KEY))
    try:
        proc = _run_example(double, tmp_path)
    finally:
        double.stop()
    assert double.unused_script() == []
    assert proc.returncode == 1
    assert "1 failed, 1 passed" in proc.stdout
    assert "1/2 launches crashed with xnnpack-allocator-uaf" in proc.stdout
    assert "candidate-00001: xnnpack-allocator-uaf at models-ready" in proc.stdout
    assert KEY not in proc.stdout + _stored(tmp_path)
