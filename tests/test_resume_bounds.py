"""Every value read back from ``campaign.json`` and the records is held to the CLI's own
bounds (issue #26, item 4): a hand-edited or corrupt campaign is one line and exit 2, never
a launch counted ``hung`` by a zero timeout, a range of 10**20 launches or a traceback.

The campaigns are made by the real store (tests/helpers/'s ``make_campaign``) and
edited as a user or a broken tool would; the commands are the real ``coldstart``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.campaign import load_campaign
from kit.store.store import CampaignStore
from kit.store.meta import CampaignMeta
from kit.campaign.request import kept_timeout_s
from kit.errors import ColdstartError, DataError
from kit.records import LaunchRecord
from kit.argtypes import MAX_LAUNCHES, MAX_TIMEOUT_S
from tests.conftest import coldstart, one_line_error
from tests.helpers import make_campaign, record


def _edit_meta(path: Path, change: Any) -> None:
    meta_path = path / "campaign.json"
    data = json.loads(meta_path.read_text())
    change(data)
    meta_path.write_text(json.dumps(data))


@pytest.mark.parametrize("value", [0, 1e308])
def test_resume_refuses_a_stored_timeout_out_of_the_clis_bounds(tmp_path: Path,
                                                                  value: Any) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", 0)], scenario="mode=serial")
    _edit_meta(campaign.path, lambda d: d["options"].update(timeout_s=value))
    proc = coldstart("run", "host", "--resume", "--out", str(campaign.path), "--launches", "2",
                     "--no-witness", timeout=120)
    one_line_error(proc, "timeout_s must be a number")
    assert len(load_campaign(campaign.path).records) == 1  # nothing was launched


@pytest.mark.parametrize("value", [10**20])
def test_planned_launches_out_of_bounds_are_one_line_for_every_reader(tmp_path: Path,
                                                                      value: int) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", 0)], scenario="mode=serial")
    _edit_meta(campaign.path, lambda d: d.update(launches=value))
    for args in (("report", str(campaign.path), "--quiet"),
                 ("run", "host", "--resume", "--out", str(campaign.path), "--no-witness")):
        proc = coldstart(*args, timeout=120)
        one_line_error(proc, "launches must be a whole number", progress=False)


@pytest.mark.parametrize("index", [2**64])
def test_a_record_index_out_of_bounds_is_one_line_and_repair_drops_it(tmp_path: Path,
                                                                      index: int) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", i) for i in range(3)],
                             scenario="mode=serial")
    bad = record("base", 3).to_dict()
    bad["index"] = index
    with open(campaign.path / "launches.jsonl", "a") as fh:
        fh.write(json.dumps(bad) + "\n")
    for args in (("compare", str(campaign.path), str(campaign.path)),):
        one_line_error(coldstart(*args, timeout=120), "index must be a whole number in 0..",
                       progress=False)
    proc = coldstart("repair", str(campaign.path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [r.index for r in load_campaign(campaign.path).records] == [0, 1, 2]
    proc = coldstart("report", str(campaign.path), "--quiet", timeout=120)
    assert proc.returncode == 0, proc.stderr


# -- fuzz: random values where campaign.json and the records keep numbers ------------------
_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-(10**40), 10**40),
                  st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                  st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                      st.integers(), max_size=2))
FUZZ = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
_META = {"schema": 1, "label": "base", "target": "host", "scenario": "coldstart://run?mode=serial",
         "launches": 3, "options": {"timeout_s": 30}}
_RULE = {"baseline": "/b", "signature": "xnnpack-allocator-uaf", "alpha": 0.05,
         "ceiling": 0.05, "beta": 0.2, "design_rate": 0.01, "max_launches": 100,
         "stopped": None, "why": ""}


@FUZZ
@given(key=st.sampled_from(["launches", "schema", "timeout_s", *(f"rule.{k}" for k in (
    "alpha", "ceiling", "beta", "design_rate", "max_launches", "baseline_events",
    "baseline_n"))]), value=_JUNK)
def test_any_stored_value_is_in_bounds_or_one_data_error(key: str, value: Any) -> None:
    data = json.loads(json.dumps({**_META, "until_verdict": dict(_RULE)}))
    if key == "timeout_s":
        data["options"]["timeout_s"] = value
    elif key.startswith("rule."):
        data["until_verdict"][key[5:]] = value
    else:
        data[key] = value
    try:
        meta = CampaignMeta.from_dict(json.loads(json.dumps(data)))
        timeout = kept_timeout_s(meta)
    except DataError as exc:
        assert "\n" not in exc.one_line() and len(exc.one_line()) < 600
        return
    assert 1 <= meta.launches <= MAX_LAUNCHES and 0 < timeout <= MAX_TIMEOUT_S
    rule = meta.until_verdict
    assert rule is not None
    for rate in (rule.alpha, rule.ceiling, rule.beta, rule.design_rate):
        assert 0 < rate <= 1 and math.isfinite(rate)
    for count in (rule.max_launches, rule.baseline_events, rule.baseline_n):
        assert count is None or 0 <= count <= MAX_LAUNCHES


@FUZZ
@given(key=st.sampled_from(["index", "attempt", "wall_ms", "exit_code"]), value=_JUNK)
def test_any_record_value_is_in_bounds_or_one_data_error(key: str, value: Any) -> None:
    data = json.loads(json.dumps(record("base", 0).to_dict()))
    data[key] = value
    try:
        parsed = LaunchRecord.from_dict(json.loads(json.dumps(data)), "line 1")
    except ColdstartError as exc:
        assert isinstance(exc, DataError) and "\n" not in exc.one_line()
        return
    assert 0 <= parsed.index < MAX_LAUNCHES and 1 <= parsed.attempt
    assert math.isfinite(parsed.wall_ms)


@pytest.mark.parametrize("value", [-5, "30", None, True])
def test_kept_timeouts_out_of_bounds_are_data_errors(tmp_path: Path, value: Any) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", 0)], scenario="mode=serial")
    _edit_meta(campaign.path, lambda d: d["options"].update(timeout_s=value))
    with pytest.raises(DataError, match="options: timeout_s must be a number"):
        kept_timeout_s(CampaignStore(campaign.path).read_meta())


def test_a_store_reads_back_what_it_wrote_at_the_bounds(tmp_path: Path) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", MAX_LAUNCHES - 1)],
                             scenario="mode=serial")
    assert [r.index for r in CampaignStore(campaign.path).iter_records()] == [MAX_LAUNCHES - 1]


@pytest.mark.parametrize("event", ["bogus", "", "any-crash\n"])
def test_resume_refuses_a_stage_event_that_is_no_crash_class(tmp_path: Path, event: str) -> None:
    """A hand-edited ``stage.event`` is held on ``--resume`` to what ``--event`` takes: one
    line, before any launch."""
    campaign = make_campaign(tmp_path, "base", [record("base", 0)], scenario="mode=serial")
    _edit_meta(campaign.path, lambda d: d.update(
        launches=4, stage={"launches": 2, "events": 1, "event": event}))
    proc = coldstart("run", "host", "--resume", "--out", str(campaign.path), "--no-witness",
                     timeout=120)
    one_line_error(proc, "campaign.json: stage.event")
    assert len(load_campaign(campaign.path).records) == 1  # nothing was launched


def test_until_verdict_over_the_rule_limit_is_refused_before_any_work(tmp_path: Path) -> None:
    """``--until-verdict`` with --launches 1,000,000 once printed "this can take a minute"
    and nothing for 600 s (issue #46 family 5): past MAX_RULE_LAUNCHES it is refused in one
    line before the target is prepared or anything is written."""
    from kit.analysis.sprt import MAX_RULE_LAUNCHES
    from tests.helpers import counts

    base = make_campaign(tmp_path, "base", counts("base", 9, 10))
    out = tmp_path / "cand"
    proc = coldstart("run", "host", "--until-verdict", str(base.path), "--launches",
                     str(MAX_RULE_LAUNCHES + 1), "--out", str(out), "--label", "cand",
                     "--runtime", "no-such-runtime", timeout=60)
    line = one_line_error(proc, f"at most {MAX_RULE_LAUNCHES} launches", progress=False)
    assert f"not {MAX_RULE_LAUNCHES + 1}" in line
    assert not out.exists()
