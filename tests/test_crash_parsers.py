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
    ("08-17 19:29:52.131: E/CRASH(8989): backtrace:", "time", "CRASH", 8989, "backtrace:"),
    ("04-12 11:37:19.164 1221-1221/? A/DEBUG: backtrace:", "studio", "DEBUG", 1221,
     "backtrace:"),
    ("05-27 15:08:42.220      145-145/? I/DEBUG\ufe55 backtrace:", "studio", "DEBUG", 145,
     "backtrace:"),
    ("E AndroidRuntime: FATAL EXCEPTION: main", "tag", "AndroidRuntime", None,
     "FATAL EXCEPTION: main"),
    ("08-17 19:29:52.131 E/CRASH( 8989): backtrace:", "time", "CRASH", 8989, "backtrace:"),
    ("2025-03-31\t13:17:21.785\t23022\t23022\tF\t\tDEBUG\t\t#33 pc 003127b5  /x/libart.so "
     "(f+1) (BuildId: 72ac)", "tabs", "DEBUG", 23022, "#33 pc 003127b5  /x/libart.so (f+1) "
     "(BuildId: 72ac)"),
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


def test_paste_marks_are_removed_and_said() -> None:
    from kit.crash._paste import tidy_paste
    quoted, notes = tidy_paste("> Exception Type: Unknown (SIGSEGV)\n> \n> Thread 0 Crashed:")
    assert quoted == "Exception Type: Unknown (SIGSEGV)\n\nThread 0 Crashed:"
    assert notes == ["pasted as a quote: '> ' markers removed"]
    ctest, notes = tidy_paste("714: READ of size 4\n714:     #0 0x1 in f()\n714: freed by")
    assert ctest.startswith("READ of size 4\n    #0") and notes == [
        "a test runner's '714: ' line prefix removed"]
    html, notes = tidy_paste("&quot;main&quot; prio=5 tid=1 NATIVE")
    assert html == '"main" prio=5 tid=1 NATIVE' and notes == ["HTML entities (&quot; ...) decoded"]
    fenced, notes = tidy_paste("```\nsignal 11 (SIGSEGV)\n```")
    assert fenced == "signal 11 (SIGSEGV)" and notes == []
    plain = "F/libc ( 1): Fatal signal 11 (SIGSEGV) > 3"
    assert tidy_paste(plain) == (plain, [])


def test_pid_is_never_read_from_ppid() -> None:
    record = parse_text("*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n"
                        "Process info: ppid: 669, tid: 669\n"
                        "pid: 8110, tid: 8120, name: worker  >>> com.example <<<\n"
                        "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x8\n")
    assert (record.pid, record.tid, record.thread_name) == (8110, 8120, "worker")


def test_a_reporter_note_is_not_part_of_the_module() -> None:
    frame, note = parse_frame_line("#01 pc 000000000001c13c /lib/arm64/libmarsxlog.so "
                                   "[arm64-v8a::866a6e82e131530d00bcf0311d1a9863]")
    assert frame is not None
    assert (frame.module, frame.path, frame.build_id) == (
        "libmarsxlog.so", "/lib/arm64/libmarsxlog.so", "866a6e82e131530d00bcf0311d1a9863")
    assert note == ("frame #01: the reporter's note [arm64-v8a::866a6e82e131530d00bcf0311d1a9863]"
                    " is not part of the module name")


def test_ips_piece_wrapped_inside_tokens_is_read_by_keys() -> None:
    piece = ('{"imageOffset":9056,"symbol":"__cxa_throw","symbolLocation":92,"imageIndex":23},'
             '{"imageOffset":83628,"symbol":"_dispatch_workloop_work\ner_thread","\n'
             'symbolLocation":720,"imageIndex":25}]},{"id":5,"frames":[]')
    record = parse_text(piece)
    assert (record.format, record.kind) == ("ips-partial", "native")
    assert [(f.symbol, f.offset, f.pc) for f in record.frames] == [
        ("__cxa_throw", 92, "0x2360"), ("_dispatch_workloop_worker_thread", 720, "0x146ac")]


def test_sanitizer_frame_shapes() -> None:
    from kit.crash.sanitizer import parse_sanitizer_frame
    frame = parse_sanitizer_frame("    #1 0x748e3f498884  (/opt/lib/libonnxruntime.so.1.17.1+"
                                  "0x698884) (BuildId: 447ab91a)")
    assert frame is not None
    assert (frame.module, frame.pc, frame.symbol, frame.build_id) == (
        "libonnxruntime.so.1.17.1", "0x698884", None, "447ab91a")
    frame = parse_sanitizer_frame("    #2 MlasStoreFloat32x4(float*, float vector[4]) /src/mlas/"
                                  "mlasi.h:398:18 (libonnxruntime.so.0.4.0+0x484aa4)")
    assert frame is not None
    assert (frame.symbol, frame.file, frame.line, frame.module) == (
        "MlasStoreFloat32x4(float*, float vector[4])", "/src/mlas/mlasi.h", 398,
        "libonnxruntime.so.0.4.0")
    frame = parse_sanitizer_frame("    #5 0x5639aa97ffd6 in testcase main.c:25")
    assert frame is not None and (frame.symbol, frame.file, frame.line) == ("testcase", "main.c", 25)


def test_lldb_frames_lose_argument_values_and_name_their_platform() -> None:
    record = parse_text("* thread #1, name = 'ui', stop reason = signal SIGSEGV: invalid address "
                        "(fault address: 0x5)\n  * frame #0: 0x96879d38 libflutter.so\n"
                        "    frame #1: 0xb0eade88 libutils.so`android::Looper::pollInner(int) + 612\n"
                        "    frame #2: 0x000ef47e IVPlayer`f(self=0x15d58530, n=2) at F.m:262:3\n")
    assert record.platform == "android"
    assert [(f.module, f.symbol, f.offset, f.file) for f in record.frames] == [
        ("libflutter.so", None, None, None),
        ("libutils.so", "android::Looper::pollInner(int)", 612, None),
        ("IVPlayer", "f", None, "F.m")]


def test_gdb_frames_continued_on_the_next_line_are_joined() -> None:
    record = parse_host(11, "Program terminated with signal 11, Segmentation fault.\n"
                            "#0  a::f (this=0x1,\nsrc=0x2, n=3) at src/a.cc:364\n"
                            "(gdb) bt\n"
                            "#0  a::f (this=0x1,\nsrc=0x2, n=3) at src/a.cc:364\n"
                            "#1  0x00002aaaaaac12a3 in a::g (this=0x1)\nat src/a.cc:2023\n")
    assert [(f.index, f.symbol, f.file, f.line) for f in record.frames] == [
        (0, "a::f", "src/a.cc", 364), (1, "a::g", "src/a.cc", 2023)]


@pytest.mark.parametrize("line,symbol,file,line_no", [
    ("  at android.os.Handler.handleCallback (Handler.java:938)", "android.os.Handler.handleCallback",
     "Handler.java", 938),
    ("  at java.lang.reflect.Method.invoke", "java.lang.reflect.Method.invoke", None, None),
    ("2 com.facebook.react.bridge.ModuleHolder.getModule(SourceFile:168)",
     "com.facebook.react.bridge.ModuleHolder.getModule", "SourceFile", 168),
    ("    MessageQueue.java:-2 - android.os.MessageQueue.nativePollOnce",
     "android.os.MessageQueue.nativePollOnce", "MessageQueue.java", -2),
    ("com.facebook.react.bridge.JavaMethodWrapper.invoke (JavaMethodWrapper.java:372);",
     "com.facebook.react.bridge.JavaMethodWrapper.invoke", "JavaMethodWrapper.java", 372),
])
def test_java_frame_shapes(line: str, symbol: str, file: str | None, line_no: int | None) -> None:
    from kit.crash._java import java_frame
    frame = java_frame(0, line)
    assert frame is not None and (frame.symbol, frame.file, frame.line) == (symbol, file, line_no)


@pytest.mark.parametrize("line,symbol,module,line_no", [
    ("runPipeline@1:215731", "runPipeline", None, 1),
    ("apply@-1", "apply", None, None),
    ("anonymous (address at@1:1082033", "anonymous", None, 1),
    ("    at ExpoRoot (http://192.168.1.153:8081/node_modules/expo-router/entry.bundle//&platform"
     "=ios&dev=true:148418:28)", "ExpoRoot", "entry.bundle", 148418),
    ("at src/pipeline.ts:41:23 in runPipeline", "runPipeline", "pipeline.ts", 41),
    ("at [native code]:null in callFunctionReturnFlushedQueue", "callFunctionReturnFlushedQueue",
     None, None),
])
def test_js_frame_shapes(line: str, symbol: str, module: str | None, line_no: int | None) -> None:
    from kit.crash._java import js_frame
    frame = js_frame(0, line)
    assert frame is not None and (frame.symbol, frame.module, frame.line) == (
        symbol, module, line_no)


@pytest.mark.parametrize("name,family", [
    ("public/macos/ips-fragment-frames-array.ips", "ips-partial"),
    ("public/host/asan-uaf-ctest-prefix.txt", "sanitizer"),
    ("public/host/valgrind-terminating-sigsegv.txt", "valgrind"),
    ("public/host/valgrind-address-not-stackd.txt", "valgrind"),
    ("public/ios/frames-only-no-header.txt", "crash-text"),
    ("public/ios/watchdog-header-only.crash", "crash-text"),
    ("public/android/lldb-android-libflutter.txt", "lldb"),
    ("ios/xcode-navigator-xnnpack-create.txt", "xcode"),
    ("public/android/anr-summary-reanimated.txt", "android"),
])
def test_detect_family_says_why(name: str, family: str) -> None:
    from kit.crash import detect_family
    from kit.crash._paste import tidy_paste
    text, _ = tidy_paste((DATA / name).read_text())
    got, why = detect_family(text)
    assert got == family and why


@pytest.mark.parametrize("first,second", [
    ("public/android/ort-22013-raw-tombstone-no-frames.txt",
     "public/android/tombstone-starts-at-signal-line.txt"),
    ("android/tombstone-full-xnnpack-create.txt",
     "public/android/ort-22013-raw-tombstone-no-frames.txt"),
    ("public/android/tombstone-starts-at-signal-line.txt",
     "android/tombstone-full-xnnpack-create.txt"),
])
def test_two_tombstones_in_one_text_read_only_the_first(first: str, second: str) -> None:
    alone = parse_text((DATA / first).read_bytes())
    both = parse_text((DATA / first).read_bytes() + b"\n" + (DATA / second).read_bytes())
    fields = ("signal", "code", "fault_address", "pid", "tid", "process", "abort_message")
    assert [getattr(both, f) for f in fields] == [getattr(alone, f) for f in fields]
    assert both.frames == alone.frames
    assert "the text holds another tombstone after this one: only the first is read" \
        in both.notes


def test_apple_frames_with_a_symbol_comment_read_symbol_offset_and_pc() -> None:
    # ReProvision's paste (a jailbreak symbolicator): "0xADDR 0xBASE + 0xOFF  // sym + 0xN";
    # the crashed thread there has no frames, so name thread 6 the crashed one
    text = (DATA / "public/ios/thread-state-names-crashed-thread.crash").read_text()
    text = text.replace("Thread 6:\n", "Thread 6 Crashed:\n").split("\n\nThread 0 crashed")[0]
    record = parse_text(text)
    assert record.thread_index == 6 and len(record.frames) == 11
    first, fifth = record.frames[0], record.frames[5]
    assert (first.module, first.symbol, first.offset, first.pc) == (
        "libsystem_kernel.dylib", "mach_msg_trap", 8, "0x3634")
    assert (fifth.symbol, fifth.offset, fifth.pc) == (
        "-[NSRunLoop(NSRunLoop) runMode:beforeDate:]", 0xe4, "0x7824")
