"""Host workload deaths: the exit signal plus whatever backtrace the workload printed.

Backtrace line shapes read (glibc ``backtrace_symbols`` as documented in backtrace(3), and
gdb's ``bt``):

* ``./workload(+0x1234) [0x55d0c0a01234]`` (no symbol: the offset is module-relative);
* ``/usr/lib/x86_64-linux-gnu/libonnxruntime.so.1.21(_ZN11onnxruntime...+0x40) [0x7f...]``
  (mangled symbol, hex offset into it), or the same with the symbol demangled by the
  workload (``lib.so(onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*,
  unsigned long, unsigned long)+0x40) [0x7f...]``), or a bare demangled ``symbol+0x40``;
* ``[0x7f...]`` alone; any of these after a ``#N``/``N:`` index;
* gdb: ``#0  0x00007f... in sym (args) from /lib/libx.so`` / ``... at file.cc:37``;
  ``#1  <signal handler called>``; a frame whose argument list, ``at file:line`` or
  ``from lib`` went on to the next line (gdb wraps long frames; pastes wrap at 80
  columns) is joined first; when the paste holds a ``(gdb) bt`` prompt, the frames after
  the last one are read (the ``#0`` gdb prints when it stops is a repeat).

Frames printed from inside a signal handler start with the handler itself and the libc
signal trampoline (``__restore_rt``, unsymbolized in ``backtrace_symbols`` output as
``libc.so.6(+0x...)``); those are dropped, with a note. Names are demangled with
:mod:`kit.crash._demangle`. glibc malloc and libstdc++ termination messages become the
abort message.
"""

from __future__ import annotations

import re
import sys
from typing import Sequence

from ._demangle import demangle_all
from ._draft import Draft
from ._text import (ELIDED_NOTE, ELISION, basename, decode, matching_open_paren, parse_int, signal_name,
                    signal_number)
from .record import CrashRecord, Frame

__all__ = ["parse_host", "read_host_output", "looks_like_host_backtrace",
           "looks_like_console_abort"]

_TOMBSTONE_FRAME = re.compile(r"^\s*#\d+\s+pc\s")
_INDEX = re.compile(r"^\s*(?:#\s?\d{1,4}[:.]?|\d{1,4}[:.])\s+")
_ADDR_TAIL = re.compile(r"\s*\[(?P<addr>0x[0-9a-fA-F]+)\]\s*$")
_SYM_HEX = re.compile(r"^(?P<sym>.*?)\+(?P<off>0x[0-9a-fA-F]+)$")
_GDB = re.compile(r"^\s*#(?P<idx>\d{1,4})\s+(?:(?P<addr>0x[0-9a-fA-F]+) in )?(?P<body>.+?)"
                  r"(?: from (?P<lib>\S+))?(?: at (?P<file>\S+?):(?P<line>\d+))?\s*$")
_TRAMPOLINE = re.compile(r"^(?:__restore_rt|__kernel_rt_sigreturn|_sigtramp|"
                         r"<signal handler called>)")
_LIBC = re.compile(r"^libc(?:\.so(?:\.\d+)?|-[\d.]+\.so)$")
_ABORT_TEXT = re.compile(
    r"^(?:terminate called after throwing an instance of .*|terminate called without an "
    r"active exception|\s*what\(\):\s+.*|libc\+\+abi: terminating.*|Fatal glibc error: .*|"
    r"(?:free|malloc|realloc|munmap_chunk|corrupted|double free)[^:]*(?:\(\))?: .*|"
    r"double free or corruption.*|corrupted size vs\. prev_size.*|\*\*\* stack smashing .*|"
    r"\*\*\* buffer overflow detected .*|.*Assertion [`'].*' failed\.|"
    r".*malloc: \*\*\* error for object .*|libc\+\+abi(?:\.dylib)?: terminating.*|"
    r".*\*\*\* Terminating app due to uncaught exception .*|"
    # libcxxrt (FreeBSD's C++ runtime): "Terminating due to uncaught exception 0x.. of type
    # T" (libcxxrt/libcxxrt#41); a Rust panic: "thread 'main' (1234) panicked at f.rs:1:2:",
    # its message on the next line since Rust 1.73
    r"Terminating due to uncaught exception .*|thread '[^'\n]*'(?: \(\d+\))? panicked at .*)$")
# "Abort trap" is the BSD shells' word for SIGABRT ("Abort trap: 6" on macOS, "Abort trap
# (core dumped)" on FreeBSD); "IOT instruction" zsh's (SIGIOT is SIGABRT on Linux)
_SIGNAL_WORDS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
                 "Abort trap": "SIGABRT", "IOT instruction": "SIGABRT",
                 "Illegal instruction": "SIGILL", "Floating point exception": "SIGFPE",
                 "Trace/breakpoint trap": "SIGTRAP", "Killed": "SIGKILL"}
# a shell's job notice: zsh "[1]    2527336 abort (core dumped)  cmd", bash "[1]+  Aborted
# (core dumped)  cmd", bash -c "bash: line 1:  1234 Segmentation fault  (core dumped) cmd"
#: The kit's own workload's crash block header (kit/workload/coldstart_workload.cpp,
#: on_fatal_signal): the signal and, from siginfo, the fault address.
_WORKLOAD_CRASH = re.compile(r"^COLDSTART-CRASH signal=(?P<num>\d{1,2})"
                             r"(?: addr=(?P<addr>0x[0-9a-fA-F]{1,16}))?\b")
_SHELL_JOB = re.compile(r"^(?:\[\d+\]\s*[+-]?\s*|\S+: line \d+:\s*)(?P<pid>\d+\s+)?(?P<words>"
                        r"abort(?:ed)?|segmentation fault|bus error|illegal instruction|"
                        r"floating point exception|trace/breakpoint trap|killed)\b", re.I)
_SHELL_WORDS = {"abort": "SIGABRT", "aborted": "SIGABRT", "segmentation fault": "SIGSEGV",
                "bus error": "SIGBUS", "illegal instruction": "SIGILL",
                "floating point exception": "SIGFPE", "trace/breakpoint trap": "SIGTRAP",
                "killed": "SIGKILL"}
# glibc's fatal messages: __libc_message / malloc_printerr / __fortify_fail end in abort()
_GLIBC_FATAL = re.compile(r"^(?:\*\*\* (?:stack smashing|buffer overflow|longjmp causes) "
                          r"|(?:free|malloc|realloc|munmap_chunk|malloc_consolidate|_int_\w+|"
                          r"tcache_\w+)(?:\(\))?: |double free or corruption|corrupted |"
                          r"Fatal glibc error: )")
_SIGNAL_MENTION = re.compile(r"\b(?:signal (?P<num>\d{1,2})\b|(?P<name>SIG(?:SEGV|ABRT|BUS|ILL|"
                             r"FPE|TRAP|KILL|SYS)))")


def _split_object(text: str) -> tuple[str | None, str | None]:
    """``obj(inner)`` -> ``(obj, inner)``; ``(None, text)`` if there is no such shape."""
    start = matching_open_paren(text) if text.endswith(")") else -1
    if start < 0:
        return None, text
    obj = text[:start].strip()
    inner = text[start + 1:-1]
    if (obj and "+" in inner) or inner == "":
        return obj or None, inner
    return None, text


def _frame_from_line(index: int, line: str) -> Frame | None:
    """One backtrace line as a frame, or ``None`` if it is not one."""
    if _TOMBSTONE_FRAME.match(line):
        return None
    gdb = _GDB.match(line) if not _ADDR_TAIL.search(line) else None
    if gdb is not None and (gdb.group("addr") or gdb.group("file") or gdb.group("lib")
                            or " (" in gdb.group("body") or "<signal handler" in line):
        body = gdb.group("body").strip()
        symbol = body.split(" (", 1)[0].strip() if not body.startswith("<") else body
        lib = gdb.group("lib")
        return Frame(index=parse_int(gdb.group("idx")) or 0,
                     module=basename(lib) if lib else None, path=lib,
                     symbol=None if symbol == "??" else symbol, file=gdb.group("file"),
                     line=parse_int(gdb.group("line")))
    text = _INDEX.sub("", line.strip(), count=1)
    addr = _ADDR_TAIL.search(text)
    if addr is None and "+0x" not in text:
        return None
    if addr is not None:
        text = text[:addr.start()].rstrip()
    if not text:
        return Frame(index=index)
    obj, inner = _split_object(text)
    symbol = offset = pc = None
    inner = inner or ""
    sm = _SYM_HEX.match(inner)
    if sm is not None:
        symbol = sm.group("sym") or None
        off = parse_int(sm.group("off"), 16)
        if symbol is None:
            pc = hex(off) if off is not None else None
        else:
            offset = off
    elif inner:
        symbol = inner
    if obj is None and symbol is None and pc is None:
        return None
    if obj is None and addr is None and sm is None:
        return None
    return Frame(index=index, module=basename(obj) if obj else None, path=obj, symbol=symbol,
                 offset=offset, pc=pc)


_CONSOLE_ABORT = re.compile(r"^(?:.*\bterminated by signal SIG[A-Z]+|.*malloc: \*\*\* error for "
                            r"object |\s*libc\+\+abi(?:\.dylib)?: terminating|terminate called |"
                            r".*Assertion [`'].*' failed\.|(?:Segmentation fault|Aborted) \(core "
                            r"dumped\)|Fatal Python error: |\w+: (?:segmentation fault|abort|bus "
                            r"error|illegal instruction|iot instruction)\b|.*\*\*\* Terminating "
                            r"app due to uncaught exception|Terminating due to uncaught exception "
                            r"|Abort trap\b|thread '[^'\n]*'(?: \(\d+\))? panicked at \S|"
                            r"\[\d+\]\s*[+-]?\s*(?:\d+\s+)?(?:abort|segmentation fault|bus error|"
                            r"illegal instruction)\b)", re.M | re.I)
_GDB_PROMPT = re.compile(r"^\(gdb\) (?:bt|backtrace|where|thread apply all bt)\b")
_GDB_TAIL = re.compile(r"^(?:at|from) \S")


def looks_like_console_abort(text: str) -> bool:
    """True when the text holds a console line of an abort (``libc++abi: terminating``,
    ``malloc: *** error for object``, ``terminate called``, a failed assertion, a shell's
    ``terminated by signal SIGABRT`` or ``Aborted (core dumped)``)."""
    return _CONSOLE_ABORT.search(text) is not None


def _join_gdb_lines(lines: Sequence[str]) -> list[str]:
    """gdb frames continued on the next line joined back (see the module docs), and only the
    frames after the last ``(gdb) bt`` prompt kept when there is one."""
    start = 0
    for i, line in enumerate(lines):
        if _GDB_PROMPT.match(line.strip()):
            start = i + 1
    out: list[str] = []
    for line in lines[start:]:
        stripped = line.strip()
        if out and stripped and not stripped.startswith("#") and out[-1].lstrip().startswith(
                "#") and (out[-1].count("(") > out[-1].count(")") or _GDB_TAIL.match(stripped)):
            out[-1] = out[-1].rstrip() + " " + stripped
            continue
        out.append(line)
    return out


def looks_like_host_backtrace(lines: Sequence[str]) -> bool:
    """True when at least two lines read as backtrace_symbols or gdb frames."""
    hits = 0
    for line in lines[:2000]:
        if " pc " in line:
            continue
        if ("[0x" in line or "+0x" in line or line.lstrip().startswith("#")) and \
                _frame_from_line(0, line) is not None:
            hits += 1
            if hits >= 2:
                return True
    return False


def read_host_output(draft: Draft, lines: Sequence[str]) -> None:
    """Read a workload's stderr: its backtrace, abort text and any signal it names.

    Sets ``format`` (``host-backtrace``, ``host-gdb``, ``host-signal``) and ``kind``
    (``native`` for a crash signal or a backtrace).
    """
    frames: list[Frame] = []
    abort_lines: list[str] = []
    in_run = done = elided = False
    all_lines = list(lines)
    lines = _join_gdb_lines(all_lines)
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if in_run:
                done = True
            continue
        if done:
            break
        frame = _frame_from_line(len(frames), stripped) if (
            "[0x" in stripped or "+0x" in stripped or stripped.startswith("#")) else None
        if frame is not None:
            in_run = True
            frames.append(frame)
        elif in_run and ELISION.match(stripped):
            elided = True  # frames the paster left out: the run goes on
        elif in_run:
            done = True
    if elided:
        draft.note(ELIDED_NOTE)
    wrapped = False  # the last abort line ends "...of type X:": its what() is on the next
    for line in all_lines[:4000]:
        if "Thread " in line or "LWP " in line:
            _gdb_thread(draft, line.strip())
    for line in all_lines:
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and _frame_from_line(0, stripped)):
            continue
        if _ABORT_TEXT.match(stripped) and len(abort_lines) < 8:
            abort_lines.append(stripped)
            wrapped = stripped.endswith(":") and stripped.startswith(("libc++abi", "thread '"))
            continue
        if wrapped:
            abort_lines.append(stripped)
            wrapped = False
            continue
        marker = _WORKLOAD_CRASH.match(stripped)
        if marker is not None:
            if draft.get("signal_name") is None:
                draft.set("signal", int(marker.group("num")))
                draft.set("signal_name", signal_name(int(marker.group("num"))))
            if marker.group("addr") and draft.get("fault_address") is None:
                draft.set("fault_address", marker.group("addr"))
            continue
        job = _SHELL_JOB.match(stripped)
        if job is not None and draft.get("signal_name") is None:
            draft.set("signal_name", _SHELL_WORDS[job.group("words").lower()])
            draft.set("pid", parse_int((job.group("pid") or "").strip() or None))
            continue
        if draft.get("signal_name") is None:
            lowered = stripped.lower()
            for words, name in _SIGNAL_WORDS.items():
                if stripped.startswith(words) or stripped.endswith(words) or \
                        f"({words})" in stripped or re.match(
                            rf"^\w+: {words.lower()}\b", lowered):
                    draft.set("signal_name", name)
                    break
            else:
                m = _SIGNAL_MENTION.search(stripped)
                if m is not None and ("signal" in stripped.lower() or "caught" in stripped):
                    draft.set("signal_name", m.group("name")
                              or signal_name(parse_int(m.group("num"))))
    if abort_lines:
        draft.set("abort_message", "\n".join(abort_lines))
        if draft.get("signal_name") is None and any(map(_GLIBC_FATAL.match, abort_lines)):
            draft.set("signal_name", "SIGABRT")
            draft.note("glibc's fatal error message: glibc aborts the process (SIGABRT)")
    mapping, note = demangle_all(f.symbol for f in frames if f.symbol)
    if note:
        draft.note(note)
    frames = [Frame(index=f.index, module=f.module, symbol=mapping.get(f.symbol, f.symbol)
                    if f.symbol else None, offset=f.offset, pc=f.pc, path=f.path,
                    file=f.file, line=f.line) for f in frames]
    frames = _drop_handler_frames(draft, frames)
    if frames:
        gdb = any(ln.lstrip().startswith("#") and " in " in ln for ln in lines[:4000])
        draft.format = "host-gdb" if gdb else "host-backtrace"
    else:
        draft.format = "host-signal"
    for i, frame in enumerate(frames):
        draft.add_frame(Frame(index=i, module=frame.module, symbol=frame.symbol,
                              offset=frame.offset, pc=frame.pc, path=frame.path,
                              file=frame.file, line=frame.line))
    _finish(draft)


_CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGTRAP", "SIGSYS")


# gdb: 'Thread 4 "coldstart-workl" received signal SIGSEGV, Segmentation fault.', then
# '[Switching to Thread 0x7ffff29ff6c0 (LWP 41233)]' or, on a core file,
# '[Current thread is 1 (Thread 0x7fb1737fe600 (LWP 552820))]'
_GDB_SIGNALED = re.compile(r'^Thread \d+ "(?P<name>[^"]*)" received signal (?P<sig>SIG[A-Z]+)\b')
_GDB_LWP = re.compile(r"^\[(?:Switching to|Current thread is \d+ \() ?Thread 0x[0-9a-fA-F]+ "
                      r"\(LWP (?P<lwp>\d+)\)\)?\]")


def _gdb_thread(draft: Draft, line: str) -> None:
    """The signalled thread's name and LWP id (its tid) from gdb's own lines."""
    m = _GDB_SIGNALED.match(line)
    if m is not None:
        draft.set("thread_name", m.group("name") or None)
        draft.set("signal_name", m.group("sig"))
        return
    m = _GDB_LWP.match(line)
    if m is not None:
        draft.set("tid", parse_int(m.group("lwp")))


def _finish(draft: Draft) -> None:
    """Signal number from its name, and the kind: native for crash signals or frames."""
    if draft.get("signal") is None and draft.get("signal_name"):
        draft.set("signal", signal_number(draft.get("signal_name")))
    name = draft.get("signal_name")
    if name in _CRASH_SIGNALS:
        draft.kind = "native"
    elif name == "SIGKILL":
        draft.note("SIGKILL: killed from outside (timeout, OOM killer, user), not a crash "
                   "the process detected")
    elif draft.get("signal") is None and not draft.frames:
        draft.note("no signal and no backtrace: the workload did not crash by a signal")
    elif draft.frames:
        draft.kind = "native"


def _drop_handler_frames(draft: Draft, frames: list[Frame]) -> list[Frame]:
    for i, frame in enumerate(frames[:12]):
        if frame.symbol and _TRAMPOLINE.match(frame.symbol):
            draft.note(f"dropped {i + 1} frames of the signal handler (up to {frame.symbol})")
            return frames[i + 1:]
    # backtrace_symbols inside a handler: handler frames in the executable, then libc's
    # unsymbolized __restore_rt
    for i, frame in enumerate(frames[:6]):
        if i > 0 and frame.symbol is None and frame.module and _LIBC.match(frame.module):
            before = frames[:i]
            if all(f.module == before[0].module and not (f.module or "").startswith("lib")
                   for f in before):
                draft.note(f"dropped {i + 1} frames of the signal handler (up to the libc "
                           "signal trampoline)")
                return frames[i + 1:]
            break
    return frames


def parse_host(signal: int | None, output: str | bytes) -> CrashRecord:
    """A host workload's death as a crash record.

    Args:
        signal: the number of the signal that ended the process (from the exit status:
            ``-returncode`` in :mod:`subprocess`), or ``None`` when it exited normally.
        output: what the workload printed (stderr, or stderr + stdout), text or bytes.

    Returns:
        A :class:`CrashRecord` with ``platform`` ``linux`` (``macos`` on a Mac host),
        ``source`` ``host-signal``, ``format`` ``host-backtrace``, ``host-gdb`` or
        ``host-signal`` (no backtrace). Never raises on bad output.
    """
    try:
        return _parse_host(signal, output)
    except Exception as exc:  # noqa: BLE001 - parsers never raise; the note says what broke
        return CrashRecord(platform="linux", source="host-signal", format="unknown",
                           signal=signal if isinstance(signal, int) else None,
                           notes=(f"internal parser error: {type(exc).__name__}: {exc}",))


def _parse_host(signal: int | None, output: str | bytes) -> CrashRecord:
    text, notes = decode(output)
    draft = Draft(platform="macos" if sys.platform == "darwin" else "linux",
                  source="host-signal", format="host-signal", notes=notes)
    if isinstance(signal, int) and not isinstance(signal, bool) and 0 < signal < 128:
        draft.set("signal", signal)
        draft.set("signal_name", signal_name(signal))
    elif signal is not None:
        draft.note(f"ignored exit signal {signal!r}: not a signal number")
    read_host_output(draft, text.split("\n"))
    return draft.build()


def console_abort_message(lines: Sequence[str]) -> str | None:
    """The abort message in console lines printed before a debugger's or a report's own
    text (``libc++abi: terminating due to uncaught exception of type X: what``, ``malloc:
    *** error for object ...``, a failed assertion), or ``None``. A ``libc++abi`` line
    that ends with ``:`` takes the next line (the exception's ``what()``)."""
    out: list[str] = []
    wrapped = False
    for line in lines[:4000]:
        stripped = line.strip()
        if not stripped:
            continue
        if _ABORT_TEXT.match(stripped) and len(out) < 8:
            out.append(stripped)
            wrapped = stripped.endswith(":") and stripped.startswith(("libc++abi", "thread '"))
        elif wrapped:
            out.append(stripped)
            wrapped = False
    return "\n".join(out) or None
