"""Symbolication with a real llvm-symbolizer and a real ELF built here (gcc + build-id).

Needs ``cc`` and ``llvm-symbolizer`` (Debian: ``apt-get install gcc llvm``; both are on the
project's machine image). Apple's ``atos`` exists only on macOS: here its absence is tested.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit.crash import CrashRecord, Frame, classify, parse_text, symbolize_android, symbolize_apple
from kit.crash import symbolize as symbolize_mod
from kit.crash.symbolize import atos_command, find_llvm_symbolizer, parse_atos_line, read_build_id
from kit.errors import UsageError

SOURCE = """
namespace onnxruntime { namespace xnnpack { namespace {
__attribute__((noinline)) void* xnn_aligned_allocate(void* context, unsigned long a,
                                                      unsigned long s) {
  return *static_cast<void**>(context);
}
} } }
extern "C" __attribute__((noinline)) void* xnn_create_fully_connected_nc_f32(void* c) {
  return onnxruntime::xnnpack::xnn_aligned_allocate(c, 64, 4096);
}
"""

def _require_tools() -> None:
    """scripts/setup.sh installs both; a machine without them fails here, never skips."""
    if shutil.which("c++") is None or find_llvm_symbolizer() is None:
        pytest.fail("needs c++ and llvm-symbolizer: run scripts/setup.sh "
                    "(apt-get install g++ llvm)")


needs_tools = pytest.mark.usefixtures("_tools")


@pytest.fixture()
def _tools() -> None:
    _require_tools()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, int]]:
    """An unstripped shared library, its build-id and its functions' addresses."""
    _require_tools()
    folder = tmp_path_factory.mktemp("syms")
    src = folder / "ort.cc"
    src.write_text(SOURCE)
    lib = folder / "libonnxruntime.so"
    subprocess.run(["c++", "-g", "-O1", "-shared", "-fPIC", "-Wl,--build-id=sha1", "-o",
                    str(lib), str(src)], check=True)
    build_id, has_symbols = read_build_id(lib)
    assert build_id is not None and len(build_id) == 40 and has_symbols
    nm = subprocess.run(["nm", str(lib)], capture_output=True, text=True, check=True).stdout
    addresses = {}
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            addresses[parts[2]] = int(parts[0], 16)
    return lib, build_id, addresses


def _tombstone(build_id: str, addresses: dict[str, int]) -> str:
    alloc = next(v for k, v in addresses.items() if "xnn_aligned_allocate" in k)
    create = addresses["xnn_create_fully_connected_nc_f32"]
    path = "/data/app/~~a==/com.coldstart.wakeword-b==/base.apk!libonnxruntime.so"
    return (
        "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n"
        "pid: 100, tid: 101, name: mqt_native_modu  >>> com.coldstart.wakeword <<<\n"
        "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x5555555555555555\n"
        "backtrace:\n"
        f"  #00 pc {alloc + 2:016x}  {path} (offset 0x1000) (BuildId: {build_id})\n"
        f"  #01 pc {create + 4:016x}  {path} (offset 0x1000) (BuildId: {build_id})\n"
        "  #02 pc 00000000000d8d14  /apex/com.android.runtime/lib64/bionic/libc.so "
        "(BuildId: 3c7d41a2b5e6f708192a3b4c5d6e7f8091a2b3c4)\n")


@needs_tools
def test_symbolize_by_build_id_then_classify(built: tuple[Path, str, dict[str, int]]) -> None:
    lib, build_id, addresses = built
    record = parse_text(_tombstone(build_id, addresses))
    assert classify(record).crash_class.value == "other-native-crash"  # no symbols yet
    result = symbolize_android(record, lib.parent)
    frames = result.record.frames
    assert result.symbolized == 2
    assert frames[0].symbol == ("onnxruntime::xnnpack::(anonymous namespace)::"
                                "xnn_aligned_allocate(void*, unsigned long, unsigned long)")
    assert frames[0].offset == 2 and frames[0].file and frames[0].file.endswith("ort.cc")
    assert frames[0].line == 5
    assert frames[1].symbol == "xnn_create_fully_connected_nc_f32"
    assert frames[2].symbol is None  # libc: no symbol file given
    assert result.unmatched == ("libc.so",)
    assert f"symbolized 2 of 3 frames with {result.tool}" in result.record.notes
    assert classify(result.record).crash_class.value == "xnnpack-allocator-uaf"


@needs_tools
def test_symbolize_by_name_is_noted(built: tuple[Path, str, dict[str, int]]) -> None:
    lib, _, addresses = built
    create = addresses["xnn_create_fully_connected_nc_f32"]
    record = CrashRecord(platform="linux", source="host-signal", kind="native", frames=(
        Frame(index=0, module="libonnxruntime.so", pc=hex(create)),))
    result = symbolize_android(record, lib.parent)
    assert result.record.frames[0].symbol == "xnn_create_fully_connected_nc_f32"
    assert ("matched by file name, not build-id (may be the wrong build): libonnxruntime.so"
            in result.record.notes)
    # a frame whose build-id no file has is never matched by name
    other = CrashRecord(platform="android", source="tombstone", kind="native", frames=(
        Frame(index=0, module="libonnxruntime.so", pc=hex(create), build_id="ab" * 20),))
    missed = symbolize_android(other, lib.parent)
    assert missed.symbolized == 0
    assert missed.unmatched == (f"libonnxruntime.so (BuildId {'ab' * 20}: no file has it)",)


def test_missing_llvm_symbolizer_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setattr(symbolize_mod, "find_llvm_symbolizer", lambda: None)
    record = CrashRecord(platform="android", source="tombstone")
    with pytest.raises(UsageError) as err:
        symbolize_android(record, tmp_path)
    assert "llvm-symbolizer is not installed" in err.value.one_line()
    assert "apt-get install llvm" in err.value.one_line()


def test_missing_symbol_dir(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        symbolize_android(CrashRecord(platform="android", source="tombstone"),
                          tmp_path / "nope", tool="/bin/true")


@pytest.mark.skipif(sys.platform == "darwin", reason="atos exists on macOS")
def test_atos_unavailable_off_macos(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        symbolize_apple(CrashRecord(platform="ios", source="ips"), tmp_path)
    assert "atos is not available here" in err.value.message
    assert "macOS" in err.value.message


def test_atos_command_uses_one_load_address() -> None:
    assert atos_command(Path("App.dSYM/Contents/Resources/DWARF/App"), ["0x12be03c", "0x10"]) \
        == ["atos", "-arch", "arm64", "-o", "App.dSYM/Contents/Resources/DWARF/App", "-l",
            "0x100000000", "0x1012be03c", "0x100000010"]


@pytest.mark.parametrize("line,expected", [
    ("xnn_create_fully_connected_nc_f32 (in onnxruntime) (fully-connected-nc.c:412)",
     ("xnn_create_fully_connected_nc_f32", "fully-connected-nc.c", 412, None)),
    ("RCTFatal (in ColdstartWakeword) + 512", ("RCTFatal", None, None, 512)),
    ("0x1000a3f2c (in ColdstartWakeword)", (None, None, None, None)),
    ("garbage", (None, None, None, None)),
])
def test_parse_atos_line(line: str, expected: tuple[object, ...]) -> None:
    assert parse_atos_line(line) == expected


def test_read_build_id_of_non_elf(tmp_path: Path) -> None:
    path = tmp_path / "x.so"
    path.write_bytes(b"\x7fELF garbage")
    assert read_build_id(path) == (None, False)
    assert read_build_id(tmp_path / "missing") == (None, False)


def test_symbol_directory_with_a_fifo_and_a_device_link_is_indexed_without_blocking(
        tmp_path: Path) -> None:
    # issue #13: every input of the crash commands is bounded; a FIFO would block open()
    import os
    os.mkfifo(tmp_path / "libfifo.so")
    (tmp_path / "libzero.so").symlink_to("/dev/zero")
    (tmp_path / "notes.txt").write_text("not an ELF")
    assert read_build_id(tmp_path / "libfifo.so") == (None, False)
    assert read_build_id(tmp_path / "libzero.so") == (None, False)
    assert symbolize_mod.index_elves(tmp_path) == ({}, {})
