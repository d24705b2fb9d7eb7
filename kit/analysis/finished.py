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

from .binomial import ALPHA_MARGIN, k_max_cached
from .stats import P_RTOL, fisher_p_vector, stats

__all__ = ["FinishedPoint", "operating_finished", "comparison_level", "max_size",
           "fixed_chance", "fixed_by_count", "MAX_LEVEL"]

#: the grid of common rates on which the size is maximised, before refining
_GRID = 61
#: rates around each of the three largest values on the grid
_FINE = 15
#: from this many candidate launches times baseline classes on, the grids are 25 and 9
#: rates (the program's work grows with both)
_BIG = 40_000
#: baseline counts whose chance is below this at every rate looked at are lumped with the
#: largest one kept (their ``fixed`` chance counted as 1 in a size: conservative)
_TAIL = 1e-15


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


@dataclasses.dataclass(frozen=True)
class _Regions:
    """The candidate's (n, x) cells where the SPRT is below the ceiling (``x <= top``), with
    Fisher's p of every baseline count ``1..xb_top`` against each."""

    cap: int
    top: int
    below: np.ndarray      # (cap + 1, top + 1) bool: SPRT below the ceiling (n = cap: bound)
    not_below: np.ndarray  # (cap + 1, top + 1) bool: the rule's stop as not below
    fisher: np.ndarray     # (cells, xb_top): p of baseline count j + 1 against the cell
    cells: tuple[np.ndarray, np.ndarray]  # the below cells' (n, x)
    xb_top: int
    #: the rule stops at its first "below the ceiling", ``fixed`` or not (else it goes on
    #: while the comparison does not hold there)
    first: bool = False
    #: ``first_below[x]``: the first launch where ``x`` events are below (cap + 1: never)
    first_below: np.ndarray | None = None


def _regions(design: Any, n_b: int, xb_top: int, first: bool = False) -> _Regions:
    cap = design.max_launches
    k_max = np.asarray(k_max_cached(cap, design.ceiling, design.alpha))
    top = max(int(k_max[cap]), 0)
    n = np.arange(cap + 1)[:, None]
    x = np.arange(top + 1)[None, :]
    llr = x * design.step_event + (n - x) * design.step_clean  # as SprtDesign.log_lr
    bound = x <= k_max[:, None]
    below = (llr >= design.upper) & bound
    below[cap] = bound[cap]
    below[0] = False
    not_below = (llr <= design.lower) & ~bound
    not_below[cap] = True
    not_below[0] = False
    cn, cx = np.nonzero(below)
    j = np.arange(1, xb_top + 1)[None, :]
    fisher = fisher_p_vector(j, n_b, cx[:, None], cn[:, None]) if cn.size else np.zeros(
        (0, xb_top))
    # compare also wants the candidate's rate below the baseline's
    fisher = np.where(cx[:, None] * n_b < j * cn[:, None], fisher, np.inf)
    first_below = np.where(below.any(axis=0), below.argmax(axis=0), cap + 1)
    return _Regions(cap, top, below, not_below, fisher, (cn, cx), xb_top, first, first_below)


@functools.lru_cache(maxsize=32)
def _regions_cached(kind: Any, ceiling: float, design_rate: float, alpha: float, beta: float,
                    max_launches: int, n_b: int, xb_top: int, first: bool = False) -> _Regions:
    return _regions(kind(ceiling, design_rate, alpha, beta, max_launches), n_b, xb_top, first)


def _xb_top(n_b: int, rate: float) -> int:
    """The largest baseline count worth following at rates up to ``rate``."""
    return max(1, min(n_b, int(stats.binom.isf(_TAIL, n_b, min(rate, 1.0))) + 1))


def _run(reg: _Regions, n_b: int, level: float, rates: np.ndarray, p_b: np.ndarray,
         spread: bool = False) -> tuple[np.ndarray, ...]:
    """``(P(fixed), mean candidate launches)`` at each pair ``(p_b[r], rates[r])``: the
    first-passage dynamic program (module doc), one layer per class of baseline counts with
    the same region; with ``spread``, also ``P(N >= n)`` for ``n = 1..cap`` (rates x cap)."""
    return _run_classes(reg, n_b, _classes(reg, level), rates, p_b, spread)


def _classes(reg: _Regions, level: float) -> np.ndarray:
    """``t``: the fewest baseline events (``1..xb_top``; ``xb_top + 1``: none) that pass at
    ``level`` against each below cell: all :func:`_run` reads of the level."""
    passes = reg.fisher <= level * (1.0 + P_RTOL)
    return np.where(passes.any(axis=1), passes.argmax(axis=1) + 1, reg.xb_top + 1)


def _run_classes(reg: _Regions, n_b: int, t: np.ndarray, rates: np.ndarray, p_b: np.ndarray,
                 spread: bool = False, by_class: bool = False) -> tuple[np.ndarray, ...]:
    """:func:`_run` for the classes ``t`` of :func:`_classes`; with ``by_class``, instead
    ``(classes, hit)``: each class's least baseline count and its chance of ``fixed`` at
    each rate (``p_b`` unused)."""
    classes = np.unique(t[t <= reg.xb_top])
    rates = np.asarray(rates, dtype=float)
    fixed = np.zeros(rates.size)
    launches = np.zeros(rates.size)
    if classes.size == 0:
        if by_class:
            return classes, np.zeros((0, rates.size))
        return (fixed, launches) + ((np.zeros((rates.size, reg.cap)),) if spread else ())
    # weights of each class: P(u_j <= X_b < u_{j+1}); the last takes the tail above xb_top
    edges = np.concatenate([classes, [n_b + 1]])
    cdf = stats.binom.cdf(edges[:, None] - 1, n_b, p_b[None, :])
    weight = cdf[1:] - cdf[:-1]
    weight[-1] = 1.0 - cdf[-2]
    region = np.zeros((classes.size,) + reg.below.shape, dtype=bool)
    cn, cx = reg.cells
    region[:, cn, cx] = t[None, :] <= classes[:, None]
    # a count above the most events that pass at max_launches can never reach fixed; when
    # the rule stops at its first "below", above the most that pass where they are first so
    if reg.first:
        x = np.arange(reg.top + 1)
        fb = np.minimum(reg.first_below, reg.cap)
        at_first = region[:, fb, x] & (reg.first_below <= reg.cap)[None, :]
        reach = np.array([int(np.flatnonzero(r).max(initial=-1)) for r in at_first])
    else:
        reach = np.array([int(np.flatnonzero(r[reg.cap]).max(initial=-1)) for r in region])
    m, width = classes.size, reg.top + 2
    alive = np.zeros((m, rates.size, width))
    alive[reach >= 0, :, 0] = 1.0
    dead = np.arange(width)[None, :] > reach[:, None]  # (m, width)
    q, p = (1.0 - rates)[None, :, None], rates[None, :, None]
    hit = np.zeros((m, rates.size))
    mean = np.zeros((m, rates.size))
    going = np.zeros((reg.cap, rates.size)) if spread else None
    for n in range(1, reg.cap + 1):
        if (n - 1) % _BLOCK == 0:  # the masks of the next launches, as 0/1 factors
            if not alive.any():
                break
            into, keep = _masks(reg, region, dead, n, min(reg.cap + 1, n + _BLOCK))
        here = alive.sum(axis=2)
        mean += here
        if going is not None:
            going[n - 1] = (weight * here).sum(axis=0)
        moved = alive * q
        moved[:, :, 1:] += alive[:, :, :-1] * p
        i = (n - 1) % _BLOCK
        hit += (moved * into[i][:, None, :]).sum(axis=2)
        moved *= keep[i][:, None, :]
        alive = moved
    if by_class:
        return classes, hit
    out = (weight * hit).sum(axis=0), (weight * mean).sum(axis=0)
    return out + ((going.T,) if going is not None else ())


#: launches whose masks :func:`_masks` makes at once
_BLOCK = 64


def _masks(reg: _Regions, region: np.ndarray, dead: np.ndarray, start: int, stop: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """For launches ``start .. stop - 1`` (layers ``(launches, classes, width)``, as 0/1
    floats): ``into``, the cells of each class's region, and ``keep``, the cells the run goes
    on from (not in the region, not stopped as not below, not beyond reach)."""
    m, width = dead.shape
    into = np.zeros((stop - start, m, width), dtype=bool)
    into[:, :, :-1] = region[:, start:stop].transpose(1, 0, 2)
    stop_ = dead[None, :, :] | into
    if reg.first:  # every "below" stops the run, fixed (into) or not
        stop_[:, :, :-1] |= reg.below[start:stop][:, None, :]
    stop_[:, :, :-1] |= reg.not_below[start:stop][:, None, :]
    return into.astype(float), (~stop_).astype(float)


def _regions_for(design: Any, n_b: int, rate: float, first: bool | None = None) -> _Regions:
    if first is None:
        first = bool(getattr(design, "stop_at_first_below", False))
    return _regions_cached(type(design), design.ceiling, design.design_rate, design.alpha,
                           design.beta, design.max_launches, n_b, _xb_top(n_b, rate), first)


def operating_finished(design: Any, n_b: int, p_b: float, p_c: float,
                       level: float | None = None) -> FinishedPoint:
    """Exact chance of ``fixed`` and the distribution of the candidate's launches for a
    finished baseline of ``n_b`` launches at ``p_b`` and a candidate at ``p_c`` under
    ``design`` (its :attr:`comparison_alpha`, or ``level``), by the module's dynamic
    program."""
    level = design.comparison_alpha if level is None else level
    reg = _regions_for(design, n_b, max(p_b, design.ceiling))
    f, e, going = _run(reg, n_b, level, np.array([p_c]), np.array([p_b]), spread=True)
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
    reg = _regions_for(design, n_b, 1.0)  # every count, up to n_b
    classes, hit = _run_classes(reg, n_b, _classes(reg, design.comparison_alpha), rates,
                                rates, by_class=True)
    out = np.zeros((n_b + 1, rates.size))
    for j, least in enumerate(classes):
        out[least:] = hit[j]  # a class takes every count from its least to the next's
    return out


def fixed_chance(design: Any, n_b: int, p_b: float, p_c: float) -> float:
    """Exact chance that the run ends ``fixed`` with a finished baseline of ``n_b`` launches
    at ``p_b`` and a candidate at ``p_c`` (:func:`operating_finished`)."""
    return operating_finished(design, n_b, p_b, p_c).p_fixed


def _max_size(design: Any, n_b: int, level: float,
              seen: dict[bytes, float] | None = None, first: bool | None = None) -> float:
    """``max over pi in (0, ceiling) of S(pi, pi)``: on the grid, then on a fine grid around
    its three largest values; the baseline's tail beyond what is followed counted as
    ``fixed``. ``seen`` keeps the sizes already found by the classes the level makes
    (:func:`_classes`, all the size depends on), so that a bisection computes each once.
    ``first``: the rule's variant (default: ``design``'s ``stop_at_first_below``)."""
    reg = _regions_for(design, n_b, design.ceiling, first)
    t = _classes(reg, level)
    if seen is None:
        return _size_of(design, reg, n_b, t)
    key = t.tobytes()
    if key not in seen:
        seen[key] = _size_of(design, reg, n_b, t)
    return seen[key]


def _size_of(design: Any, reg: _Regions, n_b: int, t: np.ndarray) -> float:
    """:func:`_max_size` for the classes ``t``."""
    c = design.ceiling
    tail = float(stats.binom.sf(reg.xb_top, n_b, c))
    big = reg.cap * reg.xb_top >= _BIG
    grid, fine_n = (25, 9) if big else (_GRID, _FINE)
    coarse = np.linspace(0.0, c, grid + 1)[1:] * (1 - 1e-12)
    values = _run_classes(reg, n_b, t, coarse, coarse)[0]
    step = coarse[1] - coarse[0]
    fine = np.unique(np.concatenate([np.linspace(max(r - step, 1e-9), min(r + step, c * (
        1 - 1e-12)), fine_n) for r in coarse[np.argsort(values)[-3:]]]))
    near = _run_classes(reg, n_b, t, fine, fine)[0]
    return max(float(values.max(initial=0.0)), float(near.max(initial=0.0))) + tail


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
    level) to 0.1%."""
    # the design's own class (kit.analysis.sprt.SprtDesign) makes the candidate side, so that
    # this module never imports sprt, which imports it
    return _level(type(design), design.ceiling, design.design_rate, design.alpha, design.beta,
                  design.max_launches, n_b, bool(getattr(design, "stop_at_first_below", False)))


@functools.lru_cache(maxsize=1024)
def _level(kind: Any, ceiling: float, design_rate: float, alpha: float, beta: float,
           max_launches: int, n_b: int, first: bool = False) -> float:
    design = kind(ceiling, design_rate, alpha, beta, max_launches)
    goal = ALPHA_MARGIN * alpha
    seen: dict[bytes, float] = {}
    known = [-math.inf, math.inf]  # the highest log level known to hold, the lowest not

    def holds(log_level: float) -> bool:
        """Whether the size at ``exp(log_level)`` is at most the goal; answered without
        the program where the size's growth with the level already tells."""
        if log_level <= known[0]:
            return True
        if log_level >= known[1]:
            return False
        good = _max_size(design, n_b, math.exp(log_level), seen, first) <= goal
        known[0 if good else 1] = log_level
        return good

    # a level found for the same baseline and variant (another beta or --launches) is
    # mostly close: its neighbours, tried first, answer most of the bisection's steps (it
    # takes the same steps, so it ends where it would without them)
    top = math.log(MAX_LEVEL)
    key = (kind, ceiling, design_rate, alpha, n_b, first)
    hint = _HINTS.get(key)
    if hint is not None and holds(min(top, hint - _WARM)) and hint + _WARM < top:
        holds(hint + _WARM)
    if holds(top):
        return MAX_LEVEL
    lo, hi = math.log(alpha) - 12.0, top
    while hi - lo > 1e-3:
        mid = (lo + hi) / 2
        if holds(mid):
            lo = mid
        else:
            hi = mid
    _HINTS[key] = lo
    return math.exp(lo)


#: the last log level :func:`_level` found per baseline and variant, and how far either
#: side of it it looks first
_HINTS: dict[tuple[Any, ...], float] = {}
_WARM = 0.02


def max_size(design: Any, n_b: int, level: float) -> float:
    """The largest exact chance of a wrong ``fixed`` below the ceiling at Fisher level
    ``level`` (module doc): what :func:`comparison_level` keeps at ``ALPHA_MARGIN * alpha``."""
    return _max_size(design, n_b, level)
