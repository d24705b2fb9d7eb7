"""Helpers shared by the Apple report parsers (``.ips`` in :mod:`kit.crash.apple`, legacy
text in :mod:`kit.crash.crash_text`)."""

from __future__ import annotations

import re

from ._draft import Draft

__all__ = ["ADDRESS_AT", "abi", "mark_js_fatal", "leb_note"]

ADDRESS_AT = re.compile(r"\bat (0x[0-9a-fA-F]+)")
# Apple "Code Type" / cpuType spellings -> the ABI names tombstones use
_ABIS = {"ARM-64": "arm64", "ARM64": "arm64", "ARM64E": "arm64e", "X86-64": "x86_64",
         "ARM": "arm", "X86": "x86", "ARM64_32": "arm64_32"}


def abi(text: str | None) -> str | None:
    """An Apple ``Code Type`` / ``cpuType`` value as the ABI name tombstones use
    (``ARM-64 (Native)`` -> ``arm64``), or ``None``."""
    if not text:
        return None
    word = text.split(" (")[0].strip()
    return _ABIS.get(word.upper(), word)


#: What React Native's fatal JS error handler leaves in an Apple report: RCTFatal raises an
#: NSException named RCTFatalException ("Unhandled JS Exception: ...") that aborts the app.
_JS_FATAL_MARKS = ("RCTFatal", "Unhandled JS Exception")


def mark_js_fatal(draft: Draft) -> None:
    """Class an abort raised by React Native's RCTFatal as a JS error (kind ``js``), as
    Android's ``JavascriptException`` is: the app's JavaScript failed, not native code."""
    text = "\n".join([str(draft.get("abort_message") or ""), *draft.notes])
    if any(mark in text for mark in _JS_FATAL_MARKS):
        draft.kind = "js"
        draft.note("React Native fatal JS error (RCTFatal) ended the process")


def leb_note(count: int, symbols: list[str]) -> str:
    """Note naming the top of an uncaught exception's backtrace (the frames stay the
    crashing thread's, as in Apple's report)."""
    top = ", ".join(symbols[:3])
    return f"last exception backtrace ({count} frames; an uncaught exception ended the " \
           f"process): {top}"
