"""Campaign store and loop: append/flush, resume, infra-error retries (kit/campaign.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.campaign import load_campaign, run_campaign
from tests.helpers import prepare_store
from kit.errors import DataError, UsageError
from kit.records import Outcome
from kit.scenario import parse_scenario
from tests.doubles.scripted_launcher import ScriptedLauncherDouble

SCENARIO = parse_scenario("mode=concurrent")


def _run(out: Path, launcher: ScriptedLauncherDouble, launches: int, resume: bool = False,
         **kw: object):
    store, records = prepare_store(out, label="base", target="host", scenario=SCENARIO,
                                   launches=launches, resume=resume)
    return run_campaign(store, records, [launcher], label="base", scenario=SCENARIO,
                        launches=launches, timeout_s=5, **kw)


def test_every_record_is_appended_as_one_json_line(tmp_path: Path) -> None:
    launcher = ScriptedLauncherDouble(lambda i, a: "crashed" if i == 1 else "completed")
    _run(tmp_path / "c", launcher, 3)
    lines = (tmp_path / "c" / "launches.jsonl").read_text().splitlines()
    assert [json.loads(l)["launch_id"] for l in lines] == ["base-00000", "base-00001",
                                                           "base-00002"]
    campaign = load_campaign(tmp_path / "c")
    assert [r.outcome for r in campaign.records] == [Outcome.COMPLETED, Outcome.CRASHED,
                                                     Outcome.COMPLETED]
    assert campaign.meta.scenario == SCENARIO.key()
    assert (tmp_path / "c" / "artifacts" / "base-00001" / "stdout.txt").exists()


def test_infra_errors_are_retried_kept_and_never_counted(tmp_path: Path) -> None:
    # slot 1 fails twice (once by exception, once by record), then completes
    def script(index: int, attempt: int) -> str:
        if index == 1 and attempt == 1:
            return "raise"
        if index == 1 and attempt == 2:
            return "infra-error"
        return "completed"

    launcher = ScriptedLauncherDouble(script)
    records = _run(tmp_path / "c", launcher, 3)
    assert sorted(launcher.calls) == [(0, 1), (1, 1), (1, 2), (1, 3), (2, 1)]
    assert [r.launch_id for r in records if not r.counted] == ["base-00001", "base-00001.r2"]
    assert "device offline" in records[1].error
    campaign = load_campaign(tmp_path / "c")
    assert len(campaign.counted) == 3 and len(campaign.infra_errors) == 2


def test_infra_retries_stop_at_max_attempts(tmp_path: Path) -> None:
    launcher = ScriptedLauncherDouble(lambda i, a: "raise")
    records = _run(tmp_path / "c", launcher, 1, max_attempts=2)
    assert launcher.calls == [(0, 1), (0, 2)]
    assert [r.outcome for r in records] == [Outcome.INFRA_ERROR, Outcome.INFRA_ERROR]


def test_resume_runs_exactly_the_missing_slots(tmp_path: Path) -> None:
    def stop_at_three(ctx) -> None:
        if ctx.index == 3:
            raise KeyboardInterrupt

    first = ScriptedLauncherDouble(lambda i, a: "completed", on_launch=stop_at_three)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "c", first, 6)
    assert len(load_campaign(tmp_path / "c").records) == 3
    second = ScriptedLauncherDouble(lambda i, a: "completed")
    records = _run(tmp_path / "c", second, 6, resume=True)
    assert second.calls == [(3, 1), (4, 1), (5, 1)]
    assert sorted(r.index for r in records) == [0, 1, 2, 3, 4, 5]


def test_resume_drops_a_line_cut_by_kill(tmp_path: Path) -> None:
    _run(tmp_path / "c", ScriptedLauncherDouble(lambda i, a: "completed"), 2)
    path = tmp_path / "c" / "launches.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[0][:40])  # half a line
    assert load_campaign(tmp_path / "c").notes == [
        f"dropped an incomplete last line of {path} (40 bytes)"]
    launcher = ScriptedLauncherDouble(lambda i, a: "completed")
    records = _run(tmp_path / "c", launcher, 3, resume=True)
    assert launcher.calls == [(2, 1)]
    assert len(records) == 3 and path.read_bytes().startswith(whole)
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_existing_campaign_needs_resume_and_same_scenario(tmp_path: Path) -> None:
    _run(tmp_path / "c", ScriptedLauncherDouble(lambda i, a: "completed"), 1)
    with pytest.raises(UsageError, match="already holds a campaign"):
        _run(tmp_path / "c", ScriptedLauncherDouble(lambda i, a: "completed"), 1)
    # the keys that differ, not two long URLs cut short (a fresh user's hold=30 was hidden)
    with pytest.raises(UsageError, match="its scenario has mode=concurrent, not mode=serial"):
        prepare_store(tmp_path / "c", label="base", target="host",
                      scenario=parse_scenario("mode=serial"), launches=1, resume=True)


@pytest.mark.parametrize("label", ["", "-x", "a b", "a;rm -rf /", "x" * 41])
def test_bad_labels_are_refused(tmp_path: Path, label: str) -> None:
    with pytest.raises(UsageError, match="label"):
        prepare_store(tmp_path / "c", label=label, target="host", scenario=SCENARIO,
                      launches=1, resume=False)


def test_two_launchers_share_the_slots(tmp_path: Path) -> None:
    a = ScriptedLauncherDouble(lambda i, at: "completed", device="d1")
    b = ScriptedLauncherDouble(lambda i, at: "completed", device="d2")
    store, records = prepare_store(tmp_path / "c", label="base", target="android",
                                   scenario=SCENARIO, launches=10, resume=False)
    out = run_campaign(store, records, [a, b], label="base", scenario=SCENARIO,
                       launches=10, timeout_s=5)
    assert sorted(r.index for r in out) == list(range(10))
    assert len(a.calls) + len(b.calls) == 10


def test_should_stop_ends_the_campaign_early(tmp_path: Path) -> None:
    launcher = ScriptedLauncherDouble(lambda i, a: "crashed")
    records = _run(tmp_path / "c", launcher, 50, should_stop=lambda recs: len(recs) >= 4)
    assert len(records) == 4


def test_a_settled_campaign_makes_no_launch_on_resume(tmp_path: Path) -> None:
    first = ScriptedLauncherDouble(lambda i, a: "completed")
    _run(tmp_path / "c", first, 50, should_stop=lambda recs: len(recs) >= 4)
    again = ScriptedLauncherDouble(lambda i, a: "completed")
    out = _run(tmp_path / "c", again, 50, resume=True,
               should_stop=lambda recs: len(recs) >= 4)
    assert len(out) == 4 and again.calls == []


def test_resume_refuses_fewer_launches_than_made_and_a_meta_that_is_not_an_object(
        tmp_path: Path) -> None:
    _run(tmp_path / "c", ScriptedLauncherDouble(lambda i, a: "completed"), 4)
    with pytest.raises(UsageError, match="with 2 launches: it already has 4"):
        _run(tmp_path / "c", ScriptedLauncherDouble(lambda i, a: "completed"), 2, resume=True)
    (tmp_path / "c" / "campaign.json").write_text("[]\n")
    with pytest.raises(DataError, match="must hold a JSON object, not a list"):
        load_campaign(tmp_path / "c")


def test_progress_counts_cover_the_records_of_a_resumed_campaign() -> None:
    import io

    from rich.console import Console

    from kit.cli.progress import ProgressView
    from tests.helpers import record

    sink = io.StringIO()
    console = Console(file=sink, width=200, force_terminal=False, color_system=None)
    with ProgressView(console) as view:
        view.started("resumed", 5, [record("r", 0, "completed"), record("r", 1, "crashed")])
        view.recorded(record("r", 2, "completed"))
    text = sink.getvalue()
    assert "3/5" in text and "completed 2" in text and "crashed 1" in text


def test_an_infra_error_that_echoes_a_farm_url_is_stored_redacted(tmp_path: Path) -> None:
    from kit.redact import install_log_redaction
    install_log_redaction(urls=["SECRETTOK-77@hub.example.com/wd/hub"])  # what run appium does
    launcher = ScriptedLauncherDouble(
        lambda i, a: "raise" if a == 1 else "completed",
        infra_message="POST alice:SECRETPW-77@hub.example.com/wd/hub/session: reset; "
                      "token SECRETTOK-77 refused")
    _run(tmp_path / "c", launcher, 1)
    stored = "\n".join(p.read_text() for p in (tmp_path / "c").rglob("*") if p.is_file())
    assert "SECRETPW-77" not in stored and "SECRETTOK-77" not in stored
    assert "***:***@hub.example.com/wd/hub/session" in stored and "token *** refused" in stored
