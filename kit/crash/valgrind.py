"""Valgrind's text output: Memcheck, Helgrind and DRD error reports (a piece of one too).

Every line of the tool's output starts with ``==PID==`` (``--log-file`` and the terminal
alike; some pastes drop it)::

    ==22627== Invalid read of size 4
    ==22627==    at 0x4E36118: opencc_convert_utf8 (in /usr/lib/libopencc.so.1.0.0)
    ==22627==    by 0x1093BE: convert (convert.c:41)
    ==22627==  Address 0x64acad0 is 0 bytes inside a block of size 2 free'd
    ==22627==    at 0x4C2B6CD: free (in /usr/lib/valgrind/vgpreload_memcheck-amd64-linux.so)
    ...
    ==22627== Process terminating with default action of signal 11 (SIGSEGV)
    ==22627==  Access not within mapped region at address 0x0
    ==22627==    at 0x400544: main (t.c:5)

Source: the Valgrind user manual, chapters 4 (Memcheck: "Explanation of error messages"),
7 (Helgrind) and 8 (DRD), https://valgrind.org/docs/manual/manual.html. The crashing stack
is the one under ``Process terminating with default action of signal N``; without that line
(the process survived, or the paste stops earlier) it is the first error's stack, and the
error says what went wrong. Stacks under ``Address 0x.. is .. free'd`` / ``Block was
alloc'd at`` and the other errors are summarised in notes.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import basename, parse_int, signal_number
from .record import Frame
from .signature import normalize_symbol

__all__ = ["looks_like_valgrind", "read_valgrind"]

_PREFIX = re.compile(r"^\s*(?:==|--)(?P<pid>\d+)(?:==|--) ?")
_TOOL = re.compile(r"^(?P<tool>Memcheck|Helgrind|DRD|exp-sgcheck|SGCheck), a ")
_ERROR = re.compile(
    r"^(?P<what>Invalid (?:read|write) of size \d+|Invalid (?:free|delete|delete\[\]|realloc)"
    r"\(\)(?: / \S+)*|Mismatched free\(\) / delete / delete \[\]|Conditional jump or move depends"
    r" on uninitialised value\(s\)|Use of uninitialised value of size \d+|Syscall param .+|"
    r"Source and destination overlap in .+|Argument '\w+' of function \w+ has a fishy .+|"
    r"Possible data race during (?:read|write) of size \d+ at 0x[0-9a-fA-F]+ by thread #\d+|"
    r"Conflicting (?:load|store) by thread \d+ at 0x[0-9a-fA-F]+ size \d+|"
    r"Thread #\d+ unlocked a not-locked lock at .+|Thread #\d+: .+|Jump to the invalid address "
    r"stated on the next line|Invalid (?:alignment|size) value: .+|Stack overflow in thread .+)"
    r"\s*$")
_TERMINATING = re.compile(r"^Process terminating with default action of signal (?P<num>\d+) "
                          r"\((?P<name>SIG[A-Z0-9]+)\)")
_FRAME = re.compile(r"^\s*(?:at|by) (?P<pc>0x[0-9A-Fa-f]+): (?P<sym>.*?)\s*"
                    r"(?:\((?:in (?P<path>[^()]+)|(?P<file>[^():]+):(?P<line>\d+))\))?\s*$")
_ADDRESS = re.compile(r"^\s*(?:Address|Access not within mapped region at address|Bad permissions"
                      r" for mapped region at address) (?P<addr>0x[0-9A-Fa-f]+)\b")
_DETECT = re.compile(r"^\s*==\d+== (?:Memcheck|Helgrind|DRD), a |^\s*==\d+==\s+(?:at|by) 0x[0-9A-F"
                     r"a-f]+: |^\s*==\d+== (?:Invalid (?:read|write) of size \d+|Process terminating"
                     r" with default action of signal)|^\s*(?:at|by) 0x[0-9A-Fa-f]+: .*\n\s*by "
                     r"0x[0-9A-Fa-f]+: ", re.M)
_LOOKED_AT = 2_000_000
_PID_MARK = re.compile(r"==\d+==")


def looks_like_valgrind(text: str) -> str:
    """Why the text is Valgrind output (or a piece of it), or ``""``."""
    sample = text[:_LOOKED_AT]
    # every mark holds "==PID==" or a "by 0x" frame: a quick test before the regex
    m = _DETECT.search(sample) if "by 0x" in sample or _PID_MARK.search(sample) else None
    return f"a Valgrind line ({m.group(0).strip()[:60]!r})" if m else ""


def _frame(index: int, m: re.Match[str]) -> Frame:
    path = (m.group("path") or "").strip() or None
    sym = m.group("sym")
    return Frame(index=index, module=basename(path) if path else None,
                 symbol=None if sym in ("", "???") else sym, pc=m.group("pc").lower(),
                 path=path, file=m.group("file"), line=parse_int(m.group("line")))


def _blocks(lines: Sequence[str]) -> list[tuple[str, list[Frame]]]:
    """``(heading, frames)``: each heading line that a stack follows, in order."""
    blocks: list[tuple[str, list[Frame]]] = []
    for line in lines:
        m = _FRAME.match(line)
        if m is not None and blocks and line.lstrip().startswith(("at ", "by ")):
            if line.lstrip().startswith("at ") and blocks[-1][1]:
                blocks.append((blocks[-1][0] + " (next stack)", []))
            frames = blocks[-1][1]
            frames.append(_frame(len(frames), m))
        elif line.strip():
            blocks.append((line.strip(), []))
    return blocks


def _summary(frames: list[Frame]) -> str:
    names = [normalize_symbol(f.symbol) if f.symbol else (f.module or "?") for f in frames[:3]]
    return " | ".join(names)


def read_valgrind(draft: Draft, lines: Sequence[str]) -> None:
    """Read Valgrind output (see the module docs) into ``draft``."""
    body: list[str] = []
    for line in lines:
        m = _PREFIX.match(line)
        if m is not None:
            draft.set("pid", parse_int(m.group("pid")))
            line = line[m.end():]
        body.append(line)
    tool = next((m.group("tool") for m in map(_TOOL.match, body) if m), "Memcheck")
    draft.format = "valgrind" if tool == "Memcheck" else f"valgrind-{tool.lower()}"
    draft.kind = "native"
    blocks = _blocks(body)
    errors = [i for i, (head, _) in enumerate(blocks) if _ERROR.match(head)]
    term = next((i for i, (head, _) in enumerate(blocks) if _TERMINATING.match(head)), None)
    if term is not None:
        m = _TERMINATING.match(blocks[term][0])
        assert m is not None
        draft.set("signal", parse_int(m.group("num")) or signal_number(m.group("name")))
        draft.set("signal_name", m.group("name"))
    if errors:
        what = blocks[errors[0]][0]
        draft.set("exception", f"{tool}: {what}")
        draft.set("code", re.sub(r" of size \d+.*| during .*| by thread .*", "", what))
    crash = term if term is not None else (errors[0] if errors else None)
    chosen: list[Frame] = []
    if crash is not None:
        chosen = blocks[crash][1]
        for head, frames in blocks[crash + 1:crash + 3]:
            am = _ADDRESS.match(head)
            if am is None:
                continue
            draft.set("fault_address", am.group("addr").lower())
            draft.set("cause", head)
            if not chosen and crash == term:
                chosen = frames
    for frame in chosen:
        draft.add_frame(frame)
    for head, frames in blocks:
        if frames and frames is not chosen and len(draft.notes) < 8:
            draft.note(f"other stack ({head[:80]}): {_summary(frames)}")
    if len(errors) > 1:
        draft.note(f"{len(errors)} errors in the output; the record reads "
                   f"{'the one the signal ended' if term is not None else 'the first'}")
    if term is None:
        draft.note("no 'Process terminating' line: the process was not killed by a signal "
                   "in this output (a memory error report)")
    if not draft.frames:
        draft.note("no stack frames in the Valgrind output")
