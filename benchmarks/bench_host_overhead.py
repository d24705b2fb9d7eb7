"""Benchmark: the kit's wall time per host launch against a plain shell loop.

Both run the same workload binary on the same runtime, the same number of times, with the
production-shape scenario; the shell loop writes each launch's stdout and stderr to files, as
the kit does. Rounds alternate (loop, kit, loop, kit, ...) and the medians are compared, so
slow drift on a shared machine hits both. Two figures for the kit, from the same runs:

* per launch in the campaign loop: from the first launch's start to the last launch's end
  (from the records' ``started_at`` and ``wall_ms``), divided by N — what every further
  launch costs, and what the goal is about;
* the whole `coldstart run host --launches N` command divided by N: the loop plus one-time
  costs (Python start-up and imports, checking the models' sha256, the end-of-run summary,
  whose Clopper-Pearson intervals import scipy.stats), which shrink as 1/N.

Usage: .venv/bin/python benchmarks/bench_host_overhead.py [--launches 40] [--rounds 3]
Goal (issue #2): ratio <= 1.10.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit.modelset import load_modelset  # noqa: E402
from kit.scenario import parse_scenario  # noqa: E402
from kit.targets.host import HostLauncher, load_runtime  # noqa: E402
from kit.targets.host.witness.build import witness_library  # noqa: E402
from kit.targets.host.witness.race import ENV_FILE  # noqa: E402


def shell_loop(launches: int, work: Path) -> float:
    """The same workload, as often, from bash: with the race witness preloaded and its
    output in a file per launch, as the kit runs it by default."""
    runtime = load_runtime()
    launcher = HostLauncher(runtime, load_modelset())
    argv = launcher.argv(parse_scenario("coldstart://run?mode=concurrent"))
    command = shlex.join(argv).replace("coldstart://run?", "coldstart://run?id=loop-$i&")
    env = dict(os.environ)
    preload = witness_library(runtime)
    if preload:  # on the workload's command only: bash and seq are not watched
        command = f'LD_PRELOAD={shlex.quote(str(preload))} {ENV_FILE}="{work}/witness.$i" {command}'
    script = (f'for i in $(seq 1 {launches}); do {command} > "{work}/out.$i" '
              f'2> "{work}/err.$i"; done')
    t0 = time.perf_counter()
    subprocess.run(["bash", "-c", script], check=True, env=env)
    return time.perf_counter() - t0


def _loop_seconds(records: list[dict]) -> float:
    """First launch start to last launch end, from the records (seconds)."""
    def start(r: dict) -> float:
        return datetime.datetime.fromisoformat(r["started_at"].replace("Z", "+00:00")
                                               ).timestamp()
    last = max(records, key=start)
    return start(last) + last["wall_ms"] / 1000.0 - min(start(r) for r in records)


def kit_run(launches: int, work: Path, round_no: int) -> tuple[float, float]:
    out = work / f"kit-{round_no}"
    cmd = [str(Path(sys.executable).parent / "coldstart"), "run", "host", "--launches",
           str(launches), "--label", "bench", "--out", str(out)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=ROOT)
    elapsed = time.perf_counter() - t0
    records = [json.loads(line) for line in (out / "launches.jsonl").read_text().splitlines()]
    assert len(records) == launches, f"expected {launches} records, got {len(records)}"
    return elapsed, _loop_seconds(records)


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--launches", "1", "--rounds", "1"],
         "prints": r"ratio, per launch +: +\d+\.\d+", "marks": ["host"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    loops, kits, kit_loops = [], [], []
    with tempfile.TemporaryDirectory(prefix="coldstart-bench-") as tmp:
        work = Path(tmp)
        for round_no in range(args.rounds):
            loops.append(shell_loop(args.launches, work))
            whole, loop = kit_run(args.launches, work, round_no)
            kits.append(whole)
            kit_loops.append(loop)
            print(f"round {round_no + 1}: shell loop {loops[-1] / args.launches * 1000:.1f} "
                  f"ms/launch; kit {loop / args.launches * 1000:.1f} ms/launch in its loop, "
                  f"{whole / args.launches * 1000:.1f} ms/launch for the whole command",
                  flush=True)
    loop_ms = statistics.median(loops) / args.launches * 1000
    kit_loop_ms = statistics.median(kit_loops) / args.launches * 1000
    kit_ms = statistics.median(kits) / args.launches * 1000
    ratio = kit_loop_ms / loop_ms
    one_time_s = statistics.median(k - lp for k, lp in zip(kits, kit_loops))
    print(f"median over {args.rounds} rounds of {args.launches} launches "
          f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}):")
    print(f"  plain shell loop               : {loop_ms:7.1f} ms per launch")
    print(f"  coldstart, its campaign loop   : {kit_loop_ms:7.1f} ms per launch")
    print(f"  coldstart, the whole command   : {kit_ms:7.1f} ms per launch "
          f"(one-time costs {one_time_s:.2f} s)")
    print(f"  ratio, per launch              : {ratio:7.3f}  (goal <= 1.10: "
          f"{'met' if ratio <= 1.10 else 'NOT met'})")
    print(f"  ratio, whole command at N={args.launches:<4}: {kit_ms / loop_ms:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
