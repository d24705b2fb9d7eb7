"""Benchmark: launches the sequential rule (``--until-verdict``) needs vs a fixed-size design.

For each setting (baseline rate, ceiling) it:

1. sizes the fixed-size design with :func:`kit.analysis.plan.plan_launches` at the same error rates
   as the rule: false ``fixed`` <= alpha for any candidate rate >= the ceiling, and power
   1 - beta when the candidate's rate is the rule's design rate (ceiling / 4);
2. gives each build the most launches ``coldstart plan`` suggests (``--cap`` times the fixed
   design's: 2) and builds the rule with exact thresholds for them
   (:class:`kit.analysis.sequential.SprtDesign` with ``max_launches``);
3. simulates interleaved campaign pairs (Bernoulli launches) through
   :func:`kit.analysis.sequential.interleave` with :class:`kit.analysis.sequential.InterleavedRule`, and
   candidates against a finished baseline of the fixed design's size with
   :class:`kit.analysis.sequential.StopRule` (what ``coldstart run ... --until-verdict`` does), and
   judges each with :func:`kit.analysis.verdict.decide` as ``compare`` would;
4. prints, per true candidate rate and mode, the mean launches (both builds interleaved; the
   candidate's with a finished baseline), the ratio to the fixed design (its total; its
   candidate launches), how often the verdict was ``fixed``, the exact candidate-side figures
   of the rule
   (:meth:`kit.analysis.sequential.SprtDesign.operating`) and, for comparison, the candidate's mean
   launches with Wald's thresholds (1/alpha, beta).

Run: ``.venv/bin/python benchmarks/bench_sequential.py [--runs 1000] [--seed 1]``
(about four minutes on 2 idle cores). The goal (issue #4) is a mean of at most 50% of the fixed
design's launches; the summary checks it at the two rates the error rates are set at (the
ceiling and the design rate, averaged: the usual average sample number comparison) and at
rate 0 (the fix works).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import numpy as np

from kit.analysis.plan import launches_to_bound_with_power, plan_launches
from kit.analysis.sequential import InterleavedRule, SprtDesign, StopRule, interleave
from kit.analysis.verdict import Verdict, VerdictSettings, decide


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


def simulate(rule: InterleavedRule, p_b: float, p_c: float, cap_b: int, cap_c: int,
             runs: int, rng: np.random.Generator) -> dict[str, float]:
    launches = []
    fixed = 0
    stopped_early = 0
    for _ in range(runs):
        base = SimSide(p_b, cap_b, rng)
        cand = SimSide(p_c, cap_c, rng)
        why = interleave(base, cand, rule)
        launches.append(base.n + cand.n)
        stopped_early += not why.startswith("both builds reached")
        verdict = decide(base.events, base.n, cand.events, cand.n, rule.settings,
                         use_boschloo=False, with_needed=False).verdict
        fixed += verdict is Verdict.FIXED
    return {"mean": float(np.mean(launches)), "p_fixed": fixed / runs,
            "stopped": stopped_early / runs}


def simulate_finished(design: SprtDesign, settings: VerdictSettings, p_b: float, n_b: int,
                      p_c: float, cap_c: int, runs: int, rng: np.random.Generator
                      ) -> dict[str, float]:
    """``coldstart run ... --until-verdict``: a finished baseline of ``n_b`` launches, then
    candidate launches until :class:`kit.analysis.sequential.StopRule` stops (or ``cap_c``)."""
    launches = []
    fixed = 0
    for _ in range(runs):
        x_b = int(rng.binomial(n_b, p_b))
        x_c = n_c = 0
        if x_b > 0:  # else the run is refused: no positive control
            rule = StopRule(design, settings, x_b, n_b)
            while n_c < cap_c and not rule.decision_counts(x_c, n_c)[0]:
                n_c += 1
                x_c += int(rng.random() < p_c)
        launches.append(n_c)
        fixed += decide(x_b, n_b, x_c, n_c, settings, use_boschloo=False,
                        with_needed=False).verdict is Verdict.FIXED
    return {"mean": float(np.mean(launches)), "p_fixed": fixed / runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.2)
    parser.add_argument("--cap", type=int, default=2,
                        help="each build's most launches, as a multiple of the fixed design's")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    settings_list = [(0.5, 0.05), (0.1, 0.02), (0.05, 0.01)]
    started = time.monotonic()
    headline = []
    for p_b, ceiling in settings_list:
        settings = VerdictSettings(alpha=args.alpha, ceiling=ceiling, power=1 - args.beta)
        plan = plan_launches(p_b, ceiling=ceiling, alpha=args.alpha, power=1 - args.beta,
                             candidate_rate=ceiling / 4)
        fixed_total = plan.total_launches
        # each build's --launches as `coldstart plan` suggests them
        cap_b = args.cap * plan.baseline_launches
        cap_c = args.cap * launches_to_bound_with_power(ceiling / 4, ceiling=ceiling,
                                                        alpha=args.alpha, power=1 - args.beta)
        design = SprtDesign(ceiling, ceiling / 4, args.alpha, args.beta, max_launches=cap_c)
        wald = SprtDesign(ceiling, ceiling / 4, args.alpha, args.beta)
        rule = InterleavedRule(design, settings)
        print(f"\nbaseline rate {p_b:g}, ceiling {ceiling:g}, alpha {args.alpha:g}, "
              f"beta {args.beta:g}, design rate {design.design_rate:g}")
        print(f"  fixed-size design: {plan.baseline_launches} baseline + "
              f"{plan.candidate_launches} candidate = {fixed_total} launches "
              f"(power {plan.achieved_power:.3f} at {design.design_rate:g})")
        print(f"  sequential cap: {cap_b} + {cap_c}; {design.describe()}")
        print("  interleaved: both builds from scratch, vs the fixed design's total; finished "
              "baseline: the candidate alone against a baseline of the fixed design's size, vs "
              "its candidate launches")
        print(f"  {'':>16} {'interleaved':>34} {'finished baseline':>34}")
        print(f"  {'candidate rate':>16} {'mean launches':>14} {'vs fixed':>9} "
              f"{'P(fixed)':>9} {'cand. launches':>15} {'vs fixed':>9} {'P(fixed)':>9} "
              f"{'exact E[N_c]':>13} {'P_c(fixed)':>11} {'Wald E[N_c]':>12}")
        ratios = {}
        solo = {}
        for label, p_c in (("0 (fixed)", 0.0), (f"{design.design_rate:g} (H1)",
                                                design.design_rate),
                           (f"{ceiling:g} (ceiling)", ceiling),
                           (f"{p_b:g} (unchanged)", p_b)):
            sim = simulate(rule, p_b, p_c, cap_b, cap_c, args.runs, rng)
            fin = simulate_finished(design, settings, p_b, plan.baseline_launches, p_c, cap_c,
                                    args.runs, rng)
            exact = design.operating(p_c)
            ratio = sim["mean"] / fixed_total
            key = label.split()[1]
            ratios[key] = ratio
            solo[key] = fin["mean"] / plan.candidate_launches
            print(f"  {label:>16} {sim['mean']:14.1f} {ratio:9.0%} {sim['p_fixed']:9.3f} "
                  f"{fin['mean']:15.1f} {solo[key]:9.0%} {fin['p_fixed']:9.3f} "
                  f"{exact.expected_launches:13.1f} {exact.p_fixed:11.4f} "
                  f"{wald.operating(p_c, cap_c).expected_launches:12.1f}")
        for name, r in (("interleaved", ratios), ("finished baseline", solo)):
            mean_h = (r["(H1)"] + r["(ceiling)"]) / 2
            mean_real = (r["(fixed)"] + r["(unchanged)"]) / 2
            headline.append((f"{name}, baseline {p_b:g}, ceiling {ceiling:g}", mean_h,
                             mean_real, r["(fixed)"]))
            print(f"  {name}: mean ratio at the two design hypotheses (H1, ceiling): "
                  f"{mean_h:.0%}; at rate 0: {r['(fixed)']:.0%}; at the two outcomes of a "
                  f"fix (rate 0, unchanged): {mean_real:.0%}")
    print("\nsummary (goal: at most 50% of the fixed design's launches)")
    met = True
    for name, mean_h, mean_real, zero in headline:
        ok = mean_h <= 0.5 and zero <= 0.5
        met &= ok
        print(f"  {name}: {mean_h:.0%} at H1/ceiling, {zero:.0%} at rate 0, "
              f"{mean_real:.0%} at fixed/unchanged: {'met' if ok else 'NOT met'}")
    print("goal met in every setting" if met else "goal NOT met in some setting")
    print(f"took {time.monotonic() - started:.0f} s for {args.runs} runs per cell")
    return 0


if __name__ == "__main__":
    sys.exit(main())
