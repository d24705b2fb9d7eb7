"""Sanitizer reports: AddressSanitizer, HWASan, ThreadSanitizer, MemorySanitizer, LSan, UBSan.

Layout (compiler-rt's report printers, asan_errors.cpp / tsan_report.cpp; the same on Linux,
Android and Apple platforms)::

    ==12345==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020.. at pc 0x..
    READ of size 8 at 0x602000000010 thread T2
        #0 0x55d1c0a0 in symbol(args) /path/file.cc:30:12
        #1 0x748e3f498884  (/path/libonnxruntime.so.1.17.1+0x698884) (BuildId: 447a..)
    0x602000000010 is located 0 bytes inside of 16-byte region [...)
    freed by thread T1 here:
        #0 ...
    previously allocated by thread T1 here:
    SUMMARY: AddressSanitizer: heap-use-after-free /path/file.cc:30:12 in symbol

    WARNING: ThreadSanitizer: data race (pid=60149)
      Write of size 8 at 0x7b04.. by thread T2:
        #0 symbol /path/file.cc:300:5 (libonnxruntime.so+0x123) (BuildId: ..)
      Previous read of size 8 at 0x7b04.. by thread T1:
        #0 ...
      Location is global 'ns::stored_allocator' of size 16 at 0x.. (libx.so+0x..)

The first stack (the faulting access) becomes the frames; the other stacks (``freed by``,
``previously allocated by``, TSan's previous access) and TSan's location are summarised in
notes. A frame's symbol loses its source path (``file``/``line``) and its ``(module+0xoff)``
(``module``/``pc``). A piece of a report without the ``ERROR`` line still gives its kind when
it can be told (an access plus a ``freed by`` stack is a use-after-free). A leak report
(LSan) is not a crash: its kind stays ``unknown``.

UBSan's own line, ``file:line:col: runtime error: what`` (``ubsan_diag.cpp``), gives the
message and the cause, also when a paste lost the report's newlines and its later parts
follow on the same line (the ``SUMMARY``, simonowen/resid#2; the ``0x..: note: pointer
points here`` line and its hex dump, supertuxkart/stk-code#5246; frames, read apart), the
message ending where the first of them starts, and in the form
LeetCode's judge prints (``Line 14: Char 19: runtime error: what (solution.cpp)``, the
location moved to the front and the file's name to the end; LeetCode-Feedback#20970 in the
corpus). The line may stand under a log's own prefix: spaced (``wrap.sh: ``, a
``[init -> test] `` tag, ``uniq -c``'s count), glued on with a colon (CMSSW's
``1001.2/step2:``, cms-sw#46406 in the corpus) or a bracket (``[esil.c:1183:24: ...``,
radareorg/radare2#12743). It is a report by itself when no ``SUMMARY`` line came with it
(format ``ubsan``; ``exception`` and ``code`` stay unset: only the summary names them).
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import basename, matching_open_paren, parse_int, signal_number, split_logcat
from .record import Frame
from .signature import normalize_symbol
from .tombstone import looks_like_tombstone, read_tombstone

__all__ = ["looks_like_sanitizer", "read_sanitizer", "parse_sanitizer_frame"]

_TOOLS = {"AddressSanitizer": "asan", "HWAddressSanitizer": "hwasan",
          "ThreadSanitizer": "tsan", "MemorySanitizer": "msan", "LeakSanitizer": "lsan",
          "UndefinedBehaviorSanitizer": "ubsan"}
_HEADER = re.compile(r"(?:==(?P<pid>\d+)==\s*)?(?:ERROR|WARNING): (?P<tool>" + "|".join(_TOOLS)
                     + r"): (?P<what>(?:.*\S)?)\s*$")
# the summary line; UBSan's one-line form prints it after the runtime error on the same line
_SUMMARY = re.compile(r"(?:^|\s)SUMMARY: (?P<tool>\w+Sanitizer): (?P<kind>[\w-]+)")
_ACCESS = re.compile(r"^\s*(?P<access>(?:Previous )?(?:READ|WRITE|[Rr]ead|[Ww]rite|[Aa]tomic "
                     r"\w+)) of size (?P<size>\d+) at (?P<addr>0x[0-9a-fA-F]+)(?P<rest>.*)$")
# "freed by thread T32 (AudioTrack) here:": Android (and any thread with a name) prints the
# thread's name after its number
_THREAD_ID = r"(?:T\d+|\S+)(?: \([^()\n]*\))?"
_SECTION = re.compile(r"^\s*(?P<what>freed by thread " + _THREAD_ID + r" here|"
                      r"previously allocated by thread " + _THREAD_ID + r" here|"
                      r"allocated by thread " + _THREAD_ID + r" here|"
                      r"Thread \S+ .*created by .*|Previous .* by .*|Mutex .* created at|"
                      r"Location is .*):?\s*$")
_FRAME = re.compile(r"^\s*#(?P<idx>\d{1,4})\s+(?:(?P<addr>0x[0-9a-fA-F]+)\s+)?(?:in\s+)?"
                    r"(?P<rest>(?:.*\S)?)\s*$")
_MODULE = re.compile(r"^\((?P<mod>[^()]+?)\+(?P<off>0x[0-9a-fA-F]+)\)$")
_BUILD_ID = re.compile(r"\s*\(BuildId: (?P<id>[0-9a-fA-F]+)\)\s*$")
_SOURCE = re.compile(r"\s(?P<file>(?:[/.\w<>~-][^\s:]*)?\.\w+|<null>):(?P<line>\d+)(?::\d+)?$")
_FILE_ONLY = re.compile(r"\s(?P<file><null>|[/.\w~-][^\s:()]*\.(?:c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|"
                        r"inc|inl|m|mm|rs|go|swift))$")
# UBSan's line "file:line:col: runtime error: what", found anywhere on its line: a log's own
# prefix may stand before it, spaced ("wrap.sh: ", a "[init -> test] " tag, uniq -c's count)
# or glued on with a colon (CMSSW's "1001.2/step2:" workflow step before the path) or an
# opening bracket (radareorg/radare2#12743's "[esil.c:1183:24: ..."). The path holds none
# of the characters a match may start after, so that no two starts scan the same
# characters (linear in the line; a path that could hold them made a line of "a(a(..."
# quadratic), and the message ends at its last non-space character the same way
_UBSAN = re.compile(r"(?:^|(?<=[\s:\]\[(]))(?P<file>(?:[A-Za-z]:)?[^\s:\[\](]+):(?P<line>\d+):"
                    r"(?:\d+:)? runtime error: (?P<msg>.*\S)\s*$")
# LeetCode's judge rewrites that location as "Line 22: Char 58: runtime error: what (file.cpp)":
# the line and column first, the file's name in parentheses at the end of the message
_UBSAN_JUDGE = re.compile(r"\bLine (?P<line>\d+): Char \d+: runtime error: (?P<msg>.*\S)\s*$")
# the judge's " (file.cpp)" at the message's end, matched on that end only
_JUDGE_FILE = re.compile(r"[^\s()]+\.\w+")
# the later parts of a UBSan report joined onto its runtime error line when a paste lost its
# newlines: the summary ("SUMMARY: UndefinedBehaviorSanitizer: ..."; simonowen/resid#2), the
# "0x..: note: pointer points here" line and its hex dump (after ": " or spaces;
# supertuxkart/stk-code#5246) and stack frames ("#0 0x.. in f a.cc:3"). The cut is matched
# from the start of its run of spaces only (never after a space or a colon), and what may
# follow the spaces starts with no space, so each run is scanned once: linear in the line
_JOINED = re.compile(r"(?<![\s:]):?\s+(?=SUMMARY: \w+Sanitizer: |0x[0-9a-fA-F]+: note: |"
                     r"#\d{1,4} 0x[0-9a-fA-F]+\s)")
_DETECT = re.compile(r"(?:ERROR|WARNING): (?:" + "|".join(_TOOLS) + r"):|SUMMARY: \w+Sanitizer:|"
                     r"freed by thread T\d+(?: \([^()\n]*\))? here:|previously allocated by "
                     r"thread T\d+(?: \([^()\n]*\))? here:|"
                     r"(?:READ|WRITE) of size \d+ at 0x[0-9a-fA-F]+ thread T\d+")
# a UBSan runtime error without its SUMMARY line is the report's only mark (UBSan's own
# location form, or LeetCode's judge form of it): Go's "panic: runtime error: ..." has neither
_DETECT_UBSAN = re.compile(r"(?:^|(?<=[\s:\]\[(]))[^\s:\[\](]+:\d+:\d+: runtime error: \S|"
                           r"\bLine \d+: Char \d+: runtime error: \S")
#: characters kept of a headline's kind ("heap-use-after-free", "attempting double-free")
_KIND_CHARS = 200
_SIGNALS = {"SEGV": "SIGSEGV", "BUS": "SIGBUS", "FPE": "SIGFPE", "ILL": "SIGILL",
            "ABRT": "SIGABRT", "stack-overflow": "SIGSEGV"}


def looks_like_sanitizer(text: str) -> str:
    """Why the text is a sanitizer report (or a piece of one), or ``""``."""
    sample = text[:2_000_000]
    if "Sanitizer" in sample or " of size " in sample or "freed by" in sample \
            or "allocated by thread" in sample:
        m = _DETECT.search(sample)
        if m is not None:
            return f"a sanitizer's report line ({m.group(0)!r})"
    if "runtime error: " in sample:
        m = _DETECT_UBSAN.search(sample)
        if m is not None:
            return f"a UBSan runtime error line ({m.group(0)[:-1].strip()!r}...)"
    return ""


def parse_sanitizer_frame(line: str) -> Frame | None:
    """One ``#N [0xADDR] [in] symbol [file:line[:col]] [(module+0xoff)] [(BuildId: ..)]``
    frame of a sanitizer stack, or ``None``."""
    m = _FRAME.match(line)
    if m is None:
        return None
    rest = m.group("rest")
    build_id = None
    bm = _BUILD_ID.search(rest)
    if bm is not None:
        build_id = bm.group("id").lower()
        rest = rest[:bm.start()].rstrip()
    module = path = pc = None
    if rest.endswith(")"):
        start = matching_open_paren(rest)
        mm = _MODULE.match(rest[start:]) if start >= 0 else None
        if mm is not None:
            path = mm.group("mod").split(":")[0]  # macOS prints "lib.dylib:arm64e+0x.."
            module = basename(path)
            pc = mm.group("off").lower()
            rest = rest[:start].rstrip()
    file = line_no = None
    sm = _SOURCE.search(" " + rest)
    if sm is not None and sm.start() > 0:
        file, line_no = sm.group("file"), parse_int(sm.group("line"))
        rest = (" " + rest)[:sm.start()].strip()
    else:  # TSan's symbolizer: "main <null>", "<null> <null>", "f() a.cpp" (a file, no line)
        fm = _FILE_ONLY.search(" " + rest)
        if fm is not None and fm.start() > 0:
            if fm.group("file") != "<null>":
                file = fm.group("file")
            rest = (" " + rest)[:fm.start()].strip()
    if rest in ("<null>", "(<unknown module>)"):  # no symbol; no module the tool could name
        rest = ""
    return Frame(index=parse_int(m.group("idx")) or 0, module=module, symbol=rest or None,
                 pc=pc or (m.group("addr") or "").lower() or None, build_id=build_id, path=path,
                 file=file, line=line_no)


def _summary(frames: list[Frame]) -> str:
    names = [normalize_symbol(f.symbol) if f.symbol else (f.module or "?") for f in frames[:3]]
    return " | ".join(names) or "no frames"


def _stacks(lines: Sequence[str]) -> list[tuple[str, list[Frame]]]:
    """``(heading, frames)`` for each stack, in order; the first heading is ``access``."""
    stacks: list[tuple[str, list[Frame]]] = [("access", [])]
    for line in lines:
        section = _SECTION.match(line)
        if section is not None and "Location is" not in line:
            stacks.append((section.group("what").rstrip(": "), []))
            continue
        access = _ACCESS.match(line)
        if access is not None and access.group("access").startswith("Previous"):
            stacks.append((line.strip().rstrip(":"), []))
            continue
        frame = parse_sanitizer_frame(line) if line.lstrip().startswith("#") else None
        if frame is not None:
            stacks[-1][1].append(frame)
    return stacks


def _from_tombstone(draft: Draft, lines: Sequence[str]) -> list[str]:
    """The sanitizer report's lines when it is an Android tombstone's ``Abort message:``
    (compiler-rt hands the report to ``android_set_abort_message``), with the tombstone's
    signal, pid, tid, thread, process, ABI and time stamp kept in ``draft``; ``lines``
    unchanged when the report is not in the abort message."""
    tomb = Draft(platform="android", source="tombstone", format="tombstone")
    read_tombstone(tomb, lines)
    report = tomb.get("abort_message") or ""
    if not _DETECT.search(report):
        return list(lines)
    for name in ("signal", "signal_name", "pid", "tid", "thread_name", "process", "abi",
                 "timestamp"):
        draft.set(name, tomb.get(name))
    draft.platform, draft.source = "android", "tombstone"
    draft.note("the sanitizer's report is the tombstone's abort message: the tombstone's "
               "signal, pid, tid, thread and process kept")
    return report.split("\n")


def _read_runtime_error(draft: Draft, lines: Sequence[str]) -> None:
    """UBSan's own line, "file:line:col: runtime error: what" (or LeetCode's rewrite of it,
    "Line N: Char M: runtime error: what (file)"), into the message and the cause. The
    line comes here with the report's later parts that were joined onto it (its SUMMARY, a
    note, frames) already split off (``_unjoin``): none of them is part of the message."""
    for line in lines:
        if "runtime error: " not in line:
            continue
        m = _UBSAN.search(line)
        if m is not None:
            where = f"{m.group('file')}:{m.group('line')}"
            msg = m.group("msg")
            break
        judge = _UBSAN_JUDGE.search(line)
        if judge is not None:
            msg, source = judge.group("msg"), None
            cut = msg.rfind(" (")
            if msg.endswith(")") and cut > 0 and _JUDGE_FILE.fullmatch(msg[cut + 2:-1]):
                msg, source = msg[:cut], msg[cut + 2:-1]
            where = (f"{source}:{judge.group('line')}" if source
                     else f"line {judge.group('line')}")
            break
    else:
        return
    draft.set("message", msg)
    draft.set("cause", f"runtime error at {where}")


def _unjoin(lines: Sequence[str]) -> list[str]:
    """The lines with each UBSan runtime error line split where a later part of the report
    was joined onto it (a paste that lost its newlines; see ``_JOINED``); other lines as
    they are."""
    out: list[str] = []
    for line in lines:
        if "runtime error: " in line and ("SUMMARY: " in line or ": note: " in line
                                          or "#" in line):
            out.extend(_JOINED.split(line))
        else:
            out.append(line)
    return out


def read_sanitizer(draft: Draft, lines: Sequence[str]) -> None:
    """Read a sanitizer report (see the module docs) into ``draft``; a report in logcat
    (Android's wrap script logs it, each line under a logcat prefix) is read from the lines'
    messages."""
    style, loglines = split_logcat(lines)
    if style != "raw":
        lines = [ln.msg for ln in loglines]
        draft.platform = "android"
    if looks_like_tombstone(lines):
        lines = _from_tombstone(draft, lines)
    lines = _unjoin(lines)
    text = "\n".join(lines)
    header = next((m for m in map(_HEADER.search, lines) if m), None)
    summary = next((m for m in map(_SUMMARY.search, lines) if m), None)
    tool = (header.group("tool") if header else summary.group("tool") if summary
            else "UndefinedBehaviorSanitizer" if "runtime error: " in text
            and _DETECT_UBSAN.search(text) else "AddressSanitizer")
    draft.format = _TOOLS.get(tool, "sanitizer")
    if header is None and summary is None and tool == "UndefinedBehaviorSanitizer":
        draft.note("no SUMMARY line: read from UBSan's runtime error line alone")
    what = header.group("what") if header else ""
    head = re.match(r"^(?P<kind>.+?)(?: on | \(|$)", what)
    kind = head.group("kind").strip() if head else (summary.group("kind") if summary else "")
    if len(kind) > _KIND_CHARS:  # a report's kind is a few words: the rest is not one
        draft.note(f"the headline's kind is {len(kind)} characters long: its first "
                   f"{_KIND_CHARS} kept")
        kind = kind[:_KIND_CHARS]
    if not kind and re.search(r"freed by thread " + _THREAD_ID + " here", text) and any(
            _ACCESS.match(line) for line in lines):
        kind = "heap-use-after-free"
        draft.note("no ERROR line in the paste: an access and a 'freed by' stack, so a "
                   "heap-use-after-free")
    if header is not None:
        draft.set("pid", parse_int(header.group("pid")))
    pid = re.search(r"\(pid=(\d+)\)", what)
    draft.set("pid", parse_int(pid.group(1)) if pid else None)
    if kind:
        draft.set("exception", f"{tool}: {kind}")
        draft.set("code", kind)
    draft.kind = "unknown" if tool == "LeakSanitizer" else "native"
    if tool == "LeakSanitizer":
        draft.note("a leak report is not a crash")
    sig = _SIGNALS.get(kind)
    if sig is not None:
        draft.set("signal_name", sig)
        draft.set("signal", signal_number(sig))
    addr = re.search(r"\baddress (0x[0-9a-fA-F]+)", what)
    access = next((m for m in map(_ACCESS.match, lines) if m), None)
    if addr is not None:
        draft.set("fault_address", addr.group(1).lower())
    elif access is not None:
        draft.set("fault_address", access.group("addr").lower())
    if access is not None:
        thread = re.search(r"\bthread (T\d+(?: \([^()]*\))?)|\bby (main thread)",
                           access.group("rest"))
        if thread is not None:
            draft.set("thread_name", thread.group(1) or thread.group(2))
        draft.set("cause", f"{kind or tool}: {access.group('access')} of size "
                           f"{access.group('size')} at {access.group('addr').lower()}")
    _read_runtime_error(draft, lines)
    location = re.search(r"^\s*Location is (?P<loc>.*?)(?: of size \d+)? at 0x", text, re.M)
    if location is not None:
        draft.note(f"race location: {location.group('loc')}")
    stacks = _stacks(lines)
    for heading, frames in stacks[1:]:
        if frames:
            draft.note(f"other stack ({heading}): {_summary(frames)}")
    for frame in stacks[0][1] or next((f for h, f in stacks if f), []):
        draft.add_frame(frame)
    if not draft.frames:
        draft.note("no stack frames in the sanitizer report")
    if ".dylib" in text or "_osx_" in text:
        draft.platform = "macos"
    elif re.search(r"/data/app/|/system/lib|/apex/|-android", text):
        draft.platform = "android"
