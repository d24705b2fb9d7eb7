"""The exact comparison level of a sequential run against a *finished* baseline
(``coldstart run ... --until-verdict DIR`` with ``--launches``): how small Fisher's one-sided
p must be, at the candidate's stop, for ``fixed`` to keep its error rate, computed by
dynamic programming instead of an anytime-valid e-value.

The run (:class:`kit.analysis.sequential.StopRule` with a design that has
``baseline_launches``) makes the candidate's launches one by one and stops the first time its
SPRT state is "below the ceiling" (:meth:`kit.analysis.sprt.SprtDesign.state`), or at its
``max_launches``. It says ``fixed`` there when Fisher's one-sided p of the baseline's
``x_b / n_b`` against the candidate's ``x / n`` is at most the level ``a_B`` found here, and
the Clopper-Pearson bound is below the ceiling (the SPRT's state needs it). ``a_B`` is the
level of the whole sequential rejection region, so it replaces the fixed-size test's alpha
for such a run, and can be above alpha.

**The guarantee.** A wrong ``fixed`` has the candidate's rate at or above the ceiling or at
or above the baseline's (docs/verdict.md). At or above the ceiling the candidate's side alone
ends "below the ceiling" with chance at most ``ALPHA_MARGIN * alpha`` (the SPRT's exact
thresholds). Below it, with ``p_b <= p_c < ceiling``: the run is a first-passage problem of
the candidate's counts, so the chance of ``fixed`` is

    S(p_b, p_c) = sum over first stops (n, x) of P_{p_c}(first stop at (n, x)) *
                  P(Bin(n_b, p_b) >= t(n, x))

where ``t(n, x)`` is the fewest baseline events with Fisher's p <= ``a_B`` against ``x/n``.
``S`` rises with ``p_b`` (more baseline events), so its largest value under the null is at
``p_b = p_c = pi``; ``a_B`` is the largest level with ``max over pi of S(pi, pi) <=
ALPHA_MARGIN * alpha``. The first-stop distribution is one dynamic program over (launches,
events) per ``pi`` (vectorised over a grid of 161 rates in ``(0, ceiling)``, then refined
around the largest three), in which "not below the ceiling" does not stop the run: the rule's
own stop there, and the stop when ``fixed`` is out of reach, only remove ``fixed`` outcomes,
so the level holds with or without them (also for a run resumed past such a stop). This is
Boschloo's construction (maximising the size over the nuisance rate) applied to the
sequential rejection region, as exact group-sequential tests of two binomials are computed
(Jennison & Turnbull 2000, *Group Sequential Methods with Applications to Clinical Trials*,
ch. 12 and 19).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from .binomial import ALPHA_MARGIN, k_max_cached
from .stats import P_RTOL, fisher_p_vector, stats

__all__ = ["FirstStops", "first_stops", "comparison_level", "max_size", "size_at",
           "fixed_chance", "MAX_LEVEL"]

#: the grid of common rates on which the size is maximised, before refining
_GRID = 161
#: first stops at the refined rates, by design and rates (:func:`_max_size`)
_NEAR: dict[tuple[Any, ...], "FirstStops"] = {}


@dataclasses.dataclass(frozen=True)
class FirstStops:
    """Where the candidate's run first stops, for several true rates.

    Attributes:
        n, x: the stops (launches, events), one entry per stop; those at ``max_launches``
            are the undecided runs whose bound is below the ceiling there.
        mass: ``mass[r, i]``: the chance at ``rates[r]`` that the run stops first at
            ``(n[i], x[i])``.
        rates: the true candidate rates.
    """

    n: np.ndarray
    x: np.ndarray
    mass: np.ndarray
    rates: np.ndarray


def first_stops(design: Any, rates: np.ndarray) -> FirstStops:
    """The first-stop distribution of ``design``'s candidate side (module doc) for each rate
    in ``rates`` at once: where the run first stops "below the ceiling", or ends at
    ``max_launches`` with its bound below it; a stop as "not below the ceiling" ends the run
    (the rule stops there, and the SPRT's thresholds are calibrated so). States with more
    events than ``k_max(max_launches)`` can never stop "below" (the bound only holds for
    fewer) and are left out; nothing else is dropped."""
    cap = design.max_launches
    k_max = k_max_cached(cap, design.ceiling, design.alpha)
    rates = np.asarray(rates, dtype=float)
    top = k_max[cap]
    alive = np.zeros((rates.size, top + 2))
    alive[:, 0] = 1.0
    q, p = (1.0 - rates)[:, None], rates[:, None]
    ns, xs, masses = [], [], []
    x = np.arange(top + 2)
    for n in range(1, cap + 1):
        moved = alive * q
        moved[:, 1:] += alive[:, :-1] * p
        moved[:, -1] = 0.0  # beyond k_max(cap): can never stop below
        llr = x * design.step_event + (n - x) * design.step_clean
        stop = (llr >= design.upper) & (x <= k_max[n]) if n < cap else x <= top
        for i in np.flatnonzero(stop & (moved.max(axis=0) > 0.0)):
            ns.append(n)
            xs.append(int(i))
            masses.append(moved[:, i].copy())
        moved[:, stop | ((llr <= design.lower) & (x > k_max[n]))] = 0.0  # stopped
        alive = moved
    mass = np.array(masses).T if masses else np.zeros((rates.size, 0))
    return FirstStops(np.array(ns, dtype=np.int64), np.array(xs, dtype=np.int64), mass, rates)


def _thresholds(n_b: int, stops: FirstStops, level: float) -> np.ndarray:
    """``t(n, x)`` for every stop: the fewest baseline events in ``n_b`` launches whose
    Fisher one-sided p against ``x/n`` is <= ``level`` (with :data:`P_RTOL`); ``n_b + 1``
    where none is. Fisher's p falls as the baseline's events rise, so a vectorised
    bisection finds them."""
    lo = np.ones(stops.n.size, dtype=np.int64)
    hi = np.full(stops.n.size, n_b + 1, dtype=np.int64)
    cut = level * (1.0 + P_RTOL)
    while (lo < hi).any():
        mid = (lo + hi) // 2
        ok = np.where(mid <= n_b, fisher_p_vector(np.minimum(mid, n_b), n_b, stops.x,
                                                  stops.n) <= cut, True)
        hi = np.where((lo < hi) & ok, mid, hi)
        lo = np.where((lo < hi) & ~ok, mid + 1, lo)
    return lo


def size_at(stops: FirstStops, t: np.ndarray, n_b: int, p_b: np.ndarray | float
            ) -> np.ndarray:
    """``S(p_b, rates)``: the chance of ``fixed`` at each of ``stops.rates`` for a baseline
    of ``n_b`` launches at ``p_b`` (one value, or one per rate), given the thresholds ``t``
    (:func:`_thresholds`)."""
    p_b = np.broadcast_to(np.asarray(p_b, dtype=float), stops.rates.shape)
    tail = stats.binom.sf(t[None, :] - 1, n_b, p_b[:, None])
    return (stops.mass * tail).sum(axis=1)


def _max_size(design: Any, n_b: int, level: float, coarse: FirstStops) -> float:
    """``max over pi in (0, ceiling) of S(pi, pi)``: on the coarse grid, then on a fine
    grid around its three largest values."""
    values = size_at(coarse, _thresholds(n_b, coarse, level), n_b, coarse.rates)
    best = float(values.max(initial=0.0))
    step = coarse.rates[1] - coarse.rates[0]
    fine = np.unique(np.concatenate([np.linspace(max(r - step, 1e-9), min(
        r + step, design.ceiling * (1 - 1e-12)), 21) for r in coarse.rates[np.argsort(
            values)[-3:]]]))
    key = (design.ceiling, design.design_rate, design.alpha, design.beta,
           design.max_launches, fine.tobytes())
    near = _NEAR.get(key)
    if near is None:  # the bisection asks for the same neighbourhoods again and again
        near = _NEAR[key] = first_stops(design, fine)
        if len(_NEAR) > 256:
            _NEAR.pop(next(iter(_NEAR)))
    return max(best, float(size_at(near, _thresholds(n_b, near, level), n_b, fine).max()))


def _coarse(design: Any) -> FirstStops:
    return first_stops(design, np.linspace(0.0, design.ceiling, _GRID + 1)[1:] * (
        1 - 1e-12))


#: the largest comparison level searched: a wider region than this is never needed for a
#: size of 0.95 alpha at the usual alphas, and Fisher's p of 1/2 means no evidence at all
MAX_LEVEL = 0.5


def comparison_level(design: Any, n_b: int) -> float:
    """The largest Fisher level ``a_B`` (at most :data:`MAX_LEVEL`) whose exact chance of a
    wrong ``fixed``, maximised over a common rate below the ceiling, is at most
    ``ALPHA_MARGIN * alpha``, for a finished baseline of ``n_b`` launches and ``design``'s
    candidate side (module doc). It can be above ``alpha``: the first stop below the
    ceiling is itself a strong condition, and the level is that of the whole sequential
    rejection region, not of a fixed-size test. Found by bisection on ``log a_B`` (the size
    only grows with the level) to 0.1%."""
    # the design's own class (kit.analysis.sprt.SprtDesign) makes the candidate side, so that
    # this module never imports sprt, which imports it
    return _level(type(design), design.ceiling, design.design_rate, design.alpha, design.beta,
                  design.max_launches, n_b)


@functools.lru_cache(maxsize=64)
def _level(kind: Any, ceiling: float, design_rate: float, alpha: float, beta: float,
           max_launches: int, n_b: int) -> float:
    design = kind(ceiling, design_rate, alpha, beta, max_launches)
    goal = ALPHA_MARGIN * alpha
    coarse = _coarse(design)
    if _max_size(design, n_b, MAX_LEVEL, coarse) <= goal:
        return MAX_LEVEL
    lo, hi = math.log(alpha) - 12.0, math.log(MAX_LEVEL)
    while hi - lo > 1e-3:
        mid = (lo + hi) / 2
        if _max_size(design, n_b, math.exp(mid), coarse) <= goal:
            lo = mid
        else:
            hi = mid
    return math.exp(lo)


def max_size(design: Any, n_b: int, level: float) -> float:
    """The largest exact chance of a wrong ``fixed`` below the ceiling at Fisher level
    ``level`` (module doc): what :func:`comparison_level` keeps at ``ALPHA_MARGIN * alpha``."""
    return _max_size(design, n_b, level, _coarse(design))


def fixed_chance(design: Any, n_b: int, p_b: float, p_c: float) -> float:
    """Exact chance that the run ends ``fixed`` with a finished baseline of ``n_b`` launches
    at ``p_b`` and a candidate at ``p_c`` (the rule's own stops removed nothing from it)."""
    stops = first_stops(design, np.array([p_c]))
    t = _thresholds(n_b, stops, design.comparison_alpha)
    return float(size_at(stops, t, n_b, p_b)[0])
