"""Benchmark: the mechanism tier under DRD and under ThreadSanitizer (issue #42), on the kit's
own builds: seconds per launch for the same scenario, and the detection rate on the baseline,
the fix and the half fix.

For each runtime (default baseline, fix, half-fix) and each detector it runs one host
campaign through the real ``coldstart run host --detector drd|tsan --runtime NAME``
(launches in parallel, one per core), then prints one table: launches with a race on the
allocator statics (``kit.targets.host.detector.record_on_target``) with a 95% Clopper-Pearson
interval (``kit.analysis.stats.rate``), launches whose answer is unknown, the median seconds
per launch, the campaign's seconds per launch (its wall time over its launches, with the
parallel launches), and per runtime the ratio DRD / ThreadSanitizer of the campaign seconds
per launch (both measured in this one run, on this machine). ``--calibrate N`` also runs
each calibration program N times under ThreadSanitizer.

Usage: .venv/bin/python benchmarks/bench_tsan.py [--runtimes baseline fix half-fix]
           [--tools drd tsan] [--drd-launches 10] [--tsan-launches 59]
           [--scenario 'mode=concurrent&models=hey_jarvis_v0.1&sessions=2&infer=0']
           [--calibrate 0] [--jobs N] [--out runs/tsan-bench] [--resume]
Needs the builds (`coldstart runtime build-ort --name NAME [--patch NAME] --tsan`; the
instrumented variant is otherwise built on first use). With the defaults, on 2 cores:
about 6 minutes under DRD and 2 under ThreadSanitizer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_detector import detector_counts, fmt_rate, timed_run, write_results  # noqa: E402

DEFAULT_SCENARIO = "mode=concurrent&models=hey_jarvis_v0.1&sessions=2&infer=0"


def _coldstart() -> str:
    return str(Path(sys.executable).parent / "coldstart")


def run_campaign(path: Path, tool: str, runtime: str, launches: int, scenario: str,
                 jobs: int, resume: bool) -> float | None:
    """One campaign; its wall seconds, or ``None`` when ``coldstart run`` failed."""
    cmd = [_coldstart(), "run", "host", "--detector", tool, "--runtime", runtime,
           "--detector-jobs", str(jobs), "--launches", str(launches), "--scenario", scenario,
           "--label", f"{tool}-{runtime}", "--out", str(path), "--json"]
    return timed_run(cmd, path, resume)


def summarize(out: Path, tools: list[str], runtimes: list[str],
              walls: dict[str, float]) -> list[dict[str, Any]]:
    rows = []
    for runtime in runtimes:
        for tool in tools:
            path = out / f"{tool}-{runtime}"
            if not (path / "launches.jsonl").exists():
                continue
            counts = detector_counts(path, walls.get(path.name))
            if counts is not None:
                rows.append({"tool": tool, "runtime": runtime, **counts})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| detector | runtime | launches | launches with a race on the allocator statics "
             "[95% CI] | unknown | outcomes | median s/launch | campaign s/launch |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        per = row["campaign_s_per_launch"]
        lines.append(f"| {row['tool']} | {row['runtime']} | {row['launches']} | "
                     f"{fmt_rate(row)} | {row['unknown']} | {', '.join(row['outcomes'])} | "
                     f"{row['median_s']:.2f} | {'-' if per is None else f'{per:.2f}'} |")
    ratios = []
    for runtime in dict.fromkeys(r["runtime"] for r in rows):
        by = {r["tool"]: r for r in rows if r["runtime"] == runtime}
        drd, tsan = by.get("drd"), by.get("tsan")
        if drd and tsan and drd["campaign_s_per_launch"] and tsan["campaign_s_per_launch"]:
            ratios.append(f"{runtime}: drd {drd['campaign_s_per_launch']:.2f} s / tsan "
                          f"{tsan['campaign_s_per_launch']:.2f} s per launch = "
                          f"{drd['campaign_s_per_launch'] / tsan['campaign_s_per_launch']:.1f}x")
    if ratios:
        lines += ["", "Seconds per launch, DRD over ThreadSanitizer (same run, same machine):",
                  ""] + [f"- {r}" for r in ratios]
    return "\n".join(lines)


def calibrate(out: Path, runs: int) -> list[dict[str, Any]]:
    """Each calibration program ``runs`` times under ThreadSanitizer."""
    from kit.targets.host import load_runtime
    from kit.targets.host.detector.calibration import (VARIANTS, build_calibration,
                                                       run_calibration)

    runtime = load_runtime()
    binaries = build_calibration(runtime, tsan=True)
    rows = []
    for variant in VARIANTS:
        mine = [run_calibration(None, runtime, "tsan", variant, binaries[variant],
                                out / "calibration" / str(i)) for i in range(runs)]
        rows.append({"tool": "tsan", "variant": variant, "runs": len(mine),
                     "reported_on_statics": sum(1 for r in mine if r.on_statics > 0),
                     "right": sum(1 for r in mine if r.right),
                     "errors": sorted({r.error for r in mine if r.error})})
    return rows


def calibration_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| tool | program | runs | runs with a race on the statics | runs judged right |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['tool']} | {r['variant']} | {r['runs']} | {r['reported_on_statics']} | "
              f"{r['right']} |" for r in rows]
    return "\n".join(lines)


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py)
SMOKE = {"args": ["--tools", "tsan", "--runtimes", "baseline", "--tsan-launches", "1",
                  "--jobs", "1", "--out", "{tmp}"],
         "prints": r"\| tsan \| baseline \| 1 \| [01]/1 = ", "marks": ["host", "slow"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtimes", nargs="+", default=["baseline", "fix", "half-fix"])
    parser.add_argument("--tools", nargs="+", default=["drd", "tsan"], choices=["drd", "tsan"])
    parser.add_argument("--drd-launches", type=int, default=10)
    parser.add_argument("--tsan-launches", type=int, default=59)
    parser.add_argument("--scenario", default=DEFAULT_SCENARIO)
    parser.add_argument("--calibrate", type=int, default=0, metavar="N")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out", default="runs/tsan-bench")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--report-only", action="store_true",
                        help="print the table of the campaigns under --out again")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    walls_path = out / "walls.json"
    walls = json.loads(walls_path.read_text()) if walls_path.exists() else {}
    failed = []
    for runtime in ([] if args.report_only else args.runtimes):
        for tool in args.tools:
            n = args.drd_launches if tool == "drd" else args.tsan_launches
            name = f"{tool}-{runtime}"
            print(f"{name}: {n} launches", file=sys.stderr, flush=True)
            wall = run_campaign(out / name, tool, runtime, n, args.scenario, args.jobs,
                                args.resume)
            if wall is None:
                failed.append(name)
            else:
                walls[name] = wall
                walls_path.write_text(json.dumps(walls, indent=1))
    # every campaign under --out, also those of an earlier run with other --tools
    runtimes = list(dict.fromkeys([*args.runtimes, *(k.split("-", 1)[1] for k in walls)]))
    rows = summarize(out, ["drd", "tsan"], runtimes, walls)
    text = f"Scenario: {args.scenario}\n\n" + table(rows)
    calib: list[dict[str, Any]] = []
    if args.calibrate:
        calib = calibrate(out, args.calibrate)
        text += "\n\nCalibration:\n\n" + calibration_table(calib)
    return write_results(out, {"scenario": args.scenario, "cells": rows,
                               "calibration": calib}, text, failed)


if __name__ == "__main__":
    raise SystemExit(main())
