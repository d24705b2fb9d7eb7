"""The whole crash corpus against the previous release's expected fields (issue #24).

``tests/data/crashes/expected-release.json`` is a frozen copy of every fixture's expected
fields (record, notes, frame count, top frames, class, rule, signature) as the previous
release read them. Every fixture it names is parsed and classified again; a field that
reads differently now fails the test unless ``changed`` names it (``file``, ``field``,
``why``), and the failure lists every such field, so a reader change that moves one
report (a tombstone line that stops matching, a signature that shifts) is seen in the
commit that makes it. A ``changed`` entry whose field no longer differs fails too (it is
stale). At a release the snapshot is made again from ``expected.json``::

    .venv/bin/python tests/test_crash_release.py --freeze "<release name>"
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from kit.crash import CrashRecord, classify, parse_host, parse_text

DATA = Path(__file__).parent / "data" / "crashes"
SNAPSHOT = DATA / "expected-release.json"
FIELDS = ("record", "notes", "frame_count", "top_frames", "crash_class", "rule_id", "signature")
SCALARS = [f.name for f in dataclasses.fields(CrashRecord)
           if f.name not in ("frames", "notes", "raw_artifact", "cause_frames")]


def _read(name: str, case: dict[str, Any]) -> dict[str, Any]:
    """What the readers give now for one fixture, flattened to ``field -> value``."""
    data = (DATA / name).read_bytes()
    record = parse_host(case["host_signal"], data) if "host_signal" in case else parse_text(data)
    result = classify(record)
    out: dict[str, Any] = {f"record.{k}": getattr(record, k) for k in SCALARS}
    out["notes"] = list(record.notes)
    out["frame_count"] = len(record.frames)
    out["top_frames"] = [{k: v for k, v in dataclasses.asdict(f).items() if v is not None}
                         for f in record.frames[:3]]
    out.update(crash_class=result.crash_class.value, rule_id=result.rule_id,
               signature=result.signature)
    return out


def _frozen(case: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {f"record.{k}": case["record"].get(k) for k in SCALARS}
    out.update({k: case[k] for k in FIELDS if k != "record"})
    return out


def _differences() -> list[tuple[str, str, Any, Any]]:
    snapshot = json.loads(SNAPSHOT.read_text())
    hosts = {c["file"]: c for c in json.loads((DATA / "expected.json").read_text())["cases"]}
    out = []
    for name, case in snapshot["cases"].items():
        if not (DATA / name).is_file():
            out.append((name, "file", "present", "missing"))
            continue
        now = _read(name, hosts.get(name, {}))
        for field, was in _frozen(case).items():
            if now[field] != was:
                out.append((name, field, was, now[field]))
    return out


def test_no_fixture_reads_differently_from_the_previous_release_unless_listed() -> None:
    snapshot = json.loads(SNAPSHOT.read_text())
    listed = {(c["file"], c["field"]) for c in snapshot["changed"]}
    assert all(c["why"].strip() for c in snapshot["changed"]), "every change says why"
    diffs = _differences()
    unlisted = [f"{name}: {field}: {was!r} -> {now!r}" for name, field, was, now in diffs
                if (name, field) not in listed]
    assert not unlisted, ("fields that changed since the previous release (name them in "
                          "expected-release.json 'changed' if meant):\n" + "\n".join(unlisted))
    stale = listed - {(name, field) for name, field, _, _ in diffs}
    assert not stale, f"'changed' entries that no longer differ: {sorted(stale)}"


def test_the_snapshot_covers_the_corpus_of_the_release() -> None:
    snapshot = json.loads(SNAPSHOT.read_text())
    assert len(snapshot["cases"]) >= 168  # the corpus when the snapshot was frozen
    current = {c["file"] for c in json.loads((DATA / "expected.json").read_text())["cases"]}
    assert set(snapshot["cases"]) <= current, "a fixture of the release left the corpus"


def _freeze(release: str) -> None:
    cases = json.loads((DATA / "expected.json").read_text())["cases"]
    old = json.loads(SNAPSHOT.read_text())
    old.update(release=release, changed=[],
               cases={c["file"]: {k: c[k] for k in FIELDS} for c in cases})
    SNAPSHOT.write_text(json.dumps(old, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--freeze":
        sys.exit("usage: tests/test_crash_release.py --freeze RELEASE_NAME")
    _freeze(sys.argv[2])
