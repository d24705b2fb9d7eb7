"""Benchmark: wall time of ``coldstart plan`` at weak baselines (issue #46, family 5: at a 2%
baseline and a 5% ceiling it printed nothing for 900 s, 4% took 103 s; goal: an answer
within minutes, with progress on stderr: the rule search is bounded at
``PLAN_BUDGET_S``, then gives the best rule found so far).

It runs ``coldstart plan --baseline-rate R --ceiling C`` as a child process for each
setting and prints its wall time, its exit code, the progress lines it wrote on stderr
and whether it said the search reached its bound.

Run: ``.venv/bin/python benchmarks/bench_plan_time.py [--setting 0.02/0.05 ...]`` (up to a
few minutes per setting on 2 busy cores).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py)
SMOKE = {"args": ["--setting", "0.9/0.3"],
         "prints": r"plan 0\.9/0\.3: exit 0, \d+ s, \d+ progress lines, bound (reached|not reached)",
         "marks": ["slow"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", action="append", metavar="RATE/CEILING",
                        help="baseline rate / ceiling (default: 0.04/0.05 and 0.02/0.05)")
    args = parser.parse_args(argv)
    failed = 0
    for setting in args.setting or ["0.04/0.05", "0.02/0.05"]:
        rate, ceiling = setting.split("/")
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "kit.cli", "plan", "--baseline-rate",
                               rate, "--ceiling", ceiling], capture_output=True, text=True)
        seconds = time.monotonic() - started
        lines = proc.stderr.splitlines()
        progress = sum(1 for line in lines if line.startswith("plan: rule "))
        bound = any("reached its bound" in line for line in lines)
        print(f"plan {setting}: exit {proc.returncode}, {seconds:.0f} s, {progress} progress "
              f"lines, bound {'reached' if bound else 'not reached'}", flush=True)
        failed |= proc.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
