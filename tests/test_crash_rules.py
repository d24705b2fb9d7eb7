"""Known-signature rules, signatures and the classification pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.crash import (CrashClass, CrashRecord, Frame, classify, load_rules, parse_host,
                       parse_text)
from kit.crash.signature import normalize_symbol
from kit.errors import DataError

DATA = Path(__file__).parent / "data" / "crashes"
RULE = "onnxruntime-32461-xnnpack-allocator-uaf"
#: the shipped rules for the same defect when ORT's symbols are stripped (Debian's binary)
STRIPPED = ["onnxruntime-32461-xnnpack-allocator-uaf-release-stripped",
            "onnxruntime-32461-xnnpack-allocator-uaf-callback-stripped"]

# the three crash sites of docs/design.md, on every platform and in every tool's output
TARGETS = {
    "creation": ["android/tombstone-full-xnnpack-create.txt",
                 "android/logcat-studio-xnnpack-softmax.txt", "ios/xnnpack-create.ips",
                 "host/backtrace-mangled-create.txt",
                 # google/XNNPACK#8946: a console export, ORT inside a Rust .so, no signal
                 "public/android/xnnpack-8946-reporter-softmax.txt",
                 "host/asan-uaf-xnnpack-allocator.txt", "ios/xcode-navigator-xnnpack-create.txt",
                 "android/tombstone-mte-ppid-line.txt"],
    "inference": ["android/logcat-threadtime-xnnpack-reshape.txt",
                  "ios/lldb-xnnpack-reshape.txt", "host/gdb-reshape.txt"],
    "release": ["android/logcat-brief-xnnpack-release.txt",
                "android/dropbox-system-tombstone-gwpasan.txt", "ios/xnnpack-release.crash",
                "host/backtrace-demangled-release.txt",
                "android/crashlytics-copy-no-signal.txt",  # no signal: the chain decides
                "ios/ips-ort-static-in-app-release.ips"],  # ORT inside the app binary
}
NEAR_MISSES = {
    "android/logcat-abort-cxx-exception.txt": "abort",  # ORT_ENFORCE throw in the callback
    "android/logcat-abort-resize-capability.txt": "abort",  # EP capability check throws
    "public/android/ort-23826-xnnpack-ep-terminating.txt": "abort",  # the #32298 abort
    "host/abort-terminate.txt": "abort",
    "ios/abort-cxx-exception.crash": "abort",  # uncaught C++ exception, Apple legacy text
    "public/macos/tflite-xnnpack-delegate-terminate.txt": "abort",  # TFLite delegate throw
    "android/tombstone-executorch-xnnpack.txt": "other-native-crash",  # XNNPACK's own alloc
    "public/android/executorch-5264-xnnexecutor.txt": "other-native-crash",
    "android/tflite-xnnpack-weights-cache.txt": "other-native-crash",  # xnn_create_* in TFLite
    "android/dropbox-native-crash-mlas.txt": "other-native-crash",  # ORT contrib op
    "public/ios/lldb-ort-genai-929-contrib-op.txt": "other-native-crash",
    "public/macos/lldb-ort-17867-mlas.txt": "other-native-crash",  # ORT CPU EP (MLAS)
    "public/android/ort-26921-cpu-ep-run.txt": "other-native-crash",
    "public/host/tsan-ort-1162-mlas-race.txt": "other-native-crash",
    "android/play-console-copy.txt": "other-native-crash",  # reporter junk symbols
    "macos/mlas-unsymbolicated.crash": "other-native-crash",  # unsymbolized ORT frames
    "public/android/ort-4103-brief-sigbus-unsymbolized.txt": "other-native-crash",
    "android/tombstone-no-frames.txt": "other-native-crash",
    "public/android/ort-22013-raw-tombstone-no-frames.txt": "other-native-crash",
    "ios/unsymbolicated.ips": "other-native-crash",
    "host/tsan-race-xnnpack-statics.txt": "other-native-crash",  # the mechanism, no crash
}


def _load(name: str) -> CrashRecord:
    data = (DATA / name).read_bytes()
    if name.startswith("host/") and "san-" not in name:
        return parse_host(6 if "abort" in name else 11, data)
    return parse_text(data)


@pytest.mark.parametrize("name", [n for names in TARGETS.values() for n in names])
def test_rule_fires_on_every_crash_site(name: str) -> None:
    result = classify(_load(name))
    assert result.crash_class is CrashClass.XNNPACK_ALLOCATOR_UAF
    assert result.rule_id == RULE
    assert any(line.endswith("-> xnnpack-allocator-uaf") for line in result.trail)


@pytest.mark.parametrize("name,expected", sorted(NEAR_MISSES.items()))
def test_rule_does_not_fire_on_near_misses(name: str, expected: str) -> None:
    result = classify(_load(name))
    assert result.crash_class.value == expected
    assert result.rule_id is None
    assert any(line.startswith(f"rule {RULE}: no:") for line in result.trail)


def test_near_miss_trail_says_why() -> None:
    trail = classify(_load("android/logcat-abort-cxx-exception.txt")).trail
    assert f"rule {RULE}: no: abort message matches reject pattern " \
           "'terminating due to uncaught exception'" in trail
    trail = classify(_load("android/tombstone-executorch-xnnpack.txt")).trail
    assert any("matches reject pattern '^executorch::'" in line for line in trail)


def _native(symbols: list[str], signal: str = "SIGSEGV", abort: str | None = None
            ) -> CrashRecord:
    return CrashRecord(platform="android", source="tombstone", format="tombstone",
                       kind="native", signal_name=signal, abort_message=abort,
                       frames=tuple(Frame(index=i, symbol=s) for i, s in enumerate(symbols)))


def test_rule_matches_on_symbols_not_library_names() -> None:
    unsymbolized = CrashRecord(platform="android", source="tombstone", format="tombstone",
                               kind="native", signal_name="SIGSEGV", frames=tuple(
                                   Frame(index=i, module="libonnxruntime.so", pc=hex(i))
                                   for i in range(4)))
    assert classify(unsymbolized).crash_class is CrashClass.OTHER_NATIVE_CRASH
    # the same symbols inside another library (ORT linked into a Rust .so) still match
    embedded = _native(["onnxruntime::xnnpack::(anonymous namespace)::xnn_deallocate(void*, "
                        "void*)", "xnn_delete_operator"])
    embedded = CrashRecord(**{**embedded.__dict__, "frames": tuple(
        Frame(index=f.index, symbol=f.symbol, module="libmyapp_rust.so")
        for f in embedded.frames)})
    assert classify(embedded).rule_id == RULE


@pytest.mark.parametrize("spelling", [
    "onnxruntime::xnnpack::{anonymous}::xnn_aligned_allocate(void*, unsigned long, unsigned long)",
    "onnxruntime::xnnpack::`anonymous namespace'::xnn_aligned_allocate",
    "onnxruntime::xnnpack::_GLOBAL__N_1::xnn_aligned_allocate",
    "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*, size_t, size_t)",
])
def test_anonymous_namespace_spellings_match(spelling: str) -> None:
    record = _native(["<unknown>", spelling, "xnn_create_fully_connected_nc_f32"])
    assert classify(record).rule_id == RULE


def test_allocator_abort_matches_but_exception_abort_does_not() -> None:
    frames = ["abort", "scudo::die()", "onnxruntime::CPUAllocator::Free(void*)",
              "onnxruntime::xnnpack::(anonymous namespace)::xnn_deallocate(void*, void*)",
              "xnn_delete_operator"]
    scudo = _native(frames, "SIGABRT", "Scudo ERROR: invalid chunk state when deallocating")
    assert classify(scudo).rule_id == RULE
    thrown = _native(frames, "SIGABRT", "terminating due to uncaught exception of type "
                                        "onnxruntime::OnnxRuntimeException: boom")
    assert classify(thrown).crash_class is CrashClass.ABORT


def test_callback_without_an_xnnpack_caller_is_not_the_target() -> None:
    record = _native(["onnxruntime::xnnpack::(anonymous namespace)::xnn_allocate(void*, "
                      "unsigned long)", "some_app_function", "another_app_function",
                      "main"])
    result = classify(record)
    assert result.crash_class is CrashClass.OTHER_NATIVE_CRASH
    assert any("no XNNPACK operator create/reshape/setup/destroy or XNNPACK EP code frame"
               in line for line in result.trail)


@pytest.mark.parametrize("symbol,expected", [
    ("onnxruntime::xnnpack::MatMul::PrePack(onnxruntime::Tensor const&, int, "
     "std::__ndk1::shared_ptr<onnxruntime::IAllocator>, bool&, onnxruntime::PrePackedWeights*)",
     "onnxruntime::xnnpack::MatMul::PrePack"),
    ("void std::__1::vector<int, std::__1::allocator<int>>::push_back(int const&)",
     "std::__1::vector<T>::push_back"),
    ("onnxruntime::xnnpack::XnnpackOperatorDeleter::operator()(xnn_operator*) const",
     "onnxruntime::xnnpack::XnnpackOperatorDeleter::operator()"),
    ("operator new(unsigned long)", "operator new"),
    ("xnn_create_fully_connected_nc_f32", "xnn_create_fully_connected_nc_f32"),
])
def test_normalize_symbol(symbol: str, expected: str) -> None:
    assert normalize_symbol(symbol) == expected


def test_signature_skips_plumbing_and_takes_three_frames() -> None:
    record = _native(["__kernel_rt_sigreturn", "abort", "memcpy", "f(int)", "g<int>(int)",
                      "h()", "i()"], signal="SIGSEGV")
    result = classify(record)
    assert result.signature == "f | g<T> | h"
    assert "skip: #0 __kernel_rt_sigreturn, #1 abort, #2 memcpy" in result.trail


def test_abort_signature_masks_addresses_and_numbers() -> None:
    record = _native(["abort", "app::fail()"], "SIGABRT",
                     "FORTIFY: read: count 4096 > SSIZE_MAX at 0x7fff1234")
    assert classify(record).signature == \
        "abort | FORTIFY: read: count N > SSIZE_MAX at 0x? | app::fail"


def test_unparsed_and_empty() -> None:
    result = classify(parse_text(""))
    assert result.crash_class is CrashClass.UNPARSED
    assert result.signature.startswith("EMPTY: ")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "user.toml"
    path.write_text(text)
    return path


def test_user_rules_extend_and_override(tmp_path: Path) -> None:
    path = _write(tmp_path, """
[frames]
skip = ['^my_crash_reporter_hook$']

[[rule]]
id = "my-mlas-crash"
crash_class = "other-native-crash"
kinds = ["native"]
[[rule.chain]]
name = "MLAS kernel"
frames = ['^MlasSgemm']
""")
    rules = load_rules(path)
    assert [r.id for r in rules.rules] == [RULE, *STRIPPED, "my-mlas-crash"]
    record = _native(["my_crash_reporter_hook", "MlasSgemmKernelFma3", "x"])
    result = classify(record, rules)
    assert result.rule_id == "my-mlas-crash"
    assert result.signature == "MlasSgemmKernelFma3 | x"
    override = _write(tmp_path, f"""
[[rule]]
id = "{RULE}"
crash_class = "abort"
[[rule.chain]]
frames = ['^never$']
""")
    replaced = load_rules(override)
    by_id = {r.id: r for r in replaced.rules}
    assert sorted(by_id) == sorted([RULE, *STRIPPED]) and by_id[RULE].crash_class == "abort"
    assert [by_id[i].crash_class for i in STRIPPED] == ["xnnpack-allocator-uaf"] * 2


@pytest.mark.parametrize("text,message", [
    ("[[rule]\nid = 'x'\n", "not valid TOML"),
    ("[[rule]]\nid = 'bad-regex'\ncrash_class = 'abort'\n[[rule.chain]]\nframes = ['(']\n",
     "user.toml:5: rule 'bad-regex': bad regular expression '('"),
    ("[[rule]]\nid = 'typo'\ncrash_clas = 'abort'\n",
     "user.toml:3: rule 'typo': unknown key 'crash_clas'"),
    ("[[rule]]\nid = 'wrong-class'\ncrash_class = 'segfault'\n",
     "user.toml:3: rule 'wrong-class': crash_class 'segfault' is not one of"),
    ("[[rule]]\nid = 'no-chain'\ncrash_class = 'abort'\n",
     "rule 'no-chain': needs at least one [[rule.chain]] step"),
    ("[[rule]]\nid = 'w'\ncrash_class = 'abort'\nwindow = 0\n[[rule.chain]]\nframes = ['a']\n",
     "user.toml:4: rule 'w': window must be a whole number from 1 to 64"),
    ("[[rule]]\nid = 'Bad Id'\n", "needs an id of lower-case letters"),
    ("[frames]\nskip = ['[']\n", "user.toml:2: bad regular expression '['"),
])
def test_bad_rules_raise_data_error_with_file_and_line(tmp_path: Path, text: str,
                                                       message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as err:
        load_rules(path)
    assert message in err.value.message
    assert str(path.parent) in err.value.message
    assert err.value.exit_code == 2


def test_missing_rule_path(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_rules(tmp_path / "nope.toml")


def test_toml_error_names_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"line 2"):
        load_rules(_write(tmp_path, "[[rule]]\nid = \n"))


def test_exit_that_is_not_a_crash_is_unparsed_with_its_reason() -> None:
    record = parse_text("ApplicationExitInfo #0:\n  timestamp=2025-03-14 09:30:51.118 pid=9031 "
                        "process=com.coldstart.wakeword reason=1 (EXIT_SELF) status=0 "
                        "description=bye")
    result = classify(record)
    assert result.crash_class is CrashClass.UNPARSED
    assert result.signature == ("EMPTY: not a crash the kit can class (exit reason EXIT_SELF "
                                "is not a crash)")
    assert result.trail[-1].startswith("fallback: ")


def test_absent_signal_is_not_a_wrong_signal() -> None:
    frames = ["onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*, "
              "unsigned long, unsigned long)", "xnn_create_softmax_nc_f32",
              "onnxruntime::xnnpack::Softmax::Softmax(onnxruntime::OpKernelInfo const&)"]
    unsignalled = _native(frames, signal=None)  # type: ignore[arg-type]
    result = classify(unsignalled)
    assert result.rule_id == RULE
    assert f"rule {RULE}: no signal in the report (absent, not wrong): the frame chain " \
           "decides" in result.trail
    # a wrong signal still vetoes
    assert classify(_native(frames, signal="SIGFPE")).rule_id is None
    # and no signal with abort plumbing on top is an abort, not the target
    aborted = classify(_native(["abort", "__cxa_throw"] + frames, signal=None))  # type: ignore[arg-type]
    assert aborted.crash_class is CrashClass.ABORT
    assert any("the top frames abort (abort, __cxa_throw)" in line for line in aborted.trail)


def test_a_rule_can_require_a_signal(tmp_path: Path) -> None:
    path = _write(tmp_path, """
[[rule]]
id = "needs-signal"
crash_class = "other-native-crash"
signals = ["SIGSEGV"]
absent_signal = "reject"
[[rule.chain]]
frames = ['^my_fn$']
""")
    rules = load_rules(path)
    result = classify(_native(["my_fn"], signal=None), rules)  # type: ignore[arg-type]
    assert result.rule_id is None
    assert "rule needs-signal: no: no signal in the report, and this rule needs one" in \
        result.trail
    assert classify(_native(["my_fn"]), rules).rule_id == "needs-signal"


def test_a_memory_tool_cause_stands_for_the_signal() -> None:
    record = CrashRecord(platform="linux", source="sanitizer", format="asan", kind="native",
                         exception="AddressSanitizer: heap-use-after-free",
                         frames=tuple(Frame(index=i, symbol=s) for i, s in enumerate(
                             ["onnxruntime::xnnpack::(anonymous namespace)::xnn_deallocate",
                              "xnn_delete_operator"])))
    result = classify(record)
    assert result.rule_id == RULE
    assert f"rule {RULE}: cause matches 'use-after-free' (a memory tool saw the error)" in \
        result.trail


def test_a_race_on_the_allocator_statics_is_the_mechanism_not_a_crash() -> None:
    result = classify(parse_text((DATA / "host/tsan-race-xnnpack-statics.txt").read_bytes()))
    assert result.mechanism == RULE
    assert result.rule_id is None
    assert any(line.startswith("race: the data race touches") for line in result.trail)
    other = classify(parse_text((DATA / "public/host/tsan-ort-1162-mlas-race.txt").read_bytes()))
    assert other.mechanism is None
    assert "race: a data race, on nothing a rule's race_frames name" in other.trail


def test_a_traces_dump_without_frames_is_an_anr_not_unparsed() -> None:
    # issue #15: the unparsed step ran before the one that reads the kind the parser found
    record = parse_text((DATA / "public/android/anr-traces-header-only.txt").read_bytes())
    assert (record.kind, record.frames, record.message) == ("anr", (), None)
    result = classify(record)
    assert result.crash_class is CrashClass.ANR
    assert result.trail[1] == "unparsed: no (anr-traces, kind anr, 0 frames)"


def test_a_catastrophic_user_pattern_times_out_instead_of_hanging(tmp_path: Path) -> None:
    path = _write(tmp_path, """
[frames]
skip = ['^(a|aa)+$']
[[rule]]
id = "slow"
crash_class = "abort"
[[rule.chain]]
frames = ['(a|aa)+$']
""")
    rules = load_rules(path)
    record = _native(["a" * 60 + "b", "a" * 60 + "c"])
    result = classify(record, rules)
    assert result.rule_id is None
    assert "rule slow: no: pattern '(a|aa)+$' timed out after 0.25 s; the rule is skipped " \
           "(simplify the pattern)" in result.trail
    assert "skip: user pattern '^(a|aa)+$' timed out; it skips nothing" in result.trail
    assert classify(record, rules).rule_id is None  # disabled, not retried frame by frame
