"""Helpers shared by the Apple report parsers (``.ips`` in :mod:`kit.crash.apple`, legacy
text in :mod:`kit.crash.crash_text`)."""

from __future__ import annotations

import re

from ._draft import Draft
from ._text import signal_number

__all__ = ["ADDRESS_AT", "abi", "mark_js_fatal", "leb_note", "set_apple_signal"]

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


# "SIGKILL (Code Signature Invalid)" (.ips), "SIGKILL - CODESIGNING" (text): a signal and
# what the kernel says about it
_SIGNAL_DETAIL = re.compile(r"^(?P<sig>SIG[A-Z0-9]+)(?:\s*(?:-|\()\s*(?P<detail>.*?)\)?)?\s*$")


def set_apple_signal(draft: Draft, text: str | None) -> None:
    """Set ``signal_name``/``signal`` from an Apple report's signal text (``SIGSEGV``,
    ``SIGKILL (Code Signature Invalid)``, ``SIGKILL - CODESIGNING``); a detail after the
    name goes to a note, and a text that names no signal (``EXC_CRASH (Code Signature
    Invalid)``) sets no signal."""
    text = (text or "").strip()
    if not text:
        return
    m = _SIGNAL_DETAIL.match(text)
    if m is None and "code signature" in text.lower():
        # old macOS: "EXC_CRASH (Code Signature Invalid)"; the kernel kills (SIGKILL) a
        # process whose code pages fail validation (Apple TN2151, "Code signing")
        draft.set("signal_name", "SIGKILL")
        draft.set("signal", 9)
        draft.note(f"{text[:80]}: the kernel kills the process (SIGKILL)")
        return
    if m is None:
        draft.note(f"the exception names no signal: {text[:80]!r}")
        return
    draft.set("signal_name", m.group("sig"))
    draft.set("signal", signal_number(m.group("sig"), darwin=True))
    if m.group("detail"):
        draft.note(f"the kernel's word on the signal: {m.group('detail')[:80]}")
