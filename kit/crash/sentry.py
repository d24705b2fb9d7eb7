"""Sentry's issue view of an Apple native crash, copied as text.

Layout (Sentry's issue page for a native Apple event: the exception's headline, the
mechanism's description, then the crashed thread's frames, innermost first, one row per
frame with inlined frames repeating their address; docs/formats.md section 10, and
react-native#53774 in the corpus)::

    EXC_BAD_ACCESS: Exception 1, Code 1, Subcode 6 >
    KERN_INVALID_ADDRESS at 0x6.
      hermes              0x10706d1f8  hermes::vm::KindAndSize::getSize (GCCell.h:46)
      hermes              0x1070727f8  hermes::vm::JSObject::addOwnPropertyImpl (JSObject.cpp:2760)

The headline gives the exception (``EXC_BAD_ACCESS``; Sentry's ``Exception 1, Code 1,
Subcode 6`` are the Mach exception, code and subcode; its ``>`` is the page's expand
mark); the line under it the code and the fault address (``KERN_INVALID_ADDRESS at 0x6.``);
each row the image, the instruction address, the symbol and its source file and line. The
platform is taken as iOS (Sentry shows macOS crashes the same way; noted).
"""

from __future__ import annotations

import re
from typing import Sequence

from ._apple import set_apple_signal
from ._draft import Draft
from ._text import parse_int
from .record import Frame

__all__ = ["looks_like_sentry_apple", "read_sentry_apple"]

_HEADLINE = re.compile(r"^\s*(?P<exc>EXC_[A-Z_]+|SIG[A-Z]+)(?: \((?P<sig>SIG[A-Z]+)\))?: "
                       r"(?P<rest>Exception \d+, Code \d+, Subcode \d+)\b")
_DETAIL = re.compile(r"^\s*(?P<code>KERN_[A-Z_]+|EXC_[A-Z_]+|[A-Z][A-Z_]+)(?: at "
                     r"(?P<addr>0x[0-9a-fA-F]+))?\.?\s*$")
# the image's name may hold single spaces ("Electron Framework"); no part of a row may
# start where another could, so a row is matched in time linear in its length
_ROW = re.compile(r"^\s+(?P<module>\S+(?: \S+)*)\s{2,}(?P<pc>0x[0-9a-fA-F]+)\s{2,}"
                  r"(?P<symbol>\S(?:.*\S)?)\s*$")
_SOURCE = re.compile(r" \((?P<file>[^()\s:]+):(?P<line>\d+)\)$")


def looks_like_sentry_apple(text: str) -> str:
    """Why the text is Sentry's issue view of an Apple crash (its headline
    ``EXC_...: Exception N, Code N, Subcode N`` and at least one frame row), or ``""``."""
    sample = text[:2_000_000]
    if "Exception " not in sample or "Subcode " not in sample:
        return ""
    lines = sample.split("\n")
    for i, line in enumerate(lines[:200]):
        m = _HEADLINE.match(line)
        if m is not None and any(
                _ROW.match(ln) for ln in lines[i + 1:i + 6]):
            return f"Sentry's Apple crash headline ({line.strip()[:60]!r}) and frame rows"
    return ""


def read_sentry_apple(draft: Draft, lines: Sequence[str]) -> None:
    """Read Sentry's issue view of an Apple crash into ``draft`` (see the module docs)."""
    draft.format = "sentry-apple"
    draft.kind = "native"
    draft.note("Sentry's issue view: taken as iOS (macOS crashes look the same)")
    start = 0
    for i, line in enumerate(lines):
        m = _HEADLINE.match(line)
        if m is not None:
            draft.set("exception", m.group("exc") if m.group("exc").startswith("EXC_")
                      else None)
            set_apple_signal(draft, m.group("sig") or (
                m.group("exc") if m.group("exc").startswith("SIG") else None))
            start = i + 1
            break
    for line in lines[start:start + 3]:
        detail = _DETAIL.match(line)
        if detail is not None:
            draft.set("code", detail.group("code"))
            draft.set("fault_address", (detail.group("addr") or "").lower() or None)
            break
    in_run = False
    for line in lines[start:]:
        row = _ROW.match(line)
        if row is None:
            if in_run and line.strip():
                break
            continue
        in_run = True
        symbol = row.group("symbol")
        source = _SOURCE.search(symbol)
        if source is not None:
            symbol = symbol[:source.start()]
        draft.add_frame(Frame(index=len(draft.frames) + draft.dropped_frames,
                              module=row.group("module"), pc=row.group("pc").lower(),
                              symbol=symbol, file=source.group("file") if source else None,
                              line=parse_int(source.group("line")) if source else None))
    if draft.dropped_frames:
        draft.note(f"{draft.dropped_frames} deeper frames not kept")
