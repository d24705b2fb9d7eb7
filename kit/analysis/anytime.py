"""Anytime-valid evidence that the candidate's target rate is lower than the baseline's: the
comparison part of the sequential rules (``--until-verdict``), valid however the launches
were allocated, paused and stopped.

The exact tests of :mod:`kit.analysis.stats` (Fisher's, Boschloo's) hold their level for a
table whose launch counts were fixed in advance. Run again after every launch, or on a
baseline that paused when it looked strong enough, they do not: a candidate as bad as a
baseline at 3% came out ``fixed`` 8.6% (finished baseline) and 14% (interleaved) of the
time at alpha 0.05 (issue #14). The e-value here does not have that problem.

**The e-value** (universal inference: Wasserman, Ramdas & Balakrishnan 2020, "Universal
inference", PNAS 117:16880-16890). For ``x_b`` target events in ``n_b`` baseline launches
and ``x_c`` in ``n_c`` candidate launches::

    E = m(x_b, n_b) * m_c(x_c, n_c) / max over {p_c >= p_b} of L(p_b; x_b, n_b) L(p_c; x_c, n_c)

where ``L(p; x, n) = p^x (1 - p)^(n - x)``, ``m`` is the Jeffreys mixture
``integral of L(p) Beta(p; 1/2, 1/2) dp`` (Krichevsky & Trofimov 1981) and ``m_c`` the same
prior truncated to ``[0, ceiling]`` (``fixed`` also needs the candidate below the ceiling,
so the alternative puts its mass there). The denominator is the null's maximum likelihood:
the two rates' own estimates when the candidate's is not lower, else the pooled rate.

**Why it is valid.** Let the launches come in any order, each build chosen from what was
seen before (a finished baseline first, then the candidate; or ABAB with pauses). The
numerator is the product of the mixtures' predictive probabilities launch by launch, so for
any true ``(p_b, p_c)`` with ``p_c >= p_b`` the ratio ``numerator / L(p_b) L(p_c)`` is a
nonnegative martingale with mean 1, and ``E`` is at most it (the denominator is a maximum
over a set holding the truth). By Ville's inequality (Ville 1939) the chance that ``E`` ever
reaches ``1/alpha``, at any launch, under any stopping rule, is at most ``alpha``. ``E``
depends only on the four counts, so ``compare`` recomputes it from the campaigns.

The price is power: ``E`` needs more evidence than a fixed-size exact test (3/7 vs 0/19
clean candidate launches where Fisher's test needs 0/11; 2/20 vs 0/457 where Fisher needs
0/68), because a sequential guarantee has to hold at every launch.
"""

from __future__ import annotations

import math

from ..errors import UsageError

__all__ = ["log_e_lower", "e_reaches"]


def _check(x: int, n: int) -> None:
    if n < 0 or x < 0 or x > n:
        raise UsageError(f"invalid count {x}/{n}", "counts must satisfy 0 <= k <= n")


def _log_lik(x: int, n: int, p: float) -> float:
    """``log(p^x (1 - p)^(n - x))`` with ``0 log 0 = 0``."""
    out = 0.0
    if x:
        out += x * math.log(p)
    if n - x:
        out += (n - x) * math.log1p(-p)
    return out


def _log_mixture(x: int, n: int, upper: float = 1.0) -> float:
    """``log`` of the Jeffreys mixture of ``L(p; x, n)``, the prior truncated to
    ``[0, upper]`` (``scipy.special.betaln`` and ``betainc``)."""
    from scipy import special

    value = float(special.betaln(x + 0.5, n - x + 0.5) - special.betaln(0.5, 0.5))
    if upper < 1.0:
        inside = float(special.betainc(x + 0.5, n - x + 0.5, upper))
        value += math.log(max(inside, 1e-300)) - math.log(float(special.betainc(0.5, 0.5,
                                                                                upper)))
    return value


def log_e_lower(x_b: int, n_b: int, x_c: int, n_c: int, ceiling: float = 1.0) -> float:
    """``log E`` for "the candidate's rate is lower than the baseline's" (module doc), with
    the candidate's prior on ``[0, ceiling]``. 0 (no evidence) when a build has no launch.

    Known values: 3/7 vs 0/19 at a 5% ceiling gives E = 20.1, just over 1/alpha = 20;
    12/20 vs 0/100 gives E = 8.6e9.

    Raises:
        UsageError: invalid counts, or a ceiling not in (0, 1].
    """
    _check(x_b, n_b)
    _check(x_c, n_c)
    if not 0.0 < ceiling <= 1.0:
        raise UsageError(f"ceiling {ceiling} is not a rate", "give a fraction such as 0.05")
    if n_b == 0 or n_c == 0:
        return 0.0
    numerator = _log_mixture(x_b, n_b) + _log_mixture(x_c, n_c, ceiling)
    if x_c * n_b >= x_b * n_c:  # the candidate's own rate is not lower: unrestricted MLE
        null = _log_lik(x_b, n_b, x_b / n_b) + _log_lik(x_c, n_c, x_c / n_c)
    else:  # the null's maximum is on its boundary, p_b = p_c: the pooled rate
        pooled = (x_b + x_c) / (n_b + n_c)
        null = _log_lik(x_b, n_b, pooled) + _log_lik(x_c, n_c, pooled)
    return numerator - null


def e_reaches(x_b: int, n_b: int, x_c: int, n_c: int, *, alpha: float,
              ceiling: float = 1.0) -> bool:
    """Whether ``E >= 1/alpha``: the comparison part of a sequential ``fixed`` (at most
    ``alpha`` false ``fixed`` however the run was stopped; module doc)."""
    return log_e_lower(x_b, n_b, x_c, n_c, ceiling) >= -math.log(alpha) - 1e-12
