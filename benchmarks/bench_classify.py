"""Benchmark: crash reports parsed and classified per second.

Each report of ``tests/data/crashes/`` (every format and class, truncated and garbled ones
included) goes through ``parse_text`` (or ``parse_host``) and ``classify``, round after round.
Two figures:

* **warm**: the caches hold the symbols already normalised (what a campaign sees: the same
  few crash signatures again and again);
* **cold**: the normaliser's cache is cleared before every report, so every symbol goes
  through siggen's normaliser again (a worst case: every report new).

Each figure is given per second of wall time and per second of this process's CPU time
(``time.process_time``): on a shared, loaded machine the wall figure falls with the load,
the CPU figure does not.

Usage: ``.venv/bin/python benchmarks/bench_classify.py [--seconds 5]``
Goal (issues #3, #15, #24): at least 2,500 reports per second (warm).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit.crash import classify, default_rules, parse_host, parse_text  # noqa: E402
from kit.crash.signature import normalize_symbol  # noqa: E402

DATA = ROOT / "tests" / "data" / "crashes"


def _reports() -> list[tuple[str, bytes]]:
    return [(str(p.relative_to(DATA)), p.read_bytes()) for p in sorted(DATA.rglob("*"))
            if p.is_file() and p.name not in ("expected.json", "expected-release.json")]


def _one(name: str, data: bytes) -> str:
    record = parse_host(11, data) if name.startswith("host/") else parse_text(data)
    return classify(record).crash_class.value


def run(seconds: float, cold: bool) -> tuple[int, float, float]:
    """Classify reports for about ``seconds``; returns (reports, wall_s, cpu_s)."""
    reports = _reports()
    done = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    while time.perf_counter() - t0 < seconds:
        for name, data in reports:
            if cold:
                normalize_symbol.cache_clear()
            _one(name, data)
            done += 1
    return done, time.perf_counter() - t0, time.process_time() - c0


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--seconds", "0.2"],
         "prints": r"warm: \d+ reports in .* reports/s wall", "marks": []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per measurement")
    args = parser.parse_args()
    default_rules()
    _one(*_reports()[0])  # load siggen and the rules outside the timing
    for label, cold in (("warm", False), ("cold", True)):
        count, elapsed, cpu = run(args.seconds, cold)
        print(f"{label}: {count} reports in {elapsed:.2f} s = {count / elapsed:,.0f} "
              f"reports/s wall, {count / max(cpu, 1e-9):,.0f} reports/s of CPU time "
              f"({len(_reports())} distinct reports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
