"""Why a finished baseline's size must be fixed before it runs (docs/verdict.md, "What the
rules guarantee"): the exact false-``fixed`` chance of making ``n1`` baseline launches and,
when they show fewer than ``r`` target events, extending the baseline to ``n2`` (``--resume
--launches n2``), if each size were then judged at the exact level computed for it as a
fixed-size baseline (what the kit did before it refused that: kit.analysis.summary.
size_not_fixed).

For a baseline count ``x`` of a fixed-size baseline of ``n`` launches, ``f_n[x, p_c]`` is the
rule's exact chance of ``fixed`` with a candidate at ``p_c``
(:func:`kit.analysis.finished.fixed_by_count`); the two-stage baseline's chance is

    S(p_b, p_c) = sum over x >= r of P(X1 = x) f_n1[x, p_c]
                + sum over y of P(X1 < r, X1 + X2 = y) f_n2[y, p_c]

with ``X1 ~ Bin(n1, p_b)`` and ``X2 ~ Bin(n2 - n1, p_b)``, maximised over ``p_b <= p_c`` below
the ceiling on a grid of 61 rates each (a wrong ``fixed``). Nothing is simulated.

    nice .venv/bin/python benchmarks/bench_baseline_extension.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kit.analysis.finished import fixed_by_count  # noqa: E402
from kit.analysis.sprt import SprtDesign  # noqa: E402

#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py)
SMOKE = {"args": ["--only", "4"], "prints": r"\| 0\.05, 195 \| first below \| 13 -> 20",
         "marks": ["slow"]}

#: (ceiling, candidate --launches, n1, r, n2, stop at the first "below the ceiling")
SETTINGS = ((0.05, 241, 30, 2, 60, False), (0.05, 241, 48, 2, 60, False),
            (0.05, 241, 40, 3, 60, False), (0.05, 185, 15, 2, 30, False),
            (0.05, 195, 13, 2, 20, True), (0.05, 185, 15, 2, 30, True))
GRID = 61


def stage_weights(n1: int, r: int, n2: int, p_b: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P(X1 = x, x >= r) for x = 0..n1, P(X1 < r, X1 + X2 = y) for y = 0..n2)``."""
    first = stats.binom.pmf(np.arange(n1 + 1), n1, p_b)
    first[:r] = 0.0
    second = np.zeros(n2 + 1)
    more = stats.binom.pmf(np.arange(n2 - n1 + 1), n2 - n1, p_b)
    for x1 in range(r):
        second[x1:x1 + n2 - n1 + 1] += stats.binom.pmf(x1, n1, p_b) * more
    return first, second


def extension_size(ceiling: float, cap: int, n1: int, r: int, n2: int, first: bool,
                   alpha: float = 0.05, beta: float = 0.2) -> tuple[float, float, float, float]:
    """``(largest S, its p_b, its p_c, the larger of the two fixed-size designs' own
    largest false fixed)``."""
    grid = np.linspace(0.0, ceiling, GRID + 1)[1:] * (1 - 1e-12)
    d1 = SprtDesign(ceiling, ceiling / 4, alpha, beta, cap, n1, first)
    d2 = SprtDesign(ceiling, ceiling / 4, alpha, beta, cap, n2, first)
    f1, f2 = fixed_by_count(d1, n1, grid), fixed_by_count(d2, n2, grid)
    worst, at_b, at_c, alone = 0.0, 0.0, 0.0, 0.0
    for p_b in grid:
        w1, w2 = stage_weights(n1, r, n2, p_b)
        size = np.where(grid >= p_b, w1 @ f1 + w2 @ f2, 0.0)
        k = int(size.argmax())
        if size[k] > worst:
            worst, at_b, at_c = float(size[k]), float(p_b), float(grid[k])
        for n, f in ((n1, f1), (n2, f2)):
            own = stats.binom.pmf(np.arange(n + 1), n, p_b) @ f
            alone = max(alone, float(np.where(grid >= p_b, own, 0.0).max()))
    return worst, at_b, at_c, alone


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", type=int, choices=range(len(SETTINGS)), metavar="I",
                        help=f"only setting I (0..{len(SETTINGS) - 1})")
    args = parser.parse_args()
    print("| ceiling, candidate --launches | variant | baseline: n1, extended to n2 when "
          "fewer than r events | largest false fixed | at p_b, p_c | each size alone |")
    print("| --- | --- | --- | --- | --- | --- |")
    chosen = SETTINGS if args.only is None else (SETTINGS[args.only],)
    for ceiling, cap, n1, r, n2, first in chosen:
        worst, p_b, p_c, alone = extension_size(ceiling, cap, n1, r, n2, first)
        print(f"| {ceiling:g}, {cap} | {'first below' if first else 'go on'} | {n1} -> {n2} "
              f"if < {r} | {worst:.4f} | {p_b:.4f}, {p_c:.4f} | {alone:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
