"""The exact comparison level of a sequential run against a *finished* baseline
(``coldstart run ... --until-verdict DIR`` with ``--launches``): how small Fisher's one-sided
p must be for ``fixed`` to keep its error rate, computed by dynamic programming instead of
an anytime-valid e-value.

The run (:class:`kit.analysis.sequential.StopRule` with a design that has
``baseline_launches``) makes the candidate's launches one by one and stops with ``fixed``
the first time its SPRT state is "below the ceiling" (:meth:`kit.analysis.sprt.SprtDesign.state`)
*and* Fisher's one-sided p of the baseline's ``x_b / n_b`` against the candidate's
``x / n`` is at most the level ``a_B`` found here (with the candidate's rate below the
baseline's, as ``compare`` wants), or at its ``max_launches`` when the bound is below the
ceiling and Fisher's p passes there. It goes on while the SPRT is below the ceiling and the
comparison does not hold yet (more clean launches lower Fisher's p), and stops without
``fixed`` as "not below the ceiling" and where ``fixed`` is out of reach. ``a_B`` is the
level of the whole sequential rejection region, so it replaces the fixed-size test's alpha
for such a run, and can be above alpha.

**The guarantee.** A wrong ``fixed`` has the candidate's rate at or above the ceiling or at
or above the baseline's (docs/verdict.md). At or above the ceiling every ``fixed`` path went
through a first "below the ceiling" (or ended at ``max_launches`` with the bound below), whose
chance the SPRT's exact thresholds keep at ``ALPHA_MARGIN * alpha``. Below it, with
``p_b <= p_c < ceiling``: for a baseline of ``x_b`` events the run is a first-passage problem
of the candidate's counts into the region

    R(x_b) = {(n, x): SPRT below the ceiling at (n, x) (or n = max_launches and the bound
              below), x n_b < x_b n, and Fisher's p(x_b/n_b vs x/n) <= a_B}

so the chance of ``fixed`` is ``S(p_b, p_c) = sum over x_b of P(Bin(n_b, p_b) = x_b) *
P_{p_c}(the run enters R(x_b))``. ``R(x_b)`` grows with ``x_b`` (Fisher's p falls as the
baseline's events rise), so ``S`` rises with ``p_b`` and its largest value under the null is
at ``p_b = p_c = pi``; ``a_B`` is the largest level with ``max over pi of S(pi, pi) <=
ALPHA_MARGIN * alpha``. One dynamic program over (launches, events) follows every class of
baseline counts with the same region and every rate at once (a grid of 61 rates in
``(0, ceiling)``, then 15 around each of the largest three; 25 and 9 for designs of more
than 40,000 candidate launches times baseline counts followed). The run's stops as "not below
the ceiling" and as out of reach only remove ``fixed`` outcomes: the program takes them as
the rule does, and the level would hold without them too. This is Boschloo's construction
(maximising the size over the nuisance rate) applied to the sequential rejection region, as
exact group-sequential tests of two binomials are computed (Jennison & Turnbull 2000, *Group
Sequential Methods with Applications to Clinical Trials*, ch. 12 and 19).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from .binomial import ALPHA_MARGIN
from .passage import (Regions, layers, level_classes, regions_for, run, run_classes,
                      weighed)
from .stats import stats

__all__ = ["FinishedPoint", "operating_finished", "comparison_level", "max_size",
           "fixed_chance", "fixed_by_count", "staged_size", "staged_baseline_mean",
           "MAX_LEVEL"]

#: the grid of common rates on which the size is maximised, before refining
_GRID = 61
#: rates around each of the three largest values on the grid
_FINE = 15
#: from this many candidate launches times baseline classes on, the grids are 25 and 9
#: rates (the program's work grows with both)
_BIG = 40_000


@dataclasses.dataclass(frozen=True)
class FinishedPoint:
    """The finished-baseline rule's exact figures at one (baseline rate, candidate rate).

    Attributes:
        p_fixed: chance that the run ends ``fixed``.
        expected_launches: the candidate's mean launches (0 where the rule refuses the
            baseline before its first launch: no event, or ``fixed`` out of reach).
        launches: ``launches[n]``, the chance that the candidate makes exactly ``n``
            launches (``n = 0 .. max_launches``).
    """

    p_fixed: float
    expected_launches: float
    launches: np.ndarray = dataclasses.field(repr=False, default_factory=lambda: np.ones(1))

    def quantile(self, q: float) -> int:
        """The fewest candidate launches ``n`` with ``P(N <= n) >= q``."""
        return int(np.searchsorted(np.cumsum(self.launches), q * (1 - 1e-12)))


def operating_finished(design: Any, n_b: int, p_b: float, p_c: float,
                       level: float | None = None) -> FinishedPoint:
    """Exact chance of ``fixed`` and the distribution of the candidate's launches for a
    finished baseline of ``n_b`` launches at ``p_b`` and a candidate at ``p_c`` under
    ``design`` (its :attr:`comparison_alpha`, or ``level``), by the module's dynamic
    program. For a design with a ``baseline_stage`` the baseline is that staged one
    (``n_b`` unused; :func:`staged_baseline_mean` gives its mean launches)."""
    level = design.comparison_alpha if level is None else level
    stage = getattr(design, "baseline_stage", None)
    if stage is not None:
        f, e, going = _staged_run(design, stage, level, np.array([p_c]), np.array([p_b]),
                                  max(p_b, design.ceiling), spread=True)
    else:
        reg = regions_for(design, n_b, max(p_b, design.ceiling))
        f, e, going = run(reg, n_b, level, np.array([p_c]), np.array([p_b]), spread=True)
    at_least = np.concatenate([[1.0], going[0], [0.0]])  # P(N >= n), n = 0..cap + 1
    return FinishedPoint(float(f[0]), float(e[0]), np.maximum(-np.diff(at_least), 0.0))


def fixed_by_count(design: Any, n_b: int, rates: Any) -> np.ndarray:
    """``f[x, r]``: the exact chance that the run ends ``fixed`` given a finished baseline of
    ``x`` target events in ``n_b`` launches (``x = 0..n_b``) and a candidate at ``rates[r]``,
    under ``design`` (its :attr:`comparison_alpha`), by the module's dynamic program.
    ``operating_finished(...).p_fixed`` is ``sum over x of P(Bin(n_b, p_b) = x) f[x]``; this
    is what a baseline made some other way than in one fixed-size campaign is judged with
    (``benchmarks/bench_baseline_extension.py``)."""
    rates = np.atleast_1d(np.asarray(rates, dtype=float))
    reg = regions_for(design, n_b, 1.0)  # every count, up to n_b
    classes, hit, _mean = run_classes(reg, n_b, level_classes(reg, design.comparison_alpha),
                                       rates, rates, by_class=True)
    out = np.zeros((n_b + 1, rates.size))
    for j, least in enumerate(classes):
        out[least:] = hit[j]  # a class takes every count from its least to the next's
    return out


def fixed_chance(design: Any, n_b: int, p_b: float, p_c: float) -> float:
    """Exact chance that the run ends ``fixed`` with a finished baseline of ``n_b`` launches
    at ``p_b`` and a candidate at ``p_c`` (:func:`operating_finished`)."""
    return operating_finished(design, n_b, p_b, p_c).p_fixed


def _max_size(design: Any, n_b: int, level: float,
              seen: dict[bytes, float] | None = None, first: bool | None = None,
              exact: bool = True) -> float:
    """``max over pi in (0, ceiling) of S(pi, pi)`` (:func:`_diagonal_max`; with ``exact``
    off, the grids only: a lower bound, what a bisection tries first); the baseline's tail
    beyond what is followed counted as ``fixed``. ``seen`` keeps the sizes already found by
    the classes the level makes (:func:`level_classes`, all the size depends on), so that a
    bisection computes each once. ``first``: the rule's variant (default: ``design``'s
    ``stop_at_first_below``)."""
    reg = regions_for(design, n_b, design.ceiling, first)
    t = level_classes(reg, level)
    if seen is None:
        return _size_of(design, reg, n_b, t, exact)
    key = t.tobytes() + (b"!" if exact else b"~")
    if key not in seen:
        seen[key] = _size_of(design, reg, n_b, t, exact)
    return seen[key]


def _size_of(design: Any, reg: Regions, n_b: int, t: np.ndarray, exact: bool = True
             ) -> float:
    """:func:`_max_size` for the classes ``t``."""
    tail = float(stats.binom.sf(reg.xb_top, n_b, design.ceiling))
    big = reg.cap * reg.xb_top >= _BIG
    return _diagonal_max(lambda r: run_classes(reg, n_b, t, r, r)[0], design.ceiling, big,
                         exact) + tail


#: the grid's local maxima located by :func:`_zoom`, the largest first, and the rate to
#: which it locates each (a share of the ceiling: the size's error is then of the order of
#: its curvature times that squared, below 1e-8 for the designs plan makes)
_PEAKS = 3
_XATOL = 1e-4


def _diagonal_max(at: Any, ceiling: float, big: bool, exact: bool = True) -> float:
    """``max over pi in (0, ceiling) of at(pi)`` for ``at`` taking an array of rates: the
    grid (:data:`_GRID` rates, 25 for ``big``), a finer one around its three largest values
    (:data:`_FINE`, 9), and with ``exact`` each of the grid's :data:`_PEAKS` largest local
    maxima located between its neighbours by :func:`_zoom`: the size is a polynomial in
    ``pi``, smooth, and a grid alone misses its peak between two of its rates (0.0463638
    on the grid where the peak at 0.02744 is 0.0463767, issue #46)."""
    grid, fine_n = (25, 9) if big else (_GRID, _FINE)
    top = ceiling * (1 - 1e-12)
    coarse = np.linspace(0.0, ceiling, grid + 1)[1:] * (1 - 1e-12)
    values = np.asarray(at(coarse), dtype=float)
    step = coarse[1] - coarse[0]
    fine = np.unique(np.concatenate([np.linspace(max(r - step, 1e-9), min(r + step, top),
                                                 fine_n)
                                     for r in coarse[np.argsort(values)[-3:]]]))
    best = max(float(values.max(initial=0.0)), float(np.max(at(fine), initial=0.0)))
    if not exact:
        return best
    padded = np.concatenate([[-np.inf], values, [-np.inf]])
    local = np.flatnonzero((values >= padded[:-2]) & (values >= padded[2:]))
    peaks = local[np.argsort(values[local])[::-1][:_PEAKS]]
    lo = np.maximum(coarse[peaks] - step, 1e-9)[:, None]
    hi = np.minimum(coarse[peaks] + step, top)[:, None]
    return max(best, _zoom(lambda v: at(v[0]), [lo], [hi], ceiling))


#: points per axis and bracket of each :func:`_zoom` step in one dimension (7 in two), and
#: its most steps
_ZOOM_POINTS = 21
_ZOOM_STEPS = 8


def _zoom(at: Any, lo: list[np.ndarray], hi: list[np.ndarray], ceiling: float) -> float:
    """The largest value of ``at`` found in brackets, each located to :data:`_XATOL` times
    ``ceiling``
    on every axis: ``lo[a][b], hi[a][b]`` bound axis ``a`` of bracket ``b`` (arrays of
    shape ``(brackets, 1)``); ``at`` takes the list of axes' points (flat arrays) and gives
    the value at each. Each step lays a grid of :data:`_ZOOM_POINTS` per axis over every
    bracket, all in one call (the dynamic program costs about the same for one rate as for
    hundreds), and shrinks each bracket to the cells beside its largest value: a bounded
    search, like the golden section's, for a function with one peak in each bracket."""
    lo = [np.asarray(x, dtype=float) for x in lo]
    hi = [np.asarray(x, dtype=float) for x in hi]
    k = _ZOOM_POINTS if len(lo) == 1 else 7
    best = -np.inf
    for _ in range(_ZOOM_STEPS):
        frac = np.linspace(0.0, 1.0, k)
        axes = [a + (b - a) * frac[None, :] for a, b in zip(lo, hi)]  # (brackets, k)
        mesh = np.meshgrid(*[np.arange(k)] * len(lo), indexing="ij")
        idx = [m.reshape(-1) for m in mesh]  # (k ** dims,) per axis
        points = [ax[:, i] for ax, i in zip(axes, idx)]  # (brackets, k ** dims)
        values = np.asarray(at([p.reshape(-1) for p in points]), dtype=float).reshape(
            points[0].shape)
        best = max(best, float(values.max(initial=-np.inf)))
        top = values.argmax(axis=1)
        for a, i in enumerate(idx):
            at_top = i[top]
            lo[a] = np.take_along_axis(axes[a], np.maximum(at_top - 1, 0)[:, None], 1)
            hi[a] = np.take_along_axis(axes[a], np.minimum(at_top + 1, k - 1)[:, None], 1)
        if max(float((b - a).max()) for a, b in zip(lo, hi)) <= _XATOL * ceiling:
            break
    return best


#: the largest comparison level searched: a wider region than this is never needed for a
#: size of 0.95 alpha at the usual alphas, and Fisher's p of 1/2 means no evidence at all
MAX_LEVEL = 0.5


def comparison_level(design: Any, n_b: int) -> float:
    """The largest Fisher level ``a_B`` (at most :data:`MAX_LEVEL`) whose exact chance of a
    wrong ``fixed``, maximised over a common rate below the ceiling, is at most
    ``ALPHA_MARGIN * alpha``, for a finished baseline of ``n_b`` launches and ``design``'s
    candidate side (module doc). It can be above ``alpha``: "below the ceiling" is itself a
    strong condition, and the level is that of the whole sequential rejection region, not
    of a fixed-size test. Found by bisection on ``log a_B`` (the size only grows with the
    level) to 0.1%. For a design with a ``baseline_stage`` it is the one level of the whole
    staged procedure (:func:`staged_size`; ``n_b`` unused)."""
    # the design's own class (kit.analysis.sprt.SprtDesign) makes the candidate side, so that
    # this module never imports sprt, which imports it
    first = bool(getattr(design, "stop_at_first_below", False))
    stage = getattr(design, "baseline_stage", None)
    kind: Any = type(design)  # a class is hashable: the cache's key
    if stage is not None:
        return _level_staged(kind, design.ceiling, design.design_rate, design.alpha,
                             design.beta, design.max_launches, tuple(stage), first)
    return _level(kind, design.ceiling, design.design_rate, design.alpha, design.beta,
                  design.max_launches, n_b, first)


@functools.lru_cache(maxsize=1024)
def _level(kind: Any, ceiling: float, design_rate: float, alpha: float, beta: float,
           max_launches: int, n_b: int, first: bool = False) -> float:
    design = kind(ceiling, design_rate, alpha, beta, max_launches)
    goal = ALPHA_MARGIN * alpha
    seen: dict[bytes, float] = {}
    # the highest log level known to hold, the lowest not: on the grids (a lower bound of
    # the size) and exactly (the size at its peak, :func:`_diagonal_max`)
    known = {False: [-math.inf, math.inf], True: [-math.inf, math.inf]}

    def holds(log_level: float, exact: bool = False) -> bool:
        """Whether the size at ``exp(log_level)`` is at most the goal; answered without
        the program where the size's growth with the level already tells."""
        if log_level <= known[exact][0] or (not exact and log_level <= known[True][0]):
            return True
        if log_level >= known[exact][1] or (exact and log_level >= known[False][1]):
            return False
        good = _max_size(design, n_b, math.exp(log_level), seen, first, exact) <= goal
        known[exact][0 if good else 1] = log_level
        return good

    # a level found for the same baseline and variant (another beta or --launches) is
    # mostly close: its neighbours, tried first, answer most of the bisection's steps (it
    # takes the same steps, so it ends where it would without them)
    top = math.log(MAX_LEVEL)
    key = (kind, ceiling, design_rate, alpha, n_b, first)
    hint = _HINTS.get(key)
    if hint is not None and holds(min(top, hint - _WARM)) and hint + _WARM < top:
        holds(hint + _WARM)
    lo = _bisect(holds, math.log(alpha) - 12.0, top)
    # the grids only bound the size from below: the level they give is checked at the
    # size's peak, and lowered by the same bisection where the peak is over the goal
    if not holds(lo, True):
        lo = _bisect(lambda x: holds(x, True), math.log(alpha) - 12.0, lo)
    _HINTS[key] = lo
    return MAX_LEVEL if lo == top else math.exp(lo)


def _bisect(holds: Any, lo: float, hi: float) -> float:
    """The largest log level in ``[lo, hi]`` that ``holds`` (``hi`` itself first), to
    1e-3 by bisection: the size only grows with the level."""
    if holds(hi):
        return hi
    while hi - lo > 1e-3:
        mid = (lo + hi) / 2
        if holds(mid):
            lo = mid
        else:
            hi = mid
    return lo


#: the last log level :func:`_level` found per baseline and variant, and how far either
#: side of it it looks first
_HINTS: dict[tuple[Any, ...], float] = {}
_WARM = 0.02


def max_size(design: Any, n_b: int, level: float) -> float:
    """The largest exact chance of a wrong ``fixed`` below the ceiling at Fisher level
    ``level`` (module doc): what :func:`comparison_level` keeps at ``ALPHA_MARGIN * alpha``
    (for a design with a ``baseline_stage``, the staged procedure's, :func:`staged_size`;
    ``n_b`` unused)."""
    stage = getattr(design, "baseline_stage", None)
    if stage is not None:
        return staged_size(design, tuple(stage), level)
    return _max_size(design, n_b, level)


# -- a baseline staged by design -------------------------------------------------------------
#
# The baseline makes n1 launches; with at least r target events among them it stops there
# (n_b = n1), else it goes on to n2 (n_b = n2), as declared before its first launch
# (``coldstart run ... --stage n1:r --launches n2``). Its count is then not binomial: with
# b1 = Bin(n1, p_b),
#
#     P(n_b = n1, x_b = x) = b1(x)                                   for x >= r,
#     P(n_b = n2, x_b = x) = sum over j < r of b1(j) Bin(n2 - n1, p_b)(x - j),
#
# and the run against it enters R_n1(x_b) or R_n2(x_b) (the module doc's region, for that
# size, at one level a_B). The chance of a wrong fixed is the sum of the two branches'
# first-passage chances. It need not rise with p_b any more (a higher p_b can stop the
# baseline at n1 with a count whose region is smaller than the one n2 launches would have
# given), so the size is not argued onto p_b = p_c from the baseline's side. From the
# candidate's side: for the rule that goes on while only the comparison is missing, a
# candidate with a higher rate (coupled launch by launch: more events at every n) is at a
# cell with fewer events at every launch, every region is closed downwards in x at each n,
# and the stops as not below and out of reach are closed upwards, so its chance of fixed
# only falls as p_c rises, for every baseline outcome: the largest value over
# p_b <= p_c is at p_b = p_c, and the diagonal is maximised as for one size. The rule that
# stops at its first "below the ceiling" has no such order (a lower path can stop early
# where the comparison fails), so for it the size is maximised over pairs p_b <= p_c.
# A baseline extended because it looked weak, with no such declared stage and level, is
# what reached 0.068 (docs/verdict.md); declared and calibrated as one procedure it keeps
# ALPHA_MARGIN * alpha.


def _staged_pmf(stage: tuple[int, int, int], rates: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """The staged baseline's count distributions ``(pmf1[x, r], pmf2[x, r])``: stopped at
    ``n1`` with ``x`` events, and gone on to ``n2`` with ``x`` events, at each rate."""
    n1, r, n2 = stage
    x1 = np.arange(n1 + 1)[:, None]
    b1 = stats.binom.pmf(x1, n1, rates[None, :])
    pmf1 = np.where(x1 >= r, b1, 0.0)
    more = stats.binom.pmf(np.arange(n2 - n1 + 1)[:, None], n2 - n1, rates[None, :])
    pmf2 = np.zeros((n2 + 1, rates.size))
    for j in range(min(r, n1 + 1)):
        pmf2[j:j + n2 - n1 + 1] += b1[j][None, :] * more
    return pmf1, pmf2


def staged_baseline_mean(stage: tuple[int, int, int], p_b: float) -> float:
    """Mean launches of the baseline staged as ``(n1, r, n2)`` at rate ``p_b``:
    ``n1 + (n2 - n1) P(Bin(n1, p_b) < r)``."""
    n1, r, n2 = stage
    return n1 + (n2 - n1) * float(stats.binom.cdf(r - 1, n1, p_b))


def _staged_regions(design: Any, stage: tuple[int, int, int], rate: float,
                    first: bool | None = None) -> tuple[Regions, Regions]:
    n1, _r, n2 = stage
    return regions_for(design, n1, rate, first), regions_for(design, n2, rate, first)


def _staged_run(design: Any, stage: tuple[int, int, int], level: float, rates: np.ndarray,
                p_b: np.ndarray, rate: float, spread: bool = False,
                first: bool | None = None) -> tuple[np.ndarray, ...]:
    """:func:`run` for the staged baseline: both branches' programs at one level, summed
    (``rate``: the highest baseline rate the counts followed must cover)."""
    regs = _staged_regions(design, stage, rate, first)
    return _staged_classes(regs, stage, tuple(level_classes(g, level) for g in regs), rates, p_b,
                           spread)


def _staged_classes(regs: tuple[Regions, Regions], stage: tuple[int, int, int],
                    ts: tuple[np.ndarray, ...], rates: np.ndarray, p_b: np.ndarray,
                    spread: bool = False) -> tuple[np.ndarray, ...]:
    """Both branches' layers (their candidate cells are the same: one design) run as one
    program, each weighed by its branch's count distribution."""
    n1, _r, n2 = stage
    rates = np.asarray(rates, dtype=float)
    pmfs = _staged_pmf(stage, np.asarray(p_b, dtype=float))
    parts = [layers(g, n, t, rates, p_b, pmf)
             for g, n, t, pmf in zip(regs, (n1, n2), ts, pmfs)]
    region = np.concatenate([part[1] for part in parts])
    weight = np.concatenate([part[2] for part in parts])
    return weighed(regs[0], region, weight, rates, spread)


def staged_size(design: Any, stage: tuple[int, int, int], level: float,
                first: bool | None = None) -> float:
    """The largest exact chance of a wrong ``fixed`` below the ceiling at Fisher level
    ``level`` with the baseline staged as ``(n1, r, n2)``: ``max over pi < ceiling`` of
    both branches' chance at ``p_b = p_c = pi`` (at its peak, :func:`_diagonal_max`; over
    pairs for the first-below rule, :func:`_staged_size_of`), the counts beyond those
    followed counted as ``fixed``."""
    regs = _staged_regions(design, stage, design.ceiling, first)
    return _staged_size_of(design, regs, stage, tuple(level_classes(g, level) for g in regs))


def _staged_size_of(design: Any, regs: tuple[Regions, Regions],
                    stage: tuple[int, int, int], ts: tuple[np.ndarray, ...],
                    pairs: bool | None = None, exact: bool = True) -> float:
    """:func:`staged_size` for the classes ``ts``; ``pairs``: maximise over pairs
    ``p_b <= p_c`` (default: for the first-below rule, comment above), else on the
    diagonal (:func:`_diagonal_max`; ``exact`` as there). Over pairs: a triangle of the
    grid, a finer one around its three largest, and with ``exact`` the diagonal's peak
    and each of those three pairs' located by :func:`_zoom` (``p_b = u p_c``, ``u`` in
    ``[0, 1]``: the triangle as a box)."""
    c = design.ceiling
    big = max(g.cap * g.xb_top for g in regs) >= _BIG

    def at(p_b: np.ndarray, p_c: np.ndarray) -> np.ndarray:
        pmfs = _staged_pmf(stage, p_b)
        tail = sum(pmf[g.xb_top + 1:].sum(axis=0) for g, pmf in zip(regs, pmfs))
        return _staged_classes(regs, stage, ts, p_c, p_b)[0] + tail

    on_pairs = regs[0].first if pairs is None else pairs
    if not on_pairs or exact:  # the diagonal (comment above); over pairs, part of them
        best = _diagonal_max(lambda r: at(r, r), c, big, exact)
        if not on_pairs:
            return best
    else:
        best = 0.0
    # pairs p_b <= p_c: a triangle of the grid, then a finer one around its three largest
    grid, fine_n = (_STAGED_GRID_BIG, 5) if big else (_STAGED_GRID, 7)
    axis = np.linspace(0.0, c, grid + 1)[1:] * (1 - 1e-12)
    i, j = np.tril_indices(grid)  # p_b = axis[j] <= p_c = axis[i]
    values = at(axis[j], axis[i])
    step = axis[1] - axis[0]
    best = max(best, float(values.max(initial=0.0)))
    peak_lo: list[list[float]] = []
    peak_hi: list[list[float]] = []
    for k in np.argsort(values)[-3:]:
        pc = np.linspace(max(axis[i[k]] - step, 1e-9), min(axis[i[k]] + step, c * (1 - 1e-12)),
                         fine_n)
        pb = np.linspace(max(axis[j[k]] - step, 1e-9), min(axis[j[k]] + step, c * (1 - 1e-12)),
                         fine_n)
        gb, gc = np.meshgrid(pb, pc)
        keep = gb <= gc
        best = max(best, float(at(gb[keep], gc[keep]).max(initial=0.0)))
        if exact:  # p_b = u p_c with u in [0, 1]: the triangle as a box, zoomed
            u = axis[j[k]] / axis[i[k]]
            du = step / axis[i[k]]
            peak_lo.append([max(axis[i[k]] - step, 1e-9), max(u - du, 0.0)])
            peak_hi.append([min(axis[i[k]] + step, c * (1 - 1e-12)), min(u + du, 1.0)])
    if exact:
        lo_, hi_ = np.array(peak_lo), np.array(peak_hi)
        best = max(best, _zoom(lambda v: at(v[0] * v[1], v[0]),
                               [lo_[:, :1], lo_[:, 1:]], [hi_[:, :1], hi_[:, 1:]], c))
    return best


#: the staged sizes ``(pairs, exact)`` known to be at least, and at most, each one: the
#: exact size over pairs takes the diagonal's peak and the triangle's grid, each exact one
#: its grid (a level that holds for a larger size holds for it; one that fails for a
#: smaller fails)
_STAGED_ABOVE = {(False, False): ((False, False), (False, True), (True, True)),
                 (False, True): ((False, True), (True, True)),
                 (True, False): ((True, False), (True, True)), (True, True): ((True, True),)}
_STAGED_BELOW = {k: tuple(j for j, above in _STAGED_ABOVE.items() if k in above)
                 for k in _STAGED_ABOVE}
#: the staged first-below size's grid of rates per axis (pairs p_b <= p_c of it), and for
#: big designs (:data:`_BIG`)
_STAGED_GRID = 24
_STAGED_GRID_BIG = 14


@functools.lru_cache(maxsize=256)
def _level_staged(kind: Any, ceiling: float, design_rate: float, alpha: float, beta: float,
                  max_launches: int, stage: tuple[int, int, int], first: bool = False
                  ) -> float:
    """:func:`comparison_level` for the staged baseline ``stage``: the bisection of
    :func:`_level` on :func:`staged_size`. For the first-below rule, whose size is maximised
    over pairs of rates, the bisection runs on the diagonal (cheaper, and never above the
    pairs' size) and its level is then checked over the pairs; only where that fails does
    it go on, over the pairs, below it: the same level as a bisection over the pairs."""
    design = kind(ceiling, design_rate, alpha, beta, max_launches)
    goal = ALPHA_MARGIN * alpha
    regs = _staged_regions(design, stage, ceiling, first)
    seen: dict[tuple[bytes, bool, bool], bool] = {}
    known = {(p, e): [-math.inf, math.inf] for p in (False, True) for e in (False, True)}

    def holds(log_level: float, pairs: bool, exact: bool = False) -> bool:
        """Whether the size at ``exp(log_level)`` is at most the goal; answered without the
        program where the size's growth with the level already tells (as in _level; the
        exact size and the one over pairs are at least the grid's and the diagonal's)."""
        low = max(known[k][0] for k in _STAGED_ABOVE[pairs, exact])
        high = min(known[k][1] for k in _STAGED_BELOW[pairs, exact])
        if log_level <= low:
            return True
        if log_level >= high:
            return False
        ts = tuple(level_classes(g, math.exp(log_level)) for g in regs)
        key = (b"|".join(t.tobytes() for t in ts), pairs, exact)
        if key not in seen:
            seen[key] = _staged_size_of(design, regs, stage, ts, pairs, exact) <= goal
        known[pairs, exact][0 if seen[key] else 1] = log_level
        return seen[key]

    def bisect(lo: float, hi: float, pairs: bool, exact: bool = False) -> float:
        # the level for another beta or --launches is mostly close: its neighbours, tried
        # first, answer most steps; the steps are the same, so it ends where it would
        key = ("staged", kind, ceiling, design_rate, alpha, stage, first, pairs, exact)
        hint = _HINTS.get(key)
        if hint is not None and lo < hint - _WARM and hint + _WARM < hi:
            if holds(hint - _WARM, pairs, exact):
                holds(hint + _WARM, pairs, exact)
        while hi - lo > 1e-3:
            mid = (lo + hi) / 2
            if holds(mid, pairs, exact):
                lo = mid
            else:
                hi = mid
        _HINTS[key] = lo
        return lo

    top, bottom = math.log(MAX_LEVEL), math.log(alpha) - 12.0
    found = top if holds(top, False) else bisect(bottom, top, False)
    if first and not holds(found, True):
        found = bisect(bottom, found, True)
    # the grids only bound the size from below: checked at its peak, and lowered by the
    # same bisection where the peak is over the goal (as in _level)
    if not holds(found, first, True):
        found = bisect(bottom, found, first, True)
    return MAX_LEVEL if found == top else math.exp(found)
