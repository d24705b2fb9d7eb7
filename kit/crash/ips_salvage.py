"""Pieces of an ``.ips`` body: what people paste when the report is too long for an issue.

A piece starts anywhere in the JSON body (mid-key, inside ``threads[]`` or a ``frames``
array, at ``"procName"``) and is often hard-wrapped inside tokens
(``"_dispatch_workloop_work\\ner_thread"``). It is not JSON, so it is read by its keys
(Apple, "Interpreting the JSON format of a crash report"; docs/formats.md
section 4):

* ``procName``, ``pid``, ``captureTime``, ``cpuType``, ``bug_type``;
* ``exception`` ``{type, signal, subtype, codes}`` and ``termination`` ``{namespace, code,
  indicator, reasons}`` (a watchdog's or jetsam's message is its ``reasons`` text, else its
  ``indicator``, else the namespace, as for a whole report); ``vmRegionInfo``'s first line;
  ``asi`` strings;
* frames ``{imageOffset, symbol?, symbolLocation?, imageIndex, sourceFile?, sourceLine?}``
  of the thread marked ``"triggered": true``, else of the first frames run in the piece
  (said in a note, since that may not be the crashing thread);
* a JetsamEvent process entry (``rpages`` and ``reason``).

:func:`termination_kind` also decides, for whole reports, which terminations are not
crashes: a watchdog (``FRONTBOARD``/``SPRINGBOARD`` namespaces, code ``0x8badf00d``,
``WatchdogEvent``) is an ANR, a jetsam kill (``JETSAM`` namespace) is out of memory.
"""

from __future__ import annotations

import functools
import re

from ._draft import Draft
from ._apple import set_apple_signal
from ._text import json_string_end, parse_int, signal_number
from .record import Frame

__all__ = ["looks_like_ips_fragment", "parse_ips_fragment", "termination_kind",
           "read_jetsam_entry", "WATCHDOG_CODE"]

#: ``0x8badf00d`` ("ate bad food"): the code of a watchdog termination (Apple TN2151).
WATCHDOG_CODE = 0x8BADF00D
_KEYS = ("imageOffset", "imageIndex", "symbolLocation", "procName", "procPath", "exception",
         "termination", "faultingThread", "usedImages", "threadState", "bug_type", "rpages",
         "largestProcess", "captureTime", "triggered", "vmRegionInfo")
_KEY = re.compile(r'"\s*(' + "|".join(_KEYS) + r')\s*"\s*:')
# a raw newline inside a token (JSON has none): not after , [ { or blank, not before a
# blank or a closing token
_WRAP = re.compile(r'(?<=[^,\[{\s])\n(?=[^\s"}\]])')
_FRAME = re.compile(r'\{\s*"\s*imageOffset\s*"\s*:\s*(?P<off>\d+)(?P<body>[^{}]*)\}')
# a string's opening quote; its end is found by json_string_end (linear, no state per
# character: a pattern for the whole string kept one backtracking mark per character)
_STR = r'"\s*{key}\s*"\s*:\s*"'
_NUM = r'"\s*{key}\s*"\s*:\s*(?P<v>-?\d+)'
_OBJECT = r'"\s*{key}\s*"\s*:\s*\{{'
_BRACE = re.compile(r'[{}"]')


def looks_like_ips_fragment(text: str) -> bool:
    """True when at least two different ``.ips`` keys (or two frame objects) appear, or a
    ``termination`` object with its ``namespace`` (a watchdog's piece pasted alone)."""
    sample = text[:200_000]
    if '"' not in sample or not any(k in sample for k in _KEYS):
        return False
    keys = {m.group(1) for m in _KEY.finditer(sample)}
    return len(keys) >= 2 or len(_FRAME.findall(sample)) >= 2 or (
        "termination" in keys and re.search(r'"\s*namespace\s*"\s*:', sample) is not None)


def _unescape(value: str) -> str:
    """A JSON string's text: wrap newlines dropped, only the first line of a multi-line
    value (``vmRegionInfo``), ``\\/`` and ``\\"`` escapes undone."""
    first = value.replace("\n", "").split("\\n")[0]
    return first.replace("\\/", "/").replace('\\"', '"')


@functools.lru_cache(maxsize=64)
def _key_pattern(shape: str, key: str) -> re.Pattern[str]:
    return re.compile(shape.format(key=key))


def _str(text: str, key: str) -> str | None:
    m = _key_pattern(_STR, key).search(text)
    if m is None:
        return None
    end = json_string_end(text, m.end())
    if end < 0:
        return None  # not closed: cut inside the value
    return _unescape(text[m.end():end - 1]).strip() or None


def _num(text: str, key: str) -> int | None:
    m = _key_pattern(_NUM, key).search(text)
    return parse_int(m.group("v")) if m else None


def _object(text: str, key: str) -> str | None:
    """The inside of the object that ``key`` opens: up to its closing brace, nested objects
    and arrays included (strings skipped with their escapes), or up to the end of the piece
    when it is cut inside the object (a piece pasted up to the middle of ``termination``)."""
    m = _key_pattern(_OBJECT, key).search(text)
    if m is None:
        return None
    depth = 1
    pos = m.end()
    while (mark := _BRACE.search(text, pos)) is not None:
        if mark.group() == '"':
            pos = json_string_end(text, mark.end())
            if pos < 0:
                break
            continue
        pos = mark.end()
        depth += 1 if mark.group() == "{" else -1
        if depth == 0:
            return text[m.end():mark.start()]
    return text[m.end():]


_QUOTE = re.compile(r'\s*"')
_REASON_AFTER = re.compile(r'\s*(?P<end>\])?\s*,?')


def _reasons(termination: str) -> str | None:
    """The strings of a termination's ``reasons`` array, one space apart (those that are
    there when the piece is cut inside the array)."""
    m = re.search(r'"\s*reasons\s*"\s*:\s*\[', termination)
    values: list[str] = []
    pos = m.end() if m else -1
    while pos >= 0:
        start = _QUOTE.match(termination, pos)
        if start is None:
            break
        end = json_string_end(termination, start.end())
        if end < 0:
            break  # cut inside the string
        values.append(_unescape(termination[start.end():end - 1]).strip())
        after = _REASON_AFTER.match(termination, end)
        pos = -1 if after is None or after.group("end") else after.end()
    return " ".join(v for v in values if v) or None


def termination_kind(namespace: str | None, code: int | None, text: str) -> str | None:
    """``anr`` for a watchdog termination, ``oom`` for a jetsam one, else ``None``.

    ``text`` is the termination's description (``reasons``, ``indicator``, or the
    ``Termination Description`` line), searched for ``watchdog`` / ``WatchdogEvent``.
    """
    ns = (namespace or "").upper()
    if ns == "JETSAM" or "jetsam" in text.lower():
        return "oom"
    if code == WATCHDOG_CODE or "8badf00d" in text.lower() or re.search(
            r"watchdog|WatchdogEvent", text, re.I):
        return "anr" if ns in ("", "FRONTBOARD", "SPRINGBOARD", "RUNNINGBOARD") or \
            code == WATCHDOG_CODE else None
    return None


def _frames(text: str) -> tuple[list[Frame], str]:
    """The frames to keep and how they were chosen."""
    runs: list[list[re.Match[str]]] = [[]]
    pos = 0
    # a frames array ends with "}]"; a "]" in a symbol ("-[NSException raise]") does not
    for m in re.finditer(r'"\s*frames\s*"\s*:\s*\[|(?<=\})\s*\]', text):
        runs[-1].extend(_FRAME.finditer(text, pos, m.start()))
        pos = m.end()
        runs.append([])
    runs[-1].extend(_FRAME.finditer(text, pos))
    triggered = re.search(r'"\s*triggered\s*"\s*:\s*true', text)
    chosen: list[re.Match[str]] = []
    how = "frames of the first thread in the piece (it does not say which thread crashed)"
    if triggered is not None:
        after = [r for r in runs if r and r[0].start() > triggered.start()]
        if after:
            chosen, how = after[0], "frames of the thread marked triggered"
    if not chosen:
        chosen = next((r for r in runs if r), [])
    frames: list[Frame] = []
    for m in chosen:
        body = m.group("body")
        offset = parse_int(m.group("off"))
        symbol = _str(body, "symbol")
        frames.append(Frame(index=len(frames), symbol=symbol,
                            offset=_num(body, "symbolLocation"),
                            pc=hex(offset) if offset is not None else None,
                            file=_str(body, "sourceFile"), line=_num(body, "sourceLine")))
    return frames, how


def parse_ips_fragment(draft: Draft, text: str) -> None:
    """Read a piece of an ``.ips`` body into ``draft`` by its keys (see the module docs)."""
    text = _WRAP.sub("", text)
    draft.format = "ips-partial"
    draft.kind = "native"
    draft.note("partial .ips: a piece of the JSON body, read by its keys")
    if _num(text, "rpages") is not None and _str(text, "reason") and not _str(text, "procName"):
        read_jetsam_entry(draft, _str(text, "name"), _num(text, "pid"), _str(text, "reason"),
                          _num(text, "rpages"))
        return
    draft.set("process", _str(text, "procName"))
    draft.set("pid", _num(text, "pid"))
    draft.set("timestamp", _str(text, "captureTime"))
    os_train = _str(text, "train") or ""
    proc_path = _str(text, "procPath") or ""
    if "CoreSimulator" in proc_path or _str(text, "parentProc") == "launchd_sim":
        draft.note("report from an iOS simulator")  # on a Mac, but an iOS process
    elif os_train.startswith(("macOS", "Mac OS")) or "/Users/" in proc_path:
        draft.platform = "macos"
    elif not os_train.startswith(("iPhone OS", "iOS", "iPadOS")):
        draft.note("partial .ips: the piece does not say which Apple platform; assumed ios")
    exception = _object(text, "exception")
    if exception is not None:
        draft.set("exception", _str(exception, "type"))
        set_apple_signal(draft, _str(exception, "signal"))
        draft.set("message", _str(exception, "message"))
        subtype = _str(exception, "subtype") or ""
        draft.set("code", subtype.split(" at ")[0].strip() or None)
        at = re.search(r"\bat (0x[0-9a-fA-F]+)", subtype)
        draft.set("fault_address", at.group(1).lower() if at else None)
    termination = _object(text, "termination")
    if termination is not None:
        namespace = _str(termination, "namespace")
        code = _num(termination, "code")
        kind = termination_kind(namespace, code, termination)
        if kind is not None:
            draft.kind = kind
            # as for a whole report: the reasons' text (a watchdog's RBSTerminateContext),
            # else the indicator, else the namespace
            draft.set("message", _reasons(termination) or _str(termination, "indicator")
                      or namespace)
            draft.note(f"terminated by the system ({namespace}): "
                       + ("a watchdog, not a crash" if kind == "anr" else "out of memory"))
        if namespace == "SIGNAL" and code is not None:
            draft.set("signal", code)
    region = _str(text, "vmRegionInfo") or _str(text, "vmregioninfo")  # both spellings occur
    draft.set("cause", region.strip() if region else None)
    draft.set("signal", signal_number(draft.get("signal_name"), darwin=True))
    frames, how = _frames(text)
    for frame in frames:
        draft.add_frame(frame)
    if frames:
        draft.note(f"partial .ips: {how}")
    if not (frames or exception or termination):
        draft.note("partial .ips: no exception, termination or frames in the piece")


def read_jetsam_entry(draft: Draft, name: str | None, pid: int | None, reason: str | None,
                      rpages: int | None) -> None:
    """A JetsamEvent process entry on its own (the kill of one process): kind ``oom``."""
    draft.format = "ips-jetsam-entry"
    draft.kind = "oom"
    draft.set("exception", "jetsam")
    draft.set("signal", 9)
    draft.set("signal_name", "SIGKILL")
    draft.set("process", name)
    draft.set("pid", pid)
    draft.set("message", reason)
    draft.note(f"a JetsamEvent process entry alone ({rpages} resident pages)")
