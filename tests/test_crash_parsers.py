"""Parser details the fixture table does not pin down: prefixes, exit-info, host, JSON repair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.crash import ExitReason, parse_exit_info, parse_host, parse_text
from kit.crash import _demangle
from kit.crash._text import split_logcat
from kit.crash.apple import close_truncated_json
from kit.crash.tombstone import parse_frame_line

DATA = Path(__file__).parent / "data" / "crashes"


@pytest.mark.parametrize("line,style,tag,pid,msg", [
    ("03-14 09:31:02.201  9120  9178 F libc    : Fatal signal 11", "threadtime", "libc", 9120,
     "Fatal signal 11"),
    ("2025-03-14 09:31:02.201  9120  9178 F DEBUG   : backtrace:", "threadtime", "DEBUG", 9120,
     "backtrace:"),
    ("03-14 09:31:02.201  u0_a187  9120  9178 F DEBUG   : backtrace:", "threadtime", "DEBUG",
     9120, "backtrace:"),
    ("F/libc    ( 7311): Fatal signal 11", "brief", "libc", 7311, "Fatal signal 11"),
    ("2025-03-14 11:15:07.402  5501-5544  libc   com.coldstart.wakeword   A  Fatal signal 7",
     "studio", "libc", 5501, "Fatal signal 7"),
    ("2025-03-14 11:15:07.402 5501-5544/com.coldstart.wakeword A/libc: Fatal signal 7",
     "studio", "libc", 5501, "Fatal signal 7"),
])
def test_logcat_prefix_styles(line: str, style: str, tag: str, pid: int, msg: str) -> None:
    got_style, lines = split_logcat([line, line])
    assert got_style == style
    assert (lines[0].tag, lines[0].pid, lines[0].msg) == (tag, pid, msg)


def test_raw_lines_stay_raw() -> None:
    style, lines = split_logcat(["backtrace:", "  #00 pc 0000 /x.so"])
    assert style == "raw" and lines[0].tag is None and lines[1].msg == "  #00 pc 0000 /x.so"


def test_frame_line_fields() -> None:
    frame, note = parse_frame_line(
        "  #07 pc 00000000011e0f00  /data/app/~~a==/p-b==/base.apk!libonnxruntime.so "
        "(offset 0x2e4000) (ns::K::f(std::pair<int, int>)+812) (BuildId: 5B1D)")
    assert note is None
    assert frame is not None
    assert (frame.index, frame.pc, frame.module, frame.symbol, frame.offset, frame.build_id) == (
        7, "0x00000000011e0f00", "base.apk!libonnxruntime.so", "ns::K::f(std::pair<int, int>)",
        812, "5b1d")
    assert frame.path == "/data/app/~~a==/p-b==/base.apk!libonnxruntime.so"
    anon, _ = parse_frame_line("#00 pc 000000771b2c4018  [anon:scudo:primary]")
    assert anon is not None and anon.module == "[anon:scudo:primary]" and anon.symbol is None
    cut, note = parse_frame_line("#01 pc 0000000001a0b1c4  /x/libz.so (offset 0x1000) (xnn_cre")
    assert cut is not None and cut.symbol == "xnn_cre" and cut.module == "libz.so"
    assert note == "frame #01 cut inside its symbol"
    assert parse_frame_line("not a frame") == (None, None)


def test_exit_info_entries() -> None:
    entries = parse_exit_info((DATA / "android" / "exit-info.txt").read_text())
    assert [(e.index, e.pid, e.reason, e.reason_text, e.subreason, e.subreason_text, e.status)
            for e in entries] == [
        (0, 9120, 5, "APP CRASH(NATIVE)", 0, "UNKNOWN", 11),
        (1, 9031, 10, "USER REQUESTED", 23, "FORCE STOP", 0),
        (2, 8210, 3, "LOW_MEMORY", 0, "UNKNOWN", 0)]
    first = entries[0]
    assert first.timestamp == "2025-03-14 09:31:02.302"
    assert first.process == "com.coldstart.wakeword"
    assert first.package == "com.coldstart.wakeword"
    assert first.description == "crash"
    assert first.reason_enum is ExitReason.CRASH_NATIVE
    assert entries[1].description == "stop com.coldstart.wakeword due to from pid 9011"
    assert json.loads(json.dumps(first.to_dict()))["reason"] == 5


def test_exit_info_one_key_per_line() -> None:
    (entry,) = parse_exit_info((DATA / "android" / "exit-info-android11.txt").read_bytes())
    assert (entry.pid, entry.reason, entry.reason_text, entry.subreason, entry.status) == (
        7311, 6, "ANR", None, 0)
    assert entry.description == "user request after error: Input dispatching timed out"


def test_exit_info_cut_entry_says_so() -> None:
    (entry,) = parse_exit_info("ApplicationExitInfo #0:\n  timestamp=2025-03-14 09:31:02.302 pi")
    assert entry.pid is None and entry.reason is None
    assert entry.notes == ("no reason= field (entry cut?)", "no pid= field (entry cut?)")
    assert parse_exit_info("nothing here") == []


def test_host_signal_without_backtrace() -> None:
    record = parse_host(None, "all done\n")
    assert (record.kind, record.signal, record.frames) == ("unknown", None, ())
    assert record.notes == ("no signal and no backtrace: the workload did not crash by a "
                            "signal",)
    killed = parse_host(9, b"")
    assert killed.signal_name == "SIGKILL" and killed.kind == "unknown"
    bad = parse_host(-3, "x")
    assert bad.signal is None and "ignored exit signal -3" in bad.notes[0]


def test_host_bare_demangled_line_and_module_offset() -> None:
    record = parse_host(11, "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate"
                            "(void*, unsigned long, unsigned long)+0x40\n"
                            "./coldstart-workload(+0x1234) [0x55d0c0a01234]\n")
    assert record.frames[0].symbol == ("onnxruntime::xnnpack::(anonymous namespace)::"
                                       "xnn_aligned_allocate(void*, unsigned long, unsigned long)")
    assert record.frames[0].offset == 0x40
    assert (record.frames[1].module, record.frames[1].pc, record.frames[1].path) == (
        "coldstart-workload", "0x1234", "./coldstart-workload")


def test_demangle_falls_back_to_cxxfilt_binary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_demangle, "_library", lambda: None)
    mapping, note = _demangle.demangle_all(["_ZN11onnxruntime7xnnpack6MatMul7PrePackEv", "main"])
    assert note is None
    assert mapping == {"_ZN11onnxruntime7xnnpack6MatMul7PrePackEv":
                       "onnxruntime::xnnpack::MatMul::PrePack()"}
    monkeypatch.setattr(_demangle.shutil, "which", lambda name: None)
    mapping, note = _demangle.demangle_all(["_Z1fv"])
    assert mapping == {} and note is not None and "left mangled" in note


def test_demangle_library_keeps_invalid_names() -> None:
    mapping, note = _demangle.demangle_all(["_ZN11onnxruntime7xnnpack12_GLOBAL__N_120xnn_"
                                            "aligned_allocateEPvmm", "_Zgarbage"])
    assert note is None
    assert mapping["_Zgarbage"] == "_Zgarbage"
    assert mapping["_ZN11onnxruntime7xnnpack12_GLOBAL__N_120xnn_aligned_allocateEPvmm"] == (
        "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*, unsigned "
        "long, unsigned long)")


@pytest.mark.parametrize("text,expected", [
    ('{"a": [1, {"b": 2}, {"c": 3', '{"a": [1, {"b": 2}]}'),
    ('{"a": "}]", "b": {"c": [1]}, "d": tru', '{"a": "}]", "b": {"c": [1]}}'),
    ('{"a": 1', None),
    ('{"a": {"b": 1}}', '{"a": {"b": 1}}'),
])
def test_close_truncated_json(text: str, expected: str | None) -> None:
    assert close_truncated_json(text) == expected


def test_hint_selects_the_parser_and_unknown_hint_is_noted() -> None:
    text = (DATA / "host" / "gdb-reshape.txt").read_text()
    assert parse_text(text, hint="host").format == "host-gdb"
    record = parse_text(text, hint="nonsense")
    assert record.notes[0].startswith("unknown hint 'nonsense' ignored")
    assert record.format == "host-gdb"


def test_bytes_and_empty_input() -> None:
    assert parse_text(b"").notes == ("empty input",)
    assert parse_text(b"\xff\xfe\x00").format == "unknown"
    record = parse_text("\ufeff" + (DATA / "ios" / "jetsam.ips").read_text())
    assert record.format == "ips-jetsam" and record.process == "ColdstartWakeword"
