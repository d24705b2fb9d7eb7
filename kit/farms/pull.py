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
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Callable

from .._bounded import MiB, write_atomic
from ..errors import ColdstartError, InfraError, UsageError
from ..records import LaunchRecord, Outcome
from ..redact import Redactor
from . import REF_FROM_RECORDS, open_farm
from .attribute import CrashBlock, LaunchSpan, Match, attribute, crash_blocks, read_log_lines
from .base import Artifact, FarmSettings, FetchContext, SessionEvidence

__all__ = ["PullReport", "pull_campaign", "EVIDENCE_FILE", "BACKUP_NAME"]

EVIDENCE_FILE = "farm-evidence.json"
BACKUP_NAME = "launches.jsonl.pre-farm"
#: the most bytes of one log read for attribution
MAX_LOG_BYTES = 512 * MiB
_CLASSES_TO_FILL = (None, "unparsed")


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


def _read_artifact(campaign: Path, art: Artifact) -> bytes:
    with open(campaign / art.path, "rb") as fh:
        return fh.read(MAX_LOG_BYTES)


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
        groups.setdefault(str(ref), []).append(record)
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


def _report_blocks(campaign: Path, art: Artifact) -> list[CrashBlock]:
    """A crash-log artifact as crash blocks: its logcat-like blocks, else itself whole."""
    raw = _read_artifact(campaign, art)
    lines = read_log_lines(raw)
    blocks = crash_blocks(lines)
    if blocks or not raw.strip():
        return blocks
    from .. import crash as crashlib

    text = raw.decode("utf-8", "replace")
    pid = None
    try:
        pid = crashlib.parse_text(text).pid
    except Exception:  # noqa: BLE001
        pass
    return [CrashBlock("report", 0, len(lines) - 1, pid, None, text)]


def _match_session(campaign: Path, ev: SessionEvidence, records: list[LaunchRecord],
                   app_id: str | None) -> tuple[list[tuple[Match, Artifact]], list[CrashBlock],
                                                int]:
    spans = [_span(r) for r in records]
    matches: list[tuple[Match, Artifact]] = []
    unmatched: list[CrashBlock] = []
    stops = 0
    pids: dict[str, int] = {}
    for art in ev.of_kind("device-log"):
        cut = attribute(read_log_lines(_read_artifact(campaign, art)), spans, app_id)
        matches.extend((m, art) for m in cut.matches)
        unmatched.extend(cut.unmatched)
        stops += cut.kit_stops
        pids.update(cut.pids)
    shell_first, shell_last = _shell_matches(campaign, ev, records, pids, app_id)
    matches[:0] = shell_first  # a DropBox tombstone is the fullest report
    by_pid = {pid: lid for lid, pid in pids.items()}
    for art in ev.of_kind("crash-log"):
        for block in _report_blocks(campaign, art):
            if block.pid is not None and block.pid in by_pid:
                matches.append((Match(by_pid[block.pid], block, "pid"), art))
                continue
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
            try:
                ev = farm.fetch(ref, ctx)
            except ColdstartError as exc:
                if not isinstance(exc, InfraError):
                    raise
                report.sessions[shown] = {"status": "incomplete",
                                          "note": redactor.text(exc.one_line())}
                summary[shown] = dict(report.sessions[shown])
                continue
            matches, unmatched, stops = _match_session(store.path, ev, group, app_id)
            report.unmatched += len(unmatched)
            per_launch: dict[str, list[dict[str, Any]]] = {}
            for k, (match, art) in enumerate(matches):
                hint = "logcat" if match.block.kind != "report" else None
                crash, cls, sig, signal = _classify(match.block, hint)
                excerpt = f"{ctx.rel}/crash-{match.launch_id}-{k}.txt"
                (store.path / excerpt).write_text(redactor.text(match.block.text))
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
                elif evidence and record.outcome is not Outcome.CRASHED:
                    note = (f"recorded {record.outcome.value}: the evidence is kept, the "
                            "outcome is the launcher's")
                farm_extra[record.launch_id] = {
                    "farm": settings.name, "session": shown, "evidence": evidence,
                    "note": note, "pulled_at": _now()}
            report.sessions[shown] = {"status": "complete", "note": "; ".join(ev.notes)}
            summary[shown] = {"status": "complete", "notes": ev.notes, "device": ev.device,
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
            new_extra = dict(record.extra, farm=redactor.value(extra))
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
    if not backup.exists():
        backup.write_bytes(store.launches_path.read_bytes())
    data = b"".join(json.dumps(r.to_dict(), separators=(",", ":")).encode() + b"\n"
                    for r in new)
    write_atomic(store.launches_path, data)
