"""Apple crash reports: ``.ips`` (JSON) and JetsamEvent; legacy ``.crash`` text is read by
:mod:`kit.crash.crash_text` (re-exported here), pieces of ``.ips`` bodies by
:mod:`kit.crash.ips_salvage`.

Formats (docs/formats.md sections 4-5; Apple, "Interpreting the JSON format of a
crash report", developer.apple.com/documentation/xcode):

* ``.ips`` v2 (iOS 15+ / macOS 12+): line 1 is a one-line JSON header (``bug_type``: ``309``
  crash, ``298`` JetsamEvent, ``109`` old crash with a legacy text body), the rest one JSON
  body. The crashing thread is ``threads[faultingThread]`` (or the one with
  ``triggered: true``); a frame is ``{imageIndex, imageOffset, symbol?, symbolLocation?,
  sourceFile?, sourceLine?}`` and its image ``usedImages[imageIndex]`` (``base``, ``uuid``,
  ``name``, ``path``). Numbers are decimal.
* JetsamEvent: ``processes[]`` with the killed one carrying ``reason``
  (``per-process-limit``, ``vm-pageshortage``...), or one such process entry alone;
* a ``termination`` by a watchdog (``FRONTBOARD`` ``0x8badf00d``) is kind ``anr``, by jetsam
  ``oom`` (:func:`~kit.crash.ips_salvage.termination_kind`).

lldb output is read by :mod:`kit.crash.debugger`.

A JSON body cut short is repaired by closing its open brackets after the last complete
value (the partial element is dropped and noted); invalid JSON falls back to regular
expressions over the text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._apple import ADDRESS_AT, abi, leb_note, mark_js_fatal, set_apple_signal
from ._draft import Draft
from ._text import basename, json_string_end, parse_int, signal_number
from .crash_text import crash_text_marks, looks_like_crash_text, read_crash_text
from .ips_salvage import (looks_like_ips_fragment, parse_ips_fragment, read_jetsam_entry,
                          termination_kind)
from .record import Frame

__all__ = ["parse_ips", "read_crash_text", "close_truncated_json", "looks_like_crash_text",
           "crash_text_marks"]

_PLATFORMS = {1: "macos", 2: "ios", 6: "macos", 7: "ios", 11: "ios"}  # Mach-O platform ids
_SIMULATOR_PLATFORMS = {7}
def close_truncated_json(text: str) -> str | None:
    """``text`` cut back to its last complete nested value, with open brackets closed.

    Returns ``None`` when no complete nested value exists. String contents are skipped
    with their escapes, so brackets inside strings do not count.
    """
    stack: list[str] = []
    best: tuple[int, int] | None = None
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
            if stack:  # only pushes follow the last such pop: stack[:depth] stays as it is
                best = (i + 1, len(stack))
            else:
                return text[:i + 1]
    if best is None:
        return None
    end, depth = best
    return text[:end] + "".join(reversed(stack[:depth]))


#: Deepest nesting read: real ``.ips`` reports nest under 20 levels; a deeper text is no
#: report, and refusing it keeps every read linear (issue: 100k brackets took a minute).
MAX_JSON_DEPTH = 64
#: Longest ``.ips`` header line read (Apple's one-line JSON header is under 1 KB).
MAX_HEADER_CHARS = 64 * 1024


def json_depth_over(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether brackets outside strings in ``text`` nest deeper than ``limit`` (one linear
    pass that holds nothing per character; stops at the first level past the limit)."""
    depth = 0
    pos = 0
    search = _JSON_MARK.search
    while (match := search(text, pos)) is not None:
        token = match.group()
        pos = match.end()
        if token == '"':
            pos = json_string_end(text, pos)
            if pos < 0:
                break
        elif token in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


_JSON_MARK = re.compile(r'[\[\]{}"]')


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
    :func:`~kit.crash.ips_salvage.parse_ips_fragment`. A text nested deeper than
    :data:`MAX_JSON_DEPTH` is refused with a note, in linear time, and nothing is read (it
    classifies as ``unparsed``)."""
    if json_depth_over(text):
        draft.note(f"ips: nested deeper than {MAX_JSON_DEPTH} levels (a real report nests "
                   f"under 20): not read")
        return
    notes_before = len(draft.notes)
    first, _, rest = text.lstrip().partition("\n")
    header: dict[str, Any] = {}
    body: Any = None
    head_value: Any = None
    if len(first) > MAX_HEADER_CHARS and rest.strip():
        # Apple's header line is a few hundred characters; loading a long one costs memory
        # many times its size (a 5 MB one took 652 MB; issue #46 family 4): not read
        draft.note(f"ips header line is {len(first)} characters long (Apple's is under 1 KB): "
                   f"not read")
        head_value = {}
    else:
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
    simulator = platform_id in _SIMULATOR_PLATFORMS or body.get("parentProc") == "launchd_sim" \
        or "CoreSimulator" in (_str(body.get("procPath")) or "")
    if platform_id in _PLATFORMS:
        draft.platform = _PLATFORMS[platform_id]
    elif os_version and os_version.startswith(("macOS", "Mac OS")) and not simulator:
        draft.platform = "macos"  # a simulator's report names the Mac's OS: still iOS
    if simulator:
        draft.note("report from an iOS simulator")
    draft.kind = "native"
    draft.set("process", _str(body.get("procName")) or _str(header.get("app_name"))
              or _str(header.get("name")))
    draft.set("pid", _int(body.get("pid")))
    draft.set("timestamp", _str(body.get("captureTime")) or _str(header.get("timestamp")))
    draft.set("abi", abi(_str(body.get("cpuType"))))
    exception = _dict(body.get("exception"))
    draft.set("exception", _str(exception.get("type")))
    set_apple_signal(draft, _str(exception.get("signal")))
    draft.set("message", _str(exception.get("message")))  # EXC_GUARD, EXC_RESOURCE say why
    subtype = _str(exception.get("subtype")) or ""
    codes = _str(exception.get("codes")) or ""
    draft.set("code", subtype.split(" at ")[0].strip() or None)
    at = ADDRESS_AT.search(subtype)
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
        draft.note(leb_note(len(leb), [str(_dict(f).get("symbol") or "?") for f in leb]))
    mark_js_fatal(draft)


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
