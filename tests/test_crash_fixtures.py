"""Every crash fixture against its row in tests/data/crashes/expected.json.

Each row names every CrashRecord field the parser must set (all others must stay ``None``),
the first three frames with every field (and a Java root cause's, ``cause_frame_count``
and ``cause_top_frames``, when it has one), the notes, the crash class, the rule and the
signature, and where the report comes from (``source``).

Two kinds of fixture:

* ``public/**``: real crash reports that other people pasted in public GitHub issues and
  pull requests (onnxruntime, XNNPACK, ExecuTorch, TensorFlow Lite, React Native, Expo,
  Flutter, Firebase ...) or in Apple's developer forums, kept as pasted; each row's
  ``source`` gives the URL and every edit made (most are cut where the stored copy of the
  issue ends, none is otherwise changed);
* everything else: written for this kit, in the real format of each family, where no public
  report of that shape exists (the target signature under every tool, near misses, cut and
  garbled files); ``source.written_here`` says so and ``source.spec`` (for the newer ones)
  which format the file follows.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from kit.crash import CrashRecord, classify, parse_host, parse_text

DATA = Path(__file__).parent / "data" / "crashes"
CASES: list[dict[str, Any]] = json.loads((DATA / "expected.json").read_text())["cases"]
# where a public fixture may come from: public issue trackers and forums, by https URL
PUBLIC_SOURCES = ("https://github.com/", "https://developer.apple.com/forums/")
SCALARS = [f.name for f in dataclasses.fields(CrashRecord)
           if f.name not in ("frames", "notes", "raw_artifact", "cause_frames")]


def _parse(case: dict[str, Any]) -> CrashRecord:
    data = (DATA / case["file"]).read_bytes()
    if "host_signal" in case:
        return parse_host(case["host_signal"], data)
    return parse_text(data)


def test_every_row_says_where_its_report_comes_from() -> None:
    for case in CASES:
        source = case["source"]
        if case["file"].startswith("public/"):
            assert source["url"].startswith(PUBLIC_SOURCES), case["file"]
            assert source["edits"], case["file"]
            assert "written_here" not in source
        else:
            assert source["written_here"] is True, case["file"]
    assert sum(c["file"].startswith("public/") for c in CASES) >= 40


def test_every_fixture_has_a_row() -> None:
    files = {str(p.relative_to(DATA)) for p in DATA.rglob("*")
             if p.is_file() and p.name not in ("expected.json", "expected-release.json")}
    assert files == {c["file"] for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_fixture_fields(case: dict[str, Any]) -> None:
    record = _parse(case)
    got = {name: getattr(record, name) for name in SCALARS}
    want = {name: case["record"].get(name) for name in SCALARS}
    assert got == want
    assert list(record.notes) == case["notes"]
    assert len(record.frames) == case["frame_count"]
    top = [{k: v for k, v in dataclasses.asdict(f).items() if v is not None}
           for f in record.frames[:3]]
    assert top == case["top_frames"]
    # a Java root cause's frames (its last 'Caused by:'), when the report has one
    assert len(record.cause_frames) == case.get("cause_frame_count", 0)
    cause_top = [{k: v for k, v in dataclasses.asdict(f).items() if v is not None}
                 for f in record.cause_frames[:3]]
    assert cause_top == case.get("cause_top_frames", [])


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_fixture_classification(case: dict[str, Any]) -> None:
    result = classify(_parse(case))
    assert (result.crash_class.value, result.rule_id, result.signature) == (
        case["crash_class"], case["rule_id"], case["signature"])
    assert result.trail, "every classification explains itself"


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_record_round_trips_through_json(case: dict[str, Any]) -> None:
    record = _parse(case)
    again = CrashRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record
