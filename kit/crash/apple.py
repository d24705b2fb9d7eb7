"""Apple crash reports: ``.ips`` (JSON), legacy ``.crash`` text and its pieces, JetsamEvent.

Formats (notes/crash-formats.md sections 4-5; Apple, "Interpreting the JSON format of a
crash report", developer.apple.com/documentation/xcode):

* ``.ips`` v2 (iOS 15+ / macOS 12+): line 1 is a one-line JSON header (``bug_type``: ``309``
  crash, ``298`` JetsamEvent, ``109`` old crash with a legacy text body), the rest one JSON
  body. The crashing thread is ``threads[faultingThread]`` (or the one with
  ``triggered: true``); a frame is ``{imageIndex, imageOffset, symbol?, symbolLocation?,
  sourceFile?, sourceLine?}`` and its image ``usedImages[imageIndex]`` (``base``, ``uuid``,
  ``name``, ``path``). Numbers are decimal.
* legacy text: ``Exception Type:  EXC_BAD_ACCESS (SIGSEGV)``, ``Exception Subtype:
  KERN_INVALID_ADDRESS at 0x...``, ``Triggered by Thread:  N``, ``Thread N Crashed:`` and
  frames ``idx  image<TAB>0xADDR symbol + offset (file:line)`` or, unsymbolicated,
  ``0xADDR 0xLOAD + offset``; ``Binary Images:`` lines give image bases and UUIDs.
* JetsamEvent: ``processes[]`` with the killed one carrying ``reason``
  (``per-process-limit``, ``vm-pageshortage``...).

lldb output is read by :mod:`kit.crash.debugger`.

A JSON body cut short is repaired by closing its open brackets after the last complete
value (the partial element is dropped and noted); invalid JSON falls back to regular
expressions over the text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from ._draft import Draft
from ._text import basename, parse_int, signal_number
from .ips_salvage import (looks_like_ips_fragment, parse_ips_fragment, read_jetsam_entry,
                          termination_kind)
from .record import Frame

__all__ = ["parse_ips", "read_crash_text", "close_truncated_json", "looks_like_crash_text"]

_PLATFORMS = {1: "macos", 2: "ios", 6: "macos", 7: "ios", 11: "ios"}  # Mach-O platform ids
_SIMULATOR_PLATFORMS = {7}
_ADDRESS_AT = re.compile(r"\bat (0x[0-9a-fA-F]+)")
# Apple "Code Type" / cpuType spellings -> the ABI names tombstones use
_ABIS = {"ARM-64": "arm64", "ARM64": "arm64", "ARM64E": "arm64e", "X86-64": "x86_64",
         "ARM": "arm", "X86": "x86", "ARM64_32": "arm64_32"}


def _abi(text: str | None) -> str | None:
    if not text:
        return None
    word = text.split(" (")[0].strip()
    return _ABIS.get(word.upper(), word)


def close_truncated_json(text: str) -> str | None:
    """``text`` cut back to its last complete nested value, with open brackets closed.

    Returns ``None`` when no complete nested value exists. String contents are skipped
    with their escapes, so brackets inside strings do not count.
    """
    stack: list[str] = []
    best: tuple[int, str] | None = None
    in_string = escape = False
    for i, ch in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not stack or stack[-1] != ch:
                break
            stack.pop()
            if stack:
                best = (i + 1, "".join(reversed(stack)))
            else:
                return text[:i + 1]
    if best is None:
        return None
    end, closers = best
    return text[:end] + closers


def _load_json(text: str, what: str, draft: Draft) -> Any:
    text = text.strip()
    if not text:
        draft.note(f"{what}: empty")
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        value, end = json.JSONDecoder().raw_decode(text)
        draft.note(f"{what}: text after the JSON object ignored ({len(text) - end} chars)")
        return value
    except (ValueError, RecursionError):
        pass
    repaired = close_truncated_json(text)
    if repaired is not None:
        try:
            value = json.loads(repaired)
            draft.note(f"{what}: JSON cut short; read up to character {len(repaired)} "
                       f"of {len(text)} (the last, partial element is lost)")
            return value
        except (ValueError, RecursionError):
            pass
    draft.note(f"{what}: not valid JSON")
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return parse_int(value, 16) if value.lower().startswith("0x") else parse_int(value)
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


#: Keys of which an ``.ips`` header or body has at least one.
_REPORT_KEYS = {"procName", "exception", "threads", "bug_type", "termination", "processes",
                "incident", "app_name", "name", "rpages", "faultingThread", "usedImages",
                "timestamp", "pid"}


def parse_ips(draft: Draft, text: str) -> None:
    """Read an ``.ips`` report (header line + body, or a single JSON object) into ``draft``;
    a text that starts with ``{`` but is a piece of a frames or threads array is read by
    :func:`~kit.crash.ips_salvage.parse_ips_fragment`."""
    notes_before = len(draft.notes)
    first, _, rest = text.lstrip().partition("\n")
    header: dict[str, Any] = {}
    body: Any = None
    head_value = None
    try:
        head_value = json.loads(first)
    except (ValueError, RecursionError):
        head_value = None
    if isinstance(head_value, dict) and rest.strip():
        header = head_value
        if str(header.get("bug_type")) == "109" or not rest.lstrip().startswith("{"):
            draft.format = "ips-legacy-body"
            draft.set("timestamp", _str(header.get("timestamp")))
            read_crash_text(draft, rest.split("\n"))
            return
        body = _load_json(rest, "ips body", draft)
    elif isinstance(head_value, dict):
        body = head_value  # a single object: header-less body, or a header alone
    else:
        whole = _load_json(text, "ips", draft)
        if isinstance(whole, dict):
            body = whole
        else:
            draft.note("ips header line is not valid JSON")
            _salvage_ips(draft, text)
            return
    body = _dict(body)
    if not header and not _REPORT_KEYS & set(body) and looks_like_ips_fragment(text):
        # "{...},{...}": a piece of a frames or threads array, not a report's body
        del draft.notes[notes_before:]
        parse_ips_fragment(draft, text)
        return
    bug_type = str(header.get("bug_type") or body.get("bug_type") or "")
    if bug_type == "298" or ("processes" in body and "largestProcess" in body):
        _read_jetsam(draft, header, body)
        return
    if "rpages" in body and "reason" in body and "procName" not in body:
        read_jetsam_entry(draft, _str(body.get("name")), _int(body.get("pid")),
                          _str(body.get("reason")), _int(body.get("rpages")))
        return
    if header and not body:
        draft.note("ips: only the header line could be read")
        _salvage_ips(draft, rest)
    draft.format = "ips" if bug_type in ("309", "") else f"ips-{bug_type}"
    if bug_type not in ("309", ""):
        draft.note(f"bug_type {bug_type} is not a crash report (309); read what fits")
    platform_id = _int(header.get("platform"))
    os_version = _str(header.get("os_version")) or _str(_dict(body.get("osVersion")).get("train"))
    if platform_id in _PLATFORMS:
        draft.platform = _PLATFORMS[platform_id]
    elif os_version and os_version.startswith(("macOS", "Mac OS")):
        draft.platform = "macos"
    if platform_id in _SIMULATOR_PLATFORMS or body.get("parentProc") == "launchd_sim":
        draft.note("report from an iOS simulator")
    draft.kind = "native"
    draft.set("process", _str(body.get("procName")) or _str(header.get("app_name"))
              or _str(header.get("name")))
    draft.set("pid", _int(body.get("pid")))
    draft.set("timestamp", _str(body.get("captureTime")) or _str(header.get("timestamp")))
    draft.set("abi", _abi(_str(body.get("cpuType"))))
    exception = _dict(body.get("exception"))
    draft.set("exception", _str(exception.get("type")))
    sig = _str(exception.get("signal"))
    draft.set("signal_name", sig)
    draft.set("signal", signal_number(sig, darwin=True))
    subtype = _str(exception.get("subtype")) or ""
    codes = _str(exception.get("codes")) or ""
    draft.set("code", subtype.split(" at ")[0].strip() or None)
    at = _ADDRESS_AT.search(subtype)
    if at is not None:
        draft.set("fault_address", at.group(1).lower())
    region = _str(body.get("vmRegionInfo"))
    if region:
        draft.set("cause", region.strip().split("\n")[0])
    termination = _dict(body.get("termination"))
    reasons = " ".join(str(r) for r in _list(termination.get("reasons")))
    ended_by = termination_kind(_str(termination.get("namespace")),
                                _int(termination.get("code")),
                                f"{_str(termination.get('indicator')) or ''} {reasons}")
    if ended_by is not None:
        draft.kind = ended_by
        draft.set("message", (reasons or _str(termination.get("indicator")) or
                              _str(termination.get("namespace")) or "").strip() or None)
        draft.note(f"terminated by the system ({termination.get('namespace')}): "
                   + ("a watchdog, not a crash" if ended_by == "anr" else "out of memory"))
    asi = _dict(body.get("asi"))
    messages = [str(m) for values in asi.values() for m in _list(values)]
    draft.set("abort_message", "\n".join(messages) or None)
    images = [_dict(im) for im in _list(body.get("usedImages"))]
    threads = [_dict(t) for t in _list(body.get("threads"))]
    index = _int(body.get("faultingThread"))
    if index is None or not 0 <= index < len(threads):
        triggered = [i for i, t in enumerate(threads) if t.get("triggered") is True]
        if index is not None:
            draft.note(f"faultingThread {index} is not among the {len(threads)} threads")
        index = triggered[0] if triggered else None
    if index is None:
        draft.note("no crashing thread (no faultingThread, no triggered thread)")
        return
    thread = threads[index]
    draft.set("thread_index", index)
    draft.set("tid", _int(thread.get("id")))
    draft.set("thread_name", _str(thread.get("name")) or _str(thread.get("queue")))
    state = _dict(thread.get("threadState"))
    if draft.get("fault_address") is None:
        far = _int(_dict(state.get("far")).get("value"))
        parts = [p.strip() for p in codes.split(",")]
        if far is not None:
            draft.set("fault_address", hex(far))
        elif draft.get("exception") == "EXC_BAD_ACCESS" and len(parts) == 2:
            draft.set("fault_address", parts[1].lower() if parts[1].startswith("0x") else None)
    for raw in _list(thread.get("frames")):
        frame = _dict(raw)
        image_index = _int(frame.get("imageIndex"))
        image = images[image_index] if (
            image_index is not None and 0 <= image_index < len(images)) else {}
        offset = _int(frame.get("imageOffset"))
        path = _str(image.get("path"))
        draft.add_frame(Frame(
            index=len(draft.frames), module=_str(image.get("name")) or (
                basename(path) if path else None),
            symbol=_str(frame.get("symbol")), offset=_int(frame.get("symbolLocation")),
            pc=hex(offset) if offset is not None and offset >= 0 else None,
            build_id=(_str(image.get("uuid")) or "").lower() or None, path=path,
            file=_str(frame.get("sourceFile")), line=_int(frame.get("sourceLine"))))
    if not draft.frames:
        draft.note(f"crashing thread {index} has no frames")
    leb = _list(body.get("lastExceptionBacktrace"))
    if leb:
        draft.note(_leb_note(len(leb), [str(_dict(f).get("symbol") or "?") for f in leb]))
    _mark_js_fatal(draft)


#: What React Native's fatal JS error handler leaves in an Apple report: RCTFatal raises an
#: NSException named RCTFatalException ("Unhandled JS Exception: ...") that aborts the app.
_JS_FATAL_MARKS = ("RCTFatal", "Unhandled JS Exception")


def _mark_js_fatal(draft: Draft) -> None:
    """Class an abort raised by React Native's RCTFatal as a JS error (kind ``js``), as
    Android's ``JavascriptException`` is: the app's JavaScript failed, not native code."""
    text = "\n".join([str(draft.get("abort_message") or ""), *draft.notes])
    if any(mark in text for mark in _JS_FATAL_MARKS):
        draft.kind = "js"
        draft.note("React Native fatal JS error (RCTFatal) ended the process")


def _leb_note(count: int, symbols: list[str]) -> str:
    """Note naming the top of an uncaught exception's backtrace (the frames stay the
    crashing thread's, as in Apple's report)."""
    top = ", ".join(symbols[:3])
    return f"last exception backtrace ({count} frames; an uncaught exception ended the " \
           f"process): {top}"


def _read_jetsam(draft: Draft, header: dict[str, Any], body: dict[str, Any]) -> None:
    draft.format = "ips-jetsam"
    draft.kind = "oom"
    draft.set("exception", "jetsam")
    draft.set("signal", 9)
    draft.set("signal_name", "SIGKILL")
    draft.set("timestamp", _str(body.get("date")) or _str(header.get("timestamp")))
    processes = [_dict(p) for p in _list(body.get("processes"))]
    killed = [p for p in processes if _str(p.get("reason"))]
    largest = _str(body.get("largestProcess"))
    if not killed:
        draft.note("JetsamEvent with no process that has a kill reason")
        draft.set("process", largest)
        return
    chosen = next((p for p in killed if p.get("name") == largest), killed[0])
    draft.set("process", _str(chosen.get("name")))
    draft.set("pid", _int(chosen.get("pid")))
    draft.set("message", _str(chosen.get("reason")))
    if len(killed) > 1:
        draft.note(f"{len(killed)} processes killed in this event; read {chosen.get('name')!r}")


def _salvage_ips(draft: Draft, text: str) -> None:
    fragment = Draft(platform=draft.platform, source=draft.source)
    parse_ips_fragment(fragment, text)
    for name in ("exception", "signal_name", "signal", "process", "code", "fault_address"):
        draft.set(name, fragment.get(name))
    if draft.get("exception") or draft.get("signal_name"):
        draft.kind = "native"
        draft.note("fields salvaged from invalid JSON by pattern; frames not read")


# Legacy .crash text ------------------------------------------------------------------------

_CRASHED = re.compile(r"^Thread (?P<n>\d+) Crashed:{1,2}\s*(?P<queue>.*)$")
_THREAD_ANY = re.compile(r"^Thread (?P<n>\d+)(?: name:\s*(?P<name>.*)|::\s*(?P<queue>.*)|:| Crashed.*)?"
                         r"\s*$")
_TEXT_FRAME = re.compile(r"^(?P<idx>\d{1,4})\s+(?P<image>\S.*?)\s+(?P<addr>0x[0-9a-fA-F]{1,16})"
                         r"(?:\s+(?P<rest>.*))?$")
_SYM_OFF = re.compile(r"^(?P<sym>.*?) \+ (?P<off>\d+)(?: \((?P<file>[^()]*?):(?P<line>\d+)\))?\s*$")
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
    ("Incident Identifier:", re.compile(r"^Incident Identifier:", re.M),
     "an 'Incident Identifier:' line"),
    ("jetsam", re.compile(r"^Reason: .*\bjetsam\b", re.M), "a jetsam 'Reason:' line"),
)
_FRAME_MARK = re.compile(r"^\d{1,4}\s+\S[^\n]*?\s0x[0-9a-fA-F]{4,16}\s+\S", re.M)
_ANDROID_IMAGE = re.compile(r"\.(?:so|apk|oat|odex)$|^/(?:data|system|apex)/")


def crash_text_marks(text: str) -> str | None:
    """Why ``text`` is legacy Apple ``.crash`` text or a piece of it (a header line, or two
    Apple frame lines ``N  image  0xADDR ...``), or ``None``."""
    sample = text[:200_000]
    for needle, pattern, what in _MARKS:
        if needle in sample and pattern.search(sample):
            return f"{what}: a legacy Apple .crash report, or a piece of one"
    if "0x" in sample and len(_FRAME_MARK.findall(sample)) >= 2:
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
        self.namespace: str | None = None
        self.term_code: int | None = None
        self.exception_line = False
        self.simulator = False
        self.macos = False


def _header(draft: Draft, state: _TextState, key: str, value: str) -> None:
    if key == "Exception Type":
        state.exception_line = True
        exc, _, sig = value.partition(" (")
        exc, sig = exc.strip(), sig.rstrip(")").strip()
        if exc.startswith("SIG") and not sig:
            exc, sig = "", exc  # "Exception Type: SIGSEGV" (PLCrashReporter, Bugly)
        draft.set("exception", exc if exc and exc != "Unknown" else None)
        draft.set("signal_name", sig or None)
        draft.set("signal", signal_number(sig, darwin=True))
    elif key in ("Exception Subtype", "Exception Codes"):
        at = _ADDRESS_AT.search(value)
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
    elif key in ("Date/Time", "Date"):
        draft.set("timestamp", value)
    elif key == "Code Type":
        draft.set("abi", _abi(value))
    elif key == "Model" and value.startswith(("Mac", "iMac")):
        state.macos = True
    elif key == "OS Version":
        if value.startswith(("macOS", "Mac OS")) and not state.simulator:
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
        ns = re.match(r"(?:Namespace )?([A-Z][A-Z_]+),? (?:Code )?(0x[0-9a-fA-F]+|\d+)", value)
        if key == "Termination Reason" and ns is not None:
            state.namespace = ns.group(1)
            state.term_code = parse_int(ns.group(2), 16 if ns.group(2).startswith("0x")
                                        else 10)
            if ns.group(1) == "SIGNAL" and draft.get("signal") is None:
                draft.set("signal", state.term_code)
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
    sm = _SYM_OFF.match(rest) or _SYM_FILE.match(rest)
    if sm is not None and sm.group("sym").startswith("0x") and "off" in sm.groupdict():
        pc = hex(parse_int(sm.group("off")) or 0)  # unsymbolicated: "0xLOAD + offset"
    elif sm is not None:
        symbol = sm.group("sym").strip() or None
        offset = parse_int(sm.groupdict().get("off"))
        file, line_no = sm.group("file"), parse_int(sm.group("line"))
    elif rest:
        symbol = rest
    return Frame(index=idx, module=image, symbol=symbol, offset=offset, pc=pc, build_id=uuid,
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
        m = _CRASHED.match(line)
        if m is not None:
            state.crashed = current = parse_int(m.group("n"))
            queue = _thread_name(m.group("queue"))
            if queue and current is not None:
                state.names.setdefault(current, queue)
            if ":: " in line or line.rstrip().endswith("::"):
                state.macos = True  # "Thread N Crashed::" is macOS's spelling
            continue
        t = _THREAD_ANY.match(line)
        if t is not None:
            current = parse_int(t.group("n"))
            name = _thread_name(t.group("name") or t.group("queue") or "")
            if name and current is not None:
                state.names[current] = name
            continue
        im = _IMAGE.match(line)
        if im is not None:
            path = im.group("path").strip()
            name = basename(path) if path else im.group("what").split(" ")[0]
            images.setdefault(name, (int(im.group("start"), 16),
                                     im.group("uuid").replace("-", "").lower(), path))
            words = im.group("what").split()
            if words and words[0] != name:
                images.setdefault(words[0], images[name])
            continue
        f = _TEXT_FRAME.match(line.strip()) if current is not None else None
        if f is not None and current is not None:
            blocks.setdefault(current, []).append(
                (int(f.group("idx")), f.group("image").strip(), int(f.group("addr"), 16),
                 f.group("rest")))
            continue
        if not line.strip():
            current = None
            continue
        h = _HEADER.match(line)
        if h is None:
            continue
        key, value = h.group("key").strip(), h.group("value").strip()
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
        draft.note(_leb_note(len(leb), [(rest or "").split(" + ")[0] for _, _, _, rest in leb]))
    ended_by = termination_kind(state.namespace, state.term_code, " ".join(state.termination))
    if ended_by is not None:
        draft.kind = ended_by
        draft.set("message", state.termination[-1] if state.termination else None)
        draft.note(f"terminated by the system ({state.namespace or 'see the reason'}): "
                   + ("a watchdog, not a crash" if ended_by == "anr" else "out of memory"))
    crashed = state.crashed
    block = blocks.get(crashed, []) if crashed is not None else []
    if not block and _UNNAMED in blocks:
        block = blocks[_UNNAMED]
        draft.note("frames without a 'Thread N Crashed:' line: read as the crashing thread's")
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
    if draft.frames and all(_ANDROID_IMAGE.search(f.module or "") for f in draft.frames):
        draft.platform = "android"
    elif state.macos and not state.simulator and draft.platform == "ios":
        draft.platform = "macos"
    if draft.platform == "android":
        draft.note("an Android crash in Apple's report layout (a crash reporter's export)")
    if not state.exception_line:
        draft.note("no Exception Type line")
    if draft.get("signal") is not None and draft.get("signal_name") is None:
        draft.set("signal_name", _DARWIN_NAMES.get(draft.get("signal")))
    _mark_js_fatal(draft)


_DARWIN_NAMES = {4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 8: "SIGFPE", 9: "SIGKILL",
                 10: "SIGBUS", 11: "SIGSEGV", 12: "SIGSYS"}
