"""Benchmark: error rates, power and launches of the sequential rule (``--until-verdict``
against a finished baseline) next to the fixed-size design, over baseline rates above, at
and below the ceiling. Everything in the table is exact (dynamic programming over the
binomial outcomes), not simulated.

For each setting (baseline rate ``p_b``, ceiling ``c``, alpha 0.05, power 0.8, design rate
``c / 4``) it:

1. asks ``coldstart plan`` (:func:`kit.analysis.plan.plan_sequential`) for the reference
   fixed-size design (at the design rate where ``p_b >= 2c``, else the clean-candidate
   design ``plan`` prints by default) and for the rule: the finished baseline's launches,
   the candidate's ``--launches`` and ``beta``;
2. computes the rule's exact figures (:func:`kit.analysis.finished.operating_finished`, the
   first-passage program that tests/test_sequential_exact.py checks against the rule itself,
   :class:`kit.analysis.sequential.StopRule` and ``compare``'s conditions, to 1e-9;
   ``--by-the-rule`` recomputes the design-rate cell by asking the rule at every state):
   P(fixed), mean and 95th-percentile launches (baseline plus candidate);
3. prints them at the design rate (power), for a clean candidate, at the ceiling (false
   ``fixed`` with this baseline, and the candidate side's alone, which bounds it for every
   baseline), at the baseline's rate when it is under the ceiling, and the largest
   false-``fixed`` chance over every common rate under the ceiling
   (:func:`kit.analysis.finished.max_size`), with two lower bounds on the mean launches
   (:mod:`kit.analysis.wald`): the least *any* rule against a finished baseline needs at
   the reference's power and false ``fixed`` <= 0.95 alpha (Wald's bound on the candidate,
   Neyman-Pearson's on the baseline, minimised over the baseline's size; a bound for
   baselines of one fixed size, which a staged one may go under), and the least any rule
   needs with this rule's own baseline (a staged one at its mean) and exact error rates.

Where ``plan`` stages the baseline (``--stage N1:R``, :mod:`kit.analysis.stage`) the row
says so; its launches count the staged baseline at its mean and its 95th percentile and
maximum at its most.

Run: ``nice .venv/bin/python benchmarks/bench_sequential.py [--only I | --setting P_B:C ...]
[--interleaved-runs R]``
(about 11 minutes of CPU, 16 on 2 busy cores, most of it ``plan``, whose CPU seconds and
chosen variant each row prints; ``--interleaved-runs`` adds a small simulation of the
interleaved mode, which still compares by the anytime-valid e-value).
Goals (issue #27): mean launches at the design rate <= 70% of the reference's with at least
its power; a clean candidate never more launches than the reference; at most 1.3 times its
launches; exact false ``fixed`` at the ceiling <= 0.95 alpha.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import numpy as np
from scipy import stats

from kit.analysis.finished import max_size, operating_finished, staged_baseline_mean
from kit.analysis.plan import plan_sequential
from kit.analysis.sequential import (InterleavedRule, SprtDesign, StopRule, interleave,
                                     sequential_fixed)
from kit.analysis.sprt import ALPHA_MARGIN
from kit.analysis.verdict import VerdictSettings
from kit.analysis.wald import (least_launches_any_baseline, least_mean_launches,
                              least_total_launches)

#: issue #27's goal: mean launches at the design rate at most this share of the reference's
GOAL = 0.7
#: marks a row whose bound for any rule is above that goal: no rule can reach it there
UNREACHABLE = ", over 70%: no rule reaches the goal"

#: (baseline rate, ceiling): above, at and below the ceiling
SETTINGS = [(0.9, 0.3), (0.5, 0.05), (0.3, 0.05), (0.1, 0.05), (0.1, 0.02), (0.05, 0.01),
            (0.05, 0.05), (0.03, 0.05)]


@dataclasses.dataclass
class SimSide:
    """A build simulated as Bernoulli launches at ``rate`` (the :class:`Side` protocol)."""

    rate: float
    launches: int
    rng: np.random.Generator
    n: int = 0
    events: int = 0

    @property
    def slots(self) -> int:
        return self.n

    def counts(self, signature: str) -> tuple[int, int]:
        return self.events, self.n

    def step(self) -> None:
        self.n += 1
        self.events += int(self.rng.random() < self.rate)


@dataclasses.dataclass
class Exact:
    """A rule's exact figures at one (baseline rate, candidate rate)."""

    p_fixed: float
    mean: float  # baseline plus candidate launches
    p95: int


def finished_exact(design: SprtDesign, settings: VerdictSettings, p_b: float, n_b: int,
                   p_c: float) -> Exact:
    """The rule's exact figures for a finished baseline of ``n_b`` launches at ``p_b`` and
    a candidate at ``p_c``: for every baseline count (chance >= 1e-13) a dynamic program
    over the candidate's (launches, events), each state asking
    :meth:`StopRule.decision_counts` whether the run stops and
    :func:`sequential_fixed` whether it ends ``fixed``. A baseline the rule refuses (no
    event, or ``fixed`` out of reach) costs its launches and ends inconclusive."""
    cap = design.max_launches
    fixed = 0.0
    stops: dict[int, float] = {}
    for x_b in range(n_b + 1):
        w_b = float(stats.binom.pmf(x_b, n_b, p_b))
        if w_b < 1e-13:
            continue
        rule = StopRule(design, settings, x_b, n_b) if x_b else None
        if rule is None or rule.out_of_reach(0):
            stops[0] = stops.get(0, 0.0) + w_b
            continue
        alive = {0: 1.0}
        for n in range(cap + 1):
            moved: dict[int, float] = {}
            for x, w in alive.items():
                if n == cap or (n > 0 and rule.decision_counts(x, n)[0]):
                    fixed += w_b * w * sequential_fixed(x_b, n_b, x, n, settings, design)
                    stops[n] = stops.get(n, 0.0) + w_b * w
                    continue
                moved[x] = moved.get(x, 0.0) + w * (1.0 - p_c)
                if p_c > 0:
                    moved[x + 1] = moved.get(x + 1, 0.0) + w * p_c
            alive = moved
            if not alive:
                break
    ns = np.array(sorted(stops))
    mass = np.array([stops[n] for n in ns])
    mean = n_b + float((ns * mass).sum() / mass.sum())
    p95 = n_b + int(ns[np.searchsorted(np.cumsum(mass) / mass.sum(), 0.95)])
    return Exact(fixed, mean, p95)


def interleaved_sim(rule: InterleavedRule, p_b: float, p_c: float, cap: int, runs: int,
                    rng: np.random.Generator) -> tuple[float, float]:
    """``(P(fixed), mean launches of both builds)`` of the interleaved mode, simulated."""
    fixed = launches = 0
    for _ in range(runs):
        base, cand = SimSide(p_b, cap, rng), SimSide(p_c, cap, rng)
        interleave(base, cand, rule)
        launches += base.n + cand.n
        fixed += sequential_fixed(base.events, base.n, cand.events, cand.n, rule.settings,
                                  rule.design)
    return fixed / runs, launches / runs


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--setting", "0.9:0.1"],
         "prints": r"summary \(exact[\s\S]*over 70%: no rule reaches the goal", "marks": ["slow"]}


def exact(design: SprtDesign, p_b: float, n_b: int, p_c: float) -> Exact:
    """The rule's exact figures (:func:`operating_finished`), launches with the baseline's
    (a staged baseline's mean, :func:`staged_baseline_mean`, and its most for the 95th
    percentile)."""
    point = operating_finished(design, n_b, p_b, p_c)
    base = (float(n_b) if design.baseline_stage is None
            else staged_baseline_mean(design.baseline_stage, p_b))
    return Exact(point.p_fixed, base + point.expected_launches, n_b + point.quantile(0.95))


def setting(text: str) -> tuple[float, float]:
    """``"P_B:C"`` -> (baseline rate, ceiling), both in (0, 1); argparse's type for
    ``--setting``."""
    try:
        p_b, ceiling = (float(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give baseline:ceiling, e.g. 0.2:0.05")
    if not (0 < p_b < 1 and 0 < ceiling < 1):
        raise argparse.ArgumentTypeError(f"{text!r}: both rates must lie in (0, 1)")
    return p_b, ceiling


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--power", type=float, default=0.8)
    parser.add_argument("--only", type=int, default=None, help="one setting (index)")
    parser.add_argument("--setting", action="append", type=setting, default=[],
                        metavar="P_B:C", help="a setting of your own instead of the table's "
                        "(baseline rate:ceiling, both in (0, 1)); repeatable")
    parser.add_argument("--by-the-rule", action="store_true",
                        help="recompute the design-rate cell by asking the rule itself")
    parser.add_argument("--interleaved-runs", type=int, default=0,
                        help="simulated interleaved runs per cell (0: none)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.monotonic()
    chosen = (args.setting or SETTINGS) if args.only is None else [SETTINGS[args.only]]
    level = ALPHA_MARGIN * args.alpha
    rows = []
    for p_b, ceiling in chosen:
        p1 = ceiling / 4
        settings = VerdictSettings(alpha=args.alpha, ceiling=ceiling, power=args.power)
        cpu = time.process_time()
        plan = plan_sequential(p_b, ceiling=ceiling, alpha=args.alpha, power=args.power)
        cpu = time.process_time() - cpu
        ref, design, n_b = plan.reference, plan.design, plan.baseline_launches
        variant = "first below" if design.stop_at_first_below else "go on"
        total = ref.total_launches
        staged = ("" if design.baseline_stage is None else
                  "--stage {}:{} up to ".format(*design.baseline_stage[:2]))
        print(f"\nbaseline {p_b:g}, ceiling {ceiling:g}, design rate {p1:g}: reference "
              f"fixed design {ref.baseline_launches} + {ref.candidate_launches} = {total} "
              f"(power {plan.reference_power:.4f} at {p1:g}); rule: baseline {staged}{n_b}, "
              f"--launches {design.max_launches}, beta {design.beta:.3f}, LR thresholds "
              f"{math.exp(design.upper):.3g} / {math.exp(design.lower):.3g}, Fisher level "
              f"{design.comparison_alpha:.4g}, variant: {variant} (plan took {cpu:.1f} s "
              f"CPU)", flush=True)
        cells = {label: exact(design, p_b, n_b, p_c)
                 for label, p_c in (("design", p1), ("clean", 0.0), ("ceiling", ceiling))}
        if p_b < ceiling:
            cells["baseline"] = exact(design, p_b, n_b, p_b)
        side = design.operating(ceiling).p_fixed  # false "below" at the ceiling, any baseline
        size = max_size(design, n_b, design.comparison_alpha)
        anyrule, anyrule_nb = least_total_launches(p_b, plan.reference_power, level, p1,
                                                   ceiling)
        anybase = least_launches_any_baseline(p_b, plan.reference_power, level, p1, ceiling)
        reach = UNREACHABLE if anybase > GOAL * total else ""
        stage = design.baseline_stage
        own = (least_mean_launches(p_b, n_b, cells["design"].p_fixed, side, p1, ceiling)
               if stage is None else
               least_mean_launches(p_b, stage[2], cells["design"].p_fixed, side, p1, ceiling,
                                   staged_baseline_mean(stage, p_b)))
        for label, cell in cells.items():
            print(f"  candidate at {label:>8}: P(fixed) {cell.p_fixed:.4f}, mean launches "
                  f"{cell.mean:7.1f} ({cell.mean / total:4.1%} of the reference), 95th "
                  f"percentile {cell.p95}", flush=True)
        if args.by_the_rule and design.baseline_stage is not None:
            print("  by the rule itself: a staged baseline is checked state by state in "
                  "tests/test_baseline_stage.py")
        elif args.by_the_rule:
            check = finished_exact(design, settings, p_b, n_b, p1)
            print(f"  by the rule itself at the design rate: P(fixed) {check.p_fixed:.6f}, "
                  f"mean {check.mean:.3f}, 95th percentile {check.p95}")
        most = n_b + design.max_launches
        print(f"  max launches {most} ({most / total:.2f} x); false fixed at the ceiling "
              f"{cells['ceiling'].p_fixed:.4f} with this baseline, {side:.4f} for any; largest "
              f"under the ceiling (any common rate) {size:.4f}; least mean launches of any rule "
              f"at the reference's power {anyrule:.1f} ({anyrule / total:.0%}, baseline "
              f"{anyrule_nb}), of any with this baseline and error rates {own:.1f} "
              f"({own / total:.0%}); of any rule with any baseline, staged or not, "
              f"{anybase:.1f} ({anybase / total:.1%}{reach})")
        if args.interleaved_runs:
            rule = InterleavedRule(SprtDesign(ceiling, p1, args.alpha, design.beta,
                                              design.max_launches), settings)
            for label, p_c in (("design", p1), ("ceiling", ceiling)):
                f, n = interleaved_sim(rule, p_b, p_c, design.max_launches,
                                       args.interleaved_runs, rng)
                print(f"  interleaved (e-value, {args.interleaved_runs} simulated runs) at "
                      f"{label}: P(fixed) {f:.3f}, mean launches {n:.1f} ({n / total:.0%})")
        rows.append((p_b, ceiling, plan, cells, side, size, anyrule, own, anybase, reach,
                     f"{variant}, {staged}", cpu))
    print("\nsummary (exact; launches are baseline + candidate, against the reference design)")
    print("| baseline, ceiling | reference (plan) | its power | rule: variant, baseline + max "
          "| power | mean at design rate | 95th pct | clean | false fixed at ceiling (this "
          "baseline / any) | largest false fixed below | least of any rule | least with this "
          "baseline | least with any baseline | plan CPU s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (p_b, ceiling, plan, cells, side, size, anyrule, own, anybase, reach, variant,
         cpu) in rows:
        ref, total = plan.reference, plan.reference.total_launches
        d, h1, clean, at_c = plan.design, cells["design"], cells["clean"], cells["ceiling"]
        print(f"| {p_b:g}, {ceiling:g} | {ref.baseline_launches} + {ref.candidate_launches} "
              f"= {total} | {plan.reference_power:.4f} | {variant}{plan.baseline_launches} + "
              f"{d.max_launches} ({(plan.baseline_launches + d.max_launches) / total:.2f}x) | "
              f"{h1.p_fixed:.4f} | {h1.mean:.1f} ({h1.mean / total:.1%}) | {h1.p95} | "
              f"{clean.mean:.0f} | {at_c.p_fixed:.4f} / {side:.4f} | {size:.4f} | "
              f"{anyrule:.0f} ({anyrule / total:.0%}) | {own:.0f} ({own / total:.0%}) | "
              f"{anybase:.1f} ({anybase / total:.1%}{reach}) | {cpu:.1f} |")
    print(f"took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
