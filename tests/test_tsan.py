"""``--detector tsan``: ThreadSanitizer's reports read (recorded from the calibration
programs under the kit's Debian root, tests/data/tsan/), attributed by address as DRD's are,
the environment a launch gets, and the refusals. The real runs are in
tests/test_ortbuild_host.py and benchmarks/bench_tsan.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kit.errors import UsageError
from kit.targets.host.detector import DETECTORS, check_tool_name, make_detector
from kit.targets.host.detector.attribute import detector_payload
from kit.targets.host.detector.report import ToolReport
from kit.targets.host.detector.statics import LibraryInfo
from kit.targets.host.detector.tsan import (TsanDetector, parse_tsan_text, read_reports,
                                            tsan_env)
from kit.targets.host.witness.race import RaceObservation

DATA = Path(__file__).resolve().parent / "data" / "tsan"

#: an ORT-shaped report: the frames and location as the instrumented library prints them
ORT_REPORT = """\
==================
WARNING: ThreadSanitizer: data race (pid=4242)
  Write of size 8 at 0x7f0000f52040 by thread T2 (mutexes: write M0):
    #0 onnxruntime::XnnpackExecutionProvider::CreatePreferredAllocators() /opt/coldstart-ort/1.21.0/src/onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc:194 (libonnxruntime.so.1.21.0+0x2b6d4e) (BuildId: 6acc)
    #1 onnxruntime::InferenceSession::Initialize() <null> (libonnxruntime.so.1.21.0+0x1a0000) (BuildId: 6acc)

  Previous write of size 8 at 0x7f0000f52040 by thread T1:
    #0 onnxruntime::XnnpackExecutionProvider::CreatePreferredAllocators() /opt/coldstart-ort/1.21.0/src/onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc:194 (libonnxruntime.so.1.21.0+0x2b6d4e) (BuildId: 6acc)

  Location is global 'onnxruntime::xnnpack::GetStoredAllocator()::xnn_allocator_wrapper_' of size 48 at 0x7f0000f52040 (libonnxruntime.so.1.21.0+0xf52040)

  Mutex M0 (0x7b0c00000000) created at:
    #0 pthread_mutex_lock ../../../../src/libsanitizer/sanitizer_common/sanitizer_common_interceptors.inc:4481 (libtsan.so.2+0x5f8d2)

SUMMARY: ThreadSanitizer: data race xnnpack_execution_provider.cc:194 in CreatePreferredAllocators
==================
==================
WARNING: ThreadSanitizer: data race (pid=4242)
  Read of size 8 at 0x7f0000e00010 by main thread:
    #0 onnxruntime::logging::LoggingManager::Log() <null> (libonnxruntime.so.1.21.0+0x300000)

  Previous write of size 8 at 0x7f0000e00010 by thread T3:
    #0 <null> <null> (libonnxruntime.so.1.21.0+0x300100)

  Location is global '<null>' at 0x000000000000 (libonnxruntime.so.1.21.0+0xe00010)

SUMMARY: ThreadSanitizer: data race (libonnxruntime.so.1.21.0+0x300000)
==================
==================
WARNING: ThreadSanitizer: lock-order-inversion (potential deadlock) (pid=4242)
  Cycle in lock order graph: M0 => M1 => M0
==================
ThreadSanitizer: reported 3 warnings
"""
LIB = "/opt/variants/baseline-tsan/lib/libonnxruntime.so.1.21.0"
BASE = 0x7f0000000000


def test_the_calibration_reports_read_as_recorded():
    races, other, fatal = parse_tsan_text((DATA / "racy-calibration.txt").read_text())
    assert fatal is None and other == {}
    assert [(r.access, hex(r.address), r.size, r.thread, r.other_thread) for r in races] == [
        ("read", "0x7f32ab137210", 8, 2, 1), ("write", "0x7f32ab137140", 8, 3, 1),
        ("write", "0x7f32ab1371a8", 8, 3, 1)]
    first = races[0]
    assert first.stack[0].module == "ld-linux-x86-64.so.2" and first.stack[0].offset == 0x27ee
    assert first.stack[0].symbol is None and len(first.stack) == 3
    assert first.where == ("Location is global '<null>' at 0x000000000000 "
                           "(ld-linux-x86-64.so.2+0x6210)")
    half, _, _ = parse_tsan_text((DATA / "half-fix-calibration.txt").read_text())
    assert [hex(r.address) for r in half] == ["0x7fb735e4f160", "0x7fb735e4f1c8"]
    # the previous access's stack: a symbol with its source, and one without
    frame = half[1].other_stack[1]
    assert (frame.symbol, frame.line, frame.module) == ("pthread_once", 1587, "libtsan.so.2")
    assert half[1].other_stack[0].symbol == "_dl_catch_exception"


def _witness():
    return SimpleNamespace(available=True, reason=None, images=(("", 0), (LIB, BASE)),
                           calls=(SimpleNamespace(allocator=hex(BASE + 0xf52040)),))


def _info():
    return LibraryInfo(path=LIB, sha256="x", build_id=None,
                       sections=((".data", 0xf52000, 0xf53000), (".bss", 0xe00000, 0xf00000)),
                       image_end=0x1000000, pairs=((0xf52950, 0xf52040),))


def test_an_ort_report_is_attributed_by_address_and_the_rest_counted_apart():
    races, other, _ = parse_tsan_text(ORT_REPORT)
    assert other == {"lock-order-inversion (potential deadlock)": 1}
    report = ToolReport("tsan", None, tuple(races), other, True, None, 1, None)
    payload = detector_payload("tsan", "g++ 14", "artifacts/1/tsan-report.txt", report,
                               _witness(), LIB, _info())
    assert payload["on_target"] is True and payload["race_count"] == 2
    assert payload["on_target_race_count"] == 1
    on, elsewhere = payload["races"]
    assert (on["target"], on["offset"], on["section"]) == ("xnn_allocator wrapper",
                                                           "0xf52040", ".data")
    assert on["stack"][0] == {"module": "libonnxruntime.so.1.21.0", "offset": "0x2b6d4e",
                              "symbol": "onnxruntime::XnnpackExecutionProvider::"
                                        "CreatePreferredAllocators()"}
    assert on["thread"] == 2 and on["other_thread"] == 1
    assert elsewhere["class"] == "other" and elsewhere["thread"] == 0  # the main thread
    assert elsewhere["offset"] == "0xe00010"


def test_no_race_on_the_statics_is_false_only_when_the_launch_ended_by_itself():
    races, other, _ = parse_tsan_text(ORT_REPORT.split("==================\n", 2)[2])
    for finished, expected in ((True, False), (False, None)):
        report = ToolReport("tsan", None, tuple(races), other, finished, None, 1, None)
        payload = detector_payload("tsan", None, "x", report, _witness(), LIB, _info())
        assert payload["on_target"] is expected, payload["reason"]


def test_a_fatal_runtime_line_is_found():
    text = "FATAL: ThreadSanitizer: unexpected memory mapping 0x7f0000000000-0x7f0000001000\n"
    assert parse_tsan_text(text)[2].startswith("FATAL: ThreadSanitizer: unexpected memory")


def test_reports_are_read_bounded_and_never_from_a_fifo(tmp_path):
    big = tmp_path / "tsan.1"
    with open(big, "wb") as fh:
        fh.truncate(3 * 1024 ** 3)  # sparse
    fifo = tmp_path / "tsan.2"
    os.mkfifo(fifo)
    text, error = read_reports([big, fifo])
    assert len(text) == 16 * 1024 * 1024
    assert error is not None


def test_the_environment_keeps_the_workloads_status_and_plain_paths(tmp_path):
    env = tsan_env(tmp_path / "tsan")
    assert f"log_path={tmp_path}/tsan" in env["TSAN_OPTIONS"]
    assert "exitcode=0" in env["TSAN_OPTIONS"].split()
    with pytest.raises(UsageError, match="TSAN_OPTIONS cannot carry"):
        tsan_env(tmp_path / "a b:c" / "tsan")


def test_the_detector_names_and_the_refusals():
    assert "tsan" in DETECTORS and check_tool_name("tsan") == "tsan"
    plain = SimpleNamespace(name="baseline", sanitizer=None, ort_library=LIB, build={})
    with pytest.raises(UsageError, match="not built with ThreadSanitizer") as err:
        make_detector("tsan", plain)
    assert "build-ort --name baseline --tsan" in err.value.hint
    found = make_detector("tsan", SimpleNamespace(name="b", sanitizer="tsan", ort_library=LIB,
                                                  build={"compiler": "g++ 14"}))
    assert isinstance(found, TsanDetector) and found.describe()["tool"] == "tsan"


def test_run_host_refuses_tsan_on_debians_binary_in_one_line(tmp_path):
    """Debian's own library cannot be instrumented: one line, exit 2, before any launch."""
    cache = tmp_path / "cache"
    folder = cache / "runtimes" / "debian"
    folder.mkdir(parents=True)
    lib = tmp_path / "libonnxruntime.so"
    lib.write_bytes(b"x")
    (folder / "runtime.json").write_text(
        '{"name": "debian", "kind": "ort-root", "root": "%s", "include_dir": "%s", '
        '"lib_dir": "%s", "ort_library": "%s", "xnnpack_library": null}'
        % (tmp_path, tmp_path, tmp_path, lib))
    proc = subprocess.run([sys.executable, "-m", "kit.cli", "run", "host", "--runtime", "debian",
                           "--detector", "tsan", "--launches", "1", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True,
                          env={**os.environ, "COLDSTART_CACHE": str(cache)},
                          cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "--detector tsan needs a runtime the kit built" in proc.stderr


STATICS_SOURCE = """
#include <memory>
struct xnn_allocator { void* context; void* f[5]; };
namespace onnxruntime { namespace xnnpack {
std::pair<std::shared_ptr<int>&, xnn_allocator*> GetStoredAllocator() {
  static std::shared_ptr<int> ort_allocator;
  static xnn_allocator xnn_allocator_wrapper_ = {ort_allocator.get(), {}};
  return {ort_allocator, &xnn_allocator_wrapper_};
}
}}
"""


@pytest.mark.skipif(__import__("shutil").which("g++") is None, reason="needs g++")
def test_the_statics_are_found_in_the_symbol_table_not_their_guards(tmp_path):
    from kit.targets.host.detector.tsan import symbol_statics

    src = tmp_path / "init.cc"
    src.write_text(STATICS_SOURCE)
    lib = tmp_path / "libinit.so"
    subprocess.run(["g++", "-shared", "-fPIC", "-O2", str(src), "-o", str(lib)], check=True)
    found = symbol_statics(str(lib))
    assert found is not None
    table = subprocess.run(["nm", str(lib)], capture_output=True, text=True).stdout
    offsets = {line.split()[-1]: int(line.split()[0], 16) for line in table.splitlines()
               if len(line.split()) == 3}
    allocator = next(v for k, v in offsets.items()
                     if k.endswith("13ort_allocator") and not k.startswith("_ZGV"))
    wrapper = next(v for k, v in offsets.items()
                   if k.endswith("22xnn_allocator_wrapper_") and not k.startswith("_ZGV"))
    assert found == (allocator, wrapper)
    assert any(k.startswith("_ZGV") and k.endswith("13ort_allocator") for k in offsets)
    assert symbol_statics(str(src)) is None  # not ELF: no answer, no exception
