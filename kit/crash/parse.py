"""``parse_text``: detect which crash report a text is and read it into a CrashRecord.

Detection order (first that fits; ``hint`` skips it):

1. ``{`` first: Apple ``.ips`` / JetsamEvent JSON (:mod:`kit.crash.apple`);
2. ``ApplicationExitInfo #N``: ``dumpsys activity exit-info`` (the newest entry);
3. a line of ``=`` plus ``YYYY-MM-DD HH:MM:SS <tag> (`` or ``Drop box contents:``: DropBox;
4. ``Exception Type:`` with a crashed thread: legacy Apple ``.crash`` text;
5. ``* thread #N ... stop reason =``: lldb;
6. Android text (any logcat prefix, or none): tombstone, ``Fatal signal``, FATAL EXCEPTION,
   JavascriptException, ANR, lmkd (:mod:`kit.crash.android`);
7. a glibc ``backtrace_symbols`` / gdb backtrace: host (:mod:`kit.crash.host`);
8. otherwise a record of format ``unknown`` saying so.
"""

from __future__ import annotations

import re

from ._draft import Draft
from ._text import decode, signal_name, split_logcat
from .android import parse_android_log, parse_dropbox
from .apple import looks_like_crash_text, parse_ips, read_crash_text, read_lldb
from .exitinfo import ExitReason, parse_exit_info
from .host import looks_like_host_backtrace, read_host_output
from .record import CrashRecord

__all__ = ["parse_text", "HINTS"]

#: Values accepted for ``hint`` (a format family).
HINTS = ("android", "tombstone", "logcat", "dropbox", "exit-info", "ips", "jetsam",
         "crash-text", "lldb", "host")

_DROPBOX = re.compile(r"^(?:={20,}\s*\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \(|Drop box contents:)",
                      re.M)
_LLDB = re.compile(r"^\s*\* thread #\d+.*stop reason = ", re.M)
_CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGTRAP", "SIGSYS")
_EXIT_INFO = re.compile(r"^\s*ApplicationExitInfo #\d+", re.M)


def parse_text(text: str | bytes, hint: str | None = None) -> CrashRecord:
    """Detect the format of a crash report and read it.

    Args:
        text: the report, as text or bytes (bytes are decoded as UTF-8, bad bytes replaced).
        hint: a format family from :data:`HINTS` to skip detection (``ips``, ``host``...);
            an unknown hint is noted and ignored.

    Returns:
        A :class:`CrashRecord`. A report that is cut, garbled, not valid JSON or of no known
        format still gives a record: what could be read, and in ``notes`` why the rest
        could not (``format`` is ``unknown`` when nothing fit). Never raises.
    """
    try:
        return _parse(text, hint)
    except Exception as exc:  # noqa: BLE001 - parsers never raise; the note says what broke
        return CrashRecord(platform="unknown", source="unknown", format="unknown",
                           notes=(f"internal parser error: {type(exc).__name__}: {exc}",))


def _detect(text: str) -> str | None:
    head = text.lstrip()[:1]
    if head == "{":
        return "ips"
    if _EXIT_INFO.search(text):
        return "exit-info"
    if _DROPBOX.search(text):
        return "dropbox"
    if looks_like_crash_text(text):
        return "crash-text"
    if _LLDB.search(text):
        return "lldb"
    return None


def _parse(text: str | bytes, hint: str | None) -> CrashRecord:
    text, notes = decode(text)
    family = None
    if hint is not None:
        if hint in HINTS:
            family = hint
        else:
            notes.append(f"unknown hint {hint!r} ignored (known: {', '.join(HINTS)})")
    if not text.strip():
        return CrashRecord(platform="unknown", source="unknown", format="unknown",
                           notes=tuple(notes + ["empty input"]))
    family = family or _detect(text)
    if family in ("ips", "jetsam"):
        draft = Draft(platform="ios", source="ips", format="ips", notes=notes)
        parse_ips(draft, text)
    elif family == "exit-info":
        return _from_exit_info(text, notes)
    elif family == "dropbox":
        draft = Draft(platform="android", source="dropbox", format="dropbox", notes=notes)
        parse_dropbox(draft, text)
    elif family == "crash-text":
        draft = Draft(platform="ios", source="crash-text", format="crash-text", notes=notes)
        read_crash_text(draft, text.split("\n"))
    elif family == "lldb":
        draft = Draft(platform="ios", source="lldb", format="lldb", notes=notes)
        read_lldb(draft, text.split("\n"))
    elif family == "host":
        draft = Draft(platform="linux", source="host-signal", format="host-backtrace",
                      notes=notes)
        read_host_output(draft, text.split("\n"))
    else:
        draft = _parse_android_or_host(text, notes, forced=family is not None)
    return draft.build()


def _parse_android_or_host(text: str, notes: list[str], forced: bool) -> Draft:
    lines = text.split("\n")
    style, loglines = split_logcat(lines)
    raw = style == "raw"
    draft = Draft(platform="android", source="logcat", format="unknown", notes=notes)
    parse_android_log(draft, loglines, raw=raw)
    if draft.kind == "unknown" and not forced and looks_like_host_backtrace(lines):
        host = Draft(platform="linux", source="host-signal", format="host-backtrace",
                     notes=list(notes))
        read_host_output(host, lines)
        return host
    if draft.kind == "unknown":
        if not forced:
            draft.platform = "unknown"
            draft.source = "unknown"
        draft.format = "unknown"
        draft.note("no known crash report format found")
        return draft
    crash_buffer = "--------- beginning of crash" in text
    has_fatal = draft.kind == "native" and any("Fatal signal " in ln.msg for ln in loglines)
    if draft.kind == "native":
        if raw and not has_fatal:
            reporter = draft.get("pid") is None and "pid: 0," in text
            reporter = reporter or (re.search(r"#\d+\s+pc 0x", text) is not None
                                    and "Build fingerprint" not in text)
            draft.source = "crash-reporter" if reporter else "tombstone"
            draft.format = "tombstone-reporter" if reporter else "tombstone"
        else:
            draft.source = "logcat-crash" if (crash_buffer or has_fatal) else "logcat"
            draft.format = f"tombstone-logcat-{style}"
    else:
        draft.source = "logcat-crash" if crash_buffer else "logcat"
        label = {"java": "java-fatal", "oom": "java-fatal", "js": "js-fatal", "anr": "anr"}
        name = label.get(draft.kind, draft.kind)
        if draft.get("exception") == "lmkd kill":
            name = "lmkd"
        elif draft.kind == "anr" and draft.get("thread_name") == "main" and raw:
            name = "anr-traces"
        draft.format = f"{name}-{style}" if not raw else name
    return draft


def _from_exit_info(text: str, notes: list[str]) -> CrashRecord:
    entries = parse_exit_info(text)
    draft = Draft(platform="android", source="exit-info", format="exit-info", notes=notes)
    if not entries:
        draft.format = "unknown"
        draft.note("exit-info text without a readable ApplicationExitInfo entry")
        return draft.build()
    entry = entries[0]
    if len(entries) > 1:
        draft.note(f"{len(entries)} exit-info entries; read #0, the newest")
    for note in entry.notes:
        draft.note(note)
    draft.set("pid", entry.pid)
    draft.set("process", entry.process)
    draft.set("timestamp", entry.timestamp)
    draft.set("message", entry.description)
    draft.set("exception", f"exit-info {entry.reason_text or entry.reason}")
    reason = entry.reason_enum
    if reason in (ExitReason.CRASH_NATIVE, ExitReason.SIGNALED) and entry.status:
        draft.set("signal", entry.status)
        draft.set("signal_name", signal_name(entry.status))
    draft.kind = {ExitReason.CRASH_NATIVE: "native", ExitReason.CRASH: "java",
                  ExitReason.ANR: "anr", ExitReason.LOW_MEMORY: "oom"}.get(
                      reason, "unknown")  # type: ignore[arg-type]
    if reason is ExitReason.SIGNALED and draft.get("signal_name") in _CRASH_SIGNALS:
        draft.kind = "native"
    draft.note("exit-info has no stack: read the tombstone or logcat for frames")
    if draft.kind == "unknown":
        draft.note(f"exit reason {entry.reason_text or entry.reason} is not a crash")
    return draft.build()
