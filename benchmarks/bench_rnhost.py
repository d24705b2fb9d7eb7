"""Benchmark: a cold launch of the app on the host (`coldstart run rn-host`) against one of the
C++ workload (`coldstart run host`), on the same runtime and scenario.

Rounds alternate (host, rn-host, host, rn-host, ...) so slow drift on a shared machine hits
both; the figures are medians over every launch of every round:

* per launch: the record's ``wall_ms`` (process start to exit, as the kit measures it);
* to ``done``: the launch's own ``t_ms`` of ``done`` (the workload counts from its process
  start, the app from its JS bundle's first module, docs/rn-host.md);
* sessions created: ``t_ms`` of ``sessions-created``;
* the ratio rn-host / host of the per-launch medians.

With ``--detector tsan --runtime baseline`` (a kit build with its ThreadSanitizer variant)
both targets run under ThreadSanitizer: the app's program and the workload compiled with
``-fsanitize=thread`` (docs/rn-host.md, "ThreadSanitizer"), two launches at a time.

Usage: .venv/bin/python benchmarks/bench_rnhost.py [--launches 20] [--rounds 2]
[--runtime debian] [--scenario Q] [--detector tsan]
Needs the prepared runtime and `coldstart rn-host build` (scripts/setup.sh). No goal: the
figure is reported (docs/rn-host.md keeps the last measured one).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments,
#: a regex its output matches, the suite's markers
SMOKE = {"args": ["--launches", "1", "--rounds", "1"],
         "prints": r"ratio rn-host / host, per launch: +\d+\.\d+", "marks": ["host"]}


def _campaign(target: str, out: Path, args: argparse.Namespace) -> list[dict]:
    cmd = [sys.executable, "-m", "kit.cli", "run", target, "--runtime", args.runtime,
           "--launches", str(args.launches), "--out", str(out), "--scenario", args.scenario]
    if args.detector:
        cmd += ["--detector", args.detector]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench_rnhost: `{' '.join(cmd[3:])}` failed: "
                         f"{proc.stderr.strip().splitlines()[-1:]}")
    return [json.loads(line) for line in (out / "launches.jsonl").read_text().splitlines()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runtime", default="debian")
    parser.add_argument("--scenario", default="mode=concurrent")
    parser.add_argument("--detector", choices=["tsan"], default=None,
                        help="run both targets under ThreadSanitizer (a kit build's variant)")
    args = parser.parse_args()
    records: dict[str, list[dict]] = {"host": [], "rn-host": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_no in range(args.rounds):
            for target in records:
                records[target] += _campaign(target, Path(scratch) / f"{target}-{round_no}",
                                             args)
    lines = [f"{args.launches} launches x {args.rounds} rounds per target, runtime "
             f"{args.runtime}, scenario {args.scenario}"
             + (f", under {args.detector}" if args.detector else "")]
    medians = {}
    for target, rows in records.items():
        done = [r for r in rows if r["outcome"] == "completed"]
        medians[target] = statistics.median(r["wall_ms"] for r in rows)
        phase = {p: statistics.median(r["phases"][p] for r in done) if done else float("nan")
                 for p in ("done", "sessions-created")}
        lines.append(f"{target:8s} per launch {medians[target]:7.1f} ms  to done "
                     f"{phase['done']:7.1f} ms  sessions created {phase['sessions-created']:7.1f}"
                     f" ms  completed {len(done)}/{len(rows)}")
    lines.append(f"ratio rn-host / host, per launch: {medians['rn-host'] / medians['host']:.2f}")
    print("\n".join(lines))
    return 0

if __name__ == "__main__":
    sys.exit(main())
