"""Python's ``faulthandler`` output (CPython ``Modules/faulthandler.c``, ``Python/traceback.c``
``_Py_DumpTracebackThreads``), as a test run or a service log prints it::

    test/test_onnx.py .....s........Fatal Python error: Segmentation fault

    Thread 0x00007f9fb1cff700 (most recent call first):
      <no Python frame>

    Current thread 0x00007fa2972464c0 (most recent call first):
      File "/home/u/env.py", line 88 in _reward_feet_air_time
      File "/home/u/train.py", line 498 in compute_reward

    Extension modules: numpy.core._multiarray_umath, ... (total: 52)

``Fatal Python error:`` can stand anywhere on its line (pytest's progress dots, a test id,
a log prefix before it); every line may carry a prefix (journald's ``docker[N]:``, a CI
clock), so the blocks are found inside the lines. Python 2's form says ``Thread 0x...:``
and ``Current thread 0x...:``. The error names the signal (``Segmentation fault``,
``Aborted``, ``Bus error``, ``Floating point exception``, ``Illegal instruction``); any other
text is ``Py_FatalError``'s message, an abort (the abort message). The current thread's
id is ``tid`` (what ``threading.get_ident()`` gives: the ``pthread_t`` on Linux) and its
Python frames are the frames (``symbol`` the function, ``file``/``line`` where); Python
3.13+'s C stack (``Current thread's C stack trace``, ``Binary file "/lib/libc.so.6", at
fn+0x1c [0x7f..]``) goes before them, innermost first. The other threads are summarised in a
note.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import basename, parse_int, signal_number
from .record import Frame

__all__ = ["looks_like_faulthandler", "read_faulthandler"]

_FATAL = re.compile(r"Fatal Python error: (?P<what>(?:.*\S)?)\s*$")
_SIGNALS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
            "Floating point exception": "SIGFPE", "Illegal instruction": "SIGILL"}
_THREAD = re.compile(r"(?:^|\s|:)(?P<current>Current thread|Thread) (?P<id>0x[0-9a-fA-F]+)"
                     r"(?: \[(?P<name>[^\]]*)\])?(?: \(most recent call first\))?:\s*$")
_PY_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?: in (?P<fn>\S+))?\s*$')
_C_STACK = re.compile(r"Current thread's C stack trace|C stack trace \(most recent call first\)")
_C_FRAME = re.compile(r'Binary file "(?P<path>[^"]+)"(?:, at (?P<sym>[^+\s\[]+)?'
                      r'(?:\+(?P<off>0x[0-9a-fA-F]+))?)?\s*(?:\[(?P<pc>0x[0-9a-fA-F]+)\])?\s*$')
_NO_FRAME = "<no Python frame>"


def looks_like_faulthandler(text: str) -> str | None:
    """Why ``text`` is faulthandler output, or ``None``: ``Fatal Python error:`` anywhere on
    a line with a thread block after it (or the thread block alone)."""
    if "Fatal Python error: " in text:
        return "'Fatal Python error:' (Python's faulthandler)"
    if "(most recent call first):" in text and "thread 0x" in text.lower() and 'File "' in text:
        return "faulthandler's 'Current thread 0x... (most recent call first):' block"
    return None


def read_faulthandler(draft: Draft, lines: Sequence[str]) -> None:
    """Read faulthandler output into ``draft``. Never raises."""
    text = "\n".join(lines[:200])
    if "/Users/" in text or "/Library/Frameworks/Python" in text or "/opt/homebrew/" in text:
        draft.platform = "macos"
    elif re.search(r'File "(?:/home/|/usr/|/opt/|/root/|/var/|/tmp/)', text):
        draft.platform = "linux"
    current: list[Frame] = []
    native: list[Frame] = []
    others: list[str] = []
    block: list[Frame] | None = None
    block_id = ""
    in_c = fatal = False
    for line in lines:
        m = _FATAL.search(line)
        if m is not None and not fatal:
            fatal = True
            what = m.group("what")
            draft.kind = "native"
            name = _SIGNALS.get(what)
            if name is not None:
                draft.set("exception", f"Fatal Python error: {what}")
                draft.set("signal_name", name)
                draft.set("signal", signal_number(name, darwin=draft.platform == "macos"))
            elif what:
                draft.set("abort_message", what)
            continue
        if _C_STACK.search(line):
            in_c, block = True, None
            continue
        m = _THREAD.search(line)
        if m is not None:
            in_c = False
            if block is not None and block is not current:
                others.append(_summary(block_id, block))
            block_id = m.group("id")
            if m.group("current") == "Current thread":
                block = current
                draft.set("tid", parse_int(block_id, 16))
                draft.set("thread_name", m.group("name"))
            else:
                block = []
            continue
        if in_c:
            cm = _C_FRAME.search(line)
            if cm is not None:
                off = cm.group("off")
                native.append(Frame(index=len(native), module=basename(cm.group("path")),
                                    path=cm.group("path"), symbol=cm.group("sym") or None,
                                    offset=int(off, 16) if off and cm.group("sym") else None,
                                    pc=(cm.group("pc") or "").lower() or None))
            elif line.strip() and "<truncated" not in line:
                in_c = False
            continue
        if block is None:
            continue
        fm = _PY_FRAME.search(line)
        if fm is not None:
            path = fm.group("file")
            block.append(Frame(index=len(block), module=basename(path), symbol=fm.group("fn"),
                               file=path, line=parse_int(fm.group("line"))))
        elif _NO_FRAME not in line and line.strip():
            if block is not current:
                others.append(_summary(block_id, block))
            block = None
    if block is not None and block is not current:
        others.append(_summary(block_id, block))
    for i, frame in enumerate(native + current):
        draft.add_frame(Frame(index=i, module=frame.module, symbol=frame.symbol,
                              offset=frame.offset, pc=frame.pc, path=frame.path,
                              file=frame.file, line=frame.line))
    if draft.kind == "unknown" and draft.frames:
        draft.kind = "native"
        draft.note("faulthandler's thread block without its 'Fatal Python error:' line")
    if draft.get("tid") is None:
        draft.note("no 'Current thread' block: the crashing thread's Python frames are unknown")
    if others:
        shown = "; ".join(others[:8]) + ("; ..." if len(others) > 8 else "")
        draft.note(f"{len(others)} other thread{'s' if len(others) > 1 else ''}: {shown}")


def _summary(thread_id: str, frames: list[Frame]) -> str:
    if not frames:
        return f"{thread_id} (no Python frame)"
    return f"{thread_id} ({len(frames)} frames, top {frames[0].symbol})"
