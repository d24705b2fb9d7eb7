"""Benchmark: the crash parsers' fuzz run at 10,000 inputs per parser.

Runs ``tests/test_crash_fuzz.py`` (hypothesis, ``deadline=None``; every fixture family,
the public pastes and the written-here ones, mutated, and `explain` too) with
``COLDSTART_FUZZ_EXAMPLES`` set (default 10,000) and prints the wall time per parser and in
all. The default test run uses 150 inputs per parser to keep CI fast; this is the long run.

Usage: ``.venv/bin/python benchmarks/bench_fuzz_crash.py [--examples 10000]``
Goal (issue #3): every parser takes 10,000 inputs without raising (about 10 to 20 minutes
on 2 idle cores).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--examples", "2"],
         "prints": r"\d+ passed", "marks": ["slow"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10000, help="inputs per parser")
    args = parser.parse_args()
    env = {**os.environ, "COLDSTART_FUZZ_EXAMPLES": str(args.examples)}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--durations=0",
            "--durations-min=0", str(ROOT / "tests" / "test_crash_fuzz.py")]
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    elapsed = time.perf_counter() - t0
    for line in done.stdout.splitlines():
        m = re.match(r"^\s*([\d.]+)s call\s+\S+::(\S+)$", line)
        if m is not None:
            print(f"{m.group(2):<55} {float(m.group(1)):8.1f} s  "
                  f"({args.examples} inputs)")
    summary = [ln for ln in done.stdout.splitlines() if " passed" in ln or " failed" in ln]
    print(summary[-1] if summary else done.stdout[-2000:])
    print(f"total wall time: {elapsed:.0f} s")
    if done.returncode != 0:
        print(done.stdout[-5000:], file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
