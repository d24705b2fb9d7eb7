"""Issue #45 (crash pastes, round 4) and issue #46's crash-reader items: bounded reads of
hostile shapes and the readers added for new formats (each public report's every field is
checked in tests/data/crashes/expected.json by test_crash_fixtures.py)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from kit.cli.crash import _CELL_CHARS, _cell, _render
from kit.crash import classify, parse_text
from kit.crash._text import json_string_end
from kit.crash.apple import json_depth_over

IPS_BODY = ('{"procName":"w","exception":{"type":"EXC_BAD_ACCESS","signal":"SIGSEGV"},'
            '"threads":[{"triggered":true,"frames":[{"imageOffset":16,"imageIndex":0,'
            '"symbol":"f"}]}]}\n')


def test_json_string_end_counts_the_backslashes_before_a_quote() -> None:
    assert json_string_end('abc"', 0) == 4
    assert json_string_end('a\\"b"x', 0) == 5      # \" is escaped
    assert json_string_end('a\\\\"b', 0) == 4      # \\ then a closing quote
    assert json_string_end('a\\\\\\"', 0) == -1    # \\ \" : never closed
    assert json_string_end('"', 0) == 1


def test_brackets_inside_strings_do_not_count_toward_the_depth() -> None:
    assert not json_depth_over('{"a":"[[[[[[\\"[[[["}', limit=2)
    assert json_depth_over('{"a":[[["x"]]]}', limit=3)


def test_a_long_ips_header_line_is_not_loaded_and_the_body_is_read() -> None:
    header = '{"bug_type":"309","x":"' + "a" * 100_000 + '"}\n'
    record = parse_text(header + IPS_BODY)
    assert record.format == "ips"
    assert record.process == "w"
    assert record.signal_name == "SIGSEGV"
    assert [f.symbol for f in record.frames] == ["f"]
    assert record.notes[0] == ("ips header line is 100025 characters long (Apple's is under "
                               "1 KB): not read")


def test_a_short_header_is_still_read() -> None:
    record = parse_text('{"bug_type":"309","app_name":"h"}\n' + IPS_BODY)
    assert record.notes == ()
    assert record.process == "w"


def test_a_long_sanitizer_headline_keeps_a_bounded_kind_and_a_bounded_table_cell() -> None:
    record = parse_text("==1==ERROR: AddressSanitizer: " + "a" * 50_000 + "\n")
    assert record.code == "a" * 200
    assert "the headline's kind is 50000 characters long: its first 200 kept" in record.notes
    out = io.StringIO()
    with redirect_stdout(out):
        _render([("f.txt", record, classify(record))], as_json=False)
    # the signal cell (exception and code, 418 characters) is cut at the cell's bound
    assert "".join(out.getvalue().split()).count("a") < 2 * _CELL_CHARS
    assert _cell("x" * (_CELL_CHARS + 5)) == ("x" * _CELL_CHARS
                                              + "... (5 more characters; see --json)")
    assert _cell("short") == "short"


# -- issue #45 family 1: whole formats -------------------------------------------------

DATA = Path(__file__).parent / "data" / "crashes"
PUBLIC = DATA / "public"


def test_minidump_stackwalk_lines_quoted_as_json_strings_read_as_the_plain_text() -> None:
    """A copy out of a JSON log: every line a JSON string (with or without the array's
    brackets and commas) reads as the same report, and says it was decoded."""
    plain_text = (PUBLIC / "host" / "minidump-rdm-30-linux-sigabrt.txt").read_text()
    plain = parse_text(plain_text)
    lines = plain_text.rstrip("\n").split("\n")
    for quoted in ("\n".join(json.dumps(ln) + "," for ln in lines),
                   "[\n" + ",\n".join("  " + json.dumps(ln) for ln in lines) + "\n]\n",
                   "```json\n" + "\n".join(json.dumps(ln) + "," for ln in lines) + "\n```\n"):
        record = parse_text(quoted)
        assert record.notes == ("every line a JSON string (a copy from a JSON log): decoded",)
        assert (record.format, record.signal_name, record.frames) == \
            (plain.format, plain.signal_name, plain.frames)
        assert classify(record).signature == classify(plain).signature


def test_a_json_log_with_some_string_lines_is_left_alone() -> None:
    text = '"a"\n"b"\nFatal signal 11 (SIGSEGV), code 1\nx\ny\n'
    assert parse_text(text).notes[:1] != ("every line a JSON string (a copy from a JSON "
                                          "log): decoded",)


def test_minidump_frame_shapes() -> None:
    text = ("Operating system: Android\n                  0.0.0 Linux\nCPU: arm64\n\n"
            "Crash reason:  SIGSEGV /SEGV_MAPERR\nCrash address: 0x0\n\n"
            "Thread 204 (crashed)\n 0  libc.so + 0x705ac\n    x0 = 0x0\n"
            "    Found by: given as instruction pointer in context\n"
            " 1  libonnxruntime.so!xnn_delete_operator + 0x54\n 2  0x7fbe646d0f20\n"
            " 3  libx.so!f(int) [x.cc : 12 + 0x4]\n\nThread 205\n 0  libc.so + 0x1\n")
    record = parse_text(text)
    assert (record.platform, record.signal, record.signal_name, record.code,
            record.fault_address, record.thread_index) == \
        ("android", 11, "SIGSEGV", "SEGV_MAPERR", "0x0", 204)
    assert [(f.module, f.symbol, f.offset, f.pc, f.file, f.line) for f in record.frames] == [
        ("libc.so", None, None, "0x705ac", None, None),
        ("libonnxruntime.so", "xnn_delete_operator", 0x54, None, None, None),
        (None, None, None, "0x7fbe646d0f20", None, None),
        ("libx.so", "f(int)", None, None, "x.cc", 12)]


def test_a_rust_panic_under_a_supervisor_exit_line_is_an_abort() -> None:
    text = ("thread '<unnamed>' (345813) panicked at /home/u/.cargo/registry/src/"
            "index.crates.io-1949cf8c6b5b557f/ort-2.0.0-rc.11/src/lib.rs:191:41:\n"
            "Failed to load ONNX Runtime dylib\n"
            "Process exited: code=null, signal=SIGABRT\n")
    record = parse_text(text)
    assert (record.format, record.signal_name, record.thread_name) == \
        ("console-abort", "SIGABRT", "<unnamed>")
    assert record.abort_message == ("thread '<unnamed>' (345813) panicked at "
                                    "ort-2.0.0-rc.11/src/lib.rs:191:41:\n"
                                    "Failed to load ONNX Runtime dylib")
    assert classify(record).crash_class.value == "abort"


# -- issue #45 family 2: ANR tells ------------------------------------------------------

def test_a_play_console_anr_cut_after_its_native_frames_is_still_an_anr() -> None:
    """Rajkumarbhakta/GDealz#6 up to its last native frame: the '"main" tid=1 Native'
    header is the dump's only tell (no Java frame, no signal)."""
    text = (PUBLIC / "android" / "anr-play-console-main-tid1-native-gdealz-6.txt").read_text()
    cut = "\n".join(text.split("\n")[:7])
    record = parse_text(cut)
    assert (record.kind, record.format, record.thread_name, len(record.frames)) == \
        ("anr", "anr-stack", "main", 4)
    assert record.notes[-1] == ("the main thread's header ('\"main\" tid=1 Native') over native "
                                "frames and no signal: a thread dump (Play Console ANR export), "
                                "read as an ANR")
    assert classify(record).crash_class.value == "anr"


def test_native_frames_under_another_thread_stay_a_native_report() -> None:
    text = ('"RenderThread" tid=12 Native\n'
            "  #00  pc 0x00000000000a2c4c  /apex/com.android.runtime/lib64/bionic/libc.so "
            "(__epoll_pwait+12)\n"
            "  #01  pc 0x0000000000017ea8  /system/lib64/libutils.so "
            "(android::Looper::pollInner+184)\n")
    assert parse_text(text).kind == "native"


def test_a_termination_object_cut_before_its_closing_brace_is_read() -> None:
    """Automattic/pocket-casts-ios#556's piece cut inside the termination's reasons."""
    text = (PUBLIC / "ios" / "ips-fragment-pocket-casts-556-frontboard-termination.ips"
            ).read_text()
    for cut in (text[:text.index('"ProcessState')], text[:text.index(") reportType")]):
        record = parse_text(cut)
        assert record.kind == "anr"
        assert record.message.startswith("<RBSTerminateContext| domain:10 code:0x8BADF00D "
                                         "explanation:scene-update watchdog transgression")
        assert classify(record).crash_class.value == "anr"


def test_a_nested_object_inside_termination_is_skipped_over() -> None:
    text = ('"procName" : "w",\n"termination" : {"details":{"a":{"b":"}"}},"code":2343432205,'
            '"namespace":"FRONTBOARD","indicator":"scene-create watchdog"},\n"pid" : 4\n')
    record = parse_text(text)
    assert (record.kind, record.message, record.pid) == ("anr", "scene-create watchdog", 4)


# -- issue #45 family 3: frame runs that survive paste artefacts ------------------------

TOMBSTONE_ELIDED = """\
*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
pid: 4242, tid: 4290, name: pool-3-thread-1  >>> com.example.app <<<
signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000018
backtrace:
      #00 pc 00000000011f2b10  /data/app/lib/arm64/libonnxruntime.so (xnn_delete_operator+84)
      #01 pc 00000000011e2a04  /data/app/lib/arm64/libonnxruntime.so (onnxruntime::Foo::Bar()+20)
      {elision}
      #05 pc 00000000000e1234  /apex/com.android.runtime/lib64/bionic/libc.so (__pthread_start(void*)+204)
      #06 pc 0000000000074abc  /apex/com.android.runtime/lib64/bionic/libc.so (__start_thread+64)
"""


def test_an_elision_line_does_not_end_a_tombstone_frame_run() -> None:
    for elision in ("...", "…", "[...]", "(...)", "... 3 more frames"):
        record = parse_text(TOMBSTONE_ELIDED.format(elision=elision))
        assert [f.index for f in record.frames] == [0, 1, 5, 6], elision
        assert "a '...' line among the frames: frames left out by the paster" in record.notes
    # any other line still ends the run
    record = parse_text(TOMBSTONE_ELIDED.format(elision="some other text"))
    assert [f.index for f in record.frames] == [0, 1]


def test_an_elision_line_does_not_end_a_gdb_frame_run() -> None:
    text = ("Segmentation fault (core dumped)\n"
            "#0  0x00007f1 in xnn_delete_operator () from /usr/lib/libonnxruntime.so\n"
            "#1  0x00007f2 in onnxruntime::Foo::Bar() () from /usr/lib/libonnxruntime.so\n"
            "...\n#5  0x00007f5 in start_thread () from /lib/libc.so.6\n")
    record = parse_text(text)
    assert [f.symbol for f in record.frames] == ["xnn_delete_operator",
                                                  "onnxruntime::Foo::Bar()", "start_thread"]


IDE_COPY = """\
art_sigsegv_fault 0x00000076a0d53a14
art::FaultManager::HandleSigsegvFault(int, siginfo*, void*) 0x00000076a0d53b80
art::SignalChain::Handler(int, siginfo*, void*) 0x0000007a2b1c0e24
__restore_rt 0x0000007a2f6f0868
mylib::Decoder::step(int) 0x00000076c11f2b10
mylib::Decoder::run() 0x00000076c1a33c44
Java_com_example_Decoder_run 0x00000076c11e2a04
"""


def test_signal_delivery_frames_give_the_signal_and_leave_the_signature() -> None:
    record = parse_text(IDE_COPY)
    assert (record.signal, record.signal_name) == (11, "SIGSEGV")
    assert record.notes[-1] == ("no signal line: SIGSEGV from ART's fault handler frames "
                                "(art_sigsegv_fault)")
    result = classify(record)
    assert result.signature == ("mylib::Decoder::step | mylib::Decoder::run | "
                                "Java_com_example_Decoder_run")
    assert result.crash_class.value == "other-native-crash"
    bus = parse_text(IDE_COPY.replace("art_sigsegv_fault", "art_sigbus_fault"))
    assert (bus.signal, bus.signal_name) == (7, "SIGBUS")


def test_a_path_cut_inside_the_install_directory_is_no_module() -> None:
    record = parse_text((PUBLIC / "android" / "ort-22780-studio-path-cut.txt").read_text())
    assert record.frames[0].module is None
    assert record.frames[0].path == "/data/app/~~WysbYd12p1drZY0tzOF3"
    assert "frame #00: its path is cut before the module's name" in record.notes
    whole = ("signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0\nbacktrace:\n"
             "  #00 pc 0011 /data/app/~~Ab==/com.x-Cd==/lib/arm64/libonnxruntime.so\n"
             "  #01 pc 0022 /data/app/~~Ab==/com.x-Cd==/base.apk!libfoo.so\n"
             "  #02 pc 0033 /data/app/~~Ab==/com.x-Cd==/oat/arm64/base.odex\n"
             "  #03 pc 0044 /data/app/~~Ab==/com.x-Cd\n")
    assert [f.module for f in parse_text(whole).frames] == [
        "libonnxruntime.so", "base.apk!libfoo.so", "base.odex", None]


# -- issue #45 family 4: Android Studio's logcat of an abort ------------------------------

def test_studio_process_column_and_libcxxabi_line_above_fatal_signal() -> None:
    text = (DATA / "android" / "logcat-studio-cxx-terminating-ort-exception.txt").read_text()
    record = parse_text(text)
    assert record.process == "com.coldstart.wakeword"
    assert record.abort_message.startswith("terminating due to uncaught exception of type "
                                           "Ort::Exception: Non-zero status code")
    # another process's line is not this abort's; a bare "terminating" says nothing
    other = text.replace("12345-12390 libc++abi", "999-999 libc++abi")
    assert parse_text(other).abort_message is None
    bare = text.replace("terminating due to uncaught exception of type Ort::Exception: "
                        "Non-zero status code returned while running Softmax node. "
                        "Name:'Softmax_12'", "terminating")
    assert parse_text(bare).abort_message is None
    # Studio's "pid-N" for a process it did not know is no name: the 15-character one stays
    unknown = text.replace("com.coldstart.wakeword               A  Fatal",
                           "pid-12345                            A  Fatal")
    assert parse_text(unknown).process == "ldstart.wakeword"


GITHUB_TABLE = """\
Exception Type: EXC_CRASH (SIGABRT)

0 | libsystem_kernel.dylib | __pthread_kill + 8
-- | -- | --
1 | libsystem_pthread.dylib | pthread_kill + 268
2 | libsystem_c.dylib | abort + 180
3 | hermes | 0x1047a0000 + 123456
4 | hermes | hermes::vm::JSObject::addOwnPropertyImpl + 168
5 | MyApp | main + 96
"""


def test_a_github_table_of_frames_without_outer_pipes_keeps_every_row() -> None:
    """GitHub's editor form of a pasted HTML table: the first row (frame 0) made the
    header, a '-- | --' delimiter, 'image | symbol + off' rows beside 'image | 0xLOAD + off'
    ones: every row is a frame, in order."""
    record = parse_text(GITHUB_TABLE)
    assert [(f.index, f.module, f.symbol, f.offset, f.pc) for f in record.frames] == [
        (0, "libsystem_kernel.dylib", "__pthread_kill", 8, None),
        (1, "libsystem_pthread.dylib", "pthread_kill", 268, None),
        (2, "libsystem_c.dylib", "abort", 180, None),
        (3, "hermes", None, None, hex(123456)),
        (4, "hermes", "hermes::vm::JSObject::addOwnPropertyImpl", 168, None),
        (5, "MyApp", "main", 96, None)]
    assert record.notes[0] == "a Markdown table's markup removed (6 rows)"
    assert "hermes::vm::JSObject::addOwnPropertyImpl" in classify(record).signature


def test_minidump_stackwalk_machine_readable_records() -> None:
    text = ("OS|Android|0.0.0 Linux 4.14.186 #1 SMP PREEMPT aarch64\nCPU|arm64||8\nGPU|||\n"
            "Crash|SIGSEGV /SEGV_MAPERR|0x18|3\n"
            "Module|libonnxruntime.so||libonnxruntime.so|0123ABCD|0x7a00000000|0x7a01ffffff|1\n"
            "3|0|libonnxruntime.so|xnn_delete_operator|||0x54\n"
            "3|1|libonnxruntime.so||||0x11e2a04\n"
            "3|2|libc.so|__pthread_start(void*)|pthread_create.cpp|364|0xcc\n"
            "4|0|libc.so|syscall|||0x1c\n")
    record = parse_text(text)
    assert (record.format, record.platform, record.signal_name, record.code,
            record.fault_address, record.thread_index) == \
        ("minidump-stackwalk-m", "android", "SIGSEGV", "SEGV_MAPERR", "0x18", 3)
    assert [(f.index, f.module, f.symbol, f.offset, f.pc, f.file, f.line)
            for f in record.frames] == [
        (0, "libonnxruntime.so", "xnn_delete_operator", 0x54, None, None, None),
        (1, "libonnxruntime.so", None, None, "0x11e2a04", None, None),
        (2, "libc.so", "__pthread_start(void*)", 0xcc, None, "pthread_create.cpp", 364)]
