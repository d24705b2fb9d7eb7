"""The sample device-farm test module (examples/devicefarm) run by pytest, through pytest's
``pytester`` and the plugin, against the real Appium 3 server (fake driver) behind the
app-lifecycle double, with farm credentials in the server URL. Needs scripts/setup-appium.sh
(fails with that hint if not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.appium_lifecycle_double import AppiumLifecycleDouble
from tests.doubles.appium_server import AppiumServer, appium_server, fake_caps  # noqa: F401
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

pytest_plugins = ("pytester",)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "devicefarm"
USER, KEY = "farmuser", "FARM-acc3ss-k3y"


def _run_example(double: AppiumLifecycleDouble, pytester: pytest.Pytester) -> pytest.RunResult:
    caps = pytester.path / "caps.json"
    caps.write_text(json.dumps(fake_caps(pytester.path, **{"appium:udid": "farm-device-1"})))
    target = (f"appium --server {double.url} --platform android --caps {caps} "
              f"--timeout {LAUNCH_S:g} --report-wait {REPORT_WAIT_S:g}")
    return pytester.runpytest_subprocess(
        "-q", "-p", "no:randomly", "-p", "no:cacheprovider", str(EXAMPLE), "--rootdir",
        str(EXAMPLE), "--coldstart-target", target, "--coldstart-launches", "2",
        "--coldstart-out", str(pytester.path / "out"),
        "--coldstart-report-dir", str(pytester.path / "reports"), timeout=600)


def _stored(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for folder in ("out", "reports")
                     for p in (root / folder).rglob("*") if p.is_file())


@pytest.mark.slow
def test_sample_farm_module_passes_on_clean_cold_starts(appium_server: AppiumServer,
                                                        pytester: pytest.Pytester) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   credentials=(USER, KEY))
    try:
        result = _run_example(double, pytester)
    finally:
        double.stop()
    printed = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, printed
    result.assert_outcomes(passed=2)
    assert double.launches == 4  # two campaigns of two launches
    junit = pytester.path / "reports" / "appium-android" / "candidate" / "junit.xml"
    assert junit.read_text().startswith("<?xml")
    stored = _stored(pytester.path)
    assert "farm-device-1" in stored
    assert KEY not in stored + printed
    assert f"{USER}:" not in stored + printed


@pytest.mark.slow
def test_sample_farm_module_fails_on_the_xnnpack_crash(appium_server: AppiumServer,
                                                       pytester: pytest.Pytester) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"],
                                   credentials=(USER, KEY))
    try:
        result = _run_example(double, pytester)
    finally:
        double.stop()
    assert double.unused_script() == []
    assert result.ret == 1
    result.assert_outcomes(failed=1, passed=1)
    printed = result.stdout.str()
    assert "1/2 launches crashed with xnnpack-allocator-uaf" in printed
    assert "candidate-00001: xnnpack-allocator-uaf at models-ready" in printed
    assert KEY not in printed + _stored(pytester.path)
