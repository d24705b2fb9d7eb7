"""Benchmark: witnessed races and crashes per 1,000 cold launches, per amplifier (issue #8).

Runs one host campaign per configuration (production shape, the serial control and each
amplifier), each without and with glibc heap poisoning, through the real `coldstart run host`
with the race witness on. Configurations are run interleaved in blocks (every configuration
gets its first block, then its second, ...), so drifting load on a shared machine hits all
of them alike; the mean 1-minute load average at the blocks' starts is reported with each
row. Then it prints the table (rates per 1,000 launches with 95% Clopper-Pearson intervals,
arrival skews at XNNPACK init) and runs `coldstart plan` on every campaign that showed the
target, to say how many launches a desktop verification needs.

Usage: .venv/bin/python benchmarks/bench_race.py [--launches 150] [--block 25]
           [--out runs/race-bench] [--resume] [--report-only] [--only NAME ...]
           [--ceiling-factor 0.5]
Writes <out>/<name>[-poison]/ (campaigns), <out>/loads.json, <out>/results.json and
<out>/table.md; --report-only rebuilds the last two from the campaigns already there.
Needs the prepared host runtime (`coldstart runtime prepare`). With the defaults (16
campaigns of 150 launches) about 16 minutes on a busy 2-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kit.campaign import load_campaign  # noqa: E402
from kit.cli import main as coldstart  # noqa: E402
from kit.records import LaunchRecord, Outcome  # noqa: E402
from kit.analysis.stats import Rate, rate  # noqa: E402
from kit.analysis.verdict import RACE_WITNESSED  # noqa: E402

#: (name, scenario, what it changes). Defaults are the production shape (docs/design.md).
CONFIGS: tuple[tuple[str, str, str], ...] = (
    ("production", "", "concurrent x3, models from file paths (the default scenario)"),
    ("serial", "mode=serial", "control: the three creates one after another"),
    ("bytes", "load=bytes", "create from memory bytes instead of a path"),
    ("warmup", "warmup=cpu", "a CPU-only session first (one-time global init done)"),
    ("sessions8", "sessions=8", "eight concurrent creates"),
    ("verbose", "log=verbose", "ORT environment logging at VERBOSE"),
    ("pair", "models=hey_jarvis_v0.1&sessions=2&infer=0",
     "two creates of the same small model"),
    ("pair-verbose", "models=hey_jarvis_v0.1&sessions=2&infer=0&log=verbose",
     "two creates of the same small model, logging at VERBOSE"),
)
UAF = "xnnpack-allocator-uaf"


def _label(name: str, poison: bool) -> str:
    return f"{name}-poison" if poison else name


def run_block(out: Path, name: str, scenario: str, poison: bool, launches: int,
              log: io.TextIOBase) -> None:
    label = _label(name, poison)
    argv = ["run", "host", "--out", str(out / label), "--launches", str(launches)]
    if (out / label / "campaign.json").exists():
        argv.append("--resume")  # the campaign keeps its own scenario, poisoning and witness
    else:
        argv += ["--label", label, "--witness"]
        if scenario:
            argv += ["--scenario", scenario]
        if poison:
            argv.append("--poison")
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        code = coldstart(argv)
    if code != 0:
        raise SystemExit(f"coldstart {' '.join(argv)} exited {code} (see {log.name})")


def _per_1000(r: Rate) -> str:
    value = 0.0 if r.value is None else r.value
    return f"{r.count}/{r.n} = {value * 1000:.1f} [{r.low * 1000:.1f}, {r.high * 1000:.1f}]"


def summarize(records: list[LaunchRecord]) -> dict[str, Any]:
    counted = [r for r in records if r.counted]
    watched = [r for r in counted if r.race is not None and r.race.available]
    skews = [r.race.skew_us for r in watched if r.race.skew_us is not None]
    hit_skews = [r.race.skew_us for r in watched
                 if r.race.witnessed and r.race.skew_us is not None]
    example = next((r for r in watched if r.race.witnessed), None)
    return {
        "launches": len(counted),
        "witnessed": rate(sum(1 for r in watched if r.race.witnessed), len(watched)),
        "crashed": rate(sum(1 for r in counted if r.outcome is Outcome.CRASHED), len(counted)),
        "uaf": rate(sum(1 for r in counted if r.crash_class == UAF), len(counted)),
        "skew_p10_us": statistics.quantiles(skews, n=10, method="inclusive")[0]
        if len(skews) >= 2 else None,
        "skew_median_us": statistics.median(skews) if skews else None,
        "witnessed_skews_us": hit_skews,
        "witnessed_crashed": sum(1 for r in watched if r.race.witnessed
                                 and r.outcome is Outcome.CRASHED),
        "example": None if example is None else {"launch_id": example.launch_id,
                                                 "outcome": example.outcome.value,
                                                 "race": example.race.to_dict()},
    }


def plan_for(campaign_dir: Path, signature: str, p_hat: float, factor: float
             ) -> dict[str, Any] | None:
    """`coldstart plan --baseline DIR --event S --ceiling p_hat*factor --json`."""
    ceiling = round(p_hat * factor, 4)
    if not 0 < ceiling < 1:
        return None
    buf = io.StringIO()
    argv = ["plan", "--baseline", str(campaign_dir), "--event", signature, "--ceiling",
            str(ceiling), "--json"]
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = coldstart(argv)
    if code != 0:
        return {"command": "coldstart " + " ".join(argv), "error": f"exit {code}"}
    plan = json.loads(buf.getvalue())
    fixed = plan["fixed_design"]
    return {"command": "coldstart " + " ".join(argv), "ceiling": ceiling,
            "baseline_launches": fixed["baseline_launches"],
            "candidate_launches": fixed["candidate_launches"],
            "clean_bound_launches": fixed["clean_bound_launches"],
            "baseline_launches_to_see_target": plan["baseline_launches_to_see_target"]}


def _fmt_us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def render(rows: list[dict[str, Any]], args: argparse.Namespace, elapsed_s: float) -> str:
    out = [f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores with "
           f"`python benchmarks/bench_race.py --launches {args.launches}` "
           f"({elapsed_s / 60:.0f} min). Rates per 1,000 cold launches with 95% "
           "Clopper-Pearson intervals; skew = arrival skew between the first two "
           "xnn_initialize calls (microseconds).", "",
           "| configuration | scenario keys | poison | witnessed races /1000 | crashes /1000 "
           "| allocator-UAF crashes /1000 | crashes with a witnessed race | skew p10 "
           "| skew median | load avg |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        s = row["summary"]
        out.append(f"| {row['name']} | `{row['scenario'] or '(default)'}` | "
                   f"{'glibc' if row['poison'] else 'off'} | {_per_1000(s['witnessed'])} | "
                   f"{_per_1000(s['crashed'])} | {_per_1000(s['uaf'])} | "
                   f"{s['witnessed_crashed']}/{s['crashed'].count} | "
                   f"{_fmt_us(s['skew_p10_us'])} | {_fmt_us(s['skew_median_us'])} | "
                   f"{'-' if row['load_avg'] is None else format(row['load_avg'], '.1f')} |")
    plans = [(row, key, row["plans"][key]) for row in rows for key in ("race", "crash")
             if row["plans"].get(key)]
    if plans:
        out += ["", "Launches a desktop verification needs (`coldstart plan`, fixed-size "
                    "design, power 80%, alpha 0.05, ceiling = half the measured rate):", "",
                "| configuration | poison | target | measured rate | ceiling | baseline "
                "launches | candidate launches |", "| --- | --- | --- | --- | --- | --- | --- |"]
        for row, key, plan in plans:
            target = RACE_WITNESSED if key == "race" else "any-crash"
            measured = row["summary"]["witnessed" if key == "race" else "crashed"]
            if "error" in plan:
                out.append(f"| {row['name']} | {'glibc' if row['poison'] else 'off'} | "
                           f"{target} | {measured.count}/{measured.n} | - | {plan['error']} | - |")
                continue
            out.append(f"| {row['name']} | {'glibc' if row['poison'] else 'off'} | {target} "
                       f"| {measured.count}/{measured.n} | {plan['ceiling']:g} | "
                       f"{plan['baseline_launches']} | {plan['candidate_launches']} |")
    return "\n".join(out) + "\n"


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--launches", "1", "--block", "1", "--only", "pair", "--no-poison", "--out",
                   "{tmp}"],
         "prints": r"\| pair \| .* \| off \| [01]/1 = ", "marks": ["host"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=150, help="per campaign")
    parser.add_argument("--block", type=int, default=25, help="launches per block")
    parser.add_argument("--out", default=str(ROOT / "runs" / "race-bench"))
    parser.add_argument("--resume", action="store_true", help="continue an earlier run")
    parser.add_argument("--report-only", action="store_true",
                        help="launch nothing: rebuild the table from the campaigns in --out")
    parser.add_argument("--only", nargs="*", default=None, metavar="NAME",
                        help=f"configurations to run (of {', '.join(c[0] for c in CONFIGS)})")
    parser.add_argument("--no-poison", action="store_true", help="skip the poisoned runs")
    parser.add_argument("--ceiling-factor", type=float, default=0.5,
                        help="plan ceiling as a fraction of the measured rate")
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not (args.resume or args.report_only):
        raise SystemExit(f"{out} is not empty: pass --resume to continue it, or --out")
    out.mkdir(parents=True, exist_ok=True)
    configs = [c for c in CONFIGS if args.only is None or c[0] in args.only]
    runs = [(name, scen, desc, poison) for name, scen, desc in configs
            for poison in ((False,) if args.no_poison else (False, True))]
    loads_path = out / "loads.json"
    saved = json.loads(loads_path.read_text()) if loads_path.exists() else {}
    loads: dict[str, list[float]] = {_label(r[0], r[3]): saved.get(_label(r[0], r[3]), [])
                                     for r in runs}
    previous = (json.loads((out / "results.json").read_text())
                if (out / "results.json").exists() else {"rows": [], "elapsed_s": 0.0})
    for row in previous["rows"]:  # runs from before loads.json existed
        label = _label(row["name"], row["poison"])
        if not loads.get(label, [0]) and row.get("load_avg") is not None:
            loads[label] = [row["load_avg"]]
    started = time.monotonic()
    with open(out / "bench.log", "a") as log:
        for upto in range(args.block, args.launches + args.block, args.block):
            if args.report_only:
                break
            upto = min(upto, args.launches)
            for name, scen, _desc, poison in runs:
                loads[_label(name, poison)].append(os.getloadavg()[0])
                run_block(out, name, scen, poison, upto, log)
                loads_path.write_text(json.dumps(loads, indent=1) + "\n")
            print(f"{upto}/{args.launches} launches per campaign "
                  f"({(time.monotonic() - started) / 60:.1f} min)", flush=True)
    rows = []
    for name, scen, desc, poison in runs:
        label = _label(name, poison)
        summary = summarize(load_campaign(out / label).records)
        plans: dict[str, Any] = {}
        for key, signature, measured in (("race", RACE_WITNESSED, summary["witnessed"]),
                                         ("crash", "any-crash", summary["crashed"])):
            if name != "serial" and 0 < measured.count < measured.n:
                plans[key] = plan_for(out / label, signature, measured.count / measured.n,
                                      args.ceiling_factor)
        rows.append({"name": name, "scenario": scen, "description": desc, "poison": poison,
                     "campaign": str(out / label), "summary": summary, "plans": plans,
                     "load_avg": statistics.mean(loads[label]) if loads[label] else None})
    elapsed = time.monotonic() - started
    if args.report_only:
        elapsed = float(previous.get("elapsed_s") or 0.0)
    table = render(rows, args, elapsed)
    (out / "table.md").write_text(table)

    def encode(obj: Any) -> Any:
        return obj.to_dict() if isinstance(obj, Rate) else str(obj)

    (out / "results.json").write_text(json.dumps({"launches": args.launches, "rows": rows,
                                                  "elapsed_s": elapsed}, indent=2,
                                                 default=encode) + "\n")
    print(table)
    best = max((r for r in rows if r["name"] != "serial"),
               key=lambda r: r["summary"]["witnessed"].count, default=None)
    if best is not None and best["summary"]["example"]:
        print("example witnessed launch:", json.dumps(best["summary"]["example"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
