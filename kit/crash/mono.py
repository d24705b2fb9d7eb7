"""Mono / Xamarin / .NET (Mono runtime) native crash reports.

Layout (mono's ``mono_handle_native_crash`` / ``mono_dump_native_crash_info``,
``mono/mini/mini-exceptions.c`` and ``mini-posix.c``; Xamarin.Android and .NET for Android
print the same lines to logcat under ``mono-rt``)::

    =================================================================
    	Native Crash Reporting
    =================================================================
    Got a SIGSEGV while executing native code. This usually indicates
    a fatal error in the mono runtime or one of the native libraries
    used by your application.
    =================================================================
    	Native stacktrace:
    =================================================================
    	0x10ba65dc5 - /Library/Frameworks/Mono.framework/.../mono : mono_handle_native_crash
    	0x7fff68e5bb5d - /usr/lib/system/libsystem_platform.dylib : _sigtramp
    	0x7fb9e3ca5c19 - /usr/lib/libmonosgen-2.0.so.1 :
    	0x124d43b4e - Unknown
    =================================================================
    	Managed Stacktrace:
    =================================================================
    	  at <unknown> <0xffffffff>
    	  at (wrapper managed-to-native) Foo.Native:Run (intptr) <0x00057>
    	  at Foo.Bar:Baz () <0x0012b>

Older Mono prints ``Native stacktrace:`` with glibc ``backtrace_symbols`` lines
(``/usr/bin/mono() [0x4b73d8]``) and ``Stacktrace:`` for the managed frames. The native
stack is the crash's; its top frames are Mono's own crash handler up to the signal
trampoline, which are dropped (noted). Without native frames (Android: ``No native Android
stacktrace (see debuggerd output)``) the managed frames are the record's frames. An
``* Assertion at file:line, condition `...' not met`` line is the runtime's abort message.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from ._draft import Draft
from ._text import basename, signal_number, split_logcat
from .record import Frame
from .tombstone import demangle_frames

__all__ = ["looks_like_mono", "read_mono"]

_GOT = re.compile(r"Got a (?P<sig>SIG\w+|SEGV|ABRT|BUS|ILL|FPE|TRAP|SYS) while executing "
                  r"native code")
# "0x10ba65dc5 - /path/mono : symbol" (no symbol: "... :"), "0x124d43b4e - Unknown"; an
# Apple report's Binary Images line ("0x1026 -  0x1029 name arm64 <uuid> /path") is not one
_NATIVE = re.compile(r"^\s*(?P<addr>0x[0-9a-fA-F]+) - (?P<path>/[^:]*?|Unknown|[\w.-]+)"
                     r"(?: : (?P<sym>.*?))?\s*:?\s*$")
_OLD_NATIVE = re.compile(r"^\s*(?P<path>/[^\s(]+)\((?P<sym>[^)+]*)(?:\+(?P<off>0x[0-9a-fA-F]+))?\)"
                         r"\s*\[(?P<addr>0x[0-9a-fA-F]+)\]\s*$")
_MANAGED = re.compile(r"^\s*at (?:\(wrapper [\w-]+\) )?(?P<sym>[^<\s(][^(<]*?)\s*"
                      r"(?:\((?P<args>[^)]*)\))?\s*(?:\[0x[0-9a-fA-F]+\]\s*)?(?:<0x[0-9a-fA-F]+>)?"
                      r"(?: in (?P<file>.+?):(?P<line>\d+))?\s*$")
_ASSERT = re.compile(r"^\s*\*\s*(?P<msg>Assertion(?: at | failed)(?:.*\S)?|Assertion: (?:.*\S)?)"
                     r"\s*$")
_HANDLER = re.compile(r"^(?:mono_handle_native_crash|mono_dump_native_crash_info|"
                      r"mono_chain_signal|mono_sigsegv_signal_handler\w*|\w*signal_handler\w*|"
                      r"mono_crash_\w+|mono_summarize_\w+|mono_threads_summarize\w*|"
                      r"_sigtramp|__restore_rt|__kernel_rt_sigreturn)$")
_TRAMPOLINE = re.compile(r"^(?:_sigtramp|__restore_rt|__kernel_rt_sigreturn)$")
_SECTION = re.compile(r"^\s*(?P<name>Native stacktrace|Managed Stacktrace|Stacktrace|"
                      r"Telemetry Dumper|Basic Fault Add?dress Reporting|External Debugger Dump|"
                      r"Native Crash Reporting)\s*:?\s*$")


def looks_like_mono(text: str) -> str | None:
    """Why ``text`` is a Mono native crash report (or a piece of it), or ``None``."""
    if " while executing native code" in text and _GOT.search(text):
        return "'Got a SIGxxx while executing native code': Mono's native crash report"
    if "Native stacktrace:" in text and ("Managed Stacktrace:" in text or " - /" in text
                                         or "mono" in text):
        return "Mono's 'Native stacktrace:' section"
    native = 0
    for line in text.split("\n", 300)[:300] if " - " in text and "0x" in text else ():
        if " - " in line and line.lstrip().startswith("0x") and _NATIVE.match(line):
            native += 1
            if native >= 3:
                return "Mono native frame lines ('0xADDR - /path : symbol')"
    return None


def _lines(lines: Sequence[str]) -> list[str]:
    """The message of every line: Xamarin.Android's logcat prefixes (``E/mono-rt``) off."""
    style, loglines = split_logcat(lines)
    return [ln.msg for ln in loglines] if style != "raw" else list(lines)


def read_mono(draft: Draft, lines: Sequence[str]) -> None:
    """Read a Mono native crash report into ``draft``. Never raises."""
    text = "\n".join(lines)
    if "mono-rt" in text or "/data/app/" in text or "Android stacktrace" in text \
            or "libmonodroid" in text:
        draft.platform = "android"
    elif ".dylib" in text or "/Library/Frameworks/" in text:
        draft.platform = "macos"
    native: list[Frame] = []
    managed: list[Frame] = []
    section = None
    for line in _lines(lines):
        m = _GOT.search(line)
        if m is not None:
            name = m.group("sig")
            name = name if name.startswith("SIG") else "SIG" + name
            draft.kind = "native"
            draft.set("signal_name", name)
            draft.set("signal", signal_number(name, darwin=draft.platform == "macos"))
            continue
        m = _SECTION.match(line)
        if m is not None:
            section = m.group("name")
            continue
        if line.strip().startswith("====="):
            continue
        m = _ASSERT.match(line)
        if m is not None:
            draft.set("abort_message", m.group("msg"))
            continue
        if section == "Native stacktrace" or (section is None and " - " in line):
            frame = _native_frame(len(native), line)
            if frame is not None:
                native.append(frame)
                continue
        if section in ("Managed Stacktrace", "Stacktrace") or line.lstrip().startswith("at "):
            frame = _managed_frame(len(managed), line)
            if frame is not None:
                managed.append(frame)
    native = _drop_handler(draft, native)
    if native:
        frames = native
        if managed:
            draft.note(f"{len(managed)} managed frames (Managed Stacktrace) not kept: the "
                       "native stack is the crash's")
    else:
        frames = managed
        if managed:
            draft.note("no native stack: the managed frames (Managed Stacktrace)")
    for i, frame in enumerate(frames):
        draft.add_frame(dataclasses.replace(frame, index=i))
    demangle_frames(draft)
    if draft.kind == "unknown" and draft.frames:
        draft.kind = "native"
        draft.note("Mono frames without the 'Got a SIG...' line: no signal")
    if draft.get("abort_message") and draft.get("signal") is None:
        draft.kind = "native"


def _native_frame(index: int, line: str) -> Frame | None:
    m = _NATIVE.match(line)
    if m is not None:
        path = m.group("path").strip()
        sym = (m.group("sym") or "").strip() or None
        if path == "Unknown":
            return Frame(index=index, pc=m.group("addr").lower())
        return Frame(index=index, module=basename(path), symbol=sym,
                     pc=m.group("addr").lower(), path=path if "/" in path else None)
    m = _OLD_NATIVE.match(line)
    if m is not None:
        sym = m.group("sym") or None
        off = m.group("off")
        return Frame(index=index, module=basename(m.group("path")), symbol=sym,
                     offset=int(off, 16) if off and sym else None,
                     pc=(off if off and not sym else m.group("addr")).lower(),
                     path=m.group("path"))
    return None


def _managed_frame(index: int, line: str) -> Frame | None:
    m = _MANAGED.match(line)
    if m is None or m.group("sym").startswith("<unknown>"):
        return None
    sym = m.group("sym").strip().replace(":", ".")
    line_no = m.group("line")
    return Frame(index=index, symbol=sym, file=m.group("file"),
                 line=int(line_no) if line_no else None)


def _drop_handler(draft: Draft, frames: list[Frame]) -> list[Frame]:
    """Frames below Mono's crash handler: up to the signal trampoline, or past the last
    handler frame at the top (and libc's unnamed trampoline right after it)."""
    for i, frame in enumerate(frames[:16]):
        if frame.symbol and _TRAMPOLINE.match(frame.symbol):
            draft.note(f"dropped {i + 1} frames of Mono's crash handler (up to {frame.symbol})")
            return frames[i + 1:]
    last = -1
    for i, frame in enumerate(frames[:12]):
        if frame.symbol and _HANDLER.match(frame.symbol):
            last = i
    if last < 0:
        return frames
    nxt = frames[last + 1] if last + 1 < len(frames) else None
    if nxt is not None and nxt.symbol is None and re.match(r"^lib(?:c|pthread)\b",
                                                           nxt.module or ""):
        last += 1
    draft.note(f"dropped {last + 1} frames of Mono's crash handler")
    return frames[last + 1:]
