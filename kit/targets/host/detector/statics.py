"""Where onnxruntime's XNNPACK allocator statics are, as offsets in libonnxruntime.so.

onnxruntime (1.21, ``core/providers/xnnpack/xnnpack_init.cc``) keeps two function-local
statics in ``GetStoredAllocator()``::

    static AllocatorPtr ort_allocator;                       // std::shared_ptr<IAllocator>
    static xnn_allocator xnn_allocator_wrapper_ = {
        /*context=*/ort_allocator.get(), xnn_allocate, ...};  // struct xnn_allocator

``CreatePreferredAllocators`` checks and sets the first and writes the second's ``context``
on every session create, without a lock (onnxruntime#32461). Debian strips the internal
symbols, so their addresses come from two pieces of evidence:

* the **wrapper**: the race witness records the ``struct xnn_allocator*`` every
  ``xnn_initialize`` call gets, which is ``&xnn_allocator_wrapper_``; minus the library's
  load base (the witness's ``images`` line) it is the wrapper's offset. Its extent is
  ``sizeof(struct xnn_allocator)`` = 48 bytes (6 pointers; XNNPACK include/xnnpack.h).
* the **AllocatorPtr**: the wrapper's dynamic initialisation copies ``ort_allocator.get()``
  (the shared_ptr's first word) into the wrapper's first word. In the machine code that is
  a load from the AllocatorPtr's address followed, a few instructions later, by a store of
  the same register to the wrapper's address. :func:`analyze_library` disassembles the
  library (``objdump -d``) and lists every such rip-relative load-then-store pair between
  writable sections; :func:`allocator_ptr_offset` picks the pair whose store is the
  wrapper. Its extent is ``sizeof(std::shared_ptr)`` = 16 bytes (the element pointer and
  the control block pointer; libstdc++ bits/shared_ptr_base.h).

On Debian 13's ``libonnxruntime.so.1.21.0`` (build id 6acc772c...) that gives the wrapper at
``+0xf52040`` (``.data``) and the AllocatorPtr at ``+0xf52950`` (``.bss``); docs/race.md shows
the disassembly. The analysis of a library is cached under ``<cache>/detector/`` by sha256.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ...._bounded import read_json_bounded
from ....errors import ColdstartError

__all__ = ["LibraryInfo", "analyze_library", "allocator_ptr_offset", "WRAPPER_SIZE",
           "ALLOCATOR_PTR_SIZE", "objdump_command"]

#: sizeof(struct xnn_allocator): six pointers (XNNPACK include/xnnpack.h).
WRAPPER_SIZE = 48
#: sizeof(std::shared_ptr<T>): element pointer + control block pointer (libstdc++).
ALLOCATOR_PTR_SIZE = 16
_ANALYSIS_VERSION = 2
# objdump -d --no-show-raw-insn (AT&T syntax) lines, e.g.
#   298633:	mov    0xcba316(%rip),%rax        # f52950 <...>
#   29863d:	mov    %rax,0xcb99fc(%rip)        # f52040 <...>
_LOAD_RE = re.compile(r"^\s*[0-9a-f]+:\s+mov\s+-?(?:0x[0-9a-f]+)?\(%rip\),(%r[a-z0-9]+)\s+#\s+"
                      r"([0-9a-f]+)")
_STORE_RE = re.compile(r"^\s*[0-9a-f]+:\s+mov\s+(%r[a-z0-9]+),-?(?:0x[0-9a-f]+)?\(%rip\)\s+#\s+"
                       r"([0-9a-f]+)")
_INSN_RE = re.compile(r"^\s*[0-9a-f]+:\s")
_WINDOW = 4  # instructions between the load and the store


@dataclasses.dataclass(frozen=True)
class LibraryInfo:
    """What :func:`analyze_library` learnt about one ``libonnxruntime.so``.

    Attributes:
        path: the file analysed.
        sha256: its hash (the cache key).
        build_id: its GNU build id, or ``None``.
        sections: writable allocated sections as ``(name, start, end)`` offsets.
        image_end: end of the highest ``PT_LOAD`` segment (offsets below it are the library).
        pairs: ``(load_from, store_to)`` offsets of rip-relative load-then-store pairs
            between writable sections (see the module doc).
        error: why the disassembly is missing (no objdump, it failed), else ``None``.
    """

    path: str
    sha256: str
    build_id: str | None
    sections: tuple[tuple[str, int, int], ...]
    image_end: int
    pairs: tuple[tuple[int, int], ...]
    error: str | None = None

    def section_of(self, offset: int) -> str | None:
        """The writable section holding ``offset``, e.g. ``.bss``, or ``None``."""
        return next((name for name, start, end in self.sections if start <= offset < end), None)

    def to_dict(self) -> dict[str, Any]:
        return {"v": _ANALYSIS_VERSION, **dataclasses.asdict(self)}


def objdump_command(runtime: Any) -> list[str] | None:
    """An ``objdump`` that runs here: the host's, else the Debian root's through its loader;
    ``None`` when neither exists."""
    host = shutil.which("objdump")
    if host:
        return [host]
    root = getattr(runtime, "root", None)
    if getattr(runtime, "kind", None) == "debian-root" and root:
        inner = Path(root) / "usr/bin/objdump"
        if inner.exists():
            return [str(Path(root) / "usr/lib64/ld-linux-x86-64.so.2"), "--library-path",
                    runtime.lib_dir, str(inner)]
    return None


def _elf_facts(path: Path) -> tuple[str | None, tuple[tuple[str, int, int], ...], int]:
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import NoteSection

    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        sections = []
        for sec in elf.iter_sections():
            flags = sec["sh_flags"]
            if (flags & SH_FLAGS.SHF_WRITE and flags & SH_FLAGS.SHF_ALLOC
                    and not flags & SH_FLAGS.SHF_TLS and sec["sh_size"]):
                sections.append((sec.name, int(sec["sh_addr"]),
                                 int(sec["sh_addr"] + sec["sh_size"])))
        end = max((int(seg["p_vaddr"] + seg["p_memsz"]) for seg in elf.iter_segments()
                   if seg["p_type"] == "PT_LOAD"), default=0)
        note = elf.get_section_by_name(".note.gnu.build-id")
        build_id = None
        if isinstance(note, NoteSection):
            build_id = next((n["n_desc"] for n in note.iter_notes()
                             if n["n_type"] == "NT_GNU_BUILD_ID"), None)
    return build_id, tuple(sections), end


def _pairs(lines: Any, writable: tuple[tuple[str, int, int], ...]) -> list[tuple[int, int]]:
    def inside(offset: int) -> bool:
        return any(start <= offset < end for _n, start, end in writable)

    recent: list[tuple[str, int] | None] = []  # per instruction: (register, load target)
    out: set[tuple[int, int]] = set()
    for line in lines:
        if not _INSN_RE.match(line):
            if line.rstrip().endswith(">:"):  # a new symbol: no pair across it
                recent.clear()
            continue
        store = _STORE_RE.match(line)
        if store is not None:
            reg, target = store.group(1), int(store.group(2), 16)
            for item in reversed(recent):
                if item is not None and item[0] == reg:
                    if inside(item[1]) and inside(target) and item[1] != target:
                        out.add((item[1], target))
                    break
        load = _LOAD_RE.match(line)
        recent.append((load.group(1), int(load.group(2), 16)) if load else None)
        if len(recent) > _WINDOW:
            del recent[0]
    return sorted(out)


def analyze_library(path: str | os.PathLike[str], objdump: list[str] | None,
                    sha256: str) -> LibraryInfo:
    """Analyse ``libonnxruntime.so`` (see the module doc), or return the cached analysis.

    Takes about 10 s once per library (objdump of 16 MB). Never raises for a missing or
    failing objdump: ``error`` says why ``pairs`` is empty.

    Raises:
        OSError, elftools.common.exceptions.ELFError: the library cannot be read as ELF.
    """
    from ....modelset import cache_dir

    cache = cache_dir() / "detector" / f"statics-{sha256}.json"
    try:
        data = read_json_bounded(cache, what="detector cache", hint="")
        if isinstance(data, dict) and data.pop("v") == _ANALYSIS_VERSION:
            return LibraryInfo(**{**data, "sections": tuple(tuple(s) for s in data["sections"]),
                                  "pairs": tuple(tuple(p) for p in data["pairs"])})
    except (OSError, ValueError, KeyError, TypeError, ColdstartError):
        pass  # made again below
    build_id, sections, end = _elf_facts(Path(path))
    pairs: list[tuple[int, int]] = []
    error = None
    if objdump is None:
        error = "no objdump here (install binutils) to find the AllocatorPtr static"
    else:
        try:
            proc = subprocess.Popen([*objdump, "-d", "--no-show-raw-insn", str(path)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    stdin=subprocess.DEVNULL, text=True, errors="replace")
            assert proc.stdout is not None
            with proc.stdout:
                pairs = _pairs(proc.stdout, sections)
            if proc.wait(timeout=300) != 0:
                error, pairs = f"objdump -d exited with status {proc.returncode}", []
        except (OSError, subprocess.TimeoutExpired) as exc:
            error, pairs = f"objdump -d failed: {exc}", []
    info = LibraryInfo(str(path), sha256, build_id, sections, end,
                       tuple((int(a), int(b)) for a, b in pairs), error)
    if error is None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(info.to_dict()))
        os.replace(tmp, cache)
    return info


def allocator_ptr_offset(info: LibraryInfo, wrapper_offset: int) -> tuple[int | None, str]:
    """The AllocatorPtr's offset given the wrapper's, and how it was found (or why not)."""
    if info.error is not None:
        return None, info.error
    sources = sorted({src for src, dst in info.pairs if dst == wrapper_offset})
    sources = [s for s in sources
               if not (wrapper_offset - ALLOCATOR_PTR_SIZE < s < wrapper_offset + WRAPPER_SIZE)]
    if len(sources) == 1:
        return sources[0], (f"objdump: the wrapper's first word (+{wrapper_offset:#x}) is "
                            f"stored from a load of +{sources[0]:#x} (ort_allocator.get())")
    if not sources:
        return None, (f"objdump found no rip-relative load stored into the wrapper "
                      f"(+{wrapper_offset:#x}): the AllocatorPtr static is not located")
    return None, (f"objdump found {len(sources)} loads stored into the wrapper "
                  f"(+{wrapper_offset:#x}): the AllocatorPtr static is ambiguous")
