"""Issue #44 on iOS: a log channel that dies under a launch (the simulator's ``log stream``,
a device's console relay) and a devicectl launch request that hangs, played by the xcrun
double (tests/doubles/xcrun_double). A dying channel never costs a crash nor its phase, a
completed launch is not waited on to its timeout, and a tool's hang is not the app's."""

from __future__ import annotations

import json
from pathlib import Path

from kit.campaign import load_campaign
from kit.records import Outcome
from tests.doubles.xcrun_double import XcrunDouble
from tests.helpers.ios import by_index, run_device, run_sim
from tests.timeouts import LAUNCH_S



def test_a_log_stream_that_dies_before_a_line_keeps_the_crash_at_its_phase(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    # every `log stream` ends as sessions-created is logged, without delivering it; the
    # app crashes in inference half a second later. The unified log has the line.
    double.script(["completed", "logdrop-crash@sessions-created"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 3) == 0
    counted, infra = by_index(out)
    assert infra == [] and sorted(counted) == [0, 1, 2]
    crash = counted[1]
    assert (crash.outcome, crash.last_phase, crash.crash_class) == (
        Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf")
    assert {counted[0].outcome, counted[2].outcome} == {Outcome.COMPLETED}
    assert double.unused_script() == []


def test_a_log_stream_that_dies_under_a_completing_launch_is_not_waited_on(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    # the stream ends as inference-done is logged, and the app logs the rest through done
    # before any new stream can start: the unified log holds done
    double.script(["logdrop-done@inference-done", "completed"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 2) == 0
    counted, infra = by_index(out)
    assert infra == [] and sorted(counted) == [0, 1]
    first = counted[0]
    assert (first.outcome, first.last_phase) == (Outcome.COMPLETED, "done")
    assert first.error is None


def test_a_console_relay_that_dies_before_a_crash_keeps_the_crash(
        double: XcrunDouble, tmp_path: Path) -> None:
    # CoreDeviceError error 4: the console relay dies after sessions-created while the app
    # runs; the app crashes 0.15 s later and its .ips comes as ever
    double.script(["completed", "console-lost-crash@sessions-created"])
    assert run_device(double, tmp_path, 3) == 0
    counted, infra = by_index(tmp_path / "run")
    assert infra == [] and sorted(counted) == [0, 1, 2]
    crash = counted[1]
    assert (crash.outcome, crash.last_phase, crash.crash_class) == (
        Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf")
    assert {counted[0].outcome, counted[2].outcome} == {Outcome.COMPLETED}


def test_a_hanging_launch_request_is_a_tool_failure_and_a_left_app_is_stopped(
        double: XcrunDouble, tmp_path: Path) -> None:
    # the console dies under a running app (its fate unknown: infra-error, the app left
    # running), then devicectl's launch request for the retry hangs and starts nothing
    double.script(["completed", "console-exit@models-ready", "launch-hang"])
    assert run_device(double, tmp_path, 3) == 0
    loaded = load_campaign(tmp_path / "run")
    counted, infra = by_index(tmp_path / "run")
    assert sorted(counted) == [0, 1, 2]
    assert {r.outcome for r in counted.values()} == {Outcome.COMPLETED}
    assert not any(r.outcome is Outcome.HUNG for r in loaded.records)
    assert [r.index for r in infra] == [1, 1]
    assert "while the app still runs" in infra[0].error
    assert "launch request" in infra[1].error and f"{LAUNCH_S:g} s" in infra[1].error
    # the app the console left running was terminated before the next launch request
    calls = [json.loads(line)["argv"] for line in
             (double.home / "calls.jsonl").read_text().splitlines()]
    launches = [n for n, argv in enumerate(calls) if argv[:4] == ["devicectl", "device",
                                                                  "process", "launch"]]
    stops = [n for n, argv in enumerate(calls) if argv[:4] == ["devicectl", "device",
                                                               "process", "terminate"]]
    assert any(launches[1] < n < launches[2] for n in stops)


def test_a_log_stream_that_cannot_start_again_is_replaced_by_the_stored_log(
        double: XcrunDouble, app: Path, tmp_path: Path) -> None:
    # the stream ends as sessions-created is logged and no new stream starts for 5 s; the
    # app crashes half a second later: the stored log and the process still tell it
    double.script(["logdown-crash@sessions-created:5"])
    out = tmp_path / "run"
    assert run_sim(double, app, out, 2) == 0
    counted, infra = by_index(out)
    assert infra == [] and sorted(counted) == [0, 1]
    crash = counted[0]
    assert (crash.outcome, crash.last_phase, crash.crash_class) == (
        Outcome.CRASHED, "sessions-created", "xnnpack-allocator-uaf")
    assert counted[1].outcome is Outcome.COMPLETED
