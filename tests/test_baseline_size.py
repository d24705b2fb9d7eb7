"""A finished baseline's size must be fixed before it runs for the exact comparison
(kit.analysis.summary.size_not_fixed): one extended, interrupted or stopped on its own
results is compared by the anytime-valid e-value, by the rule and by compare."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.analysis.sequential import COMPARISON, COMPARISON_FINISHED, make_stop_rule
from kit.analysis.summary import size_not_fixed
from kit.analysis.verdict import Verdict, VerdictSettings, compare_campaigns
from kit.campaign import load_campaign
from kit.store.store import CampaignStore
from kit.errors import DataError
from kit.store.meta import CampaignMeta
from tests.helpers import counts, make_campaign, update_meta


def test_a_baseline_of_its_planned_size_gets_the_exact_level(tmp_path: Path) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 3, 20))
    assert size_not_fixed(base) is None
    rule = make_stop_rule(base, VerdictSettings(), max_launches=306)
    assert rule.not_exact is None and rule.design.finished
    assert rule.design.comparison_alpha == pytest.approx(0.1104, abs=1e-3)
    assert rule.to_meta(str(base.path), None, "")["comparison"] == COMPARISON_FINISHED
    # 3/20 against a clean candidate: the exact comparison settles at the SPRT's first stop
    assert next(n for n in range(1, 307) if rule.decision_counts(0, n)[0]) == 74


@pytest.mark.parametrize("how, reason", [
    ("extended", "its planned launches were raised from 12 to 20 after launches had been "
                 "made (--resume --launches)"),
    ("interrupted", "campaign made 20 of its 30 planned launches (interrupted: finish it "
                    "with --resume)"),
    ("rule", "it ran under --until-verdict, which stopped it on its own results")])
def test_a_baseline_whose_size_followed_its_results_is_compared_by_the_e_value(
        tmp_path: Path, how: str, reason: str) -> None:
    base = make_campaign(tmp_path, "b", counts("b", 3, 20))
    store = CampaignStore(base.path)
    if how == "extended":
        update_meta(store, extended_from=[12])
    elif how == "interrupted":
        update_meta(store, launches=30)
    else:
        other = make_stop_rule(counts("x", 5, 10), VerdictSettings(), max_launches=306)
        update_meta(store, until_verdict=other.to_meta("elsewhere", True, "fixed"))
    base = load_campaign(base.path)
    assert size_not_fixed(base) == reason
    rule = make_stop_rule(base, VerdictSettings(), max_launches=306)
    assert rule.not_exact == reason
    assert not rule.design.finished and rule.design.max_launches == 306
    kept = rule.to_meta(str(base.path), None, "")
    assert kept["comparison"] == COMPARISON and "comparison_alpha" not in kept
    assert kept["not_exact"] == f"the baseline's size was not fixed before it ran: {reason}"
    # the e-value needs more clean launches than the exact level (106 against 74)
    assert next(n for n in range(1, 307) if rule.decision_counts(0, n)[0]) == 106


def test_compare_judges_by_the_e_value_when_the_baseline_turns_out_extended(
        tmp_path: Path) -> None:
    # a rule kept with the exact level, and a baseline whose campaign.json says it was
    # extended (a kit before extended_from made the rule, or the files were copied)
    base = make_campaign(tmp_path, "b", counts("b", 3, 20))
    rule = make_stop_rule(base, VerdictSettings(), max_launches=306)
    cand = make_campaign(tmp_path, "c", counts("c", 0, 74))
    update_meta(CampaignStore(cand.path), until_verdict=rule.to_meta(str(base.path), True,
                                                                      "fixed"))
    cand = load_campaign(cand.path)
    assert compare_campaigns(base, cand).verdict is Verdict.FIXED
    update_meta(CampaignStore(base.path), extended_from=[15])
    judged = compare_campaigns(load_campaign(base.path), cand)
    assert judged.verdict is Verdict.INCONCLUSIVE
    assert judged.decision.e_value is not None and judged.decision.e_value < 20
    assert any("but the baseline's was not (its planned launches were raised from 15 to 20"
               in note and "judged by the anytime-valid e-value instead" in note
               for note in judged.notes), judged.notes


def test_extended_from_is_read_typed_and_written_back() -> None:
    base = {"label": "b", "target": "host", "scenario": "mode=concurrent", "launches": 30}
    meta = CampaignMeta.from_dict({**base, "extended_from": [12, 20]})
    assert meta.extended_from == [12, 20] and meta.to_dict()["extended_from"] == [12, 20]
    assert "extended_from" not in CampaignMeta.from_dict(base).to_dict()
    for bad in ("12", [0], [1.5], [True], [None], {"a": 1}):
        with pytest.raises(DataError, match="extended_from must be a list of whole numbers"):
            CampaignMeta.from_dict({**base, "extended_from": bad})


@pytest.mark.parametrize("first", [False, True])
def test_fixed_by_count_mixes_into_the_finished_rules_exact_chance(first: bool) -> None:
    from scipy import stats

    from kit.analysis.finished import fixed_by_count, operating_finished
    from kit.analysis.sprt import SprtDesign

    design = SprtDesign(0.05, 0.0125, 0.05, 0.2, 200, 15, first)
    f = fixed_by_count(design, 15, [0.0125, 0.03])
    assert f.shape == (16, 2) and f[0].tolist() == [0.0, 0.0]  # no event: never fixed
    assert (f[1:] >= f[:-1] - 1e-15).all()  # more baseline events never lose a fixed
    for p_b in (0.3, 0.03):
        weights = stats.binom.pmf(range(16), 15, p_b)
        for j, p_c in enumerate((0.0125, 0.03)):
            assert weights @ f[:, j] == pytest.approx(
                operating_finished(design, 15, p_b, p_c).p_fixed, abs=1e-12)


def test_a_baseline_extended_when_weak_would_break_alpha_at_its_own_levels() -> None:
    # why extension must not keep the exact level: 30 launches, extended to 60 when they
    # show fewer than 2 events, each size judged at its own exact level, has a false-fixed
    # chance above alpha, where each size alone keeps 0.95 alpha
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_baseline_extension",
        Path(__file__).resolve().parent.parent / "benchmarks" / "bench_baseline_extension.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    worst, p_b, p_c, alone = bench.extension_size(0.05, 241, 30, 2, 60, False)
    assert alone <= 0.0475 + 1e-9
    assert worst > 0.05 and p_b == p_c
