"""Android native crash text: tombstones in all the shapes they reach us in.

Shapes handled (docs/formats.md sections 1-3; AOSP ``debuggerd`` output as documented
at https://source.android.com/docs/core/tests/debug/native-crash):

* a full tombstone file (``/data/tombstones/tombstone_NN``, a ``SYSTEM_TOMBSTONE`` DropBox
  entry, a bug report's copy): header, signal, registers, the crashing thread's
  ``backtrace:``, then other threads and the memory map (ignored);
* the summary that ``DEBUG`` logs to logcat (any prefix style, see :mod:`kit.crash._text`),
  with the ``libc`` ``Fatal signal`` line before it (``logcat -b crash``);
* crash-reporter copies (Play Console vitals, Crashlytics): star line, ``pid: 0``,
  ``backtrace:`` and ``pc 0x...`` frames, maybe a ``signal`` line pasted above the star line.

Frame line: ``#NN pc <rel_pc>  <mapping> [(offset 0x..)] [(<symbol>+<dec offset>)]
[(BuildId: <hex>)]``; ``<mapping>`` can be ``<apk>!<lib>.so`` for libraries loaded straight
from an APK, ``[anon:...]`` or ``<anonymous:...>``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from ._demangle import demangle_all
from ._draft import Draft
from ._text import ELIDED_NOTE, ELISION, basename, matching_open_paren, parse_int, signal_name, signal_number
from .record import Frame

__all__ = ["parse_frame_line", "read_tombstone", "read_fatal_signal", "looks_like_tombstone",
           "FATAL_SIGNAL", "FRAME_LINE", "TOMBSTONE_TAGS", "tombstone_tags", "demangle_frames"]

#: Logcat tags that carry the tombstone summary (debuggerd before Android 8, crash_dump and
#: DEBUG since).
TOMBSTONE_TAGS = frozenset({"DEBUG", "crash_dump32", "crash_dump64", "debuggerd",
                            "debuggerd64"})

_STAR = re.compile(r"^\s*(?:\*\*\*\s*){4,}\s*$")
# pid: 1234, tid: 1250, name: mqt_native_modu  >>> com.example.app <<<
# "pid:" as a word: a "ppid: 1, tid: ..." line must not be taken for the crashing process;
# Android 14 prints "pid: 8110, ppid: 669, tid: 8120, name: ..." (other "key: N," fields
# between pid and tid are skipped alike)
_PID = re.compile(r"(?<![\w-])pid: (?P<pid>\d+),(?: (?!tid:)\w+: \d+,){0,4} tid: (?P<tid>\d+)"
                  r"(?:, name: (?P<name>.*?))?\s*"
                  r">>> (?P<proc>.*?)(?: <<<|$)")
# signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000008
_SIGNAL = re.compile(r"^\s*signal (?P<num>\d+) \((?P<name>\w+)\)"
                     r"(?:, code (?P<code>-?\d+)(?: \((?P<code_name>[^)]*)\)?)?)?"
                     r"(?:, fault addr (?P<addr>[-\w]+))?")
# F libc: Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0 in tid 1250
#   (mqt_native_modu), pid 1234 (com.example.app)
FATAL_SIGNAL = re.compile(
    r"Fatal signal (?P<num>\d+) \((?P<name>\w+)\)"
    r"(?:, code (?P<code>-?\d+)(?: \((?P<code_name>[^)]*)\))?)?"
    r"(?:, fault addr (?P<addr>[-\w]+))?"
    r"(?: in tid (?P<tid>\d+) \((?P<tname>.*?)\))?(?:, pid (?P<pid>\d+)(?: \((?P<proc>.*?)\)?$)?)?"
    # Android 4.x: "Fatal signal 11 (SIGSEGV) at 0x00000030 (code=1), thread 8313 (AsyncTask #2)"
    r"(?: at (?P<old_addr>0x[0-9a-fA-F]+) \(code=(?P<old_code>-?\d+)\), thread (?P<old_tid>\d+)"
    r"(?: \((?P<old_tname>.*?)\))?)?")
# "#00 pc 000000000005e69f  /apex/.../libc.so (abort+191)"; a crash SDK's copy may drop the
# "pc" ("#79 0x000d86dd /apex/.../libart.so (...)"): then a path must follow the address
_FRAME = re.compile(r"^\s*#(?P<idx>\d{1,4})\s+(?:pc\s+|(?=0x[0-9a-fA-F]{1,16}\s+[/\[<]))(?:0x)?"
                    r"(?P<pc>[0-9a-fA-F]{1,16})\b\s*(?P<rest>.*)$")
FRAME_LINE = _FRAME
# a crash reporter's note after the mapping: Bugly's "[arm64-v8a::<build id>]"
_REPORTER_NOTE = re.compile(r"\s+\[(?P<note>[^\]\[]*)\]\s*$")
_NOTE_BUILD_ID = re.compile(r"::(?P<id>[0-9a-fA-F]{16,64})$")
_BUILD_ID = re.compile(r"\s*\(BuildId: (?P<id>[0-9a-fA-F]*)\)?\s*$")
_APK_OFFSET = re.compile(r"\s*\(offset (?P<off>0x[0-9a-fA-F]+)\)\s*$")
# "(symbol+28)"; consoles write "(symbol + 28)", which must not leave "symbol " behind
_SYMBOL_OFFSET = re.compile(r"^(?P<sym>.*?)\s*\+\s*(?P<off>\d+)$")
_TOTAL = re.compile(r"^\s*(?P<n>\d+) total frames\s*$")
_ABORT_END = re.compile(r"^\s*(?:backtrace:|#\d+ pc |\d+ total frames|signal \d+ |"
                        r"(?:x0|r0|rax|eax) |\*\*\* \*\*\*|pid: \d+)")
_KEY = re.compile(r"^\s*(?P<key>Build fingerprint|ABI|Timestamp|Cmdline|Cause|Abort message|"
                  r"Process uptime|Revision|uid|Kernel Release): ?(?P<value>.*)$")


def _build_id(rest: str) -> re.Match[str] | None:
    """``_BUILD_ID.search(rest)``, tried from the last ``(BuildId: `` only (the pattern
    reaches the end of the line, so no earlier one can start a match) and widened over the
    blanks before it, as the search's leading ``\\s*`` takes them."""
    at = rest.rfind("(BuildId: ")
    if at < 0:
        return None
    start = len(rest[:at].rstrip())
    m = _BUILD_ID.match(rest, start)
    return m if m is not None and m.start() == start else None


def parse_frame_line(line: str) -> tuple[Frame | None, str | None]:
    """One ``#NN pc ...`` line as a :class:`Frame`, plus a note when it was cut.

    Returns ``(None, None)`` when the line is not a frame line at all. A frame cut mid-line
    keeps what was read (``rel_pc`` at least) and says so in the note.
    """
    m = _FRAME.match(line)
    if m is None:
        return None, None
    index = int(m.group("idx"))
    pc = m.group("pc").lower()
    rest = m.group("rest").rstrip()
    note = None
    build_id = None
    bm = _build_id(rest)
    if bm is not None:
        build_id = bm.group("id").lower() or None
        if not bm.group(0).rstrip().endswith(")"):
            note = f"frame #{index:02d} cut inside its BuildId"
        rest = rest[:bm.start()].rstrip()
    symbol = None
    offset = None
    if rest.endswith(")"):
        start = matching_open_paren(rest)
        if start > 0:
            inner = rest[start + 1:-1]
            if not inner.startswith("offset 0x") and inner != "deleted":
                sm = _SYMBOL_OFFSET.match(inner)
                if sm is not None:
                    symbol, offset = sm.group("sym").strip(), parse_int(sm.group("off"))
                else:
                    symbol = inner.strip()
                rest = rest[:start].rstrip()
    elif " (" in rest:
        # "(symbol+off" with no closing paren: the line was cut inside the symbol
        cut = rest.rindex(" (")
        tail = rest[cut + 2:]
        if not tail.startswith(("offset 0x", "BuildId")) and ")" not in tail:
            symbol = tail.rsplit("+", 1)[0] or None
            rest = rest[:cut]
            note = f"frame #{index:02d} cut inside its symbol"
    nm = _REPORTER_NOTE.search(rest) if "]" in rest and not rest.lstrip().startswith("[") \
        else None
    if nm is not None:
        rest = rest[:nm.start()].rstrip()
        idm = _NOTE_BUILD_ID.search(nm.group("note"))
        if idm is not None and build_id is None:
            build_id = idm.group("id").lower()
        note = note or f"frame #{index:02d}: the reporter's note [{nm.group('note')}] is not " \
                       "part of the module name"
    am = _APK_OFFSET.search(rest) if "(offset 0x" in rest else None
    if am is not None:
        rest = rest[:am.start()].rstrip()
    path = rest.strip() or None
    if path is not None and path.endswith(" (deleted)"):
        path = path[:-len(" (deleted)")]
    module = basename(path) if path else None
    if path is not None and _cut_install_path(path):
        module = None
        note = note or f"frame #{index:02d}: its path is cut before the module's name"
    return Frame(index=index, module=module, symbol=symbol or None, offset=offset,
                 pc="0x" + pc, build_id=build_id, path=path), note


# a file a frame can be in (a library, an APK and the library inside it, ART's files)
_MODULE_FILE = re.compile(r"\.(?:so|apk|oat|odex|vdex|dex|art|jar)\b|!|\]$")


def _cut_install_path(path: str) -> bool:
    """Whether a frame's path ends inside an app's install directory (Android 11+'s
    ``/data/app/~~<random>==/<package>-<random>==/...``): a paste cut it before the module's
    name, so its last part is no module (``~~WysbYd12p1drZY0tzOF3``)."""
    parts = path.split("/")
    last = parts[-1]
    if not last or last.startswith("~~"):
        return path.startswith("/")
    at = next((i for i, part in enumerate(parts) if part.startswith("~~")), None)
    return at is not None and len(parts) == at + 2 and _MODULE_FILE.search(last) is None


def _hex_address(text: str | None) -> str | None:
    """``0x...`` lower-case, or ``None`` for ``--------``/garbage."""
    if not text or set(text) <= {"-"}:
        return None
    text = text.lower()
    if not text.startswith("0x"):
        text = "0x" + text
    return text if parse_int(text, 16) is not None else None


def read_fatal_signal(draft: Draft, msg: str) -> bool:
    """Fill signal, code, fault address, tid and pid from a ``Fatal signal`` line."""
    m = FATAL_SIGNAL.search(msg)
    if m is None:
        return False
    draft.set("signal", parse_int(m.group("num")))
    draft.set("signal_name", m.group("name"))
    draft.set("code", m.group("code_name") or m.group("code") or m.group("old_code"))
    draft.set("fault_address", _hex_address(m.group("addr") or m.group("old_addr")))
    draft.set("tid", parse_int(m.group("tid") or m.group("old_tid")))
    draft.set("thread_name", m.group("tname") or m.group("old_tname"))
    draft.set("pid", parse_int(m.group("pid")))
    # the libc line cuts the process name to 15 characters; a tombstone line wins later
    draft.short_process = draft.short_process or m.group("proc") or None
    return True


def tombstone_tags(lines: Sequence[object]) -> frozenset[str]:
    """:data:`TOMBSTONE_TAGS` plus every logcat tag that carries a tombstone's star line,
    pid line or ``backtrace:`` (vendor builds and engines log the tombstone under their own
    tag: Unity's ``CRASH``, vivo's ``_V_EPM``). ``lines`` are :class:`~kit.crash._text.LogLine`."""
    extra = set()
    for line in lines:
        tag = getattr(line, "tag", None)
        msg = getattr(line, "msg", "")
        if tag and tag not in TOMBSTONE_TAGS and (
                ("***" in msg and _STAR.match(msg)) or msg.strip() == "backtrace:"
                or ("pid: " in msg and _PID.search(msg))):
            extra.add(tag)
    return TOMBSTONE_TAGS | extra


def looks_like_tombstone(lines: Sequence[str]) -> bool:
    """True if the lines hold a tombstone's star line, pid line or ``#NN pc`` frames, or a
    ``signal N (SIG...)`` line with an ``Abort message:``, a ``backtrace:`` or a frame (a
    paste that starts at the signal line)."""
    frames = 0
    signal = body = False
    for line in lines:
        if ("***" in line and _STAR.match(line)) or (">>> " in line and _PID.search(line)):
            return True
        if not signal and "signal " in line and _SIGNAL.match(line):
            signal = True
        elif "Abort message:" in line or line.strip() == "backtrace:":
            body = True
        if signal and (body or frames):
            return True
        if "#" in line and _FRAME.match(line):
            frames += 1
            if frames >= 2:
                return True
    return False


def read_tombstone(draft: Draft, lines: Sequence[str]) -> None:
    """Read tombstone lines (prefixes already stripped) into ``draft``.

    Only the crashing thread's first ``backtrace:`` run of frames is kept; GWP-ASan/MTE
    allocation and free stacks, other threads and the memory map are skipped. Never raises.
    """
    saw_star = saw_pid = saw_backtrace = saw_signal = False
    in_frames = done_frames = elided = False
    total_frames = None
    abort_lines: list[str] | None = None
    for line in lines:
        if abort_lines is not None:
            # a sanitizer's report is the abort message on Android (compiler-rt's
            # SetAbortMessage): its lines are many
            limit = 400 if "Sanitizer" in abort_lines[0] else 40
            if _ABORT_END.match(line) or len(abort_lines) >= limit:
                # a tombstone line where the message should go on: its quote was lost
                _finish_abort(draft, abort_lines)
                draft.note("the abort message has no closing quote (report cut or garbled)")
                abort_lines = None
            else:
                abort_lines.append(line)
                if line.rstrip().endswith("'"):
                    _finish_abort(draft, abort_lines)
                    abort_lines = None
                continue
        if not done_frames:
            frame, note = parse_frame_line(line) if "#" in line else (None, None)
            if frame is not None:
                in_frames = True
                draft.add_frame(frame)
                if note:
                    draft.note(note)
                continue
            if in_frames:
                stripped = line.strip()
                # a blank line does not end the run: consoles (Play, Crashlytics) put one
                # between frames; the next line that is not a frame does
                if stripped.startswith("NOTE:") or not stripped:
                    continue
                if ELISION.match(stripped):  # frames the paster left out: the run goes on
                    elided = True
                    continue
                in_frames = False
                done_frames = True
        stripped = line.strip()
        if not stripped:
            continue
        # each pattern's own words are looked for first (a quick test before the regex)
        if ("***" in stripped and _STAR.match(stripped)) or (
                saw_signal and "signal " in stripped and _SIGNAL.match(stripped)):
            # a second report pasted after the first (its star line, or a second signal
            # line): its fields are not this one's. A console's copy puts the signal line
            # above the star line of the same report.
            if saw_pid or draft.frames or not stripped.startswith("*"):
                draft.note("the text holds another tombstone after this one: only the first "
                           "is read")
                break
            saw_star = True
            continue
        if stripped == "backtrace:":
            saw_backtrace = True
            continue
        if "Fatal signal" in stripped:
            read_fatal_signal(draft, stripped)
            continue
        tm = _TOTAL.match(stripped) if "total frames" in stripped else None
        if tm is not None:
            total_frames = parse_int(tm.group("n"))
            continue
        pm = _PID.search(stripped) if "pid: " in stripped else None
        if pm is not None and not saw_pid:
            saw_pid = True
            pid = parse_int(pm.group("pid"))
            if pid == 0:
                draft.note("pid 0: a crash-reporter copy, the real pid is unknown")
            else:
                draft.set("pid", pid, override=True)
            draft.set("tid", parse_int(pm.group("tid")) or None, override=True)
            draft.set("thread_name", (pm.group("name") or "").strip() or None, override=True)
            draft.set("process", pm.group("proc").strip() or None)
            if not stripped.rstrip().endswith("<<<"):
                draft.note("the pid line is cut after the process name")
            continue
        sm = _SIGNAL.match(stripped) if not saw_signal and "signal " in stripped else None
        if sm is not None:
            saw_signal = True
            draft.set("signal", parse_int(sm.group("num")), override=True)
            draft.set("signal_name", sm.group("name"), override=True)
            code = (sm.group("code_name") or "").split(" from pid ")[0] or sm.group("code")
            draft.set("code", code, override=True)
            draft.set("fault_address", _hex_address(sm.group("addr")), override=True)
            continue
        km = _KEY.match(stripped) if ":" in stripped else None
        if km is not None:
            key, value = km.group("key"), km.group("value").strip()
            if key == "Cmdline":
                draft.set("process", value.split(" ")[0] or None, override=True)
            elif key == "ABI":
                draft.set("abi", value.strip("'"))
            elif key == "Timestamp":
                draft.set("timestamp", value)
            elif key == "Cause":
                draft.set("cause", value)
            elif key == "Abort message":
                if value.startswith("'") and (len(value) < 2 or not value.endswith("'")):
                    abort_lines = [value]
                else:
                    draft.set("abort_message", value.strip("'"))
    if abort_lines is not None:
        _finish_abort(draft, abort_lines)
        draft.note("the abort message has no closing quote (report cut or garbled)")
    draft.set("process", draft.short_process)
    if saw_backtrace and not draft.frames:
        draft.note("'backtrace:' is followed by no frames (report cut?)")
    if elided:
        draft.note(ELIDED_NOTE)
    if total_frames is not None and 0 < len(draft.frames) < total_frames:
        draft.note(f"{len(draft.frames)} of {total_frames} frames present (report cut?)")
    if not saw_star and not saw_pid and saw_signal:
        draft.note("no tombstone header (star line / pid line): the text starts at the signal "
                   "line")
    elif not saw_star and not saw_pid and draft.frames:
        draft.note("no tombstone header (star line / pid line): frames only")
    if draft.get("signal") is None:
        draft.note("no signal line")
    demangle_frames(draft)
    if draft.get("signal") is not None and draft.get("signal_name") is None:
        draft.set("signal_name", signal_name(draft.get("signal")))
    if draft.get("signal_name") is not None and draft.get("signal") is None:
        draft.set("signal", signal_number(draft.get("signal_name")))


def _finish_abort(draft: Draft, parts: list[str]) -> None:
    # Scudo's and others' messages end in a newline, so debuggerd's closing quote comes on a
    # line of its own: the newline is no part of the message
    text = "\n".join(p.strip() for p in parts).strip().strip("'").strip()
    draft.set("abort_message", text)


def demangle_frames(draft: Draft) -> None:
    """Demangle the frames' ``_Z...`` symbols in place (older tombstones print some C++
    names mangled, often with an ``.llvm.<hash>`` suffix that debuggerd's demangler did not
    take), so that a frame reads, and signs, the same whichever Android printed it."""
    if not any(f.symbol and f.symbol.startswith("_Z") for f in draft.frames):
        return
    mapping, note = demangle_all(f.symbol for f in draft.frames if f.symbol)
    if note:
        draft.note(note)
    draft.frames = [dataclasses.replace(f, symbol=mapping[f.symbol])
                    if f.symbol in mapping else f for f in draft.frames]
