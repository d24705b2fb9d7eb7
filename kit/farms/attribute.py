"""Per-launch attribution: a farm session's device log cut into launches, and every crash
in it given to the launch it belongs to.

A farm hands over one device log per session (logcat on Android, syslog on iOS), covering
hundreds of cold launches. The kit marks every launch in that log itself: the app logs one
``COLDSTART {json}`` line per phase with the launch id the kit gave it (docs/app.md), so
the first such line of a launch id is its marker, and the line's logcat / syslog prefix
names the launch's process (its pid). The cut:

1. **markers** - each launch id's first marker line starts its window, which runs to the
   next launch's first marker; the pid of its marker lines is its process;
2. **processes without a marker** - an app process (``ActivityManager: Start proc
   PID:APP``) that died before its first line belongs to the launch without a pid between
   the two launches around it, when exactly one process and one such launch are there;
3. **crash blocks** - a tombstone summary (``DEBUG`` lines from ``*** *** ***``, with the
   ``libc`` ``Fatal signal`` line of the same pid), a ``FATAL EXCEPTION``
   (``AndroidRuntime``), a low-memory kill (``lowmemorykiller: Kill 'APP' (PID)``) or an
   ``ANR in APP`` (``ActivityManager``) is one block; its pid is the one it names
   (``pid: N`` / ``PID: N`` / ``(PID)``).

A block goes to the launch of its pid (``how: pid``; a tombstone written seconds later,
after the next launch started, still goes to the launch that crashed), else to the launch
whose window it falls in (``how: window``), else to the launch whose time span, as the
kit recorded it (``started_at``, ``wall_ms``), holds it (``how: time``): the log's
absolute times where it has them (JSON entries), else the device clock of its logcat
prefix, moved by the device-minus-kit clock offset that the launches with markers show
(so the device's time zone does not matter). The kit's own
force-stops between launches (``Force stopping APP``, ``Killing PID:APP ... stop``) are
counted, never taken for crashes. A crash report that is not a log (a farm's crash log
file, an ``.ips``) goes to the launch of the pid it names, else to the session's only
crashed launch without evidence (``how: only-crashed-launch``).

Log shapes read (:func:`read_log_lines`; :func:`read_log_file` streams a file and keeps
only the lines attribution uses): plain text (logcat ``threadtime`` / ``brief`` / ``time``,
Firebase Test Lab's ``MM-DD HH:MM:SS.mmm: L/Tag( pid): msg``, iOS syslog), JSON lines or a
JSON array of ``{"timestamp", "level", "message"}`` (Sauce Labs' ``deviceLogs``, Appium's
``get_log`` entries). A crash log that is not a log is cut into its reports by their own
structure (:func:`split_reports`: a tombstone's header, ``FATAL EXCEPTION``, an ``.ips``
header line, an Apple crash header, a JS error's headline), never by prefix equality.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
from typing import Any, Iterable, Sequence

from ..protocol import MARKER, parse_line
from .reports import epoch_of, is_report_head, report_time, split_reports

__all__ = ["LogLine", "LaunchSpan", "CrashBlock", "Match", "Attribution", "read_log_lines",
           "read_log_file", "attribute", "crash_blocks", "split_reports", "report_time",
           "epoch_of", "by_time"]

_THREADTIME = re.compile(r"^(?:\d{4}-)?(?P<mon>\d\d)-(?P<day>\d\d)\s+(?P<h>\d\d):(?P<m>\d\d):"
                         r"(?P<s>\d\d\.\d+)\s+(?:\S+\s+)??"
                         r"(?P<pid>\d+)\s+(?P<tid>\d+)\s+(?P<lvl>[VDIWEFA])\s+(?P<tag>[^:]*?)"
                         r"\s*:\s(?P<msg>.*)$")
_BRIEF = re.compile(r"^(?P<lvl>[VDIWEFA])/(?P<tag>[^(]*?)\s*\(\s*(?P<pid>\d+)\s*\):\s(?P<msg>.*)$")
#: logcat ``-v time`` (``MM-DD HH:MM:SS.mmm L/Tag( pid): msg``) and Firebase Test Lab's own
#: form of it, with a colon after the time (``MM-DD HH:MM:SS.mmm: L/Tag( pid): msg``, as
#: public log tools parse FTL's ``logcat``: jerryjeon/logjerry
#: ``FirebaseTestLabLogcatFormatParser``)
_TIME = re.compile(r"^(?:\d{4}-)?(?P<mon>\d\d)-(?P<day>\d\d)\s+(?P<h>\d\d):(?P<m>\d\d):"
                   r"(?P<s>\d\d\.\d+):?\s+(?P<lvl>[VDIWEFA])/(?P<tag>[^(]*?)\s*"
                   r"\(\s*(?P<pid>\d+)\s*\):\s?(?P<msg>.*)$")
_SYSLOG_PID = re.compile(r"\b[\w.-]+(?:\([\w.-]+\))?\[(?P<pid>\d+)\]")
_TOMBSTONE_PID = re.compile(r"\bpid: (?P<pid>\d+), tid: \d+(?:, name: .*?>>> (?P<proc>\S+) <<<)?")
_FATAL_SIGNAL = re.compile(r"Fatal signal \d+ .*?\bpid (?P<pid>\d+)")
_JAVA_PID = re.compile(r"Process: (?P<proc>[\w.:]+), PID: (?P<pid>\d+)")
_LMKD_KILL = re.compile(r"Kill(?:ing)? '(?P<proc>[^']+)' \((?P<pid>\d+)\)")
_ANR_IN = re.compile(r"^ANR in (?P<proc>[\w.:]+)")
_ANR_PID = re.compile(r"^PID: (?P<pid>\d+)")
_START_PROC = re.compile(r"Start proc (?P<pid>\d+):(?P<proc>[\w.]+)")
_TOMBSTONE_LIKE = re.compile(r"^\s*(#\d+ pc|backtrace:|pid: |signal \d|Abort message|Build "
                             r"fingerprint|Revision:|ABI:|Timestamp:|Cmdline:|uid:|Process "
                             r"uptime|x\d|r\d|[re][a-z]{1,2}\s+[0-9a-f]{8}|\d+ total frames|"
                             r"lr |sp |pc |pst )")
#: lines a block may run past, of other tags, before it is taken as ended
_BLOCK_GAP = 400


@dataclasses.dataclass(frozen=True)
class LogLine:
    """One line of a device log: its ``n`` (0-based), ``text`` (as logcat / syslog shows
    it), the ``pid``, ``tag`` and ``msg`` its prefix names (``None`` when unknown), and
    ``ts``: epoch seconds when the source gives an absolute time; ``clock``: the device's
    own wall clock of a logcat prefix (no year, no zone) as seconds since 1 January."""

    n: int
    text: str
    pid: int | None = None
    tag: str | None = None
    msg: str | None = None
    ts: float | None = None
    clock: float | None = None


@dataclasses.dataclass(frozen=True)
class LaunchSpan:
    """A launch as the kit recorded it: ``launch_id``, ``start`` and ``end`` in epoch
    seconds (from the record's ``started_at`` and ``wall_ms``; ``None`` when unknown) and
    whether it ``crashed``."""

    launch_id: str
    start: float | None = None
    end: float | None = None
    crashed: bool = False


@dataclasses.dataclass
class CrashBlock:
    """A crash in a log: ``kind`` (``native`` / ``java`` / ``lmkd`` / ``anr`` /
    ``report``), the line range
    ``first``..``last``, the ``pid`` it names, the process name, and its ``text``."""

    kind: str
    first: int
    last: int
    pid: int | None
    process: str | None
    text: str
    ts: float | None = None
    clock: float | None = None


@dataclasses.dataclass(frozen=True)
class Match:
    """A crash block given to a launch, and ``how`` (``pid``, ``window``, ``time``,
    ``process-order``, ``only-crashed-launch``)."""

    launch_id: str
    block: CrashBlock
    how: str


@dataclasses.dataclass
class Attribution:
    """The cut of one log: each launch's ``pids`` and window (``first`` line), the
    ``matches``, the blocks no launch took (``unmatched``) and the kit's own force-stops
    seen (``kit_stops``)."""

    pids: dict[str, int]
    first: dict[str, int]
    matches: list[Match]
    unmatched: list[CrashBlock]
    kit_stops: int


def _entries(raw: str) -> list[tuple[str, float | None]] | None:
    """JSON lines / a JSON array of ``{message, timestamp}``, or ``None`` for plain text."""
    head = raw.lstrip()[:1]
    if head not in ("{", "["):
        return None
    items: list[Any] = []
    if head == "[":
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        items = data if isinstance(data, list) else []
    else:
        for line in raw.splitlines():
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except (ValueError, RecursionError):
                return None
    out: list[tuple[str, float | None]] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("message"), str):
            for piece in item["message"].splitlines() or [""]:
                out.append((piece, epoch_of(item.get("timestamp"))))
    return out


def _parse_line(n: int, line: str, ts: float | None) -> LogLine:
    line = line.rstrip("\r")
    m = _THREADTIME.match(line) or _TIME.match(line) or _BRIEF.match(line)
    if m:
        clock = _device_clock(m) if "mon" in m.re.groupindex else None
        return LogLine(n, line, int(m.group("pid")), m.group("tag").strip(),
                       m.group("msg"), ts, clock)
    s = _SYSLOG_PID.search(line)
    return LogLine(n, line, int(s.group("pid")) if s else None, None, line, ts)


def read_log_lines(raw: bytes | str) -> list[LogLine]:
    """The lines of a device log in any shape of the module doc; never raises."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    entries = _entries(text)
    if entries is None:
        entries = [(line, None) for line in text.splitlines()]
    return [_parse_line(n, line, ts) for n, (line, ts) in enumerate(entries)]


#: tags whose lines a crash block or a launch's cut may use (:func:`read_log_file`)
_CRASH_TAGS = frozenset({"DEBUG", "libc", "AndroidRuntime", "lowmemorykiller", "lmkd",
                         "ActivityManager", "crash_dump64", "crash_dump32", "tombstoned"})
_CRASH_WORDS = ("*** *** ***", "FATAL EXCEPTION", "Fatal signal", MARKER)
#: the longest line of a device log kept (a longer one is skipped)
MAX_LOG_LINE = 64 * 1024


def read_log_file(path: Any, app_id: str | None = None, *,
                  limit: int = 1024 * 1024 * 1024) -> list[LogLine]:
    """The lines of the device log file at ``path`` that attribution can use, streamed
    (the file is never held whole, nor a line object made per line of it): marker lines,
    lines naming ``app_id``, crash lines (the tags and words of :func:`crash_blocks`), and
    per run of other lines one empty placeholder line (tag ``""``), so a block still ends
    where other lines come between. Each kept line has its number in the whole log
    (``n``). A JSON array log is read whole (at most ``limit`` bytes). Never raises on
    content; raises UsageError (kit._bounded) when ``path`` is not a regular file.
    """
    from .._bounded import iter_lines_bounded, read_bytes_bounded

    out: list[LogLine] = []
    state = {"skipped": False, "fatal": {}}
    n = 0
    mode = None  # "json" / "text"
    total = 0
    for raw in iter_lines_bounded(path, MAX_LOG_LINE, what="device log"):
        total += len(raw.data) + 1
        if total > limit:
            break
        if mode is None:
            head = raw.data.lstrip()[:1]
            if head == b"[":
                data = read_bytes_bounded(path, limit, what="device log")
                return _kept(read_log_lines(data), app_id)
            if head:
                mode = "json" if head == b"{" else "text"
        if raw.too_long:
            n += 1
            _skip(out, n - 1, state)
            continue
        text = raw.data.decode("utf-8", "replace")
        pieces: list[tuple[str, float | None]]
        if mode == "json" and text.strip():
            try:
                item = json.loads(text)
            except (ValueError, RecursionError):
                item = None
            if isinstance(item, dict) and isinstance(item.get("message"), str):
                ts = epoch_of(item.get("timestamp"))
                pieces = [(p, ts) for p in item["message"].splitlines() or [""]]
            else:
                pieces = [(text, None)]
        else:
            pieces = [(text, None)]
        for piece, ts in pieces:
            _keep(out, _parse_line(n, piece, ts), app_id, state)
            n += 1
    return out


def _keep(out: list[LogLine], line: LogLine, app_id: str | None,
          state: dict[str, Any]) -> None:
    """Append ``line`` to ``out`` when attribution uses it, else mark the gap."""
    if _wanted(line, app_id, state):
        out.append(line)
        state["skipped"] = False
    else:
        _skip(out, line.n, state)


def _kept(lines: list[LogLine], app_id: str | None) -> list[LogLine]:
    state: dict[str, Any] = {"skipped": False, "fatal": {}}
    out: list[LogLine] = []
    for line in lines:
        _keep(out, line, app_id, state)
    return out


def _skip(out: list[LogLine], n: int, state: dict[str, Any]) -> None:
    if not state["skipped"]:
        out.append(LogLine(n, "", None, "", ""))
        state["skipped"] = True


def _wanted(line: LogLine, app_id: str | None, state: dict[str, Any]) -> bool:
    """Whether attribution may use ``line`` (see :func:`read_log_file`)."""
    msg = line.msg or line.text
    if any(w in msg for w in _CRASH_WORDS) or (app_id and app_id in msg):
        if "FATAL EXCEPTION" in msg and line.tag:
            state["fatal"][(line.tag, line.pid)] = line.n
        return True
    if line.tag is None:
        stripped = msg.strip()
        return not stripped or bool(_TOMBSTONE_LIKE.match(msg)) or \
            stripped.startswith(("at ", "Caused by", "Process: ", "PID: ")) or \
            is_report_head(msg)
    if line.tag in _CRASH_TAGS:
        return True
    since = state["fatal"].get((line.tag, line.pid))
    return since is not None and line.n - since <= 200


_YEAR = _dt.datetime(2000, 1, 1)  # a leap year: every MM-DD of a logcat prefix exists


def _device_clock(m: re.Match[str]) -> float | None:
    try:
        when = _dt.datetime(2000, int(m.group("mon")), int(m.group("day")), int(m.group("h")),
                            int(m.group("m")))
    except ValueError:
        return None
    return (when - _YEAR).total_seconds() + float(m.group("s"))


def _kit_clock(epoch: float) -> float:
    """An epoch time on the same scale as :attr:`LogLine.clock` (UTC)."""
    when = _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).replace(tzinfo=None)
    return (when.replace(year=2000) - _YEAR).total_seconds()


def _is_tombstone_line(line: LogLine) -> bool:
    if line.tag is not None:
        return line.tag == "DEBUG"
    return bool(_TOMBSTONE_LIKE.match(line.msg or line.text))


def crash_blocks(lines: Sequence[LogLine], app_id: str | None = None) -> list[CrashBlock]:
    """The crash blocks of a log (tombstone summaries and ``FATAL EXCEPTION`` s), in order;
    a block naming another process than ``app_id`` is left out."""
    blocks: list[CrashBlock] = []
    fatal: dict[int, LogLine] = {}  # pid -> its latest libc "Fatal signal" line
    used_fatal: set[int] = set()
    consumed: set[int] = set()
    by_n = {line.n: line for line in lines}
    for i, line in enumerate(lines):
        if line.n in consumed:
            continue
        msg = line.msg or line.text
        sig = _FATAL_SIGNAL.search(msg) if "Fatal signal" in msg else None
        if sig:
            fatal[int(sig.group("pid"))] = line
        if "*** *** ***" in msg and (line.tag in (None, "DEBUG")):
            logger = line.pid
            taken = [line]
            j, gap = i + 1, 0
            while j < len(lines) and gap < _BLOCK_GAP:
                nxt = lines[j]
                nmsg = nxt.msg or nxt.text
                if "*** *** ***" in nmsg or MARKER in nmsg or \
                        (nxt.tag is None and is_report_head(nmsg)):
                    break
                if _is_tombstone_line(nxt) and (logger is None or nxt.pid == logger):
                    taken.append(nxt)
                    gap = 0
                elif nxt.tag is None and nxt.pid is None and not nmsg.strip():
                    break
                else:
                    gap += 1
                j += 1
            text = "\n".join(t.text for t in taken)
            m = _TOMBSTONE_PID.search(text)
            pid = int(m.group("pid")) if m else None
            proc = m.group("proc") if m and m.group("proc") else None
            head = fatal.get(pid) if pid is not None else None
            if head is not None:
                used_fatal.add(head.n)
                text = head.text + "\n" + text
            blocks.append(CrashBlock("native", (head or line).n, taken[-1].n, pid, proc,
                                     text + "\n", line.ts))
            consumed.update(t.n for t in taken)
            continue
        lmk = _LMKD_KILL.search(msg) if line.tag in ("lowmemorykiller", "lmkd") else None
        if lmk:
            blocks.append(CrashBlock("lmkd", line.n, line.n, int(lmk.group("pid")),
                                     lmk.group("proc"), line.text + "\n", line.ts))
            continue
        anr = _ANR_IN.match(msg) if line.tag == "ActivityManager" else None
        if anr:
            taken = [line]
            for nxt in lines[i + 1:i + 60]:
                if nxt.tag != line.tag or nxt.pid != line.pid or _ANR_IN.match(nxt.msg or ""):
                    break
                taken.append(nxt)
            pid_line = next((_ANR_PID.match(t.msg or "") for t in taken
                             if _ANR_PID.match(t.msg or "")), None)
            blocks.append(CrashBlock("anr", line.n, taken[-1].n,
                                     int(pid_line.group("pid")) if pid_line else None,
                                     anr.group("proc"),
                                     "\n".join(t.text for t in taken) + "\n", line.ts))
            consumed.update(t.n for t in taken)
            continue
        if "FATAL EXCEPTION" in msg:
            taken = [line]
            j = i + 1
            while j < len(lines) and lines[j].n - taken[-1].n <= 50:
                nxt = lines[j]
                if nxt.tag == line.tag and nxt.pid == line.pid and \
                        "FATAL EXCEPTION" not in (nxt.msg or ""):
                    taken.append(nxt)
                elif line.tag is None and (nxt.msg or nxt.text).startswith(("\tat ", "    at ",
                                                                            "Caused by",
                                                                            "Process: ")):
                    taken.append(nxt)
                elif line.tag is None:
                    break
                j += 1
            text = "\n".join(t.text for t in taken)
            m = _JAVA_PID.search(text)
            pid = int(m.group("pid")) if m else line.pid
            blocks.append(CrashBlock("java", line.n, taken[-1].n, pid,
                                     m.group("proc") if m else None, text + "\n", line.ts))
            consumed.update(t.n for t in taken)
    for pid, line in fatal.items():  # a Fatal signal with no tombstone after it
        if line.n not in used_fatal and not any(b.pid == pid for b in blocks):
            blocks.append(CrashBlock("native", line.n, line.n, pid, None, line.text + "\n",
                                     line.ts))
    for block in blocks:
        first = by_n.get(block.first)
        block.clock = first.clock if first is not None else None
    blocks.sort(key=lambda b: b.first)
    if app_id:
        blocks = [b for b in blocks if b.process is None or _same_process(b.process, app_id)]
    return blocks


def _same_process(name: str, app_id: str) -> bool:
    base = name.split(":", 1)[0]
    return base == app_id or (len(base) >= 15 and app_id.endswith(base))


def attribute(lines: Sequence[LogLine], launches: Sequence[LaunchSpan],
              app_id: str | None = None) -> Attribution:
    """Cut ``lines`` into ``launches`` and match every crash block (see the module doc)."""
    ids = {s.launch_id for s in launches}
    first: dict[str, int] = {}
    pids: dict[str, int] = {}
    starts: list[tuple[int, int]] = []  # (line, pid) of app process starts
    stops = 0
    for line in lines:
        msg = line.msg or line.text
        if MARKER in msg:
            event = parse_line(msg).event
            if event is not None and event.id in ids:
                first.setdefault(event.id, line.n)
                if line.pid is not None:
                    pids.setdefault(event.id, line.pid)
        if app_id and app_id in msg:
            m = _START_PROC.search(msg)
            if m and m.group("proc") == app_id:
                starts.append((line.n, int(m.group("pid"))))
            elif f"Force stopping {app_id}" in msg or (" stop " + app_id) in msg + " ":
                stops += "Force stopping" in msg
    order = [s.launch_id for s in launches]
    proc_line = {pid: n for n, pid in starts}
    anchor = {lid: proc_line.get(pids.get(lid, -1), n) for lid, n in first.items()}
    offset = _clock_offset(lines, launches, anchor)
    _fill_by_process_order(order, pids, first, starts)
    by_pid = {pid: lid for lid, pid in pids.items()}
    windows = sorted((n, lid) for lid, n in first.items())
    matches: list[Match] = []
    unmatched: list[CrashBlock] = []
    for block in crash_blocks(lines, app_id):
        if block.pid is not None and block.pid in by_pid:
            matches.append(Match(by_pid[block.pid], block, "pid"))
            continue
        owner = None
        for n, lid in windows:
            if n <= block.first:
                owner = lid
        if owner is not None and (block.pid is None or owner not in pids):
            matches.append(Match(owner, block, "window"))
            continue
        timed = _by_time(block, launches, offset)
        if timed is not None:
            matches.append(Match(timed, block, "time"))
        else:
            unmatched.append(block)
    return Attribution(pids=pids, first=first, matches=matches, unmatched=unmatched,
                       kit_stops=stops)


def _fill_by_process_order(order: list[str], pids: dict[str, int], first: dict[str, int],
                           starts: list[tuple[int, int]]) -> None:
    """Rule 2 of the module doc: a process start with no marker, between two launches
    with markers, goes to the one launch without a pid between them."""
    known = {pid for pid in pids.values()}
    free = [(n, pid) for n, pid in starts if pid not in known]
    if not free:
        return
    for pos, lid in enumerate(order):
        if lid in pids:
            continue
        before = next((first[x] for x in reversed(order[:pos]) if x in first), -1)
        after_id = next((x for x in order[pos + 1:] if x in first), None)
        after = first[after_id] if after_id is not None else 1 << 62
        gap = [x for x in order[order.index(lid):] if x not in pids and
               (after_id is None or order.index(x) < order.index(after_id))]
        inside = [(n, pid) for n, pid in free if before < n < after]
        if len(inside) == 1 and len(gap) == 1:
            pids[lid] = inside[0][1]
            first.setdefault(lid, inside[0][0])


def _clock_offset(lines: Sequence[LogLine], launches: Iterable[LaunchSpan],
                  first: dict[str, int]) -> float | None:
    """The device clock minus the kit's (seconds; its zone and drift included): the median,
    over the launches with a marker, of the device time of its process start (``Start
    proc``; else its first marker: ``first``) minus the launch's start as the kit recorded
    it. ``None`` without such a launch."""
    by_n = {line.n: line for line in lines}
    diffs = sorted(by_n[first[s.launch_id]].clock - _kit_clock(s.start)  # type: ignore
                   for s in launches if s.start is not None and s.launch_id in first
                   and first[s.launch_id] in by_n
                   and by_n[first[s.launch_id]].clock is not None)
    return diffs[len(diffs) // 2] if diffs else None


def by_time(block: CrashBlock, launches: Iterable[LaunchSpan]) -> str | None:
    """The launch whose recorded span holds ``block.ts`` (epoch seconds), or ``None``."""
    return _by_time(block, launches, None)


def _by_time(block: CrashBlock, launches: Iterable[LaunchSpan], offset: float | None
             ) -> str | None:
    """The launch, by the kit's own times, whose span holds the block: the one that
    started last before it (absolute times when the log has them, else the device clock
    moved by ``offset``)."""
    best: tuple[float, str] | None = None
    for span in launches:
        if span.start is None or span.end is None:
            continue
        if block.ts is not None:
            t, start, end = block.ts, span.start, span.end
        elif block.clock is not None and offset is not None:
            t = block.clock - offset
            start, end = _kit_clock(span.start), _kit_clock(span.end)
        else:
            return None
        if start <= t <= end and (best is None or start > best[0]):
            best = (start, span.launch_id)
    return best[1] if best else None
