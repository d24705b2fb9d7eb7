"""Reading the race detector's XML (valgrind XML output, protocol version 4).

Format: valgrind's ``docs/internals/xml-output-protocol4.txt``. The top element
``<valgrindoutput>`` holds a ``<preamble>`` (its lines name the version: ``Using
Valgrind-3.24.0 ...``), ``<protocoltool>``, a ``<status>`` with ``RUNNING`` at the start and
``FINISHED`` at the end (a file without the second means the tool itself died before it
could finish), a ``<fatal_signal>`` when the client died of a signal, and one ``<error>``
per finding:

* helgrind, ``<kind>Race</kind>``: ``<xwhat><text>Possible data race during write of size 8
  at 0x... by thread #2</text></xwhat>``, the access's ``<stack>``, then ``<xauxwhat><text>
  This conflicts with a previous read of size 8 by thread #3</text></xauxwhat>`` and the
  earlier access's ``<stack>``; ``<auxwhat>`` lines say where the address is ("Address 0x..
  is in the BSS segment of /path", "... bytes inside a block of size N alloc'd");
* DRD, ``<kind>ConflictingAccess</kind>``: ``<what>Conflicting store by thread 4 at
  0x... size 8</what>``, the access's ``<stack>``, ``<auxwhat>Allocation context: BSS
  section of /path</auxwhat>``, and the other thread's segment as
  ``<other_segment_start>`` / ``<other_segment_end>`` (each a ``<stack>``).

The file is parsed with defusedxml (a DTD, entity declarations and external references are
refused, so no entity expansion), incrementally and at most :data:`MAX_XML_BYTES`; a file
cut short, too big, or not XML at all gives the findings read so far and ``read_error``
saying why. :func:`read_report` never raises.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element, ParseError, TreeBuilder

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

__all__ = ["Frame", "Race", "ToolReport", "read_report", "parse_report_bytes", "MAX_XML_BYTES",
           "RACE_KINDS"]

#: The most XML read from one launch (a helgrind launch of the default scenario writes 1-3 MB).
MAX_XML_BYTES = 64 * 1024 * 1024
#: Each tool's error kind for a data race.
RACE_KINDS = {"helgrind": "Race", "drd": "ConflictingAccess"}
_CHUNK = 1 << 20
_HG_RE = re.compile(r"during (read|write) of size (\d+) at (0x[0-9A-Fa-f]+) by thread #(\d+)")
_HG_OTHER_RE = re.compile(r"conflicts with a previous (read|write) of size \d+ by thread #(\d+)")
_DRD_RE = re.compile(r"Conflicting (load|store) by thread (\d+) at (0x[0-9A-Fa-f]+) size (\d+)")
_VERSION_RE = re.compile(r"Valgrind-(\d+\.\d+(?:\.\d+)?)")


@dataclasses.dataclass(frozen=True)
class Frame:
    """One stack frame as the tool printed it: ``ip`` (absolute), ``module`` (the object's
    path, ``<obj>``), ``symbol`` (``<fn>``, ``None`` when the object has no symbol there),
    and ``file``/``line`` when debug information had them; ``offset`` in ``module`` when
    the tool printed it (ThreadSanitizer's ``(module+0x..)``), else ``None``."""

    ip: int | None
    module: str | None
    symbol: str | None
    file: str | None = None
    line: int | None = None
    offset: int | None = None


@dataclasses.dataclass(frozen=True)
class Race:
    """One data race the tool reported.

    Attributes:
        kind: the tool's error kind (``Race`` or ``ConflictingAccess``).
        access: ``read``/``write`` (helgrind) or ``load``/``store`` (DRD).
        address: the accessed address (absolute, in the launch's process).
        size: bytes accessed.
        thread: the tool's number of the accessing thread.
        other_thread: the tool's number of the conflicting thread (helgrind), else ``None``.
        stack: the access's stack, innermost first.
        other_stack: helgrind: the conflicting earlier access's stack; DRD: the stack at the
            end of the other thread's conflicting segment (``()`` when not given).
        where: the tool's own words on where the address is (its ``auxwhat`` lines).
    """

    kind: str
    access: str
    address: int
    size: int
    thread: int | None
    other_thread: int | None
    stack: tuple[Frame, ...]
    other_stack: tuple[Frame, ...]
    where: str | None


@dataclasses.dataclass(frozen=True)
class ToolReport:
    """What one XML file says.

    Attributes:
        tool: ``helgrind``/``drd`` (``<protocoltool>``), or ``None`` if never read.
        version: valgrind's version from the preamble, e.g. ``3.24.0``.
        races: every race read, in file order.
        other_errors: other error kinds and how many of each (e.g. ``{"LockOrder": 1}``).
        finished: the closing ``FINISHED`` status was read (the tool ended normally).
        fatal_signal: the signal that killed the client (``SIGSEGV``), if any.
        bytes_read: how much of the file was read.
        read_error: why the file could not be read whole, or ``None``.
        capped: reading stopped at :data:`MAX_XML_BYTES` (the rest was never looked at).
    """

    tool: str | None
    version: str | None
    races: tuple[Race, ...]
    other_errors: dict[str, int]
    finished: bool
    fatal_signal: str | None
    bytes_read: int
    read_error: str | None
    capped: bool = False

    @property
    def complete(self) -> bool:
        """The whole file was read and the tool finished: the race list is all there is."""
        return self.finished and self.read_error is None


def _int(text: str | None, base: int = 10) -> int | None:
    try:
        return int(text, base) if text else None
    except ValueError:
        return None


def _frames(stack: Element | None, limit: int) -> tuple[Frame, ...]:
    if stack is None:
        return ()
    out = []
    for fr in stack.findall("frame")[:limit]:
        out.append(Frame(ip=_int(fr.findtext("ip"), 16), module=fr.findtext("obj"),
                         symbol=fr.findtext("fn"), file=fr.findtext("file"),
                         line=_int(fr.findtext("line"))))
    return tuple(out)


def _race(error: Element, kind: str, frames: int) -> Race | None:
    where = " ".join((a.text or "").strip() for a in error.findall("auxwhat")) or None
    if kind == "Race":  # helgrind
        match = _HG_RE.search(error.findtext("xwhat/text") or "")
        if match is None:
            return None
        stack: Element | None = None
        other_stack: Element | None = None
        other_thread = None
        after_other = False
        for child in error:
            if child.tag == "xauxwhat":
                other = _HG_OTHER_RE.search(child.findtext("text") or "")
                if other is not None:
                    other_thread = int(other.group(2))
                    after_other = True
            elif child.tag == "stack":
                if stack is None:
                    stack = child
                elif after_other and other_stack is None:
                    other_stack = child
        return Race(kind, match.group(1), int(match.group(3), 16), int(match.group(2)),
                    int(match.group(4)), other_thread, _frames(stack, frames),
                    _frames(other_stack, frames), where)
    match = _DRD_RE.search(error.findtext("what") or "")
    if match is None:
        return None
    segment = error.find("other_segment_end/stack")
    if segment is None:
        segment = error.find("other_segment_start/stack")
    return Race(kind, match.group(1), int(match.group(3), 16), int(match.group(4)),
                int(match.group(2)), None, _frames(error.find("stack"), frames),
                _frames(segment, frames), where)


class _Collector:
    """A parser target: builds each top-level child of ``<valgrindoutput>``, reads it and
    drops it, so memory stays bounded by one element."""

    def __init__(self, frames: int) -> None:
        self._builder = TreeBuilder()
        self._depth = 0
        self._frames = frames
        self.tool: str | None = None
        self.version: str | None = None
        self.races: list[Race] = []
        self.other: dict[str, int] = {}
        self.state: str | None = None
        self.fatal: str | None = None
        self.seen_root = False

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if self._depth == 0:
            if tag != "valgrindoutput":
                raise ValueError(f"not valgrind XML (top element <{tag}>)")
            self.seen_root = True
        self._depth += 1
        if self._depth >= 2:
            self._builder.start(tag, attrs)

    def data(self, text: str) -> None:
        if self._depth >= 2:
            self._builder.data(text)

    def end(self, tag: str) -> None:
        if self._depth >= 2:
            elem = self._builder.end(tag)
            if self._depth == 2:
                self._take(elem)
                self._builder = TreeBuilder()
        self._depth -= 1

    def close(self) -> None:
        return None

    def _take(self, elem: Element) -> None:
        if elem.tag == "protocoltool":
            self.tool = (elem.text or "").strip() or None
        elif elem.tag == "preamble":
            for line in elem.findall("line"):
                match = _VERSION_RE.search(line.text or "")
                if match:
                    self.version = match.group(1)
        elif elem.tag == "status":
            self.state = (elem.findtext("state") or "").strip()
        elif elem.tag == "fatal_signal":
            self.fatal = elem.findtext("signame") or elem.findtext("signo") or "unknown"
        elif elem.tag == "error":
            kind = (elem.findtext("kind") or "").strip()
            race = _race(elem, kind, self._frames) if kind in RACE_KINDS.values() else None
            if race is not None:
                self.races.append(race)
            else:
                self.other[kind or "unknown"] = self.other.get(kind or "unknown", 0) + 1


def _parse_chunks(chunks: Any, frames: int) -> tuple[_Collector, int, str | None]:
    collector = _Collector(frames)
    parser = DefusedXMLParser(target=collector, forbid_dtd=True, forbid_entities=True,
                              forbid_external=True)
    read = 0
    error: str | None = None
    try:
        for chunk in chunks:
            read += len(chunk)
            parser.feed(chunk)
        parser.close()
    except ParseError as exc:
        error = f"the XML is cut or malformed ({exc})"
    except DefusedXmlException as exc:
        error = f"the XML was refused: {type(exc).__name__} (DTDs and entities are not read)"
    except ValueError as exc:
        error = str(exc)
    except _TooBig:
        error = f"the XML is larger than {MAX_XML_BYTES:,} bytes; read only that much"
    if read == 0:
        error = "the XML file is empty"
    return collector, read, error


class _TooBig(Exception):
    pass


def _report(collector: _Collector, read: int, error: str | None) -> ToolReport:
    if error is None and not collector.seen_root:
        error = "the XML has no <valgrindoutput> element"
    return ToolReport(tool=collector.tool, version=collector.version,
                      races=tuple(collector.races), other_errors=dict(collector.other),
                      finished=collector.state == "FINISHED", fatal_signal=collector.fatal,
                      bytes_read=read, read_error=error,
                      capped=error is not None and error.startswith("the XML is larger"))


def parse_report_bytes(data: bytes, frames: int = 12) -> ToolReport:
    """:func:`read_report` over bytes already in memory (at most :data:`MAX_XML_BYTES` of
    them are parsed). Never raises."""
    def chunks() -> Any:
        for at in range(0, min(len(data), MAX_XML_BYTES), _CHUNK):
            yield data[at:min(at + _CHUNK, MAX_XML_BYTES)]
        if len(data) > MAX_XML_BYTES:
            raise _TooBig()
    return _report(*_parse_chunks(chunks(), frames))


def read_report(path: Path, frames: int = 12) -> ToolReport:
    """Read the tool's XML file: at most :data:`MAX_XML_BYTES`, in 1 MiB blocks, from a
    regular file only (a device or a FIFO is refused). Never raises: what could not be read
    is in ``read_error``.

    Args:
        frames: the most frames kept per stack (valgrind prints 12 by default).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return _report(_Collector(frames), 0, f"the tool wrote no XML ({exc.strerror or exc})")
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return _report(_Collector(frames), 0, f"{path.name} is not a regular file")

        def chunks() -> Any:
            left = MAX_XML_BYTES
            while left > 0:
                block = fh.read(min(_CHUNK, left))
                if not block:
                    return
                left -= len(block)
                yield block
            if fh.read(1):
                raise _TooBig()
        return _report(*_parse_chunks(chunks(), frames))
