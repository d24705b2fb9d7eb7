"""The host amplifier ``hold=MS`` (kit/scenario.py; docs/race.md, "The hold"): its record
field (:class:`kit.payloads.HoldPayload`), read from the workload's own lines, and a hold that
never engaged, which leaves the launch out of failure-tier rates with a note that says so.

The launches that really hold a thread are in tests/test_host.py; nothing here depends on a
crash happening (that is the benchmark's business: benchmarks/bench_hold.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kit.analysis.compare import compare_campaigns
from kit.analysis.target import hold_never_engaged, is_eligible
from kit.analysis.verdict import Verdict, VerdictSettings
from kit.payloads import HoldPayload
from kit.protocol import iter_events
from kit.records import LaunchRecord
from kit.targets.host.launcher import hold_payload
from tests.helpers import make_campaign, record

# the workload's stderr and stdout for a hold=20 launch (the three creating threads each
# held once; recorded from `coldstart run host --scenario hold=20` on the runtime debian)
# (the lines before the held threads left in session order had no `i=`: both forms count)
STDERR = """Schema error: Trying to register schema with name Crop
COLDSTART-HOLD n=1 ms=20 t_ms=127.119 i=2
COLDSTART-HOLD n=2 ms=20 t_ms=129.187 i=1
COLDSTART-HOLD n=3 ms=20 t_ms=129.324
COLDSTART-CRASH signal=11 addr=0x7f649066d6c0
"""
SESSIONS_CREATED = ('COLDSTART {"v":1,"id":"L-1","phase":"sessions-created","t_ms":231,'
                    '"sessions":[],"eps":["xnnpack","cpu"],'
                    '"hold":{"ms":20,"engaged":3,"order":[0,1,2]}}')


def test_the_hold_is_counted_from_the_workloads_stderr_lines() -> None:
    # crashed before sessions-created: only the stderr lines, written as each hold began
    assert hold_payload(20, [], STDERR) == {"ms": 20, "engaged": 3, "source": "stderr"}


def test_the_protocol_field_counts_when_stderr_lost_its_lines() -> None:
    events = list(iter_events([SESSIONS_CREATED], "L-1"))
    assert hold_payload(20, events, "no hold lines here\n") == {
        "ms": 20, "engaged": 3, "source": "protocol"}


def test_no_hold_asked_means_no_field_and_a_bad_field_counts_as_absent() -> None:
    assert hold_payload(0, [], STDERR) is None
    bad = SESSIONS_CREATED.replace('"engaged":3', '"engaged":"3"')
    events = list(iter_events([bad], "L-1"))
    assert hold_payload(5, events, "") == {"ms": 5, "engaged": 0, "source": "none"}


def test_the_record_field_round_trips_and_says_whether_it_held() -> None:
    held = dataclasses.replace(record("b", 0), hold={"ms": 20, "engaged": 3,
                                                     "source": "stderr"})
    data = held.to_dict()
    assert data["hold"] == {"ms": 20, "engaged": 3, "held": True, "source": "stderr"}
    again = LaunchRecord.from_dict(json.loads(json.dumps(data)))
    assert again.hold == held.hold and isinstance(again.hold, HoldPayload)
    assert again.hold.held and not hold_never_engaged(again)
    # a launch that asked for no hold has no field at all (older records read the same)
    assert "hold" not in record("b", 1).to_dict()
    assert LaunchRecord.from_dict(record("b", 1).to_dict()).hold is None


def _unheld(label: str, i: int) -> LaunchRecord:
    return dataclasses.replace(record(label, i), hold={"ms": 20, "engaged": 0,
                                                       "source": "none"})


def test_a_hold_that_never_engaged_is_not_eligible_for_the_failure_tier() -> None:
    r = _unheld("b", 0)
    assert hold_never_engaged(r)
    assert not is_eligible(r, "xnnpack-allocator-uaf") and not is_eligible(r, "any-crash")
    # the mechanism tier does not depend on the hold: the witness decides there
    witnessed = dataclasses.replace(r, race={"available": True, "witnessed": False})
    assert is_eligible(witnessed, "race-witnessed")


def test_compare_says_how_many_launches_with_an_unengaged_hold_were_left_out(
        tmp_path: Path) -> None:
    def held(label: str, i: int, crashed: bool) -> LaunchRecord:
        r = record(label, i, "crashed" if crashed else "completed",
                   crash_class="xnnpack-allocator-uaf" if crashed else None,
                   last_phase="inference-done" if crashed else None)
        return dataclasses.replace(r, hold={"ms": 20, "engaged": 3, "source": "stderr"})

    base = make_campaign(tmp_path, "b", [held("b", i, True) for i in range(20)],
                         scenario="hold=20")
    cand = make_campaign(tmp_path, "c", [held("c", i, False) for i in range(59)] +
                         [_unheld("c", 59 + i) for i in range(4)], scenario="hold=20")
    c = compare_campaigns(base, cand, VerdictSettings())
    assert (c.candidate.events, c.candidate.eligible, c.candidate.counted) == (0, 59, 63)
    assert c.verdict is Verdict.FIXED
    assert any(n.startswith("4 c launches asked for a hold that never engaged") and
               n.endswith("left out of the xnnpack-allocator-uaf rate") for n in c.notes)
    assert not any("ended before creating sessions" in n for n in c.notes)

    # a candidate whose every launch asked for a hold that never engaged (ep=cpu): the
    # reason says so, not that its launches ended before creating sessions
    unheld = make_campaign(tmp_path, "u", [_unheld("u", i) for i in range(3)],
                           scenario="hold=20&ep=cpu")
    c = compare_campaigns(base, unheld, VerdictSettings())
    assert c.verdict is Verdict.INCONCLUSIVE and c.candidate.eligible == 0
    assert c.decision.reason.startswith("the candidate campaign has no launch whose hold "
                                        "engaged: its 3 launches asked for a hold that never "
                                        "engaged"), c.decision.reason
    assert "ep=xnnpack" in c.decision.advice and "before creating" not in c.decision.advice


def test_debug_symbols_from_an_unreachable_archive_change_nothing(tmp_path: Path) -> None:
    import http.server
    import threading

    from kit.targets.host.runtime import Runtime, fetch_debug_symbols

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_error(403, "Repository not permitted")

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Refuse)  # a free port, never a fixed one
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        root = tmp_path / "root"
        (root / "etc/apt/sources.list.d").mkdir(parents=True)
        runtime = Runtime(name="dbg", kind="debian-root", root=str(root), include_dir="",
                          lib_dir="", ort_library=str(root / "libonnxruntime.so"),
                          xnnpack_library=None)
        said: list[str] = []
        assert fetch_debug_symbols(runtime, mirror=f"http://127.0.0.1:{server.server_port}",
                                   log=said.append) is False
    finally:
        server.shutdown()
    assert len(said) == 1 and said[0].startswith("no debug symbols: Debian's debug archive "
                                                  "is not reachable from here")
    assert "stay unnamed" in said[0]
    assert not any((root / "etc/apt/sources.list.d").iterdir())
    assert not (root / ".coldstart-dbgsym").exists()
    # a kit build of onnxruntime keeps its own -g symbols: nothing to fetch for it
    built = dataclasses.replace(runtime, ort_lib_dir=str(tmp_path / "ort"))
    assert fetch_debug_symbols(built, mirror="http://never-asked.invalid", log=said.append) is False
    assert len(said) == 1


def test_a_campaign_uses_its_own_checkouts_workload_from_a_shared_cache(
        tmp_path: Path, monkeypatch) -> None:
    # checkouts share ~/.cache/coldstart: runtime.json names the last workload built, maybe
    # from a source without hold=; each build keeps its own folder, found by its digest
    from kit.targets.host.runtime import Runtime, own_workload, workload_digest

    monkeypatch.setenv("COLDSTART_CACHE", str(tmp_path / "cache"))
    other = tmp_path / "other" / "coldstart-workload"
    runtime = Runtime(name="shared", kind="ort-root", root=str(tmp_path), include_dir="",
                      lib_dir="", ort_library=str(tmp_path / "libonnxruntime.so"),
                      xnnpack_library=None, workload=str(other), workload_hash="0" * 64)
    assert own_workload(runtime) == runtime  # none of ours built: as it is
    digest = workload_digest(runtime)
    ours = tmp_path / "cache" / "runtimes" / "shared" / f"workload-{digest[:12]}" / \
        "coldstart-workload"
    ours.parent.mkdir(parents=True)
    ours.write_text("#!/bin/sh\n")
    ours.chmod(0o755)
    mine = own_workload(runtime)
    assert (mine.workload, mine.workload_hash) == (str(ours), digest)


def test_a_workload_the_kit_built_from_another_source_is_built_again(tmp_path: Path) -> None:
    # an older checkout's workload (no hold=, no ordered release) is never launched in place
    # of this one's; a program the kit did not build is launched as registered
    from kit.targets.host.runtime import Runtime, workload_digest, workload_needs_build

    runtime = Runtime(name="shared", kind="ort-root", root=str(tmp_path), include_dir="",
                      lib_dir="", ort_library=str(tmp_path / "libonnxruntime.so"),
                      xnnpack_library=None, workload=str(tmp_path / "w" / "coldstart-workload"),
                      workload_hash="0" * 64)
    assert workload_needs_build(runtime)
    current = dataclasses.replace(runtime, workload_hash=workload_digest(runtime))
    assert not workload_needs_build(current)
    assert workload_needs_build(dataclasses.replace(runtime, workload_hash=None))
    registered = dataclasses.replace(runtime, workload=str(tmp_path / "recorded_workload.py"))
    assert not workload_needs_build(registered)


def test_a_hold_under_a_detector_or_past_the_timeout_is_refused_before_any_launch() -> None:
    # the held threads leave through the workload's own lock, which a happens-before
    # detector reads as synchronisation (a fresh user saw TSan call a held baseline clean);
    # a hold of 10 s with 3 sessions holds them about 30 s, the default timeout
    from kit.errors import UsageError
    from kit.scenario import parse_scenario
    from kit.targets.host import HostConfig, check_hold

    held = parse_scenario("hold=20")
    for detector in ("drd", "helgrind", "tsan"):
        with pytest.raises(UsageError, match=f"hold=20 cannot run under --detector "
                                             f"{detector}"):
            check_hold(HostConfig(detector=detector), held)
        check_hold(HostConfig(detector=detector), parse_scenario("hold=0"))
    check_hold(HostConfig(), held)
    with pytest.raises(UsageError, match=r"hold=10000 with 3 sessions holds the creating "
                                         r"threads for about 30 s .* past --timeout 30 s"):
        check_hold(HostConfig(), parse_scenario("hold=10000"))
    check_hold(HostConfig(timeout_s=61), parse_scenario("hold=10000"))


CRASHES = Path(__file__).parent / "data" / "crashes" / "host"


@pytest.mark.parametrize("fixture, signal, crash_class, frames", [
    # real crashes the kit made under the hold (Debian's binary), one per site seen
    ("hold-release-debian.txt", 11, "xnnpack-allocator-uaf",
     ["libXNNPACK.so.0.20241108", "xnn_delete_operator", "libonnxruntime.so.1.21"]),
    ("hold-release-callback-debian-poison.txt", 11, "xnnpack-allocator-uaf",
     ["libonnxruntime.so.1.21", "libXNNPACK.so.0.20241108", "xnn_delete_operator"]),
    # the app's own release (rn-host, the kit's baseline): the binding's dispose on the JS
    # thread, under JavaScriptCore
    ("hold-release-app-dispose.txt", 11, "xnnpack-allocator-uaf",
     ["libXNNPACK.so.0.20241108", "xnn_delete_operator", "libonnxruntime.so.1"]),
    # the named sites (a build with ORT's symbols): creation under PrePack, inference, release
    ("backtrace-mangled-create.txt", 11, "xnnpack-allocator-uaf", None),
    ("gdb-reshape.txt", None, "xnnpack-allocator-uaf", None),
    ("backtrace-demangled-release.txt", 11, "xnnpack-allocator-uaf", None),
    # near misses that must stay out
    ("hold-near-miss-create-null.txt", 11, "other-native-crash", None),
    ("hold-near-miss-kernel-abort.txt", 6, "abort", None),
])
def test_each_site_of_the_crash_is_classed_and_the_near_misses_stay_out(
        fixture: str, signal, crash_class: str, frames) -> None:
    from kit.crash import classify, parse_host

    result = classify(parse_host(signal, (CRASHES / fixture).read_bytes()))
    assert result.crash_class.value == crash_class, result.trail
    if frames is not None:  # the frames that identify it
        assert result.signature.split(" | ") == frames
