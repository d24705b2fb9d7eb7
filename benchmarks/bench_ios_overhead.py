"""Benchmark: the iOS launchers' overhead per launch (issue #16, item 7), against the xcrun
double (tests/doubles/xcrun_double).

Each target runs ``--launches`` completed cold launches through the library (the target's
``prepare``, :func:`kit.campaign.run_campaign`). The app's own time is what it reports:
``t_ms`` of ``done``, from its own start; a launch's **overhead** is its wall time minus
that. Against the double, most of it is the double itself: every ``xcrun`` command is a
Python process start, and so is the app (which imports ``kit.protocol`` before its clock
starts). So each target is also run by a **minimal driver** that does only what any driver
must against the same double (``ios-sim``: ``simctl terminate`` + ``simctl openurl``, or one
``simctl launch --terminate-running-process``, then wait for the ``done`` line in the
simulator's log; ``ios-device``: one ``devicectl ... --console`` read until ``done``), and
the **kit's own cost** is the kit's median wall time minus the minimal driver's.

Figures printed per target (``ios-sim`` with ``--deliver url`` and ``args``, ``ios-device``):
overhead per launch (median, p90), xcrun commands per launch, the time the launch waited for
commands, the minimal driver's wall time, the kit's (a launch and its record appended and
fsynced) and the kit's own cost (the median of the paired differences: each kit launch is
followed by one minimal-driver launch, so that load changes hit both alike).

Usage: ``.venv/bin/python benchmarks/bench_ios_overhead.py [--launches 20] [--check]``
Goal (issue #16): ios-sim at most 250 ms beyond the app's own time per launch. On the
double that is checked as the kit's own cost (``--check`` exits 1 when an ios-sim median is
over 250 ms); the double's process starts are not the kit's. Run it on an idle machine: on
a loaded one the process starts dominate every figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit.campaign import launch_id_for, open_to_write  # noqa: E402
from kit.launch import LaunchContext  # noqa: E402
from kit.scenario import Scenario  # noqa: E402
from kit.targets import ios  # noqa: E402
from tests.doubles.xcrun_double import XcrunDouble  # noqa: E402

UDID = "6F1C2A4B-1D2E-4F60-9A7B-0C1D2E3F4A5B"
DEVICE_UDID = "00008110-001A2B3C4D5E801E"
GOAL_MS = 250.0


class Counting:
    """A launcher wrapper that counts the xcrun commands of each launch and the time spent
    waiting for those that run to completion (``Xcrun.run``)."""

    def __init__(self, launcher: Any, xcrun: Any) -> None:
        self.inner = launcher
        self.xcrun = xcrun
        self.target = launcher.target
        self.device = launcher.device
        self.calls: list[int] = []
        self.command_ms: list[float] = []
        self._spent = 0.0
        run = xcrun.run

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return run(*args, **kwargs)
            finally:
                self._spent += time.perf_counter() - t0

        xcrun.run = timed

    def launch(self, ctx: Any) -> Any:
        before = self.xcrun.calls
        self._spent = 0.0
        record = self.inner.launch(ctx)
        self.calls.append(self.xcrun.calls - before)
        self.command_ms.append(self._spent * 1000.0)
        return record

    def abort(self) -> None:
        self.inner.abort()


def _minimal_launch(kind: str, double: XcrunDouble, env: dict[str, str], index: int) -> float:
    """The wall time (ms) of one launch made by the minimal driver (module doc)."""
    launch_id = f"minimal-{kind}-{index:05d}"
    url = Scenario().with_id(launch_id).to_url()
    t0 = time.perf_counter()
    if kind == "device":
        proc = subprocess.Popen(
            ["xcrun", "devicectl", "device", "process", "launch", "--device", DEVICE_UDID,
             "--console", "--terminate-existing", "--payload-url", url, "org.coldstart.app"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if f'"id":"{launch_id}","phase":"done"' in line:
                break
        wall = (time.perf_counter() - t0) * 1000.0
        os.killpg(proc.pid, 9)
        proc.wait()
        return wall
    if kind == "url":
        subprocess.run(["xcrun", "simctl", "terminate", UDID, "org.coldstart.app"], env=env,
                       capture_output=True)
        subprocess.run(["xcrun", "simctl", "openurl", UDID, url], env=env, capture_output=True)
    else:
        subprocess.run(["xcrun", "simctl", "launch", "--terminate-running-process", UDID,
                        "org.coldstart.app", "-coldstartScenario", url], env=env,
                       capture_output=True)
    log = double.home / f"sim-{UDID}" / "log.ndjson"  # the simulator's unified log
    mark = f'"id\\":\\"{launch_id}\\",\\"phase\\":\\"done\\"'
    with open(log) as fh:
        seen = ""
        while mark not in seen:
            chunk = fh.read()
            seen = seen[-400:] + chunk
            if not chunk:
                time.sleep(0.002)
    return (time.perf_counter() - t0) * 1000.0


def _median_ms(argv: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=False)
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def _campaign(name: str, kind: str, prepared: Any, xcrun: Any, double: XcrunDouble,
              env: dict[str, str], out: Path, launches: int) -> dict[str, Any]:
    """``launches`` kit launches (each appended to a campaign, as the loop does), each
    followed by one minimal-driver launch, so that load changes hit both alike."""
    launcher = Counting(prepared.launchers[0], xcrun)
    camp = open_to_write(out, mode="new")
    camp.create(label="bench", target=prepared.target, scenario=Scenario(), launches=launches)
    store = camp.store
    rows = []
    try:
        for index in range(launches):
            launch_id = launch_id_for("bench", index, 1)
            art_abs, art_rel = store.artifacts_dir(launch_id)
            ctx = LaunchContext(scenario=Scenario().with_id(launch_id), index=index,
                                attempt=1, label="bench", artifacts_dir=art_abs,
                                artifacts_rel=art_rel, timeout_s=30.0)
            t0 = time.perf_counter()
            record = launcher.launch(ctx)
            store.append(record)
            kit_ms = (time.perf_counter() - t0) * 1000.0
            minimal_ms = _minimal_launch(kind, double, env, index)
            if record.outcome.value == "completed":
                rows.append({"overhead": record.wall_ms - record.phases["done"],
                             "waited": launcher.command_ms[-1], "kit": kit_ms,
                             "minimal": minimal_ms, "calls": launcher.calls[-1]})
    finally:
        prepared.close()
        camp.close()
    return {"name": name, "launches": launches, "rows": rows}


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--launches", "1"],
         "prints": r"ios-sim --deliver url +1 ", "marks": []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--phase-delay", type=float, default=0.05,
                        help="seconds the double's app spends per phase (default 0.05)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the goal is missed")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="coldstart-bench-ios-") as tmp:
        root = Path(tmp)
        double = XcrunDouble(root / "double", phase_delay_s=args.phase_delay)
        double.add_simulator(UDID, "iPhone 16")
        double.add_device(DEVICE_UDID, "Test iPhone", "A1B2C3D4-0000-4000-8000-00000000CAFE")
        os.environ.update(double.env())
        env = dict(os.environ)
        sim_app = XcrunDouble.make_app(root / "sim" / "ColdstartApp.app")
        dev_app = XcrunDouble.make_app(root / "dev" / "ColdstartApp.app", platform="iPhoneOS")
        command_ms = _median_ms(["xcrun", "simctl", "list", "-j", "devices"], env, 10)
        app_start_ms = _median_ms([sys.executable, "-S", "-c", "import sys; sys.path.insert("
                                   f"0, {str(ROOT)!r}); from kit.protocol import "
                                   "format_event"], env, 10)
        try:
            for deliver in ("url", "args"):
                config = ios.SimulatorConfig(udid=UDID, app=str(sim_app), deliver=deliver,
                                             diagnostic_reports=str(double.reports))
                prepared = ios.SimulatorTarget().prepare(config, Scenario(), lambda _m: None)
                results.append(_campaign(f"ios-sim --deliver {deliver}", deliver, prepared,
                                         prepared.launchers[0].simctl.xcrun, double, env,
                                         root / f"sim-{deliver}", args.launches))
            config = ios.DeviceConfig(udid=DEVICE_UDID, app=str(dev_app))
            prepared = ios.DeviceTarget().prepare(config, Scenario(), lambda _m: None)
            results.append(_campaign("ios-device", "device", prepared,
                                     prepared.launchers[0].devicectl.xcrun, double, env,
                                     root / "device", args.launches))
        finally:
            double.kill_apps()
    print(f"xcrun double: {command_ms:.0f} ms per command (median of 10); its app's start-up "
          f"before its clock: {app_start_ms:.0f} ms; app phase delay {args.phase_delay:g} s")
    print(f"{'target':<22} {'done':>4} {'overhead':>9} {'p90':>7} {'xcrun/launch':>12} "
          f"{'in xcrun':>9} {'minimal driver':>15} {'kit':>7} {'kit own':>8}")
    failed = False
    for res in results:
        rows = res["rows"]
        if not rows:
            print(f"{res['name']:<22} no completed launch")
            failed = True
            continue
        over = sorted(r["overhead"] for r in rows)
        p90 = over[min(len(over) - 1, int(round(0.9 * (len(over) - 1))))]
        own = statistics.median(r["kit"] - r["minimal"] for r in rows)  # paired
        med = {key: statistics.median(r[key] for r in rows)
               for key in ("overhead", "waited", "kit", "minimal", "calls")}
        print(f"{res['name']:<22} {len(rows):>4} {med['overhead']:>6.0f} ms {p90:>4.0f} ms "
              f"{med['calls']:>12g} {med['waited']:>6.0f} ms {med['minimal']:>12.0f} ms "
              f"{med['kit']:>4.0f} ms {own:>5.0f} ms")
        if res["name"].startswith("ios-sim") and own > GOAL_MS:
            failed = True
    print(f"goal: ios-sim's own cost (kit wall - minimal driver) at most {GOAL_MS:.0f} ms: "
          f"{'missed' if failed else 'met'}")
    return 1 if failed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
