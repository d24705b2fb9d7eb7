"""Recorded farm responses, built from the samples the farms document (docs/farms.md quotes
them; values abridged there, placeholders filled here), and the session logs they serve.

The session logcat is what an Android device logs over a farm session of several cold
launches by the kit: per launch ``ActivityManager: Start proc PID:APP``, the app's
``COLDSTART`` lines (``ReactNativeJS``, the app's pid), and the kit's own force-stop
(``Force stopping APP`` / ``Killing PID:APP ... stop APP``). A native crash is the tombstone
summary of tests/data/crashes/android/logcat-threadtime-xnnpack-reshape.txt (the #32461
``xnn_aligned_allocate`` use-after-free) with its pids and times moved to the launch; a
``late`` one is written after the next launch has started (tombstoned is slow), as
jappeace/hatter#197 saw.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from tests.helpers import prepare_store
from kit.records import LaunchRecord, Outcome
from kit.scenario import parse_scenario

APP = "com.coldstart.wakeword"
ROOT = Path(__file__).resolve().parents[1] / "data" / "crashes" / "android"
_PREFIX = re.compile(r"^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")
#: the fixture's app pid, crashing tid and crash_dump pid
_FIX_PID, _FIX_TID, _FIX_DUMP = "9120", "9178", "9201"


@dataclasses.dataclass(frozen=True)
class Launch:
    """One scripted launch: ``outcome`` (``completed`` / ``native`` / ``native-late`` /
    ``java`` / ``lmkd`` / ``anr`` / ``silent``: crashed with no crash text anywhere /
    ``no-marker-native``: died natively before its first line)."""

    outcome: str


class Clock:
    def __init__(self) -> None:
        self.ms = 0

    def stamp(self, step_ms: int = 7) -> str:
        self.ms += step_ms
        s, ms = divmod(self.ms, 1000)
        m, s = divmod(s, 60)
        return f"03-14 10:{m:02d}:{s:02d}.{ms:03d}"


def _tombstone(pid: int, clock: Clock) -> list[str]:
    text = (ROOT / "logcat-threadtime-xnnpack-reshape.txt").read_text()
    out = []
    for line in text.splitlines():
        if not _PREFIX.match(line) or not (" F libc " in line or " F DEBUG " in line):
            continue
        line = _PREFIX.sub(clock.stamp(1), line)
        line = line.replace(_FIX_PID, str(pid)).replace(_FIX_TID, str(pid + 58)).replace(
            _FIX_DUMP, str(pid + 81))
        out.append(line)
    return out


def _java(pid: int, clock: Clock) -> list[str]:
    text = (ROOT / "logcat-java-fatal.txt").read_text()
    out = []
    for line in text.splitlines():
        if _PREFIX.match(line) and "AndroidRuntime" in line:
            out.append(_PREFIX.sub(clock.stamp(1), line).replace("7720", str(pid)))
    return out


def _fixture_lines(name: str, pid: int, fixture_pid: str, clock: Clock) -> list[str]:
    text = (ROOT / name).read_text()
    return [_PREFIX.sub(clock.stamp(1), line).replace(fixture_pid, str(pid))
            for line in text.splitlines() if _PREFIX.match(line)]


def _say(clock: Clock, pid: int, launch_id: str, phase: str, t_ms: int) -> str:
    line = json.dumps({"v": 1, "id": launch_id, "phase": phase, "t_ms": t_ms},
                      separators=(",", ":"))
    return f"{clock.stamp()}  {pid}  {pid + 20} I ReactNativeJS: COLDSTART {line}"


def session_logcat(launches: list[Launch], label: str = "baseline", app: str = APP,
                   starts_ms: list[int] | None = None) -> tuple[str, list[int]]:
    """The session's logcat (threadtime) and each launch's pid (``app``: the package);
    ``starts_ms`` gets each launch's start on the device clock (ms after 03-14 10:00)."""
    clock = Clock()
    lines = ["--------- beginning of main"]
    pids = []
    pending: list[str] = []  # a late tombstone, written after the next launch started
    for i, launch in enumerate(launches):
        pid = 12000 + 100 * i
        pids.append(pid)
        lid = f"{label}-{i:05d}"
        stamp = clock.stamp(400)
        if starts_ms is not None:
            starts_ms.append(clock.ms)
        lines.append(f"{stamp}   581   612 I ActivityManager: Start proc "
                     f"{pid}:{APP}/u0a187 for next-top-activity {{{APP}/.MainActivity}}")
        if launch.outcome != "no-marker-native":
            for t, phase in enumerate(("start", "models-ready", "sessions-created")):
                lines.append(_say(clock, pid, lid, phase, 100 * t + 20))
        lines.extend(pending)
        pending = []
        lines.append(f"{clock.stamp()}   612   640 D WifiHAL : getWifiLinkLayerStats: ok")
        if launch.outcome == "completed":
            for t, phase in enumerate(("inference-done", "sessions-released", "done")):
                lines.append(_say(clock, pid, lid, phase, 400 + 100 * t))
        elif launch.outcome in ("native", "no-marker-native"):
            lines.extend(_tombstone(pid, clock))
        elif launch.outcome == "native-late":
            lines.append(f"{clock.stamp()}  {pid}  {pid + 58} F libc    : Fatal signal 11 "
                         f"(SIGSEGV), code 2 (SEGV_ACCERR), fault addr 0x000000771b2c4018 in "
                         f"tid {pid + 58} (ort-infer-1), pid {pid} (ldstart.wakeword)")
            pending = [t for t in _tombstone(pid, clock) if " DEBUG " in t]
        elif launch.outcome == "java":
            lines.extend(_java(pid, clock))
        elif launch.outcome == "lmkd":  # killed for memory: the kit's launch is a death
            lines.extend(_fixture_lines("logcat-lmkd.txt", pid, "10310", clock))
        elif launch.outcome == "anr":
            lines.extend(_fixture_lines("logcat-anr.txt", pid, "9150", clock))
        lines.append(f"{clock.stamp()}   581  4321 I ActivityManager: Force stopping {APP} "
                     f"appid=10187 user=0: from pid 4321")
        lines.append(f"{clock.stamp()}   581  4321 I ActivityManager: Killing {pid}:{APP}/"
                     f"u0a187 (adj 0): stop {APP} due to from pid 4321")
    lines.extend(pending)
    return "\n".join(lines).replace(APP, app) + "\n", pids


def as_json_lines(logcat: str) -> str:
    """The log as Sauce Labs' ``deviceLogs`` JSON lines (saucerest-java reads
    ``{"timestamp", "level", "message"}``; the message is the logcat line: unverified)."""
    out = []
    for n, line in enumerate(logcat.splitlines()):
        out.append(json.dumps({"timestamp": 1773482400000 + n, "level": "INFO",
                               "message": line}))
    return "\n".join(out) + "\n"


def campaign(out: Path, launches: list[Launch], session_id: str,
             label: str = "baseline") -> Path:
    """A finished Appium campaign as a farm session leaves it when ``get_log`` gave no crash
    text: the crashed launches have no class and a note saying why."""
    scenario = parse_scenario("")
    store, _ = prepare_store(out, label=label, target="appium", scenario=scenario,
                             launches=len(launches), resume=False,
                             meta_extra={"build": {"app": "bs://0f1e2d", "app_id": APP},
                                         "devices": [{"id": "android@hub", "kind":
                                                      "appium-android",
                                                      "session_id": session_id}]})
    store.lock()
    try:
        for i, launch in enumerate(launches):
            crashed = launch.outcome != "completed"
            store.append(LaunchRecord(
                launch_id=f"{label}-{i:05d}", index=i, attempt=1, label=label,
                target="appium", device="android@hub",
                scenario=scenario.with_id(f"{label}-{i:05d}").to_url()
                if hasattr(scenario, "with_id") else scenario.to_url(),
                outcome=Outcome.CRASHED if crashed else Outcome.COMPLETED,
                last_phase="sessions-created" if crashed else "done",
                started_at=f"2026-03-14T10:00:{i:02d}.000Z", wall_ms=900.0,
                error=("the app died before done and no crash text for it appeared in "
                       "logcat within 10 s") if crashed else None,
                artifacts=[f"artifacts/{label}-{i:05d}/logcat.txt"],
                extra={"session_id": session_id}))
    finally:
        store.unlock()
    return out


def browserstack_session(base: str, session_id: str, build: str = "b0a1c2d3",
                         crash_url: bool = False) -> dict[str, Any]:
    """The documented session JSON (BrowserStack REST reference, abridged)."""
    s = f"{base}/app-automate/builds/{build}/sessions/{session_id}"
    data = {"name": "coldstart-0001", "duration": 412, "os": "android", "os_version": "13.0",
            "device": "Google Pixel 7", "status": "done", "hashed_id": session_id,
            "reason": "CLIENT_STOPPED_SESSION", "build_name": "coldstart", "project_name":
            "coldstart", "logs": f"{s}/logs",
            "browser_url": f"https://app-automate.browserstack.com/builds/{build}/sessions/"
                           f"{session_id}",
            "public_url": f"https://app-automate.browserstack.com/builds/{build}/sessions/"
                          f"{session_id}?auth_token=PUBLICTOKEN0123456789abcdef",
            "appium_logs_url": f"{s}/appiumlogs",
            "video_url": f"https://app-automate.browserstack.com/sessions/{session_id}/video?"
                         f"token=VIDEOTOKEN9876543210fedcba&source=rest_api",
            "device_logs_url": f"{s}/devicelogs",
            "app_details": {"app_url": "bs://0f1e2d", "app_name": "app.apk",
                            "app_version": "1.0", "uploaded_at": "2026-03-14T09:00:00Z"}}
    if crash_url:
        data["crash_logs_url"] = f"{s}/crashlogs"
    return {"automation_session": data}


def sauce_rdc_job(base: str, job_id: str, session_id: str, ready: bool = True
                  ) -> dict[str, Any]:
    """The RDC job JSON (Sauce RDC API doc field names; URLs null until processed)."""
    j = f"{base}/v1/rdc/jobs/{job_id}"
    return {"id": job_id, "appium_session_id": session_id, "status": "failed", "os":
            "android", "os_version": "13", "device_name": "Google Pixel 7",
            "crash_log_url": f"{j}/crash.json" if ready else None,
            "device_log_url": f"{j}/deviceLogs" if ready else None,
            "network_log_url": None, "testfairy_log_url": f"{j}/insights.json" if ready
            else None, "video_url": f"{j}/video.mp4" if ready else None}


def sauce_vdc_assets() -> dict[str, Any]:
    """saucerest-java's ``src/test/resources/assets.json``."""
    return {"video.mp4": "video.mp4", "selenium-log": "selenium-server.log",
            "sauce-log": "log.json", "logcat.log": "logcat.log",
            "screenshots": ["0000screenshot.png", "0001screenshot.png"]}


def lambdatest_session(base: str, session_id: str) -> dict[str, Any]:
    """LambdaTest's session JSON (key names secondary, docs/farms.md)."""
    s = f"{base}/mobile-automation/api/v1/sessions/{session_id}"
    return {"data": {"test_id": session_id, "console_logs_url": f"{s}/log/console",
                     "network_logs_url": f"{s}/log/network", "command_logs_url":
                     f"{s}/log/command", "appium_logs_url": f"{s}/log/appium",
                     "device_logs_url": f"{s}/log/device", "crash_logs_url": f"{s}/log/crash",
                     "screenshot_url": None, "video_url": f"{s}/video"}}


def ftl_step(step_id: str, bucket: str, rdir: str, state: str = "complete") -> dict[str, Any]:
    """A Tool Results v1beta3 step (the documented shape, abridged)."""
    return {"stepId": step_id, "state": state,
            "outcome": {"summary": "failure", "failureDetail": {"crashed": True}},
            "testExecutionStep": {"testIssues": [
                {"type": "nativeCrash", "severity": "severe",
                 "errorMessage": "Native crash of com.coldstart.wakeword",
                 "warning": {"@type": "type.googleapis.com/google.devtools.toolresults."
                                      "v1beta3.NativeCrash",
                             "stackTrace": {"exception": "signal 11 (SIGSEGV)"}}}],
                "toolExecution": {"toolLogs": [
                    {"fileUri": f"gs://{bucket}/{rdir}/Pixel2-30-en-portrait/logcat"}]}}}


#: the pid of tests/data/crashes/ios/xnnpack-create.ips
IPS_PID = 2211


def ios_syslog(launches: list[Launch], label: str = "baseline") -> tuple[str, list[int]]:
    """An iOS session syslog (``Mon DD HH:MM:SS device Process[pid] <Notice>: ...``) with
    each launch's COLDSTART lines; the first crashed launch has the pid of the ``.ips``."""
    lines = []
    pids = []
    crashed_seen = False
    for i, launch in enumerate(launches):
        pid = 3000 + i
        if launch.outcome != "completed" and not crashed_seen:
            pid, crashed_seen = IPS_PID, True
        pids.append(pid)
        lid = f"{label}-{i:05d}"
        phases = ("start", "models-ready") if launch.outcome != "completed" else (
            "start", "models-ready", "sessions-created", "inference-done",
            "sessions-released", "done")
        for t, phase in enumerate(phases):
            line = json.dumps({"v": 1, "id": lid, "phase": phase, "t_ms": 50 * t},
                              separators=(",", ":"))
            lines.append(f"Mar 14 10:00:{i:02d} iPhone ColdstartWakeword[{pid}] <Notice>: "
                         f"COLDSTART {line}")
        lines.append(f"Mar 14 10:00:{i:02d} iPhone SpringBoard[58] <Notice>: [app<com.coldstart"
                     f".wakeword>:{pid}] Now flagged as pending exit for reason: launch")
    return "\n".join(lines) + "\n", pids


def ips_report() -> str:
    """The #32461 ``.ips`` (tests/data/crashes/ios/xnnpack-create.ips)."""
    return (ROOT.parent / "ios" / "xnnpack-create.ips").read_text()


# -- round 2: the shapes of issue #43 ------------------------------------------------------

_THREADTIME_LINE = re.compile(r"^(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\s+(?P<pid>\d+)\s+"
                              r"\d+\s+(?P<lvl>[VDIWEFA])\s+(?P<tag>[^:]*?)\s*:\s(?P<msg>.*)$")


def as_ftl_logcat(logcat: str) -> str:
    """The log in Firebase Test Lab's own logcat form, ``MM-DD HH:MM:SS.mmm: L/Tag( pid):
    msg`` (the form public log tools parse FTL's ``logcat`` in: jerryjeon/logjerry
    ``FirebaseTestLabLogcatFormatParser``, ``\\( *\\d+ *\\)`` pids padded to 5)."""
    out = []
    for line in logcat.splitlines():
        m = _THREADTIME_LINE.match(line)
        if not m:
            out.append(line)
            continue
        out.append(f"{m.group('stamp')}: {m.group('lvl')}/{m.group('tag')}"
                   f"({int(m.group('pid')):5d}): {m.group('msg')}")
    return "\n".join(out) + "\n"


def full_tombstone(pid: int) -> str:
    """tests/data/crashes/android/tombstone-full-xnnpack-create.txt (the #32461 UAF, a
    whole tombstone as a crash log holds it: no logcat prefixes) with its pid moved."""
    text = (ROOT / "tombstone-full-xnnpack-create.txt").read_text()
    return text.replace("pid: 8214", f"pid: {pid}").replace("tid: 8214", f"tid: {pid}")


def js_error() -> str:
    """A React Native JS error as a crash console shows it
    (tests/data/crashes/android/expo-cli-js-error.txt): no pid, no logcat prefix."""
    return (ROOT / "expo-cli-js-error.txt").read_text()


def ftl_native_crash_entry(pid: int, app: str = APP) -> str:
    """What FTL leaves as ``data_app_native_crash_0_<pkg>.txt`` (Flank#2484): one DropBox
    entry (the ``Process:`` / ``PID:`` header, then the tombstone), here the first entry of
    tests/data/crashes/android/dropbox-native-crash-mlas.txt's format around the #32461
    tombstone."""
    head = (f"Process: {app}\nPID: {pid}\nUID: 10187\nFlags: 0x38c8be44\n"
            f"Package: {app} v12 (0.3.1)\nForeground: Yes\nBuild: google/sdk_gphone64_arm64/"
            "emu64a:14/UE1A.230829.036/10709207:userdebug/dev-keys\n\n")
    return head + full_tombstone(pid)


def lambdatest_session_presigned(base: str, files: str, session_id: str) -> dict[str, Any]:
    """LambdaTest's session JSON as its documented sample gives the log links: presigned
    S3 / CloudFront URLs on another host (``files``: that host's base here), not the API's
    (docs/farms.md)."""
    s3 = (f"{files}/automation-prod-user-files/mobile/{session_id}/device.log?"
          "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIAFAKE%2F20260314%2Fus-east-1"
          "%2Fs3%2Faws4_request&X-Amz-Date=20260314T101500Z&X-Amz-Expires=3600&"
          "X-Amz-SignedHeaders=host&X-Amz-Signature=0badc0ffee0badc0ffee")
    cf = (f"{files}/d2x8sh3cve7ld1/{session_id}/crash.log?Expires=1773486000&"
          "Signature=QmFkU2lnbmF0dXJl~x&Key-Pair-Id=K2JCJMDEHXQW5F")
    data = lambdatest_session(base, session_id)["data"]
    data.update(device_logs_url=s3, crash_logs_url=cf,
                video_url=f"{files}/automation-prod-user-files/mobile/{session_id}/video.mp4")
    return {"data": data}


def sauce_rdc_list_entity(job_id: str, start_ms: int, end_ms: int) -> dict[str, Any]:
    """One entity of ``GET /v1/rdc/jobs`` as https://docs.saucelabs.com/dev/api/rdc/
    documents it ("Get Real Device Jobs"): no ``appium_session_id`` (only the job detail
    has it)."""
    return {"assigned_tunnel_id": None, "device_type": "real_device",
            "owner_sauce": "coldstart-ci", "consolidated_status": "failed",
            "end_time": end_ms, "id": job_id, "name": "coldstart", "os": "Android",
            "os_version": "13", "device_name": "Google Pixel 7", "start_time": start_ms,
            "status": "failed", "creation_time": start_ms, "automation_backend": "APPIUM",
            "automated": True}


def sauce_rdc_detail(base: str, job_id: str, session_id: str, start_ms: int, end_ms: int,
                     package: str = APP, version: str = "0.3.1") -> dict[str, Any]:
    """``GET /v1/rdc/jobs/{id}`` as documented (``appium_session_id``,
    ``application_summary``, ``start_time``/``end_time`` in ms)."""
    job = sauce_rdc_job(base, job_id, session_id)
    job.update(application_summary={"appStorageId": "861d0f58", "filename": "app.apk",
                                    "name": "Coldstart", "packageName": package,
                                    "version": version, "versionCode": "12"},
               start_time=start_ms, end_time=end_ms, creation_time=start_ms,
               device_type="real_device", automation_backend="APPIUM")
    return job
