"""Text from data made safe for a terminal.

Labels, device names, descriptions and error messages come from files a user (or another
program) wrote: ``campaign.json``, launch records, crash reports, app packages. Printed
raw, an ``ESC`` in them is an escape sequence the terminal obeys (ECMA-48: CSI ``ESC [``
clears the screen or moves the cursor, OSC ``ESC ]`` sets the window title or writes the
clipboard), and a bidirectional override (Unicode UAX #9: U+202A-U+202E, U+2066-U+2069)
reorders what is shown. :func:`printable` writes every such character as a visible escape
(``\\x1b``, ``\\u202e``) instead; newlines and tabs stay. A lone surrogate (what Python
makes of a file name's bytes that are not UTF-8, PEP 383) cannot be encoded at all, so a
print or a report would fail on it: it is written as the byte it stands for (``\\xff``).
"""

from __future__ import annotations

import re

__all__ = ["printable"]

#: C0 controls but tab and newline, DEL, C1 controls, and the bidi embedding, override and
#: isolate characters, and lone surrogates (PEP 383)
_UNSAFE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's stand-in for one byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every terminal control character written as a visible escape (module
    doc); text without one comes back unchanged."""
    if not isinstance(text, str):
        text = str(text)
    return _UNSAFE_RE.sub(_escape, text)
