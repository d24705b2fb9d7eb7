"""The in-session shell pass (kit/farms/shell.py): ``dumpsys dropbox`` and ``exit-info`` read
after each launch and matched to it by pid and window, on recorded dumps
(tests/data/crashes/android) and through a real Appium 3 server whose ``mobile: shell`` the
shell double answers (tests/doubles/appium_shell_double.py; needs scripts/setup-appium.sh)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.errors import InfraError
from kit.farms import shell as shells
from tests.doubles.appium_server import AppiumServer, appium_server, fake_caps  # noqa: F401
from tests.doubles.appium_shell_double import AppiumShellDouble
from tests.doubles.farm_server import FarmDouble, Reply, Request
from tests.timeouts import LAUNCH_S, REPORT_WAIT_S

DATA = Path(__file__).parent / "data" / "crashes" / "android"
APP = "com.coldstart.wakeword"
UAF = "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate"


def _dumps() -> list[shells.ShellEntry]:
    return (shells.read_entries("dropbox-data_app_native_crash",
                                (DATA / "dropbox-native-crash-mlas.txt").read_text())
            + shells.read_entries("exit-info", (DATA / "exit-info.txt").read_text()))


# -- the recorded dumps --------------------------------------------------------------------

def test_recorded_dumps_read_with_their_pids_times_and_reasons() -> None:
    got = [(e.source, e.pid, e.when[:19], e.crash, e.kit_stop) for e in _dumps()]
    assert got == [
        ("dropbox:data_app_native_crash", 6602, "2025-03-13 18:40:11", True, False),
        ("dropbox:data_app_native_crash", 9120, "2025-03-14 09:31:03", True, False),
        ("exit-info", 9120, "2025-03-14 09:31:02", True, False),
        ("exit-info", 9031, "2025-03-14 09:30:51", False, True),
        ("exit-info", 8210, "2025-03-14 09:12:07", True, False)]


def _clock(when: str) -> float:
    value = shells.clock_of(when)
    assert value is not None
    return value


def test_entries_go_to_the_launch_of_their_pid_and_force_stops_are_counted() -> None:
    windows = [shells.ShellWindow("b-0", 9031, _clock("2025-03-14 09:30:40"),
                                  _clock("2025-03-14 09:30:55")),
               shells.ShellWindow("b-1", 9120, _clock("2025-03-14 09:30:58"),
                                  _clock("2025-03-14 09:31:30"))]
    matches, stops = shells.match_entries(_dumps(), windows, APP)
    assert [(m.launch_id, m.entry.source, m.how) for m in matches] == [
        ("b-1", "dropbox:data_app_native_crash", "pid"), ("b-1", "exit-info", "pid")]
    assert stops == 1  # the kit's force-stop of b-0: never a crash
    best = shells.best_entry(matches)
    assert best is not None and best.entry.source.startswith("dropbox")


def test_a_reused_pid_from_before_the_launch_is_not_its_entry() -> None:
    # pid 9120 again, in a launch that began after that crash was written
    windows = [shells.ShellWindow("b-9", 9120, _clock("2025-03-14 11:00:00"),
                                  _clock("2025-03-14 11:00:30"))]
    matches, _ = shells.match_entries(_dumps(), windows, APP)
    assert matches == []


def test_a_launch_without_a_pid_takes_the_entry_in_its_window() -> None:
    windows = [shells.ShellWindow("b-0", 9031, _clock("2025-03-14 09:30:40"),
                                  _clock("2025-03-14 09:30:55")),
               shells.ShellWindow("b-1", None, _clock("2025-03-14 09:30:58"),
                                  _clock("2025-03-14 09:31:30"))]
    matches, _ = shells.match_entries(_dumps(), windows, APP)
    assert {(m.launch_id, m.how) for m in matches} == {("b-1", "window")}
    assert {m.entry.pid for m in matches} == {9120}
    assert shells.match_entries(_dumps(), windows, "org.other.app")[0] == []


def test_refusals_are_told_apart_from_failures() -> None:
    from tests.doubles.appium_shell_double import INSECURE

    assert shells.is_refusal(INSECURE)
    assert shells.is_refusal("Unsupported execute method 'mobile: shell'. Only 'fake: "
                             "getThing' ... are supported")
    assert not shells.is_refusal("the Appium server stopped answering during mobile: shell: "
                                 "connection refused")


# -- through Appium --------------------------------------------------------------------------

def _run(double: AppiumShellDouble, tmp_path: Path, out: Path, *more: str) -> int:
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": "emulator-5554"})))
    return main(["run", "appium", "--server", double.url, "--platform", "android", "--caps",
                 str(caps), "--launches", str(len(double.script)), "--timeout",
                 f"{LAUNCH_S:g}", "--report-wait", f"{REPORT_WAIT_S:g}", "--out", str(out),
                 "--label", "baseline", *more])


def test_the_shell_pass_gives_a_crash_without_logcat_text_its_tombstone(
        appium_server: AppiumServer, tmp_path: Path) -> None:
    double = AppiumShellDouble(appium_server.url, platform="android", shell="allowed",
                               script=["completed", "crash-nolog@models-ready",
                                       "crash@sessions-created"])
    out = tmp_path / "run"
    try:
        assert _run(double, tmp_path, out, "--appium-shell") == 0
    finally:
        double.stop()
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [r.outcome.value for r in records] == ["completed", "crashed", "crashed"]
    assert all(r.attempt == 1 for r in records)
    first, quiet, loud = (r.extra["shell"] for r in records)
    assert first["route"] == "mobile-shell" and first["entries"] == []
    assert first["kit_stops"] == 1 and quiet["kit_stops"] == 0  # launch 0's own stop
    assert [(e["source"], e["how"]) for e in quiet["entries"]] == [
        ("dropbox:data_app_native_crash", "pid"), ("exit-info", "pid")]
    assert records[1].crash_class == "xnnpack-allocator-uaf"
    assert records[1].signature.startswith(UAF)
    assert records[1].crash["format"].startswith("dropbox")
    assert quiet["applied"] in records[1].artifacts
    assert records[2].crash_class == "xnnpack-allocator-uaf"  # its DropBox tombstone
    assert [e["pid"] for e in loud["entries"]] == [quiet["pid"] + 7] * 2
    assert ["dumpsys", "activity", "exit-info", "org.coldstart.app"] in double.shell_calls


@pytest.mark.parametrize("mode", ["insecure", None])
def test_a_refused_shell_is_a_note_never_a_crash_or_an_infra_error(
        appium_server: AppiumServer, tmp_path: Path, mode: str | None) -> None:
    double = AppiumShellDouble(appium_server.url, platform="android", shell=mode,
                               script=["completed", "crash-nolog@models-ready"])
    out = tmp_path / "run"
    try:
        assert _run(double, tmp_path, out, "--appium-shell") == 0
    finally:
        double.stop()
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [r.outcome.value for r in records] == ["completed", "crashed"]
    assert all(r.attempt == 1 for r in records)
    assert records[1].crash_class is None  # no text anywhere: no class made up
    notes = [r.extra["shell"]["note"] for r in records]
    assert notes[0].startswith("shell refused: ")
    assert "refused earlier" in notes[1]
    want = "insecure feature 'adb_shell'" if mode else "Unsupported execute method"
    assert want in notes[0]
    assert len(double.shell_calls) == (1 if mode else 0)  # never tried again


def test_without_the_option_there_is_no_shell_pass(appium_server: AppiumServer,
                                                   tmp_path: Path) -> None:
    double = AppiumShellDouble(appium_server.url, platform="android", shell="allowed",
                               script=["crash-nolog@models-ready"])
    out = tmp_path / "run"
    try:
        assert _run(double, tmp_path, out) == 0
    finally:
        double.stop()
    (record,) = load_campaign(out).records
    assert "shell" not in record.extra and double.shell_calls == []
    assert record.crash_class is None


# -- HeadSpin's adb API ----------------------------------------------------------------------

HS_TOKEN = "5e1c0a9b8d7f6e5d4c3b2a1f0e9d8c7b"
SERIAL = "emulator-5554"


def _adb_api(double: AppiumShellDouble) -> Any:
    """HeadSpin's ``POST /v0/adb/{serial}/shell`` answered from the device double's
    history (the body is the command line)."""
    import shlex

    def reply(req: Request) -> Reply:
        if req.headers.get("authorization") != f"Bearer {HS_TOKEN}":
            return Reply(403, {"status": 403, "message": "forbidden"})
        body = req.body.decode() if isinstance(req.body, bytes) else str(req.body)
        argv = shlex.split(body)
        return Reply(body=double._dumpsys(argv[1:]) if argv[:1] == ["dumpsys"] else "")
    return reply


def test_headspin_adb_api_gives_the_tombstone_and_no_token_is_written(
        appium_server: AppiumServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HEADSPIN_API_TOKEN", HS_TOKEN)
    double = AppiumShellDouble(appium_server.url, platform="android", shell=None,
                               script=["completed", "crash-nolog@models-ready"])
    out = tmp_path / "run"
    server = f"http://127.0.0.1:{double.port}/v0/{HS_TOKEN}/wd/hub"
    try:
        with FarmDouble() as farm:
            farm.add(f"/v0/adb/{SERIAL}/shell", _adb_api(double), method="POST")
            caps = tmp_path / "caps.json"
            caps.write_text(json.dumps(fake_caps(tmp_path, **{"appium:udid": SERIAL})))
            code = main(["run", "appium", "--server", server, "--platform", "android",
                         "--caps", str(caps), "--launches", "2", "--timeout", f"{LAUNCH_S:g}",
                         "--report-wait", f"{REPORT_WAIT_S:g}", "--out", str(out), "--label",
                         "baseline", "--farm", "headspin", "--farm-api", farm.url])
            calls = farm.count(f"/v0/adb/{SERIAL}/shell", method="POST")
    finally:
        double.stop()
    assert code == 0
    assert calls >= 8 and double.shell_calls == []  # every dump through the adb API
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert records[1].extra["shell"]["route"] == "headspin-adb"
    assert records[1].crash_class == "xnnpack-allocator-uaf"
    assert records[1].signature.startswith(UAF)
    printed = capsys.readouterr()
    written = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert HS_TOKEN not in written + printed.out + printed.err
    assert "/v0/***/wd/hub" in (out / "campaign.json").read_text()


def test_headspin_refusing_the_token_is_a_note(tmp_path: Path) -> None:
    import httpx

    from kit.redact import Redactor

    with FarmDouble() as farm:
        farm.add(f"/v0/adb/{SERIAL}/shell", Reply(403, {"message": "forbidden"}),
                 method="POST")
        shell = shells.HeadSpinShell(httpx.Client(), farm.url, SERIAL, Redactor())
        with pytest.raises(shells.ShellRefused, match="HTTP 403"):
            shells.run_dumps(shell, "org.coldstart.app")
        farm.add(f"/v0/adb/{SERIAL}/shell", Reply(502, "bad gateway"), method="POST")
        with pytest.raises(InfraError, match="HTTP 502"):
            shells.run_dumps(shell, "org.coldstart.app")


def test_headspin_answers_are_read_bounded_and_nested_json_is_plain_text() -> None:
    # a farm answering without end is read to MAX_DUMP_BYTES, never whole; an answer
    # nested past the JSON parser is kept as text, never a traceback
    import httpx

    from kit.redact import Redactor

    sent = []

    def endless():
        for _ in range(10_000):  # 10,000 MiB if all were read
            sent.append(1)
            yield b"x" * (1 << 20)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.content == b"deep":
            return httpx.Response(200, content=b"[" * 100_000)
        return httpx.Response(200, content=endless())

    client = httpx.Client(transport=httpx.MockTransport(handler))
    shell = shells.HeadSpinShell(client, "https://api.example", SERIAL, Redactor())
    out = shell.run(["dumpsys", "dropbox"])
    assert len(out) == shells.MAX_DUMP_BYTES and set(out) == {"x"}
    assert len(sent) <= shells.MAX_DUMP_BYTES // (1 << 20) + 2
    assert shell.run(["deep"]) == "[" * 100_000


# -- AWS Device Farm: the test spec's dumps, read back from CUSTOMER_ARTIFACT ----------------

def _spec_commands(text: str, phase: str) -> list[str]:
    """The ``phase``'s command lines of a test spec (YAML single-quoted scalars)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("  ") and not line.startswith("    "):
            inside = line.strip() == f"{phase}:"
        elif inside and line.startswith("      - '"):
            out.append(line.strip()[3:-1].replace("''", "'"))
    return out


def test_aws_test_spec_dumps_come_back_as_a_customer_artifact_per_launch(
        tmp_path: Path) -> None:
    import datetime as dt
    import io
    import os
    import subprocess
    import zipfile

    from kit.farms import FarmSettings
    from kit.farms.pull import pull_campaign
    from kit.farms.testspec import render_testspec
    from tests.doubles import fake_adb_reports as rep
    from tests.doubles.adb_cli_double import write_adb
    from tests.doubles.farm_recordings import APP as FARM_APP
    from tests.doubles.farm_recordings import Launch, campaign, session_logcat
    from tests.helpers.farms import FakeTime

    script = [Launch("completed"), Launch("silent"), Launch("completed")]
    out = campaign(tmp_path / "aws", script, "4f1e0c2b9a8d")
    logcat, pids = session_logcat(script)
    when = dt.datetime(2026, 3, 14, 10, 0, 2)
    tomb = rep.Tombstone(pid=pids[1], tid=pids[1] + 58, thread="ort-create-1",
                         process=FARM_APP, uid=10187, abi="arm64",
                         fingerprint="google/oriole/oriole:14/UQ1A/1:user/release-keys",
                         when=when, signal=11, signal_name="SIGSEGV", code=1,
                         code_name="SEGV_MAPERR", fault_addr="0x0000000000000018",
                         backtrace=tuple(rep.ort_stack("creation")))
    entry = (f"Process: {FARM_APP}\nPID: {pids[1]}\nUID: 10187\nForeground: Yes\n\n"
             + "\n".join(tomb.lines()) + "\n")
    older = rep.dropbox_dump("data_app_native_crash", [(when, "data_app_native_crash", entry)],
                             3)
    exits = rep.exit_info_dump(FARM_APP, 10187, [
        rep.exit_info_entry(0, when + dt.timedelta(seconds=2), pids[2], 10187, FARM_APP, 10,
                            "USER REQUESTED", 23, "FORCE STOP", 0, 100, "stop"),
        rep.exit_info_entry(1, when, pids[1], 10187, FARM_APP, 5, "APP CRASH(NATIVE)", 0,
                            "UNKNOWN", 11, 100, "crash")])
    serial = "R58M40ABCDE"
    outputs = {f"dumpsys dropbox --print {tag}": rep.dropbox_dump(tag, [], 3)
               for tag in ("SYSTEM_TOMBSTONE", "data_app_crash")}
    outputs.update({"dumpsys dropbox --print data_app_native_crash": older,
                    f"dumpsys activity exit-info {FARM_APP}": exits})
    bin_dir = write_adb(tmp_path / "bin", serial, outputs)
    logs = tmp_path / "devicefarm-logs"
    logs.mkdir()
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", DEVICEFARM_LOG_DIR=str(logs),
               DEVICEFARM_DEVICE_UDID=serial)
    for line in _spec_commands(render_testspec(FARM_APP), "post_test"):
        subprocess.run(["bash", "-c", line], env=env, check=True, timeout=60)
    assert (logs / "coldstart-shell" / "exit-info.txt").read_text() == exits
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:  # Device Farm zips $DEVICEFARM_LOG_DIR
        for path in sorted(logs.rglob("*.txt")):
            zf.write(path, f"Host_Machine_Files/$DEVICEFARM_LOG_DIR/{path.relative_to(logs)}")
    job = "arn:aws:devicefarm:us-west-2:123456789012:job:p0/r0/00000"
    sig = "?X-Amz-Credential=AKIAFAKE%2F20260314&X-Amz-Signature=feedface0123456789"

    def get_job(_r: Request) -> Reply:
        return Reply(body={"job": {"arn": job, "status": "COMPLETED"}})

    with FarmDouble() as d:
        def list_artifacts(r: Request) -> Reply:
            if r.body.get("type") == "FILE":
                return Reply(body={"artifacts": [{
                    "arn": f"{job}/c1", "name": "Customer Artifacts", "extension": "zip",
                    "type": "CUSTOMER_ARTIFACT", "url": f"{d.url}/s3/customer{sig}"}]})
            if r.body.get("type") == "LOG":
                return Reply(body={"artifacts": [{
                    "arn": f"{job}/l1", "name": "Logcat", "extension": "txt",
                    "type": "DEVICE_LOG", "url": f"{d.url}/s3/logcat{sig}"}]})
            return Reply(body={"artifacts": []})

        d.add_aws("GetJob", get_job)
        d.add_aws("ListArtifacts", list_artifacts)
        d.add("/s3/customer", Reply(body=buf.getvalue()))
        d.add("/s3/logcat", Reply(body=logcat))
        fake = FakeTime()
        report = pull_campaign(out, FarmSettings(
            name="aws-device-farm", api=d.url, deadline_s=60, ref=job,
            env={"AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY": "S3cr3tK"}),
            clock=fake.clock, sleep=fake.sleep, wall=fake.wall)
    assert report.exit_code == 0
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert [r.outcome.value for r in records] == ["completed", "crashed", "completed"]
    assert records[1].crash_class == "xnnpack-allocator-uaf"
    assert records[1].signature.startswith(UAF)
    evidence = records[1].extra["farm"]["evidence"]
    assert [(e["how"], e["source"].split(":")[1]) for e in evidence] == [
        ("shell-pid", "shell-dump"), ("shell-pid", "shell-dump")]
    assert records[0].extra["farm"]["evidence"] == [] == records[2].extra["farm"]["evidence"]
    written = "\n".join(p.read_bytes().decode("utf-8", "replace")
                        for p in out.rglob("*") if p.is_file())
    assert "feedface" not in written and "S3cr3tK" not in written


def test_farm_testspec_prints_the_spec_and_refuses_a_bad_package(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["farm", "testspec", "--app-id", "org.coldstart.app"]) == 0
    text = capsys.readouterr().out
    lines = _spec_commands(text, "post_test")
    assert lines[-1] == ('adb -s "$DEVICEFARM_DEVICE_UDID" shell dumpsys activity exit-info '
                         'org.coldstart.app > "$DEVICEFARM_LOG_DIR/coldstart-shell/'
                         'exit-info.txt" 2>&1 || true')
    assert text.endswith("artifacts:\n  - $DEVICEFARM_LOG_DIR\n")
    assert main(["farm", "testspec", "--app-id", "org.x;rm -rf /"]) == 2
    assert "is not a package name" in capsys.readouterr().err


@pytest.mark.parametrize("line, said", [
    ("", "--test-command is empty"), ("   ", "--test-command is empty"),
    ("coldstart run appium\nrm -rf /", "holds a line break or another control character"),
    ("a\rb", "holds a line break"), ("a\x1b[2Jb", "another control character")])
def test_farm_testspec_refuses_a_test_command_yaml_would_change(
        line: str, said: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["farm", "testspec", "--app-id", "org.coldstart.app",
                 "--test-command", line]) == 2
    captured = capsys.readouterr()
    assert said in captured.err and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1


def test_farm_testspec_keeps_a_test_command_with_quotes_and_a_tab(
        capsys: pytest.CaptureFixture[str]) -> None:
    line = "coldstart run appium --label 'it''s'\t--out \"$DEVICEFARM_LOG_DIR/x\""
    assert main(["farm", "testspec", "--app-id", "org.coldstart.app",
                 "--test-command", line]) == 0
    assert _spec_commands(capsys.readouterr().out, "test") == [line]


def test_farm_saucelabs_runs_the_shell_pass_by_itself_and_pulls_after(
        appium_server: AppiumServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.doubles.farm_recordings import (Launch, as_json_lines, sauce_rdc_job,
                                               session_logcat)

    user, key = "sauce-ci", "5auce-Acc3ss-K3y-11"
    monkeypatch.setenv("SAUCE_USERNAME", user)
    monkeypatch.setenv("SAUCE_ACCESS_KEY", key)
    double = AppiumShellDouble(appium_server.url, platform="android", shell="allowed",
                               script=["completed", "crash-nolog@models-ready"])
    logcat, _ = session_logcat([Launch("completed"), Launch("silent")], app="org.coldstart.app")
    out = tmp_path / "run"
    try:
        with FarmDouble() as farm:
            def jobs(_r: Request) -> Reply:
                return Reply(body={"entities": [{"id": "rdc-job-1", "appium_session_id": sid}
                                                for sid in double.apps]})

            farm.add("/v1/rdc/jobs", jobs)
            farm.add("/v1/rdc/jobs/rdc-job-1", lambda _r: Reply(body=sauce_rdc_job(
                farm.url, "rdc-job-1", next(iter(double.apps)))))
            farm.add("/v1/rdc/jobs/rdc-job-1/deviceLogs", Reply(body=as_json_lines(logcat)))
            farm.add("/v1/rdc/jobs/rdc-job-1/crash.json", Reply(404, "none"))
            code = _run(double, tmp_path, out, "--farm", "saucelabs", "--farm-api", farm.url)
    finally:
        double.stop()
    assert code == 0
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert records[1].extra["shell"]["route"] == "mobile-shell"
    assert records[1].crash_class == "xnnpack-allocator-uaf"
    assert records[1].extra["farm"]["farm"] == "saucelabs"
    assert json.loads((out / "campaign.json").read_text())["options"]["shell"] == "mobile-shell"
    printed = capsys.readouterr()
    written = "\n".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert key not in written + printed.out + printed.err


@pytest.mark.parametrize("env, caps, want", [
    ({}, {"appium:udid": SERIAL}, "needs HEADSPIN_API_TOKEN in the environment"),
    ({"HEADSPIN_API_TOKEN": HS_TOKEN}, {}, "needs the device's serial")])
def test_headspin_without_its_token_or_serial_is_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        env: dict[str, str], caps: dict[str, str], want: str) -> None:
    from tests.doubles.appium_server import refused_port

    monkeypatch.delenv("HEADSPIN_API_TOKEN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "caps.json"
    path.write_text(json.dumps(caps))
    with refused_port() as port:  # refused before any server is asked
        code = main(["run", "appium", "--server", f"http://127.0.0.1:{port}/v0/{HS_TOKEN}"
                     "/wd/hub", "--platform", "android", "--caps", str(path), "--launches",
                     "1", "--out", str(tmp_path / "run"), "--farm", "headspin"])
    err = capsys.readouterr().err
    assert code == 2 and want in err and HS_TOKEN not in err
    assert "Traceback" not in err


def test_appium_shell_on_ios_is_one_line_exit_2(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from tests.doubles.appium_server import refused_port

    with refused_port() as port:
        code = main(["run", "appium", "--server", f"http://127.0.0.1:{port}", "--platform",
                     "ios", "--appium-shell", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "--appium-shell reads Android's dumpsys" in err
    assert "Traceback" not in err
