"""GrapheneOS's crash report: the text its "app crashed" notification shows and copies.

GrapheneOS (an Android distribution) shows every native crash of an app or system process
in a notification whose "Copy" gives a summary of the tombstone, and its users paste that
text into bug trackers (https://github.com/GrapheneOS/os-issue-tracker holds many)::

    type: crash
    osVersion: google/tokay/tokay:16/BP3A.251105.015/2025120401:user/release-keys
    uid: 1021 (u:r:gnssd:s0)
    cmdline: /vendor/bin/hw/gnssd
    processUptime: 0s

    abortMessage: Lost GPU device unexpectedly

    signal: 11 (SIGSEGV), code 9 (SEGV_MTESERR), faultAddr 100d649dcaf86ad
    threadName: linkReceiveThre
    MTE: enabled

    backtrace:
        /vendor/bin/hw/gnssd (chppDispatchBetpNotification+40, pc 101fb8)
        /product/app/TrichromeLibrary/TrichromeLibrary.apk!libmonochrome_64.so (pc 27f13b0)

Each frame is ``<path> ([<symbol>+<offset>, ]pc <hex>)``, the crashing thread's, innermost
first, with no index. The older form of the same notification (``package:``/``process:``
then a tombstone's own ``signal`` and ``#NN pc`` lines) is read as a tombstone excerpt,
with the process of its ``process:`` line. There is no pid, tid or ABI in either.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import parse_int, signal_name
from .tombstone import demangle_frames, parse_frame_line, read_tombstone

__all__ = ["looks_like_grapheneos", "read_grapheneos"]

_HEAD = re.compile(r"^type: crash\s*$", re.M)
_SIGNAL = re.compile(r"^signal: (?P<num>\d+) \((?P<name>\w+)\)"
                     r"(?:, code (?P<code>-?\d+)(?: \((?P<code_name>[^)]*)\))?)?"
                     r"(?:, faultAddr (?P<addr>[0-9a-fA-F]+))?", re.M)
# /vendor/bin/hw/gnssd (chppDispatchBetpNotification+40, pc 101fb8)
_FRAME = re.compile(r"^\s+(?P<path>\S.*?) \((?:(?P<sym>.*), )?pc (?P<pc>[0-9a-fA-F]{1,16})\)\s*$")
_OLD_SIGNAL = re.compile(r"^signal \d+ \(SIG\w+\)", re.M)
_KEY = re.compile(r"^(?P<key>cmdline|process|abortMessage|threadName|MTE): ?(?P<value>.*)$")


def looks_like_grapheneos(text: str) -> bool:
    """True for a GrapheneOS crash notification's text: ``type: crash`` and a ``signal: N
    (SIG...)`` line (the new form) or a tombstone's ``signal N (SIG...)`` line (the old)."""
    return "type: crash" in text and _HEAD.search(text) is not None and (
        _SIGNAL.search(text) is not None or _OLD_SIGNAL.search(text) is not None)


def read_grapheneos(draft: Draft, lines: Sequence[str]) -> None:
    """Read a GrapheneOS crash notification's text (see the module docs) into ``draft``:
    signal, code, fault address, thread name, process (``cmdline``'s program), abort
    message and the frames of its ``backtrace:``. Never raises."""
    draft.kind = "native"
    if not any(_SIGNAL.match(ln) for ln in lines):
        # the old form: the notification's keys, then a tombstone's own lines
        for line in lines:
            km = _KEY.match(line.rstrip())
            if km is not None and km.group("key") in ("cmdline", "process"):
                draft.set("process", km.group("value").strip().split(" ")[0] or None)
        read_tombstone(draft, lines)
        return
    in_frames = False
    for line in lines:
        stripped = line.rstrip()
        if not stripped:
            continue
        if stripped == "backtrace:":
            in_frames = True
            continue
        if in_frames:
            m = _FRAME.match(stripped)
            if m is None:
                in_frames = bool(stripped[:1].isspace())
                continue
            sym = f" ({m.group('sym')})" if m.group("sym") else ""
            frame, note = parse_frame_line(
                f"#{len(draft.frames):02d} pc {m.group('pc')}  {m.group('path')}{sym}")
            if frame is not None:
                draft.add_frame(frame)
            if note:
                draft.note(note)
            continue
        sm = _SIGNAL.match(stripped)
        if sm is not None:
            draft.set("signal", parse_int(sm.group("num")))
            draft.set("signal_name", sm.group("name") or signal_name(parse_int(sm.group("num"))))
            draft.set("code", sm.group("code_name") or sm.group("code"))
            if sm.group("addr"):
                draft.set("fault_address", "0x" + sm.group("addr").lower())
            continue
        km = _KEY.match(stripped)
        if km is None:
            continue
        key, value = km.group("key"), km.group("value").strip()
        if key in ("cmdline", "process"):
            draft.set("process", value.split(" ")[0] or None)
        elif key == "abortMessage":
            draft.set("abort_message", value)
        elif key == "threadName":
            draft.set("thread_name", value)
        elif key == "MTE" and value == "enabled":
            draft.note("MTE: enabled (the report says the process ran with memory tagging)")
    demangle_frames(draft)
    if draft.get("signal") is None:
        draft.note("no signal line")
    if not draft.frames:
        draft.note("no backtrace frames (report cut?)")
