"""Benchmark: peak memory and time of ``coldstart repair`` on a campaign of 10^6 launch
records with a few damaged lines (issue #46, family 4: it held every kept line, 1.34 GB for
10^6 records; goal: at most 300 MB, the kept lines streamed to the new file).

It writes the campaign with the records of :mod:`benchmarks.bench_compare_memory` (a 30%
crash rate: crash stacks on about a third of the lines), one line in 100,000 cut short and
one launch id repeated, then runs ``coldstart repair DIR`` as a child process and prints
the file's size, the peak resident set size (``os.wait4``'s ``ru_maxrss``), the time, and
the records kept and lines dropped.

Run: ``.venv/bin/python benchmarks/bench_repair_memory.py [--launches 1000000] [--keep DIR]``
(about five minutes on 2 busy cores, most of it writing the campaign).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_compare_memory import _record, measure  # noqa: E402

from kit.store.meta import CampaignMeta, write_meta  # noqa: E402

GOAL_MB = 300

#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py)
SMOKE = {"args": ["--launches", "300", "--keep", "{tmp}/campaign"],
         "prints": r"coldstart repair: exit 0, peak RSS \d+ MB, \d+ s; kept 298 records, "
                   r"dropped 3 lines", "marks": []}


def make_damaged(path: Path, launches: int) -> int:
    """Write a campaign of ``launches`` records, one line in 100,000 cut short (at least
    one) and the first record repeated at the end; returns the size of launches.jsonl."""
    rng = random.Random(7)
    write_meta(path, CampaignMeta(label="baseline", target="host",
                                  scenario="coldstart://run?mode=concurrent", launches=launches,
                                  build={"ort_library_sha256": "ab" * 32}))
    cut_every = max(1, min(100_000, launches // 2))
    first = ""
    with open(path / "launches.jsonl", "w", encoding="utf-8") as fh:
        for i in range(launches):
            line = json.dumps(_record("baseline", i, rng, 0.3).to_dict(),
                              separators=(",", ":"))
            first = first or line
            fh.write((line[:40] if i % cut_every == cut_every - 1 else line) + "\n")
        fh.write(first + "\n")
    return (path / "launches.jsonl").stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=1_000_000)
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="write the campaign here and keep it (default: a temp dir)")
    args = parser.parse_args(argv)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="coldstart-rep-"))
    try:
        root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        size = make_damaged(root, args.launches)
        print(f"a campaign of {args.launches:,} launches: launches.jsonl {size / 2**20:.0f} MB "
              f"(written in {time.monotonic() - started:.0f} s)", flush=True)
        rc, peak, seconds = measure([sys.executable, "-m", "kit.cli", "repair", str(root)])
        with open(root / "launches.jsonl", "rb") as fh:
            kept = sum(1 for _ in fh)
        dropped = args.launches + 1 - kept
        print(f"coldstart repair: exit {rc}, peak RSS {peak:.0f} MB, {seconds:.0f} s; kept "
              f"{kept} records, dropped {dropped} lines", flush=True)
        print(f"goal (at most {GOAL_MB} MB): {'met' if rc == 0 and peak <= GOAL_MB else 'NOT met'}")
        return 1 if rc else 0
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
