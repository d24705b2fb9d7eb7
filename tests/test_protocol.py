"""COLDSTART protocol lines against the shared test vectors (kit/protocol.py)."""

from __future__ import annotations

import json

import pytest

from kit.protocol import format_event, iter_events, parse_line, vectors_path

DATA = json.loads(open(vectors_path()).read())


@pytest.mark.parametrize("vector", DATA["format"], ids=[v["name"] for v in DATA["format"]])
def test_format_vectors_byte_exact(vector: dict) -> None:
    line = format_event(vector["id"], vector["phase"], vector["t_ms"], **vector["fields"])
    assert line == vector["line"]


@pytest.mark.parametrize("vector", DATA["parse"], ids=[v["name"] for v in DATA["parse"]])
def test_parse_vectors(vector: dict) -> None:
    result = parse_line(vector["line"])
    if vector["valid"]:
        assert result.reason is None
        assert result.event is not None and result.event.to_dict() == vector["event"]
    else:
        assert result.event is None
        assert result.reason == vector["reason"]


def test_iter_events_drops_stale_launches_and_noise() -> None:
    lines = [
        'I ReactNativeJS: COLDSTART {"v":1,"id":"b-00001","phase":"done","t_ms":900}',
        "garbage",
        'I ReactNativeJS: COLDSTART {"v":1,"id":"b-00002","phase":"start","t_ms":0}',
        'COLDSTART {"v":1,"id":"b-00002","phase":"sessions-created","t_ms":12.5,"eps":["cpu"]}',
    ]
    events = list(iter_events(lines, "b-00002"))
    assert [e.phase for e in events] == ["start", "sessions-created"]
    assert events[1].fields == {"eps": ["cpu"]}


def test_formatter_rejects_unknown_phase_and_negative_time() -> None:
    with pytest.raises(ValueError):
        format_event("a", "warmup", 1)
    with pytest.raises(ValueError):
        format_event("a", "start", -1)


def test_parse_never_raises_on_deep_nesting() -> None:
    line = "COLDSTART " + "[" * 100000
    assert parse_line(line).event is None
