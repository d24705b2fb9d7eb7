"""The race detector's XML reading, attribution and command-line checks (issue #12), on
real tool output and without running the tool.

tests/data/detector/*.xml are real XML files: the calibration programs (kit/targets/host/detector/
calibration) run by `kit.targets.host.detector.calibration.run_calibration` under valgrind 3.24.0 from the
Debian 13 root (helgrind and DRD), on the machine of the first detector runs. The racy
program's statics are at 0x48050e0 (the xnn_allocator wrapper, 48 bytes) and 0x48051b0 (the
AllocatorPtr, 16 bytes) in those runs: the program printed them, and helgrind's own data
symbol lines in helgrind-racy.xml name them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.targets.host.detector import (ALLOCATOR_PTR, WRAPPER, check_tool_name, detector_payload,
                          read_report, record_on_target)
from kit.targets.host.detector import report as report_module
from kit.targets.host.detector.attribute import overlapping_target
from kit.targets.host.detector.report import Race, ToolReport, parse_report_bytes
from kit.targets.host.detector.statics import LibraryInfo, _pairs, allocator_ptr_offset
from kit.errors import UsageError
from kit.records import LaunchRecord, Outcome
from kit.targets.host.witness.race import RaceObservation, WitnessCall, parse_witness

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "detector"
CAL_TARGETS = [(WRAPPER, 0x48050E0, 48), (ALLOCATOR_PTR, 0x48051B0, 16)]


def coldstart(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], cwd=ROOT, text=True,
                          capture_output=True, env={**os.environ, **(env or {})}, timeout=120)


def one_line_error(proc: subprocess.CompletedProcess, fragment: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coldstart: error: "), proc.stderr
    assert fragment in lines[0] and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- reading the XML
def test_drd_xml_of_the_racy_program():
    report = read_report(DATA / "drd-racy.xml")
    assert (report.tool, report.version, report.finished, report.complete) == (
        "drd", "3.24.0", True, True)
    assert len(report.races) == 10 and report.other_errors == {}
    store = next(r for r in report.races if r.access == "store")
    assert (store.kind, store.address, store.size, store.thread) == (
        "ConflictingAccess", 0x48050E0, 8, 3)
    assert store.stack[0].symbol == "calibration::create_preferred_allocators()"
    assert store.stack[0].file == "racy.cpp" and store.other_stack  # the other segment
    assert store.where.startswith("Allocation context: Data section of ")
    on = [r for r in report.races if overlapping_target(r.address, r.size, CAL_TARGETS)]
    assert {overlapping_target(r.address, r.size, CAL_TARGETS) for r in on} == {
        WRAPPER, ALLOCATOR_PTR}


def test_helgrind_xml_names_both_threads_and_stacks():
    report = read_report(DATA / "helgrind-racy.xml")
    assert (report.tool, len(report.races), report.complete) == ("helgrind", 9, True)
    write = next(r for r in report.races if r.address == 0x48050E0)
    assert (write.kind, write.access, write.size, write.thread, write.other_thread) == (
        "Race", "write", 8, 2, 4)
    assert write.other_stack and write.other_stack[0].module.endswith("/racy")
    # helgrind names the symbols here: the extents agree with the program's own addresses
    for race in report.races:
        if "data symbol" in (race.where or "") and "GetStoredAllocator" in race.where:
            assert overlapping_target(race.address, race.size, CAL_TARGETS)


def test_fixed_program_has_no_race():
    report = read_report(DATA / "drd-call_once.xml")
    assert report.complete and report.races == ()


def test_cut_xml_keeps_what_was_read():
    data = (DATA / "drd-racy.xml").read_bytes()
    cut = parse_report_bytes(data[: len(data) // 2])
    assert not cut.finished and not cut.capped and "cut or malformed" in cut.read_error
    assert 0 < len(cut.races) < 10


@pytest.mark.parametrize("data, fragment", [
    (b"", "empty"),
    (b"\x00\xff garbage", "cut or malformed"),
    (b"<other/>", "not valgrind XML"),
    (b'<?xml version="1.0"?><!DOCTYPE v [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
     b"<valgrindoutput>&b;</valgrindoutput>", "refused"),
    (b'<!DOCTYPE v SYSTEM "file:///etc/passwd"><valgrindoutput/>', "refused"),
])
def test_bad_xml_never_raises(data, fragment):
    report = parse_report_bytes(data)
    assert fragment in report.read_error and report.races == () and not report.complete


def test_reads_are_bounded(tmp_path, monkeypatch):
    big = tmp_path / "big.xml"
    big.write_bytes((DATA / "drd-racy.xml").read_bytes())
    monkeypatch.setattr(report_module, "MAX_XML_BYTES", 64 * 1024)  # read at call time
    report = read_report(big)
    assert report.capped and report.bytes_read == 64 * 1024 and "larger than" in report.read_error
    assert read_report(Path("/dev/zero")).read_error == "zero is not a regular file"
    assert "wrote no XML" in read_report(tmp_path / "missing.xml").read_error


# ---------------------------------------------------------------- attribution
BASE = 0x4876000
LIB = "/opt/ort/libonnxruntime.so.1.21.0"
INFO = LibraryInfo(path=LIB, sha256="0" * 64, build_id=None,
                   sections=((".data", 0xF52000, 0xF5217C), (".bss", 0xF52180, 0xF55F98)),
                   image_end=0xF55F98, pairs=((0xF52950, 0xF52040),))


def _witness(calls: int = 1, images: bool = True) -> RaceObservation:
    seen = tuple(WitnessCall(seq=i, tid=10 + i, t_ns=i, context="0x7000",
                             allocator=f"{BASE + 0xF52040:#x}", status=0) for i in range(calls))
    return RaceObservation(True, seen, None, ((LIB, BASE),) if images else ())


def _race(offset: int, size: int = 8) -> Race:
    return Race("ConflictingAccess", "store", BASE + offset, size, 3, None, (), (), None)


def _report(*races: Race, finished: bool = True, error: str | None = None) -> ToolReport:
    return ToolReport("drd", "3.24.0", races, {}, finished, None, 100, error)


def _payload(report: ToolReport, witness: RaceObservation = None, info=INFO) -> dict:
    return detector_payload("drd", "3.24.0", "artifacts/x/detector.xml", report,
                            witness or _witness(), LIB, info)


def test_race_on_either_static_is_on_target():
    payload = _payload(_report(_race(0xF52040), _race(0xF52958), _race(0xF528B0)))
    assert payload["on_target"] is True and payload["on_target_race_count"] == 2
    targets = [(r["target"], r["offset"], r["section"], r["class"]) for r in payload["races"]]
    assert targets == [(WRAPPER, "0xf52040", ".data", "on_target"),
                       (ALLOCATOR_PTR, "0xf52958", ".bss", "on_target"),
                       (None, "0xf528b0", ".bss", "other")]
    assert payload["evidence"]["wrapper"] == {"address": f"{BASE + 0xF52040:#x}",
                                              "offset": "0xf52040", "size": 48}
    assert payload["evidence"]["allocator_ptr"]["offset"] == "0xf52950"


def test_extents_end_where_the_statics_end():
    # the wrapper is 48 bytes, the AllocatorPtr 16: the words just past them are other
    payload = _payload(_report(_race(0xF52040 + 48), _race(0xF52950 + 16), _race(0xF52038)))
    assert payload["on_target"] is False and payload["on_target_race_count"] == 0
    assert "none of the 3 races" in payload["reason"]
    # a 16-byte access that starts before the wrapper and reaches into it overlaps
    assert _payload(_report(_race(0xF52038, 16)))["on_target"] is True


def test_no_claim_without_address_evidence():
    races = _report(_race(0xF52040))
    unknown = [
        _payload(races, RaceObservation(False, reason="the race witness was off")),
        _payload(races, _witness(images=False)),
        _payload(races, _witness(calls=0)),
    ]
    for payload in unknown:
        assert payload["on_target"] is None and "no address evidence" in payload["reason"]
        assert payload["races"][0]["class"] == "other"


def test_false_needs_a_complete_report_and_both_extents():
    assert _payload(_report())["on_target"] is False
    assert _payload(_report(finished=False))["on_target"] is None
    cut = _payload(_report(error="the XML is cut or malformed (x)"))
    assert cut["on_target"] is None and "could not be read whole" in cut["reason"]
    blind = LibraryInfo(**{**INFO.__dict__, "pairs": (), "error": None})
    unknown = _payload(_report(), info=blind)
    assert unknown["on_target"] is None and "AllocatorPtr static is not located" in unknown["reason"]
    # a race on the wrapper is still evidence when the AllocatorPtr is not located
    assert _payload(_report(_race(0xF52040)), info=blind)["on_target"] is True


def test_record_on_target_reads_records_and_dicts():
    payload = _payload(_report(_race(0xF52040)))
    record = LaunchRecord(launch_id="c-00000", index=0, attempt=1, label="c", target="host",
                          device="host:x", scenario="coldstart://run?id=c-00000",
                          outcome=Outcome.COMPLETED, extra={"detector": payload})
    assert record_on_target(record) is True
    again = LaunchRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert record_on_target(again) is True and record_on_target(again.to_dict()) is True
    assert record_on_target({"detector": {"on_target": None}}) is None
    assert record_on_target({"outcome": "completed"}) is None


# ---------------------------------------------------------------- the statics' extents
def test_allocator_ptr_from_the_disassembly():
    # lines of `objdump -d --no-show-raw-insn` of Debian 13's libonnxruntime.so.1.21.0
    # (build id 6acc772c4913fd001c22c84906bc5c47928fb75f), GetStoredAllocator's dynamic
    # init of the wrapper (`context = ort_allocator.get()`)
    lines = [
        "0000000000298590 <OrtSessionOptionsAppendExecutionProvider_Dnnl@@VERS_1.21+0x8f1c0>:",
        "  298633:\tmov    0xcba316(%rip),%rax        # f52950 <OrtSessionOptionsAppend>",
        "  29863a:\tmov    %rbp,%rdi",
        "  29863d:\tmov    %rax,0xcb99fc(%rip)        # f52040 <OrtSessionOptionsAppend>",
        "  298644:\tcall   97c10 <__cxa_guard_release@plt>",
        "  29864e:\tmov    0xcb8000(%rip),%rcx        # f52960 <x>",
        "  298655:\tmov    %rdx,0xcb7000(%rip)        # f52970 <x>",  # another register
    ]
    sections = ((".data", 0xF52000, 0xF5217C), (".bss", 0xF52180, 0xF55F98))
    assert _pairs(lines, sections) == [(0xF52950, 0xF52040)]
    info = LibraryInfo(LIB, "0" * 64, None, sections, 0xF55F98, ((0xF52950, 0xF52040),))
    offset, how = allocator_ptr_offset(info, 0xF52040)
    assert offset == 0xF52950 and "ort_allocator.get()" in how
    offset, how = allocator_ptr_offset(info, 0xF52100)
    assert offset is None and "no rip-relative load" in how


def test_witness_images_line_is_parsed():
    lines = ['{"event":"loaded","pid":1,"t_ns":5,"resolved":false}',
             '{"event":"loaded","pid":1,"t_ns":6,"resolved":true}',
             '{"event":"images","objects":[{"name":"","base":"0x0"},'
             '{"name":"/usr/lib/libonnxruntime.so.1.21","base":"0x4876000"}]}',
             '{"event":"xnn_initialize","seq":0,"tid":7,"t_ns":9,"allocator":"0x57c8040",'
             '"context":"0x6fd2cc0","status":0}']
    seen = parse_witness(lines)
    assert seen.available and seen.images == (("", 0), ("/usr/lib/libonnxruntime.so.1.21",
                                                         0x4876000))
    assert "images" not in seen.to_dict()


# ---------------------------------------------------------------- bad input
def test_tool_names_are_checked():
    assert check_tool_name("drd") == "drd"
    assert check_tool_name("tsan") == "tsan"
    with pytest.raises(UsageError, match="unknown race detector"):
        check_tool_name("asan")
    with pytest.raises(UsageError, match="host target only"):
        check_tool_name("drd", "android")


@pytest.mark.parametrize("args, fragment", [
    (("run", "android", "--detector", "drd"), "works on the host and rn-host targets only"),
    (("run", "appium", "--detector", "helgrind"), "works on the host and rn-host targets only"),
    (("run", "host", "--detector", "memcheck"), "unknown race detector 'memcheck'"),
])
def test_bad_detector_arguments_are_one_line(args, fragment):
    one_line_error(coldstart(*args), fragment)


@pytest.mark.host
def test_missing_valgrind_is_one_line(tmp_path):
    # a runtime that was prepared without the detector: copy its description only
    from kit.targets.host import load_runtime, runtime_dir

    runtime = load_runtime()  # needs `coldstart runtime prepare`, as every host test does
    cache = tmp_path / "cache"
    (cache / "runtimes" / runtime.name).mkdir(parents=True)
    (cache / "runtimes" / runtime.name / "runtime.json").write_text(
        (runtime_dir(runtime.name) / "runtime.json").read_text())
    proc = coldstart("run", "host", "--detector", "drd", "--no-witness", "--launches", "1",
                     "--out", str(tmp_path / "c"), env={"COLDSTART_CACHE": str(cache)})
    one_line_error(proc, "no race detector (valgrind) is set up for runtime")
