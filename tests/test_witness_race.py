"""Race witness output -> ``LaunchRecord.race`` (kit/targets/host/witness/race.py).

The fixtures in tests/data/witness/ are real witness files from host launches on Debian's
onnxruntime 1.21 (the workload preloaded with kit/targets/host/witness/coldstart_witness.c):
``race-witnessed.jsonl`` is a launch where two allocator contexts reached xnn_initialize
(benchmark launch pair-verbose-00079, which then crashed in xnn_delete_operator),
``no-race.jsonl`` a production-shape launch where all three calls carried the same one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.targets.host.witness import (OFF_REASON, STATIC_REASON, STDERR_PREFIX, parse_witness,
                         read_witness_file, unavailable)

DATA = Path(__file__).resolve().parent / "data" / "witness"
RECORD_KEYS = {"available", "witnessed", "contexts", "calls", "skew_us", "reason"}


def lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def test_a_real_witnessed_race_gives_both_contexts_and_the_skew() -> None:
    raw = [json.loads(line) for line in lines("race-witnessed.jsonl")]
    calls = sorted((r for r in raw if r["event"] == "xnn_initialize"), key=lambda r: r["t_ns"])
    race = read_witness_file(DATA / "race-witnessed.jsonl").to_dict()
    assert set(race) == RECORD_KEYS
    assert race["available"] is True and race["witnessed"] is True
    assert race["contexts"] == list(dict.fromkeys(c["context"] for c in calls))
    assert len(race["contexts"]) == 2
    assert race["calls"] == [{"tid": c["tid"], "t_ns": c["t_ns"], "context": c["context"]}
                             for c in calls]
    assert race["skew_us"] == pytest.approx((calls[1]["t_ns"] - calls[0]["t_ns"]) / 1000)
    assert race["reason"] is None


def test_a_real_launch_without_race_has_one_context() -> None:
    race = read_witness_file(DATA / "no-race.jsonl").to_dict()
    assert race["available"] is True and race["witnessed"] is False
    assert len(race["calls"]) == 3 and len(race["contexts"]) == 1
    assert len({c["tid"] for c in race["calls"]}) == 3
    t = [c["t_ns"] for c in race["calls"]]
    assert t == sorted(t)
    assert race["skew_us"] == pytest.approx((t[1] - t[0]) / 1000)


def test_stderr_lines_with_the_prefix_are_found_among_other_output() -> None:
    noise = ["Schema error: Trying to register schema with name X (domain: version: 1)",
             "[ort 3 coldstart s0] something (file.cc:12)"]
    text = noise + [STDERR_PREFIX + line for line in lines("race-witnessed.jsonl")] + noise
    assert parse_witness(text).to_dict() == read_witness_file(
        DATA / "race-witnessed.jsonl").to_dict()


def test_calls_are_ordered_by_arrival_time() -> None:
    loaded = '{"event":"loaded","pid":1,"t_ns":5,"resolved":true}'
    late = ('{"event":"xnn_initialize","seq":0,"tid":11,"t_ns":2000,"allocator":"0xa0",'
            '"context":"0xb1","status":0}')
    early = ('{"event":"xnn_initialize","seq":1,"tid":12,"t_ns":1500,"allocator":"0xa0",'
             '"context":"0xb2","status":0}')
    race = parse_witness([loaded, late, early])
    assert [c.tid for c in race.calls] == [12, 11]
    assert race.contexts == ("0xb2", "0xb1") and race.witnessed
    assert race.skew_us == 0.5


def test_no_loaded_line_means_unavailable_never_absent() -> None:
    race = parse_witness(["Schema error: nothing from the witness"]).to_dict()
    assert race == {"available": False, "witnessed": False, "contexts": [], "calls": [],
                    "skew_us": None, "reason": race["reason"]}
    assert "wrote nothing" in race["reason"]


def test_unresolved_real_function_is_unavailable() -> None:
    race = parse_witness(['{"event":"loaded","pid":9,"t_ns":1,"resolved":false}']).to_dict()
    assert race["available"] is False
    assert "no xnn_initialize" in race["reason"]


def test_missing_file_is_unavailable(tmp_path: Path) -> None:
    race = read_witness_file(tmp_path / "witness.jsonl").to_dict()
    assert race["available"] is False and race["witnessed"] is False
    assert "witness.jsonl" in race["reason"]


def test_loaded_without_calls_is_available_with_no_skew() -> None:
    race = parse_witness(['{"event":"loaded","pid":9,"t_ns":1,"resolved":true}']).to_dict()
    assert race == {"available": True, "witnessed": False, "contexts": [], "calls": [],
                    "skew_us": None, "reason": None}


def test_malformed_lines_are_counted_not_fatal() -> None:
    good = lines("no-race.jsonl")
    cut = good[2][: len(good[2]) // 2]  # a line cut by a crash
    bad_hex = good[2].replace('"context":"0x', '"context":"zz')
    missing = '{"event":"xnn_initialize","seq":"x"}'
    race = parse_witness([*good, cut, bad_hex, missing, "[1,2]", "not json at all"])
    assert race.available and len(race.calls) == 3
    assert race.reason == "3 malformed witness line(s) skipped"


def test_unavailable_reasons_say_why() -> None:
    static = unavailable(STATIC_REASON)
    assert set(static) == RECORD_KEYS
    assert static["available"] is False and static["witnessed"] is False
    assert "statically" in static["reason"] and "absence not claimed" in static["reason"]
    assert "--no-witness" in unavailable(OFF_REASON)["reason"]


# no deadline and no too-slow health check: a loaded machine is slow, not wrong
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.text(max_size=80),
                          st.builds(lambda s: STDERR_PREFIX + s, st.text(max_size=80)),
                          st.sampled_from(lines("race-witnessed.jsonl"))), max_size=12))
def test_parser_never_raises(text: list[str]) -> None:
    race = parse_witness(text).to_dict()
    assert set(race) == RECORD_KEYS
    assert race["witnessed"] is (race["available"] and len(race["contexts"]) >= 2)


def test_a_witness_file_that_is_a_fifo_or_device_is_refused_not_read(tmp_path) -> None:
    import os

    from kit.targets.host.witness.race import read_witness_file

    fifo = tmp_path / "witness.jsonl"
    os.mkfifo(fifo)
    seen = read_witness_file(fifo)
    assert not seen.available and "is a FIFO, not a regular file" in seen.reason
    seen = read_witness_file(tmp_path / "none.jsonl")
    assert seen.reason == "the race witness wrote nothing: cannot read none.jsonl (no such file)"
