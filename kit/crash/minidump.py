"""Breakpad / Crashpad ``minidump_stackwalk`` text: a minidump processed into a report.

Layout (Breakpad's ``processor/stackwalk_common.cc``, ``PrintProcessState`` and
``PrintStack``; the same tool reads Crashpad's minidumps; docs/formats.md section 9)::

    Operating system: Linux
                      0.0.0 Linux 3.19.0-25-generic ...
    CPU: amd64
    Crash reason:  SIGSEGV /SEGV_MAPERR        (Apple: EXC_BAD_ACCESS / KERN_INVALID_ADDRESS)
    Crash address: 0x0
    Assertion: ...                             (when the dump has one)

    Thread 0 (crashed)
     0  libc-2.21.so + 0x35267                 (module + offset: no symbol)
        rbx = 0x00007ffe22528850   r12 = ...    (registers, frame 0 only in full)
        Found by: given as instruction pointer in context
     1  rdm!std::string::_Rep::_S_create(unsigned long) + 0x59      (module!symbol + offset)
     2  Electron Framework!atom::Crash() [atom_bindings.cc : 28 + 0x0]   (with source)
     3  0x7fbe646d0f20                          (no module)

    Thread 1
     ...
    Loaded modules:

With ``-m`` (machine-readable, ``PrintProcessStateMachineReadable``) the same is one record
a line, fields split by ``|``: ``OS|Linux|<version>``, ``Crash|SIGSEGV /SEGV_MAPERR|0x0|<crashed
thread>``, ``Module|...`` lines, then frames ``<thread>|<frame>|<module>|<function>|<file>|
<line>|<offset>`` (the offset in the function when there is one, else in the module).

The crashed thread's frames are read (registers and ``Found by`` lines skipped); the
reason gives the signal (``SIGABRT``, ``SIGSEGV /SEGV_MAPERR``: name and code) or Apple's
exception and its code; the operating system line the platform. A copy from a JSON log
(every line a JSON string) is unquoted before (:mod:`kit.crash._paste`).
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import parse_int, signal_number
from .record import Frame

__all__ = ["looks_like_minidump", "read_minidump"]

_REASON = re.compile(r"^\s*Crash reason:\s+(?P<reason>\S(?:.*\S)?)\s*$")
_CRASHED = re.compile(r"^\s*Thread (?P<n>\d+) \(crashed\)\s*$")
_THREAD = re.compile(r"^\s*Thread \d+(?: \(crashed\))?\s*$")
_FRAME = re.compile(r"^\s{0,3}(?P<idx>\d{1,4})  (?P<body>\S(?:.*\S)?)\s*$")
_SOURCE = re.compile(r"^(?P<sym>.*\S) \[(?P<file>[^\[\]]+) : (?P<line>\d+) \+ 0x[0-9a-fA-F]+\]$")
_OFFSET = re.compile(r"^(?P<head>.*\S) \+ (?P<off>0x[0-9a-fA-F]+)$")
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
_OS = {"linux": "linux", "android": "android", "mac os x": "macos", "macos": "macos",
       "ios": "ios"}


_MR_CRASH = re.compile(r"^Crash\|(?P<reason>[^|]*)\|(?P<addr>[^|]*)\|(?P<thread>\d+)\s*$")
_MR_FRAME = re.compile(r"^(?P<thread>\d+)\|(?P<idx>\d+)\|(?P<module>[^|]*)\|(?P<function>[^|]*)\|"
                       r"(?P<file>[^|]*)\|(?P<line>\d*)\|(?P<off>0x[0-9a-fA-F]+)?\s*$")


def looks_like_minidump(text: str) -> str:
    """Why the text is ``minidump_stackwalk`` output (a ``Crash reason:`` line and a
    ``Thread N (crashed)`` line, or ``-m``'s ``Crash|...`` line and frame records), or
    ``""``."""
    sample = text[:2_000_000]
    if "Crash|" in sample:
        lines = sample.split("\n")
        if any(_MR_CRASH.match(ln.strip()) for ln in lines) and \
                sum(1 for ln in lines if _MR_FRAME.match(ln.strip())) >= 1:
            return "minidump_stackwalk -m's 'Crash|reason|address|thread' line and frame records"
    if "Crash reason:" not in sample or "(crashed)" not in sample:
        return ""
    lines = sample.split("\n")
    if any(_REASON.match(ln) for ln in lines) and any(_CRASHED.match(ln) for ln in lines):
        return "minidump_stackwalk's 'Crash reason:' and 'Thread N (crashed)' lines"
    return ""


def _frame(index: int, body: str) -> Frame:
    """One frame's text (``module!symbol [file : line + 0x..]``, ``module!symbol + 0x..``,
    ``module + 0x..``, ``0x..``) as a frame."""
    if _ADDRESS.match(body):
        return Frame(index=index, pc=body.lower())
    file = line = offset = pc = None
    source = _SOURCE.match(body)
    if source is not None:
        body, file, line = source.group("sym"), source.group("file"), parse_int(
            source.group("line"))
    else:
        off = _OFFSET.match(body)
        if off is not None:
            body, offset = off.group("head"), parse_int(off.group("off"), 16)
    module, bang, symbol = body.partition("!")
    if not bang:  # "module + 0x..": an offset into the module, no symbol
        return Frame(index=index, module=body,
                     pc=hex(offset) if offset is not None else None)
    return Frame(index=index, module=module, symbol=symbol or None, offset=offset, pc=pc,
                 file=file, line=line)


def read_minidump(draft: Draft, lines: Sequence[str]) -> None:
    """Read ``minidump_stackwalk`` text into ``draft`` (see the module docs)."""
    draft.format = "minidump-stackwalk"
    draft.kind = "native"
    if any(_MR_CRASH.match(ln.strip()) for ln in lines[:4000] if ln.startswith("Crash|")):
        _read_machine_readable(draft, lines)
        return
    in_crashed = False
    for i, line in enumerate(lines):
        if line.startswith("Operating system:"):
            name = line.split(":", 1)[1].strip().lower()
            draft.platform = _OS.get(name, "unknown")
            if draft.platform == "unknown":
                draft.note(f"operating system {name[:40]!r}: no platform the kit knows")
            continue
        reason = _REASON.match(line)
        if reason is not None:
            _reason(draft, reason.group("reason"))
            continue
        if line.startswith("Crash address:"):
            draft.set("fault_address", line.split(":", 1)[1].strip().lower() or None)
            continue
        if line.startswith("Assertion:") and "Unknown assertion type" not in line:
            draft.set("abort_message", line.split(":", 1)[1].strip() or None)
            continue
        crashed = _CRASHED.match(line)
        if crashed is not None:
            in_crashed = True
            draft.set("thread_index", parse_int(crashed.group("n")))
            continue
        if in_crashed and (_THREAD.match(line) or line.startswith("Loaded modules:")):
            break
        if in_crashed:
            frame = _FRAME.match(line)
            if frame is not None and " = 0x" not in line:
                draft.add_frame(_frame(len(draft.frames) + draft.dropped_frames,
                                       frame.group("body")))
    if draft.dropped_frames:
        draft.note(f"{draft.dropped_frames} deeper frames not kept")
    if not draft.frames:
        draft.note("no frames of the crashed thread in the text")


def _reason(draft: Draft, reason: str) -> None:
    """``SIGABRT``, ``SIGSEGV /SEGV_MAPERR``, ``EXC_BAD_ACCESS / KERN_INVALID_ADDRESS``,
    ``EXCEPTION_ACCESS_VIOLATION_READ`` or a bare code: signal, exception and code."""
    head, _, code = (part.strip() for part in reason.partition("/"))
    if re.fullmatch(r"SIG[A-Z0-9]+", head):
        draft.set("signal_name", head)
        draft.set("signal", signal_number(head, darwin=draft.platform in ("macos", "ios")))
        draft.set("code", code or None)
        return
    draft.set("exception", head)
    draft.set("code", code or None)


def _read_machine_readable(draft: Draft, lines: Sequence[str]) -> None:
    """``minidump_stackwalk -m`` records (see the module docs)."""
    draft.format = "minidump-stackwalk-m"
    crashed = None
    for line in lines:
        line = line.strip()
        if line.startswith("OS|"):
            name = line.split("|")[1].strip().lower()
            draft.platform = _OS.get(name, "unknown")
            continue
        crash = _MR_CRASH.match(line) if line.startswith("Crash|") else None
        if crash is not None and crashed is None:
            _reason(draft, crash.group("reason"))
            draft.set("fault_address", crash.group("addr").strip().lower() or None)
            crashed = crash.group("thread")
            draft.set("thread_index", parse_int(crashed))
            continue
        frame = _MR_FRAME.match(line) if crashed is not None and line[:1].isdigit() else None
        if frame is None or frame.group("thread") != crashed:
            continue
        off = parse_int(frame.group("off"), 16) if frame.group("off") else None
        function = frame.group("function") or None
        draft.add_frame(Frame(index=parse_int(frame.group("idx")) or 0,
                              module=frame.group("module") or None, symbol=function,
                              offset=off if function else None,
                              pc=hex(off) if off is not None and not function else None,
                              file=frame.group("file") or None,
                              line=parse_int(frame.group("line") or None)))
    if draft.dropped_frames:
        draft.note(f"{draft.dropped_frames} deeper frames not kept")
    if not draft.frames:
        draft.note("no frames of the crashed thread in the text")
