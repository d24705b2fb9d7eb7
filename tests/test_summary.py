"""Campaign summary: counts, Clopper-Pearson rates, create overlap, infra errors apart.

Campaigns are built through the kit's own store (prepare_store + append), as `coldstart run`
writes them. Its helpers are in tests/helpers/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from kit.campaign import Campaign
from kit.analysis.summary import render_summary, summarize
from tests.helpers import counts, make_campaign, record, timing, with_detector


@pytest.fixture()
def mixed(tmp_path: Path) -> Campaign:
    recs = [
        record("base", 0, "crashed", crash_class="xnnpack-allocator-uaf",
               last_phase="sessions-created", sessions=timing([1.0, 1.1, 1.2], [5.0, 5.5, 6.0]),
               crash={"frames": [{"index": 0, "symbol": "xnn_aligned_allocate", "offset": 12,
                                  "module": "libonnxruntime.so"}]}),
        record("base", 1, "crashed", crash_class="xnnpack-allocator-uaf",
               last_phase="inference-done", sessions=timing([1.0, 3.0, 9.0], [2.0, 4.0, 10.0])),
        record("base", 2, "crashed", crash_class="abort", last_phase="sessions-released"),
        record("base", 3, "completed", sessions=timing([0.0, 0.5, 0.25], [4.0, 3.0, 2.0])),
        record("base", 4, "hung", device="host:b"),
        record("base", 5, "infra-error", device="host:b", error="device offline"),
        record("base", 5, "completed", device="host:b", attempt=2),
        record("base", 6, "app-error", last_phase="models-ready"),
    ]
    return make_campaign(tmp_path, "base", recs)


def test_counts_by_outcome_class_phase_and_device(mixed: Campaign) -> None:
    s = summarize(mixed)
    assert (s.records, s.counted) == (8, 7)
    assert {r.key: r.count for r in s.outcomes} == {"crashed": 3, "completed": 2, "hung": 1,
                                                    "app-error": 1}
    assert all(r.rate.n == 7 for r in s.outcomes)  # the infra error is not in any denominator
    assert {r.key: r.count for r in s.crash_classes} == {"xnnpack-allocator-uaf": 2, "abort": 1}
    assert {r.key: r.count for r in s.last_phases} == {
        "sessions-created": 1, "inference-done": 1, "sessions-released": 1, "done": 2,
        "start": 1, "models-ready": 1}
    assert {r.key: r.count for r in s.crash_phases} == {
        "sessions-created": 1, "inference-done": 1, "sessions-released": 1}
    devices = {d.device: d for d in s.devices}
    assert (devices["host:a"].crashed.count, devices["host:a"].crashed.n) == (3, 5)
    assert (devices["host:b"].crashed.count, devices["host:b"].crashed.n,
            devices["host:b"].infra_errors) == (0, 2, 1)
    assert [(e.launch_id, e.error) for e in s.infra_errors] == [("base-00005", "device offline")]
    assert s.crashed.count == 3 and s.crashed.n == 7
    # Clopper-Pearson 95% for 3/7: 0.0990-0.8159 (published tables)
    assert s.crashed.low == pytest.approx(0.0990, abs=5e-4)
    assert s.crashed.high == pytest.approx(0.8159, abs=5e-4)
    assert s.label == "base" and s.target == "host" and s.planned_launches == 7


def test_create_overlap_from_session_times(mixed: Campaign) -> None:
    o = summarize(mixed).overlap
    # launch 0: min end 5.0 - max start 1.2 = 3.8 (overlap); launch 1: 2.0 - 9.0 = -7 (none);
    # launch 3: 2.0 - 0.5 = 1.5 (overlap)
    assert o.timed == 3
    assert (o.overlapped.count, o.overlapped.n) == (2, 3)
    assert o.median_overlap_ms == pytest.approx(1.5)
    # start spreads: 0.2, 8.0, 0.5
    assert o.median_start_spread_ms == pytest.approx(0.5)
    assert o.max_start_spread_ms == pytest.approx(8.0)


def test_signatures_keep_one_example_stack(mixed: Campaign) -> None:
    sigs = {s.crash_class: s for s in summarize(mixed).signatures}
    uaf = sigs["xnnpack-allocator-uaf"]
    assert uaf.count == 2
    assert uaf.example_launch_id == "base-00000"
    assert uaf.example_frames == ("#00 xnn_aligned_allocate+12 (libonnxruntime.so)",)
    assert sigs["abort"].example_frames == ()


def test_race_witness_counts_only_launches_with_a_witness(tmp_path: Path) -> None:
    recs = [record("w", 0, race={"witnessed": True, "available": True, "contexts": ["0x1", "0x2"]}),
            record("w", 1, race={"witnessed": False, "available": True}),
            record("w", 2, race={"witnessed": False, "available": False}),
            record("w", 3)]
    race = summarize(make_campaign(tmp_path, "w", recs)).race
    assert race is not None and (race.witnessed.count, race.witnessed.n) == (1, 2)
    assert summarize(make_campaign(tmp_path, "x", [record("x", 0)])).race is None


def test_summarize_records_in_progress_without_a_directory() -> None:
    s = summarize(counts("live", 2, 5) + [record("live", 5, "infra-error")])
    assert (s.label, s.path, s.counted, s.crashed.count) == ("live", None, 5, 2)
    assert s.scenario.startswith("coldstart://run?mode=concurrent")
    assert "id=" not in s.scenario


def test_render_summary_prints_rates_and_untrusted_text_verbatim(tmp_path: Path) -> None:
    recs = counts("r", 1, 4) + [record("r", 4, "infra-error", error="[red]not markup[/red]")]
    console = Console(record=True, width=120)
    render_summary(summarize(make_campaign(tmp_path, "r", recs)), console)
    text = console.export_text()
    assert "4 counted launches of 5 planned, 1 infra errors (not counted)" in text
    assert "xnnpack-allocator-uaf" in text and "1/4" in text
    assert "25.0% [0.6%, 80.6%]" in text  # Clopper-Pearson 95% for 1/4
    assert "[red]not markup[/red]" in text
    assert "Create overlap: no launch reported" in text


def test_race_summary_puts_skews_and_crashes_beside_witnessed_races(tmp_path: Path) -> None:
    recs = [record("s", 0, "crashed", crash_class="other-native-crash",
                   race={"witnessed": True, "available": True, "skew_us": 3.5}),
            record("s", 1, race={"witnessed": True, "available": True, "skew_us": 12.5}),
            record("s", 2, race={"witnessed": False, "available": True, "skew_us": 900.0}),
            record("s", 3, race={"witnessed": False, "available": True, "skew_us": None})]
    race = summarize(make_campaign(tmp_path, "s", recs)).race
    assert race is not None
    assert (race.witnessed.count, race.witnessed.n) == (2, 4)
    assert race.median_skew_us == 12.5
    assert race.median_witnessed_skew_us == 8.0
    assert race.witnessed_crashed == 1
    console = Console(record=True, width=200)
    render_summary(summarize(make_campaign(tmp_path, "s2", recs)), console)
    text = console.export_text()
    assert "median arrival skew at XNNPACK init 12.5 us (8.0 us when witnessed); 1 of those " \
           "crashed" in text


def test_a_campaign_without_the_witness_says_so(tmp_path: Path) -> None:
    off = {"available": False, "witnessed": False, "contexts": [], "calls": [],
           "skew_us": None, "reason": "turned off (--no-witness)"}
    recs = [record("w", i, race=off) for i in range(3)]
    console = Console(record=True, width=200)
    render_summary(summarize(make_campaign(tmp_path, "w", recs)), console)
    text = console.export_text()
    assert "Race witness: no launch had it (off, or not available for this runtime" in text
    assert "0/0" not in text


def test_detected_races_are_summed_next_to_witnessed_races_and_crashes(tmp_path: Path) -> None:
    recs = [with_detector(record("d", 0, "crashed", crash_class="other-native-crash",
                                 race={"witnessed": True, "available": True}), True, races=3),
            with_detector(record("d", 1, race={"witnessed": True, "available": True}), True,
                          races=1),
            with_detector(record("d", 2), False),
            with_detector(record("d", 3), False),
            with_detector(record("d", 4), None),  # could not tell: left out
            record("d", 5)]  # no detector ran
    s = summarize(make_campaign(tmp_path, "d", recs))
    d = s.detector
    assert d is not None
    assert (d.detected.count, d.detected.n, d.unknown, d.detected_crashed) == (2, 4, 1, 1)
    assert d.races_per_launch == pytest.approx(1.0)  # 4 races over 4 judged launches
    assert d.tools == ("tsan",)
    assert s.race is not None and s.race.witnessed.count == 2 and s.crashed.count == 1
    console = Console(record=True, width=250)
    render_summary(s, console)
    text = console.export_text()
    assert ("Race detector (tsan): 2/4 judged launches had a data race on the allocator "
            "statics 50.0% [6.8%, 93.2%]; 1.00 races reported per launch; 1 of those crashed; "
            "1 launches it could not judge (left out)") in text
    assert summarize(make_campaign(tmp_path, "n", [record("n", 0)])).detector is None


def test_long_signature_and_infra_error_lists_are_bounded(tmp_path: Path) -> None:
    # issue #13: report printed every signature (1,299 lines at 100k launches)
    from kit.analysis.summary import SHOWN_ROWS

    recs = [record("s", i, "crashed", crash_class="other-native-crash", signature=f"sig-{i}")
            for i in range(SHOWN_ROWS + 30)]
    recs += [record("s", SHOWN_ROWS + 30 + i, "infra-error", error=f"offline {i}")
             for i in range(SHOWN_ROWS + 5)]
    s = summarize(make_campaign(tmp_path, "s", recs))
    assert len(s.signatures) == SHOWN_ROWS + 30  # summary.json keeps them all
    assert s.infra_error_count == SHOWN_ROWS + 5
    console = Console(record=True, width=200)
    render_summary(s, console)
    text = console.export_text()
    assert "and 30 more signatures (all in summary.json)" in text
    assert "and 5 more infra errors (all in summary.json)" in text
    assert sum(1 for line in text.splitlines() if "sig-" in line) == SHOWN_ROWS


def test_a_streamed_campaign_summarises_as_a_loaded_one(mixed: Campaign) -> None:
    from kit.store.store import load_campaign

    streamed = summarize(load_campaign(mixed.path, stream=True)).to_dict()
    assert streamed == summarize(mixed).to_dict()


def test_one_campaign_type_loaded_or_left_on_disk(mixed: Campaign) -> None:
    from kit.store.store import load_campaign

    opened = load_campaign(mixed.path, stream=True)
    assert type(opened) is type(mixed) is Campaign
    assert mixed.loaded and not opened.loaded and opened.records is None
    assert [r.launch_id for r in opened.iter_records()] == [r.launch_id for r in mixed.records]
    assert [r.launch_id for r in opened.counted] == [r.launch_id for r in mixed.counted]
    assert (opened.meta, opened.notes, opened.writer) == (mixed.meta, mixed.notes, mixed.writer)
