"""Pull a finished campaign's farm evidence and write what matched into its records.

``coldstart farm pull DIR --farm NAME`` (and ``coldstart run appium --farm NAME`` once its
launches are done) never relaunches anything. For each farm session of the campaign (the
Appium session ids its records carry, or ``--farm-ref`` for AWS Device Farm and Firebase
Test Lab) it fetches the evidence (:mod:`kit.farms`), cuts the device log into launches and
matches every crash block (:mod:`kit.farms.attribute`), parses and classifies each through
:func:`kit.crash.parse_text` / :func:`kit.crash.classify`, and then, holding the
campaign's lock, rewrites ``launches.jsonl`` atomically (the first pull keeps the old file
as ``launches.jsonl.pre-farm``):

* every launch of a fetched session gains ``farm``: the farm, the session, ``evidence``
  (each with its ``source``, ``artifact``, ``sha256``, ``how`` it was matched, the
  block's lines, ``crash_class`` and ``signature``) and a ``note``;
* a ``crashed`` launch whose record had no classified crash takes the first matched
  block's crash record, class, signature and signal (``farm.applied``); its outcome never
  changes (the outcome is the launcher's, :mod:`kit.observe`), so a force-stop is never a
  crash;
* a ``crashed`` launch with no evidence says so in ``farm.note``.

A session whose evidence is not ready by the deadline (the farm down, slow, throttling)
leaves its records as they were and is an infrastructure error of the evidence step:
``farm-evidence.json`` says ``incomplete`` and the pull exits 3; a later pull completes it.

Before any record changes, a fetched session is checked to be the campaign's
(:func:`check_session`: app, upload, time; another's is refused in one line, exit 2), and a
crash log that answered ``404`` is fetched again while a launch that died has no evidence,
until it is there or :data:`CRASH_LOG_WAIT_S` after the session's end pass (the session
is ``incomplete`` while the pull's own deadline ends first; ``crash_log_wait`` and the
launch's note say which). Every file is written through :func:`kit._bounded.write_atomic`
(never through a link); device logs are streamed (:func:`read_log_file`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Callable

from .._bounded import MiB, lstat_kind, read_bytes_bounded, write_atomic
from ..errors import ColdstartError, InfraError, UsageError
from ..records import LaunchRecord, Outcome
from ..redact import Redactor
from . import REF_FROM_RECORDS, check_ref, open_farm
from .attribute import (CrashBlock, LaunchSpan, Match, attribute, by_time, crash_blocks,
                        read_log_file, read_log_lines, report_time, split_reports)
from .base import Artifact, FarmSettings, FetchContext, SessionEvidence, safe_name
from .http import Deadline, EvidenceNotReady

__all__ = ["PullReport", "pull_campaign", "EVIDENCE_FILE", "BACKUP_NAME"]

EVIDENCE_FILE = "farm-evidence.json"
BACKUP_NAME = "launches.jsonl.pre-farm"
#: the most bytes of one log read for attribution
MAX_LOG_BYTES = 512 * MiB
#: the most bytes of one crash-log artifact read (a crash log holds a few reports)
MAX_CRASH_LOG_BYTES = 64 * MiB
_CLASSES_TO_FILL = (None, "unparsed")
#: seconds after the session's end (or the pull's start, when the farm does not say when
#: the session ended) that a crash log answering 404 is fetched again while a launch
#: that died has no evidence: the crash log may be ready later than the device log
CRASH_LOG_WAIT_S = 180.0
#: seconds a farm's clock and the kit's may disagree about a session's span
CLOCK_SLACK_S = 900.0
#: the longest a farm session is taken to last when the farm gives only its start
MAX_SESSION_S = 6 * 3600.0


@dataclasses.dataclass
class PullReport:
    """What one pull did: per session its ``status`` (``complete`` / ``incomplete``) and
    note, the launches that gained evidence, crashed launches left without, blocks no
    launch took, and the exit code (3 when a session is incomplete)."""

    farm: str
    sessions: dict[str, dict[str, Any]]
    matched: int = 0
    crashed_without: int = 0
    unmatched: int = 0

    @property
    def exit_code(self) -> int:
        return 3 if any(s["status"] != "complete" for s in self.sessions.values()) else 0

    def lines(self) -> list[str]:
        """The report as lines for the terminal."""
        out = []
        for ref, s in self.sessions.items():
            out.append(f"farm {self.farm}: session {ref}: {s['status']}"
                       + (f" ({s['note']})" if s.get("note") else ""))
        out.append(f"farm {self.farm}: {self.matched} launch(es) matched with crash "
                   f"evidence, {self.crashed_without} crashed launch(es) without, "
                   f"{self.unmatched} crash block(s) matched to no launch")
        return out


def _epoch(text: str) -> float | None:
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


def _span(record: LaunchRecord) -> LaunchSpan:
    start = _epoch(record.started_at)
    end = start + record.wall_ms / 1000.0 + 30.0 if start is not None else None
    return LaunchSpan(record.launch_id, start, end, record.outcome is Outcome.CRASHED)


def _read_artifact(campaign: Path, art: Artifact, limit: int = MAX_CRASH_LOG_BYTES
                   ) -> bytes:
    """An artifact's bytes (at most ``limit``; a longer one is cut, never read whole)."""
    from .._bounded import open_regular

    with os.fdopen(open_regular(campaign / art.path, "farm artifact"), "rb") as fh:
        return fh.read(limit)


def _groups(records: list[LaunchRecord], meta_devices: list[dict[str, Any]],
            settings: FarmSettings) -> dict[str, list[LaunchRecord]]:
    if settings.name not in REF_FROM_RECORDS:
        if not settings.ref:
            raise UsageError(f"--farm {settings.name} needs --farm-ref (the job/run ARN, or "
                             "gs://BUCKET/DIR)", "see docs/farms.md")
        return {settings.ref: records}
    default = next((d.get("session_id") for d in meta_devices if d.get("session_id")), None)
    groups: dict[str, list[LaunchRecord]] = {}
    for record in records:
        ref = settings.ref or record.extra.get("session_id") or default
        if not ref:
            raise UsageError("the campaign's records carry no Appium session id",
                             "give the farm's session id with --farm-ref")
        groups.setdefault(check_ref(str(ref)), []).append(record)
    return groups


def _classify(block: CrashBlock, hint: str | None) -> tuple[dict[str, Any] | None, str | None,
                                                          str | None, int | None]:
    from .. import crash as crashlib

    try:
        rec = crashlib.parse_text(block.text, hint=hint)
        verdict = crashlib.classify(rec)
    except Exception as exc:  # noqa: BLE001 - a parser bug must not lose the evidence
        return None, "unparsed", f"crash analysis failed: {exc!r}"[:200], None
    return rec.to_dict(), str(verdict.crash_class), verdict.signature, rec.signal


def _report_blocks(campaign: Path, art: Artifact, app_id: str | None = None
                   ) -> list[CrashBlock]:
    """A crash-log artifact as crash blocks: a log with logcat prefixes (most of its lines)
    by :func:`crash_blocks`; any other text cut into its reports by their own structure
    (:func:`kit.farms.attribute.split_reports`: a tombstone, a ``FATAL EXCEPTION``, an
    ``.ips``, an Apple report, a JS error), each with the pid and time it names."""
    raw = _read_artifact(campaign, art)
    if not raw.strip():
        return []
    lines = read_log_lines(raw)
    body = [ln for ln in lines if ln.text.strip()]
    if body and sum(ln.tag is not None for ln in body) * 2 > len(body):
        return crash_blocks(lines, app_id)
    from .. import crash as crashlib

    text = raw.decode("utf-8", "replace")
    blocks = []
    for first, last, piece in split_reports(text):
        pid = None
        try:
            pid = crashlib.parse_text(piece).pid
        except Exception:  # noqa: BLE001 - a parser bug must not lose the evidence
            pass
        blocks.append(CrashBlock("report", first, last, pid, None, piece, report_time(piece)))
    return blocks


def _match_session(campaign: Path, ev: SessionEvidence, records: list[LaunchRecord],
                   app_id: str | None) -> tuple[list[tuple[Match, Artifact]], list[CrashBlock],
                                                int]:
    spans = [_span(r) for r in records]
    matches: list[tuple[Match, Artifact]] = []
    unmatched: list[CrashBlock] = []
    stops = 0
    pids: dict[str, int] = {}
    for art in ev.of_kind("device-log"):
        lines = read_log_file(campaign / art.path, app_id, limit=MAX_LOG_BYTES)
        cut = attribute(lines, spans, app_id)
        del lines
        matches.extend((m, art) for m in cut.matches)
        unmatched.extend(cut.unmatched)
        stops += cut.kit_stops
        pids.update(cut.pids)
    shell_first, shell_last = _shell_matches(campaign, ev, records, pids, app_id)
    matches[:0] = shell_first  # a DropBox tombstone is the fullest report
    by_pid = {pid: lid for lid, pid in pids.items()}
    later: list[tuple[CrashBlock, Artifact]] = []
    for art in ev.of_kind("crash-log"):
        for block in _report_blocks(campaign, art, app_id):
            if block.pid is not None and block.pid in by_pid:
                matches.append((Match(by_pid[block.pid], block, "pid"), art))
                continue
            timed = by_time(block, spans) if block.ts is not None else None
            if timed is not None:
                matches.append((Match(timed, block, "time"), art))
                continue
            later.append((block, art))
    for block, art in later:  # a report naming no known pid nor time: the only one left
        have = {m.launch_id for m, _a in matches}
        lonely = [s.launch_id for s in spans if s.crashed and s.launch_id not in have]
        if len(lonely) == 1:
            matches.append((Match(lonely[0], block, "only-crashed-launch"), art))
        else:
            unmatched.append(block)
    matches.extend(shell_last)
    crashed = [s.launch_id for s in spans if s.crashed]
    for issue in ev.issues:  # a step's verdict: a launch's only when nothing else is there
        trace = issue.get("stackTrace")
        if trace and not matches and len(crashed) == 1:
            lonely = crashed
            block = CrashBlock("report", 0, 0, None, None, str(trace))
            art = ev.of_kind("test-issues")[0]
            matches.append((Match(lonely[0], block, "only-crashed-launch"), art))
    return matches, unmatched, stops


def _campaign_span(records: list[LaunchRecord]) -> tuple[float, float] | None:
    """The first launch's start and the last one's end (epoch seconds), as recorded."""
    spans = [_span(r) for r in records]
    starts = [s.start for s in spans if s.start is not None]
    ends = [s.end for s in spans if s.end is not None]
    return (min(starts), max(ends)) if starts and ends else None


def _iso(epoch: float) -> str:
    return _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc).isoformat(
        timespec="seconds").replace("+00:00", "Z")


def _session_times(ident: dict[str, Any]) -> tuple[float | None, float | None]:
    """A farm session's start and end (epoch seconds; the end from ``duration_s`` when the
    farm gives only that), each ``None`` when unknown."""
    def num(v: Any) -> float | None:
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    start, end = num(ident.get("start")), num(ident.get("end"))
    duration = num(ident.get("duration_s"))
    if duration is None and isinstance(ident.get("duration_s"), str):
        try:
            duration = float(ident["duration_s"])
        except ValueError:
            duration = None
    if end is None and start is not None and duration is not None and duration >= 0:
        end = start + duration
    return start, end


def check_session(ev: SessionEvidence, build: dict[str, Any], records: list[LaunchRecord],
                  shown: str, app_id: str | None = None) -> None:
    """Refuse a farm session that is not the campaign's: the app it ran (package / bundle
    id, the upload's ``bs://``-style reference) is not the campaign's ``build``, or its
    time (``ev.identity``'s ``start``/``end``/``duration_s``) does not overlap the
    campaign's launches (:data:`CLOCK_SLACK_S` either side; a session with only a start
    lasts at most :data:`MAX_SESSION_S`). What the farm does not say is not checked.

    Raises:
        UsageError: one line naming what differs.
    """
    ident = ev.identity or {}
    why: list[str] = []
    if not app_id:
        app_id = build.get("app_id") if isinstance(build.get("app_id"), str) else None
    farm_app_id = ident.get("app_id")
    if app_id and isinstance(farm_app_id, str) and farm_app_id and farm_app_id != app_id:
        why.append(f"it ran {farm_app_id[:80]}, the campaign {app_id}")
    app, farm_app = build.get("app"), ident.get("app")
    if isinstance(app, str) and isinstance(farm_app, str) and "://" in app and \
            "://" in farm_app and app.split("://", 1)[0] == farm_app.split("://", 1)[0] \
            and app != farm_app:
        why.append(f"its app is {farm_app[:80]}, the campaign's {app[:80]}")
    span = _campaign_span(records)
    start, end = _session_times(ident)
    if span is not None and start is not None:
        last = end if end is not None else start + MAX_SESSION_S
        if start > span[1] + CLOCK_SLACK_S or last < span[0] - CLOCK_SLACK_S:
            why.append(f"it ran from {_iso(start)}, the campaign's launches from "
                       f"{_iso(span[0])} to {_iso(span[1])}")
    if why:
        raise UsageError(f"farm session {shown} is not this campaign's: " + "; ".join(why),
                         "give this campaign's own session with --farm-ref (or leave "
                         "--farm-ref out: the records name their sessions)")


def _wait_crash_logs(ctx: FetchContext, ev: SessionEvidence, lacking: list[str],
                     since: float, wait_s: float) -> dict[str, Any]:
    """Fetch again the crash logs that answered 404 (``ev.absent``) while launches
    (``lacking``) died without evidence, until one is there or ``wait_s``
    (:data:`CRASH_LOG_WAIT_S`) after the session's end (``since``; the fetch's start when
    the farm does not say) passes; what happened:
    ``result`` ``arrived`` / ``deadline-passed`` / ``pending`` (the pull's own deadline
    came first: the session stays incomplete), ``until`` (ISO time) and ``waited_s``."""
    http = ctx.http
    until = since + wait_s
    left = until - http.wall()
    out: dict[str, Any] = {"launches": lacking, "until": _iso(until),
                           "wait_s": wait_s, "waited_s": 0.0}
    start = http.clock()
    if left <= 0:
        out["result"] = "deadline-passed"
        return out
    own = ctx.deadline.left()
    deadline = Deadline(min(left, own), http.clock)

    def attempt(_d: Deadline) -> list[Artifact] | None:
        got = []
        for entry in list(ev.absent):
            art = ctx.download(*entry)
            if art is not None:
                got.append(art)
                ev.absent.remove(entry)
            elif ctx.last_refused:
                ev.absent.remove(entry)
        return got if got or not ev.absent else None

    try:
        got = http.poll("the crash log of a launch that died", attempt, deadline)
    except EvidenceNotReady:
        out["waited_s"] = round(http.clock() - start, 3)
        out["result"] = "deadline-passed" if left <= own + 1.0 else "pending"
        return out
    out["waited_s"] = round(http.clock() - start, 3)
    ev.artifacts.extend(got)
    out["result"] = "arrived" if got else "deadline-passed"
    return out


def _own_log(campaign: Path, launch_id: str) -> str | None:
    """The launch's own ``get_log`` drain (``artifacts/<id>/logcat.txt``), or ``None``."""
    path = campaign / "artifacts" / launch_id / "logcat.txt"
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_LOG_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def _shell_matches(campaign: Path, ev: SessionEvidence, records: list[LaunchRecord],
                   pids: dict[str, int], app_id: str | None
                   ) -> tuple[list[tuple[Match, Artifact]], list[tuple[Match, Artifact]]]:
    """The ``shell-dump`` artifacts' crash entries (:mod:`kit.farms.shell`) given to their
    launches by pid (from the device log's cut, else each launch's own log) and window:
    the DropBox matches, then the exit-info ones."""
    from .shell import DUMP_NAMES, match_entries, read_entries, windows_of_records

    dumps = ev.of_kind("shell-dump")
    if not dumps:
        return [], []
    windows = windows_of_records(lambda lid: _own_log(campaign, lid),
                                 [r.launch_id for r in records], pids)
    first: list[tuple[Match, Artifact]] = []
    last: list[tuple[Match, Artifact]] = []
    for art in dumps:
        name = next((n for n in DUMP_NAMES if art.name.endswith(f"shell-{n}.txt")), None)
        if name is None:
            continue
        text = _read_artifact(campaign, art).decode("utf-8", "replace")
        found, _stops = match_entries(read_entries(name, text), windows, app_id)
        for m in found:
            block = CrashBlock("report", 0, 0, m.entry.pid, m.entry.process, m.entry.text)
            (last if m.entry.source == "exit-info" else first).append(
                (Match(m.launch_id, block, f"shell-{m.how}"), art))
    return first, last


def pull_campaign(path: str | os.PathLike[str], settings: FarmSettings, *,
                  redactor: Redactor | None = None,
                  client_factory: Callable[..., Any] | None = None,
                  clock: Callable[[], float] | None = None,
                  sleep: Callable[[float], None] | None = None,
                  wall: Callable[[], float] | None = None,
                  log: Callable[[str], None] = lambda _m: None) -> PullReport:
    """Pull the farm evidence of the campaign at ``path`` (see the module doc).

    Raises:
        UsageError: no campaign there, another process writes it, an unknown farm, missing
            credentials or reference. DataError: unreadable records (``coldstart repair``).
    """
    from ..store.store import CampaignStore

    store = CampaignStore(path)
    meta = store.read_meta()
    redactor = redactor or Redactor()
    farm, http = open_farm(settings, redactor, client_factory=client_factory, clock=clock,
                           sleep=sleep, wall=wall)
    app_id = meta.setup.app_id
    store.lock()
    try:
        records = list(store.iter_records())
        groups = _groups(records, meta.devices, settings)
        report = PullReport(farm=settings.name, sessions={})
        farm_extra: dict[str, dict[str, Any]] = {}
        fills: dict[str, tuple[Match, Artifact, tuple[Any, ...]]] = {}
        summary: dict[str, Any] = {}
        for ref, group in groups.items():
            shown = redactor.text(ref)
            log(f"farm {settings.name}: pulling session {shown}")
            ctx = FetchContext(http, store.path, settings.name, ref)
            # the campaign's time narrows a search by time (Sauce's job list), unless
            # the user named the session (then it is found, and checked, whatever its time)
            ctx.window = None if settings.ref else _campaign_span(group)  # type: ignore
            try:
                ev = farm.fetch(ref, ctx)
            except ColdstartError as exc:
                if not isinstance(exc, InfraError):
                    raise
                report.sessions[shown] = {"status": "incomplete",
                                          "note": redactor.text(exc.one_line())}
                summary[shown] = dict(report.sessions[shown])
                continue
            check_session(ev, meta.build, group, shown, app_id)
            matches, unmatched, stops = _match_session(store.path, ev, group, app_id)
            crash_wait: dict[str, Any] | None = None
            have = {m.launch_id for m, _a in matches}
            lacking = [r.launch_id for r in group
                       if r.outcome is Outcome.CRASHED and r.launch_id not in have]
            if lacking and ev.absent:  # a launch died with no evidence: the crash log may
                since = _session_times(ev.identity)[1]  # come later than the device log
                if since is None:
                    since = ctx.started_wall
                crash_wait = _wait_crash_logs(ctx, ev, lacking, float(since),
                                              CRASH_LOG_WAIT_S)
                if crash_wait["result"] == "arrived":
                    ev.notes[:] = [n for n in ev.notes if "404" not in n]
                    matches, unmatched, stops = _match_session(store.path, ev, group, app_id)
            ev.notes.extend(ctx.notes)
            note: str | None
            if crash_wait is not None and crash_wait["result"] == "pending":
                note = (f"launch(es) {', '.join(lacking[:5])} died with no evidence and the "
                        f"farm's crash log is not there yet: pull again (it is waited for "
                        f"until {crash_wait['until']})")
                report.sessions[shown] = {"status": "incomplete", "note": note}
                summary[shown] = {"status": "incomplete", "note": note,
                                  "crash_log_wait": crash_wait}
                continue
            report.unmatched += len(unmatched)
            per_launch: dict[str, list[dict[str, Any]]] = {}
            for k, (match, art) in enumerate(matches):
                hint = "logcat" if match.block.kind != "report" else None
                crash, cls, sig, signal = _classify(match.block, hint)
                excerpt = f"{ctx.rel}/crash-{safe_name(match.launch_id)}-{k}.txt"
                write_atomic(store.path / excerpt, redactor.text(match.block.text).encode(
                    "utf-8", "surrogateescape"), durable=False)
                if crash is not None:
                    crash = dict(crash, raw_artifact=excerpt)
                per_launch.setdefault(match.launch_id, []).append({
                    "source": f"{settings.name}:{art.kind}:{art.name}", "artifact": excerpt,
                    "from_artifact": art.path, "sha256": art.sha256,
                    "source_url": art.source_url, "how": match.how,
                    "lines": [match.block.first, match.block.last], "pid": match.block.pid,
                    "crash_class": cls, "signature": sig})
                fills.setdefault(match.launch_id, (match, art, (crash, cls, sig, signal)))
            sources = ", ".join(a.name for a in ev.artifacts
                                if a.kind in ("device-log", "crash-log")) or "no log"
            for record in group:
                evidence = per_launch.get(record.launch_id, [])
                note = None
                if record.outcome is Outcome.CRASHED and not evidence:
                    note = f"crashed, and no crash evidence for this launch in {sources}"
                    if crash_wait is not None:
                        note += (f"; the farm's crash log was not there by "
                                 f"{crash_wait['until']} ({crash_wait['wait_s']:g} s after "
                                 f"the session's end, the stated deadline)")
                elif evidence and crash_wait is not None and \
                        crash_wait["result"] == "arrived" and \
                        record.launch_id in crash_wait["launches"]:
                    note = (f"the farm's crash log came {crash_wait['waited_s']:g} s after "
                            "the device log (waited for: this launch died with no evidence)")
                elif evidence and record.outcome is not Outcome.CRASHED:
                    note = (f"recorded {record.outcome.value}: the evidence is kept, the "
                            "outcome is the launcher's")
                farm_extra[record.launch_id] = {
                    "farm": settings.name, "session": shown, "evidence": evidence,
                    "note": note, "pulled_at": _now()}
            report.sessions[shown] = {"status": "complete", "note": "; ".join(ev.notes)}
            summary[shown] = {"status": "complete", "notes": ev.notes, "device": ev.device,
                              **({"crash_log_wait": crash_wait} if crash_wait else {}),
                              "kit_force_stops": stops,
                              "artifacts": [a.to_dict() for a in ev.artifacts],
                              "issues": ev.issues,
                              "unmatched": [{"kind": b.kind, "lines": [b.first, b.last],
                                             "pid": b.pid} for b in unmatched]}
        new_records = []
        for record in records:
            extra = farm_extra.get(record.launch_id)
            if extra is None:
                new_records.append(record)
                continue
            changes: dict[str, Any] = {}
            fill = fills.get(record.launch_id)
            applied = bool((record.extra.get("farm") or {}).get("applied"))
            if fill is not None and record.outcome is Outcome.CRASHED and \
                    (applied or record.crash_class in _CLASSES_TO_FILL or record.crash is None):
                _m, _a, (crash, cls, sig, signal) = fill
                if crash is not None:
                    changes.update(crash=crash, crash_class=cls, signature=sig)
                    if record.signal is None and signal is not None:
                        from ..observe import signal_name

                        changes.update(signal=signal, signal_name=signal_name(signal))
                    extra["applied"] = True
            if record.outcome is Outcome.CRASHED and extra["evidence"]:
                report.matched += 1
            elif record.outcome is Outcome.CRASHED and record.counted:
                report.crashed_without += 1
            # redacted by what is secret, not by key name: the evidence's crash
            # ``signature`` is kept (the kit made every key here)
            new_extra = dict(record.extra, farm=redactor.value(extra, by_key=False))
            new_records.append(dataclasses.replace(record, extra=new_extra, **changes))
        _write(store, new_records, records)
        previous = _previous_sessions(store.path / EVIDENCE_FILE)
        for ref, entry in list(summary.items()):  # a failed re-pull keeps what was pulled
            old = previous.get(ref)
            if entry["status"] != "complete" and isinstance(old, dict) and \
                    old.get("status") == "complete":
                summary[ref] = dict(old, last_pull=entry)
                report.sessions[ref] = dict(report.sessions[ref], note=(
                    f"{report.sessions[ref]['note']}; the evidence of an earlier pull is "
                    "kept"))
        write_atomic(store.path / EVIDENCE_FILE, (json.dumps(redactor.value({
            "farm": settings.name, "pulled_at": _now(),
            "status": "complete" if report.exit_code == 0 else "incomplete",
            "waited_s": round(http.waited_s, 3), "throttled": http.throttled,
            "sessions": summary}), indent=1, sort_keys=True) + "\n").encode())
        return report
    finally:
        store.unlock()


def _previous_sessions(path: Path) -> dict[str, Any]:
    """The sessions of an earlier ``farm-evidence.json`` (``{}`` when none or unreadable)."""
    from .._bounded import read_bytes_bounded

    try:
        data = json.loads(read_bytes_bounded(path, 64 * MiB, what=EVIDENCE_FILE))
    except (ColdstartError, OSError, ValueError, RecursionError):
        return {}
    sessions = data.get("sessions") if isinstance(data, dict) else None
    return sessions if isinstance(sessions, dict) else {}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds").replace(
        "+00:00", "Z")


def _write(store: Any, new: list[LaunchRecord], old: list[LaunchRecord]) -> None:
    if new == old:
        return
    backup = store.path / BACKUP_NAME
    if lstat_kind(backup) != "a regular file":  # a link (dangling too) is replaced, never
        write_atomic(backup, read_bytes_bounded(  # followed
            store.launches_path, 4096 * MiB, what="launches.jsonl"))
    data = b"".join(json.dumps(r.to_dict(), separators=(",", ":")).encode() + b"\n"
                    for r in new)
    write_atomic(store.launches_path, data)
