"""Debugger output pasted as a crash report: lldb, Xcode's debug navigator, an IDE's frames.

Shapes (lldb's own ``thread backtrace`` format, https://lldb.llvm.org/use/map.html; Xcode
and Android Studio copy what their views show):

* lldb: ``* thread #N, queue = '...', stop reason = EXC_BAD_ACCESS (code=1, address=0x..)``
  (or ``stop reason = signal SIGSEGV: invalid address (fault address: 0x5)`` off Apple),
  (the ``* `` marks the selected thread; ``thread backtrace all`` and older lldb print the
  stopped thread's line without it)
  then ``frame #N: 0xADDR module`symbol(args) + off at file:line:col``; a frame may have no
  symbol (``frame #0: 0x96879d38 libflutter.so``) or no module (``frame #10: 0x9a31520d``).
  Disassembly and ``(lldb)`` prompts between blocks are skipped; when the stop is printed
  twice (stop, then ``bt``), the block with the most frames is read;
* Xcode's debug navigator ("Copy" on a thread): ``Thread 7 Queue : <queue> (serial)``, then
  ``#0<TAB>0x0000000104a1c2f0 in symbol at /path/file.cc:42`` or ``in symbol ()``; the
  editor's banner ``Thread 7: EXC_BAD_ACCESS (code=1, address=0x10)`` is often pasted too;
* an IDE's frames pane (Android Studio, CLion): one frame a line, ``symbol 0xADDR`` or
  ``symbol file.h:17``.

Source paths are moved out of symbols into ``file``/``line``.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import matching_open_paren, parse_int, signal_number
from .host import console_abort_message
from .record import Frame

__all__ = ["read_lldb", "read_xcode_threads", "looks_like_xcode_threads", "read_ide_frames",
           "looks_like_ide_frames"]

# "* " marks lldb's selected thread; without it (``thread backtrace all``, older lldb) a
# thread line that names a stop reason is a stopped thread too
_LLDB_STOP = re.compile(r"^\s*(?P<star>\*\s*)?thread #(?P<n>\d+)(?P<attrs>.*?), stop reason = "
                        r"(?P<reason>.*)$")
_LLDB_FRAME = re.compile(r"^\s*\*?\s*frame #(?P<idx>\d+): (?P<addr>0x[0-9a-fA-F]+)(?P<rest>.*)$")
# lldb's own lines when it runs the program: "Process 67904 stopped", "Target 0: (yolo) stopped."
_LLDB_PROCESS = re.compile(r"^\s*Process (?P<pid>\d+) (?:stopped|exited|launched)\b")
_LLDB_TARGET = re.compile(r"^\s*Target \d+: \((?P<name>[^()]+)\) stopped\.")
_SYM_TAIL = re.compile(r"^(?P<sym>.*?)(?: \+ (?P<off>\d+))?"
                       r"(?: at (?P<file>[^\s:]+):(?P<line>\d+)(?::\d+)?)?\s*$")
_EXC_SIGNALS = {"EXC_BAD_ACCESS": "SIGSEGV", "EXC_CRASH": "SIGABRT",
                "EXC_BREAKPOINT": "SIGTRAP", "EXC_BAD_INSTRUCTION": "SIGILL"}
_ANDROID_MARKS = re.compile(r"\blibandroid_runtime\.so|\blibart\.so|\.oat`|android::|/system/lib|"
                            r"/data/app/|/apex/")
_APPLE_MARKS = re.compile(r"queue = 'com\.apple\.|\.dylib`|libsystem_|\.framework/|EXC_[A-Z_]+")


def _stop(draft: Draft, match: re.Match[str]) -> None:
    draft.set("thread_index", parse_int(match.group("n")))
    attrs = match.group("attrs")
    name = re.search(r"name = '([^']*)'", attrs) or re.search(r"queue = '([^']*)'", attrs)
    draft.set("thread_name", name.group(1) if name else None)
    reason = match.group("reason").strip()
    exc = re.match(r"(EXC_\w+)(?: \((.*)\))?", reason)
    if exc is not None:
        draft.set("exception", exc.group(1))
        detail = exc.group(2) or ""
        code = re.search(r"code=(\w+)", detail)
        addr = re.search(r"address=(0x[0-9a-fA-F]+)", detail)
        draft.set("code", code.group(1) if code else None)
        draft.set("fault_address", addr.group(1).lower() if addr else None)
        draft.set("signal_name", _EXC_SIGNALS.get(exc.group(1)))
        return
    sig = re.match(r"signal (SIG\w+)(?::\s*(.*))?", reason)
    if sig is not None:
        draft.set("signal_name", sig.group(1))
        addr = re.search(r"address:? (0x[0-9a-fA-F]+)", reason)
        draft.set("fault_address", addr.group(1).lower() if addr else None)
        draft.set("code", (sig.group(2) or "").split(" (")[0] or None)


def _without_argument_values(symbol: str) -> str:
    """``f(self=0x15d58530, stop=NO)`` -> ``f``: lldb prints argument *values* of frames with
    debug info; they differ in every report and are no part of the function's name."""
    if symbol.endswith(")"):
        start = matching_open_paren(symbol)
        if start > 0 and "=" in symbol[start:]:
            return symbol[:start].rstrip()
    return symbol


def _lldb_frame(m: re.Match[str]) -> Frame:
    index = parse_int(m.group("idx")) or 0
    rest = m.group("rest").strip()
    if not rest:
        return Frame(index=index, pc=m.group("addr").lower())
    module, tick, symbol = rest.partition("`")
    if not tick:
        return Frame(index=index, module=rest.split()[0], pc=m.group("addr").lower())
    tail = _SYM_TAIL.match(symbol)
    assert tail is not None  # every group is optional
    return Frame(index=index, module=module.strip() or None,
                 symbol=_without_argument_values(tail.group("sym").strip()) or None, offset=parse_int(tail.group("off")),
                 file=tail.group("file"), line=parse_int(tail.group("line")))


def read_lldb(draft: Draft, lines: Sequence[str]) -> None:
    """Read an lldb ``thread backtrace`` of the stopped thread (see the module docs)."""
    draft.format = "lldb"
    draft.kind = "native"
    blocks: list[tuple[re.Match[str] | None, list[Frame]]] = []
    loose: list[Frame] = []
    for line in lines:
        m = _LLDB_STOP.match(line)
        if m is not None:
            blocks.append((m, []))
            continue
        f = _LLDB_FRAME.match(line)
        if f is None:
            if line.strip().startswith("thread #") and blocks and blocks[-1][1]:
                blocks.append((None, []))  # another thread's backtrace: not the stopped one
            continue
        (blocks[-1][1] if blocks else loose).append(_lldb_frame(f))
    stopped = [(m, frames) for m, frames in blocks if m is not None and m.group("star")] or \
        [(m, frames) for m, frames in blocks if m is not None]
    if stopped:
        stop, frames = max(stopped, key=lambda b: len(b[1]))
        _stop(draft, stop)
        frames = frames or loose
    else:
        draft.note("no '* thread #N ... stop reason' line: frames only")
        frames = loose
    for frame in frames:
        draft.add_frame(frame)
    for line in lines:
        process = _LLDB_PROCESS.match(line)
        if process is not None:
            draft.set("pid", parse_int(process.group("pid")))
        target = _LLDB_TARGET.match(line)
        if target is not None:
            draft.set("process", target.group("name"))
    draft.set("abort_message", console_abort_message(lines))
    text = "\n".join(lines)
    if draft.get("signal_name") and not draft.get("exception") and _ANDROID_MARKS.search(text):
        draft.platform = "android"
    elif draft.get("signal_name") and not draft.get("exception") and \
            not _APPLE_MARKS.search(text):
        draft.platform = "linux"
    else:
        draft.note("lldb output does not say which Apple platform; assumed ios")
    draft.set("signal", signal_number(draft.get("signal_name"),
                                      darwin=draft.platform in ("ios", "macos")))


_XCODE_THREAD = re.compile(r"^Thread (?P<n>\d+)(?: Queue\s*:\s*(?P<queue>.*?))?\s*$")
_XCODE_BANNER = re.compile(r"^Thread (?P<n>\d+): (?P<reason>(?:EXC_\w+|signal SIG\w+).*)$")
_XCODE_FRAME = re.compile(r"^\s*#(?P<idx>\d+)\s+(?P<addr>0x[0-9a-fA-F]+) in (?P<sym>.+?)"
                          r"(?: at (?P<file>\S+?):(?P<line>\d+)(?::\d+)?)?\s*$")

_XCODE_QUEUE = re.compile(r"^Thread \d+ Queue\s*:", re.M)
_XCODE_TAB_FRAME = re.compile(r"^#\d+\t0x[0-9a-fA-F]+ in ", re.M)


def looks_like_xcode_threads(text: str) -> bool:
    """True for Xcode debug-navigator text: a ``Thread N Queue :`` header, two
    ``#N<TAB>0x... in`` frame lines, or a first line that is the editor's banner
    (``Thread 1: EXC_BAD_ACCESS (code=1, address=0x0)``, ``Thread 1: signal SIGABRT``)."""
    if "Queue" in text and _XCODE_QUEUE.search(text):
        return True
    first = text.lstrip().split("\n", 1)[0].strip()
    if _XCODE_BANNER.match(first) and ("(code=" in first or first.count(" ") < 4):
        return True  # the editor's red banner alone: "Thread 1: EXC_BAD_ACCESS (code=1, ...)"
    return "\t0x" in text and len(_XCODE_TAB_FRAME.findall(text)) >= 2


def read_xcode_threads(draft: Draft, lines: Sequence[str]) -> None:
    """Read the first thread of an Xcode debug-navigator copy (or the banner's thread)."""
    draft.kind = "native"
    banner = next((m for m in (_XCODE_BANNER.match(ln.strip()) for ln in lines) if m), None)
    wanted = parse_int(banner.group("n")) if banner else None
    if banner is not None:
        stop = re.match(r"(?P<n>)(?P<attrs>)(?P<reason>.*)", banner.group("reason"))
        assert stop is not None
        _stop(draft, stop)
        draft.set("thread_index", wanted)
    current: int | None = None
    taken: int | None = None
    for line in lines:
        head = _XCODE_THREAD.match(line.strip())
        if head is not None:
            current = parse_int(head.group("n"))
            if taken is None and (wanted is None or current == wanted):
                taken = current
                draft.set("thread_index", current)
                queue = (head.group("queue") or "").replace("(serial)", "")
                draft.set("thread_name", queue.replace("(concurrent)", "").strip() or None)
            continue
        f = _XCODE_FRAME.match(line)
        if f is None or (taken is not None and current != taken):
            continue
        symbol = f.group("sym").strip()
        if symbol.endswith(" ()"):
            symbol = symbol[:-3]
        draft.add_frame(Frame(index=parse_int(f.group("idx")) or 0, symbol=symbol or None,
                              pc=f.group("addr").lower(), file=f.group("file"),
                              line=parse_int(f.group("line"))))
    if banner is None:
        draft.note("no stop reason in the copy (Xcode's banner 'Thread N: EXC_...' not pasted)")
    draft.note("Xcode debug navigator does not say which Apple platform; assumed ios")
    draft.set("signal", signal_number(draft.get("signal_name"), darwin=True))


# a symbol never starts with a digit: "0  libfoo.so  foo  0x54" is a numbered frame line of
# another layout (a table's row), not a frames pane's "symbol 0xADDR"
# the frame's last word, its address or its source location
_IDE_TAIL = re.compile(r"(?P<addr>0x[0-9a-fA-F]{6,16})|(?P<file>[\w.+-]+\."
                       r"(?:h|hh|hpp|c|cc|cpp|cxx|m|mm|swift|kt|java|rs|inl|inc)):(?P<line>\d+)")
_SYMBOL_START = re.compile(r"[^\s\d]")


def _ide_frame(line: str) -> tuple[str, re.Match[str]] | None:
    """``(symbol, the match of its last word)`` for ``symbol 0xADDR`` or ``symbol
    file:line``, else ``None``. Split at the last whitespace rather than matched by one
    pattern: a lazy symbol before the spaces made a line with a long run of spaces take
    quadratic time."""
    parts = line.rsplit(None, 1)
    if len(parts) != 2:
        return None
    tail = _IDE_TAIL.fullmatch(parts[1])
    symbol = parts[0].strip()
    if tail is None or not _SYMBOL_START.match(symbol):
        return None
    return symbol, tail
_BIONIC = re.compile(r"^(?:__assert2|__android_log_\w+|art::)")


def looks_like_ide_frames(lines: Sequence[str]) -> bool:
    """True when at least 3 lines, and 60 % of the non-empty ones, are ``symbol 0xADDR``
    or ``symbol file:line`` frames."""
    body = [ln.strip() for ln in lines if ln.strip()][:400]
    hits = sum(1 for ln in body if _ide_frame(ln))
    return hits >= 3 and hits * 10 >= len(body) * 6


def read_ide_frames(draft: Draft, lines: Sequence[str]) -> None:
    """Read an IDE's frames pane copy: kind ``native``, no signal (the pane shows none)."""
    draft.kind = "native"
    for line in lines:
        found = _ide_frame(line)
        if found is None:
            continue
        symbol, m = found
        draft.add_frame(Frame(index=len(draft.frames), symbol=symbol,
                              pc=m.group("addr").lower() if m.group("addr") else None,
                              file=m.group("file"), line=parse_int(m.group("line"))))
    if any(f.symbol and _BIONIC.match(f.symbol.lstrip(":")) for f in draft.frames):
        draft.platform = "android"
    draft.note("an IDE's frames pane: no signal and no modules in the copy")
