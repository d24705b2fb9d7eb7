"""``coldstart run appium --farm NAME``: a campaign through a real Appium 3 server (with the
lifecycle double of tests/doubles/appium_lifecycle_double.py) whose farm evidence is pulled
at its end from the farm double (tests/doubles/farm_server.py). Needs
scripts/setup-appium.sh, like tests/test_appium.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.farms.pull import EVIDENCE_FILE
from tests.doubles.appium_lifecycle_double import AppiumLifecycleDouble
from tests.doubles.appium_server import AppiumServer, appium_server, fake_caps  # noqa: F401
from tests.doubles.farm_recordings import Launch, browserstack_session, session_logcat
from tests.doubles.farm_server import FarmDouble, Reply
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

USER, KEY = "bs-user-ci", "Bs-Acc3ss-K3y-0042"
REF = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"
APP_ID = "org.coldstart.app"


def _run(double: AppiumLifecycleDouble, farm: FarmDouble, tmp_path: Path, out: Path,
         deadline: str = "60") -> int:
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": "emulator-5554"})))
    return main(["run", "appium", "--server", double.url, "--platform", "android", "--caps",
                 str(caps), "--app-id", APP_ID, "--launches", "2", "--timeout",
                 f"{LAUNCH_S:g}", "--report-wait", f"{REPORT_WAIT_S:g}", "--out", str(out),
                 "--label", "baseline", "--farm", "browserstack", "--farm-api", farm.url,
                 "--farm-ref", REF, "--farm-deadline", deadline])


def test_run_appium_farm_pulls_the_evidence_at_the_end(
        appium_server: AppiumServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BROWSERSTACK_USERNAME", USER)
    monkeypatch.setenv("BROWSERSTACK_ACCESS_KEY", KEY)
    logcat, _ = session_logcat([Launch("completed"), Launch("native")], app=APP_ID)
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"])
    out = tmp_path / "run"
    try:
        with FarmDouble() as farm:
            farm.add(f"/app-automate/sessions/{REF}.json",
                     Reply(body=browserstack_session(farm.url, REF)))
            base = f"/app-automate/builds/b0a1c2d3/sessions/{REF}"
            farm.add(f"{base}/devicelogs", Reply(body=logcat))
            farm.add(f"{base}/crashlogs", Reply(404, "none"))
            assert _run(double, farm, tmp_path, out) == 0
    finally:
        double.stop()
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [r.outcome.value for r in records] == ["completed", "crashed"]
    assert all(r.extra["session_id"] for r in records)  # each record names its session
    evidence = records[1].extra["farm"]["evidence"]
    assert [(e["how"], e["crash_class"]) for e in evidence] == [("pid",
                                                                "xnnpack-allocator-uaf")]
    assert records[1].crash_class == "xnnpack-allocator-uaf"
    assert json.loads((out / EVIDENCE_FILE).read_text())["status"] == "complete"
    printed = capsys.readouterr()
    assert "1 launch(es) matched" in printed.err
    written = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert KEY not in written + printed.out + printed.err
    assert USER not in written + printed.out + printed.err


def test_run_appium_farm_down_is_exit_3_with_every_record_kept(
        appium_server: AppiumServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSERSTACK_USERNAME", USER)
    monkeypatch.setenv("BROWSERSTACK_ACCESS_KEY", KEY)
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"])
    out = tmp_path / "run"
    try:
        with FarmDouble() as farm:
            farm.add(f"/app-automate/sessions/{REF}.json", Reply(503, "down"))
            assert _run(double, farm, tmp_path, out, deadline="0.5") == 3
    finally:
        double.stop()
    records = load_campaign(out).records
    assert len(records) == 2 and all("farm" not in r.extra for r in records)
    assert json.loads((out / EVIDENCE_FILE).read_text())["status"] == "incomplete"


def test_a_later_pull_takes_the_campaigns_own_farm_and_refuses_another(
        appium_server: AppiumServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BROWSERSTACK_USERNAME", USER)
    monkeypatch.setenv("BROWSERSTACK_ACCESS_KEY", KEY)
    logcat, _ = session_logcat([Launch("completed"), Launch("native")], app=APP_ID)
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"])
    out = tmp_path / "run"
    with FarmDouble() as farm:
        try:
            farm.add(f"/app-automate/sessions/{REF}.json", Reply(503, "down"))
            assert _run(double, farm, tmp_path, out, deadline="0.5") == 3
        finally:
            double.stop()
        stored = json.loads((out / "campaign.json").read_text())["options"]["farm"]
        assert stored == {"name": "browserstack", "api": farm.url, "region": None,
                          "ref": REF, "steps": None}
        capsys.readouterr()
        assert main(["farm", "pull", str(out), "--farm", "saucelabs"]) == 2
        err = capsys.readouterr().err.strip()
        assert "not this campaign's farm (browserstack)" in err and len(err.splitlines()) == 1
        farm.add(f"/app-automate/sessions/{REF}.json",
                 Reply(body=browserstack_session(farm.url, REF)))
        base = f"/app-automate/builds/b0a1c2d3/sessions/{REF}"
        farm.add(f"{base}/devicelogs", Reply(body=logcat))
        farm.add(f"{base}/crashlogs", Reply(404, "none"))
        assert main(["farm", "pull", str(out)]) == 0  # no --farm: the campaign's own
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert records[1].crash_class == "xnnpack-allocator-uaf"
    assert json.loads((out / EVIDENCE_FILE).read_text())["status"] == "complete"
    printed = capsys.readouterr()
    written = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert KEY not in written + printed.out + printed.err


def test_the_pytest_plugin_pulls_the_farm_evidence_at_the_campaigns_end(
        appium_server: AppiumServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kit.pytest_plugin import Coldstart, parse_target_spec

    monkeypatch.setenv("BROWSERSTACK_USERNAME", USER)
    monkeypatch.setenv("BROWSERSTACK_ACCESS_KEY", KEY)
    logcat, _ = session_logcat([Launch("completed"), Launch("native")], app=APP_ID)
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"])
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": "emulator-5554"})))
    props: dict[str, str] = {}
    try:
        with FarmDouble() as farm:
            farm.add(f"/app-automate/sessions/{REF}.json",
                     Reply(body=browserstack_session(farm.url, REF)))
            base = f"/app-automate/builds/b0a1c2d3/sessions/{REF}"
            farm.add(f"{base}/devicelogs", Reply(body=logcat))
            farm.add(f"{base}/crashlogs", Reply(404, "none"))
            spec = parse_target_spec(
                f"appium --server {double.url} --platform android --caps {caps} --app-id "
                f"{APP_ID} --timeout {LAUNCH_S:g} --report-wait {REPORT_WAIT_S:g} "
                f"--farm browserstack --farm-api {farm.url} --farm-ref {REF}")
            result = Coldstart(spec, tmp_path / "out", None, 2, props.__setitem__).run(
                "baseline")
    finally:
        double.stop()
    assert result.farm is not None and result.farm.exit_code == 0
    assert props["coldstart_baseline_farm_evidence"] == "complete"
    records = sorted(result.campaign.records, key=lambda r: r.index)
    assert records[1].extra["farm"]["evidence"][0]["how"] == "pid"
    assert result.count("xnnpack-allocator-uaf") == (1, 2)
    written = "\n".join(p.read_text(errors="replace") for p in result.path.rglob("*")
                        if p.is_file())
    assert KEY not in written and USER not in written
