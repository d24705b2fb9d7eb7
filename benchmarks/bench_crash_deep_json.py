"""Benchmark: ``parse_text`` + ``classify`` on ``.ips`` texts nested far deeper than a real
report (real ones nest under 20 levels), which once took quadratic time (59 s at 100k
brackets: the truncated-JSON repair joined its open-bracket stack at every closer).

Figures printed: seconds per text for deep arrays in a body, the same cut short, deep
objects, and a header-less body, at each ``--depth``; and the ratio of the largest depth's
time to the smallest's over the depth ratio (about 1 or less when linear).

Usage: ``.venv/bin/python benchmarks/bench_crash_deep_json.py [--depth 10000 100000]
[--check]``. Goal: each text under 2 s at depth 100k; ``--check`` exits 1 when missed.
"""

from __future__ import annotations

import argparse
import sys
import time

from kit.crash import parse_text
from kit.crash.classify import classify

HEADER = '{"bug_type":"309"}\n'
FRAMES = '{"exception":{"type":"EXC_BAD_ACCESS"},"threads":[{"triggered":true,"frames":'


def texts(n: int) -> dict[str, str]:
    """The four shapes at nesting depth ``n``."""
    return {"arrays": HEADER + FRAMES + "[" * n + "]" * n + "}]}\n",
            "cut": HEADER + FRAMES + "[" * n,
            "objects": HEADER + '{"a":' * n + "1" + "}" * n + "\n",
            "no-header": '{"a":' * n + "1" + "}" * n}


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--depth", "10", "100"],
         "prints": r"depth +100 +arrays +\d+\.\d+ s", "marks": []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    worst: dict[int, float] = {}
    for n in sorted(args.depth):
        for name, text in texts(n).items():
            start = time.perf_counter()
            outcome = classify(parse_text(text)).crash_class.value
            took = time.perf_counter() - start
            worst[n] = max(worst.get(n, 0.0), took)
            print(f"depth {n:>7}  {name:<10} {took:8.3f} s  {outcome}")
    lo, hi = min(worst), max(worst)
    if hi > lo:
        print(f"growth: {(worst[hi] / max(worst[lo], 1e-9)) / (hi / lo):.2f} of linear")
    if args.check and max(worst.values()) > 2.0:
        print("goal missed: a text took over 2 s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
