"""Benchmark: how often the race detector sees the race on the XNNPACK allocator statics
(issue #12), per tool and scenario, and what a detector launch costs.

For each tool (drd, helgrind) it runs one host campaign per cell through the real
`coldstart run host --detector TOOL` (launches in parallel, one per core): concurrent and
serial creates, models loaded from a path and from bytes, 2, 3 and 8 sessions (sessions=2
uses infer=0: inference needs all three models). Then it prints the table: launches with an
on-target race (``kit.targets.host.detector.record_on_target``) with 95% Clopper-Pearson intervals
(``kit.analysis.stats.rate``), launches whose answer is unknown, the median seconds per
launch and the campaign's seconds per launch (its wall time over its launches, with the
parallel launches).
``--calibrate N`` also runs each calibration program N times under each tool and prints how
often each tool was right.

Usage: .venv/bin/python benchmarks/bench_detector.py [--tools drd helgrind]
           [--launches 5] [--default-launches 10] [--calibrate 0] [--out runs/detector-bench]
           [--resume] [--report-only] [--jobs N] [--only CELL ...]
Writes <out>/<tool>-<cell>/ (campaigns), <out>/calibration.json, <out>/results.json and
<out>/table.md. Needs `coldstart runtime prepare` (which installs valgrind into the root).
With the defaults, about 70 launches per tool: 25-30 minutes per tool on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit.campaign import load_campaign  # noqa: E402
from kit.targets.host.detector import record_on_target  # noqa: E402
from kit.analysis.stats import rate  # noqa: E402

#: (mode, load, sessions); the first is the default scenario.
CELLS = tuple((mode, load, sessions) for mode in ("concurrent", "serial")
              for load in ("path", "bytes") for sessions in (3, 2, 8))
DEFAULT_CELLS = {("concurrent", "path", 3), ("serial", "path", 3)}


def _scenario(mode: str, load: str, sessions: int) -> str:
    parts = [f"mode={mode}", f"load={load}", f"sessions={sessions}"]
    if sessions == 2:
        parts.append("infer=0")
    return "&".join(parts)


def _name(tool: str, mode: str, load: str, sessions: int) -> str:
    return f"{tool}-{mode}-{load}-{sessions}"


def _coldstart() -> str:
    return str(Path(sys.executable).parent / "coldstart")


def _cell_name(mode: str, load: str, sessions: int) -> str:
    return f"{mode}-{load}-{sessions}"


def run_cell(out: Path, tool: str, cell: tuple[str, str, int], launches: int, jobs: int,
             resume: bool) -> float | None:
    """One campaign; returns its wall seconds, or ``None`` when ``coldstart run`` failed
    (its exit code and the end of its stderr are printed)."""
    path = out / _name(tool, *cell)
    cmd = [_coldstart(), "run", "host", "--detector", tool, "--detector-jobs", str(jobs),
           "--launches", str(launches), "--scenario", _scenario(*cell),
           "--label", _name(tool, *cell), "--out", str(path), "--json"]
    return timed_run(cmd, path, resume)


def timed_run(cmd: list[str], path: Path, resume: bool) -> float | None:
    """Run ``coldstart run ... --out path`` (``--resume`` added when ``path`` exists and
    ``resume``); its wall seconds, or ``None`` when it failed (its exit code and the end of
    its stderr are printed). Raises SystemExit when ``path`` exists without ``resume``."""
    if path.exists():
        if not resume:
            raise SystemExit(f"{path} exists: pass --resume or another --out")
        cmd = [*cmd, "--resume"]
    started = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        print(f"  {path.name}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}",
              file=sys.stderr)
        return None
    return time.monotonic() - started


def summarize(out: Path, tools: list[str], walls: dict[str, float],
              cells: tuple[tuple[str, str, int], ...] = CELLS) -> list[dict[str, Any]]:
    rows = []
    for tool in tools:
        for cell in cells:
            path = out / _name(tool, *cell)
            if not (path / "launches.jsonl").exists():
                continue
            counts = detector_counts(path, walls.get(path.name))
            if counts is not None:
                rows.append({"tool": tool, "mode": cell[0], "load": cell[1],
                             "sessions": cell[2], **counts})
    return rows


def detector_counts(path: Path, wall: float | None) -> dict[str, Any] | None:
    """A detector campaign's row: launches, judged (``known``), ``on_target``, ``unknown``,
    outcomes, the on-target rate with its 95% Clopper-Pearson interval, the median seconds
    per launch and ``wall`` seconds per launch; ``None`` when it has no counted launch."""
    records = load_campaign(path).counted
    if not records:
        return None
    answers = [record_on_target(r) for r in records]
    known = [a for a in answers if a is not None]
    hits = sum(1 for a in known if a)
    return {"launches": len(records), "known": len(known), "on_target": hits,
            "unknown": len(answers) - len(known),
            "outcomes": sorted({str(r.outcome) for r in records}),
            "rate": rate(hits, len(known)).to_dict() if known else None,
            "median_s": statistics.median(r.wall_ms / 1000 for r in records),
            "campaign_s_per_launch": wall / len(records) if wall else None}


def fmt_rate(row: dict[str, Any]) -> str:
    """``on/known = P% [low%, high%]`` of a :func:`detector_counts` row."""
    r = row["rate"]
    if r is None:
        return "no answer"
    return (f"{row['on_target']}/{row['known']} = {100 * r['rate']:.0f}% "
            f"[{100 * r['low']:.0f}%, {100 * r['high']:.0f}%]")


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| tool | mode | load | sessions | launches with an on-target race [95% CI] | "
             "unknown | outcomes | median s/launch | campaign s/launch |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        per = row["campaign_s_per_launch"]
        lines.append(f"| {row['tool']} | {row['mode']} | {row['load']} | {row['sessions']} | "
                     f"{fmt_rate(row)} | {row['unknown']} | {', '.join(row['outcomes'])} | "
                     f"{row['median_s']:.1f} | {'-' if per is None else f'{per:.1f}'} |")
    return "\n".join(lines)


def calibrate(out: Path, tools: list[str], runs: int, jobs: int) -> list[dict[str, Any]]:
    from concurrent.futures import ThreadPoolExecutor

    from kit.targets.host.detector import find_tool
    from kit.targets.host.detector.calibration import VARIANTS, build_calibration, run_calibration
    from kit.targets.host import load_runtime

    runtime = load_runtime()
    binaries = build_calibration(runtime)
    install = find_tool(runtime)
    jobs_list = [(t, v, i) for t in tools for v in VARIANTS for i in range(runs)]

    def one(job: tuple[str, str, int]) -> Any:
        tool, variant, i = job
        return run_calibration(install, runtime, tool, variant, binaries[variant],
                               out / "calibration" / str(i))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, jobs_list))
    rows = []
    for tool in tools:
        for variant in VARIANTS:
            mine = [r for r in results if r.tool == tool and r.variant == variant]
            rows.append({"tool": tool, "variant": variant, "runs": len(mine),
                         "reported_on_statics": sum(1 for r in mine if r.on_statics > 0),
                         "right": sum(1 for r in mine if r.right),
                         "errors": sorted({r.error for r in mine if r.error})})
    return rows


def calibration_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| tool | program | runs | runs with a race on the statics | runs judged right |",
             "| --- | --- | --- | --- | --- |"]
    for row in rows:
        lines.append(f"| {row['tool']} | {row['variant']} | {row['runs']} | "
                     f"{row['reported_on_statics']} | {row['right']} |")
    return "\n".join(lines)


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--tools", "drd", "--launches", "1", "--default-launches", "1",
                  "--only", "concurrent-path-2", "--jobs", "1", "--out", "{tmp}"],
         "prints": r"\| drd \| concurrent \| path \| 2 \| [01]/1 = ", "marks": ["host", "slow"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", nargs="+", default=["drd", "helgrind"])
    parser.add_argument("--launches", type=int, default=5, help="per cell (default 5)")
    parser.add_argument("--default-launches", type=int, default=10,
                        help="for concurrent/serial x path x 3 sessions (default 10)")
    parser.add_argument("--calibrate", type=int, default=0, metavar="N",
                        help="also run each calibration program N times per tool")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out", default="runs/detector-bench")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--only", nargs="+", default=None, metavar="CELL",
                        choices=[_cell_name(*c) for c in CELLS],
                        help="cells to run, as MODE-LOAD-SESSIONS (e.g. serial-bytes-2)")
    args = parser.parse_args(argv)
    cells = tuple(c for c in CELLS if args.only is None or _cell_name(*c) in args.only)
    failed = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    walls_path = out / "walls.json"
    walls = json.loads(walls_path.read_text()) if walls_path.exists() else {}
    if not args.report_only:
        for tool in args.tools:
            for cell in cells:
                n = args.default_launches if cell in DEFAULT_CELLS else args.launches
                print(f"{_name(tool, *cell)}: {n} launches", file=sys.stderr, flush=True)
                wall = run_cell(out, tool, cell, n, args.jobs, args.resume)
                if wall is None:
                    failed.append(_name(tool, *cell))
                elif wall > 5:
                    walls[_name(tool, *cell)] = wall
                    walls_path.write_text(json.dumps(walls, indent=1))
    rows = summarize(out, args.tools, walls, cells)
    text = table(rows)
    calib: list[dict[str, Any]] = []
    if args.calibrate:
        calib = calibrate(out, args.tools, args.calibrate, args.jobs)
        text += "\n\nCalibration:\n\n" + calibration_table(calib)
    return write_results(out, {"cells": rows, "calibration": calib}, text, failed)


def write_results(out: Path, results: dict[str, Any], text: str, failed: list[str]) -> int:
    """Write ``results.json`` and ``table.md`` into ``out``, print the table; the exit code:
    1 when a campaign failed (named on stderr), else 0."""
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "table.md").write_text(text + "\n")
    print(text)
    if failed:
        print(f"failed campaigns: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
