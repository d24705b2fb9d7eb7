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


@pytest.mark.parametrize("name,family,reader", [
    ("public/macos/hotspot-ort-19125-header-only.txt", "hotspot",
     "kit.crash.hotspot.read_hotspot"),
    ("public/macos/hotspot-ort-13976-native-frames-only.txt", "hotspot",
     "kit.crash.hotspot.read_hotspot"),
    ("public/host/mono-20834-native-stacktrace-no-symbols.txt", "mono",
     "kit.crash.mono.read_mono"),
    ("public/macos/mono-16689-native-frames-nsexception.txt", "mono",
     "kit.crash.mono.read_mono"),
    ("public/host/faulthandler-vision-4314-pytest-dots.txt", "faulthandler",
     "kit.crash.faulthandler.read_faulthandler"),
    ("public/host/faulthandler-lywsd02-18-journald-prefix.txt", "faulthandler",
     "kit.crash.faulthandler.read_faulthandler"),
    ("android/tombstone-body-ppid-pid-line.txt", "android",
     "kit.crash.android.parse_android_log"),
])
def test_explain_names_the_reader(name: str, family: str, reader: str) -> None:
    why = explain((DATA / name).read_bytes())
    assert why.family == family
    assert why.lines[0].startswith(f"detected: {family}: ")
    assert why.lines[1] == f"reader: {reader}"


def test_hotspot_native_frames_section_kinds_and_java_frames_block() -> None:
    record = parse_text(
        "#  SIGSEGV (0xb) at pc=0x00007f1, pid=7, tid=0x00007f8192ffd700\n"
        "# Java VM: OpenJDK 64-Bit Server VM (17.0.9+9, mixed mode, linux-aarch64)\n"
        "Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)\n"
        "C  [libonnxruntime.so+0x862cf]  OrtApis::ReleaseValue(OrtValue*)+0x1f\n"
        "V  [libjvm.so+0xa97f86]  Unsafe_CopyMemory0(JNIEnv_*, long)+0x106\n"
        "J 1234 c2 java.lang.Thread.run()V java.base@17.0.1 (17 bytes) @ 0x7f1 [0x7f+0x44]\n"
        "j  ai.onnxruntime.OnnxValue.close()V+0\n"
        "v  ~StubRoutines::call_stub 0x0000000119e32bc0\n"
        "C  0x00007f81a8dc4e79\n\n"
        "Java frames: (J=compiled Java code, j=interpreted, Vv=VM code)\n"
        "j  x.y()V+0\n")
    assert (record.format, record.platform, record.abi, record.pid, record.tid) == (
        "hotspot", "linux", "aarch64", 7, None)  # JDK 8's tid= is a pthread_t, not a tid
    assert [(f.module, f.symbol, f.offset, f.pc) for f in record.frames] == [
        ("libonnxruntime.so", "OrtApis::ReleaseValue(OrtValue*)", 31, "0x862cf"),
        ("libjvm.so", "Unsafe_CopyMemory0(JNIEnv_*, long)", 262, "0xa97f86"),
        (None, "java.lang.Thread.run", None, None),
        (None, "ai.onnxruntime.OnnxValue.close", None, None),
        (None, "~StubRoutines::call_stub", None, None),
        (None, None, None, "0x00007f81a8dc4e79")]


def test_hotspot_internal_error_is_an_abort_and_insufficient_memory_an_oom() -> None:
    internal = parse_text(
        "# A fatal error has been detected by the Java Runtime Environment:\n"
        "#  Internal Error (g1ConcurrentMark.cpp:1251), pid=42, tid=43\n"
        "#  guarantee(false) failed: bad mark\n")
    assert (internal.kind, internal.pid, internal.tid, internal.abort_message) == (
        "native", 42, 43, "guarantee(false) failed: bad mark")
    assert classify(internal).crash_class.value == "abort"
    oom = parse_text("#\n# There is insufficient memory for the Java Runtime Environment to "
                     "continue.\n# Native memory allocation (mmap) failed to map 1 bytes\n"
                     "# Problematic frame:\n")
    assert (oom.format, oom.kind) == ("hotspot", "oom")
    assert classify(oom).crash_class.value == "oom"


def test_mono_old_native_stacktrace_and_managed_frames() -> None:
    record = parse_text(
        "Got a SIGSEGV while executing native code. This usually indicates\n"
        "Native stacktrace:\n\n"
        "\t/usr/bin/mono() [0x4b73d8]\n"
        "\t/lib/x86_64-linux-gnu/libpthread.so.0(+0xfcb0) [0x7f0a3c9ddcb0]\n"
        "\t/usr/lib/libonnxruntime.so(OrtRun+0x1c) [0x7f0a3b000010]\n\n"
        "Stacktrace:\n\n"
        "  at <unknown> <0xffffffff>\n"
        "  at (wrapper managed-to-native) Microsoft.ML.OnnxRuntime.NativeMethods:OrtRun "
        "(intptr) <0x00057>\n"
        "  at Microsoft.ML.OnnxRuntime.InferenceSession:Run () <0x0012b>\n")
    assert (record.format, record.signal_name, record.kind) == ("mono", "SIGSEGV", "native")
    assert [(f.module, f.symbol, f.pc) for f in record.frames] == [
        ("mono", None, "0x4b73d8"), ("libpthread.so.0", None, "0xfcb0"),
        ("libonnxruntime.so", "OrtRun", "0x7f0a3b000010")]
    assert "2 managed frames (Managed Stacktrace) not kept: the native stack is the crash's" \
        in record.notes


def test_faulthandler_current_thread_c_stack_and_prefixes() -> None:
    record = parse_text(
        "Nov 07 00:33:55 tests/test_x.py::test_run Fatal Python error: Bus error\n"
        "Nov 07 00:33:55 \n"
        "Nov 07 00:33:56 Thread 0x00007f0000000001 (most recent call first):\n"
        'Nov 07 00:33:56   File "/usr/lib/python3.12/threading.py", line 324 in wait\n'
        "Nov 07 00:33:56 \n"
        "Nov 07 00:33:56 Current thread 0x00007f11c7772740 [pytest] (most recent call first):\n"
        'Nov 07 00:33:56   File "/home/u/ort.py", line 200 in run\n'
        'Nov 07 00:33:56   File "/home/u/test_x.py", line 7 in test_run\n'
        "Nov 07 00:33:56 \n"
        "Nov 07 00:33:56 Current thread's C stack trace (most recent call first):\n"
        'Nov 07 00:33:56   Binary file "/usr/lib/libonnxruntime.so.1", at OrtRun+0x1c '
        "[0x7f0a3b000010]\n"
        'Nov 07 00:33:56   Binary file "/lib/libc.so.6" [0x7f0a3c9ddcb0]\n')
    assert (record.format, record.platform, record.signal_name, record.exception) == (
        "faulthandler", "linux", "SIGBUS", "Fatal Python error: Bus error")
    assert (record.tid, record.thread_name) == (0x00007f11c7772740, "pytest")
    assert [(f.module, f.symbol, f.offset, f.pc, f.line) for f in record.frames] == [
        ("libonnxruntime.so.1", "OrtRun", 28, "0x7f0a3b000010", None),
        ("libc.so.6", None, None, "0x7f0a3c9ddcb0", None),
        ("ort.py", "run", None, None, 200), ("test_x.py", "test_run", None, None, 7)]
    assert record.notes == ("1 other thread: 0x00007f0000000001 (1 frames, top wait)",)


def test_py_fatal_error_message_is_an_abort() -> None:
    record = parse_text("Fatal Python error: PyThreadState_Get: the function must be called "
                        "with the GIL held\nPython runtime state: initialized\n\n"
                        "Current thread 0x00007f11c7772740 (most recent call first):\n"
                        '  File "/home/u/x.py", line 3 in <module>\n')
    assert record.abort_message == ("PyThreadState_Get: the function must be called with the "
                                    "GIL held")
    assert record.signal_name is None
    assert classify(record).crash_class.value == "abort"


def test_asan_sections_with_a_named_thread_stay_out_of_the_crash_frames() -> None:
    record = parse_text((DATA / "android/asan-named-thread-free-side-xnn-deallocate.txt")
                        .read_bytes())
    assert len(record.frames) == 3
    assert not any("xnn_deallocate" in (f.symbol or "") for f in record.frames)
    assert record.thread_name == "T5 (mqt_native_modu)"
    assert any(n.startswith("other stack (freed by thread T32 (AudioTrack) here): free | "
                            "onnxruntime::xnnpack::(anonymous namespace)::xnn_deallocate")
               for n in record.notes)
    assert classify(record).rule_id is None


@pytest.mark.parametrize("prefix,note", [
    ("wrap.sh: ", "a log tag's 'wrap.sh: ' line prefix removed"),
    ("[worker]: ", "a log tag's '[worker]: ' line prefix removed"),
    ("714: ", "a test runner's '714: ' line prefix removed"),
])
def test_a_log_tag_on_every_line_is_a_paste_mark(prefix: str, note: str) -> None:
    text = "".join(prefix + line + "\n" for line in (
        "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x10 at pc 0x1",
        "READ of size 4 at 0x10 thread T0",
        "    #0 0x1 in foo /src/a.cc:1:2",
        "    #1 0x2 in bar /src/a.cc:5:2"))
    record = parse_text(text)
    assert record.notes[0] == note
    assert [f.symbol for f in record.frames] == ["foo", "bar"]


@pytest.mark.parametrize("sep", [" ", "\t", "  "])
def test_one_line_ubsan_is_ubsan_and_its_message_ends_at_summary(sep: str) -> None:
    record = parse_text("a.cc:3:5: runtime error: signed integer overflow: 1 + 2147483647 "
                        f"cannot be represented in type 'int'{sep}SUMMARY: "
                        "UndefinedBehaviorSanitizer: undefined-behavior a.cc:3:5 in\n")
    assert (record.format, record.exception, record.message) == (
        "ubsan", "UndefinedBehaviorSanitizer: undefined-behavior",
        "signed integer overflow: 1 + 2147483647 cannot be represented in type 'int'")


@pytest.mark.parametrize("sep", [" ", "\n"])
@pytest.mark.parametrize("hint,cause", [(" (stl_vector.h)", "runtime error at stl_vector.h:1034"),
                                        ("", "runtime error at line 1034")])
def test_leetcode_judge_form_of_the_ubsan_line(sep: str, hint: str, cause: str) -> None:
    # LeetCode moves the location to the front and the file's name to the end of the message
    record = parse_text("Line 1034: Char 34: runtime error: addition of unsigned offset to "
                        f"0x6030000001c0 overflowed to 0x6030000001bc{hint}{sep}SUMMARY: "
                        "UndefinedBehaviorSanitizer: undefined-behavior /usr/bin/../lib/gcc/"
                        "x86_64-linux-gnu/9/../../../../include/c++/9/bits/stl_vector.h:1043:34\n")
    assert (record.format, record.code, record.message, record.cause) == (
        "ubsan", "undefined-behavior",
        "addition of unsigned offset to 0x6030000001c0 overflowed to 0x6030000001bc", cause)


@pytest.mark.parametrize("text,want", [
    ("**Scudo ERROR: corrupted chunk header**", "Scudo ERROR: corrupted chunk header"),
    ("a **b c** d", "a b c d"),
    ("foo(char**, char**)", "foo(char**, char**)"),      # C++, not Markdown
    ("*** *** *** ***", "*** *** *** ***"),               # a tombstone's star line
    ("`terminating`", "terminating"),
])
def test_unmark_removes_markdown_bold_and_code_spans_only(text: str, want: str) -> None:
    from kit.crash._draft import unmark
    assert unmark(text) == want


def test_bold_never_reaches_an_abort_message_or_a_signature() -> None:
    record = parse_text("Abort message: '**terminating** due to uncaught exception'\n"
                        "signal 6 (SIGABRT), code -1 (SI_QUEUE), fault addr --------\n"
                        "backtrace:\n"
                        "      #00 pc 000000000005e69f  /x/libc.so (abort+191)\n"
                        "      #01 pc 0000000000040cf1  /x/libfoo.so (**Foo::bar()**+8)\n")
    assert record.abort_message == "terminating due to uncaught exception"
    assert record.frames[1].symbol == "Foo::bar()"
    assert "**" not in classify(record).signature


def test_java_root_cause_signs_only_when_asked() -> None:
    record = parse_text((DATA / "android/java-fatal-wrapped-at-root-cause.txt").read_bytes())
    assert record.root_cause == ("ai.onnxruntime.OrtException: Error code - ORT_FAIL - "
                                 "message: xnnpack EP init")
    assert [f.symbol for f in record.frames] == [
        "com.coldstart.wakeword.ModelRegistry.load",        # joined across its wrap
        "com.coldstart.wakeword.MainActivity.onResume"]
    assert [f.symbol for f in record.cause_frames] == [
        "ai.onnxruntime.OrtSession.createSession", "ai.onnxruntime.OrtSession.<init>"]
    default = classify(record)
    by_cause = classify(record, sign_by="root-cause")
    assert default.signature.startswith("java.lang.RuntimeException | ")
    assert by_cause.signature == ("ai.onnxruntime.OrtException | "
                                  "ai.onnxruntime.OrtSession.createSession | "
                                  "ai.onnxruntime.OrtSession.<init>")
    assert by_cause.crash_class == default.crash_class


def test_cli_signs_by_the_root_cause_with_its_option(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from kit.cli import main
    name = str(DATA / "android/java-fatal-wrapped-at-root-cause.txt")
    assert main(["crash", "classify", "--json", "--java-root-cause", name]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["classification"]["signature"].startswith("ai.onnxruntime.OrtException | ")


def test_asan_inside_an_abort_message_keeps_the_tombstone_and_is_no_abort() -> None:
    text = (DATA / "android/tombstone-asan-abort-message.txt").read_text()
    record = parse_text(text)
    assert (record.source, record.format, record.signal_name, record.pid, record.tid,
            record.thread_name, record.process, record.exception) == (
        "tombstone", "asan", "SIGABRT", 8110, 8146, "mqt_native_modu",
        "com.coldstart.wakeword", "AddressSanitizer: heap-use-after-free")
    assert record.abort_message is None  # the report is read as a report, not signed as text
    # without the #32461 frames the sanitizer's error decides, not the abort it ends with
    other = parse_text(text.replace("onnxruntime::xnnpack::(anonymous namespace)::"
                                    "xnn_aligned_allocate", "Foo::bar")
                           .replace("xnn_create_fully_connected_nc_f32", "Foo::baz"))
    assert classify(other).crash_class.value == "other-native-crash"


def test_markdown_table_markup_is_a_paste_mark_and_pipes_elsewhere_are_kept() -> None:
    from kit.crash._paste import tidy_paste
    text, notes = tidy_paste("| # | Library | Function |\n|---|---|---|\n"
                             "| #00 pc 0001 | libfoo.so | (foo+1) |\n")
    assert (text, notes) == ("#00 pc 0001  libfoo.so  (foo+1)\n",
                             ["a Markdown table's markup removed (1 row)"])
    plain = "java.lang.IllegalStateException: a | b\n\tat x.Y.z(Y.java:1)\n"
    assert tidy_paste(plain) == (plain, [])


def test_a_ci_logs_time_stamps_are_a_paste_mark_when_most_lines_carry_one() -> None:
    lines = ("==7==ERROR: AddressSanitizer: heap-use-after-free on address 0x10 at pc 0x1",
             "WRITE of size 1 at 0x10 thread T2 (Sync actor 1000)",
             "    #0 0x1 in foo /src/a.cc:1:2",
             "",
             "previously allocated by thread T1 (Worker 1) here:",
             "    #0 0x2 in bar /src/a.cc:5:2")
    stamped = "\n".join(f"2021-04-13T11:54:23.{n:07d}Z {ln}".rstrip() + ("" if ln else " ")
                        for n, ln in enumerate(lines))
    record = parse_text(stamped)
    assert record.notes[0] == "a CI log's time stamps ('2021-04-13T11:54:23.5999584Z ') removed"
    assert (record.thread_name, [f.symbol for f in record.frames]) == (
        "T2 (Sync actor 1000)", ["foo"])
    assert "other stack (previously allocated by thread T1 (Worker 1) here): bar" in record.notes
    # one stamped line among plain ones is the report's own text, left as it is
    once = "2021-04-13T11:54:23.5999584Z started\n" + "\n".join(lines)
    assert not any("time stamps" in n for n in parse_text(once).notes)


def test_a_piece_whose_only_sanitizer_mark_is_a_named_alloc_header_is_read_as_asan() -> None:
    record = parse_text("    #3 0x7f0a in Notify net/a.cc:629:0\n"
                        "    #4 0x7f0b in Run base/b.h:3:1\n\n"
                        "previously allocated by thread T13 (Chrome_IOThread) here:\n"
                        "    #0 0x52617b in operator new(unsigned long) ??:?\n")
    assert (record.source, record.format) == ("sanitizer", "asan")
    assert [(f.index, f.symbol, f.file, f.line) for f in record.frames] == [
        (3, "Notify", "net/a.cc", 629), (4, "Run", "base/b.h", 3)]
    assert record.notes == ("other stack (previously allocated by thread T13 (Chrome_IOThread) "
                            "here): operator new",)


@pytest.mark.parametrize("module", ["libclang_rt.asan-aarch64-android.so",
                                    "libclang_rt.hwasan-aarch64-android.so",
                                    "libclang_rt.asan_osx_dynamic.dylib"])
def test_a_sanitizer_runtimes_module_only_frame_never_leads_a_signature(module: str) -> None:
    """ASan's interceptors (memcpy, free) print as module-only frames of its runtime; like
    libc's, they carry no meaning (real: JeffMony/AV_Knowledge's AudioTrack report)."""
    from kit.crash.rules import load_rules
    rules = load_rules()
    assert rules.is_skipped(module)
    assert not rules.is_skipped("libclang_rt_helper.so")
    assert not rules.is_skipped("libonnxruntime.so")
