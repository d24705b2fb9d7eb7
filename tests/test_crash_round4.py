"""Crash-paste shapes of issue #24 found in public reports after round 3: GitHub's own
Markdown table form (no outer pipes, ``-- | --`` delimiter), UBSan lines under a log's own
prefix, and a watchdog ``.ips`` fragment's termination reason."""

from __future__ import annotations

import pytest

from kit.crash import classify, detect_family, parse_text
from kit.crash._paste import tidy_paste

# GitHub's editor turns a pasted HTML table into this form (microsoft-ui-xaml#1635 in the
# issue's notes holds one from Partner Center): no outer pipes, "--" delimiter cells
GITHUB_TABLE = ("signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000008\n"
                "\n"
                "Frame | PC | Library | Function\n"
                "-- | -- | -- | --\n"
                "#00 | pc 00000000011a4b10 | /data/app/lib/arm64/libfoo.so | (foo+24)\n"
                "#01 | pc 0000000001a1f0c4 | /data/app/lib/arm64/libfoo.so | (bar+8)\n")


def test_githubs_pasted_table_form_is_a_table() -> None:
    text, notes = tidy_paste(GITHUB_TABLE)
    assert notes == ["a Markdown table's markup removed (2 rows)"]
    assert text.splitlines()[2:] == [
        "#00  pc 00000000011a4b10  /data/app/lib/arm64/libfoo.so  (foo+24)",
        "#01  pc 0000000001a1f0c4  /data/app/lib/arm64/libfoo.so  (bar+8)"]
    record = parse_text(GITHUB_TABLE)
    assert (record.format, record.signal_name) == ("tombstone", "SIGSEGV")
    assert [(f.module, f.symbol, f.offset) for f in record.frames] == [
        ("libfoo.so", "foo", 24), ("libfoo.so", "bar", 8)]


@pytest.mark.parametrize("delim", ["|---|---|", "| :-- | --: |", "-|-", "--- | ---"])
def test_a_delimiter_row_of_any_gfm_spelling(delim: str) -> None:
    text, notes = tidy_paste(f"# | Symbol\n{delim}\n0 | foo\n1 | bar\n")
    assert (text, notes) == ("0  foo\n1  bar\n", ["a Markdown table's markup removed (2 rows)"])


def test_a_table_ends_at_a_blank_line_and_needs_a_header_as_wide_as_its_delimiter() -> None:
    text, _ = tidy_paste("| # | Symbol |\n|---|---|\n| 0 | foo |\n\na | b | c\n")
    assert text == "0  foo\n\na | b | c\n"
    # a header row of three cells over a delimiter of two: not a table (GFM), left as it is
    odd = "a | b | c\n-- | --\n0 | foo\n"
    assert tidy_paste(odd) == (odd, [])
    # an escaped pipe is a pipe in its cell
    assert tidy_paste("# | Symbol\n--|--\n0 | a \\| b\n")[0] == "0  a | b\n"


def test_a_numbered_frame_line_with_its_address_last_is_no_apple_or_ide_frame() -> None:
    # an address that ends its line is no Apple frame line ("N image 0xADDR symbol"): the
    # next line's index is not the symbol after it; and a symbol never starts with a digit,
    # so neither is it an IDE frames pane's "symbol 0xADDR"
    text = ("0  Windows.UI.Xaml.dll  DirectUI::DXamlCore::GetWindowForScaling  0x0000000000000054\n"
            "1  Windows.UI.Xaml.dll  DirectUI::DXamlCore::QueryScalePercentage  0x0000000000000028\n"
            "2  Windows.UI.Xaml.dll  DirectUI::DXamlCore::QueryScaleFactor  0x000000000000002F\n")
    assert detect_family(text)[0] != "crash-text"
    assert parse_text(text).format == "unknown"
    # the frames pane's own lines still read
    pane = "abort 0x00000000f1d90700\n__assert2 0x00000000f1d9099a\nfoo() 0x00000000c50bb15e\n"
    assert [f.symbol for f in parse_text(pane).frames] == ["abort", "__assert2", "foo()"]


@pytest.mark.parametrize("prefix", [
    "1001.2/step2:",                      # CMSSW's workflow step, glued on (cms-sw#46406)
    "    961 ",                           # uniq -c's count (cms-sw#35521)
    "[init -> test-segfault] ",           # Genode's log tag (genodelabs#3072)
    "Testing: ZIP, WinZip [PBKDF2-SHA1 256/256 AVX2 8x2]... (4xOMP) ",  # john's test line
    "wrap.sh: ",
    "["])                                 # a stray bracket (radareorg/radare2#12743)
def test_a_ubsan_line_under_a_logs_own_prefix(prefix: str) -> None:
    text = (prefix + "L1Trigger/CSCTriggerPrimitives/src/PulseArray.cc:34:33: runtime error: "
            "shift exponent 4294967295 is too large for 32-bit type 'unsigned int'\n")
    record = parse_text(text)
    assert (record.format, record.kind, record.message, record.cause) == (
        "ubsan", "native",
        "shift exponent 4294967295 is too large for 32-bit type 'unsigned int'",
        "runtime error at L1Trigger/CSCTriggerPrimitives/src/PulseArray.cc:34")
    assert "no SUMMARY line: read from UBSan's runtime error line alone" in record.notes
    assert (record.exception, record.code) == (None, None)  # no SUMMARY says which
    assert classify(record).crash_class.value == "other-native-crash"


def test_a_windows_path_keeps_its_drive_and_gos_runtime_error_is_no_ubsan() -> None:
    record = parse_text("C:\\src\\a.cc:12:3: runtime error: division by zero\n")
    assert (record.format, record.cause) == ("ubsan", "runtime error at C:\\src\\a.cc:12")
    go = ("panic: runtime error: index out of range [5] with length 3\n\n"
          "goroutine 1 [running]:\nmain.main()\n\t/tmp/x.go:8 +0x1d\nexit status 2\n")
    assert parse_text(go).format != "ubsan"


@pytest.mark.parametrize("extra,message", [
    (',"reasons":["<RBSTerminateContext| domain:10 code:0x8BADF00D explanation:scene-update '
     'watchdog transgression: app<com.example>:512 exhausted real (wall clock) time allowance '
     'of 10.00 seconds","WatchdogEvent: scene-update"],"byProc":"FrontBoard"',
     "<RBSTerminateContext| domain:10 code:0x8BADF00D explanation:scene-update watchdog "
     "transgression: app<com.example>:512 exhausted real (wall clock) time allowance of 10.00 "
     "seconds WatchdogEvent: scene-update"),
    (',"reasons":[],"indicator":"scene-update watchdog"', "scene-update watchdog"),
    ("", "FRONTBOARD")])
def test_an_ips_pieces_watchdog_termination_says_why(extra: str, message: str) -> None:
    # as a whole .ips does: the reasons' text, else the indicator, else the namespace
    record = parse_text('"termination" : {"code":2343432205,"flags":6,'
                        f'"namespace":"FRONTBOARD"{extra}}},\n')
    assert (record.format, record.kind, record.message) == ("ips-partial", "anr", message)
    assert record.notes[-1] == "terminated by the system (FRONTBOARD): a watchdog, not a crash"
    assert classify(record).crash_class.value == "anr"


def test_a_hand_formatted_tables_code_spans_are_not_the_frame() -> None:
    text = ("signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000008\n\n"
            "| # | PC | Library | Function |\n|---|---|---|---|\n"
            "| `#00` | `pc 00000000011a4b10` | `/data/app/lib/arm64/libfoo.so` | **(foo+24)** |\n")
    assert tidy_paste(text)[0].splitlines()[-1] == (
        "#00  pc 00000000011a4b10  /data/app/lib/arm64/libfoo.so  (foo+24)")
    assert [(f.module, f.symbol) for f in parse_text(text).frames] == [("libfoo.so", "foo")]


def test_a_frames_tables_rows_without_addresses_are_read_as_frame_rows() -> None:
    text = ("| # | Library | Symbol |\n|---|---|---|\n"
            "| 0 | libsystem_kernel.dylib | __pthread_kill + 8 |\n"
            "| 1 | libsystem_pthread.dylib | pthread_kill + 268 |\n"
            "| 2 | libsystem_c.dylib | abort + 128 |\n")
    record = parse_text(text)
    assert (record.platform, record.source, record.format, record.kind) == (
        "ios", "crash-reporter", "frame-rows", "native")
    assert [(f.index, f.module, f.symbol, f.offset) for f in record.frames] == [
        (0, "libsystem_kernel.dylib", "__pthread_kill", 8),
        (1, "libsystem_pthread.dylib", "pthread_kill", 268),
        (2, "libsystem_c.dylib", "abort", 128)]
    assert record.notes[1:] == (
        "frames named .dylib: assumed ios",
        "frame rows (index, library, symbol), as a crash console's frames table gives them: "
        "no signal and no addresses in the copy")
    # an address in the row makes it another layout's (which number it is, its header said)
    with_hex = "0  libfoo.so  foo  0x0000000000000054\n1  libfoo.so  bar  0x0000000000000028\n"
    assert parse_text(with_hex).format != "frame-rows"


# issue #24 family 9: a one-line UBSan report is a paste that lost newlines, the report's later
# parts joined onto the runtime error line; the message ends where the first of them starts
STK_5246 = "public/host/ubsan-stk-5246-joined-note-hexdump.txt"
RESID_2 = "public/host/ubsan-resid-2-one-line-summary.txt"


def _fixture(name: str) -> bytes:
    from pathlib import Path
    return (Path(__file__).parent / "data" / "crashes" / name).read_bytes()


def test_stk_5246_joined_note_and_hex_dump_are_no_part_of_the_message() -> None:
    # supertuxkart/stk-code#5246: "0x..: note: pointer points here: be be .." after ": "
    record = parse_text(_fixture(STK_5246))
    assert (record.platform, record.source, record.format, record.kind) == (
        "linux", "sanitizer", "ubsan", "native")
    assert record.message == ("reference binding to misaligned address 0x6210005ce0b4 for "
                              "type 'const struct string', which requires 8 byte alignment")
    assert record.cause == "runtime error at src/scriptengine/script_challenges.cpp:74"
    assert (record.exception, record.code, record.signal, record.signal_name) == (
        None, None, None, None)
    assert (record.fault_address, record.pid, record.tid, record.process) == (
        None, None, None, None)
    assert (record.thread_name, record.abort_message, record.abi, record.timestamp) == (
        None, None, None, None)
    assert record.frames == ()
    assert record.notes == ("no SUMMARY line: read from UBSan's runtime error line alone",
                            "no stack frames in the sanitizer report")
    result = classify(record)
    assert (result.crash_class.value, result.rule_id, result.signature) == (
        "other-native-crash", None, "EMPTY: no frame data available")


def test_resid_2_one_line_summary_is_ubsan_and_ends_at_summary() -> None:
    record = parse_text(_fixture(RESID_2))
    assert (record.platform, record.source, record.format, record.kind) == (
        "linux", "sanitizer", "ubsan", "native")
    assert (record.exception, record.code) == (
        "UndefinedBehaviorSanitizer: undefined-behavior", "undefined-behavior")
    assert record.message == ("signed integer overflow: 63904 * 130489 cannot be represented "
                              "in type 'int'")
    assert record.cause == "runtime error at .src/libs/resid/sid.cc:919"
    assert (record.signal, record.fault_address, record.pid, record.process) == (
        None, None, None, None)
    assert record.frames == ()
    assert record.notes == ("no stack frames in the sanitizer report",)
    assert classify(record).signature == "EMPTY: no frame data available"


@pytest.mark.parametrize("joined", [
    " SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior a.cc:3:5 in",
    ": 0x6210005ce0b4: note: pointer points here: be be be be c4 e0 5c 00",
    " 0x6210005ce0b4: note: pointer points here  be be be be",
    "\t0x10: note: pointer points here",
])
def test_a_joined_later_part_ends_the_one_line_ubsan_message(joined: str) -> None:
    record = parse_text("a.cc:3:5: runtime error: load of misaligned address 0x6210005ce0b4 "
                        "for type 'int', which requires 4 byte alignment" + joined + "\n")
    assert (record.format, record.message, record.cause) == (
        "ubsan", "load of misaligned address 0x6210005ce0b4 for type 'int', which requires 4 "
        "byte alignment", "runtime error at a.cc:3")


def test_joined_frames_are_read_apart_and_end_the_message() -> None:
    text = ("/src/a.cc:3:5: runtime error: load of null pointer of type 'int' "
            "#0 0x55d1 in foo(int) /src/a.cc:3:5 #1 0x55d2 in main /src/a.cc:9:1 "
            "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior /src/a.cc:3:5 in foo(int)\n")
    record = parse_text(text)
    assert (record.format, record.message, record.code) == (
        "ubsan", "load of null pointer of type 'int'", "undefined-behavior")
    assert [(f.index, f.symbol, f.pc, f.file, f.line) for f in record.frames] == [
        (0, "foo(int)", "0x55d1", "/src/a.cc", 3), (1, "main", "0x55d2", "/src/a.cc", 9)]
    assert classify(record).signature != "EMPTY: no frame data available"


def test_leetcodes_judge_line_with_its_summary_joined_ends_at_summary() -> None:
    # the shape of a LeetCode paste kept in a public solution file's comment
    record = parse_text("Line 22: Char 58: runtime error: signed integer overflow: -100 - "
                        "9223372036854775807 cannot be represented in type 'long long' "
                        "(solution.cpp) SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior "
                        "prog_joined.cpp:31:58\n")
    assert (record.format, record.code, record.message, record.cause) == (
        "ubsan", "undefined-behavior",
        "signed integer overflow: -100 - 9223372036854775807 cannot be represented in type "
        "'long long'", "runtime error at solution.cpp:22")


def test_a_note_or_hash_inside_the_message_is_kept() -> None:
    # only a "0x..: note: " part or a "#N 0x.. " frame ends it, not the words alone
    record = parse_text("a.cc:1:2: runtime error: index 5 out of bounds for type 'int[4]' "
                        "(see note: 0x10 #3)\n")
    assert record.message == "index 5 out of bounds for type 'int[4]' (see note: 0x10 #3)"
