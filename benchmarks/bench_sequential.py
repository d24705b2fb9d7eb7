"""Benchmark: error rates, power and launches of the sequential rules (``--until-verdict``)
against the fixed-size design, over baseline rates below, at and above the ceiling.

For each setting (baseline rate ``p_b``, ceiling ``c``) it:

1. sizes the fixed-size design with :func:`kit.analysis.plan.plan_launches` at the rule's
   design rate (``c / 4``): false ``fixed`` <= alpha, power ``1 - beta`` there (for a
   baseline under twice the ceiling, for a clean candidate: ``coldstart plan``'s default);
2. gives the candidate the ``--launches`` ``coldstart plan`` suggests (the cap) and builds
   the rule with exact thresholds for it;
3. **finished baseline** (what ``coldstart run ... --until-verdict DIR`` does): a baseline of
   the fixed design's size, then candidate launches under
   :class:`kit.analysis.sequential.StopRule` (refused when the baseline shows no event or
   ``fixed`` is out of reach). Computed *exactly*: a sum over the baseline's binomial
   outcomes of a dynamic program over the candidate's (launches, events), each state
   asking the rule itself whether it stops, and each end judged by ``compare``'s own
   conditions for a rule run (:func:`kit.analysis.sequential.sequential_fixed`: Boschloo's
   or Fisher's test, the bound, the anytime-valid e-value, the SPRT). No sampling noise;
4. **interleaved** (``--baseline-runtime``): both builds from scratch through
   :func:`kit.analysis.sequential.interleave` with
   :class:`kit.analysis.sequential.InterleavedRule`, simulated (Bernoulli launches, ``--runs``
   per cell), judged the same way; its false-fixed figure is shown with a 95% interval;
5. prints per true candidate rate: P(fixed), mean launches and their ratio to the fixed
   design (candidate launches for a finished baseline, both builds interleaved), and the
   fixed design's own P(fixed) judged by ``compare`` (Boschloo's test).

The false-fixed column is P(fixed) at the worst case of "not fixed": a candidate at
``min(p_b, c)`` (as bad as the baseline when the baseline is below the ceiling, at the
ceiling otherwise). Power is P(fixed) at the design rate, where ``c / 4 < p_b``. For the
interleaved runs it is a simulated figure with its 95% interval, next to the proven bound:
the candidate side's exact chance of "below the ceiling" (:meth:`SprtDesign.operating`,
which the comparison can only lower) when the worst case is the ceiling, alpha (Ville's
inequality for the e-value) when it is the baseline's rate; the worst-case cell gets
``--h0-runs`` runs.

Run: ``.venv/bin/python benchmarks/bench_sequential.py [--runs 1000] [--seed 1]``.
Goals (issue #14): false fixed <= alpha in every row; power at least the fixed design's;
at most 50% of the fixed design's launches averaged over the design rate and the ceiling.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import numpy as np
from scipy import stats

from kit.analysis.plan import launches_to_bound_with_power, plan_launches
from kit.analysis.sequential import (InterleavedRule, SprtDesign, StopRule, interleave,
                                     sequential_fixed)
from kit.analysis.verdict import Verdict, VerdictSettings, decide

#: (baseline rate, ceiling): below, at and above the ceiling
SETTINGS = [(0.5, 0.05), (0.1, 0.05), (0.05, 0.05), (0.03, 0.05), (0.1, 0.02), (0.05, 0.01)]


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


def finished_exact(design: SprtDesign, settings: VerdictSettings, p_b: float, n_b: int,
                   p_c: float, cap: int) -> tuple[float, float]:
    """``(P(fixed), mean candidate launches)`` of a finished baseline of ``n_b`` launches
    at ``p_b`` and a candidate at ``p_c`` under :class:`StopRule`, exactly (module doc;
    states under 1e-13 are dropped and counted as not fixed, at most 1e-9 in all)."""
    fixed = launches = 0.0
    for x_b in range(n_b + 1):
        w_b = float(stats.binom.pmf(x_b, n_b, p_b))
        if w_b < 1e-13 or x_b == 0:
            continue  # no positive control: the run is refused
        rule = StopRule(design, settings, x_b, n_b)
        if rule.out_of_reach(0):
            continue  # refused before the first launch
        alive = {0: 1.0}
        for n in range(cap + 1):
            moved: dict[int, float] = {}
            for x, w in alive.items():
                if n == cap or rule.decision_counts(x, n)[0]:
                    fixed += w_b * w * sequential_fixed(x_b, n_b, x, n, settings, design)
                    launches += w_b * w * n
                    continue
                moved[x] = moved.get(x, 0.0) + w * (1.0 - p_c)
                if p_c > 0:
                    moved[x + 1] = moved.get(x + 1, 0.0) + w * p_c
            alive = {x: w for x, w in moved.items() if w >= 1e-13}
            if not alive:
                break
    return fixed, launches


def fixed_design_power(settings: VerdictSettings, p_b: float, n_b: int, p_c: float,
                       n_c: int) -> float:
    """P(``compare`` says fixed) for the fixed-size design, with compare's own Boschloo
    test, exactly (sum over both builds' binomial outcomes)."""
    xs_b = [x for x in range(n_b + 1) if stats.binom.pmf(x, n_b, p_b) > 1e-12]
    xs_c = [x for x in range(n_c + 1) if stats.binom.pmf(x, n_c, p_c) > 1e-12]
    total = 0.0
    for x_c in xs_c:
        w_c = stats.binom.pmf(x_c, n_c, p_c)
        for x_b in xs_b:
            if decide(x_b, n_b, x_c, n_c, settings, with_needed=False).verdict is Verdict.FIXED:
                total += w_c * stats.binom.pmf(x_b, n_b, p_b)
    return float(total)


def interleaved_sim(rule: InterleavedRule, p_b: float, p_c: float, cap: int, runs: int,
                    rng: np.random.Generator) -> tuple[float, float]:
    """``(P(fixed), mean launches of both builds)`` by simulation."""
    fixed = launches = 0
    for _ in range(runs):
        base, cand = SimSide(p_b, cap, rng), SimSide(p_c, cap, rng)
        interleave(base, cand, rule)
        launches += base.n + cand.n
        fixed += sequential_fixed(base.events, base.n, cand.events, cand.n, rule.settings,
                                  rule.design)
    return fixed / runs, launches / runs


def _ci(p: float, runs: int) -> str:
    k = round(p * runs)
    lo, hi = stats.binomtest(k, runs).proportion_ci(method="exact")
    return f"[{lo:.3f}, {hi:.3f}]"


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--runs", "2", "--h0-runs", "2", "--only", "0"],
         "prints": r"summary: false fixed", "marks": ["slow"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="interleaved runs per cell")
    parser.add_argument("--h0-runs", type=int, default=3000,
                        help="interleaved runs at the worst case of not fixed")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.2)
    parser.add_argument("--only", type=int, default=None, help="one setting (index)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.monotonic()
    rows = []
    chosen = SETTINGS if args.only is None else [SETTINGS[args.only]]
    for p_b, ceiling in chosen:
        p1 = ceiling / 4
        settings = VerdictSettings(alpha=args.alpha, ceiling=ceiling, power=1 - args.beta)
        # the fixed design at the rule's design rate; near the ceiling (a small effect, where
        # that search takes long) the one `coldstart plan` prints by default (a clean one)
        plan = plan_launches(p_b, ceiling=ceiling, alpha=args.alpha, power=1 - args.beta,
                             candidate_rate=p1 if p_b >= 2 * ceiling else 0.0)
        cap = 2 * max(launches_to_bound_with_power(p1, ceiling=ceiling, alpha=args.alpha,
                                                   power=1 - args.beta),
                      plan.candidate_launches)
        design = SprtDesign(ceiling, p1, args.alpha, args.beta, max_launches=cap)
        rule = InterleavedRule(design, settings)
        print(f"\nbaseline rate {p_b:g}, ceiling {ceiling:g}, alpha {args.alpha:g}, beta "
              f"{args.beta:g}, design rate {p1:g}; fixed design {plan.baseline_launches} + "
              f"{plan.candidate_launches} = {plan.total_launches} (plan's power "
              f"{plan.achieved_power:.3f}); --launches {cap}", flush=True)
        print(f"  {'cand. rate':>18} | {'fixed design':>12} | {'finished: P(fixed)':>18} "
              f"{'E[N_c]':>7} {'vs fixed':>8} | {'interleaved: P(fixed)':>21} "
              f"{'E[N]':>7} {'vs fixed':>8}")
        worst = min(p_b, ceiling)
        cells = {}
        for label, p_c in (("0", 0.0), (f"{p1:g} design", p1), (f"{worst:g} worst H0", worst),
                           (f"{p_b:g} unchanged", p_b)):
            if label.endswith("unchanged") and p_b == worst:
                continue
            f_fixed, f_n = finished_exact(design, settings, p_b, plan.baseline_launches, p_c,
                                          cap)
            runs = args.h0_runs if "H0" in label else args.runs
            i_fixed, i_n = interleaved_sim(rule, p_b, p_c, cap, runs, rng)
            fd = fixed_design_power(settings, p_b, plan.baseline_launches, p_c,
                                    plan.candidate_launches)
            cells[label.split()[-1] if " " in label else label] = (f_fixed, f_n, i_fixed, i_n,
                                                                     fd)
            print(f"  {label:>18} | {fd:12.4f} | {f_fixed:18.4f} {f_n:7.1f} "
                  f"{f_n / plan.candidate_launches:8.0%} | {i_fixed:9.4f} "
                  f"{_ci(i_fixed, runs) if 'H0' in label else '':>11} {i_n:7.1f} "
                  f"{i_n / plan.total_launches:8.0%}", flush=True)
        bound = design.operating(ceiling).p_fixed if worst == ceiling else args.alpha
        rows.append((p_b, ceiling, plan, cells, bound))
    print("\nsummary: false fixed (worst case of not fixed), power (design rate), launches "
          "averaged over the design rate and the ceiling (vs the fixed design)")
    print(f"  {'p_b, c':>11} | {'finished (exact)':>33} | {'interleaved (simulated; bound)':>50}"
          f" | fixed design power")
    for p_b, ceiling, plan, cells, bound in rows:
        h0, h1 = cells["H0"], cells.get("design")
        f_ratio = i_ratio = None
        if h1 is not None and p_b > ceiling:  # the ceiling is a rate of interest only then
            ceiling_cell = cells["H0"]
            f_ratio = (h1[1] + ceiling_cell[1]) / 2 / plan.candidate_launches
            i_ratio = (h1[3] + ceiling_cell[3]) / 2 / plan.total_launches
        fmt = (lambda r: "   -" if r is None else f"{r:4.0%}")
        print(f"  {p_b:g}, {ceiling:g}".ljust(13) + f" | false {h0[0]:.4f} power "
              f"{h1[0] if h1 else float('nan'):.3f} {fmt(f_ratio)} | false {h0[2]:.4f} "
              f"{_ci(h0[2], args.h0_runs)}; <= {bound:.4f} power "
              f"{h1[2] if h1 else float('nan'):.3f} "
              f"{fmt(i_ratio)} | {h1[4] if h1 else float('nan'):.3f}")
    print(f"took {time.monotonic() - started:.0f} s ({args.runs} interleaved runs per cell)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
