"""The in-session shell pass: ``dumpsys dropbox`` crash entries and ``dumpsys activity
exit-info <package>`` read where a farm allows a shell, and matched to launches by pid and
device-time window, as the adb target matches them (:mod:`kit.targets.android.evidence`).

Routes (:class:`Shell`; docs/farms.md says which farm allows which):

* :class:`AppiumShell` - Appium's ``mobile: shell`` (``execute_script("mobile: shell",
  {"command", "args"})``): Sauce Labs real devices run an allowlist that includes
  ``dumpsys``; any other server needs ``--allow-insecure=uiautomator2:adb_shell``;
* :class:`HeadSpinShell` - HeadSpin's adb API, ``POST {api}/v0/adb/{serial}/shell`` with the
  command as the body, ``Authorization: Bearer <token>``;
* an AWS Device Farm custom test spec (:mod:`kit.farms.testspec`) runs the same commands
  after the tests into ``$DEVICEFARM_LOG_DIR``; the adapter reads them back from the
  ``CUSTOMER_ARTIFACT`` zip (:func:`dumps_from_zip`).

A refused shell (Sauce's allowlist, Appium's insecure-feature error, HTTP 401/403) raises
:class:`ShellRefused`: a note of the launch, never a crash or an infra error of it.

The texts are split with the adb target's own readers (:func:`~kit.crash.dumpsys.
dropbox_entries`, :func:`kit.crash.parse_exit_info`, :func:`~kit.crash.dumpsys.
exit_info_block`); an entry goes to the launch of its pid written since that launch began
(``how: pid``), else, for a launch whose pid is unknown, to the launch whose device-time
window holds it (``how: window``). An exit-info entry is crash evidence only when its reason
is a crash (:data:`~kit.crash.dumpsys.CRASH_REASONS`); a ``USER REQUESTED`` entry
is the kit's own ``terminateApp`` (a force-stop): counted, never a crash.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import io
import re
import shlex
import zipfile
from typing import Any, Callable, Iterable, Protocol, Sequence

from ..crash import ExitReason, parse_exit_info
from ..errors import InfraError
from ..protocol import MARKER, parse_line
from ..crash.dumpsys import CRASH_REASONS, DROPBOX_TAGS, dropbox_entries, exit_info_block
from .attribute import LogLine, read_log_lines

__all__ = ["Shell", "ShellRefused", "AppiumShell", "HeadSpinShell", "ShellEntry",
           "ShellWindow", "ShellMatch", "shell_commands", "run_dumps", "read_entries",
           "match_entries", "best_entry", "window_of_log", "dumps_from_zip", "DUMP_NAMES",
           "is_refusal", "clock_of", "windows_of_records", "make_shell_factory", "FARM_ROUTES",
           "HEADSPIN_TOKEN_ENV"]

#: how far before a launch's first log line its entry may be stamped (DropBox and
#: exit-info print whole seconds; the log's first line comes after the process start)
SLACK_S = 2.0
#: the most bytes of one dump kept from a zip
MAX_DUMP_BYTES = 64 * 1024 * 1024
_REFUSED_RE = re.compile(r"insecure feature|not allowed|not permitted|forbidden|"
                         r"allowlist|whitelist|unsupported execute method|unknown method|"
                         r"HTTP 40[13]", re.I)
_DROPBOX_PID_RE = re.compile(r"(?:^|\n)(?:PID: (?P<a>\d+)\s*$|pid: (?P<b>\d+), tid:)", re.M)
_DROPBOX_PROC_RE = re.compile(r"^Process: (?P<proc>[\w.:]+)\s*$", re.M)


class ShellRefused(Exception):
    """The farm or server refused the shell command (``message``: what it said)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_refusal(message: str) -> bool:
    """True when an error message says a shell command is not allowed (Appium's
    ``Potentially insecure feature 'adb_shell' has not been enabled``, an allowlist's "not
    allowed", a driver without ``mobile: shell``, HTTP 401/403)."""
    return bool(_REFUSED_RE.search(message))


class Shell(Protocol):
    """One shell route: ``route`` names it; :meth:`run` runs ``argv`` on the device and
    returns its stdout. Raises :class:`ShellRefused` (a note) or InfraError."""

    route: str

    def run(self, argv: Sequence[str]) -> str: ...


class AppiumShell:
    """``mobile: shell`` through an open session (anything with ``execute(method,
    args)`` that raises InfraError, as :class:`kit.targets.appium.AppiumSession`)."""

    route = "mobile-shell"

    def __init__(self, session: Any, timeout_ms: int = 20000) -> None:
        self.session = session
        self.timeout_ms = timeout_ms

    def run(self, argv: Sequence[str]) -> str:
        try:
            out = self.session.execute("mobile: shell", {"command": argv[0],
                                                         "args": list(argv[1:]),
                                                         "timeout": self.timeout_ms})
        except InfraError as exc:
            if is_refusal(exc.message):
                raise ShellRefused(exc.message) from None
            raise
        if isinstance(out, dict):  # includeStderr: {stdout, stderr}
            out = out.get("stdout", "")
        return out if isinstance(out, str) else "" if out is None else str(out)


class HeadSpinShell:
    """HeadSpin's adb API: ``POST {api}/v0/adb/{serial}/shell``, the command (quoted for
    the device shell) as the body (HeadSpin "Android Device API", docs/farms.md).

    Args:
        client: an ``httpx.Client`` with ``Authorization: Bearer <token>`` set.
        api: the API base (``https://api-dev.headspin.io``).
        serial: the device's serial (the session's ``appium:udid``).
        redactor: redacts every message.
    """

    route = "headspin-adb"

    def __init__(self, client: Any, api: str, serial: str, redactor: Any) -> None:
        from urllib.parse import quote

        self.client = client
        self.url = f"{api.rstrip('/')}/v0/adb/{quote(serial, safe='')}/shell"
        self.redactor = redactor

    def run(self, argv: Sequence[str]) -> str:
        import httpx

        shown = self.redactor.url(self.url)
        try:  # streamed: at most MAX_DUMP_BYTES of the answer is ever read
            with self.client.stream("POST", self.url,
                                    content=shlex.join(list(argv)).encode()) as resp:
                status = resp.status_code
                body = bytearray()
                if status == 200:
                    for chunk in resp.iter_bytes():
                        body += chunk[:MAX_DUMP_BYTES - len(body)]
                        if len(body) >= MAX_DUMP_BYTES:
                            break
        except httpx.HTTPError as exc:
            raise InfraError(f"HeadSpin adb shell: {shown} did not answer "
                             f"({type(exc).__name__})", "check --farm-api") from None
        if status in (401, 403):
            raise ShellRefused(f"HeadSpin adb shell: {shown} answered HTTP {status}")
        if status != 200:
            raise InfraError(f"HeadSpin adb shell: {shown} answered HTTP {status}",
                             "see the HeadSpin session")
        text = bytes(body).decode("utf-8", "replace")
        try:  # the answer's shape is not documented: {"stdout": ...} or plain text
            import json

            data = json.loads(text)
            if isinstance(data, dict) and isinstance(data.get("stdout"), str):
                return data["stdout"]
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            pass
        return text


#: the dump names, in the order the crash evidence is preferred (a tombstone first)
DUMP_NAMES = tuple(f"dropbox-{tag}" for tag in DROPBOX_TAGS) + ("exit-info",)


def shell_commands(package: str) -> list[tuple[str, list[str]]]:
    """``(name, argv)`` of every dump (:data:`DUMP_NAMES`) for ``package`` (a validated
    package name)."""
    out = [(f"dropbox-{tag}", ["dumpsys", "dropbox", "--print", tag]) for tag in DROPBOX_TAGS]
    out.append(("exit-info", ["dumpsys", "activity", "exit-info", package]))
    return out


def run_dumps(shell: Shell, package: str) -> dict[str, str]:
    """Every dump's text by name (see :func:`shell_commands`). Raises what ``shell.run``
    raises (:class:`ShellRefused` on the first refusal)."""
    return {name: shell.run(argv) for name, argv in shell_commands(package)}


@dataclasses.dataclass(frozen=True)
class ShellEntry:
    """One DropBox or exit-info entry: ``source`` (``dropbox:<TAG>`` / ``exit-info``), the
    ``pid`` and ``process`` it names, ``when`` (device time as printed) and ``clock`` (the
    same on :attr:`kit.farms.attribute.LogLine.clock`'s scale), its ``text`` (readable by
    :func:`kit.crash.parse_text`), ``reason`` (exit-info), and whether it is crash
    evidence (``crash``) or the kit's own stop (``kit_stop``)."""

    source: str
    pid: int | None
    process: str | None
    when: str
    clock: float | None
    text: str
    reason: str | None = None
    crash: bool = True
    kit_stop: bool = False


def clock_of(when: str) -> float | None:
    """A device time as DropBox and exit-info print it (``YYYY-MM-DD HH:MM:SS[.mmm]``) on
    :attr:`kit.farms.attribute.LogLine.clock`'s scale (seconds since 1 January, the year
    dropped as logcat drops it), or ``None`` when unreadable."""
    try:
        t = _dt.datetime.strptime(when[:19], "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    base = _dt.datetime(2000, 1, 1)
    try:
        return (t.replace(year=2000) - base).total_seconds()
    except ValueError:
        return None


def read_entries(name: str, text: str) -> list[ShellEntry]:
    """The entries of one dump (``name`` from :data:`DUMP_NAMES`); never raises."""
    out: list[ShellEntry] = []
    if name.startswith("dropbox-"):
        for when, tag, entry in dropbox_entries(text):
            m = _DROPBOX_PID_RE.search(entry)
            pid = int(m.group("a") or m.group("b")) if m else None
            proc = _DROPBOX_PROC_RE.search(entry)
            if proc is None:
                named = re.search(r">>> (\S+) <<<", entry)
                proc_name = named.group(1) if named else None
            else:
                proc_name = proc.group("proc")
            out.append(ShellEntry(f"dropbox:{tag}", pid, proc_name, when, clock_of(when),
                                  entry))
        return out
    for info in parse_exit_info(text):
        block = exit_info_block(text, info.index) if info.index is not None else ""
        reason = info.reason_enum
        out.append(ShellEntry("exit-info", info.pid, info.process, info.timestamp or "",
                              clock_of(info.timestamp or ""), block or text,
                              reason=info.reason_text or (str(info.reason)
                                                          if info.reason is not None
                                                          else None),
                              crash=reason in CRASH_REASONS,
                              kit_stop=reason is ExitReason.USER_REQUESTED))
    return out


@dataclasses.dataclass(frozen=True)
class ShellWindow:
    """A launch as the shell pass sees it: its ``pid`` (from its ``COLDSTART`` lines) and
    the device clock of its first and last log lines (``start`` / ``end``, on
    :attr:`kit.farms.attribute.LogLine.clock`'s scale; ``None`` when unknown)."""

    launch_id: str
    pid: int | None
    start: float | None
    end: float | None


def window_of_log(launch_id: str, lines: Iterable[LogLine], end_slack_s: float = 30.0
                  ) -> ShellWindow:
    """The :class:`ShellWindow` of one launch's own log lines (the Appium ``get_log``
    drain of that launch): the pid of its first ``COLDSTART`` line of ``launch_id`` and the
    clock span of every line (``end`` moved by ``end_slack_s``: a tombstone is written
    after the death was seen)."""
    pid = None
    clocks: list[float] = []
    for line in lines:
        if line.clock is not None:
            clocks.append(line.clock)
        msg = line.msg or line.text
        if pid is None and MARKER in msg and line.pid is not None:
            event = parse_line(msg).event
            if event is not None and event.id == launch_id:
                pid = line.pid
    return ShellWindow(launch_id, pid, min(clocks) if clocks else None,
                       max(clocks) + end_slack_s if clocks else None)


@dataclasses.dataclass(frozen=True)
class ShellMatch:
    launch_id: str
    entry: ShellEntry
    how: str


def _same_app(process: str | None, package: str | None) -> bool:
    if not package or not process:
        return True
    base = process.split(":", 1)[0]
    return base == package or (len(base) >= 15 and package.endswith(base))


def match_entries(entries: Iterable[ShellEntry], windows: Sequence[ShellWindow],
                  package: str | None) -> tuple[list[ShellMatch], int]:
    """Each crash entry of ``package`` given to its launch (see the module doc), and the
    number of the kit's own stops of these launches. An entry is given at most once."""
    matches: list[ShellMatch] = []
    stops = 0
    known = {w.pid for w in windows if w.pid is not None}
    seen: set[tuple[str, int | None, str]] = set()
    for entry in entries:
        key = (entry.source, entry.pid, entry.when)
        if key in seen or not _same_app(entry.process, package):
            continue
        seen.add(key)
        if not entry.crash and not entry.kit_stop:
            continue
        owner: tuple[str, str] | None = None
        for w in windows:
            after = w.start is None or entry.clock is None or entry.clock >= w.start - SLACK_S
            if w.pid is not None and entry.pid == w.pid and after:
                owner = (w.launch_id, "pid")  # the latest such launch: pids are reused
        if owner is None and entry.pid not in known and entry.clock is not None:
            for w in windows:
                if w.pid is None and w.start is not None and w.end is not None and \
                        w.start - SLACK_S <= entry.clock <= w.end:
                    owner = (w.launch_id, "window")
        if owner is not None and entry.kit_stop:
            stops += 1
        elif owner is not None:
            matches.append(ShellMatch(owner[0], entry, owner[1]))
    return matches, stops


def best_entry(matches: Iterable[ShellMatch]) -> ShellMatch | None:
    """The match whose text is the best crash report: a DropBox tombstone first, then
    ``data_app_native_crash``, ``data_app_crash``, then an exit-info entry."""
    order = {f"dropbox:{tag}": n for n, tag in enumerate(DROPBOX_TAGS)}
    ranked = sorted(matches, key=lambda m: order.get(m.entry.source, len(order)))
    return ranked[0] if ranked else None


def dumps_from_zip(data: bytes, limit: int = MAX_DUMP_BYTES) -> dict[str, str]:
    """The dumps (:data:`DUMP_NAMES`, ``<name>.txt`` in any folder) in a zip such as AWS
    Device Farm's ``Customer Artifacts.zip``; each read to at most ``limit`` bytes;
    ``{}`` for a file that is not a zip. Never raises."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError):
        return {}
    out: dict[str, str] = {}
    with archive:
        for info in archive.infolist():
            base = info.filename.rsplit("/", 1)[-1]
            name = base[:-4] if base.endswith(".txt") else ""
            if name not in DUMP_NAMES or info.is_dir():
                continue
            try:
                with archive.open(info) as fh:
                    out[name] = out.get(name, "") + fh.read(limit).decode("utf-8", "replace")
            except (zipfile.BadZipFile, OSError, RuntimeError, ValueError):
                continue
    return out


def windows_of_records(read_log: Callable[[str], str | None], launch_ids: Sequence[str],
                       pids: dict[str, int]) -> list[ShellWindow]:
    """The windows of a campaign's launches: each from the launch's own log text
    (``read_log(launch_id)``, ``None`` when absent), its pid replaced by ``pids`` (from the
    session's device log) when that names one."""
    out = []
    for lid in launch_ids:
        text = read_log(lid)
        w = window_of_log(lid, read_log_lines(text)) if text else ShellWindow(lid, None, None,
                                                                               None)
        if lid in pids:
            w = dataclasses.replace(w, pid=pids[lid])
        out.append(w)
    return out


#: ``--farm`` names whose sessions allow a shell, and their route
FARM_ROUTES = {"saucelabs": "mobile-shell", "headspin": "headspin-adb"}
#: ``HEADSPIN_API_TOKEN``: HeadSpin's API token (never written to a file)
HEADSPIN_TOKEN_ENV = "HEADSPIN_API_TOKEN"
HEADSPIN_API = "https://api-dev.headspin.io"


def make_shell_factory(route: str | None, *, serial: str | None, env: dict[str, str],
                       api: str | None, redactor: Any) -> Callable[[Any], Shell] | None:
    """The launcher's shell factory (session -> :class:`Shell`) of ``route``
    (``mobile-shell``, ``headspin-adb``), or ``None`` for no route.

    Raises:
        UsageError: HeadSpin without ``HEADSPIN_API_TOKEN`` or a device serial.
    """
    from ..errors import UsageError

    if route is None:
        return None
    if route == "mobile-shell":
        return AppiumShell
    if route != "headspin-adb":
        raise UsageError(f"unknown shell route {route[:40]!r}", "mobile-shell or headspin-adb")
    token = env.get(HEADSPIN_TOKEN_ENV)
    if not token:
        raise UsageError(f"--farm headspin needs {HEADSPIN_TOKEN_ENV} in the environment",
                         "export it (it is never written to a file)")
    if not serial:
        raise UsageError("--farm headspin needs the device's serial",
                         "give appium:udid in --caps")
    redactor.add_secrets([token])
    import httpx

    client = httpx.Client(headers={"Authorization": f"Bearer {token}",
                                   "User-Agent": "coldstart-farm-evidence"},
                          timeout=httpx.Timeout(60.0, connect=20.0))
    base = api or HEADSPIN_API
    return lambda _session: HeadSpinShell(client, base, serial, redactor)
