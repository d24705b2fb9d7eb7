"""Android deaths that are not (only) a tombstone, and the logcat / DropBox wrappers.

Sources (docs/formats.md sections 1 and 3):

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

import dataclasses
import re
from typing import Sequence

from . import console
from ._draft import Draft
from ._java import JAVA_FRAME_HINT, java_frame, join_wrapped_at, js_stack
from ._text import LogLine, parse_int
from .record import Frame
from .tombstone import (FRAME_LINE, TOMBSTONE_TAGS, demangle_frames, looks_like_tombstone,
                        parse_frame_line, read_fatal_signal, read_tombstone, tombstone_tags)

__all__ = ["read_java", "read_anr_log", "read_anr_traces", "read_lmk", "parse_android_log",
           "parse_dropbox", "TOMBSTONE_TAGS"]

# "Caused by: x.Y: msg" (Crashlytics drops the colon: "Caused by x.Y: msg")
_JAVA_EXC = re.compile(r"^\s*(?:Caused by:? )?(?P<type>[A-Za-z_$][\w$]*(?:\.[\w$]+)+)"
                       r"(?::\s?(?P<msg>.*))?$")
# "Kill 'pkg' (pid), uid ..., to free ...kB rss"; Samsung's lmkd says "Reclaim" for the same kill
# (ActivityManager then logs "Process pkg (pid N) has died")
_LMK = re.compile(r"(?P<verb>Kill(?:ing)?|Reclaim) '(?P<proc>[^']*)' \((?P<pid>\d+)\)(?P<rest>.*)$")
_TRACES_HEAD = re.compile(r"^----- pid (?P<pid>\d+) at (?P<time>.*?) -----\s*$")
#: where an ANR traces dump (or a piece of one) starts: its pid block, its thread list
_TRACES_START = re.compile(r'^(?:----- pid \d+ at .* -----|DALVIK THREADS\b.*|suspend all '
                           r'histogram:.*|"main" prio=\d+ tid=1\b.*)\s*$')
# the main thread's header in a thread dump: ART's '"main" prio=5 tid=1 Native', and Play
# Console's shorter '"main" tid=1 Native' (no priority); a crash report has neither
_MAIN_THREAD = re.compile(r'^\s*"main" (?:prio=\d+ )?tid=1 [A-Z][A-Za-z]*\b')
_THREAD_HEAD = re.compile(r'^"(?P<name>[^"]*)"(?P<rest>.*)$')
_DROPBOX_HEAD = re.compile(r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<tag>\S+)"
                           r"(?: \((?P<what>.*)\))?\s*$")
_JS_MESSAGE = re.compile(r"^(?:\w*Error|Invariant Violation|Unhandled JS Exception)\b")
#: an older React Native's JS error (``devsupport.JSException``) or a JavascriptException
#: as the message of the exception that wraps it (``java.lang.RuntimeException: ...``)
_JS_WRAPPED = re.compile(r"^(?P<type>(?:[a-z][\w$]*\.)+(?:JSException|JavascriptException)):\s*")
_WATCHDOG_THREAD = re.compile(r"^(?P<name>\S+) \(state = \w+\)")


def read_java(draft: Draft, lines: Sequence[str]) -> None:
    """Read a ``FATAL EXCEPTION`` block (prefixes stripped, starting at its first line).

    Sets ``kind`` to ``js`` for a React Native JS error (a ``JavascriptException``, or an
    exception class renamed by R8/ProGuard whose message is a JS error with its ``, stack:``
    or ``js engine:``), ``anr`` for ANR-WatchDog's ``ANRError`` (its first cause holds the
    main thread's stack), ``oom`` for ``java.lang.OutOfMemoryError``, else ``java``.
    """
    draft.set("signal", None)
    exc_seen = False
    message_lines: list[str] = []
    causes: list[str] = []
    cause_frames: list[Frame] = []
    cause_messages: list[str] = []
    in_top = True
    root_frames: list[Frame] = []
    for line in join_wrapped_at(lines):
        stripped = line.strip()
        if stripped.startswith("FATAL EXCEPTION:"):
            draft.set("thread_name", stripped.partition(":")[2].strip() or None)
            continue
        if stripped.startswith("Process:") and not exc_seen:
            proc, _, pid = stripped[len("Process:"):].partition(", PID:")
            draft.set("process", proc.strip() or None)
            draft.set("pid", parse_int(pid))
            continue
        if stripped.startswith("PID:") and not exc_seen:  # Android 4's block: no Process
            draft.set("pid", parse_int(stripped[len("PID:"):]))
            continue
        if not exc_seen:
            m = _JAVA_EXC.match(stripped)
            if m is not None:
                exc_seen = True
                draft.set("exception", m.group("type"))
                if m.group("msg"):
                    message_lines.append(m.group("msg"))
                continue
            if not (JAVA_FRAME_HINT.match(line) and java_frame(0, line)):
                continue
            # a stack pasted from its frames on: the outer exception's line is not there
            exc_seen = True
            draft.note("the stack starts at its frames: the outer exception's line is not "
                       "in the paste")
        if stripped.startswith(("Caused by:", "Caused by ")):
            in_top = False
            m = _JAVA_EXC.match(stripped)
            if m is not None:
                causes.append(m.group("type"))
                cause_messages.append(m.group("msg") or "")
                root_frames = []
            continue
        frame = java_frame(len(draft.frames), line) if JAVA_FRAME_HINT.match(line) else None
        if frame is not None:
            if in_top:
                draft.add_frame(frame)
            else:
                if len(causes) == 1:
                    cause_frames.append(dataclasses.replace(frame, index=len(cause_frames)))
                root_frames.append(dataclasses.replace(frame, index=len(root_frames)))
            continue
        if in_top and not draft.frames and stripped:
            message_lines.append(stripped)
    if not exc_seen:
        draft.note("FATAL EXCEPTION block without an exception line (cut?)")
    if causes:
        draft.note("caused by: " + " <- ".join(causes))
    exception = draft.get("exception") or ""
    text = "\n".join(message_lines)
    wrapped = _JS_WRAPPED.match(text)
    if wrapped is not None and not exception.endswith("JavascriptException"):
        draft.note(f"{exception} wraps a {wrapped.group('type')}: a React Native JS error")
        exception, text = wrapped.group("type"), text[wrapped.end():]
    if exception.endswith(("JavascriptException", "JSException")) or (
            _JS_MESSAGE.match(text.strip()) and (", stack:" in text or "js engine:" in text)):
        _read_js_exception(draft, exception, text)
    elif exception.endswith("ANRError"):
        draft.kind = "anr"
        draft.set("message", text.strip() or None)
        if cause_frames:
            draft.frames = cause_frames
            thread = _WATCHDOG_THREAD.match(cause_messages[0])
            if thread is not None:
                draft.set("thread_name", thread.group("name"), override=True)
            draft.note("ANR-WatchDog report: the frames are its first cause's (the main "
                       "thread)")
    else:
        draft.kind = "oom" if exception == "java.lang.OutOfMemoryError" else "java"
        draft.set("message", text.strip() or None)
    if exc_seen and not draft.frames and draft.kind not in ("js", "anr"):
        draft.note("no 'at' frames after the exception (cut?)")
    if causes and draft.kind in ("java", "oom"):
        # the root cause: the last 'Caused by:' (ANR-WatchDog's causes are thread dumps)
        message = cause_messages[-1].strip()
        draft.set("root_cause", f"{causes[-1]}: {message}" if message else causes[-1])
        draft.cause_frames = root_frames


def _read_js_exception(draft: Draft, exception: str, text: str) -> None:
    draft.kind = "js"
    if not exception.endswith(("JavascriptException", "JSException")):
        draft.note(f"exception class {exception} is not JavascriptException (renamed by R8/"
                   "ProGuard?), but its message is a React Native JS error")
    head, _, stack = text.partition(", stack:")
    if not stack and "This error is located at:" in head:
        head, _, stack = head.partition("This error is located at:")
    head = head.split(", js engine:")[0]
    draft.set("message", head.strip() or None)
    js_type = re.match(r"^(\w*Error|\w*Exception)\b", head.strip())
    draft.set("code", js_type.group(1) if js_type else None)
    frames = js_stack(stack.splitlines())
    if frames:
        # the JS stack is what identifies the error; the Java frames are RN plumbing
        draft.frames = frames
    else:
        draft.note("no JS stack in the JavascriptException message")


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
            frame = java_frame(len(draft.frames), stripped)
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


# ART's abort dump, every line under the app's own tag: "runtime.cc:630]   native: #02 pc ...",
# "java_vm_ext.cc:577] JNI DETECTED ERROR IN APPLICATION: ...",
# "runtime.cc:630] Runtime aborting..."
_ART_LINE = re.compile(r"^\s*(?P<src>[\w./-]+\.cc):\d+\]\s?(?P<rest>.*)$")
_ART_CAUSE = re.compile(r"^\s*(?:JNI DETECTED ERROR IN APPLICATION: .*|Check failed: .*|"
                        r"\w[^:]* failed: .*)$")


def read_art_abort(draft: Draft, lines: Sequence[LogLine]) -> bool:
    """ART's abort dump (``Runtime::Abort``: a JNI check, a failed ``CHECK``) without the
    tombstone that follows it: the cause line as the abort message, the pid and tid of its
    logcat prefix, and the first run of ``native: #NN pc`` frames (the aborting thread's).
    ``False`` if there is none."""
    frames: list[Frame] = []
    ended = False
    for line in lines:
        msg = line.msg
        m = _ART_LINE.match(msg) if "] " in msg or msg.rstrip().endswith("]") else None
        if m is None or line.level not in (None, "F", "A"):  # ART logs its abort as fatal
            continue
        draft.set("pid", line.pid)
        draft.set("tid", line.tid)
        rest = m.group("rest").strip()
        if draft.get("abort_message") is None and _ART_CAUSE.match(rest):
            draft.set("abort_message", rest)
        if rest.startswith("native: #") and not ended:
            frame, note = parse_frame_line(rest[len("native: "):])
            if frame is not None:
                frames.append(frame)
                if note:
                    draft.note(note)
        elif frames:
            ended = True
    if not frames and draft.get("abort_message") is None:
        return False
    draft.kind = "native"
    for frame in frames:
        draft.add_frame(frame)
    demangle_frames(draft)
    draft.note("ART's abort dump (Runtime::Abort) without its tombstone: no signal line; "
               "the frames are the first thread's in the dump")
    return True


def _lmk_kill(msg: str) -> re.Match[str] | None:
    m = _LMK.search(msg)
    if m is None or (m.group("verb") == "Reclaim" and "to free" not in m.group("rest")):
        return None
    return m


def read_lmk(draft: Draft, msg: str) -> bool:
    """Read one lmkd / kernel lowmemorykiller kill line; ``False`` if it is not one."""
    m = _lmk_kill(msg)
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
    """Messages from ``start`` on that share its tag and pid (a logcat multi-line block),
    with the indented unprefixed lines that continue one of them (Android Studio prints a
    multi-line message's later lines so)."""
    first = lines[start]
    out = [first.msg]
    continues = True
    for line in lines[start + 1:]:
        if same_tag and first.tag is not None:
            if line.tag is None:
                if continues and line.msg[:1] in (" ", "\t") and line.msg.strip():
                    out.append(line.msg)
                else:
                    continues = False
                continue
            if line.tag != first.tag or (first.pid is not None and line.pid != first.pid):
                continues = False
                if line.tag == first.tag:
                    break
                continue
            continues = True
        out.append(line.msg)
    return out


def parse_android_log(draft: Draft, lines: Sequence[LogLine], raw: bool) -> None:
    """Find the death in logcat lines (prefixes stripped) and read it into ``draft``.

    Priority when a log holds several: a native crash (a tombstone, a ``Fatal signal``
    line, or a crash console's signal headline), then a Java/JS exception (logcat or a
    console export), an ANR (system log, traces dump, or a console's ANR summary), a
    low-memory kill (the others are named in a note). ``raw`` means the prefixes were
    absent, so every line counts as tombstone text. Shapes that come from a crash console
    set ``draft.format`` (``crash-console``, ``anr-summary``, ``anr-stack``,
    ``<kind>-console``, ``js-terminal``).
    """
    fatal_at = java_at = anr_at = traces_at = None
    lmk_at = None
    tags = tombstone_tags(lines)
    tomb: list[str] = []
    in_tomb = False
    for i, line in enumerate(lines):
        msg = line.msg
        if raw or line.tag in tags:
            tomb.append(msg)
            in_tomb = True
        elif in_tomb and line.tag is None and msg[:1] in (" ", "\t") and msg.strip():
            # a continuation line of a multi-line DEBUG message: Android Studio prints it
            # indented, without the prefix (an abort message's closing quote)
            tomb.append(msg)
        else:
            in_tomb = False
        if fatal_at is None and "Fatal signal " in msg:
            fatal_at = i
        elif java_at is None and "FATAL EXCEPTION:" in msg:
            java_at = i
        elif anr_at is None and "ANR in " in msg and msg.lstrip().startswith("ANR in "):
            anr_at = i
        elif traces_at is None and ("-----" in msg or "THREADS" in msg or "histogram" in msg
                                    or "prio=" in msg) and _TRACES_START.match(msg.strip()):
            traces_at = i
        elif lmk_at is None and ("lowmemorykiller" in (line.tag or "") or line.tag == "lmkd"
                                 or "lowmemorykiller" in msg) and _lmk_kill(msg):
            lmk_at = i
    msgs = [ln.msg for ln in lines]
    headline = console.read_headline_signal(Draft(platform="", source=""), msgs)
    # under a tombstone tag one frame is enough (a paste cut to its crashing frame)
    native = fatal_at is not None or looks_like_tombstone(tomb) or headline is not None or (
        not raw and any(FRAME_LINE.match(t) for t in tomb))
    found = [name for name, at in (("Java exception", java_at), ("ANR", anr_at),
                                   ("ANR traces", traces_at), ("low-memory kill", lmk_at))
             if at is not None]
    others = found
    exc_at = summary_at = bare_at = None
    if not native and java_at is None:
        exc_at = console.find_console_exception(msgs)
        if exc_at is None and anr_at is None and traces_at is None:
            summary_at = console.find_anr_summary(msgs)
        if exc_at is None and summary_at is None and anr_at is None and traces_at is None \
                and lmk_at is None:
            bare_at = console.find_bare_exception(msgs)
    if native:
        _read_native(draft, lines, tomb, fatal_at, headline, msgs)
    elif java_at is not None:
        read_java(draft, _block(lines, java_at))
        others = found[1:]
    elif exc_at is not None:
        block = console.console_exception_block(msgs, exc_at)
        if block is None:
            console.read_js_terminal(draft, msgs, exc_at)
            draft.format = "js-terminal"
        else:
            read_java(draft, block)
            draft.format = {"js": "js-fatal", "anr": "anr", "oom": "java-fatal"}.get(
                draft.kind, "java-fatal") + "-console"
    elif bare_at is not None:
        read_java(draft, msgs[bare_at:])
        draft.format = {"js": "js-fatal", "anr": "anr", "oom": "java-fatal"}.get(
            draft.kind, "java-fatal") + "-stack"
        draft.note("a bare stack trace: no FATAL EXCEPTION block or crash-console headline")
    elif anr_at is not None:
        read_anr_log(draft, _block(lines, anr_at))
        if traces_at is not None:
            read_anr_traces(draft, msgs[traces_at:])
        others = [f for f in found if not f.startswith("ANR")]
    elif traces_at is not None:
        read_anr_traces(draft, msgs[traces_at:])
        if draft.get("message") is None:
            # a console's copy: the ANR's reason on a line above the thread dump
            reason = next((m.strip() for m in msgs[:traces_at][:console.HEADLINE_LINES]
                           if console.ANR_REASON.search(m)), None)
            draft.set("message", reason)
        others = [f for f in found if not f.startswith("ANR")]
    elif summary_at is not None:
        console.read_anr_summary(draft, msgs, summary_at)
        draft.format = "anr-summary"
        others = [f for f in found if not f.startswith("ANR")]
    elif lmk_at is not None:
        read_lmk(draft, lines[lmk_at].msg)
        others = []
    elif (js_at := console.looks_like_js_headline(msgs)) is not None:
        console.read_js_terminal(draft, msgs, js_at)
        draft.format = "js-terminal"
    elif read_art_abort(draft, lines):
        draft.format = "art-abort"
    else:
        draft.note("no crash found: no tombstone, Fatal signal, FATAL EXCEPTION, ANR or "
                   "low-memory kill lines")
        return
    if others:
        draft.note("the log also holds: " + ", ".join(others) + " (not used)")


def _read_native(draft: Draft, lines: Sequence[LogLine], tomb: list[str], fatal_at: int | None,
                 headline: int | None, msgs: list[str]) -> None:
    draft.kind = "native"
    if fatal_at is not None:
        column = lines[fatal_at].process
        if column and _PACKAGE.match(column):
            # Android Studio's process column names the process whole; the 'Fatal signal'
            # line's own name is its last 15 characters (a tombstone's pid line wins later)
            draft.short_process = column
        read_fatal_signal(draft, lines[fatal_at].msg)
        # libc logs the line from the crashing process: its prefix's pid is that process's
        # (Android 4's line names no pid; a tombstone's pid line wins later)
        draft.set("pid", lines[fatal_at].pid)
    if headline is not None and fatal_at is None:
        console.read_headline_signal(draft, msgs)
        draft.format = "crash-console"
    read_tombstone(draft, tomb)
    if fatal_at is not None and draft.get("abort_message") is None and \
            draft.get("signal_name") == "SIGABRT":
        _abort_from_cxx_runtime(draft, lines, fatal_at)
    if headline is not None and not draft.frames:
        console.read_headline_frames(draft, msgs, headline)
    if fatal_at is not None and not any(t.strip() for t in tomb if "Fatal signal" not in t):
        draft.note("only the 'Fatal signal' line: no tombstone lines (log cut?)")
    if draft.get("signal") is None and headline is None and "no tombstone header (star line / " \
            "pid line): frames only" in draft.notes:
        _thread_dump_as_anr(draft, msgs)


# a package name ("com.example.app", with a ":service" suffix for a process of its own), not
# Studio's "pid-1234" or "?" for a process it did not know
_PACKAGE = re.compile(r"^[A-Za-z][\w]*(?:\.[A-Za-z_][\w]*)+(?::[\w.]+)?$")
# libc++abi's last words (abort_message.cpp): "terminating due to uncaught exception of type
# T: what" (LLVM 15+) or "terminating with uncaught exception of type T: what"; the bare
# "terminating" says nothing of the cause
_CXX_TERMINATING = re.compile(r"^(?:libc\+\+abi(?:\.dylib)?: )?terminating (?:due to|with) "
                              r"uncaught exception\b")


def _abort_from_cxx_runtime(draft: Draft, lines: Sequence[LogLine], fatal_at: int) -> None:
    """An abort with no ``Abort message:`` line: libc++abi's ``terminating due to uncaught
    exception of type T: what``, logged by the same process just above ``Fatal signal 6``
    (Android Studio's logcat shows it under the tag ``libc++abi``), is its message."""
    pid = lines[fatal_at].pid
    for line in reversed(lines[max(0, fatal_at - 20):fatal_at]):
        if pid is not None and line.pid is not None and line.pid != pid:
            continue
        msg = line.msg.strip()
        if (line.tag == "libc++abi" or msg.startswith("libc++abi")) and \
                _CXX_TERMINATING.match(msg):
            draft.set("abort_message", msg)
            draft.note("the abort message is libc++abi's line above 'Fatal signal 6'")
            return


def _thread_dump_as_anr(draft: Draft, msgs: Sequence[str]) -> None:
    """A thread's stack with native frames followed by Java frames and no signal is not a
    crash report: it is how Play Console exports an ANR (the main thread's stack)."""
    after = [m for m in msgs if not FRAME_LINE.match(m)]
    java = [f for f in (java_frame(0, m) for m in after if JAVA_FRAME_HINT.match(m)) if f]
    main = next((m for m in after[:200] if _MAIN_THREAD.match(m)), None)
    if not java and main is None:
        return
    draft.kind = "anr"
    draft.format = "anr-stack"
    for frame in java:
        draft.add_frame(Frame(**{**frame.__dict__, "index": len(draft.frames)}))
    draft.notes.remove("no signal line")
    if java:
        draft.note("native frames then Java frames and no signal: a thread dump (Play "
                   "Console ANR export), read as an ANR")
    else:
        draft.set("thread_name", "main")
        draft.note(f"the main thread's header ({(main or '').strip()[:40]!r}) over native "
                   "frames and "
                   "no signal: a thread dump (Play Console ANR export), read as an ANR")


#: a header of ActivityManagerService.addErrorToDropBox (``Frozen``, ``Installer``,
#: ``Crash-Tag``... come and go between releases; a stack's first line never looks so)
_HEADER_KEY = re.compile(r"^[A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)*$")
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
    in_head = True  # the header block: ``Key: value`` lines up to the first blank line
    for line in body:
        key, sep, value = line.partition(": ")
        if in_head and not (sep and (key in _AM_HEADERS or _HEADER_KEY.match(key))):
            in_head = False  # a header this list does not know (Frozen, Installer) stays
        if in_head:
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
        parse_android_log(draft, [LogLine.bare(line) for line in content], raw=True)
