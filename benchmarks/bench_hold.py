"""Benchmark: the crash on demand: crash rate, classified-UAF rate and witnessed-race rate
against the hold (issue #39; docs/race.md, "The hold").

For each hold (0, 1, 5, 20, 100 ms), glibc heap poisoning off and on, and one or two launches
at a time, it runs real host campaigns (`coldstart run host --scenario hold=MS`, the race
witness on, the production shape otherwise) and reports per cell: launches that crashed,
crashes classed ``xnnpack-allocator-uaf`` (the kit's own classification of each crash),
launches whose witness saw two allocator contexts, launches whose hold engaged, and launches
per minute. "Two at a time" runs two campaigns side by side (each one launch at a time), as
two CI jobs on one machine would. Cells are run in order of hold, so a drifting load on a
shared machine shows in the load average printed with each row.

With ``--check`` it exits 1 unless the figures issue #39 asks for hold (one at a time, no
poisoning): every launch that asked for a hold was held; at 20 and 100 ms at least 90% of
launches crashed (the issue's figure for the main job's baseline); at least 95% of all crashes were classed ``xnnpack-allocator-uaf``; at most 10% crashed
without a hold (the issue: 0/10).

Usage: .venv/bin/python benchmarks/bench_hold.py [--launches 10] [--holds 0 1 5 20 100]
           [--no-poison] [--jobs 1 2] [--runtime debian] [--out runs/hold-bench] [--check]
Needs the prepared host runtime (`coldstart runtime prepare`). With the defaults (20 cells
of 10 launches) about 8 minutes on a busy 2-core machine.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit.analysis.stats import Rate, rate  # noqa: E402
from kit.campaign import load_campaign  # noqa: E402
from kit.records import LaunchRecord, Outcome  # noqa: E402

UAF = "xnnpack-allocator-uaf"


def run_campaign(out: Path, label: str, hold: int, poison: bool, launches: int,
                 runtime: str) -> tuple[list[LaunchRecord], float]:
    """One `coldstart run host` campaign in its own process; its records and wall seconds."""
    argv = [sys.executable, "-m", "kit.cli", "run", "host", "--runtime", runtime,
            "--launches", str(launches), "--label", label, "--out", str(out / label),
            "--witness", "--scenario", f"hold={hold}"]
    if poison:
        argv.append("--poison")
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{' '.join(argv[2:])} exited {proc.returncode}: {tail}")
    return list(load_campaign(out / label).records), wall


def cell(out: Path, hold: int, poison: bool, jobs: int, launches: int,
         runtime: str) -> dict[str, Any]:
    """One cell: ``launches`` launches in ``jobs`` side-by-side campaigns."""
    load = os.getloadavg()[0]
    name = f"hold{hold}-{'poison' if poison else 'plain'}-x{jobs}"
    shares = [launches // jobs + (1 if i < launches % jobs else 0) for i in range(jobs)]
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(lambda i: run_campaign(out, f"{name}-{i}", hold, poison,
                                                    shares[i], runtime), range(jobs)))
    wall = time.monotonic() - t0
    records = [r for recs, _ in done for r in recs if r.counted]
    crashed = [r for r in records if r.outcome is Outcome.CRASHED]
    watched = [r for r in records if r.race is not None and r.race.available]
    return {"name": name, "hold_ms": hold, "poison": poison, "jobs": jobs,
            "load_avg": load, "wall_s": wall,
            "launches": len(records),
            "crashed": rate(len(crashed), len(records)),
            "uaf": rate(sum(1 for r in records if r.crash_class == UAF), len(records)),
            "uaf_of_crashes": rate(sum(1 for r in crashed if r.crash_class == UAF),
                                   len(crashed)),
            "witnessed": rate(sum(1 for r in watched if r.race.witnessed), len(watched)),
            "held": rate(sum(1 for r in records if r.hold is not None and r.hold.held),
                         len(records)) if hold > 0 else None,
            "per_minute": len(records) / (wall / 60.0) if wall > 0 else None,
            "classes": sorted({str(r.crash_class) for r in crashed})}


def _r(r: Rate | None) -> str:
    if r is None:
        return "-"
    if not r.n:
        return "0/0"
    return f"{r.count}/{r.n} ({r.count / r.n:.0%})"


def render(rows: list[dict[str, Any]], args: argparse.Namespace, elapsed_s: float) -> str:
    out = [f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores, runtime "
           f"`{args.runtime}`, with `python benchmarks/bench_hold.py --launches "
           f"{args.launches}` ({elapsed_s / 60:.1f} min). Counts over counted launches.", "",
           "| hold ms | poison | at a time | crashed | classed UAF | UAF of crashes | "
           "witnessed | held | launches/min | load avg |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        out.append(f"| {row['hold_ms']} | {'glibc' if row['poison'] else 'off'} | "
                   f"{row['jobs']} | {_r(row['crashed'])} | {_r(row['uaf'])} | "
                   f"{_r(row['uaf_of_crashes'])} | {_r(row['witnessed'])} | "
                   f"{_r(row['held'])} | {row['per_minute']:.1f} | {row['load_avg']:.1f} |")
    return "\n".join(out) + "\n"


def check(rows: list[dict[str, Any]]) -> list[str]:
    """The issue's figures (module doc); one line per figure missed."""
    bad = []
    plain = [r for r in rows if not r["poison"] and r["jobs"] == 1]
    for row in rows:
        if row["held"] is not None and row["held"].count != row["held"].n:
            bad.append(f"{row['name']}: the hold engaged in {_r(row['held'])} launches")
    for row in plain:
        c = row["crashed"]
        if row["hold_ms"] in (20, 100) and c.n and c.count < 0.9 * c.n:
            bad.append(f"{row['name']}: crashed {_r(c)}, below 90%")
        if row["hold_ms"] == 0 and c.n and c.count > 0.1 * c.n:
            bad.append(f"{row['name']}: crashed {_r(c)} without a hold, above 10%")
    crashes = sum(r["crashed"].count for r in rows)
    uaf = sum(r["uaf_of_crashes"].count for r in rows)
    if crashes and uaf < 0.95 * crashes:
        bad.append(f"only {uaf}/{crashes} crashes classed {UAF}, below 95%")
    return bad


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--launches", "1", "--holds", "0", "--no-poison", "--jobs", "1", "--out",
                   "{tmp}"],
         "prints": r"\| 0 \| off \| 1 \| [01]/1 ", "marks": ["host"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10, help="per cell")
    parser.add_argument("--holds", type=int, nargs="+", default=[0, 1, 5, 20, 100],
                        metavar="MS")
    parser.add_argument("--no-poison", action="store_true", help="skip the poisoned cells")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], choices=[1, 2],
                        help="launches at a time")
    parser.add_argument("--runtime", default="debian", help="host runtime (default debian)")
    parser.add_argument("--out", default=str(ROOT / "runs" / "hold-bench"))
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless the issue's figures hold (module doc)")
    args = parser.parse_args()
    if args.launches < 1:
        parser.error("--launches must be at least 1")
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty: give another --out")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    rows = [cell(out, hold, poison, jobs, args.launches, args.runtime)
            for hold in args.holds for poison in ((False,) if args.no_poison else (False, True))
            for jobs in args.jobs]
    table = render(rows, args, time.monotonic() - t0)
    (out / "table.md").write_text(table)
    (out / "results.json").write_text(json.dumps(
        [{**r, **{k: r[k].to_dict() for k in ("crashed", "uaf", "uaf_of_crashes",
                                               "witnessed", "held") if r[k] is not None}}
         for r in rows], indent=2) + "\n")
    print(table, end="")
    if args.check:
        bad = check(rows)
        for line in bad:
            print(f"check: {line}")
        print("check: " + ("FAILED" if bad else "the issue's figures hold"))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
