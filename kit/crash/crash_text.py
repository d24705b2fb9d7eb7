"""Legacy Apple ``.crash`` text, and the pieces of it people paste.

Format (docs/formats.md section 5; Apple TN2151 / "Examining the fields in a crash
report"): a header (``Incident Identifier``, ``Process: name [pid]``, ``Code Type``, ``OS
Version``, ``Exception Type:  EXC_BAD_ACCESS (SIGSEGV)``, ``Exception Subtype``,
``Termination Reason``, ``Triggered by Thread:  N``), then ``Thread N Crashed:`` and frames
``idx  image<TAB>0xADDR symbol + offset (file:line)`` or, unsymbolicated, ``0xADDR 0xLOAD +
offset``; ``Binary Images:`` lines give image bases and UUIDs. Pieces read too: a header
block alone, a thread's frames alone, an excerpt from ``Exception Type`` or ``Termination
Reason``, a Crashlytics export (``Crashed: <queue>``, ``EXC_BAD_ACCESS KERN_INVALID_ADDRESS
0x10``, ``Fatal Exception: <type>``), Sentry's export of an Android crash in this layout.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._apple import ADDRESS_AT, abi, leb_note, mark_js_fatal, set_apple_signal
from ._draft import Draft
from ._text import basename, parse_int, signal_number
from .ips_salvage import termination_kind
from .record import Frame

__all__ = ["crash_text_marks", "looks_like_crash_text", "read_crash_text"]


_CRASHED = re.compile(r"^Thread (?P<n>\d+) Crashed:{1,2}\s*(?P<queue>.*)$")
_THREAD_ANY = re.compile(r"^Thread (?P<n>\d+)(?: name:\s*(?P<name>.*)|::\s*(?P<queue>.*)|:| Crashed.*)?"
                         r"\s*$")
# the image name may be blank (an app binary whose name the report left out)
_STATE = re.compile(r"^Thread (?P<n>\d+) crashed with .*Thread State\b", re.I)
#: Cr4shed's spellings of the header keys (lower case after the first word)
_KEY_CASE = {"Exception type": "Exception Type", "Exception subtype": "Exception Subtype",
             "Exception codes": "Exception Codes", "Triggered by thread": "Triggered by Thread"}
_TEXT_FRAME = re.compile(r"^(?P<idx>\d{1,4})\s+(?:(?P<image>\S.*?)\s+)??(?P<addr>0x[0-9a-fA-F]{1,16})"
                         r"(?:\s+(?P<rest>.*))?$")
# a console table's row once its markup is gone (GitHub's editor form of a pasted HTML
# table): index, image, then "symbol + off" or "0xLOAD + off", and no instruction address
# (the image's name may hold single spaces; cells stand two spaces apart)
_TABLE_ROW = re.compile(r"^(?P<idx>\d{1,4})[ \t]+(?P<image>[^\s\d]\S*(?: \S+)*)(?:[ \t]{2,}|\t)"
                        r"(?P<rest>[^\s0-9](?:.*\S)? \+ \d+)\s*$")
_SYM_OFF = re.compile(r"^(?P<sym>.*?) \+ (?P<off>\d+)(?: \((?P<file>[^()]*?):(?P<line>\d+)\))?\s*$")
_COMMENT = re.compile(r"^0x[0-9a-fA-F]+ \+ (?P<off>0x[0-9a-fA-F]+|\d+)\s*//\s*(?P<sym>.*?)"
                      r"(?: \+ (?P<soff>0x[0-9a-fA-F]+|\d+))?\s*$")
_SYM_FILE = re.compile(r"^(?P<sym>.*?) \((?P<file>[^()\s]+):(?P<line>\d+)\)\s*$")
_IMAGE = re.compile(r"^\s*(?P<start>0x[0-9a-fA-F]+)\s*-\s*(?:0x[0-9a-fA-F]+|\?\?\?)\s+\+?"
                    r"(?P<what>.*?)\s*<(?P<uuid>[0-9a-fA-F-]{32,36})>\s*(?P<path>.*)$")
_LEB = -1  # block key of the "Last Exception Backtrace:" frames
_UNNAMED = -2  # block key of frames before any thread header (a paste of frames alone)
_HEADER = re.compile(r"^(?P<key>[A-Z][A-Za-z /]+?):\s*(?P<value>.*)$")
_MARKS = (  # (a substring that must be there, the line's pattern, what it is)
    ("Exception Type:", re.compile(r"^Exception Type:", re.M), "an 'Exception Type:' line"),
    ("Termination Reason:", re.compile(r"^Termination Reason:", re.M),
     "a 'Termination Reason:' line"),
    (" Thread:", re.compile(r"^(?:Triggered by|Crashed) Thread:", re.M),
     "a 'Triggered by Thread:' line"),
    ("Thread ", re.compile(r"^Thread \d+ (?:Crashed|name:)", re.M), "a 'Thread N Crashed:' line"),
    ("RBSTerminateContext|", re.compile(r"^\s*<RBSTerminateContext\|", re.M),
     "a '<RBSTerminateContext|' termination context (an excerpt from inside Termination Reason)"),
    ("WatchdogEvent:", re.compile(r"^WatchdogEvent: ", re.M), "a 'WatchdogEvent:' line"),
    ("Incident Identifier:", re.compile(r"^Incident Identifier:", re.M),
     "an 'Incident Identifier:' line"),
    ("jetsam", re.compile(r"^Reason: .*\bjetsam\b", re.M), "a jetsam 'Reason:' line"),
    ("Crashed: ", re.compile(r"^Crashed: \S.*\n(?:EXC_|Fatal Exception:|\d+\s)", re.M),
     "a Crashlytics 'Crashed:' headline over Apple frames"),
)
# an address with something after it on its line (the symbol, or "0xBASE + off")
_FRAME_MARK = re.compile(r"^\d{1,4}[ \t]+\S[^\n]*?[ \t]0x[0-9a-fA-F]{4,16}[ \t]+\S", re.M)
# the same lines, found from the newline before each (a pattern that starts with a literal is
# searched for that character, where one that starts with '^' is tried at every position);
# a match never ends on a newline, so the matches are those of _FRAME_MARK
_FRAME_MARK_NL = re.compile(r"\n\d{1,4}[ \t]+\S[^\n]*?[ \t]0x[0-9a-fA-F]{4,16}[ \t]+\S")


def _two_frame_marks(sample: str) -> bool:
    """``len(_FRAME_MARK.findall(sample)) >= 2``, stopping at the second match."""
    found = 0
    for _ in _FRAME_MARK_NL.finditer("\n" + sample):
        found += 1
        if found >= 2:
            return True
    return False
_EXC_LINE = re.compile(r"^(?P<exc>EXC_[A-Z_]+)(?:\s+(?P<code>[A-Z][A-Z_0-9]+))?"
                       r"(?:\s+(?P<addr>0x[0-9a-fA-F]+))?\s*$")
_EXC_SIGNALS = {"EXC_BAD_ACCESS": "SIGSEGV", "EXC_CRASH": "SIGABRT", "EXC_BREAKPOINT": "SIGTRAP",
                "EXC_BAD_INSTRUCTION": "SIGILL", "EXC_ARITHMETIC": "SIGFPE"}
_NAMESPACE = re.compile(r"(?:Namespace )?([A-Z][A-Z_]+),? (?:Code )?(0x[0-9a-fA-F]+|\d+)")
_ANDROID_IMAGE = re.compile(r"\.(?:so|apk|oat|odex)$|^/(?:data|system|apex)/")
_ANDROID_ONLY = re.compile(r"\.(?:apk|oat|odex)$|^/(?:data/app|system|apex)/")


def crash_text_marks(text: str) -> str | None:
    """Why ``text`` is legacy Apple ``.crash`` text or a piece of it (a header line, or two
    Apple frame lines ``N  image  0xADDR ...``), or ``None``."""
    sample = text[:200_000]
    for needle, pattern, what in _MARKS:
        if needle in sample and pattern.search(sample):
            return f"{what}: a legacy Apple .crash report, or a piece of one"
    if "0x" in sample and _two_frame_marks(sample):
        return "Apple frame lines ('N  image  0xADDR symbol + off'): a piece of a .crash report"
    return None


def looks_like_crash_text(text: str) -> bool:
    """True for legacy Apple ``.crash`` text or a piece of it (see :func:`crash_text_marks`)."""
    return crash_text_marks(text) is not None


class _TextState:
    """What the header lines of a ``.crash`` text said, beyond record fields."""

    def __init__(self) -> None:
        self.crashed: int | None = None
        self.names: dict[int, str] = {}
        self.termination: list[str] = []
        self.watchdog: list[str] = []
        self.namespace: str | None = None
        self.term_code: int | None = None
        self.exception_line = False
        self.simulator = False
        self.macos = False
        #: the report says it is Apple's (an Apple OS version, a Mac model, an EXC_ type)
        self.apple = False
        #: ``OS Version: macOS ...`` said so
        self.apple_macos = False
        self.console_thread: str | None = None


def _header(draft: Draft, state: _TextState, key: str, value: str) -> None:
    if key == "Exception Type":
        state.exception_line = True
        exc, _, sig = value.partition(" (")
        exc, sig = exc.strip(), sig.rstrip(")").strip()
        if exc.startswith("SIG") and not sig:
            exc, sig = "", exc  # "Exception Type: SIGSEGV" (PLCrashReporter, Bugly)
        draft.set("exception", exc if exc and exc != "Unknown" else None)
        set_apple_signal(draft, sig)
    elif key in ("Exception Subtype", "Exception Codes"):
        at = ADDRESS_AT.search(value)
        if at is not None:
            draft.set("fault_address", at.group(1).lower())
        if key == "Exception Subtype" or not value.startswith("0x"):
            draft.set("code", value.split(" at ")[0].strip() or None)
    elif key in ("Triggered by Thread", "Crashed Thread"):
        state.macos = state.macos or key == "Crashed Thread"  # macOS names it so
        state.crashed = parse_int(value.split()[0]) if value.split() else None
        queue = value.partition("Dispatch queue:")[2].strip()
        if queue and state.crashed is not None:
            state.names.setdefault(state.crashed, queue)
    elif key == "Process":
        name, _, pid = value.partition("[")
        draft.set("process", name.strip() or None)
        draft.set("pid", parse_int(pid.rstrip("]")))
    elif key == "Thread name" and state.crashed is not None:  # Cr4shed, under the trigger
        name = _thread_name(value)
        if name:
            state.names.setdefault(state.crashed, name)
    elif key in ("Date/Time", "Date"):
        draft.set("timestamp", value)
    elif key == "Code Type":
        draft.set("abi", abi(value))
    elif key == "Crashed" and value:  # Crashlytics: "Crashed: <thread or queue>"
        state.console_thread = value
    elif key == "Fatal Exception" and value:  # Crashlytics: an uncaught ObjC/C++ exception
        draft.set("exception", value.split(":")[0].strip() or None)
        draft.set("abort_message", f"uncaught exception {value}")
    elif key == "Model" and value.startswith(("Mac", "iMac")):
        state.macos = True
    elif key == "OS Version":
        state.apple = state.apple or value.startswith(
            ("macOS", "Mac OS", "iPhone OS", "iOS", "iPadOS", "watchOS", "tvOS", "visionOS"))
        if value.startswith(("macOS", "Mac OS")) and not state.simulator:
            state.apple_macos = True
            draft.platform = "macos"
        elif value.startswith("Android"):
            draft.platform = "android"
    elif key in ("Parent Process", "Coalition") and ("launchd_sim" in value
                                                     or "CoreSimulator" in value):
        state.simulator = True
        draft.platform = "ios"
    elif key == "VM Region Info":
        draft.set("cause", value)
    elif key in ("Termination Reason", "Termination Description", "Reason"):
        state.termination.append(value)
        ns = _NAMESPACE.match(value)
        if key == "Termination Reason" and ns is not None:
            state.namespace = ns.group(1)
            state.term_code = parse_int(ns.group(2), 16 if ns.group(2).startswith("0x")
                                        else 10)
            if ns.group(1) == "SIGNAL" and draft.get("signal") is None:
                draft.set("signal", state.term_code)
    elif key in ("WatchdogEvent", "WatchdogVisibility"):  # the watchdog's own lines
        state.watchdog.append(f"{key}: {value}")
    elif key == "Termination Signal" and draft.get("signal") is None:
        number = re.search(r":\s*(\d+)\s*$", value)
        draft.set("signal", parse_int(number.group(1)) if number else None)


def _thread_name(text: str) -> str:
    """A thread's name from ``Thread N name:`` / ``Thread N Crashed::`` text: the name, or
    the dispatch queue when the thread has no name of its own."""
    name, _, queue = text.partition("Dispatch queue:")
    return name.strip() or queue.strip()


def _frame(draft: Draft, images: dict[str, tuple[int, str, str]],
           entry: tuple[int, str, int, str | None]) -> Frame:
    idx, image, addr, rest = entry
    base, uuid, path = images.get(image, (None, None, None))
    symbol = offset = file = line_no = None
    pc = hex(addr - base) if base is not None and addr >= base else None
    rest = (rest or "").strip()
    if rest.startswith("[inlined] "):
        rest = rest[len("[inlined] "):]
    if rest.startswith("+ ") and rest[2:].isdecimal():
        # a table row's "0xLOAD + offset" (no instruction address): the offset in the image
        return Frame(index=idx, module=image or None, pc=hex(int(rest[2:])), build_id=uuid,
                     path=path or None)
    cm = _COMMENT.match(rest)
    if cm is not None:  # jailbreak symbolicators: "0xBASE + 0xOFF  // symbol + 0xN"
        pc = hex(parse_int(cm.group("off"), 16 if cm.group("off").startswith("0x") else 10)
                 or 0)
        symbol = cm.group("sym").strip() or None
        offset = parse_int(cm.group("soff"), 16 if (cm.group("soff") or "").startswith("0x")
                           else 10)
        return Frame(index=idx, module=image or None, symbol=symbol, offset=offset, pc=pc,
                     build_id=uuid, path=path or None)
    sm = _SYM_OFF.match(rest) or _SYM_FILE.match(rest)
    if sm is not None and sm.group("sym").startswith("0x") and "off" in sm.groupdict():
        pc = hex(parse_int(sm.group("off")) or 0)  # unsymbolicated: "0xLOAD + offset"
    elif sm is not None:
        symbol = sm.group("sym").strip() or None
        offset = parse_int(sm.groupdict().get("off"))
        file, line_no = sm.group("file"), parse_int(sm.group("line"))
    elif rest:
        symbol = rest
    return Frame(index=idx, module=image or None, symbol=symbol, offset=offset, pc=pc,
                 build_id=uuid,
                 path=path or None, file=file, line=line_no)


def read_crash_text(draft: Draft, lines: Sequence[str]) -> None:
    """Read legacy ``.crash`` text (iOS ``Report Version: 104``, macOS ``12``) or a piece of
    it: a header block alone, a crashing thread's frames alone (with or without its
    ``Thread N Crashed:`` line), an excerpt that starts at ``Exception Type`` or
    ``Termination Reason``. A watchdog termination (``0x8badf00d``, FRONTBOARD /
    SPRINGBOARD) is kind ``anr``, a jetsam one ``oom``; a report of an Android process in
    Apple's layout (Sentry) is platform ``android``."""
    if draft.format in ("unknown", ""):
        draft.format = "crash-text"
    draft.kind = "native"
    state = _TextState()
    images: dict[str, tuple[int, str, str]] = {}
    blocks: dict[int, list[tuple[int, str, int, str | None]]] = {}
    current: int | None = _UNNAMED
    asi: list[str] | None = None
    for raw in lines:
        line = raw.rstrip()
        if asi is not None:
            if not line.strip():
                draft.set("abort_message", "\n".join(asi) or None)
                asi = None
            else:
                asi.append(line.strip())
            continue
        if line.strip() == "Last Exception Backtrace:":
            current = _LEB
            continue
        # each pattern's own words are tested first: "Thread " starts the three thread lines
        thread = line.startswith("Thread ")
        m = _CRASHED.match(line) if thread else None
        if m is not None:
            state.crashed = current = parse_int(m.group("n"))
            queue = _thread_name(m.group("queue"))
            if queue and current is not None:
                state.names.setdefault(current, queue)
            if ":: " in line or line.rstrip().endswith("::"):
                state.macos = True  # "Thread N Crashed::" is macOS's spelling
            continue
        ts = _STATE.match(line) if line[:7].lower() == "thread " else None  # re.I
        if ts is not None:  # "Thread 0 crashed with ARM Thread State (64-bit):"
            if state.crashed is None:
                state.crashed = parse_int(ts.group("n"))
            current = None
            continue
        if line.strip() == "Call stack:" and state.crashed is not None:
            current = state.crashed  # Cr4shed: the triggered thread's frames follow
            continue
        t = _THREAD_ANY.match(line) if thread else None
        if t is not None:
            current = parse_int(t.group("n"))
            name = _thread_name(t.group("name") or t.group("queue") or "")
            if name and current is not None:
                state.names[current] = name
            continue
        im = _IMAGE.match(line) if "<" in line and "0x" in line else None
        if im is not None:
            path = im.group("path").strip()
            name = basename(path) if path else im.group("what").split(" ")[0]
            images.setdefault(name, (int(im.group("start"), 16),
                                     im.group("uuid").replace("-", "").lower(), path))
            words = im.group("what").split()
            if words and words[0] != name:
                images.setdefault(words[0], images[name])
            continue
        f = _TEXT_FRAME.match(line.strip()) if current is not None and "0x" in line else None
        if f is None and current is not None and " + " in line and line[:1].isdigit():
            row = _TABLE_ROW.match(line.strip())
            if row is not None:
                blocks.setdefault(current, []).append(
                    (int(row.group("idx")), row.group("image"), -1, row.group("rest")))
                continue
        if f is not None and current is not None and (f.group("image") or f.group("rest")):
            blocks.setdefault(current, []).append(
                (int(f.group("idx")), (f.group("image") or "").strip(), int(f.group("addr"), 16),
                 f.group("rest")))
            # 0x00007fff...: x86-64 user space (the dyld shared cache), a Mac's, never a
            # device's (iOS devices are arm64, their addresses below 2^40)
            state.macos = state.macos or 0x7F00_0000_0000 <= int(f.group("addr"), 16) < 2 ** 47
            continue
        if not line.strip():
            # a blank line ends a thread's frames; before any frame it ends nothing (an
            # excerpt's header, a blank line, then the crashed thread's frames alone)
            if current != _UNNAMED or _UNNAMED in blocks:
                current = None
            continue
        if line.lstrip().startswith("<RBSTerminateContext|"):
            # an excerpt that starts inside Termination Reason: its context, no key
            state.termination.append(line.strip())
            continue
        h = _HEADER.match(line) if ":" in line else None
        if h is None:
            exc = _EXC_LINE.match(line.strip()) if "EXC_" in line else None
            if exc is not None:  # Crashlytics: "EXC_BAD_ACCESS KERN_INVALID_ADDRESS 0x10"
                state.exception_line = True
                draft.set("exception", exc.group("exc"))
                draft.set("code", exc.group("code"))
                draft.set("fault_address", (exc.group("addr") or "").lower() or None)
                sig = _EXC_SIGNALS.get(exc.group("exc"))
                draft.set("signal_name", sig)
                draft.set("signal", signal_number(sig, darwin=True))
            continue
        key, value = h.group("key").strip(), h.group("value").strip()
        key = _KEY_CASE.get(key, key)
        if key == "Application Specific Information":
            asi = [value] if value else []
        else:
            _header(draft, state, key, value)
    if asi is not None:
        draft.set("abort_message", "\n".join(asi) or None)
    _finish_text(draft, state, images, blocks)


def _finish_text(draft: Draft, state: _TextState, images: dict[str, tuple[int, str, str]],
                 blocks: dict[int, list[tuple[int, str, int, str | None]]]) -> None:
    if state.simulator:
        draft.note("report from an iOS simulator")
    leb = blocks.pop(_LEB, [])
    if leb:
        draft.note(leb_note(len(leb), [(rest or "").split(" + ")[0] for _, _, _, rest in leb]))
    ended_by = termination_kind(state.namespace, state.term_code,
                                " ".join(state.termination + state.watchdog))
    if ended_by is not None:
        draft.kind = ended_by
        draft.set("message", state.termination[-1] if state.termination else
                  state.watchdog[0] if state.watchdog else None)
        draft.note(f"terminated by the system ({state.namespace or 'see the reason'}): "
                   + ("a watchdog, not a crash" if ended_by == "anr" else "out of memory"))
    crashed = state.crashed
    block = blocks.get(crashed, []) if crashed is not None else []
    if not block and _UNNAMED in blocks:
        block = blocks[_UNNAMED]
        if state.console_thread:
            draft.set("thread_name", state.console_thread)
        else:
            draft.note("frames without a 'Thread N Crashed:' line: read as the crashing "
                       "thread's")
    elif crashed is None and len(blocks) == 1:
        crashed, block = next(iter(blocks.items()))
        draft.note(f"only thread {crashed}'s frames, no 'Thread N Crashed:' line: read as the "
                   "crashing thread's")
    if crashed is None and not block:
        draft.note("no crashed thread named (no 'Thread N Crashed:' / 'Triggered by Thread:')")
    elif crashed is not None:
        draft.set("thread_index", crashed)
        draft.set("thread_name", state.names.get(crashed))
        if not block:
            draft.note(f"no frames for crashed thread {crashed} (report cut?)")
    for entry in block:
        draft.add_frame(_frame(draft, images, entry))
    # Android's images (.so, .apk, .oat) in Apple's layout: a crash reporter's export, unless
    # the report says it is Apple's: a .so there is a Python extension or a plugin
    apple = state.apple or state.macos or (draft.get("exception") or "").startswith("EXC_") \
        or any("darwin" in (f.module or "") for f in draft.frames)
    if draft.frames and all(_ANDROID_IMAGE.search(f.module or "") for f in draft.frames) and (
            not apple or any(_ANDROID_ONLY.search(f.path or f.module or "")
                             for f in draft.frames)):
        draft.platform = "android"
    elif state.macos and not state.simulator and draft.platform == "ios" and (
            ended_by != "anr" or state.apple_macos):
        # a scene watchdog (0x8badf00d) is iOS's FrontBoard: with macOS's spelling
        # ("Thread N Crashed::") it is an iOS simulator's report
        draft.platform = "macos"
    if draft.platform == "android":
        draft.note("an Android crash in Apple's report layout (a crash reporter's export)")
    if not state.exception_line:
        draft.note("no Exception Type line")
    if draft.get("signal") is not None and draft.get("signal_name") is None:
        draft.set("signal_name", _DARWIN_NAMES.get(draft.get("signal")))
    mark_js_fatal(draft)


_DARWIN_NAMES = {4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 8: "SIGFPE", 9: "SIGKILL",
                 10: "SIGBUS", 11: "SIGSEGV", 12: "SIGSYS"}
