"""Apple crash reports: ``.ips`` (JSON), legacy ``.crash`` text, JetsamEvent, lldb stops.

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
* lldb: ``* thread #N, ..., stop reason = EXC_BAD_ACCESS (code=1, address=0x...)`` and
  ``frame #N: 0xADDR module`symbol + off [at file:line]``.

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
from .record import Frame

__all__ = ["parse_ips", "read_crash_text", "read_lldb", "close_truncated_json",
           "looks_like_crash_text"]

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


def parse_ips(draft: Draft, text: str) -> None:
    """Read an ``.ips`` report (header line + body, or a single JSON object) into ``draft``."""
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
    bug_type = str(header.get("bug_type") or body.get("bug_type") or "")
    if bug_type == "298" or ("processes" in body and "largestProcess" in body):
        _read_jetsam(draft, header, body)
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


_SALVAGE = {
    "exception": re.compile(r'"type"\s*:\s*"(EXC_\w+)"'),
    "signal_name": re.compile(r'"signal"\s*:\s*"(SIG\w+)"'),
    "process": re.compile(r'"procName"\s*:\s*"([^"\\]{1,200})"'),
}


def _salvage_ips(draft: Draft, text: str) -> None:
    for name, pattern in _SALVAGE.items():
        m = pattern.search(text)
        if m is not None:
            draft.set(name, m.group(1))
    if draft.get("signal_name"):
        draft.set("signal", signal_number(draft.get("signal_name"), darwin=True))
    if draft.get("exception") or draft.get("signal_name"):
        draft.kind = "native"
        draft.note("fields salvaged from invalid JSON by pattern; frames not read")


# Legacy .crash text ------------------------------------------------------------------------

_CRASHED = re.compile(r"^Thread (?P<n>\d+) Crashed:{1,2}\s*(?P<queue>.*)$")
_THREAD_ANY = re.compile(r"^Thread (?P<n>\d+)(?: name:\s*(?P<name>.*)|:| Crashed.*)?\s*$")
_TEXT_FRAME = re.compile(r"^(?P<idx>\d{1,4})\s+(?P<image>\S.*?)\s+(?P<addr>0x[0-9a-fA-F]{1,16})"
                         r"(?:\s+(?P<rest>.*))?$")
_SYM_OFF = re.compile(r"^(?P<sym>.*?) \+ (?P<off>\d+)(?: \((?P<file>[^()]*?):(?P<line>\d+)\))?\s*$")
_IMAGE = re.compile(r"^\s*(?P<start>0x[0-9a-fA-F]+)\s*-\s*(?:0x[0-9a-fA-F]+|\?\?\?)\s+\+?"
                    r"(?P<what>.*?)\s*<(?P<uuid>[0-9a-fA-F-]{32,36})>\s*(?P<path>.*)$")
_LEB = -1  # block key of the "Last Exception Backtrace:" frames
_HEADER = re.compile(r"^(?P<key>[A-Z][A-Za-z /]+?):\s*(?P<value>.*)$")


def looks_like_crash_text(text: str) -> bool:
    """True for legacy Apple ``.crash`` text (Exception Type + a crashed thread)."""
    return bool(re.search(r"^Exception Type:", text, re.M)) and bool(
        re.search(r"^(Thread \d+ Crashed|Crashed Thread:|Triggered by Thread:)", text, re.M))


def read_crash_text(draft: Draft, lines: Sequence[str]) -> None:
    """Read legacy ``.crash`` text (iOS ``Report Version: 104``, macOS ``12``)."""
    if draft.format in ("unknown", ""):
        draft.format = "crash-text"
    draft.kind = "native"
    crashed: int | None = None
    names: dict[int, str] = {}
    images: dict[str, tuple[int, str, str]] = {}
    blocks: dict[int, list[tuple[int, str, int, str | None]]] = {}
    current: int | None = None
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
            crashed = parse_int(m.group("n"))
            current = crashed
            queue = m.group("queue").strip()
            if queue and crashed is not None:
                names.setdefault(crashed, queue)
            continue
        t = _THREAD_ANY.match(line)
        if t is not None:
            n = parse_int(t.group("n"))
            if t.group("name") and n is not None:
                names[n] = t.group("name").strip()
                current = None
            else:
                current = n
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
        if key == "Exception Type":
            exc, _, sig = value.partition(" (")
            draft.set("exception", exc.strip() or None)
            sig = sig.rstrip(")").strip()
            draft.set("signal_name", sig or None)
            draft.set("signal", signal_number(sig, darwin=True))
        elif key in ("Exception Subtype", "Exception Codes"):
            at = _ADDRESS_AT.search(value)
            if at is not None:
                draft.set("fault_address", at.group(1).lower())
            if key == "Exception Subtype" or not value.startswith("0x"):
                draft.set("code", value.split(" at ")[0].strip() or None)
        elif key in ("Triggered by Thread", "Crashed Thread"):
            crashed = parse_int(value.split()[0]) if value.split() else None
            queue = value.partition("Dispatch queue:")[2].strip()
            if queue and crashed is not None:
                names.setdefault(crashed, queue)
        elif key == "Process":
            name, _, pid = value.partition("[")
            draft.set("process", name.strip() or None)
            draft.set("pid", parse_int(pid.rstrip("]")))
        elif key == "Date/Time":
            draft.set("timestamp", value)
        elif key == "Code Type":
            draft.set("abi", _abi(value))
        elif key == "OS Version" and value.startswith(("macOS", "Mac OS")):
            draft.platform = "macos"
        elif key == "VM Region Info":
            draft.set("cause", value)
        elif key == "Application Specific Information":
            asi = [value] if value else []
    if asi is not None:
        draft.set("abort_message", "\n".join(asi) or None)
    leb = blocks.pop(_LEB, [])
    if leb:
        draft.note(_leb_note(len(leb), [(rest or "").split(" + ")[0] for _, _, _, rest in leb]))
    if crashed is None:
        draft.note("no crashed thread named (no 'Thread N Crashed:' / 'Triggered by Thread:')")
        return
    draft.set("thread_index", crashed)
    draft.set("thread_name", names.get(crashed))
    block = blocks.get(crashed, [])
    if not block:
        draft.note(f"no frames for crashed thread {crashed} (report cut?)")
    for idx, image, addr, rest in block:
        base, uuid, path = images.get(image, (None, None, None))
        symbol = offset = file = line_no = None
        pc = hex(addr - base) if base is not None and addr >= base else None
        sm = _SYM_OFF.match(rest or "")
        if sm is not None:
            if sm.group("sym").startswith("0x"):  # unsymbolicated: "0xLOAD + offset"
                pc = hex(parse_int(sm.group("off")) or 0)
                base_text = sm.group("sym")
                if base is None:
                    base = parse_int(base_text, 16)
            else:
                symbol, offset = sm.group("sym"), parse_int(sm.group("off"))
                file, line_no = sm.group("file"), parse_int(sm.group("line"))
        elif rest:
            symbol = rest.strip()
        draft.add_frame(Frame(index=idx, module=image, symbol=symbol, offset=offset, pc=pc,
                              build_id=uuid, path=path or None, file=file, line=line_no))
    if draft.get("exception") is None:
        draft.note("no Exception Type line")
    _mark_js_fatal(draft)


# lldb -------------------------------------------------------------------------------------

_LLDB_STOP = re.compile(r"^\s*\* thread #(?P<n>\d+)(?P<attrs>.*?), stop reason = (?P<reason>.*)$")
_LLDB_FRAME = re.compile(r"^\s*\*?\s*frame #(?P<idx>\d+): (?P<addr>0x[0-9a-fA-F]+)"
                         r"(?: (?P<mod>[^`\s]+)`(?P<sym>.*?))?"
                         r"(?: \+ (?P<off>\d+))?"
                         r"(?: at (?P<file>[^:\s]+):(?P<line>\d+)(?::\d+)?)?\s*$")


def read_lldb(draft: Draft, lines: Sequence[str]) -> None:
    """Read an lldb ``thread backtrace`` of the stopped thread."""
    draft.format = "lldb"
    draft.kind = "native"
    stopped = False
    for line in lines:
        m = _LLDB_STOP.match(line)
        if m is not None:
            if stopped:
                break
            stopped = True
            draft.set("thread_index", parse_int(m.group("n")))
            attrs = m.group("attrs")
            name = re.search(r"name = '([^']*)'", attrs) or re.search(r"queue = '([^']*)'", attrs)
            draft.set("thread_name", name.group(1) if name else None)
            reason = m.group("reason").strip()
            exc = re.match(r"(EXC_\w+)(?: \((.*)\))?", reason)
            if exc is not None:
                draft.set("exception", exc.group(1))
                detail = exc.group(2) or ""
                code = re.search(r"code=(\w+)", detail)
                addr = re.search(r"address=(0x[0-9a-fA-F]+)", detail)
                draft.set("code", code.group(1) if code else None)
                draft.set("fault_address", addr.group(1).lower() if addr else None)
                draft.set("signal_name", {"EXC_BAD_ACCESS": "SIGSEGV", "EXC_CRASH": "SIGABRT",
                                          "EXC_BREAKPOINT": "SIGTRAP",
                                          "EXC_BAD_INSTRUCTION": "SIGILL"}.get(exc.group(1)))
            else:
                sig = re.match(r"signal (SIG\w+)(?::\s*(.*))?", reason)
                if sig is not None:
                    draft.platform = "linux"
                    draft.set("signal_name", sig.group(1))
                    addr = re.search(r"address:? (0x[0-9a-fA-F]+)", reason)
                    draft.set("fault_address", addr.group(1).lower() if addr else None)
                    draft.set("code", (sig.group(2) or "").split(" (")[0] or None)
            draft.set("signal", signal_number(draft.get("signal_name"),
                                              darwin=draft.platform != "linux"))
            continue
        if not stopped:
            continue
        f = _LLDB_FRAME.match(line)
        if f is None:
            if line.strip().startswith("* thread #") or (line.strip().startswith("thread #")
                                                         and draft.frames):
                break
            continue
        draft.add_frame(Frame(index=parse_int(f.group("idx")) or 0, module=f.group("mod"),
                              symbol=f.group("sym") or None, offset=parse_int(f.group("off")),
                              file=f.group("file"), line=parse_int(f.group("line"))))
    if not stopped:
        draft.note("no '* thread #N ... stop reason' line")
    elif draft.platform != "linux":
        draft.note("lldb output does not say which Apple platform; assumed ios")
