"""The first-passage dynamic program behind :mod:`kit.analysis.finished`: the candidate's
(launches, events) cells where the rule stops, and the chance that a run at each candidate
rate enters the region where ``fixed`` holds against each class of baseline counts (the
module doc of :mod:`kit.analysis.finished` states the rule and its guarantee).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from .binomial import k_max_cached
from .stats import P_RTOL, fisher_p_vector, stats

__all__ = ["Regions", "regions", "regions_for", "xb_top", "run", "level_classes",
           "run_classes", "layers", "weighed", "passage", "TAIL"]

#: baseline counts whose chance is below this at every rate looked at are lumped with the
#: largest one kept (their ``fixed`` chance counted as 1 in a size: conservative)
TAIL = 1e-15


@dataclasses.dataclass(frozen=True)
class Regions:
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


def regions(design: Any, n_b: int, xb_top: int, first: bool = False) -> Regions:
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
    return Regions(cap, top, below, not_below, fisher, (cn, cx), xb_top, first, first_below)


@functools.lru_cache(maxsize=32)
def regions_cached(kind: Any, ceiling: float, design_rate: float, alpha: float, beta: float,
                    max_launches: int, n_b: int, xb_top: int, first: bool = False) -> Regions:
    return regions(kind(ceiling, design_rate, alpha, beta, max_launches), n_b, xb_top, first)


def xb_top(n_b: int, rate: float) -> int:
    """The largest baseline count worth following at rates up to ``rate``."""
    return max(1, min(n_b, int(stats.binom.isf(TAIL, n_b, min(rate, 1.0))) + 1))


def run(reg: Regions, n_b: int, level: float, rates: np.ndarray, p_b: np.ndarray,
         spread: bool = False) -> tuple[np.ndarray, ...]:
    """``(P(fixed), mean candidate launches)`` at each pair ``(p_b[r], rates[r])``: the
    first-passage dynamic program (module doc), one layer per class of baseline counts with
    the same region; with ``spread``, also ``P(N >= n)`` for ``n = 1..cap`` (rates x cap)."""
    return run_classes(reg, n_b, level_classes(reg, level), rates, p_b, spread)


def level_classes(reg: Regions, level: float) -> np.ndarray:
    """``t``: the fewest baseline events (``1..xb_top``; ``xb_top + 1``: none) that pass at
    ``level`` against each below cell: all :func:`run` reads of the level."""
    passes = reg.fisher <= level * (1.0 + P_RTOL)
    return np.where(passes.any(axis=1), passes.argmax(axis=1) + 1, reg.xb_top + 1)


def run_classes(reg: Regions, n_b: int, t: np.ndarray, rates: np.ndarray, p_b: np.ndarray,
                 spread: bool = False, by_class: bool = False,
                 pmf: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """:func:`run` for the classes ``t`` of :func:`level_classes`; with ``by_class``, instead
    ``(classes, hit, mean)``: each class's least baseline count, its chance of ``fixed`` and
    its mean candidate launches at each rate (``p_b`` unused). ``pmf``: the baseline's
    count distribution, ``pmf[x, r]`` for ``x = 0..n_b`` (a staged baseline's, which is not
    binomial), in place of ``Bin(n_b, p_b[r])``."""
    rates = np.asarray(rates, dtype=float)
    classes, region, weight = layers(reg, n_b, t, rates, p_b, pmf)
    if by_class:
        hit, mean, _going = passage(reg, region, rates, False)
        return classes, hit, mean
    return weighed(reg, region, weight, rates, spread)


def layers(reg: Regions, n_b: int, t: np.ndarray, rates: np.ndarray, p_b: np.ndarray,
            pmf: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(classes, region, weight)``: each class's least baseline count, its region of
    candidate cells ``(classes, cap + 1, top + 1)`` and its chance at each rate,
    ``P(u_j <= X_b < u_{j+1})`` (the last takes the tail above ``xb_top``)."""
    classes = np.unique(t[t <= reg.xb_top])
    edges = np.concatenate([classes, [n_b + 1]])
    if pmf is None:
        cdf = stats.binom.cdf(edges[:, None] - 1, n_b, np.asarray(p_b)[None, :])
        weight = cdf[1:] - cdf[:-1]
        if classes.size:
            weight[-1] = 1.0 - cdf[-2]
    else:  # P(X_b < k) for k = 0..n_b + 1, at the class edges
        cdf = np.concatenate([np.zeros((1, rates.size)), np.cumsum(pmf, axis=0)])[edges]
        weight = cdf[1:] - cdf[:-1]
    region = np.zeros((classes.size,) + reg.below.shape, dtype=bool)
    cn, cx = reg.cells
    region[:, cn, cx] = t[None, :] <= classes[:, None]
    return classes, region, weight


def weighed(reg: Regions, region: np.ndarray, weight: np.ndarray, rates: np.ndarray,
             spread: bool) -> tuple[np.ndarray, ...]:
    """``(P(fixed), mean launches[, P(N >= n)])`` at each rate for the layers ``region``
    with chances ``weight``; layers with the same region are run once."""
    if region.shape[0] == 0:
        return (np.zeros(rates.size), np.zeros(rates.size)) + (
            (np.zeros((rates.size, reg.cap)),) if spread else ())
    # the layers' regions as one byte string each (8 cells a byte, in order: the same
    # order as the rows themselves), compared whole: np.unique(axis=0) on the cells took
    # a third of a plan's time (issue #46)
    packed = np.ascontiguousarray(np.packbits(region.reshape(region.shape[0], -1), axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    _u, first, which = np.unique(keys, return_index=True, return_inverse=True)
    which = np.asarray(which).reshape(-1)
    w = np.zeros((first.size, rates.size))
    np.add.at(w, which, weight)
    hit, mean, going = passage(reg, region[first], rates, spread, w)
    out = (w * hit).sum(axis=0), (w * mean).sum(axis=0)
    return out + ((going.T,) if going is not None else ())


def passage(reg: Regions, region: np.ndarray, rates: np.ndarray, spread: bool,
             weight: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The first-passage program for each layer's region: ``(hit, mean, going)``, each
    layer's chance of entering its region and mean candidate launches at each rate, and
    with ``spread`` the ``weight``-ed ``P(N >= n)`` for ``n = 1..cap`` (cap x rates)."""
    # a count above the most events that pass at max_launches can never reach fixed; when
    # the rule stops at its first "below", above the most that pass where they are first so
    if reg.first:
        assert reg.first_below is not None  # made whenever first is
        x = np.arange(reg.top + 1)
        fb = np.minimum(reg.first_below, reg.cap)
        at_first = region[:, fb, x] & np.asarray(reg.first_below <= reg.cap)[None, :]
        reach = np.array([int(np.flatnonzero(r).max(initial=-1)) for r in at_first])
    else:
        reach = np.array([int(np.flatnonzero(r[reg.cap]).max(initial=-1)) for r in region])
    m, width = region.shape[0], reg.top + 2
    alive = np.zeros((m, rates.size, width))
    if m:
        alive[reach >= 0, :, 0] = 1.0
    dead = np.arange(width)[None, :] > reach[:, None]  # (m, width)
    q, p = (1.0 - rates)[None, :, None], rates[None, :, None]
    hit = np.zeros((m, rates.size))
    mean = np.zeros((m, rates.size))
    going = np.zeros((reg.cap, rates.size)) if spread else None
    for n in range(1, reg.cap + 1):
        if (n - 1) % BLOCK == 0:  # the masks of the next launches, as 0/1 factors
            if not alive.any():
                break
            into, keep = masks(reg, region, dead, n, min(reg.cap + 1, n + BLOCK))
        here = alive.sum(axis=2)
        mean += here
        if going is not None and weight is not None:
            going[n - 1] = (weight * here).sum(axis=0)
        moved = alive * q
        moved[:, :, 1:] += alive[:, :, :-1] * p
        i = (n - 1) % BLOCK
        hit += (moved * into[i][:, None, :]).sum(axis=2)
        moved *= keep[i][:, None, :]
        alive = moved
    return hit, mean, going


#: launches whose masks :func:`masks` makes at once
BLOCK = 64


def masks(reg: Regions, region: np.ndarray, dead: np.ndarray, start: int, stop: int
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


def regions_for(design: Any, n_b: int, rate: float, first: bool | None = None) -> Regions:
    if first is None:
        first = bool(getattr(design, "stop_at_first_below", False))
    kind: Any = type(design)  # a class is hashable: the cache's key
    return regions_cached(kind, design.ceiling, design.design_rate, design.alpha,
                           design.beta, design.max_launches, n_b, xb_top(n_b, rate), first)
