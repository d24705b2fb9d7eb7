"""One loop for every arm (kit/campaign/loop.py, interleave.py): retry, the infra-error budget
and the stop on a persistent infra error hold per build for the whole run, single or
interleaved."""

from __future__ import annotations

from pathlib import Path

from kit.analysis.sequential import InterleavedRule
from kit.analysis.sprt import SprtDesign
from kit.analysis.verdict import VerdictSettings
from kit.campaign import RetryPolicy, load_campaign, run_campaign
from tests.helpers import prepare_store
from kit.campaign.interleave import Arm, run_interleaved
from kit.records import Outcome
from kit.scenario import parse_scenario
from tests.doubles.scripted_launcher import RESOURCE_LIMIT_ERROR, ScriptedLauncherDouble

SCENARIO = parse_scenario("mode=concurrent")
RULE = InterleavedRule(SprtDesign(0.5, 0.125), VerdictSettings(ceiling=0.5))


def _arm(out: Path, label: str, launcher: ScriptedLauncherDouble, launches: int,
         retry: RetryPolicy) -> Arm:
    store, records = prepare_store(out / label, label=label, target="host", scenario=SCENARIO,
                                   launches=launches, resume=False)
    return Arm(store, records, [launcher], label, SCENARIO, launches, 5.0, retry)


def _fast(**kw: object) -> RetryPolicy:
    return RetryPolicy(backoff_s=0.0, backoff_cap_s=0.0, **kw)  # type: ignore[arg-type]


def test_a_single_campaign_stops_after_one_persistent_infra_error(tmp_path: Path) -> None:
    store, records = prepare_store(tmp_path / "c", label="base", target="host",
                                   scenario=SCENARIO, launches=20, resume=False)
    launcher = ScriptedLauncherDouble(lambda i, a: "persistent")
    out = run_campaign(store, records, [launcher], label="base", scenario=SCENARIO,
                       launches=20, timeout_s=5, retry=_fast())
    assert launcher.calls == [(0, 1)]
    assert [r.outcome for r in out] == [Outcome.INFRA_ERROR]


def test_an_interleaved_run_stops_after_one_persistent_infra_error(tmp_path: Path) -> None:
    for n, rule in enumerate((RULE, None)):
        launchers = [ScriptedLauncherDouble(lambda i, a: "persistent", device=f"d{k}")
                     for k in (1, 2)]
        base, cand = (_arm(tmp_path / str(n), lab, lr, 30, _fast())
                      for lab, lr in zip(("base", "cand"), launchers))
        result = run_interleaved(base, cand, rule)
        assert launchers[0].calls == [(0, 1)] and launchers[1].calls == []
        assert result.why.startswith("the baseline (base) stopped: a persistent infra error")
        assert RESOURCE_LIMIT_ERROR in result.why
        assert len(load_campaign(tmp_path / str(n) / "base").records) == 1
        assert len(load_campaign(tmp_path / str(n) / "cand").records) == 0
        assert run_interleaved(base, cand, rule).why == result.why  # halted: no launch
        assert launchers[0].calls == [(0, 1)]


def test_a_persistent_candidate_stops_the_pair_too(tmp_path: Path) -> None:
    good = ScriptedLauncherDouble(lambda i, a: "crashed", device="b")
    bad = ScriptedLauncherDouble(lambda i, a: "persistent", device="c")
    result = run_interleaved(_arm(tmp_path, "base", good, 30, _fast()),
                             _arm(tmp_path, "cand", bad, 30, _fast()), RULE)
    assert good.calls == [(0, 1)] and bad.calls == [(0, 1)]
    assert result.why.startswith("the candidate (cand) stopped: a persistent infra error")
    assert [r.outcome for r in result.candidate_records] == [Outcome.INFRA_ERROR]


def test_the_infra_budget_holds_for_the_whole_interleaved_run(tmp_path: Path) -> None:
    # every first attempt is an infra error and its retry completes: one budget unit per
    # round; a budget of 1 per build is spent in the baseline's second round
    scripts = [ScriptedLauncherDouble(lambda i, a: "raise" if a == 1 else "completed",
                                      device=f"d{n}") for n in (1, 2)]
    base, cand = (_arm(tmp_path, lab, lr, 10, _fast(budget=1))
                  for lab, lr in zip(("base", "cand"), scripts))
    result = run_interleaved(base, cand, None)
    assert scripts[0].calls == [(0, 1), (0, 2), (1, 1)]
    assert scripts[1].calls == [(0, 1), (0, 2)]
    assert result.why == ("the baseline (base) stopped: its infra-error budget (1, "
                          "--infra-budget) is spent")
    assert base.budget_left == -1 and cand.budget_left == 0


def test_the_infra_budget_ends_a_pair_that_only_ever_fails(tmp_path: Path) -> None:
    scripts = [ScriptedLauncherDouble(lambda i, a: "raise", device=f"d{n}") for n in (1, 2)]
    base, cand = (_arm(tmp_path, lab, lr, 40, _fast(budget=4))
                  for lab, lr in zip(("base", "cand"), scripts))
    result = run_interleaved(base, cand, RULE)
    # 5 infra errors spend a budget of 4: slot 0's three attempts, slot 1's first two
    assert scripts[0].calls == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2)]
    assert scripts[1].calls == [(0, 1), (0, 2), (0, 3)]
    assert "infra-error budget (4, --infra-budget) is spent" in result.why
    assert len(result.baseline_records) == 5 and len(result.candidate_records) == 3
