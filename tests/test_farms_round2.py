"""Device farms, round 2 (issue #43) and the farm families of issue #46, each against a
recorded or documented response shape (tests/doubles/farm_recordings.py names the source
of each; docs/farms.md lists them): crash logs holding several reports, Firebase Test Lab's
logcat form and native-crash files, credentials only to the farm's API origin, Sauce real
devices found through the job detail, expired credentials and botocore's retries, the
evidence's signature, another build's session, a crash log later than the device log,
links planted in the campaign, a device log streamed, and usage errors up front. The clock
and the sleep are injected: no test waits in real time."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kit.campaign import load_campaign
from kit.cli import main
from kit.errors import UsageError
from kit.farms import FarmSettings
from kit.farms.attribute import read_log_lines
from kit.farms.pull import BACKUP_NAME, EVIDENCE_FILE, pull_campaign
from tests.doubles.farm_recordings import (APP, IPS_PID, Launch, as_ftl_logcat, as_json_lines,
                                           browserstack_session, campaign, full_tombstone,
                                           ftl_native_crash_entry, ios_syslog, ips_report,
                                           js_error, lambdatest_session_presigned,
                                           sauce_rdc_detail, sauce_rdc_list_entity,
                                           session_logcat)
from tests.doubles.farm_server import FarmDouble, Reply, Request
from tests.helpers.farms import (KEY, SCRIPT, SID, UAF_SIG, USER, FakeTime, add_aws_job,
                                 assert_script_classes, crash_classes, farm_env, pull)

BASIC = "Basic " + base64.b64encode(f"{USER}:{KEY}".encode()).decode()
BS_BASE = f"/app-automate/builds/b0a1c2d3/sessions/{SID}"
#: the campaign's launches start at 2026-03-14T10:00:00Z (farm_recordings.campaign)
T0_MS = 1773482400000


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of a run (progress lines aside); no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("coldstart: error")]
    assert len(errors) == 1, err
    return errors[0]


def _records(out: Path) -> list[Any]:
    return sorted(load_campaign(out).records, key=lambda r: r.index)


def _bs_routes(d: FarmDouble, devicelog: str, crashlog: Any = None, **session: Any) -> None:
    data = browserstack_session(d.url, SID)
    data["automation_session"].update(session)
    d.add(f"/app-automate/sessions/{SID}.json", Reply(body=data))
    d.add(f"{BS_BASE}/devicelogs", Reply(body=devicelog))
    if crashlog is not None:
        d.add(f"{BS_BASE}/crashlogs", *(crashlog if isinstance(crashlog, list)
                                        else [Reply(body=crashlog)]))


# -- 1. a crash log holding several reports ------------------------------------------------

def test_a_crash_log_of_several_reports_gives_each_its_own_launch(tmp_path: Path) -> None:
    """BrowserStack ``crashlogs`` without logcat prefixes: launch 3's JS error, then the
    tombstones of launches 4 and 6; the device log has their markers and no crash text."""
    script = [Launch("completed")] * 3 + [Launch("silent"), Launch("silent"),
                                          Launch("completed"), Launch("silent")]
    out = campaign(tmp_path / "bs", script, SID)
    logcat, pids = session_logcat(script)
    crashlog = js_error() + "\n" + full_tombstone(pids[4]) + "\n" + full_tombstone(pids[6])
    fake = FakeTime()
    with FarmDouble() as d:
        _bs_routes(d, logcat, crashlog)
        report = pull(out, d, "browserstack", fake)
    assert report.exit_code == 0 and report.unmatched == 0
    records = _records(out)
    assert [r.crash_class for r in records[4:7:2]] == ["xnnpack-allocator-uaf"] * 2
    assert records[4].crash["pid"] == pids[4] and records[6].crash["pid"] == pids[6]
    assert [e["how"] for e in records[4].extra["farm"]["evidence"]] == ["pid"]
    ev3 = records[3].extra["farm"]["evidence"]
    assert [e["how"] for e in ev3] == ["only-crashed-launch"]
    assert ev3[0]["crash_class"] != "xnnpack-allocator-uaf"  # the JS error is its own
    excerpt = (out / ev3[0]["artifact"]).read_text()
    assert "TypeError" in excerpt and "*** *** ***" not in excerpt


def test_two_ips_reports_in_one_crash_log_are_two_reports() -> None:
    from kit.farms.attribute import split_reports

    ips = ips_report()
    second = ips.replace(f'"pid": {IPS_PID}', '"pid": 3004', 1)
    pieces = split_reports(ips + second)
    assert len(pieces) == 2
    assert '"pid": 2211' in pieces[0][2] and '"pid": 3004' in pieces[1][2]
    assert pieces[0][2].count('"bug_type"') == 1


def test_a_second_ips_in_the_crash_log_goes_to_the_second_launch(tmp_path: Path) -> None:
    script = [Launch("silent"), Launch("completed"), Launch("silent")]
    out = campaign(tmp_path / "ios", script, SID)
    syslog, pids = ios_syslog(script)
    second = ips_report().replace(f'"pid": {IPS_PID}', f'"pid": {pids[2]}', 1)
    fake = FakeTime()
    with FarmDouble() as d:
        _bs_routes(d, syslog, ips_report() + second)
        report = pull(out, d, "browserstack", fake)
    assert report.exit_code == 0
    records = _records(out)
    assert records[0].crash["pid"] == IPS_PID and records[2].crash["pid"] == pids[2]
    assert records[2].crash_class == "xnnpack-allocator-uaf"


# -- 2. Firebase Test Lab's logcat form and native-crash files ----------------------------

def test_ftl_logcat_form_is_read_like_the_others() -> None:
    logcat, pids = session_logcat([Launch("native")])
    lines = read_log_lines(as_ftl_logcat(logcat))
    debug = [ln for ln in lines if ln.tag == "DEBUG"]
    assert debug and {ln.pid for ln in debug} == {pids[0] + 81}
    marker = next(ln for ln in lines if "COLDSTART" in ln.text)
    assert marker.pid == pids[0] and marker.tag == "ReactNativeJS" and marker.clock is not None


def test_ftl_campaign_in_its_own_logcat_form_with_its_native_crash_file(
        tmp_path: Path) -> None:
    out = campaign(tmp_path / "ftl", SCRIPT, SID)
    logcat, pids = session_logcat(SCRIPT)
    fake = FakeTime()
    bucket, rdir = "test-lab-abc", "2026-03-14_10-00-00_xyz"
    dev = f"{rdir}/Pixel2-30-en-portrait"
    crash_name = f"{dev}/data_app_native_crash_0_{APP}.txt"
    with FarmDouble() as d:
        d.add(f"/storage/v1/b/{bucket}/o", Reply(body={"items": [
            {"name": f"{dev}/logcat"}, {"name": crash_name}, {"name": f"{dev}/video.mp4"}]}))
        enc = dev.replace("/", "%2F")
        d.add(f"/storage/v1/b/{bucket}/o/{enc}%2Flogcat", Reply(body=as_ftl_logcat(logcat)))
        d.add(f"/storage/v1/b/{bucket}/o/{enc}%2Fdata_app_native_crash_0_{APP}.txt",
              Reply(body=ftl_native_crash_entry(pids[5])))
        report = pull(out, d, "firebase", fake, ref=f"gs://{bucket}/{rdir}",
                       env={"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.FAKE-oauth-token-123"})
    assert report.exit_code == 0 and report.unmatched == 0
    got = crash_classes(out)
    assert [g[1] for g in got] == [None, "xnnpack-allocator-uaf", "xnnpack-allocator-uaf",
                                   "abort", None, "xnnpack-allocator-uaf"]
    assert got[3][2].startswith("java.lang.IllegalStateException")
    records = _records(out)
    assert records[5].crash["pid"] == pids[5]
    assert records[5].extra["farm"]["evidence"][0]["source"].startswith("firebase:crash-log:")
    session = json.loads((out / EVIDENCE_FILE).read_text())["sessions"][f"gs://{bucket}/{rdir}"]
    assert "crash-log" in {a["kind"] for a in session["artifacts"]}


# -- 3. credentials only to the farm's own API origin --------------------------------------

def _s3(seen: list[Request], body: str) -> Any:
    def answer(r: Request) -> Reply:
        seen.append(r)
        if r.headers.get("authorization"):  # S3: a presigned URL and a header
            return Reply(400, "<Error><Code>InvalidArgument</Code><Message>Only one auth "
                              "mechanism allowed</Message></Error>")
        return Reply(body=body)
    return answer


def test_presigned_urls_in_a_session_record_are_fetched_bare(tmp_path: Path) -> None:
    out = campaign(tmp_path / "lt", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    seen: list[Request] = []
    with FarmDouble() as api, FarmDouble() as files:
        api.add(f"/mobile-automation/api/v1/sessions/{SID}",
                Reply(body=lambdatest_session_presigned(api.url, files.url, SID)))
        files.add(f"/automation-prod-user-files/mobile/{SID}/device.log", _s3(seen, logcat))
        files.add(f"/d2x8sh3cve7ld1/{SID}/crash.log", Reply(404, "<Error>NoSuchKey</Error>"))
        report = pull(out, api, "lambdatest", fake)
        api_auth = {c.headers.get("authorization") for c in api.calls}
        files_auth = {c.headers.get("authorization") for c in files.calls}
    assert api_auth == {BASIC} and files_auth == {None} and seen
    assert report.exit_code == 0
    assert_script_classes(out)


def test_a_refused_artifact_loses_only_itself(tmp_path: Path) -> None:
    out = campaign(tmp_path / "lt", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as api, FarmDouble() as files:
        api.add(f"/mobile-automation/api/v1/sessions/{SID}",
                Reply(body=lambdatest_session_presigned(api.url, files.url, SID)))
        files.add(f"/automation-prod-user-files/mobile/{SID}/device.log", Reply(body=logcat))
        files.add(f"/d2x8sh3cve7ld1/{SID}/crash.log",
                  Reply(403, "<Error><Code>AccessDenied</Code>Request has expired</Error>"))
        report = pull(out, api, "lambdatest", fake)
    assert report.exit_code == 0  # the device log's evidence is kept
    assert_script_classes(out)
    notes = json.loads((out / EVIDENCE_FILE).read_text())["sessions"][SID]["notes"]
    assert any("HTTP 403" in n and "crash" in n.lower() for n in notes)
    assert not any("0badc0ffee" in n or "QmFkU2ln" in n for n in notes)


# -- 4. Sauce real devices: the job found through its detail -------------------------------

def test_sauce_rdc_job_found_through_the_documented_detail(tmp_path: Path) -> None:
    out = campaign(tmp_path / "sauce", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    day = 86400000
    with FarmDouble() as d:
        listing = {"entities": [sauce_rdc_list_entity("newer", T0_MS + day, T0_MS + day + 60),
                                sauce_rdc_list_entity("other", T0_MS - 10, T0_MS + 60000),
                                sauce_rdc_list_entity("mine", T0_MS - 5000, T0_MS + 60000),
                                sauce_rdc_list_entity("old", T0_MS - 3 * day,
                                                      T0_MS - 3 * day + 60)],
                   "metaData": {"offset": 0, "limit": 50, "moreAvailable": False}}
        d.add("/v1/rdc/jobs", Reply(body=listing))
        d.add("/v1/rdc/jobs/other", Reply(body=sauce_rdc_detail(d.url, "other", "not-ours",
                                                                T0_MS, T0_MS + 60000)))
        d.add("/v1/rdc/jobs/mine", Reply(body=sauce_rdc_detail(d.url, "mine", SID,
                                                               T0_MS - 5000, T0_MS + 60000)))
        d.add("/v1/rdc/jobs/mine/deviceLogs", Reply(body=as_json_lines(logcat)))
        d.add("/v1/rdc/jobs/mine/crash.json", Reply(404, {"message": "not found"}))
        report = pull(out, d, "saucelabs", fake, deadline=30)
        details = [c.path for c in d.calls if c.path.count("/") == 4]
    assert report.exit_code == 0
    assert "/v1/rdc/jobs/newer" not in details and "/v1/rdc/jobs/old" not in details
    assert_script_classes(out)


# -- 5. expired credentials, and botocore's retries really off -----------------------------

def test_aws_expired_token_is_exit_2_in_one_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    job = "arn:aws:devicefarm:us-west-2:123456789012:job:p0/r0/00000"
    out = campaign(tmp_path / "aws", SCRIPT, SID)
    for name, value in {"AWS_ACCESS_KEY_ID": "ASIAFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY":
                        "SeCr3tAwsK3y", "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEXPIRED"}.items():
        monkeypatch.setenv(name, value)
    with FarmDouble() as d:
        d.add_aws("GetJob", lambda _r: Reply(400, {
            "__type": "ExpiredTokenException",
            "message": "The security token included in the request is expired"}))
        code = main(["farm", "pull", str(out), "--farm", "aws-device-farm", "--farm-api",
                     d.url, "--farm-ref", job, "--farm-deadline", "60"])
    err = _error_line(capsys)
    assert code == 2 and "expired" in err and "FwoGZXIv" not in err


def test_browserstack_revoked_key_is_exit_2_in_one_line_naming_its_variables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = campaign(tmp_path / "bs", SCRIPT, SID)
    for name, value in farm_env().items():
        monkeypatch.setenv(name, value)
    with FarmDouble() as d:
        d.add(f"/app-automate/sessions/{SID}.json", Reply(401, "<html>Unauthorized</html>"))
        code = main(["farm", "pull", str(out), "--farm", "browserstack", "--farm-api", d.url])
    err = _error_line(capsys)
    assert code == 2 and "BROWSERSTACK_ACCESS_KEY" in err and KEY not in err


def test_aws_throttle_reaches_the_kit_botocore_does_not_retry(tmp_path: Path) -> None:
    job = "arn:aws:devicefarm:us-west-2:123456789012:job:p0/r0/00000"
    out = campaign(tmp_path / "aws", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        add_aws_job(d, logcat, job, [])
        report = pull(out, d, "aws-device-farm", fake, ref=job, env={
            "AWS_ACCESS_KEY_ID": "AKIAFAKEFAKEFAKE", "AWS_SECRET_ACCESS_KEY": "SeCr3tAwsK3y"})
        first = [c for c in d.calls if c.headers.get("x-amz-target", "").endswith(
            "ListArtifacts")][:2]
    assert report.exit_code == 0
    assert json.loads((out / EVIDENCE_FILE).read_text())["throttled"] == 1
    assert fake.slept and fake.slept[0] == 1.0  # the kit's own backoff, in fake time
    assert len(first) == 2 and first[0].body == first[1].body  # one call, then the kit's


# -- 6. the evidence keeps its signature ---------------------------------------------------

def test_evidence_keeps_its_signature(tmp_path: Path) -> None:
    out = campaign(tmp_path / "bs", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    with FarmDouble() as d:
        _bs_routes(d, logcat, [Reply(404, "none")])
        pull(out, d, "browserstack", fake)
    records = _records(out)
    for record in (records[1], records[2]):
        evidence = record.extra["farm"]["evidence"][0]
        assert evidence["signature"] == record.signature and \
            evidence["signature"].startswith(UAF_SIG)


# -- 7. another build's session is refused -------------------------------------------------

def test_another_builds_session_is_refused_in_one_line(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    out = campaign(tmp_path / "bs", SCRIPT, SID)
    before = (out / "launches.jsonl").read_bytes()
    logcat, _ = session_logcat(SCRIPT)
    for name, value in farm_env().items():
        monkeypatch.setenv(name, value)
    with FarmDouble() as d:
        _bs_routes(d, logcat, [Reply(404, "none")], build_name="coldstart-0.3.0",
                   app_details={"app_url": "bs://9e8d7c", "app_name": "app.apk",
                                "app_version": "0.3.0", "uploaded_at": "2026-03-13T09:00:00Z"})
        code = main(["farm", "pull", str(out), "--farm", "browserstack", "--farm-api", d.url,
                     "--farm-ref", SID])
    err = _error_line(capsys)
    assert code == 2 and "not this campaign's" in err and "bs://9e8d7c" in err
    assert (out / "launches.jsonl").read_bytes() == before


def test_a_session_of_yesterday_is_refused(tmp_path: Path) -> None:
    out = campaign(tmp_path / "sauce", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    fake = FakeTime()
    day = 86400000
    with FarmDouble() as d:
        d.add("/v1/rdc/jobs", Reply(body={"entities": [
            sauce_rdc_list_entity("y", T0_MS - day, T0_MS - day + 60000)]}))
        d.add("/v1/rdc/jobs/y", Reply(body=sauce_rdc_detail(d.url, "y", SID, T0_MS - day,
                                                            T0_MS - day + 60000)))
        d.add("/v1/rdc/jobs/y/deviceLogs", Reply(body=as_json_lines(logcat)))
        with pytest.raises(UsageError, match="not this campaign's.*2026-03-13T10:00:00Z"):
            pull(out, d, "saucelabs", fake, deadline=30, ref=SID)


# -- 8. a crash log later than the device log ----------------------------------------------

def test_a_crash_log_ready_after_the_device_log_is_waited_for(tmp_path: Path) -> None:
    script = [Launch("completed"), Launch("silent"), Launch("completed")]
    out = campaign(tmp_path / "ios", script, SID)
    syslog, _ = ios_syslog(script)
    fake = FakeTime()
    with FarmDouble() as d:
        _bs_routes(d, syslog, [Reply(404, "no crash"), Reply(404, "no crash"),
                               Reply(404, "no crash"), Reply(body=ips_report())])
        report = pull(out, d, "browserstack", fake)
    assert report.exit_code == 0 and report.matched == 1
    record = _records(out)[1]
    assert record.crash_class == "xnnpack-allocator-uaf" and record.crash["pid"] == IPS_PID
    assert "crash log came" in record.extra["farm"]["note"]
    wait = json.loads((out / EVIDENCE_FILE).read_text())["sessions"][SID]["crash_log_wait"]
    assert wait["result"] == "arrived" and wait["waited_s"] > 0


def test_a_crash_log_never_there_ends_at_the_stated_deadline(tmp_path: Path) -> None:
    script = [Launch("completed"), Launch("silent")]
    out = campaign(tmp_path / "ios", script, SID)
    syslog, _ = ios_syslog(script)
    fake = FakeTime()
    with FarmDouble() as d:
        _bs_routes(d, syslog, [Reply(404, "no crash")])
        report = pull(out, d, "browserstack", fake)
    assert report.exit_code == 0
    note = _records(out)[1].extra["farm"]["note"]
    assert "was not there by" in note and "stated deadline" in note
    wait = json.loads((out / EVIDENCE_FILE).read_text())["sessions"][SID]["crash_log_wait"]
    assert wait["result"] == "deadline-passed" and 150 <= sum(fake.slept) <= 180


def test_a_crash_log_wait_cut_by_the_pulls_deadline_is_incomplete(tmp_path: Path) -> None:
    script = [Launch("silent")]
    out = campaign(tmp_path / "ios", script, SID)
    syslog, _ = ios_syslog(script)
    fake = FakeTime()
    with FarmDouble() as d:
        _bs_routes(d, syslog, [Reply(404, "no crash")])
        session = browserstack_session(d.url, SID)  # it ended "now" (the fake wall clock)
        session["automation_session"]["created_at"] = "2026-03-14T09:59:50Z"
        session["automation_session"]["duration"] = 1010
        d.add(f"/app-automate/sessions/{SID}.json", Reply(body=session))
        first = pull(out, d, "browserstack", fake, deadline=30)
        assert first.exit_code == 3 and "not there yet" in first.sessions[SID]["note"]
        assert _records(out)[0].extra.get("farm") is None  # records kept as they were
        fake.t = 1000.0 + 200  # past the stated 180 s after the session's end
        again = pull(out, d, "browserstack", fake, deadline=30)
    assert again.exit_code == 0
    assert "not there by 2026-03-14T10:19:40Z" in _records(out)[0].extra["farm"]["note"]


# -- issue #46 family 1: nothing written through a link ------------------------------------

def test_pull_writes_through_no_link_planted_in_the_campaign(tmp_path: Path) -> None:
    out = campaign(tmp_path / "bs", SCRIPT, SID)
    logcat, _ = session_logcat(SCRIPT)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    dangling = tmp_path / "created-by-the-kit"
    farm_dir = out / "artifacts" / "farm" / "browserstack" / SID
    farm_dir.mkdir(parents=True)
    for name in ("session.json", "devicelogs.txt.part", "devicelogs.txt",
                 "crash-baseline-00001-0.txt"):
        (farm_dir / name).symlink_to(victim)
    (out / BACKUP_NAME).symlink_to(dangling)
    fake = FakeTime()
    with FarmDouble() as d:
        _bs_routes(d, logcat, [Reply(404, "none")])
        report = pull(out, d, "browserstack", fake)
    assert report.exit_code == 0
    assert victim.read_text() == "the user's file\n"
    assert not os.path.lexists(dangling)
    assert not (out / BACKUP_NAME).is_symlink() and b"baseline-00000" in \
        (out / BACKUP_NAME).read_bytes()
    assert not (farm_dir / "session.json").is_symlink()
    assert_script_classes(out)


# -- issue #46 family 4: a device log streamed, never held whole ---------------------------

_RSS_PROBE = textwrap.dedent("""
    import json, resource, sys
    from kit.farms import FarmSettings
    from kit.farms.pull import pull_campaign
    out, api = sys.argv[1], sys.argv[2]
    env = {"BROWSERSTACK_USERNAME": "u-ser", "BROWSERSTACK_ACCESS_KEY": "k-ey-123"}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = pull_campaign(out, FarmSettings(name="browserstack", api=api, deadline_s=60,
                                             env=env))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"exit": report.exit_code, "grew_kib": after - before}))
""")


def test_a_100_mb_device_log_is_streamed(tmp_path: Path) -> None:
    script = [Launch("completed"), Launch("native"), Launch("completed")]
    logcat, _ = session_logcat(script)
    head, _sep, tail = logcat.partition("WifiHAL")
    filler_line = "03-14 10:00:00.500   612   640 D WifiHAL : getWifiLinkLayerStats: ok " \
                  "rssi=-51 tx=1234 rx=5678 on wlan0 for the session's whole length\n"
    filler = filler_line * (100 * 1024 * 1024 // len(filler_line))
    body = logcat + filler
    out = campaign(tmp_path / "big", script, SID)
    with FarmDouble() as d:
        _bs_routes(d, body, [Reply(404, "none")])
        run = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(out), d.url],
                             capture_output=True, text=True, timeout=600,
                             cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["exit"] == 0
    assert got["grew_kib"] < 160 * 1024  # 100 MB held ~6.5 times over was 663 MB
    assert crash_classes(out)[1][1] == "xnnpack-allocator-uaf"
    assert head and tail


# -- issue #46 family 6: usage errors up front ---------------------------------------------

@pytest.mark.parametrize("api", ["file:///etc/passwd", "not a url", "ftp://x/y",
                                 "https://u:p@host/x"])
def test_a_farm_api_that_is_no_http_url_is_exit_2_at_once(
        api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = campaign(tmp_path / "c", SCRIPT, SID)
    for name, value in farm_env().items():
        monkeypatch.setenv(name, value)
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    code = main(["farm", "pull", str(out), "--farm", "browserstack", "--farm-api", api])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--farm-api" in err
    assert slept == []


def test_a_farm_ref_with_a_newline_is_one_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = campaign(tmp_path / "c", SCRIPT, SID)
    for name, value in farm_env().items():
        monkeypatch.setenv(name, value)
    code = main(["farm", "pull", str(out), "--farm", "browserstack", "--farm-api",
                 "http://127.0.0.1:9", "--farm-ref", f"{SID}\nHost: evil"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--farm-ref" in err
    assert "Traceback" not in err and "InvalidURL" not in err


def test_pull_settings_refuse_a_bad_api_before_any_request(tmp_path: Path) -> None:
    out = campaign(tmp_path / "c", SCRIPT, SID)
    with pytest.raises(UsageError, match="--farm-api"):
        pull_campaign(out, FarmSettings(name="browserstack", api="file:///etc/passwd",
                                        env=farm_env()))


def test_run_appium_refuses_a_bad_farm_api_before_the_campaign(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code = main(["run", "appium", "--server", "http://127.0.0.1:9/wd/hub", "--platform",
                 "android", "--app-id", APP, "--farm", "browserstack", "--farm-api",
                 "file:///etc/passwd", "--launches", "2", "--out", str(out)])
    err = _error_line(capsys)
    assert code == 2 and "--farm-api" in err and not out.exists()
