"""Symbolication, where the tools exist (both are optional; missing ones are said plainly).

* Android (and host ELF) frames: ``llvm-symbolizer`` (LLVM 13+, for ``--output-style=JSON``)
  with the unstripped ``.so`` picked from a directory the user gives, by GNU build-id (the
  ``(BuildId: ...)`` of the frame; the only safe key, since ORT may be linked into another
  library), else by file name (noted as weaker). The frame's ``rel_pc`` is passed as is, also
  for ``base.apk!lib.so`` frames (docs/formats.md section 7). Inlined functions become
  frames of their own, innermost first, as ndk-stack prints them.
* Apple frames: ``atos -arch <arch> -o <dSYM DWARF file> -l <load address> <addresses>``,
  macOS only. Each address is ``load address + imageOffset``; any load address works as long
  as both use the same one, so a fixed one is used (Apple forums thread 665888).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Sequence

from ..errors import InfraError, UsageError
from ._text import basename, clip
from .record import CrashRecord, Frame

__all__ = ["SymbolizeResult", "find_llvm_symbolizer", "read_build_id", "index_elves",
           "symbolize_android", "symbolize_apple", "atos_command", "parse_atos_line",
           "symbolize_host"]

_LOAD_ADDRESS = 0x100000000
_TIMEOUT_S = 120


@dataclasses.dataclass(frozen=True)
class SymbolizeResult:
    """A record with symbolized frames, and what happened.

    Attributes:
        record: the input record with frames replaced (a note added).
        symbolized: how many input frames got a symbol from the tool.
        unmatched: modules (or build-ids) for which no symbol file was found.
        tool: the tool's path.
    """

    record: CrashRecord
    symbolized: int
    unmatched: tuple[str, ...]
    tool: str


def find_llvm_symbolizer() -> str | None:
    """Path of ``llvm-symbolizer`` (plain, or a versioned Debian/NDK name), or ``None``."""
    found = shutil.which("llvm-symbolizer")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/bin/llvm-symbolizer-*") +
                        glob.glob("/usr/lib/llvm-*/bin/llvm-symbolizer"), reverse=True)
    return candidates[0] if candidates else None


def read_build_id(path: str | Path) -> tuple[str | None, bool]:
    """``(build_id, has_symbols)`` of an ELF file; ``(None, False)`` if it is not one.

    ``has_symbols`` is true when the file keeps ``.symtab`` or ``.debug_info`` (unstripped).
    Uses pyelftools; never raises for a bad file. Anything but a regular file (a device, a
    FIFO, a socket) is not read.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, False  # a FIFO would block open(), a device read forever
        with open(path, "rb") as handle:
            if handle.read(4) != b"\x7fELF":
                return None, False
            handle.seek(0)
            from elftools.common.exceptions import ELFError
            from elftools.elf.elffile import ELFFile
            try:
                elf = ELFFile(handle)
                build_id = None
                for section in elf.iter_sections():
                    if section.header.sh_type != "SHT_NOTE":
                        continue
                    for note in section.iter_notes():  # type: ignore[attr-defined]
                        if note["n_type"] == "NT_GNU_BUILD_ID":
                            build_id = str(note["n_desc"]).lower()
                has_symbols = bool(elf.get_section_by_name(".symtab")
                                   or elf.get_section_by_name(".debug_info"))
                return build_id, has_symbols
            except (ELFError, ValueError, KeyError, AttributeError, EOFError):
                return None, False
    except OSError:
        return None, False


def index_elves(directory: str | Path, max_files: int = 20000
                ) -> tuple[dict[str, Path], dict[str, list[Path]]]:
    """``(by_build_id, by_name)`` for every ELF file under ``directory``.

    An unstripped file wins over a stripped one with the same build-id.

    Raises:
        UsageError: ``directory`` is not a directory.
    """
    root = Path(directory)
    if not root.is_dir():
        raise UsageError(f"symbol directory {clip(root)} does not exist",
                         "pass the folder holding the unstripped .so files")
    by_id: dict[str, tuple[Path, bool]] = {}
    by_name: dict[str, list[Path]] = {}
    seen = 0
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            seen += 1
            if seen > max_files:
                break
            path = Path(folder) / name
            build_id, has_symbols = read_build_id(path)
            if build_id is None and not has_symbols:
                continue
            by_name.setdefault(name, []).append(path)
            if build_id and (build_id not in by_id or (has_symbols and not by_id[build_id][1])):
                by_id[build_id] = (path, has_symbols)
    return {k: v[0] for k, v in by_id.items()}, by_name


def _lib_name(frame: Frame) -> str | None:
    module = frame.module or ""
    if "!" in module:
        module = module.rsplit("!", 1)[1]
    return basename(module) or None


def _run_llvm(tool: str, obj: Path, pcs: Sequence[str], extra: Sequence[str] = ()
              ) -> list[dict[str, object]]:
    argv = [tool, f"--obj={obj}", "--output-style=JSON", "--functions=linkage", "--demangle",
            "--inlining", *extra]
    try:
        done = subprocess.run(argv, input="\n".join(pcs) + "\n", capture_output=True,
                              text=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfraError(f"llvm-symbolizer failed on {obj}: {exc}",
                         "check the llvm-symbolizer install") from None
    results: list[dict[str, object]] = []
    for line in done.stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        results.extend(value if isinstance(value, list) else [value])
    return results


def symbolize_android(record: CrashRecord, symbols_dir: str | Path,
                      tool: str | None = None) -> SymbolizeResult:
    """Symbolize a record's ELF frames with llvm-symbolizer and the user's symbol files.

    Args:
        record: a parsed record (Android tombstone or host backtrace frames with a ``pc``).
        symbols_dir: directory searched (recursively) for unstripped ELF files.
        tool: path of llvm-symbolizer; ``None`` finds it on PATH.

    Returns:
        A :class:`SymbolizeResult`; frames without a matching ELF are kept unchanged.

    Raises:
        UsageError: llvm-symbolizer is not installed, or ``symbols_dir`` does not exist.
        InfraError: llvm-symbolizer could not be run.
    """
    tool = tool or find_llvm_symbolizer()
    if tool is None:
        raise UsageError("llvm-symbolizer is not installed, so frames cannot be symbolized",
                         "install LLVM (Debian: apt-get install llvm) or add the NDK's "
                         "toolchains/llvm/prebuilt/*/bin to PATH")
    by_id, by_name = index_elves(symbols_dir)
    wanted: dict[Path, list[int]] = {}
    unmatched: list[str] = []
    weak: set[str] = set()
    for i, frame in enumerate(record.frames):
        if not frame.pc:
            continue
        path = by_id.get(frame.build_id or "") if frame.build_id else None
        name = _lib_name(frame)
        if path is None and name and by_name.get(name):
            if frame.build_id:
                unmatched.append(f"{name} (BuildId {frame.build_id}: no file has it)")
                continue
            path = by_name[name][0]
            weak.add(name)
        if path is None:
            if name or frame.build_id:
                unmatched.append(name or frame.build_id or "?")
            continue
        wanted.setdefault(path, []).append(i)
    new_frames: list[list[Frame]] = [[f] for f in record.frames]
    symbolized = 0
    for path, positions in wanted.items():
        results = _run_llvm(tool, path, [record.frames[i].pc or "0" for i in positions])
        for i, result in zip(positions, results, strict=False):
            expanded = _frames_from_result(record.frames[i], result)
            if expanded:
                new_frames[i] = expanded
                symbolized += 1
    flat = [f for group in new_frames for f in group]
    frames = tuple(dataclasses.replace(f, index=n) for n, f in enumerate(flat))
    notes = [f"symbolized {symbolized} of {len(record.frames)} frames with {tool}"]
    if weak:
        notes.append("matched by file name, not build-id (may be the wrong build): "
                     + ", ".join(sorted(weak)))
    if unmatched:
        notes.append("no symbol file for: " + ", ".join(sorted(set(unmatched))))
    if len(flat) > len(record.frames):
        notes.append(f"{len(flat) - len(record.frames)} inlined frames expanded")
    out = dataclasses.replace(record, frames=frames, notes=record.notes + tuple(notes))
    return SymbolizeResult(record=out, symbolized=symbolized,
                           unmatched=tuple(sorted(set(unmatched))), tool=tool)


def symbolize_host(record: CrashRecord, debug_dirs: Sequence[str | Path] = (),
                   tool: str | None = None) -> SymbolizeResult | None:
    """Symbolize a host crash's unnamed frames with the symbols their own files carry.

    A host backtrace (``backtrace_symbols_fd``) names only exported symbols; a frame without
    one keeps its file's path and offset, and llvm-symbolizer reads that file's own symbol
    table and DWARF (the kit's onnxruntime builds keep ``-g``), or its separate debug file
    found by build-id under ``debug_dirs`` (``<root>/usr/lib/debug``, where Debian's
    ``*-dbgsym`` packages put them). A file with neither (Debian's stripped
    libonnxruntime without its dbgsym) leaves the frame as it is.

    Returns:
        The :class:`SymbolizeResult`, or ``None`` when llvm-symbolizer is not installed or
        no frame has a path and an offset (nothing to do). Never raises.
    """
    tool = tool or find_llvm_symbolizer()
    wanted: dict[Path, list[int]] = {}
    for i, frame in enumerate(record.frames):
        if frame.symbol or not frame.pc or not frame.path:
            continue
        try:
            if not stat.S_ISREG(os.stat(frame.path).st_mode):
                continue
        except OSError:
            continue
        wanted.setdefault(Path(frame.path), []).append(i)
    if tool is None or not wanted:
        return None
    extra = [f"--debug-file-directory={d}" for d in debug_dirs if Path(d).is_dir()]
    new_frames: list[list[Frame]] = [[f] for f in record.frames]
    symbolized = 0
    for path, positions in wanted.items():
        try:
            results = _run_llvm(tool, path, [record.frames[i].pc or "0" for i in positions],
                                extra)
        except InfraError:
            continue
        for i, result in zip(positions, results, strict=False):
            expanded = _frames_from_result(record.frames[i], result)
            if expanded:
                new_frames[i] = expanded
                symbolized += 1
    if not symbolized:
        return SymbolizeResult(record=record, symbolized=0, unmatched=(), tool=tool)
    flat = [f for group in new_frames for f in group]
    frames = tuple(dataclasses.replace(f, index=n) for n, f in enumerate(flat))
    note = (f"symbolized {symbolized} of {len(record.frames)} frames with {tool} from the "
            f"libraries' own symbols")
    out = dataclasses.replace(record, frames=frames, notes=record.notes + (note,))
    return SymbolizeResult(record=out, symbolized=symbolized, unmatched=(), tool=tool)


def _frames_from_result(frame: Frame, result: dict[str, object]) -> list[Frame]:
    symbols = result.get("Symbol")
    if not isinstance(symbols, list):
        return []
    out: list[Frame] = []
    for sym in symbols:
        if not isinstance(sym, dict):
            continue
        name = sym.get("FunctionName")
        if not isinstance(name, str) or name in ("", "??"):
            continue
        start = sym.get("StartAddress")
        offset = None
        if isinstance(start, str) and frame.pc and not out:
            try:
                offset = int(frame.pc, 16) - int(start, 16)
            except ValueError:
                offset = None
        file = sym.get("FileName")
        line = sym.get("Line")
        out.append(dataclasses.replace(
            frame, symbol=name, offset=offset if offset is None or offset >= 0 else None,
            file=file if isinstance(file, str) and file and file != "??" else None,
            line=line if isinstance(line, int) and line > 0 else None))
    return out


def atos_command(dwarf: str | Path, pcs: Iterable[str], arch: str = "arm64") -> list[str]:
    """The ``atos`` argv for image offsets ``pcs`` (hex strings) of one image."""
    addresses = [hex(_LOAD_ADDRESS + int(pc, 16)) for pc in pcs]
    return ["atos", "-arch", arch, "-o", str(dwarf), "-l", hex(_LOAD_ADDRESS), *addresses]


_ATOS = re.compile(r"^(?P<sym>.+?) \(in (?P<mod>[^)]+)\)(?: \((?P<file>[^():]+):(?P<line>\d+)\)"
                   r"| \+ (?P<off>\d+))?\s*$")


def parse_atos_line(line: str) -> tuple[str | None, str | None, int | None, int | None]:
    """``(symbol, file, line, offset)`` from one atos output line (``None`` where absent).

    Shapes: ``sym (in Module) (file.cc:37)``, ``sym (in Module) + 40``, ``0x1000 (in Module)``
    (not symbolized: symbol ``None``).
    """
    m = _ATOS.match(line.strip())
    if m is None:
        return None, None, None, None
    sym = m.group("sym")
    if sym.startswith("0x"):
        return None, None, None, None
    line_no = m.group("line")
    off = m.group("off")
    return sym, m.group("file"), int(line_no) if line_no else None, int(off) if off else None


def _dwarf_file(dsym: Path) -> Path:
    if dsym.is_file():
        return dsym
    inner = dsym / "Contents" / "Resources" / "DWARF"
    files = sorted(p for p in inner.glob("*") if p.is_file()) if inner.is_dir() else []
    if not files:
        raise UsageError(f"{dsym} is not a dSYM bundle (no Contents/Resources/DWARF/*)",
                         "pass App.dSYM or its DWARF file")
    return files[0]


def symbolize_apple(record: CrashRecord, dsym: str | Path, arch: str = "arm64"
                    ) -> SymbolizeResult:
    """Symbolize the frames of the dSYM's image with ``atos`` (macOS only).

    Frames are picked by module name equal to the DWARF file's name (the app binary). Each
    frame's ``pc`` must be the image offset (``.ips`` ``imageOffset``; legacy text gives it
    when ``Binary Images`` are present).

    Raises:
        UsageError: not on macOS, ``atos`` missing, or ``dsym`` is not a dSYM.
        InfraError: atos could not be run.
    """
    if sys.platform != "darwin" or shutil.which("atos") is None:
        raise UsageError("atos is not available here: Apple symbolication needs macOS with "
                         "the Xcode command line tools",
                         "run `coldstart crash symbolize --dsym` on a Mac "
                         "(xcode-select --install)")
    dwarf = _dwarf_file(Path(dsym))
    positions = [i for i, f in enumerate(record.frames) if f.pc and f.module == dwarf.name]
    if not positions:
        note = f"no frame of image {dwarf.name} has an image offset; nothing to symbolize"
        return SymbolizeResult(record=dataclasses.replace(record, notes=record.notes + (note,)),
                               symbolized=0, unmatched=(dwarf.name,), tool="atos")
    argv = atos_command(dwarf, [record.frames[i].pc or "0" for i in positions], arch=arch)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InfraError(f"atos failed: {exc}", "check the Xcode command line tools") from None
    frames = list(record.frames)
    symbolized = 0
    for i, line in zip(positions, done.stdout.splitlines(), strict=False):
        sym, file, line_no, offset = parse_atos_line(line)
        if sym is not None:
            frames[i] = dataclasses.replace(frames[i], symbol=sym, file=file, line=line_no,
                                            offset=offset)
            symbolized += 1
    note = f"symbolized {symbolized} of {len(positions)} {dwarf.name} frames with atos"
    return SymbolizeResult(record=dataclasses.replace(record, frames=tuple(frames),
                                                      notes=record.notes + (note,)),
                           symbolized=symbolized, unmatched=(), tool="atos")
