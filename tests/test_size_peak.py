"""The largest chance of a wrong ``fixed`` below the ceiling is taken where it is, not on a
grid that misses its peak (issue #46, family 10): at a baseline rate of 0.1 and a 5% ceiling
plan's rule (a baseline staged as 17:2 up to 72, ``--beta 0.10048``, 229 launches, the
first-below variant) has its size 0.0463767 at ``p_b = p_c = 0.02744``; the grid found
0.0463638, and the level was calibrated on that."""

from __future__ import annotations

import numpy as np

from kit.analysis import finished, passage
from kit.analysis.finished import max_size, staged_size
from kit.analysis.sprt import ALPHA_MARGIN, SprtDesign

STAGE = (17, 2, 72)
LEVEL = 0.06283133491029437  # the rule's level as the grid calibrated it


def _dense_peak(design: SprtDesign) -> tuple[float, float]:
    """The size on 4001 rates around the peak (the module's own program, vectorised)."""
    rates = np.linspace(0.0270, 0.0279, 4001)
    values = finished._staged_run(design, STAGE, LEVEL, rates, rates, design.ceiling,
                                  first=True)[0]
    return float(rates[values.argmax()]), float(values.max())


def test_the_size_is_taken_at_its_peak_not_on_a_grid() -> None:
    side = SprtDesign(0.05, 0.0125, 0.05, 0.10048000000000004, 229)  # the candidate side
    where, peak = _dense_peak(side)
    assert abs(where - 0.02744) < 2e-4 and peak > 0.0463638 + 1e-6  # the grid's miss
    size = staged_size(side, STAGE, LEVEL, first=True)
    assert size >= peak - 1e-12  # the peak, not below it
    assert size - peak < 1e-6  # and nothing made up above it


def test_the_level_keeps_the_size_at_its_peak_within_the_goal() -> None:
    """A finished baseline's level, calibrated on the size at its peak: the peak at that
    level is within ``ALPHA_MARGIN * alpha`` (checked on a dense grid around the size's
    largest values, not only the kit's own maximiser)."""
    design = SprtDesign(0.05, 0.0125, 0.05, 0.2, 240, 30)
    level = design.comparison_alpha
    goal = ALPHA_MARGIN * 0.05
    assert max_size(design, 30, level) <= goal * (1 + 1e-12)
    reg = passage.regions_for(design, 30, design.ceiling)
    rates = np.linspace(1e-6, 0.05 * (1 - 1e-12), 20001)
    dense = passage.run(reg, 30, level, rates, rates)[0]
    tail = float(passage.stats.binom.sf(reg.xb_top, 30, 0.05))
    assert float(dense.max()) + tail <= max_size(design, 30, level) + 1e-9


def test_the_printed_beta_makes_the_rule_designed() -> None:
    """``plan`` prints ``--beta`` as the very float its rule was made at (the betas it tries
    are kept to 6 digits): the printed command, read back as ``run`` reads it, makes the
    same rule; the 3 digits printed before (0.1 for 0.10048) made another."""
    from kit.analysis.plan import beta_option, short_beta

    beta = short_beta(0.10048000000000004)  # a beta plan's bisection reaches
    design = SprtDesign(0.05, 0.0125, 0.05, beta, 240, 30)
    printed = beta_option(design.beta, 0.2)
    assert printed == " --beta 0.10048"
    again = SprtDesign(0.05, 0.0125, 0.05, float(printed.split()[1]), 240, 30)
    assert again == design and (again.upper, again.lower) == (design.upper, design.lower)
    rounded = SprtDesign(0.05, 0.0125, 0.05, float(f"{design.beta:.3g}"), 240, 30)
    assert (rounded.upper, rounded.lower) != (design.upper, design.lower)
    assert beta_option(0.2, 0.2) == ""
