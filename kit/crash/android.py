"""Android deaths that are not (only) a tombstone, and the logcat / DropBox wrappers.

Sources (notes/crash-formats.md sections 1 and 3):

* Java: ``E AndroidRuntime: FATAL EXCEPTION: <thread>``, ``Process: <pkg>, PID: <pid>``, the
  exception line, ``at pkg.Class.method(File.java:NN)`` frames, ``Caused by: ...`` chains;
* React Native: the same block whose exception is ``...JavascriptException`` (old
  ``com.facebook.react.modules.core.JavascriptException``, newer
  ``com.facebook.react.common.JavascriptException``), its message holding the JS error and
  its stack (``fn@line:col`` lines), thrown from ``ExceptionsManagerModule``;
* ANR: ``ActivityManager: ANR in <pkg> (...)``, ``PID:``, ``Reason:`` in the system log, or an
  ANR traces file (``----- pid N at <time> -----``, ``Cmd line:``, the ``"main"`` thread's
  ``at`` and ``native: #NN pc`` frames);
* low-memory kills by ``lmkd``: ``lowmemorykiller: Kill '<proc>' (<pid>), uid N,
  oom_score_adj N to free NkB rss, NkB swap; reason: <text>`` (old kernels: ``Killing '...'``);
* ``dumpsys dropbox --print <tag>``: entries separated by a line of ``=`` and a header
  ``YYYY-MM-DD HH:MM:SS <tag> (text, N bytes)``; ActivityManager entries
  (``data_app_native_crash``, ``data_app_crash``, ``data_app_anr``) start with ``Process:``,
  ``PID:``, ``Package:`` ... headers, ``SYSTEM_TOMBSTONE`` holds the whole tombstone file.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import LogLine, basename, parse_int
from .record import Frame
from .tombstone import looks_like_tombstone, parse_frame_line, read_fatal_signal, read_tombstone

__all__ = ["read_java", "read_anr_log", "read_anr_traces", "read_lmk", "parse_android_log",
           "parse_dropbox", "TOMBSTONE_TAGS"]

#: Logcat tags that carry the tombstone summary (debuggerd before Android 8, crash_dump and
#: DEBUG since).
TOMBSTONE_TAGS = frozenset({"DEBUG", "crash_dump32", "crash_dump64", "debuggerd",
                            "debuggerd64"})

_JAVA_FRAME = re.compile(r"^\s*at (?P<sym>[^\s(]+)\((?P<loc>[^)]*)\)?\s*$")
_JAVA_EXC = re.compile(r"^\s*(?:Caused by: )?(?P<type>[A-Za-z_$][\w$]*(?:\.[\w$]+)+)"
                       r"(?::\s?(?P<msg>.*))?$")
# fn@file:line:col, or Hermes' fn@line:col (a release bundle is one file, so no file name)
_JS_FRAME = re.compile(r"^\s*(?P<fn>[^@\s]*)@(?P<loc>\S*?)"
                       r"(?::(?P<line>\d+)(?::(?P<col>\d+))?)?\s*$")
_LMK = re.compile(r"Kill(?:ing)? '(?P<proc>[^']*)' \((?P<pid>\d+)\)(?P<rest>.*)$")
_TRACES_HEAD = re.compile(r"^----- pid (?P<pid>\d+) at (?P<time>.*?) -----\s*$")
_THREAD_HEAD = re.compile(r'^"(?P<name>[^"]*)"(?P<rest>.*)$')
_DROPBOX_HEAD = re.compile(r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<tag>\S+)"
                           r"(?: \((?P<what>.*)\))?\s*$")


def _java_frame(index: int, line: str) -> Frame | None:
    m = _JAVA_FRAME.match(line)
    if m is None:
        return None
    loc = m.group("loc")
    file, _, lineno = loc.partition(":")
    return Frame(index=index, module=file or None, symbol=m.group("sym"),
                 file=file or None, line=parse_int(lineno))


def _js_frames(lines: Sequence[str]) -> list[Frame]:
    frames: list[Frame] = []
    for line in lines:
        m = _JS_FRAME.match(line)
        if m is None or not (m.group("fn") or m.group("loc")):
            continue
        loc, line, col = m.group("loc"), m.group("line"), m.group("col")
        if loc.isdigit() and line is not None and col is None:
            loc, line, col = "", loc, line  # Hermes: fn@line:col
        frames.append(Frame(index=len(frames), symbol=m.group("fn") or "<anonymous>",
                            module=basename(loc) if loc else None, file=loc or None,
                            line=parse_int(line), offset=parse_int(col)))
    return frames


def read_java(draft: Draft, lines: Sequence[str]) -> None:
    """Read a ``FATAL EXCEPTION`` block (prefixes stripped, starting at its first line).

    Sets ``kind`` to ``js`` for a React Native ``JavascriptException``, ``oom`` for
    ``java.lang.OutOfMemoryError``, else ``java``.
    """
    draft.set("signal", None)
    exc_seen = False
    message_lines: list[str] = []
    causes: list[str] = []
    in_top = True
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("FATAL EXCEPTION:"):
            draft.set("thread_name", stripped.partition(":")[2].strip() or None)
            continue
        if stripped.startswith("Process:") and not exc_seen:
            proc, _, pid = stripped[len("Process:"):].partition(", PID:")
            draft.set("process", proc.strip() or None)
            draft.set("pid", parse_int(pid))
            continue
        if not exc_seen:
            m = _JAVA_EXC.match(stripped)
            if m is not None:
                exc_seen = True
                draft.set("exception", m.group("type"))
                if m.group("msg"):
                    message_lines.append(m.group("msg"))
            continue
        if stripped.startswith("Caused by:"):
            in_top = False
            m = _JAVA_EXC.match(stripped)
            if m is not None:
                causes.append(m.group("type"))
            continue
        frame = _java_frame(len(draft.frames), line) if stripped.startswith("at ") else None
        if frame is not None:
            if in_top:
                draft.add_frame(frame)
            continue
        if in_top and not draft.frames and stripped:
            message_lines.append(stripped)
    if not exc_seen:
        draft.note("FATAL EXCEPTION block without an exception line (cut?)")
    if causes:
        draft.note("caused by: " + " <- ".join(causes))
    exception = draft.get("exception") or ""
    text = "\n".join(message_lines)
    if exception.endswith("JavascriptException"):
        draft.kind = "js"
        head, _, stack = text.partition(", stack:")
        head = head.split(", js engine:")[0]
        draft.set("message", head.strip() or None)
        js_type = re.match(r"^(\w*Error|\w*Exception)\b", head.strip())
        draft.set("code", js_type.group(1) if js_type else None)
        js_frames = _js_frames(stack.splitlines())
        if js_frames:
            # the JS stack is what identifies the error; the Java frames are RN plumbing
            draft.frames = js_frames
        else:
            draft.note("no JS stack in the JavascriptException message")
    else:
        draft.kind = "oom" if exception == "java.lang.OutOfMemoryError" else "java"
        draft.set("message", text.strip() or None)
    if exc_seen and not draft.frames and draft.kind != "js":
        draft.note("no 'at' frames after the exception (cut?)")


def read_anr_log(draft: Draft, lines: Sequence[str]) -> None:
    """Read an ``ANR in <pkg>`` block of the system log."""
    draft.kind = "anr"
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("ANR in "):
            draft.set("process", stripped[len("ANR in "):].split(" ")[0] or None)
        elif stripped.startswith("PID:"):
            draft.set("pid", parse_int(stripped[4:]))
        elif stripped.startswith(("Reason:", "Subject:")):
            draft.set("message", stripped.partition(":")[2].strip() or None)
    if draft.get("message") is None:
        draft.note("ANR without a Reason: line")


def read_anr_traces(draft: Draft, lines: Sequence[str]) -> None:
    """Read an ANR traces dump: the first process's ``"main"`` thread becomes the frames."""
    draft.kind = "anr"
    in_main = False
    seen_process = False
    for line in lines:
        stripped = line.strip()
        head = _TRACES_HEAD.match(stripped)
        if head is not None:
            if seen_process:
                break
            seen_process = True
            draft.set("pid", parse_int(head.group("pid")))
            draft.set("timestamp", head.group("time"))
            continue
        if stripped.startswith("Cmd line:"):
            draft.set("process", stripped.partition(":")[2].strip() or None)
            continue
        if stripped.startswith(("Subject:", "Reason:")):
            draft.set("message", stripped.partition(":")[2].strip() or None)
            continue
        th = _THREAD_HEAD.match(stripped)
        if th is not None:
            if in_main:
                break
            in_main = th.group("name") == "main"
            if in_main:
                draft.set("thread_name", "main")
            continue
        if not in_main:
            continue
        if stripped.startswith("| sysTid="):
            draft.set("tid", parse_int(stripped.split("=")[1].split(" ")[0]))
        elif stripped.startswith("at "):
            frame = _java_frame(len(draft.frames), stripped)
            if frame is not None:
                draft.add_frame(frame)
        elif stripped.startswith("native:"):
            frame, _ = parse_frame_line(stripped[len("native:"):])
            if frame is not None:
                draft.add_frame(Frame(index=len(draft.frames), module=frame.module,
                                      symbol=frame.symbol, offset=frame.offset, pc=frame.pc,
                                      build_id=frame.build_id, path=frame.path))
    if not in_main and not draft.frames:
        draft.note('no "main" thread in the ANR traces (cut?)')


def read_lmk(draft: Draft, msg: str) -> bool:
    """Read one lmkd / kernel lowmemorykiller kill line; ``False`` if it is not one."""
    m = _LMK.search(msg)
    if m is None:
        return False
    draft.kind = "oom"
    draft.set("process", m.group("proc") or None)
    draft.set("pid", parse_int(m.group("pid")))
    draft.set("signal", 9)
    draft.set("signal_name", "SIGKILL")
    draft.set("exception", "lmkd kill")
    rest = m.group("rest")
    reason = rest.partition("; reason: ")[2].strip()
    draft.set("message", reason or rest.strip(" ,") or None)
    return True


def _block(lines: Sequence[LogLine], start: int, same_tag: bool = True) -> list[str]:
    """Messages from ``start`` on that share its tag and pid (a logcat multi-line block)."""
    first = lines[start]
    out = [first.msg]
    for line in lines[start + 1:]:
        if same_tag and first.tag is not None:
            if line.tag is None:
                continue
            if line.tag != first.tag or (first.pid is not None and line.pid != first.pid):
                if line.tag == first.tag:
                    break
                continue
        out.append(line.msg)
    return out


def parse_android_log(draft: Draft, lines: Sequence[LogLine], raw: bool) -> None:
    """Find the death in logcat lines (prefixes stripped) and read it into ``draft``.

    Priority when a log holds several: a native crash, then a JS error, a Java exception, an
    ANR, a low-memory kill (the others are named in a note). ``raw`` means the prefixes were
    absent, so every line counts as tombstone text.
    """
    fatal_at = java_at = anr_at = traces_at = None
    lmk_at = None
    tomb: list[str] = []
    for i, line in enumerate(lines):
        msg = line.msg
        if raw or line.tag in TOMBSTONE_TAGS:
            tomb.append(msg)
        if fatal_at is None and "Fatal signal " in msg:
            fatal_at = i
        elif java_at is None and "FATAL EXCEPTION:" in msg:
            java_at = i
        elif anr_at is None and msg.lstrip().startswith("ANR in "):
            anr_at = i
        elif traces_at is None and _TRACES_HEAD.match(msg.strip()):
            traces_at = i
        elif lmk_at is None and ("lowmemorykiller" in (line.tag or "") or line.tag == "lmkd"
                                 or "lowmemorykiller" in msg) and _LMK.search(msg):
            lmk_at = i
    native = fatal_at is not None or looks_like_tombstone(tomb)
    found = [name for name, at in (("Java exception", java_at), ("ANR", anr_at),
                                   ("ANR traces", traces_at), ("low-memory kill", lmk_at))
             if at is not None]
    if native:
        draft.kind = "native"
        if fatal_at is not None:
            read_fatal_signal(draft, lines[fatal_at].msg)
        read_tombstone(draft, tomb)
        if fatal_at is not None and not any(t.strip() for t in tomb if "Fatal signal" not in t):
            draft.note("only the 'Fatal signal' line: no tombstone lines (log cut?)")
        others = found
    elif java_at is not None:
        read_java(draft, _block(lines, java_at))
        others = found[1:]
    elif anr_at is not None:
        read_anr_log(draft, _block(lines, anr_at))
        if traces_at is not None:
            read_anr_traces(draft, [ln.msg for ln in lines[traces_at:]])
        others = [f for f in found if not f.startswith("ANR")]
    elif traces_at is not None:
        read_anr_traces(draft, [ln.msg for ln in lines[traces_at:]])
        others = [f for f in found if not f.startswith("ANR")]
    elif lmk_at is not None:
        read_lmk(draft, lines[lmk_at].msg)
        others = []
    else:
        draft.note("no crash found: no tombstone, Fatal signal, FATAL EXCEPTION, ANR or "
                   "low-memory kill lines")
        return
    if others:
        draft.note("the log also holds: " + ", ".join(others) + " (not used)")


_AM_HEADERS = ("Process", "PID", "UID", "Flags", "Package", "Foreground", "Build",
               "Loading-Progress", "Dropped-Count", "Process-Runtime", "Subject", "Activity",
               "Parent-Process", "Parent-Activity", "Crash-Handler", "Hardware", "Revision",
               "Bootloader", "Radio", "Kernel", "Boot", "Headers")


def parse_dropbox(draft: Draft, text: str) -> None:
    """Read ``dumpsys dropbox --print`` output: the newest entry that holds a crash.

    Sets ``draft.format`` to ``dropbox-<tag>``. Entries are printed oldest first; when there
    are several, the last crash entry is used and the count is noted.
    """
    entries: list[tuple[str, str, list[str]]] = []
    current: list[str] | None = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^={20,}\s*$", line) and i + 1 < len(lines):
            head = _DROPBOX_HEAD.match(lines[i + 1].strip())
            if head is not None:
                current = []
                entries.append((head.group("tag"), head.group("time"), current))
                i += 2
                continue
        if current is not None:
            current.append(line)
        i += 1
    crash_entries = [e for e in entries if e[0] not in ("(no", "(contents")]
    if not crash_entries:
        draft.note("DropBox output without entries")
        return
    tag, time, body = crash_entries[-1]
    if len(crash_entries) > 1:
        draft.note(f"{len(crash_entries)} DropBox entries; read the newest ({tag} at {time})")
    draft.format = f"dropbox-{tag}"
    draft.set("timestamp", time)
    content: list[str] = []
    for line in body:
        key, sep, value = line.partition(": ")
        if sep and key in _AM_HEADERS and not content:
            if key == "Process":
                draft.set("process", value.strip() or None)
            elif key == "PID":
                draft.set("pid", parse_int(value))
            elif key == "Subject":
                draft.set("message", value.strip() or None)
            continue
        content.append(line)
    if "anr" in tag.lower():
        read_anr_log(draft, content)
        read_anr_traces(draft, content)
    elif not looks_like_tombstone(content) and any(
            _JAVA_EXC.match(ln.strip()) for ln in content[:8]):
        read_java(draft, content)  # data_app_crash: a bare Java stack trace
    else:
        parse_android_log(draft, [LogLine(msg=line) for line in content], raw=True)
