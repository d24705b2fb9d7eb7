"""Crash-paste families of issue #24 the fixture table does not pin down on its own: the
exact line shapes each reader takes (and the near misses it must not take)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.crash import classify, explain, parse_text

DATA = Path(__file__).parent / "data" / "crashes"


@pytest.mark.parametrize("prefix", ["", "03-14 09:31:02.201  8110  8120 F DEBUG   : ",
                                    "F/DEBUG   ( 8140): "])
def test_android14_pid_ppid_tid_line_without_star_line(prefix: str) -> None:
    text = "".join(prefix + line + "\n" for line in (
        "pid: 8110, ppid: 669, tid: 8120, name: mqt_native_modu  >>> com.example.app <<<",
        "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000008",
        "backtrace:",
        "      #00 pc 00000000011a4b10  /data/app/lib/arm64/libfoo.so (foo+24)",
        "      #01 pc 0000000001a1f0c4  /data/app/lib/arm64/libfoo.so (bar+8)"))
    record = parse_text(text)
    assert (record.kind, record.pid, record.tid, record.thread_name, record.process) == (
        "native", 8110, 8120, "mqt_native_modu", "com.example.app")
    assert record.signal_name == "SIGSEGV" and len(record.frames) == 2
    assert classify(record).crash_class.value == "other-native-crash"
