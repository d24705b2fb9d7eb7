"""Farm crash evidence (kit/farms) against recorded farm responses served by
tests/doubles/farm_server.py: readiness polling, 404 = none, 429 with and without
Retry-After, pagination, a farm down past the deadline, per-launch attribution with a late
tombstone, a session with no crash, and one campaign per farm ending with per-launch crash
classes and signatures. The clock and sleep are injected: no test waits in real time."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.farms.attribute import LaunchSpan, attribute, read_log_lines
from kit.farms.pull import EVIDENCE_FILE
from kit.records import Outcome
from kit.redact import Redactor, redact_url, secrets_in_url
from tests.doubles.farm_recordings import (APP, IPS_PID, Launch, as_json_lines,
                                           browserstack_session, campaign, ftl_step,
                                           ios_syslog, ips_report, lambdatest_session,
                                           sauce_rdc_job, sauce_vdc_assets, session_logcat)
from tests.doubles.farm_server import FarmDouble, Reply
from tests.helpers.farms import (KEY, SCRIPT, SID, USER, FakeTime, add_aws_job,
                                 assert_script_classes, crash_classes, farm_env, pull)

# -- attribution ---------------------------------------------------------------------------

def test_two_launches_crashes_and_a_late_tombstone_go_to_their_launches() -> None:
    logcat, pids = session_logcat(SCRIPT)
    spans = [LaunchSpan(f"baseline-{i:05d}", crashed=s.outcome != "completed")
             for i, s in enumerate(SCRIPT)]
    cut = attribute(read_log_lines(logcat), spans, APP)
    got = sorted((m.launch_id, m.block.kind, m.how) for m in cut.matches)
    assert got == [("baseline-00001", "native", "pid"), ("baseline-00002", "native", "pid"),
                   ("baseline-00003", "java", "pid")]
    late = next(m for m in cut.matches if m.launch_id == "baseline-00002")
    assert late.block.last > cut.first["baseline-00003"]  # its DEBUG block: in the next launch
    assert cut.pids["baseline-00002"] == pids[2] and cut.unmatched == []
    assert cut.kit_stops == len(SCRIPT)  # the kit's force-stops: counted, never crashes


def test_a_process_that_died_before_its_first_line_goes_by_process_order() -> None:
    script = [Launch("completed"), Launch("no-marker-native"), Launch("completed")]
    logcat, pids = session_logcat(script)
    spans = [LaunchSpan(f"baseline-{i:05d}") for i in range(3)]
    cut = attribute(read_log_lines(as_json_lines(logcat)), spans, APP)
    assert [(m.launch_id, m.how) for m in cut.matches] == [("baseline-00001", "pid")]
    assert cut.pids["baseline-00001"] == pids[1]


def test_launches_without_markers_go_by_the_kits_own_times() -> None:
    # two launches in a row died before their first line: the process order cannot tell
    # them apart, the kit's start times can (the device clock is an hour ahead of UTC)
    script = [Launch("completed"), Launch("no-marker-native"), Launch("no-marker-native"),
              Launch("completed")]
    starts: list[int] = []
    logcat, pids = session_logcat(script, starts_ms=starts)
    utc_of_device_10h = 1773478800.0  # 2026-03-14T09:00:00Z, 10:00 on the device
    spans = [LaunchSpan(f"baseline-{i:05d}", utc_of_device_10h + ms / 1000 - 0.05,
                        utc_of_device_10h + ms / 1000 + 5, script[i].outcome != "completed")
             for i, ms in enumerate(starts)]
    cut = attribute(read_log_lines(logcat), spans, APP)
    got = sorted((m.launch_id, m.block.pid, m.how) for m in cut.matches)
    assert got == [("baseline-00001", pids[1], "time"), ("baseline-00002", pids[2], "time")]


def test_low_memory_kills_and_anrs_are_blocks_of_their_launch() -> None:
    script = [Launch("lmkd"), Launch("completed"), Launch("anr")]
    logcat, pids = session_logcat(script)
    spans = [LaunchSpan(f"baseline-{i:05d}") for i in range(3)]
    cut = attribute(read_log_lines(logcat), spans, APP)
    assert sorted((m.launch_id, m.block.kind, m.block.pid) for m in cut.matches) == [
        ("baseline-00000", "lmkd", pids[0]), ("baseline-00002", "anr", pids[2])]


def test_ios_crash_log_goes_to_the_launch_of_its_pid(tmp_path: Path) -> None:
    script = [Launch("completed"), Launch("completed"), Launch("native"), Launch("silent")]
    out = campaign(tmp_path / "ios", script, SID)
    syslog, pids = ios_syslog(script)
    assert pids[2] == IPS_PID
    fake = FakeTime()
    with FarmDouble() as d:
        session = browserstack_session(d.url, SID)
        session["automation_session"]["os"] = "ios"
        d.add(f"/app-automate/sessions/{SID}.json", Reply(body=session))
        base = f"/app-automate/builds/b0a1c2d3/sessions/{SID}"
        d.add(f"{base}/devicelogs", Reply(body=syslog))
        d.add(f"{base}/crashlogs", Reply(body=ips_report()))
        report = pull(out, d, "browserstack", fake)
    assert report.exit_code == 0 and report.crashed_without == 1
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    assert records[2].crash_class == "xnnpack-allocator-uaf"
    assert records[2].extra["farm"]["evidence"][0]["how"] == "pid"
    assert records[2].crash["pid"] == IPS_PID and records[3].crash_class is None


# -- one campaign per farm -----------------------------------------------------------------

def test_browserstack_campaign_devicelogs_and_crashlogs_404_is_none(tmp_path: Path) -> None:
    out = campaign(tmp_path / "bs", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        running = browserstack_session(d.url, SID)
        running["automation_session"]["status"] = "running"
        d.add(f"/app-automate/sessions/{SID}.json", Reply(404, "<html>not found</html>"),
              Reply(body=running), Reply(body=browserstack_session(d.url, SID)))
        base = f"/app-automate/builds/b0a1c2d3/sessions/{SID}"
        d.add(f"{base}/devicelogs", Reply(404, "processing"), Reply(body=logcat))
        d.add(f"{base}/crashlogs", Reply(404, {"message": "no crash logs"}))
        report = pull(out, d, "browserstack", fake)
        assert d.count(f"/app-automate/sessions/{SID}.json") == 3
        auth = {c.headers.get("authorization") for c in d.calls}
    assert auth == {"Basic " + base64.b64encode(f"{USER}:{KEY}".encode()).decode()}
    assert report.exit_code == 0 and report.matched == 3 and report.crashed_without == 1
    assert_script_classes(out)
    evidence = json.loads((out / EVIDENCE_FILE).read_text())
    session = evidence["sessions"][SID]
    assert "crashlogs: 404, the session had no crash" in session["notes"]
    assert session["kit_force_stops"] == len(SCRIPT)
    kinds = {a["kind"] for a in session["artifacts"]}
    assert kinds == {"session-record", "device-log"}
    stored = (out / session["artifacts"][0]["path"]).read_text()
    assert "PUBLICTOKEN" not in stored and "VIDEOTOKEN" not in stored and "auth_token=***" in \
        stored
    assert fake.slept and max(fake.slept) <= 30  # waited, capped, in fake time


def test_sauce_real_devices_pages_jobs_polls_until_processed(tmp_path: Path) -> None:
    out = campaign(tmp_path / "sauce", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        others = {"entities": [{"id": f"other-{n}", "appium_session_id": f"x{n}"}
                               for n in range(50)]}
        mine = {"entities": [{"id": "rdc-job-7", "appium_session_id": SID}]}
        d.add("/v1/rdc/jobs", lambda r: Reply(body=others if r.query.get("offset") == "0"
                                              else mine))
        d.add("/v1/rdc/jobs/rdc-job-7", Reply(body=sauce_rdc_job(d.url, "rdc-job-7", SID,
                                                                 ready=False)),
              Reply(body=sauce_rdc_job(d.url, "rdc-job-7", SID)))
        d.add("/v1/rdc/jobs/rdc-job-7/deviceLogs", Reply(body=as_json_lines(logcat)))
        d.add("/v1/rdc/jobs/rdc-job-7/crash.json", Reply(404, {"message": "not found"}))
        report = pull(out, d, "saucelabs", fake)
        offsets = [c.query.get("offset") for c in d.calls if c.path == "/v1/rdc/jobs"]
    assert offsets == ["0", "50"]  # paginated to the second page
    assert report.exit_code == 0
    assert_script_classes(out)


def test_sauce_emulators_job_assets_after_404(tmp_path: Path) -> None:
    out = campaign(tmp_path / "vdc", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        base = f"/rest/v1/{USER}/jobs/{SID}/assets"
        d.add(base, Reply(404, {"message": "job not finished"}), Reply(body=sauce_vdc_assets()))
        d.add(f"{base}/logcat.log", Reply(body=logcat))
        report = pull(out, d, "saucelabs-vdc", fake)
    assert report.exit_code == 0
    assert_script_classes(out)
    evidence = (out / EVIDENCE_FILE).read_text()
    assert USER not in evidence  # the user name in the asset URL's path is masked


def test_lambdatest_campaign_429_with_retry_after(tmp_path: Path) -> None:
    out = campaign(tmp_path / "lt", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        s = f"/mobile-automation/api/v1/sessions/{SID}"
        d.add(s, Reply(404, {"message": "not found"}), Reply(body=lambdatest_session(d.url, SID)))
        d.add(f"{s}/log/device", Reply(429, "slow down", {"Retry-After": "7"}),
              Reply(body=logcat))
        d.add(f"{s}/log/crash", Reply(404, "none"))
        report = pull(out, d, "lambdatest", fake)
    assert 7.0 in fake.slept  # Retry-After honoured
    assert report.exit_code == 0
    assert_script_classes(out)


def test_429_without_retry_after_backs_off_exponentially(tmp_path: Path) -> None:
    out = campaign(tmp_path / "lt", [Launch("native")], SID)
    logcat, _ = session_logcat([Launch("native")])
    fake = FakeTime()
    with FarmDouble() as d:
        s = f"/mobile-automation/api/v1/sessions/{SID}"
        d.add(s, Reply(429, "x"), Reply(429, "x"), Reply(429, "x"),
              Reply(body=lambdatest_session(d.url, SID)))
        d.add(f"{s}/log/device", Reply(body=logcat))
        report = pull(out, d, "lambdatest", fake)
    assert fake.slept[:3] == [1.0, 2.0, 4.0]
    assert report.exit_code == 0 and crash_classes(out)[0][1] == "xnnpack-allocator-uaf"
    assert json.loads((out / EVIDENCE_FILE).read_text())["throttled"] == 3


def test_aws_device_farm_campaign_waits_for_completed_and_paginates(tmp_path: Path) -> None:
    job = "arn:aws:devicefarm:us-west-2:123456789012:job:p0/r0/00000"
    out = campaign(tmp_path / "aws", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        add_aws_job(d, logcat, job, ["RUNNING", "RUNNING"])
        report = pull(out, d, "aws-device-farm", fake, ref=job, env={
            "AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY": "SeCr3tAwsK3y"})
        tokens = [c.body.get("nextToken") for c in d.calls
                  if c.headers.get("x-amz-target", "").endswith("ListArtifacts")
                  and c.body.get("type") == "LOG"]
        assert d.count("/s3/video") == 0  # only the kept types are downloaded
    assert None in tokens and "page-2" in tokens
    assert report.exit_code == 0
    assert_script_classes(out)
    text = (out / EVIDENCE_FILE).read_text()
    assert "deadbeefcafe" not in text and "X-Amz-Signature=***" in text


def test_firebase_test_lab_results_dir_and_tool_results_issues(tmp_path: Path) -> None:
    out = campaign(tmp_path / "ftl", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    bucket, rdir = "test-lab-abc", "2026-03-14_10:00:00.000000_xyz"
    steps = "projects/coldstart-lab/histories/bh.1/executions/5551"
    with FarmDouble() as d:
        dev = f"{rdir}/Pixel2-30-en-portrait"
        pages = {None: {"items": [{"name": f"{dev}/video.mp4"}], "nextPageToken": "p2"},
                 "p2": {"items": [{"name": f"{dev}/logcat"},
                                  {"name": f"{dev}/test_result_1.xml"}]}}
        d.add(f"/storage/v1/b/{bucket}/o", Reply(body={"items": []}),
              lambda r: Reply(body=pages[r.query.get("pageToken")]))
        d.add(f"/storage/v1/b/{bucket}/o/{dev.replace('/', '%2F').replace(':', '%3A')}%2Flogcat",
              Reply(body=logcat))
        d.add(f"/storage/v1/b/{bucket}/o/{dev.replace('/', '%2F').replace(':', '%3A')}"
              f"%2Ftest_result_1.xml", Reply(body="<testsuite tests='6' failures='4'/>"))
        d.add(f"/toolresults/v1beta3/{steps}/steps",
              Reply(body={"steps": [ftl_step("s1", bucket, rdir, "inProgress")]}),
              Reply(body={"steps": [ftl_step("s1", bucket, rdir)]}))
        report = pull(out, d, "firebase", fake, ref=f"gs://{bucket}/{rdir}", steps=steps,
                       env={"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.FAKE-oauth-token-123"})
        bearer = {c.headers.get("authorization") for c in d.calls}
    assert bearer == {"Bearer ya29.FAKE-oauth-token-123"}
    assert report.exit_code == 0
    assert_script_classes(out)
    session = json.loads((out / EVIDENCE_FILE).read_text())["sessions"][f"gs://{bucket}/{rdir}"]
    assert [i["type"] for i in session["issues"]] == ["nativeCrash"]
    assert {a["kind"] for a in session["artifacts"]} == {"device-log", "test-result",
                                                         "test-issues"}


# -- readiness, deadline, no crash ---------------------------------------------------------

def test_a_farm_down_past_the_deadline_is_exit_3_and_a_later_pull_completes(
        tmp_path: Path) -> None:
    out = campaign(tmp_path / "down", SCRIPT, SID)
    before = (out / "launches.jsonl").read_bytes()
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        d.add(f"/app-automate/sessions/{SID}.json", Reply(503, "<html>maintenance</html>"))
        report = pull(out, d, "browserstack", fake, deadline=60)
        assert report.exit_code == 3
        assert (out / "launches.jsonl").read_bytes() == before  # every record kept as is
        evidence = json.loads((out / EVIDENCE_FILE).read_text())
        assert evidence["status"] == "incomplete"
        assert "deadline" in evidence["sessions"][SID]["note"]
        assert sum(fake.slept) <= 60
        d.add(f"/app-automate/sessions/{SID}.json", Reply(body=browserstack_session(d.url, SID)))
        base = f"/app-automate/builds/b0a1c2d3/sessions/{SID}"
        d.add(f"{base}/devicelogs", Reply(body=logcat))
        again = pull(out, d, "browserstack", fake)
        assert again.exit_code == 0
        assert_script_classes(out)
        d.add(f"/app-automate/sessions/{SID}.json", Reply(503, "down again"))
        third = pull(out, d, "browserstack", fake, deadline=10)
    assert third.exit_code == 3  # a failed re-pull keeps what the earlier one matched
    assert_script_classes(out)
    kept = json.loads((out / EVIDENCE_FILE).read_text())["sessions"][SID]
    assert kept["status"] == "complete" and kept["last_pull"]["status"] == "incomplete"


def test_a_session_with_no_crash_gains_no_crash(tmp_path: Path) -> None:
    script = [Launch("completed")] * 3
    out = campaign(tmp_path / "ok", script, SID)
    logcat, _ = session_logcat(script)
    fake = FakeTime()
    with FarmDouble() as d:
        d.add(f"/app-automate/sessions/{SID}.json", Reply(body=browserstack_session(
            d.url, SID, crash_url=True)))
        base = f"/app-automate/builds/b0a1c2d3/sessions/{SID}"
        d.add(f"{base}/devicelogs", Reply(body=logcat))
        d.add(f"{base}/crashlogs", Reply(404, "no crash"))
        report = pull(out, d, "browserstack", fake)
    assert report.exit_code == 0 and report.matched == 0 and report.unmatched == 0
    assert crash_classes(out) == [("completed", None, None)] * 3
    records = load_campaign(out).records
    assert all(r.extra["farm"]["evidence"] == [] and r.extra["farm"]["note"] is None
               for r in records)


# -- redaction: every written file and both output streams ---------------------------------

def test_cli_pull_leaks_no_credential_to_any_file_or_stream(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = campaign(tmp_path / "cli", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    for name, value in farm_env().items():
        monkeypatch.setenv(name, value)
    with FarmDouble() as d:
        d.add(f"/app-automate/sessions/{SID}.json", Reply(body=browserstack_session(d.url, SID)))
        base = f"/app-automate/builds/b0a1c2d3/sessions/{SID}"
        # a device log that echoes the credentials in every documented shape
        echoed = (f"I Net: GET https://{USER}:{KEY}@hub-cloud.browserstack.com/wd/hub\n"
                  f"I Net: Authorization: Basic "
                  f"{base64.b64encode(f'{USER}:{KEY}'.encode()).decode()}\n")
        d.add(f"{base}/devicelogs", Reply(body=echoed + logcat))
        d.add(f"{base}/crashlogs", Reply(body=logcat))
        code = main(["farm", "pull", str(out), "--farm", "browserstack", "--farm-api", d.url])
    printed = capsys.readouterr()
    assert code == 0
    written = "\n".join(p.read_bytes().decode("utf-8", "replace")
                        for p in out.rglob("*") if p.is_file())
    b64 = base64.b64encode(f"{USER}:{KEY}".encode()).decode()
    for secret in (KEY, USER, b64, "PUBLICTOKEN0123456789abcdef", "VIDEOTOKEN9876543210"):
        assert secret not in written, secret
        assert secret not in printed.out and secret not in printed.err, secret
    assert "3 launch(es) matched" in printed.err


def test_headspin_path_token_and_every_farm_url_shape_are_redacted() -> None:
    token = "0123456789abcdef0123456789abcdef"
    shapes = {
        f"https://us-nyc.headspin.io:7016/v0/{token}/wd/hub": token,
        f"https://{token}@api-dev.headspin.io/v0/sessions": token,
        "https://api-dev.headspin.io/v0/Tok3n-not-hex_77/adb/R58M123/shell": "Tok3n-not-hex_77",
        f"http://127.0.0.1:4723/v0/{token}/wd/hub/session": token,
        f"https://{USER}:{KEY}@ondemand.us-west-1.saucelabs.com/wd/hub": KEY,
        "https://assets.saucelabs.com/jobs/j1/logcat.log?ts=1&auth=a2600100e3d1990721be97c0":
            "a2600100e3d1990721be97c0",
        "https://prod-us-west-2-results.s3.dualstack.us-west-2.amazonaws.com/x?X-Amz-"
        "Credential=AKIAX&X-Amz-Security-Token=FQoG123&X-Amz-Signature=abc123def":
            "abc123def",
        "https://storage.googleapis.com/b/o?X-Goog-Credential=svc&X-Goog-Signature=77aa88":
            "77aa88",
        "https://app-automate.browserstack.com/builds/b/sessions/s?auth_token=T0kenT0ken":
            "T0kenT0ken",
        f"https://{USER}:{KEY}@mobile-hub.lambdatest.com/wd/hub": KEY,
    }
    for url, secret in shapes.items():
        assert secret not in redact_url(url), url
        assert Redactor(urls=[url]).text(f"echo {secret} here") == "echo *** here", url
    assert secrets_in_url(f"https://h.headspin.io:7043/v0/{token}/wd/hub") == (token,)
    from kit.redact import redact_text

    assert token not in redact_text(f"driver_url us-nyc.headspin.io:7016/v0/{token}/wd/hub")
    assert "Tok3n" not in redact_text("curl api-dev.headspin.io/v0/Tok3n-x/adb/R5/shell -d ls")
    assert redact_url("https://api-dev.headspin.io/v0/adb/R58M123/shell").endswith(
        "/v0/adb/R58M123/shell")  # the tokenless form keeps its path
    assert redact_url("https://us-nyc.headspin.io:7016/v0//wd/hub").endswith("/v0//wd/hub")


def test_pull_of_no_campaign_is_one_line_exit_2(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in farm_env().items():
        monkeypatch.setenv(name, value)
    assert main(["farm", "pull", str(tmp_path / "nothing"), "--farm", "browserstack"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("coldstart: error:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_pull_needs_credentials_and_a_reference(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    out = campaign(tmp_path / "c", [Launch("completed")], SID)
    monkeypatch.delenv("BROWSERSTACK_USERNAME", raising=False)
    assert main(["farm", "pull", str(out), "--farm", "browserstack"]) == 2
    assert "BROWSERSTACK_USERNAME" in capsys.readouterr().err
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x" * 20)
    assert main(["farm", "pull", str(out), "--farm", "aws-device-farm"]) == 2
    assert "--farm-ref" in capsys.readouterr().err
    assert Outcome.COMPLETED is load_campaign(out).records[0].outcome


def test_retry_after_reads_seconds_and_http_dates() -> None:
    from kit.farms.http import retry_after_s

    now = 1773482400.0  # Sat, 14 Mar 2026 10:00:00 GMT
    assert retry_after_s("7", now) == 7.0
    assert retry_after_s("Sat, 14 Mar 2026 10:00:30 GMT", now) == 30.0
    assert retry_after_s("Sat, 14 Mar 2026 09:59:00 GMT", now) == 0.0  # in the past
    assert retry_after_s("soon", now) is None and retry_after_s(None, now) is None
