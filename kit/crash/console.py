"""Crash-console exports: what Crashlytics, Firebase, Play Console, Bugsnag, App Center and
Bugly show, as people copy them into issues.

They drop most of the platform's report and put a one-line **headline** on top:

* native crashes: Crashlytics ``Crashed: Thread: SIGSEGV  0x0000000000000000`` (the thread
  name, the signal, the fault address), or ``<cause>: SIGSEGV 0x0000000000000008``, or
  Bugly ``SIGSEGV(SEGV_MAPERR)`` in front of the frames; the frames follow as tombstone
  ``#00 pc 0x12732c libfoo.so`` lines, or Crashlytics ``at (Missing)()`` when unsymbolized.
  Play Console and Crashlytics native copies often have no signal at all
  (:mod:`kit.crash.tombstone` reads those);
* Java/JS deaths: Crashlytics ``Fatal Exception: <type>: <message>``, Play Console
  ``Exception <type>:``, App Center ``### Reason ###`` / ``### Stacktrace ###`` sections,
  and React Native's own terminal (Metro/Expo) `` ERROR  TypeError: ..., js engine:
  hermes`` with JS frames below;
* ANRs: ``ANR:  Input dispatching timed out (...)``, ``ANR Input dispatching ...``,
  Bugsnag's ``**ANR** in **MainActivity**`` followed by the reason, then the main
  thread's frames in any Java frame shape (:mod:`kit.crash._java`);
* a console's frames table without its address column, as its rows read once the table's
  markup is gone (:mod:`kit.crash._paste`): ``0  libhermes.so  facebook::hermes::...()``,
  an index, the library, the symbol (facebook/hermes#840 in the corpus): format
  ``frame-rows``, no signal and no addresses in the copy.

The headline is looked for in the first :data:`HEADLINE_LINES` non-empty lines only.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._java import JAVA_FRAME_HINT, java_frame, js_frames, js_stack
from ._text import signal_number
from .record import Frame
from .tombstone import parse_frame_line

__all__ = ["HEADLINE_LINES", "find_bare_exception", "read_headline_signal", "find_anr_summary",
           "read_anr_summary", "find_console_exception", "console_exception_block",
           "read_js_terminal", "read_headline_frames", "looks_like_js_headline", "ANR_REASON",
           "looks_like_frame_rows", "read_frame_rows"]

#: Non-empty lines at the top of a paste where a console headline may stand.
HEADLINE_LINES = 8

_SIG = r"SIG(?:SEGV|BUS|ILL|FPE|ABRT|TRAP|SYS|KILL)"
_CRASHLYTICS = re.compile(r"^\W*Crashed:\s*(?P<thread>[^:]{1,80}?)\s*:?\s+(?P<sig>" + _SIG
                          + r")(?:\s+(?P<addr>0x[0-9a-fA-F]+))?\s*\W*$")
_CAUSE_SIG = re.compile(r"^\W*(?P<cause>[^:]{1,160}?)\s*:\s*(?P<sig>" + _SIG
                        + r")\s+(?P<addr>0x[0-9a-fA-F]+)\s*\W*$")
_BUGLY = re.compile(r"(?P<sig>" + _SIG + r")\((?P<code>[A-Z][A-Z_]+)\)")
_SIG_COLON = re.compile(r"^\W*(?P<sig>" + _SIG + r"): (?P<cause>\w[^:]{0,80})\W*$")

#: Reasons Android's ActivityManager gives for an ANR (AnrHelper / ProcessErrorStateRecord).
ANR_REASON = re.compile(r"Input dispatching timed out|keyDispatchingTimedOut|Broadcast of Intent|"
                        r"[Ee]xecuting service|ContentProvider not responding|"
                        r"Application Not Responding|did not then call Service\.startForeground")
_ANR_WORD = re.compile(r"^\W{0,4}ANR\b")
_FATAL = re.compile(r"^\s*Fatal Exception: (?P<rest>\S.*)$")
_PLAY_EXC = re.compile(r"^\s*Exception (?P<rest>[A-Za-z_$][\w$]*(?:\.[\w$]+)+:?.*)$")
_JS_ERROR = (r"(?:(?:[A-Z]\w*)?Error|Invariant Violation|Unhandled JS Exception|"
             r"Unhandled promise rejection)\b")
_METRO = re.compile(r"^\s*(?:ERROR|FATAL)\s+\[?(?P<rest>" + _JS_ERROR + r".*?)\]?\s*$")
_JS_HEAD = re.compile(r"^\s*\[?(?P<rest>" + _JS_ERROR + r"[^\n]*)$")


def _top(lines: Sequence[str]) -> list[tuple[int, str]]:
    out = []
    for i, line in enumerate(lines):
        if line and not line.isspace():
            out.append((i, line))
            if len(out) >= HEADLINE_LINES:
                break
    return out


def read_headline_signal(draft: Draft, lines: Sequence[str]) -> int | None:
    """Read a console's signal headline into ``draft`` (signal, code, fault address, cause,
    thread name); returns its line index, or ``None`` when the top lines hold none."""
    for i, line in _top(lines):
        if "SIG" not in line:
            continue
        m = _CRASHLYTICS.match(line) or _CAUSE_SIG.match(line) or _SIG_COLON.match(line)
        bugly = _BUGLY.search(line) if m is None else None
        if m is None and bugly is None:
            continue
        found = m or bugly
        assert found is not None
        sig = found.group("sig")
        draft.set("signal_name", sig)
        draft.set("signal", signal_number(sig))
        groups = found.groupdict()
        if groups.get("addr"):
            draft.set("fault_address", groups["addr"].lower())
        draft.set("code", groups.get("code"))
        thread = (groups.get("thread") or "").strip()
        if thread and thread != "Thread":
            draft.set("thread_name", thread)
        cause = (groups.get("cause") or "").strip()
        if cause and cause not in ("Fatal Exception", "Crashed"):
            draft.set("cause", cause)
        draft.note("signal read from the crash console's headline")
        return i
    return None


def read_headline_frames(draft: Draft, lines: Sequence[str], start: int) -> None:
    """Frames after a console headline: tombstone ``#NN pc`` lines, Java-shaped ``at``
    lines, Crashlytics' unsymbolized ``at (Missing)()`` (kept as empty frames)."""
    head = lines[start]
    bugly = _BUGLY.search(head)
    rest = [head[bugly.end():]] if bugly is not None else []
    for line in rest + list(lines[start + 1:]):
        stripped = line.strip()
        if not stripped:
            continue
        frame, note = parse_frame_line(stripped)
        if frame is not None:
            draft.add_frame(Frame(index=len(draft.frames), module=frame.module,
                                  symbol=frame.symbol, offset=frame.offset, pc=frame.pc,
                                  build_id=frame.build_id, path=frame.path))
            if note:
                draft.note(note)
            continue
        if stripped.startswith("at (Missing)"):
            draft.add_frame(Frame(index=len(draft.frames)))
            continue
        jf = java_frame(len(draft.frames), stripped)
        if jf is not None:
            draft.add_frame(jf)
    if any(f.symbol is None and f.module is None and f.pc is None for f in draft.frames):
        draft.note("the console lost the symbols of some frames ('(Missing)')")


def find_anr_summary(lines: Sequence[str]) -> int | None:
    """Index of an ANR summary headline in the top lines, or ``None``."""
    for i, line in _top(lines):
        if ("ANR" in line or "out" in line or "ervice" in line or "Respond" in line or
                "Intent" in line or "responding" in line) and (
                    _ANR_WORD.match(line) or ANR_REASON.search(line)):
            return i
    return None


def read_anr_summary(draft: Draft, lines: Sequence[str], start: int) -> None:
    """An ANR summary: the reason as ``message``, then the main thread's Java frames."""
    draft.kind = "anr"
    reasons = [line[m.start():].strip() for line in lines[start:start + 4]
               if (m := ANR_REASON.search(line)) is not None]
    if reasons:  # the longest: a headline may repeat the reason without its details
        draft.set("message", max(reasons, key=len))
    for line in lines[start:]:
        if not JAVA_FRAME_HINT.match(line):
            continue
        frame = java_frame(len(draft.frames), line)
        if frame is not None:
            draft.add_frame(frame)
    if draft.get("message") is None:
        draft.note("ANR headline without a reason")
    if not draft.frames:
        draft.note("ANR summary without the main thread's frames")


def find_console_exception(lines: Sequence[str]) -> int | None:
    """Index of a console's Java/JS exception headline in the top lines, or ``None``
    (Crashlytics ``Fatal Exception:``, Play ``Exception <type>:``, App Center
    ``### Reason ###``, Metro ``ERROR  <Type>Error:``)."""
    for i, line in _top(lines):
        # each headline's own words first (a quick test before its regex)
        if ("Fatal Exception: " in line and _FATAL.match(line)) or (
                "Exception " in line and _PLAY_EXC.match(line)) or (
                ("ERROR" in line or "FATAL" in line) and _METRO.match(line)):
            return i
        if "###" in line and line.strip() in ("### Stacktrace ###", "### Reason ###"):
            return i
    for i, line in enumerate(lines):
        if ("ERROR" in line or "FATAL" in line) and _METRO.match(line):
            return i  # Metro prints the component stack of earlier errors first
    return None


#: a bare ``Throwable.printStackTrace`` headline: ``pkg.Class[Exception|Error]: message``
_CAUSED_BY = re.compile(r"^\s*Caused by:? [a-zA-Z_$][\w$]*(?:\.[\w$]+)+(?::|\s*$)")
_BARE_EXC = re.compile(r"^\s*(?P<type>[a-z][\w$]*(?:\.[\w$]+)+(?:Exception|Error))(?::(?:\s.*)?|\s*)$")
#: lines after a bare headline in which its first ``at`` frame must come (a JS stack
#: between the two counts, as in a JavascriptException's message)
BARE_FRAME_LINES = 80


def find_bare_exception(lines: Sequence[str]) -> int | None:
    """Index of a bare Java exception headline in the top lines (a stack trace pasted
    without its ``FATAL EXCEPTION`` block or a console's prefix: ``java.lang.X: msg``
    then ``at ...`` lines), or ``None``. A ``...JavascriptException`` headline needs no
    ``at`` frame (its message holds the JS stack)."""
    top = _top(lines)
    for i, line in top:
        m = _BARE_EXC.match(line)
        if m is None:
            continue
        if m.group("type").endswith("JavascriptException"):
            return i
        if any(JAVA_FRAME_HINT.match(ln) for ln in lines[i + 1:i + 1 + BARE_FRAME_LINES]):
            return i
    # a stack pasted from its frames on, with a 'Caused by:' exception below them
    if top and top[0][1].lstrip().startswith("at ") and JAVA_FRAME_HINT.match(top[0][1]):
        for line in lines[:BARE_FRAME_LINES * 4]:
            if _CAUSED_BY.match(line):
                return top[0][0]
    return None


def console_exception_block(lines: Sequence[str], start: int) -> list[str] | None:
    """The lines a Java exception reader takes (``Throwable.printStackTrace`` order), made
    from a console export: the headline without its console prefix, then the frames.
    ``None`` when the headline is a Metro JS error (read by :func:`read_js_terminal`)."""
    head = lines[start]
    if _METRO.match(head):
        return None
    stripped = [ln.strip() for ln in lines]
    if "### Reason ###" in stripped:
        at = stripped.index("### Reason ###")
        reason = next((ln for ln in lines[at + 1:] if ln.strip()), "")
        return [reason] + [ln for ln in lines if JAVA_FRAME_HINT.match(ln)]
    m = _FATAL.match(head) or _PLAY_EXC.match(head)
    first = m.group("rest") if m is not None else head
    return [first] + list(lines[start + 1:])


def read_js_terminal(draft: Draft, lines: Sequence[str], start: int) -> None:
    """A React Native terminal (Metro/Expo) ``ERROR  <Type>Error: ...`` and its frames."""
    draft.kind = "js"
    m = _METRO.match(lines[start]) or _JS_HEAD.match(lines[start])
    text = (m.group("rest") if m is not None else lines[start]).strip()
    head = text.split(", js engine:")[0].strip()
    draft.set("message", head or None)
    js_type = re.match(r"^(\w*Error|\w*Exception|Invariant Violation)\b", head)
    draft.set("code", js_type.group(1) if js_type else None)
    end = next((i for i in range(start + 1, len(lines)) if _METRO.match(lines[i])), len(lines))
    frames = js_stack(lines[start + 1:end])
    draft.frames = frames
    if not frames:
        draft.note("no JS frames after the error line")


def looks_like_js_headline(lines: Sequence[str]) -> int | None:
    """Index of a bare JS error line followed by JS frames (Expo CLI's terminal), or
    ``None``."""
    for i, line in _top(lines):
        if _JS_HEAD.match(line) and js_frames(lines[i + 1:i + 4]):
            return i
    return None



# a frames table's row once its markup is gone: the index, the library (a shared object's
# name), the symbol; no address (a row with one, before or after the symbol, is another
# layout: which number it is, an address or an offset, only its table's header said)
# (the symbol ends at its last non-space character, greedily: a lazy one before "\s*$" made
# a long run of spaces quadratic)
_ROW = re.compile(r"^\s*#?(?P<idx>\d{1,4})[ \t]+(?P<mod>[\w.+-]+\.(?:so(?:\.\d+)*|dylib))"
                  r"[ \t]+(?P<sym>[^\s\d](?:.*\S)?)\s*$")
_ROW_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")


def _row(line: str) -> re.Match[str] | None:
    m = _ROW.match(line)
    return m if m is not None and _ROW_HEX.search(m.group("sym")) is None else None


def looks_like_frame_rows(lines: Sequence[str]) -> bool:
    """True when at least 2 lines, and 60 % of the non-empty ones, are frame rows
    (``N  libfoo.so  symbol``)."""
    body = [ln for ln in lines if ln.strip()][:400]
    hits = sum(1 for ln in body if (".so" in ln or ".dylib" in ln) and _row(ln))
    return hits >= 2 and hits * 10 >= len(body) * 6


def read_frame_rows(draft: Draft, lines: Sequence[str]) -> None:
    """Read a frames table's rows (see the module docs): kind ``native``; the platform from
    the libraries' names (``.so``: Android, ``.dylib``: iOS, both assumed)."""
    draft.kind = "native"
    for line in lines:
        m = _row(line)
        if m is None:
            continue
        symbol, offset = m.group("sym"), None
        head, plus, off = symbol.rpartition("+")  # "symbol + 16": an offset in decimal
        if (plus and off[:1].isspace() and off.strip().isdecimal() and head[-1:].isspace()
                and head.strip()):
            symbol, offset = head.rstrip(), int(off.strip())
        draft.add_frame(Frame(index=int(m.group("idx")), module=m.group("mod"),
                              symbol=symbol, offset=offset))
    modules = {f.module or "" for f in draft.frames}
    if any(".dylib" in mod for mod in modules):
        draft.platform = "ios"
        draft.note("frames named .dylib: assumed ios")
    elif any(re.search(r"\.so(?:\.\d+)*$", mod) for mod in modules):
        draft.platform = "android"
        draft.note("frames named .so: assumed android")
    draft.note("frame rows (index, library, symbol), as a crash console's frames table "
               "gives them: no signal and no addresses in the copy")
