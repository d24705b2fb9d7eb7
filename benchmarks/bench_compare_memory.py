"""Benchmark: peak memory of ``coldstart compare`` and ``coldstart report`` on two campaigns
of 100,000 launches each (issue #13: compare took about 5 bytes of RAM per byte of JSONL,
2.1 GB for 2 x 100k launches; goal: at most 200 MB).

It writes two campaigns into a temporary directory with the kit's own record type
(``LaunchRecord.to_dict``, one JSON line each, as ``coldstart run`` appends them): a baseline
whose launches crash 30% of the time with ``xnnpack-allocator-uaf`` across 1,300 distinct
signatures with eight-frame stacks, race-witness data and create timings on every launch,
and a candidate with rare crashes; 0.5% of the launches are infra errors. Then it runs
``coldstart compare BASELINE CANDIDATE --out DIR`` and ``coldstart report BASELINE
CANDIDATE --out DIR --quiet`` as child processes, each measured on its own (the peak
resident set size ``os.wait4`` reports for it, ``ru_maxrss``), and prints the file sizes, the
peak RSS and the time of each.

Run: ``.venv/bin/python benchmarks/bench_compare_memory.py [--launches 100000] [--keep DIR]``
(about two minutes per command on 2 busy cores).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kit.store.meta import CampaignMeta, write_meta
from kit.records import LaunchRecord, Outcome, SessionTiming

GOAL_MB = 200


def _record(label: str, i: int, rng: random.Random, crash_rate: float) -> LaunchRecord:
    launch_id = f"{label}-{i:05d}"
    start = f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
    sessions = [SessionTiming(k, f"m{k}", 10.0 + k * rng.random(), 30.0 + rng.random())
                for k in range(3)]
    race = {"available": True, "witnessed": rng.random() < 0.4, "contexts": ["0x1", "0x2"],
            "skew_us": rng.random() * 50, "calls": []}
    common = dict(launch_id=launch_id, index=i, attempt=1, label=label, target="host",
                  device="host:bench", scenario=f"coldstart://run?id={launch_id}&mode=concurrent",
                  started_at=start, wall_ms=900.0 + rng.random() * 100, sessions=sessions,
                  phases={"start": 1.0, "models-ready": 5.0, "sessions-created": 40.0},
                  ort_version="1.21.0", eps=["xnnpack", "cpu"], race=race,
                  xnnpack_nodes={"XnnpackExecutionProvider": 12, "CPUExecutionProvider": 3})
    roll = rng.random()
    if roll < 0.005:
        return LaunchRecord(**common, outcome=Outcome.INFRA_ERROR, error="device offline")
    if roll < 0.005 + crash_rate:
        n = rng.randrange(1300)
        frames = [{"index": k, "symbol": f"xnn_frame_{n}_{k}", "offset": 16 * k,
                   "module": "libonnxruntime.so.1.21"} for k in range(8)]
        return LaunchRecord(**common, outcome=Outcome.CRASHED, last_phase="sessions-created",
                            signal=11, signal_name="SIGSEGV",
                            crash={"platform": "linux", "source": "host signal",
                                   "signal": 11, "signal_name": "SIGSEGV", "frames": frames},
                            crash_class="xnnpack-allocator-uaf",
                            signature=f"xnn_frame_{n}_0 | xnn_frame_{n}_1 | xnn_frame_{n}_2",
                            artifacts=[f"artifacts/{launch_id}/crash.txt"])
    return LaunchRecord(**common, outcome=Outcome.COMPLETED, last_phase="done",
                        scores=[0.91, 0.02, 0.01], max_score_diff=1e-7)


def make_campaign(path: Path, label: str, launches: int, crash_rate: float, seed: int) -> int:
    """Write a campaign of ``launches`` records; returns the size of launches.jsonl."""
    rng = random.Random(seed)
    write_meta(path, CampaignMeta(label=label, target="host",
                                  scenario="coldstart://run?mode=concurrent", launches=launches,
                                  build={"ort_library_sha256": f"{seed:064x}"}))
    with open(path / "launches.jsonl", "w", encoding="utf-8") as fh:
        for i in range(launches):
            fh.write(json.dumps(_record(label, i, rng, crash_rate).to_dict(),
                                separators=(",", ":")) + "\n")
    return (path / "launches.jsonl").stat().st_size


def measure(argv: list[str]) -> tuple[int, float, float]:
    """``(exit code, peak RSS in MB, seconds)`` of one child process."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        print(err[-2000:], file=sys.stderr)
    return proc.returncode, usage.ru_maxrss / 1024, time.monotonic() - started


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--launches", "50", "--keep", "{tmp}/campaigns"],
         "prints": r"(?s)coldstart compare: exit 0, peak RSS \d+ MB.*coldstart report: exit 0",
         "marks": ["slow"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=100_000)
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="write the campaigns here and keep them (default: a temp dir)")
    args = parser.parse_args(argv)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="coldstart-mem-"))
    try:
        sizes = {}
        started = time.monotonic()
        for label, rate, seed in (("baseline", 0.3, 1), ("candidate", 0.001, 2)):
            sizes[label] = make_campaign(root / label, label, args.launches, rate, seed)
        print(f"2 campaigns of {args.launches:,} launches: launches.jsonl "
              f"{sizes['baseline'] / 2**20:.0f} MB + {sizes['candidate'] / 2**20:.0f} MB "
              f"(written in {time.monotonic() - started:.0f} s)", flush=True)
        cli = [sys.executable, "-m", "kit.cli"]
        base, cand = str(root / "baseline"), str(root / "candidate")
        results = []
        for name, command in (
                ("compare", [*cli, "compare", base, cand, "--out", str(root / "cmp")]),
                ("report", [*cli, "report", base, cand, "--out", str(root / "rep"),
                            "--quiet"])):
            rc, peak, seconds = measure(command)
            results.append((name, rc, peak))
            print(f"coldstart {name}: exit {rc}, peak RSS {peak:.0f} MB, {seconds:.0f} s",
                  flush=True)
        ok = all(rc == 0 and peak <= GOAL_MB for _, rc, peak in results)
        print(f"goal (at most {GOAL_MB} MB for 2 x 100k launches): "
              f"{'met' if ok else 'NOT met'}")
        return 1 if any(rc != 0 for _, rc, _ in results) else 0  # a failed run measured nothing
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
