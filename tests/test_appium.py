"""The Appium target against a real Appium 3 server with @appium/fake-driver (sessions,
capabilities, element polling, timeouts, the server dying), with the app lifecycle and device
logs the fake driver lacks from tests/doubles/appium_lifecycle_double.py.

The server comes from scripts/setup-appium.sh; without it these tests FAIL with that hint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.campaign import load_campaign, run_campaign
from tests.helpers import prepare_store
from kit.cli import build_parser, main
from kit.protocol import parse_line
from kit.records import Outcome
from kit.redact import Redactor
from kit.scenario import Scenario
from kit.targets import appium
from kit.targets.appium.options import setup_target
from tests.doubles.appium_lifecycle_double import AppiumLifecycleDouble
from tests.doubles.appium_server import (AppiumServer, appium_server,  # noqa: F401
                                         fake_caps, refused_port)
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

USER, KEY = "alice", "s3cr3t-Key-9"


@pytest.fixture
def caps_file(tmp_path: Path) -> Path:
    path = tmp_path / "caps.json"
    path.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": "emulator-5554",
                                                       "lt:options": {"accessKey": KEY}})))
    return path


def _files_text(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def _run(double: AppiumLifecycleDouble, caps: Path, out: Path, platform: str, launches: int,
         *extra: str) -> int:
    return main(["run", "appium", "--server", double.url, "--platform", platform, "--caps",
                 str(caps), "--launches", str(launches), "--timeout", f"{LAUNCH_S:g}",
                 "--report-wait", f"{REPORT_WAIT_S:g}", "--out", str(out), "--label",
                 "baseline", *extra])


def test_android_farm_campaign_outcomes_and_redaction(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="android", script=[
        "completed", "crash@models-ready", "crash@sessions-created", "error@models-ready",
        "js-fatal@sessions-created", "hang@inference-done"], credentials=(USER, KEY))
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "android", 6) == 0
    finally:
        double.stop()
    assert double.unused_script() == []
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [(r.outcome, r.last_phase, r.crash_class) for r in records] == [
        (Outcome.COMPLETED, "done", None),
        (Outcome.CRASHED, "models-ready", "xnnpack-allocator-uaf"),
        (Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf"),
        (Outcome.APP_ERROR, "models-ready", None),
        (Outcome.CRASHED, "models-ready", "js-error"),
        (Outcome.HUNG, "inference-done", None)]
    assert records[1].signature.startswith(
        "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate | "
        "xnn_create_fully_connected_nc_f32")
    assert records[2].crash["fault_address"] == "0x5555555555555555"
    assert records[0].device == "emulator-5554"
    shown = parse_line(records[0].extra["status_text"]).event  # read from the screen
    assert shown is not None and shown.id == records[0].launch_id
    assert shown.phase in ("sessions-released", "done")  # done may reach the log first
    # the app was cold-started through the deep link, after a terminate, every time
    mobile = [p["script"] for m, path, p in double.calls if path.endswith("/execute/sync")]
    assert mobile.count("mobile: deepLink") == 6 and mobile.count("mobile: terminateApp") >= 6
    # credentials: sent as HTTP Basic auth, never stored or printed
    assert double.auth_seen[-1] == "Basic YWxpY2U6czNjcjN0LUtleS05"
    stored = _files_text(out) + capsys.readouterr().out + capsys.readouterr().err
    assert KEY not in stored and f"{USER}:" not in stored
    meta = json.loads((out / "campaign.json").read_text())
    assert meta["options"]["server"] == f"http://***:***@127.0.0.1:{double.port}/wd/hub"
    assert meta["options"]["capabilities"]["lt:options"] == {"accessKey": "***"}
    assert meta["options"]["capabilities"]["appium:udid"] == "emulator-5554"


def test_status_text_is_read_after_the_log_showed_the_end(
        appium_server: AppiumServer, tmp_path: Path) -> None:
    """The poll reads the screen, then the log. When the kit's thread is held up between
    the two (a loaded machine), the log read that sees ``done`` comes long after the screen
    read; the record's screen must still be one read after that log read."""
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   phase_delay_s=0.3)
    screens: list[str | None] = []

    class HeldUpSession(appium.AppiumSession):
        """The first log read after the start waits until the app has logged ``done``."""

        held = False

        def start(self, url: str, env: dict[str, str] | None, use_args: bool) -> None:
            super().start(url, env, use_args)
            self.held = True

        def status_text(self) -> str | None:
            text = super().status_text()
            screens.append(text)
            return text

        def log_lines(self, log_type: str) -> list[str]:
            if self.held:
                assert double.wait_logged("done", 20.0)
                self.held = False
            return super().log_lines(log_type)

    config = appium.AppiumConfig(server_url=double.url, platform=appium.Platform.ANDROID,
                                 app_id="org.coldstart.app", caps=fake_caps(tmp_path))
    launcher = appium.AppiumLauncher(config, Redactor(), session_factory=HeldUpSession)
    try:
        store, old = prepare_store(tmp_path / "run", label="b", target="appium",
                                   scenario=Scenario(), launches=1, resume=False)
        records = run_campaign(store, old, [launcher], label="b", scenario=Scenario(),
                               launches=1, timeout_s=20, max_attempts=1)
    finally:
        launcher.close()
        double.stop()
    assert [(r.outcome, r.last_phase) for r in records] == [(Outcome.COMPLETED, "done")]
    # the screen read before the held-up log read was far behind the end (each phase takes
    # 0.3 s: blank, start or models-ready); the one after it shows the end
    before = parse_line(screens[0] or "").event
    assert before is None or before.phase not in ("sessions-released", "done")
    text = records[0].extra["status_text"]
    assert text is not None
    shown = parse_line(text).event
    assert shown is not None and shown.id == records[0].launch_id
    assert shown.phase in ("sessions-released", "done")  # the app logs, then renders


def test_ios_campaign_with_poison_uses_launch_app_environment(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="ios",
                                   script=["completed", "crash@inference-done"])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "ios", 2, "--poison") == 0
    finally:
        double.stop()
    assert double.unused_script() == []
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [(r.outcome, r.last_phase, r.crash_class) for r in records] == [
        (Outcome.COMPLETED, "done", None),
        (Outcome.CRASHED, "inference-done", "xnnpack-allocator-uaf")]
    assert records[1].crash["exception"] == "EXC_BAD_ACCESS"
    assert (out / f"artifacts/{records[1].launch_id}/crash.ips").read_text().startswith(
        '{"app_name":"ColdstartApp"')
    launches = [p["args"][0] for m, path, p in double.calls
                if path.endswith("/execute/sync") and p["script"] == "mobile: launchApp"]
    assert launches[0] == {"bundleId": "org.coldstart.app",
                           "arguments": ["-coldstartScenario", records[0].scenario],
                           "environment": {"MallocScribble": "1", "MallocPreScribble": "1",
                                           "MallocGuardEdges": "1", "MallocErrorAbort": "1"}}


def test_server_death_mid_campaign_gives_infra_errors_never_crashes(
        caps_file: Path, tmp_path: Path) -> None:
    server = AppiumServer(tmp_path / "appium.log").start()
    double = AppiumLifecycleDouble(server.url, platform="android",
                                   on_launch=lambda n: server.kill() if n == 2 else None)
    out = tmp_path / "run"
    try:
        code = _run(double, caps_file, out, "android", 4, "--max-attempts", "2")
    finally:
        double.stop()
        server.stop()
    assert code == 3  # two launches counted; the rest could not be made: abandoned
    records = sorted(load_campaign(out).records, key=lambda r: (r.index, r.attempt))
    assert [(r.index, r.attempt, r.outcome) for r in records] == [
        (0, 1, Outcome.COMPLETED), (1, 1, Outcome.COMPLETED),
        (2, 1, Outcome.INFRA_ERROR), (2, 2, Outcome.INFRA_ERROR),
        (3, 1, Outcome.INFRA_ERROR), (3, 2, Outcome.INFRA_ERROR)]
    assert records[2].error.startswith("the Appium server stopped answering during ")
    assert records[3].error.startswith("cannot reach the Appium server: ")
    assert all(r.crash is None and r.crash_class is None for r in records)


def test_expired_session_is_an_infra_error_then_a_new_session(
        appium_server: AppiumServer, tmp_path: Path) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="android")
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(fake_caps(tmp_path, **{"appium:newCommandTimeout": 1})))
    args = build_parser().parse_args(["run", "appium", "--server", double.url, "--platform",
                                      "android", "--caps", str(caps), "--timeout",
                                      f"{LAUNCH_S:g}"])
    # Appium logs this as it drops a session whose newCommandTimeout ran out
    expired = "' from our master session list"
    before = appium_server.log_since().count(expired)
    setup = setup_target(args, log=lambda _m: None)
    try:
        # wait for the server to delete the idle session (no fixed sleep: Appium's timer
        # fires late on a loaded machine); asking it anything would restart the timer
        assert appium_server.wait_logged(expired, before + 1), "the session never expired"
        store, old = prepare_store(tmp_path / "run", label="b", target="appium",
                                   scenario=Scenario(), launches=1, resume=False)
        records = run_campaign(store, old, setup.launchers, label="b", scenario=Scenario(),
                               launches=1, timeout_s=LAUNCH_S, max_attempts=2)
    finally:
        setup.close()
        double.stop()
    assert [(r.attempt, r.outcome) for r in records] == [(1, Outcome.INFRA_ERROR),
                                                        (2, Outcome.COMPLETED)]
    assert records[0].error.startswith("the Appium session ended during ")


def _one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    return err


def test_unreachable_server_is_exit_2(tmp_path: Path, caps_file: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    with refused_port() as port:  # nothing can listen there meanwhile
        err = _one_line_exit_2(["run", "appium", "--server",
                                f"http://{USER}:{KEY}@127.0.0.1:{port}", "--platform",
                                "android", "--out", str(tmp_path / "o")], capsys)
    assert err.startswith(f"coldstart: error: the Appium server at http://***:***@127.0.0.1:"
                          f"{port} is unreachable: [Errno 111] Connection refused")
    assert KEY not in err and not (tmp_path / "o").exists()


def test_refused_capabilities_are_exit_2(appium_server: AppiumServer, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    err = _one_line_exit_2(["run", "appium", "--server", appium_server.url, "--platform",
                            "android", "--out", str(tmp_path / "o")], capsys)
    assert err.startswith("coldstart: error: the Appium server refused the capabilities: ")
    assert "Could not find a driver for automationName 'UiAutomator2'" in err


def test_driver_without_app_lifecycle_is_exit_2(appium_server: AppiumServer, caps_file: Path,
                                                tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    err = _one_line_exit_2(["run", "appium", "--server", appium_server.url, "--platform",
                            "ios", "--caps", str(caps_file), "--out", str(tmp_path / "o")],
                           capsys)
    assert err.startswith("coldstart: error: the Appium driver of this session has no app "
                          "lifecycle commands (Appium mobile: queryAppState failed: ")
    assert "(use UiAutomator2 (--platform android) or XCUITest (--platform ios))" in err


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON"), ("[1, 2]", "is not a JSON object")])
def test_bad_caps_file_is_exit_2(tmp_path: Path, content: str, message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text(content)
    err = _one_line_exit_2(["run", "appium", "--server", "http://127.0.0.1:9", "--platform",
                            "android", "--caps", str(caps)], capsys)
    assert message in err


def test_capabilities_defaults_then_passthrough() -> None:
    config = appium.AppiumConfig(server_url="http://h:1", platform=appium.Platform.IOS,
                                 app_id="org.coldstart.app", app="/b/App.app",
                                 caps={"appium:newCommandTimeout": 900, "bstack:options":
                                       {"userName": "u"}})
    assert appium.build_capabilities(config) == {
        "appium:noReset": True, "appium:fullReset": False, "appium:autoLaunch": False,
        "appium:newCommandTimeout": 900, "platformName": "iOS",
        "appium:automationName": "XCUITest", "appium:bundleId": "org.coldstart.app",
        "appium:app": "/b/App.app", "bstack:options": {"userName": "u"}}


def test_query_string_server_url_is_refused_redacted(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    redactor = Redactor(urls=["https://h.example/wd/hub?token=abcdef123"])
    with pytest.raises(appium.UsageError) as info:
        appium.check_server("https://h.example/wd/hub?token=abcdef123", redactor)
    assert info.value.one_line() == (
        "--server 'https://h.example/wd/hub?token=***' has a query string, which the Appium "
        "client cannot carry (give credentials as https://USER:KEY@host/path, or as "
        "capabilities in --caps)")




@pytest.mark.parametrize("url, message", [
    (f"http://{USER}:{KEY}@127.0.0.1:99999/wd/hub",
     "--server 'http://***:***@127.0.0.1:99999/wd/hub' is not a valid URL: Port out of range"),
    (f"http://{USER}:{KEY}@[::1/wd/hub",
     "--server 'http://***:***@[::1/wd/hub' is not a valid URL: Invalid IPv6 URL"),
    ("http://127.0.0.1:0", "--server 'http://127.0.0.1:0' is not a valid URL: port 0"),
    ("ftp://127.0.0.1:4723", "--server 'ftp://127.0.0.1:4723' is not an http(s) URL"),
    (f"https://{USER}:{KEY}@hub.example/wd/hub#Zq9Xs3cr3tT0ken",
     "--server 'https://***:***@hub.example/wd/hub#***' has a #fragment, which is never sent "
     "to a server (remove it;"),
    ("https://hub.example/wd/hub?token=abcdef123#x",
     "--server 'https://hub.example/wd/hub?token=***#***' has a #fragment"),
])
def test_bad_server_url_is_one_line_exit_2(url: str, message: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    err = _one_line_exit_2(["run", "appium", "--server", url, "--platform", "android",
                            "--out", str(tmp_path / "o")], capsys)
    assert err.startswith(f"coldstart: error: {message}"), err
    assert KEY not in err and "Zq9Xs3cr3tT0ken" not in err and "abcdef123" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("platform, fatal", [
    ("android", "error-fatal@sessions-created"),
    ("ios", "error-fatal@sessions-created~1.5"),  # the .ips reaches crashlog 1.5 s late
])
def test_fatal_js_error_after_its_error_line_is_a_crash_with_its_report(
        appium_server: AppiumServer, caps_file: Path, tmp_path: Path, platform: str,
        fatal: str) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform=platform,
                                   script=["error@models-ready", fatal])
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, platform, 2, "--report-wait", "6") == 0
    finally:
        double.stop()
    assert double.unused_script() == []
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    # an error line with the app alive is an app error; one followed by death is a crash
    assert [(r.outcome, r.last_phase, r.crash_class) for r in records] == [
        (Outcome.APP_ERROR, "models-ready", None),
        (Outcome.CRASHED, "sessions-created", "js-error")]
    assert records[1].error == "Unhandled JS Exception: TypeError: undefined is not a function"
    crash_file = "crash.ips" if platform == "ios" else "crash.txt"
    assert f"artifacts/{records[1].launch_id}/{crash_file}" in records[1].artifacts


def test_run_appium_json_stdout_is_json_lines(appium_server: AppiumServer, caps_file: Path,
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"],
                                   credentials=(USER, KEY))
    out = tmp_path / "run"
    try:
        assert _run(double, caps_file, out, "android", 2, "--json") == 0
    finally:
        double.stop()
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert [(r["index"], r["outcome"]) for r in records] == [(0, "completed"), (1, "crashed")]
    assert "appium: server http://***:***@127.0.0.1" in captured.err  # progress: stderr
    assert KEY not in captured.out + captured.err


@pytest.mark.parametrize("fault, why", [
    ("500", "Could not proxy command to the remote server"),
    ("gone", "the Appium session ended during get_log(logcat)"),
])
def test_a_session_that_breaks_after_the_death_was_seen_keeps_the_crash(
        fault: str, why: str, appium_server: AppiumServer, caps_file: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the app is seen dead (queryAppState 1), then its crash text cannot be read: the
    # launch is a crash all the same (an infra error would be retried, and a retry can
    # turn a crash into a pass), and the next launch opens a new session
    double = AppiumLifecycleDouble(appium_server.url, platform="android", script=[
        "completed", f"crash@sessions-created!{fault}", "completed"], credentials=(USER, KEY))
    out = tmp_path / "run"
    capsys.readouterr()
    try:
        assert _run(double, caps_file, out, "android", 3) == 0
    finally:
        double.stop()
    printed = capsys.readouterr()
    assert KEY not in printed.out + printed.err and KEY not in _files_text(out)
    assert double.unused_script() == [] and double.faults_played == [fault]
    loaded = load_campaign(out)
    records = sorted(loaded.records, key=lambda r: (r.index, r.attempt))
    assert [(r.index, r.attempt, r.outcome) for r in records] == [
        (0, 1, Outcome.COMPLETED), (1, 1, Outcome.CRASHED), (2, 1, Outcome.COMPLETED)]
    assert len(loaded.counted) == 3 and not list(loaded.infra_errors)
    crashed = records[1]
    assert crashed.last_phase == "sessions-created" and crashed.crash_class is None
    assert "the app died before done; its crash text could not be read" in crashed.error
    assert why in crashed.error
    assert sum(1 for m, p, _ in double.calls if m == "POST" and p == "/session") == 2


_SECRETS = ("SECRETPW", "SECRETTOK", "SECRET@PW", "SECRET%40PW")


def _leaks(out: Path, printed: str) -> list[str]:
    """Every secret of :data:`_SECRETS` found in the files under ``out`` or ``printed``."""
    text = (_files_text(out) if out.exists() else "") + printed
    return [s for s in _SECRETS if s in text] + (["alice:"] if "alice:" in text else [])


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("server", [
    "alice:SECRETPW@127.0.0.1", "alice:SECRETPW@hub.example.com/wd/hub",
    "//alice:SECRETPW@127.0.0.1:1/wd/hub", "SECRETTOK@127.0.0.1:1",
    "SECRETTOK@hub.example.com/wd/hub", "hub.example.com/wd/hub?access_key=SECRETPW",
    "http://127.0.0.1:1/wd/hub?access_key=SECRETPW", "https://h.example/wd/hub?token=SECRETTOK",
    "https://h.example/wd/hub?password=SECRETPW",
    "http://alice:SECRET%40PW@127.0.0.1:{port}/wd/hub",
    "http://SECRETTOK@127.0.0.1:{port}/wd/hub",
])
def test_no_form_of_server_credentials_is_printed_or_stored(
        server: str, debug: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ap1"
    with refused_port() as port:
        code = main(["run", "appium", "--server", server.format(port=port), "--platform",
                     "android", "--out", str(out), *(["--debug"] if debug else [])])
    printed = capsys.readouterr()
    assert code == 2, printed.err
    assert _leaks(out, printed.out + printed.err) == [], printed.err
    assert "***" in printed.err


@pytest.mark.parametrize("caps", [
    {"accessKey": "SECRETPW"},
    {"sauce:options": {"username": "alice", "accessKey": "SECRETPW"}},
    {"bstack:options": {"userName": "alice", "accessKey": "SECRETPW"}},
    {"LT:Options": {"user": "alice", "accessKey": "SECRETPW"}},
])
def test_farm_capabilities_are_neither_printed_nor_stored(
        appium_server: AppiumServer, caps: dict, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    caps_file = tmp_path / "caps.json"
    caps_file.write_text(json.dumps(fake_caps(tmp_path, **caps)))
    double = AppiumLifecycleDouble(appium_server.url, platform="android",
                                   script=["completed", "crash@models-ready"],
                                   credentials=("alice", "SECRETTOK"))
    out = tmp_path / "run"
    assert double.url.startswith("http://alice:SECRETTOK@")  # the URL carries secrets too
    try:
        assert _run(double, caps_file, out, "android", 2) == 0
    finally:
        double.stop()
    printed = capsys.readouterr()
    assert _leaks(out, printed.out + printed.err) == []
    assert "alice" not in _files_text(out)
    # the same capabilities refused by the server (its error may echo them), with --debug
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**caps, "appium:automationName": "NoSuchDriver"}))
    code = main(["run", "appium", "--server", appium_server.url, "--platform", "android",
                 "--caps", str(bad), "--out", str(tmp_path / "o2"), "--debug"])
    printed = capsys.readouterr()
    assert code == 2 and "refused the capabilities" in printed.err
    assert _leaks(tmp_path / "o2", printed.out + printed.err) == [], printed.err
