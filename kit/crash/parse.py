"""``parse_text``: detect which crash report a text is and read it into a CrashRecord.

Paste marks are removed first (:mod:`kit.crash._paste`). Detection order (first that
fits; ``hint`` skips it); :func:`detect_family` returns the family and why:

1. ``{`` first: Apple ``.ips`` / JetsamEvent JSON, or a lone JetsamEvent process entry
   (:mod:`kit.crash.apple`);
2. ``.ips`` keys (``imageOffset``, ``procName``, ``exception`` ...) without the leading
   ``{``: a piece of an ``.ips`` body (:mod:`kit.crash.ips_salvage`);
3. ``ApplicationExitInfo #N``: ``dumpsys activity exit-info`` (the newest entry);
4. a line of ``=`` plus ``YYYY-MM-DD HH:MM:SS <tag> (`` or ``Drop box contents:``: DropBox;
   Breakpad / Crashpad ``minidump_stackwalk`` text (``Crash reason:``, ``Thread N
   (crashed)``): :mod:`kit.crash.minidump`;
   a Java HotSpot fatal error log (``# A fatal error has been detected by the Java Runtime
   Environment``, ``# Problematic frame:``, ``C  [lib+0x..]`` frames): :mod:`kit.crash.hotspot`;
   a Mono / Xamarin native crash report (``Got a SIGSEGV while executing native code``,
   ``Native stacktrace:``): :mod:`kit.crash.mono`;
5. a sanitizer's report (ASan, HWASan, TSan, MSan, LSan, UBSan; a piece of one):
   :mod:`kit.crash.sanitizer`; Valgrind's output (``==PID==`` lines of Memcheck, Helgrind,
   DRD): :mod:`kit.crash.valgrind`; Sentry's issue view of an Apple crash
   (``EXC_...: Exception N, Code N, Subcode N`` and frame rows): :mod:`kit.crash.sentry`;
6. legacy Apple ``.crash`` text or a piece of it (``Exception Type:``, ``Termination
   Reason:``, ``Thread N Crashed:``, Apple frame lines ...);
7. ``* thread #N ... stop reason =`` or ``frame #N: 0x`` lines: lldb; ``Thread N Queue :`` /
   ``#N<TAB>0x... in``: Xcode's debug navigator (:mod:`kit.crash.debugger`);
8. Python's faulthandler output (``Fatal Python error:`` anywhere on a line, ``Current thread
   0x... (most recent call first):``): :mod:`kit.crash.faulthandler`;
   GrapheneOS's crash notification (``type: crash``, ``signal: N (SIG...)``):
   :mod:`kit.crash.grapheneos`; other Android text (any logcat prefix, or none): tombstone,
   ``Fatal signal``, FATAL EXCEPTION, JavascriptException, a bare stack trace, ANR, lmkd,
   crash-console exports (:mod:`kit.crash.android`, :mod:`kit.crash.console`);
9. a glibc ``backtrace_symbols`` / gdb backtrace: host (:mod:`kit.crash.host`); an IDE's
   frame list; a console's frames table as rows of index, library and symbol
   (:mod:`kit.crash.console`); console lines of an abort (``libc++abi: terminating``, ``malloc: ***``,
   ``terminated by signal SIGABRT``);
10. otherwise a record of format ``unknown`` saying so.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from ._draft import Draft
from ._paste import tidy_paste
from ._text import decode, signal_name, signal_number, split_logcat
from .android import parse_android_log, parse_dropbox
from .apple import crash_text_marks, parse_ips, read_crash_text
from .bugsnag import looks_like_bugsnag, read_bugsnag
from .console import looks_like_frame_rows, read_frame_rows
from .debugger import (looks_like_ide_frames, looks_like_xcode_threads, read_ide_frames, read_lldb,
                       read_xcode_threads)
from .exitinfo import ExitReason, parse_exit_info
from .faulthandler import looks_like_faulthandler, read_faulthandler
from .grapheneos import looks_like_grapheneos, read_grapheneos
from .hotspot import looks_like_hotspot, read_hotspot
from .host import looks_like_console_abort, looks_like_host_backtrace, read_host_output
from .minidump import looks_like_minidump, read_minidump
from .mono import looks_like_mono, read_mono
from .ips_salvage import looks_like_ips_fragment, parse_ips_fragment
from .record import CrashRecord
from .sanitizer import looks_like_sanitizer, read_sanitizer
from .sentry import looks_like_sentry_apple, read_sentry_apple
from .valgrind import looks_like_valgrind, read_valgrind

__all__ = ["parse_text", "detect_family", "reader_name", "HINTS"]

#: Values accepted for ``hint`` (a format family).
HINTS = ("android", "tombstone", "logcat", "dropbox", "exit-info", "ips", "jetsam",
         "crash-text", "lldb", "host", "ips-partial", "sanitizer", "xcode", "ide-frames",
         "frame-rows", "console", "grapheneos", "valgrind", "hotspot", "mono", "faulthandler",
         "minidump", "sentry")

_DROPBOX = re.compile(r"^(?:={20,}\s*\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \(|Drop box contents:)",
                      re.M)
_LLDB = re.compile(r"^\s*\*?\s*thread #\d+.*stop reason = |^\s*\*?\s*frame #\d+: 0x[0-9a-fA-F]+.*\n"
                   r"\s*\*?\s*frame #\d+: 0x", re.M)
_CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGTRAP", "SIGSYS")
_EXIT_INFO = re.compile(r"^\s*ApplicationExitInfo #\d+", re.M)
_RUST_PANIC = re.compile(r"^thread '(?P<thread>[^'\n]*)'(?: \(\d+\))? panicked at ", re.M)
_CARGO_REGISTRY = re.compile(r" panicked at (?:[A-Za-z]:)?[^\s:]*?[/\\]\.cargo[/\\]registry"
                             r"[/\\]src[/\\][^/\\\s]+[/\\]")
_TRACES = re.compile(r'^\s*(?:----- pid \d+ at |DALVIK THREADS|"main" prio=\d+ tid=1\b|suspend all '
                     r'histogram:)', re.M)


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


def detect_family(text: str) -> tuple[str, str]:
    """``(family, why)`` for a report's text (already decoded and tidied): the family the
    detection order in the module docs picks, and the marks that picked it. ``family`` is
    one of :data:`HINTS`, or ``android`` for every Android/host text."""
    head = text.lstrip()[:1]
    if head == "{":
        return "ips", "the text starts with '{': Apple .ips JSON (or a JetsamEvent entry)"
    if looks_like_ips_fragment(text):
        return "ips-partial", ".ips keys (imageOffset, procName, exception ...) without the " \
                              "leading '{': a piece of an .ips body"
    if "ApplicationExitInfo #" in text and _EXIT_INFO.search(text):
        return "exit-info", "an 'ApplicationExitInfo #N' entry"
    if ("=" * 20 in text or "Drop box contents:" in text) and _DROPBOX.search(text):
        return "dropbox", "a DropBox entry header (a line of '=' and 'date time tag (')"
    for name, looks_like in (("minidump", looks_like_minidump),
                             ("hotspot", looks_like_hotspot), ("mono", looks_like_mono),
                             ("sanitizer", looks_like_sanitizer),
                             ("valgrind", looks_like_valgrind),
                             ("sentry", looks_like_sentry_apple),
                             ("crash-text", crash_text_marks)):
        why = looks_like(text)
        if why:
            return name, why
    if ("thread #" in text or "frame #" in text) and _LLDB.search(text):
        return "lldb", "an lldb stop line ('* thread #N ... stop reason =') or 'frame #N:' lines"
    if looks_like_xcode_threads(text):
        return "xcode", "Xcode debug-navigator lines ('Thread N Queue :', '#N<TAB>0x... in')"
    why = looks_like_faulthandler(text)
    if why:
        return "faulthandler", why
    if looks_like_grapheneos(text):
        return "grapheneos", "'type: crash' and a 'signal: N (SIG...)' line: GrapheneOS's " \
                             "crash notification"
    return "android", "no Apple, sanitizer or debugger marks: Android log text (tombstone, " \
                      "logcat, crash-console export) or host output"


#: family -> (platform, source, format, reader, whether the reader takes lines)
_READERS: dict[str, tuple[str, str, str, Callable[[Draft, Any], None], bool]] = {
    "ips": ("ios", "ips", "ips", parse_ips, False),
    "jetsam": ("ios", "ips", "ips", parse_ips, False),
    "ips-partial": ("ios", "ips", "ips-partial", parse_ips_fragment, False),
    "dropbox": ("android", "dropbox", "dropbox", parse_dropbox, False),
    "sanitizer": ("linux", "sanitizer", "sanitizer", read_sanitizer, True),
    "valgrind": ("linux", "valgrind", "valgrind", read_valgrind, True),
    "crash-text": ("ios", "crash-text", "crash-text", read_crash_text, True),
    "lldb": ("ios", "lldb", "lldb", read_lldb, True),
    "xcode": ("ios", "debugger", "xcode-threads", read_xcode_threads, True),
    "ide-frames": ("unknown", "debugger", "ide-frames", read_ide_frames, True),
    "frame-rows": ("unknown", "crash-reporter", "frame-rows", read_frame_rows, True),
    "host": ("linux", "host-signal", "host-backtrace", read_host_output, True),
    "grapheneos": ("android", "crash-reporter", "grapheneos", read_grapheneos, True),
    "hotspot": ("unknown", "jvm", "hotspot", read_hotspot, True),
    "mono": ("linux", "mono", "mono", read_mono, True),
    "faulthandler": ("unknown", "python", "faulthandler", read_faulthandler, True),
    "minidump": ("unknown", "minidump", "minidump-stackwalk", read_minidump, True),
    "sentry": ("ios", "crash-reporter", "sentry-apple", read_sentry_apple, True),
}


def reader_name(family: str, record: CrashRecord) -> str:
    """The function that read ``record`` (``kit.crash.hotspot.read_hotspot``), for a report
    detection took for ``family``; the Android/host family picks its reader by the text,
    so its record's ``format`` names it."""
    reader: Callable[..., Any]
    if family in _READERS:
        reader = _READERS[family][3]
    elif family == "exit-info" or record.format == "exit-info":
        reader = parse_exit_info
    elif record.format == "bugsnag-issue":
        reader = read_bugsnag
    elif record.format == "ide-frames":
        reader = read_ide_frames
    elif record.format == "frame-rows":
        reader = read_frame_rows
    elif record.format.startswith(("host-", "console-")):
        reader = read_host_output
    else:
        reader = parse_android_log
    return f"{reader.__module__}.{reader.__name__}"


def _parse(text: str | bytes, hint: str | None) -> CrashRecord:
    text, notes = decode(text)
    family = None
    if hint is not None:
        if hint in HINTS:
            family = hint
        else:
            notes.append(f"unknown hint {hint[:40]!r} ignored (known: {', '.join(HINTS)})")
    if not text.strip():
        return CrashRecord(platform="unknown", source="unknown", format="unknown",
                           notes=tuple(notes + ["empty input"]))
    text, tidied = tidy_paste(text)
    notes.extend(tidied)
    forced = family is not None
    family = family or detect_family(text)[0]
    if family == "exit-info":
        return _from_exit_info(text, notes)
    if family == "console":
        draft = _console_abort(text, notes)
    elif family in _READERS:
        platform, source, fmt, reader, by_lines = _READERS[family]
        draft = Draft(platform=platform, source=source, format=fmt, notes=notes)
        reader(draft, text.split("\n") if by_lines else text)
    else:
        draft = _parse_android_or_host(text, notes, forced=forced)
    _signal_from_delivery_frames(draft)
    return draft.build()


# ART's fault handler and the kernel's signal trampoline at the top of a stack: the signal
# was delivered to this thread (libsigchain's art::SignalChain::Handler, ART's FaultManager;
# https://android.googlesource.com/platform/art/+/refs/heads/main/sigchainlib/ and
# runtime/fault_handler.cc)
_DELIVERY_SIGNAL = re.compile(r"^(?:art_(?P<a>sigsegv|sigbus)_fault|art::FaultManager::Handle"
                              r"(?P<b>Sigsegv|Sigbus)Fault)\b")


def _signal_from_delivery_frames(draft: Draft) -> None:
    """A report with no signal whose top frames are ART's fault handler for SIGSEGV or
    SIGBUS: that signal, with a note (the frames are skipped for the signature)."""
    if draft.get("signal_name") is not None or draft.kind not in ("native", "unknown"):
        return
    for frame in draft.frames[:8]:
        m = _DELIVERY_SIGNAL.match((frame.symbol or "").lstrip(":"))
        if m is not None:
            name = (m.group("a") or m.group("b")).upper()
            draft.set("signal_name", name)
            draft.set("signal", signal_number(name))
            draft.kind = "native"
            draft.note(f"no signal line: {name} from ART's fault handler frames "
                       f"({(frame.symbol or '')[:40]})")
            return


def _console_abort(text: str, notes: list[str]) -> Draft:
    draft = Draft(platform="linux", source="console", format="console-abort", notes=notes)
    read_host_output(draft, text.split("\n"))
    draft.format = "console-abort"
    if "Terminating app due to uncaught exception" in text:
        draft.platform = "ios"  # an NSException's last words (Xcode console), assumed iOS
    elif "malloc: ***" in text or "dyld" in text or ".dylib" in text:
        draft.platform = "ios" if "/Developer/usr/lib/" in text else "macos"
    elif "libc++abi" in text and ".so" not in text and "linux" not in text.lower():
        # LLVM's C++ runtime: Apple's and Android's, seldom a Linux host's (libstdc++ says
        # "terminate called after throwing"), and nothing else here names the platform
        draft.platform = "unknown"
        draft.note("libc++abi's line alone does not say the platform (Apple, Android or a "
                   "libc++ build)")
    elif "Terminating due to uncaught exception " in text:
        # libcxxrt's wording: FreeBSD's C++ runtime (libcxxrt/libcxxrt#41), not the
        # platforms the kit runs on
        draft.platform = "unknown"
        draft.note("libcxxrt's line (FreeBSD's C++ runtime): not a platform the kit knows")
    panic = _RUST_PANIC.search(draft.get("abort_message") or "")
    if panic is not None:
        draft.set("thread_name", panic.group("thread") or None)
        draft.note("a Rust panic: the panicking thread and where it panicked")
        message = draft.get("abort_message")
        if " panicked at /Users/" in message:
            draft.platform = "macos"  # cargo's registry under a macOS home directory
        # a crate's path in cargo's registry is the same panic on every machine: the home
        # directory and registry index before the crate are dropped ("ort-2.0.0-rc.11/...")
        short = _CARGO_REGISTRY.sub(" panicked at ", message, count=1)
        if short != message:
            draft.set("abort_message", short, override=True)
            draft.note("the panic's path starts at its crate (cargo's registry directory "
                       "dropped)")
    if draft.get("abort_message"):
        draft.kind = "native"
        if "no signal and no backtrace: the workload did not crash by a signal" in draft.notes:
            draft.notes.remove("no signal and no backtrace: the workload did not crash by a "
                               "signal")
        draft.note("console lines of an abort, no crash report")
        if "RCTFatal" in draft.get("abort_message") or "Unhandled JS Exception" in \
                draft.get("abort_message"):
            draft.kind = "js"
            draft.set("message", draft.get("abort_message"))
            draft.note("React Native fatal JS error (RCTFatal) ended the process")
    return draft


def _parse_android_or_host(text: str, notes: list[str], forced: bool) -> Draft:
    lines = text.split("\n")
    style, loglines = split_logcat(lines)
    raw = style == "raw"
    draft = Draft(platform="android", source="logcat", format="unknown", notes=list(notes))
    parse_android_log(draft, loglines, raw=raw)
    bugsnag = looks_like_bugsnag(lines) if draft.kind == "unknown" and not forced else None
    if bugsnag is not None:
        issue = Draft(platform="android", source="crash-reporter", notes=list(notes))
        read_bugsnag(issue, lines, bugsnag)
        return issue
    if draft.kind == "unknown" and not forced and looks_like_host_backtrace(lines):
        host = Draft(platform="linux", source="host-signal", format="host-backtrace",
                     notes=list(notes))
        read_host_output(host, lines)
        return host
    if draft.kind == "unknown" and not forced and looks_like_ide_frames(lines):
        ide = Draft(platform="unknown", source="debugger", format="ide-frames",
                    notes=list(notes))
        read_ide_frames(ide, lines)
        return ide
    if draft.kind == "unknown" and not forced and looks_like_frame_rows(lines):
        rows = Draft(platform="unknown", source="crash-reporter", format="frame-rows",
                     notes=list(notes))
        read_frame_rows(rows, lines)
        return rows
    if draft.kind == "unknown" and not forced and looks_like_console_abort(text):
        return _console_abort(text, list(notes))
    if draft.kind == "unknown" and not forced and not raw:
        # console lines of a death under a logcat prefix (its tag may be empty): the prefix
        # says Android whatever the lines would say alone
        messages = "\n".join(ln.msg for ln in loglines)
        if looks_like_console_abort(messages):
            console = _console_abort(messages, list(notes))
            console.platform = "android"
            console.notes = [n for n in console.notes if not n.startswith("libc++abi's line")]
            console.note(f"logcat lines ({style}): Android")
            return console
    if draft.kind == "unknown":
        if not forced:
            draft.platform = "unknown"
            draft.source = "unknown"
        draft.format = "unknown"
        draft.note("no known crash report format found")
        return draft
    if draft.format == "art-abort":
        draft.format = f"art-abort-{style}" if not raw else "art-abort"
        return draft
    if draft.format != "unknown":  # a crash-console shape named itself
        draft.source = "terminal" if draft.format == "js-terminal" else "crash-reporter"
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
        elif draft.kind == "anr" and raw and _TRACES.search(text):
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
