"""Text helpers shared by the crash parsers: decoding, logcat prefixes, signal names.

Logcat prefix styles (``adb logcat -v <format>``; https://developer.android.com/tools/logcat
and docs/formats.md section 1):

* threadtime (default): ``MM-DD HH:MM:SS.mmm  PID  TID L TAG     : msg`` (``-v year`` adds
  ``YYYY-``, ``-v uid`` adds a UID column before the PID);
* brief: ``L/TAG     ( PID): msg``;
* Android Studio copies: ``YYYY-MM-DD HH:MM:SS.mmm PID-TID TAG pkg L msg`` (current) and
  ``[YYYY-]MM-DD HH:MM:SS.mmm PID-TID/pkg L/TAG: msg`` (older; before Android Studio 3 the
  year was not printed, and 1.x printed U+FE55 SMALL COLON for the colon);
* tag: ``L/TAG: msg``, and ``L TAG: msg`` (a crash SDK's copy, e.g. Bugly's, with a space
  for the slash);
* time (``-v time``, and Eclipse/DDMS copies with a colon after the time):
  ``MM-DD HH:MM:SS.mmm[:] L/TAG( PID): msg``;
* tabs (a copy from a table view, fields separated by tabs):
  ``YYYY-MM-DD<TAB>HH:MM:SS.mmm<TAB>PID<TAB>TID<TAB>L<TAB>...TAG<TAB>...msg``;
* raw: no prefix (a paste with the prefixes dropped).
"""

from __future__ import annotations

import dataclasses
import re
import signal as _signal
from collections import Counter
from typing import Iterable

__all__ = ["decode", "LogLine", "split_logcat", "signal_number", "signal_name",
           "parse_int", "basename", "matching_open_paren", "clip", "json_string_end",
           "ELISION", "ELIDED_NOTE"]

#: Most characters of user input echoed in an error line or a note (issue #13).
ECHO_CHARS = 200


def clip(value: object, limit: int = ECHO_CHARS) -> str:
    """``repr``-free text of ``value`` cut to ``limit`` characters (``...`` marks a cut)."""
    text = str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."

#: Most characters of input any parser looks at (a tombstone with every thread and the
#: memory map is ~1 MB; anything beyond 8 MB is cut and the cut is noted).
MAX_INPUT_CHARS = 8 * 1024 * 1024


def decode(text: str | bytes) -> tuple[str, list[str]]:
    """Input as ``str`` with ``\\n`` line ends, plus notes on what had to be repaired.

    Bytes are decoded as UTF-8 with replacement characters (and a note) on bad bytes; a BOM
    and NUL bytes are dropped; input past :data:`MAX_INPUT_CHARS` is cut (noted). Never raises.
    """
    notes: list[str] = []
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", errors="replace")
            notes.append(f"input is not valid UTF-8 (first bad byte at offset {exc.start}); "
                         "bad bytes replaced")
    elif not isinstance(text, str):
        return "", [f"input is a {type(text).__name__}, not text"]
    if len(text) > MAX_INPUT_CHARS:
        notes.append(f"input cut at {MAX_INPUT_CHARS} of {len(text)} characters")
        text = text[:MAX_INPUT_CHARS]
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        text = text.replace("\x00", "")
        notes.append("NUL bytes dropped")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, notes


@dataclasses.dataclass(frozen=True)
class LogLine:
    """One logcat line with its prefix taken apart (fields are ``None`` when absent)."""

    msg: str
    tag: str | None = None
    level: str | None = None
    pid: int | None = None
    tid: int | None = None
    time: str | None = None
    #: the process column of Android Studio's logcat (its package name, or ``pid-N`` /
    #: ``?`` when Studio did not know it)
    process: str | None = None

    @classmethod
    def bare(cls, msg: str, tag: str | None = None, level: str | None = None,
             pid: int | None = None, tid: int | None = None,
             time: str | None = None, process: str | None = None) -> "LogLine":
        """``LogLine(msg, ...)``, made without the frozen ``__init__``'s seven
        ``object.__setattr__`` calls (the parsers make one per line of a report)."""
        line = object.__new__(cls)
        line.__dict__.update(msg=msg, tag=tag, level=level, pid=pid, tid=tid, time=time,
                             process=process)
        return line


_LEVEL = r"(?P<level>[VDIWEFAS])"
# 05-01 12:00:01.234  1234  1250 F libc    : Fatal signal 11 ...   (-v year / -v uid too)
_THREADTIME = re.compile(
    r"^(?P<time>(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+)\s+(?:[A-Za-z_][\w.]*\s+|\d+\s+(?=\d+\s+\d+\s))?"
    r"(?P<pid>\d+)\s+(?P<tid>\d+)\s+" + _LEVEL + r"\s+(?P<tag>.*?)\s*: (?P<msg>.*)$")
# F/libc    ( 1234): Fatal signal 11 ...
_BRIEF = re.compile(r"^" + _LEVEL + r"/(?P<tag>[^(\n]*?)\s*\(\s*(?P<pid>\d+)\): (?P<msg>.*)$")
# 2024-05-01 12:00:01.234  1234-1250  libc   com.example.app   A  Fatal signal 11 ...
_STUDIO = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+)\s+(?P<pid>\d+)-(?P<tid>\d+)\s+"
    r"(?P<tag>\S+)\s+(?:(?P<proc>\S+)\s+)?" + _LEVEL + r"\s{1,3}(?P<msg>.*)$")
# 2024-05-01 12:00:01.234 1234-1250/com.example.app A/libc: Fatal signal 11 ...
_STUDIO_OLD = re.compile(
    r"^(?P<time>(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+)\s+(?P<pid>\d+)-(?P<tid>\d+)/\S*\s+"
    + _LEVEL + r"/(?P<tag>[^:\ufe55]+?)[:\ufe55] (?P<msg>.*)$")
# F/DEBUG: backtrace:
_TAG = re.compile(r"^" + _LEVEL + r"/(?P<tag>[\w.\-]+)\s*: (?P<msg>.*)$")
# E AndroidRuntime: FATAL EXCEPTION: mqt_js   (a crash SDK's copy: a space for the slash)
_TAG_SPACE = re.compile(r"^" + _LEVEL + r" (?P<tag>[A-Za-z][\w.\-]*): (?P<msg>.*)$")
# 08-17 19:29:52.131: E/CRASH(8989): backtrace:   (-v time; DDMS adds the colon)
_TIME = re.compile(
    r"^(?P<time>(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+):?\s+" + _LEVEL
    + r"/(?P<tag>[^(\n]*?)\s*\(\s*(?P<pid>\d+)\): (?P<msg>.*)$")
# 2025-03-31<TAB>13:17:21.785<TAB>23022<TAB>23022<TAB>F<TAB><TAB>DEBUG<TAB><TAB>#33 pc ...
_TABS = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d\t\d\d:\d\d:\d\d\.\d+)\t(?P<pid>\d+)\t(?P<tid>\d+)\t"
    + _LEVEL + r"\t+(?P<tag>[^\t]*)\t+(?P<msg>.*)$")
# 13:24:30 A DEBUG : #00 pc 00204064 ...   (a device farm's log view: the clock alone, the
# level, the tag; Sauce Labs)
_CLOCK = re.compile(r"^(?P<time>\d\d:\d\d:\d\d(?:\.\d+)?)\s+" + _LEVEL
                    + r"\s+(?P<tag>[^:\s]*)\s*: (?P<msg>.*)$")

# tabs first: a tab-separated line also fits threadtime's loose tag when its message holds
# ": " (every frame's "BuildId: ")
_STYLES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tabs", _TABS), ("threadtime", _THREADTIME), ("studio", _STUDIO_OLD), ("studio", _STUDIO),
    ("time", _TIME), ("brief", _BRIEF), ("tag", _TAG), ("tag", _TAG_SPACE), ("clock", _CLOCK))
# every style's pattern is anchored: a line's first character says which can match (a digit:
# the dated and clocked styles; a level letter: brief and tag), a quick test before the regexes
_DIGIT_STYLES = tuple((n, p) for n, p in _STYLES if n in ("tabs", "threadtime", "studio", "time",
                                                           "clock"))
_LEVEL_STYLES = tuple((n, p) for n, p in _STYLES if n in ("brief", "tag"))
_LEVELS = frozenset("VDIWEFAS")


def _candidates(line: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The styles of :data:`_STYLES` (in its order) whose pattern can match ``line``."""
    first = line[:1]
    if first.isdigit():  # str.isdigit holds for every character that \\d matches
        return _DIGIT_STYLES
    if first in _LEVELS:
        return _LEVEL_STYLES
    return ()


def _match(pattern: re.Pattern[str], line: str) -> LogLine | None:
    m = pattern.match(line)
    return None if m is None else _line(m)


def _line(m: re.Match[str]) -> LogLine:
    groups = m.groupdict()
    pid = groups.get("pid")
    tid = groups.get("tid")
    return LogLine.bare(groups["msg"], (groups.get("tag") or "").strip() or None,
                        groups.get("level"), int(pid) if pid else None,
                        int(tid) if tid else None, groups.get("time"), groups.get("proc"))


def split_logcat(lines: Iterable[str]) -> tuple[str, list[LogLine]]:
    """Detect the logcat prefix style and strip it from every line.

    Returns ``(style, lines)``: ``style`` is ``threadtime``, ``brief``, ``studio``, ``tag``,
    ``time``, ``tabs``, ``clock`` or ``raw`` (the style that most lines carry; ``raw`` when fewer than one line in five, or
    none, has a prefix; the indented lines right after a prefixed line, a message's
    continuations, are not counted). Lines without the prefix are kept with ``tag=None``
    (continuations, ``--------- beginning of crash`` markers, pasted text).
    """
    lines = list(lines)
    votes: Counter[str] = Counter()
    # the first match of each voting line, by line index: the reading below reuses it
    # (the patterns are tried in the same order there, so the match is the same)
    matched: dict[int, tuple[str, re.Match[str] | None]] = {}
    voters = sampled = 0
    continues = False
    for i, line in enumerate(lines):
        if sampled >= 400:
            break
        if not line or line.isspace():  # blank (str.strip() would copy the line)
            continue
        sampled += 1
        if continues and line[:1] in (" ", "\t"):
            # a multi-line message's continuation, which Android Studio prints indented and
            # without the prefix: it does not vote
            continue
        voters += 1
        continues = False
        matched[i] = ("", None)
        for name, pattern in _candidates(line):
            m = pattern.match(line)
            if m is not None:
                votes[name] += 1
                matched[i] = (name, m)
                continues = True
                break
    if not votes:
        return "raw", list(map(LogLine.bare, lines))
    style, count = votes.most_common(1)[0]
    if count * 5 < voters:
        return "raw", list(map(LogLine.bare, lines))
    patterns = [p for name, p in _STYLES if name == style]
    # the first characters the style's lines can start with (see _candidates)
    digits = any(p is patterns[0] for _, p in _DIGIT_STYLES)
    out: list[LogLine] = []
    bare = LogLine.bare
    for i, line in enumerate(lines):
        parsed = None
        seen = matched.get(i)
        if seen is not None and seen[0] == style:
            parsed = _line(seen[1])  # type: ignore[arg-type]
        elif (seen is None or seen[1] is not None) and (
                line[:1].isdigit() if digits else line[:1] in _LEVELS):
            # not voted (a continuation, past the sample), or matched an earlier style
            for pattern in patterns:
                parsed = _match(pattern, line)
                if parsed is not None:
                    break
        out.append(parsed if parsed is not None else bare(line))
    return style, out


_SIGNALS: dict[str, int] = {
    "SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
    "SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
    "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGSYS": 31}
# Darwin numbers differ for a few signals (SIGBUS 10, SIGSYS 12); Apple reports name them.
_DARWIN_SIGNALS: dict[str, int] = {**_SIGNALS, "SIGBUS": 10, "SIGSYS": 12, "SIGUSR1": 30,
                                   "SIGUSR2": 31, "SIGEMT": 7}
_NAMES: dict[int, str] = {v: k for k, v in _SIGNALS.items()}


def signal_number(name: str | None, darwin: bool = False) -> int | None:
    """Linux (or Darwin) number of a signal name such as ``SIGSEGV``; ``None`` if unknown."""
    if not name:
        return None
    name = name.strip().upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    return (_DARWIN_SIGNALS if darwin else _SIGNALS).get(name)


def signal_name(number: int | None) -> str | None:
    """Linux name of a signal number (``11`` -> ``SIGSEGV``); ``None`` if unknown."""
    if number is None:
        return None
    name = _NAMES.get(number)
    if name is None:
        try:
            name = _signal.Signals(number).name
        except ValueError:
            return None
    return name


def parse_int(text: str | None, base: int = 10) -> int | None:
    """``int(text, base)``, or ``None`` for ``None``/empty/garbage or absurd sizes."""
    if text is None:
        return None
    text = text.strip()
    if not text or len(text) > 40:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def matching_open_paren(text: str) -> int:
    """Index of the ``(`` that matches the ``)`` ending ``text``, or -1.

    Symbols carry their own parentheses (``f(int)``, ``(anonymous namespace)``), so a
    trailing ``(symbol+offset)`` group is found from the right, by depth.
    """
    depth = 0
    end = len(text)
    while True:  # from paren to paren, right to left (str.rfind, not a loop over characters)
        i = max(text.rfind("(", 0, end), text.rfind(")", 0, end))
        if i < 0:
            return -1
        if text[i] == ")":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i
        end = i


def basename(path: str) -> str:
    """Last component of a ``/`` or ``\\`` path (``base.apk!libx.so`` stays whole)."""
    path = path.rstrip("/\\")
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[cut + 1:] if cut >= 0 else path


def json_string_end(text: str, start: int) -> int:
    """Index just past the closing quote of the JSON string whose content starts at
    ``start`` (just after its opening quote), or ``-1`` when it is not closed.

    A quote is escaped when an odd number of backslashes stands before it; each backslash
    is looked at once, so the scan is linear and holds no state per character (a regular
    expression's ``(?:[^"\\\\]|\\\\.)*`` keeps one backtracking mark per character: a 5 MB
    string took 650 MB; issue #46 family 4).
    """
    pos = start
    while True:
        quote = text.find('"', pos)
        if quote < 0:
            return -1
        back = quote
        while back > pos and text[back - 1] == "\\":
            back -= 1
        if (quote - back) % 2 == 0:
            return quote + 1
        pos = quote + 1


#: a line a paster put where they left frames out (``...``, ``…``, ``[...]``, ``(...)``,
#: ``... 12 more frames``): a frame run goes on after it (issue #45 family 3)
ELIDED_NOTE = "a '...' line among the frames: frames left out by the paster"
ELISION = re.compile(r"^\s*(?:\.{3,}|…|\[\s*(?:\.{3}|…)\s*\]|\(\s*(?:\.{3}|…)\s*\)|<\s*(?:\.{3}|…)\s*>"
                     r"|(?:\.{3}|…)\s*\(?\d+ (?:more |other )?(?:frames?|lines?)(?: \w+)?\)?)\s*$")
