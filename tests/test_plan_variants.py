"""``coldstart plan``'s finished-baseline rule (issue #27): the faster search picks the same
designs as before it, and it picks the variant of the rule (stop at the first "below the
ceiling", or go on until the comparison holds) with fewer expected launches; the variant
chosen is the one the run's rule, its campaign.json and the verdict follow."""

from __future__ import annotations

import json
import math

import pytest

from kit.analysis.finished import max_size, operating_finished
from kit.analysis.plan import plan_sequential
from kit.analysis.sequential import (COMPARISON_FINISHED, COMPARISON_FINISHED_FIRST,
                                     StopRule)
from kit.analysis.sprt import ALPHA_MARGIN, SprtDesign
from kit.analysis.verdict import VerdictSettings
from kit.errors import DataError
from kit.store.meta import RuleMeta

# the go-on variant's design as `plan` chose it before the search was made faster (the
# integ branch at 4d765b4, plan_sequential(p_b, ceiling=c)): baseline launches, --launches,
# beta, comparison level, exact power and mean launches at the design rate, thresholds
BEFORE = {
    (0.9, 0.3): (4, 25, 0.19, 0.12643082059770716, 0.8067777297810484, 17.72185855780745,
                 2.794406678175115, -1.3790217146150774),
    (0.5, 0.05): (8, 200, 0.16000000000000003, 0.08885619153218222, 0.8275465530075268,
                  112.09971332141787, 2.9258726496449943, -1.3862943682015876),
}


@pytest.mark.parametrize("setting", sorted(BEFORE))
def test_the_go_on_variant_is_designed_as_before(setting: tuple[float, float]) -> None:
    p_b, c = setting
    plan = plan_sequential(p_b, ceiling=c, variants=(False,), staged=False)
    d = plan.design
    n_b, cap, beta, level, power, mean, upper, lower = BEFORE[setting]
    assert not d.stop_at_first_below
    assert (plan.baseline_launches, plan.cap) == (n_b, cap)
    assert d.beta == pytest.approx(beta, rel=1e-12)
    assert d.comparison_alpha == pytest.approx(level, rel=1e-9)
    assert plan.power == pytest.approx(power, abs=1e-12)
    assert plan.expected_launches == pytest.approx(mean, abs=1e-9)
    assert (d.upper, d.lower) == pytest.approx((upper, lower), abs=1e-9)


def test_plan_keeps_the_variant_with_fewer_launches_at_the_same_constraints() -> None:
    p_b, c = 0.9, 0.3
    go_on = plan_sequential(p_b, ceiling=c, variants=(False,), staged=False)
    first = plan_sequential(p_b, ceiling=c, variants=(True,), staged=False)
    both = plan_sequential(p_b, ceiling=c, staged=False)
    assert first.expected_launches < go_on.expected_launches  # 17.46 against 17.72 here
    assert both.design.stop_at_first_below
    assert both.expected_launches == pytest.approx(first.expected_launches, abs=1e-12)
    d = both.design
    assert both.power >= both.reference_power
    assert both.baseline_launches + both.cap <= math.floor(1.3 * both.reference.total_launches)
    assert d.operating(c).p_fixed <= ALPHA_MARGIN * d.alpha
    assert max_size(d, both.baseline_launches, d.comparison_alpha) <= ALPHA_MARGIN * d.alpha
    # the exact figures are the variant's own: recomputed from the design alone
    again = operating_finished(d, both.baseline_launches, p_b, c / 4)
    assert again.p_fixed == pytest.approx(both.power, abs=1e-12)
    assert json.loads(json.dumps(both.to_dict()))["sequential"]["stop_at_first_below"] is True


def _fixed_by_the_rule(rule: StopRule, p: float) -> float:
    """P(the rule's run ends fixed) for a candidate at ``p``, asking the rule at every state."""
    cap = rule.design.max_launches
    alive, fixed = {0: 1.0}, 0.0
    for n in range(1, cap + 1):
        step: dict[int, float] = {}
        for x, w in alive.items():
            step[x] = step.get(x, 0.0) + w * (1 - p)
            step[x + 1] = step.get(x + 1, 0.0) + w * p
        alive = {}
        for x, w in step.items():
            stop, why = rule.decision_counts(x, n)
            if stop:
                fixed += w if why.startswith("fixed:") else 0.0
            elif n == cap:
                from kit.analysis.sequential import sequential_fixed

                fixed += w if sequential_fixed(rule.baseline_events, rule.baseline_n, x, n,
                                               rule.settings, rule.design) else 0.0
            else:
                alive[x] = w
    return fixed


@pytest.mark.parametrize("first", [False, True])
def test_each_variants_exact_figures_are_those_of_its_rule(first: bool) -> None:
    c, n_b, p_b = 0.05, 8, 0.5
    design = SprtDesign(c, c / 4, 0.05, 0.16, 200, n_b, first)
    settings = VerdictSettings(ceiling=c)
    from scipy import stats

    by_rule = sum(stats.binom.pmf(x_b, n_b, p_b) * _fixed_by_the_rule(
        StopRule(design, settings, x_b, n_b), c / 4) for x_b in range(1, n_b + 1))
    assert operating_finished(design, n_b, p_b, c / 4).p_fixed == pytest.approx(by_rule,
                                                                                abs=1e-9)


def test_the_variant_is_kept_in_campaign_json_and_read_back() -> None:
    design = SprtDesign(0.3, 0.075, 0.05, 0.16, 26, 3, True)
    meta = StopRule(design, VerdictSettings(ceiling=0.3), 2, 3).to_meta("b", None, "x")
    assert meta["stop_at_first_below"] is True
    assert meta["comparison"] == COMPARISON_FINISHED_FIRST
    assert RuleMeta.from_dict(meta, "until_verdict").stop_at_first_below is True
    # a rule kept before the field: its comparison text tells (the first version of the
    # finished-baseline rule stopped at its first "below"; the next went on)
    old = {k: v for k, v in meta.items() if k != "stop_at_first_below"}
    assert RuleMeta.from_dict(old, "until_verdict").stop_at_first_below is True
    old["comparison"] = COMPARISON_FINISHED
    assert RuleMeta.from_dict(old, "until_verdict").stop_at_first_below is False
    with pytest.raises(DataError, match="stop_at_first_below"):
        _ = RuleMeta.from_dict({**meta, "stop_at_first_below": "yes"},
                               "until_verdict").stop_at_first_below


def test_run_and_resume_carry_the_variant_to_the_rule_and_the_verdict(tmp_path) -> None:
    import types

    from kit.analysis.compare import _rule_design
    from kit.campaign.request import Given, resolve_rule
    from kit.errors import UsageError

    given = Given(until_verdict=str(tmp_path / "base"),
                  rule={"ceiling": 0.3, "stop_at_first_below": True})
    request = resolve_rule(given, None, tmp_path / "cand", resume=False)
    assert request is not None and request.stop_at_first_below
    design = SprtDesign(0.3, 0.075, 0.05, 0.2, 26, 3, request.stop_at_first_below)
    kept = RuleMeta.from_dict(StopRule(design, VerdictSettings(ceiling=0.3), 2, 3).to_meta(
        str(tmp_path / "base"), None, "not finished"), "until_verdict")
    again = resolve_rule(Given(), kept, tmp_path / "cand", resume=True)
    assert again is not None and again.stop_at_first_below
    with pytest.raises(UsageError):  # a resume cannot switch to the other variant
        resolve_rule(Given(rule={"stop_at_first_below": False}), kept, tmp_path / "cand",
                     resume=True)
    candidate = types.SimpleNamespace(meta=types.SimpleNamespace(until_verdict=kept))
    notes: list[str] = []
    judged = _rule_design(candidate, VerdictSettings(ceiling=0.3), notes)
    assert judged == design and judged.stop_at_first_below and not notes
