"""Benchmark: how long ``coldstart --help`` takes (a fresh interpreter each run: what a user
waits for before any command does its work).

Figures printed: the wall time of ``python -m kit.cli --help`` for each of ``--runs`` runs,
their median and minimum, and (``--importtime``) the ten slowest imports of one run
(``python -X importtime``).

Usage: ``.venv/bin/python benchmarks/bench_help.py [--runs 5] [--importtime]``
Goal (issue #41): a median under 0.5 s. ``--check`` exits 1 when it is missed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the smallest run (tests/test_benchmarks.py)
SMOKE = {"args": ["--runs", "1"], "prints": r"coldstart --help: median \d+\.\d+ s", "marks": []}
GOAL_S = 0.5


def _once() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kit.cli", "--help"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _slowest_imports(count: int = 10) -> list[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "kit.cli", "--help"],
                          cwd=ROOT, check=True, capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return [f"{us / 1e6:.3f} s {name}" for us, name in sorted(rows, reverse=True)[:count]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs (default 5)")
    parser.add_argument("--importtime", action="store_true",
                        help="also print the slowest imports of one run")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when the median is not under {GOAL_S} s")
    args = parser.parse_args(argv)
    times = [_once() for _ in range(max(1, args.runs))]
    median = statistics.median(times)
    print(f"coldstart --help: median {median:.3f} s, min {min(times):.3f} s over "
          f"{len(times)} runs ({', '.join(f'{t:.3f}' for t in times)}); goal < {GOAL_S} s")
    if args.importtime:
        print("slowest imports (cumulative):")
        for row in _slowest_imports():
            print(f"  {row}")
    return 1 if args.check and not median < GOAL_S else 0


if __name__ == "__main__":
    sys.exit(main())
