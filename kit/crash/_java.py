"""Java and JavaScript stack frames in every shape a crash report or console prints them.

Java (``Throwable.printStackTrace`` and the consoles that re-print it):

* ``at pkg.Cls.method(File.java:12)`` - the JVM/ART form (also ``(Native Method)``,
  ``(Unknown Source:134)``);
* ``at pkg.Cls.method (File.java:12)`` and ``at pkg.Cls.method`` - Google Play Console;
* ``12 pkg.Cls.method(File.java:12)`` - Play Console ANR clusters (numbered lines);
* ``File.java:-2 - pkg.Cls.method`` - Bugsnag issue bodies;
* ``pkg.Cls.method (File.java:83);`` - App Center issue bodies.

JavaScript (React Native):

* Hermes ``fn@line:col`` (a release bundle is one file) and ``fn@file:line:col``; ``fn@-1``
  for native code; Crashlytics' ``fn (address at@1:1082033``;
* V8/JSC-style ``at fn (url:line:col)`` and ``at fn`` (Metro's terminal, LogBox);
* Expo CLI's ``at file:line:col in fn`` (``at [native code]:null in fn`` for native code);
* React component stacks ``in Component`` / ``in Component (created by Other)``.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._text import basename, parse_int
from .record import Frame

__all__ = ["java_frame", "join_wrapped_at", "js_frame", "js_frames", "js_stack",
           "JAVA_FRAME_HINT"]

# Play Console drops "<init>" from a constructor's frame ("at pkg.Cls. (Cls.java:16)")
_JAVA = re.compile(r"^\s*(?:at\s+|\d{1,4}\s+)(?P<sym>[\w$.<>\-]+[\w$>]|[\w$.<>\-]+\.(?= \())\s?"
                   r"(?:\((?P<loc>[^)]*)\)?)?\s*;?\s*$")
_BUGSNAG = re.compile(r"^\s*(?P<file>[\w$.-]+\.(?:java|kt)):(?P<line>-?\d+) - (?P<sym>[\w$.<>]+)\s*$")
_APPCENTER = re.compile(r"^\s*(?P<sym>[\w$]+(?:\.[\w$<>]+){2,}) \((?P<loc>[^)]*)\);\s*$")
#: Cheap test that a line may hold a Java frame (what callers check before parsing).
JAVA_FRAME_HINT = re.compile(r"^\s*(?:at\s|\d{1,4}\s+[\w$]+\.|[\w$.-]+\.(?:java|kt):-?\d+ - |"
                             r"[\w$]+\.[\w$.<>]+ \([^)]*\);)")


def join_wrapped_at(lines: Sequence[str]) -> list[str]:
    """``lines`` with a Java frame hard-wrapped after its ``at`` (a line that is ``at`` alone,
    its frame on the next line, as a narrow console or e-mail wraps it) joined into one."""
    out: list[str] = []
    pending: str | None = None
    for line in lines:
        if pending is not None and line.strip():
            out.append(f"{pending} {line.strip()}")
            pending = None
            continue
        if line.strip() == "at":
            pending = line.rstrip()
            continue
        out.append(line)
    if pending is not None:
        out.append(pending)
    return out


def java_frame(index: int, line: str) -> Frame | None:
    """One Java frame line as a :class:`Frame` (``module``/``file`` the source file), or
    ``None`` when the line is not one. A symbol must hold a ``.`` (``pkg.Cls.method``)."""
    # Bugsnag's shape holds " - ", App Center's ");": tested before their regexes
    m = _BUGSNAG.match(line) if " - " in line else None
    if m is not None:
        return Frame(index=index, module=m.group("file"), symbol=m.group("sym"),
                     file=m.group("file"), line=parse_int(m.group("line")))
    m = (_APPCENTER.match(line) if ");" in line else None) or _JAVA.match(line)
    if m is None or "." not in m.group("sym"):
        return None
    loc = (m.group("loc") or "").strip()
    file, _, lineno = loc.partition(":")
    file = file.strip()
    symbol = m.group("sym")
    symbol = symbol + "<init>" if symbol.endswith(".") else symbol
    return Frame(index=index, module=file or None, symbol=symbol, file=file or None,
                 line=parse_int(lineno))


_HERMES = re.compile(r"^\s*(?P<fn>[^@\s]*)@(?P<loc>\S*?)(?::(?P<line>\d+)(?::(?P<col>\d+))?)?\s*$")
_ADDRESS_AT = re.compile(r"^\s*(?P<fn>\S+) \(address at\s*(?P<loc>\S*?)@?(?P<line>\d+):(?P<col>\d+)\)?\s*$")
_AT_LOC = re.compile(r"^\s*at (?P<fn>.+?) \((?P<loc>\S+?):(?P<line>\d+):(?P<col>\d+)\)\s*$")
_AT_BARE = re.compile(r"^\s*at (?P<fn>[\w$.<>\[\]]+(?:\([\w$.]*\))?)\s*$")
_EXPO = re.compile(r"^\s*at (?P<loc>\S+?|\[native code\]):(?P<line>\d+|null)(?::(?P<col>\d+))? in "
                   r"(?P<fn>\S(?:.*\S)?)\s*$")
_COMPONENT = re.compile(r"^\s*in (?P<fn>[\w$.()]+)(?: \(created by [\w$.()]+\))?(?: \(at .*\))?\s*$")


def _js_module(loc: str) -> str | None:
    """The file a JS location names: a URL's path without its query (Metro's bundle URLs
    carry ``?platform=ios&dev=true...``, or ``//&platform=...``)."""
    if not loc or loc.isdigit():
        return None
    if "://" in loc:
        loc = re.split(r"[?&]", loc, maxsplit=1)[0].rstrip("/")
    return basename(loc) or None


def js_frame(index: int, line: str) -> Frame | None:
    """One JavaScript frame line (any shape in the module docs), or ``None``."""
    for pattern in (_EXPO, _AT_LOC, _ADDRESS_AT):
        m = pattern.match(line)
        if m is not None:
            loc = m.groupdict().get("loc") or ""
            if loc == "[native code]":
                loc = ""
            return Frame(index=index, symbol=m.group("fn"), module=_js_module(loc),
                         file=loc if loc and not loc.isdigit() else None,
                         line=parse_int(m.group("line")), offset=parse_int(m.group("col")))
    m = _AT_BARE.match(line) or _COMPONENT.match(line)
    if m is not None:
        return Frame(index=index, symbol=m.group("fn"))
    m = _HERMES.match(line)
    if m is None or not (m.group("fn") or m.group("loc")):
        return None
    loc, lineno, col = m.group("loc"), m.group("line"), m.group("col")
    if loc == "-1" or loc == "":
        loc = ""  # fn@-1: native code, no location
    elif loc.isdigit() and lineno is not None and col is None:
        loc, lineno, col = "", loc, lineno  # Hermes: fn@line:col
    return Frame(index=index, symbol=m.group("fn") or "<anonymous>",
                 module=_js_module(loc), file=loc or None,
                 line=parse_int(lineno), offset=parse_int(col))


def js_frames(lines: Sequence[str]) -> list[Frame]:
    """Every JS frame in ``lines``, renumbered from 0 (other lines are skipped)."""
    frames: list[Frame] = []
    for line in lines:
        frame = js_frame(len(frames), line)
        if frame is not None:
            frames.append(frame)
    return frames


def js_stack(lines: Sequence[str]) -> list[Frame]:
    """The JS call stack in ``lines``; the React component stack (``in Component``) only
    when there is no call stack (it says where in the UI, not which function threw)."""
    calls: list[Frame] = []
    components: list[Frame] = []
    for line in lines:
        component = _COMPONENT.match(line)
        if component is not None:
            components.append(Frame(index=len(components), symbol=component.group("fn")))
            continue
        frame = js_frame(len(calls), line)
        if frame is not None:
            calls.append(frame)
    return calls or components
