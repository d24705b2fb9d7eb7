"""iOS targets: simulators through ``xcrun simctl``, devices through ``xcrun devicectl``.

Layers (notes/drivers.md section 5, notes/crash-formats.md sections 4-6):

* :class:`Xcrun` - the transport: runs ``xcrun <tool> ...`` with argv lists (never a shell),
  maps "no Xcode tools" to a usage error and CoreSimulator errors
  (``An error was encountered processing the command (domain=..., code=N):``) to
  :class:`XcrunError` (an infra error).
* :class:`Simctl` / :class:`Devicectl` - the tools' commands and output formats.
* :class:`DiagnosticReports` - the host folder where macOS ReportCrash writes simulator
  crash reports (``.ips``; ``.crash`` before macOS 12), read with the kit's crash parser.
* :class:`SimulatorLauncher` / :class:`DeviceLauncher` - one cold launch per call
  (:class:`kit.campaign.Launcher`).

One simulator launch: ``simctl terminate``; a ``simctl spawn <udid> log stream --style ndjson
--level info`` on the React Native console (subsystem ``com.facebook.react.log``) is started
and read from its first line on; the app is started cold with the scenario as its deep link
(``simctl openurl``, the default, which the app reads with ``Linking.getInitialURL()``) or as
launch arguments (``simctl launch <udid> <bundle> -coldstartScenario <url>``); its death is
seen when its ``UIKitApplication:<bundle>`` job leaves ``launchctl list`` inside the
simulator; a crash report for this simulator (its UDID in the report), this process (pid or
name) and this launch's time window is then awaited in the DiagnosticReports folder for up to
``report_wait_s`` (ReportCrash writes it seconds after the death), parsed and classified with
:mod:`kit.crash`.

Heap poisoning (``--poison``): Apple's libmalloc debug variables :data:`POISON_ENV`. With
``simctl launch`` they are passed as ``SIMCTL_CHILD_<name>`` in simctl's environment (simctl
strips the prefix); a deep link cannot carry an environment, so with ``openurl`` they are set
in the simulator's launchd with ``simctl spawn <udid> launchctl setenv`` before the campaign
(and unset after it), which every process launched afterwards in that simulator inherits.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import plistlib
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..campaign import LaunchContext, utc_now
from ..errors import InfraError, UsageError
from ..protocol import ProtocolEvent, iter_events
from ..records import LaunchRecord, Outcome, SessionTiming
from ..scenario import PHASES

__all__ = ["Xcrun", "XcrunError", "Simctl", "SimDevice", "Devicectl", "PhysicalDevice",
           "AppBundle", "read_app_bundle", "DiagnosticReports", "diagnostic_reports_dir",
           "SimulatorLauncher", "DeviceLauncher", "Delivery", "EventSummary",
           "summarize_events", "crash_fields", "record_for", "POISON_ENV",
           "SCENARIO_ARGUMENT", "RN_LOG_SUBSYSTEM", "DIAGNOSTIC_REPORTS_ENV",
           "DEFAULT_DIAGNOSTIC_REPORTS", "DEFAULT_REPORT_WAIT_S", "BUNDLE_ID_RE", "UDID_RE"]

#: Apple libmalloc debug variables (``man malloc``): freed blocks filled with 0x55
#: (``MallocScribble``), new blocks with 0xAA (``MallocPreScribble``), guard pages around
#: large blocks (``MallocGuardEdges``), abort on heap corruption malloc detects
#: (``MallocErrorAbort``). 0x55 in a fault address points at a use after free.
POISON_ENV: dict[str, str] = {"MallocScribble": "1", "MallocPreScribble": "1",
                              "MallocGuardEdges": "1", "MallocErrorAbort": "1"}
#: Launch argument naming the scenario URL (``-key value`` pairs land in the app's
#: ``NSUserDefaults`` argument domain) for :attr:`Delivery.ARGS`.
SCENARIO_ARGUMENT = "-coldstartScenario"
#: os_log subsystem of React Native's JS console (``console.log`` -> category ``javascript``).
RN_LOG_SUBSYSTEM = "com.facebook.react.log"
#: Environment variable naming the DiagnosticReports folder (``--diagnostic-reports``).
DIAGNOSTIC_REPORTS_ENV = "COLDSTART_DIAGNOSTIC_REPORTS"
DEFAULT_DIAGNOSTIC_REPORTS = "~/Library/Logs/DiagnosticReports"
#: Seconds to wait for ReportCrash to write a report after the app died.
DEFAULT_REPORT_WAIT_S = 15.0
BUNDLE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,154}$")
#: Simulator UDIDs are UUIDs; device UDIDs are 40 hex digits or ``XXXXXXXX-XXXXXXXXXXXXXXXX``.
UDID_RE = re.compile(r"^[A-Fa-f0-9-]{20,64}$")
_SIM_ERROR_RE = re.compile(r"\(domain=(?P<domain>[^,]+), code=(?P<code>-?\d+)\)")
_LAUNCH_PID_RE = re.compile(r"^(?P<bundle>[^:\s]+): (?P<pid>\d+)\s*$", re.M)
_POLL_S = 0.2
_PHASE_ORDER = {p: i for i, p in enumerate(PHASES)}


# --------------------------------------------------------------------------- transport
class XcrunError(InfraError):
    """An ``xcrun`` tool failed. ``domain``/``code`` come from a CoreSimulator error
    line when there is one; ``output`` keeps stdout and stderr."""

    def __init__(self, message: str, hint: str | None, output: str,
                 domain: str | None = None, code: int | None = None,
                 returncode: int | None = None) -> None:
        super().__init__(message, hint)
        self.output = output
        self.domain = domain
        self.code = code
        self.returncode = returncode


class Xcrun:
    """Runs ``xcrun`` tools with argv lists.

    Args:
        executable: the ``xcrun`` to use (default: the one on ``PATH``).
        timeout_s: default time limit of one command, in seconds.

    Raises:
        UsageError: no ``xcrun`` on ``PATH`` (Xcode's command line tools are missing).
    """

    def __init__(self, executable: str | None = None, timeout_s: float = 120.0) -> None:
        found = executable or shutil.which("xcrun")
        if found is None:
            raise UsageError("xcrun was not found on PATH: the Xcode tools are missing",
                             "install Xcode and run `xcode-select --install` (iOS targets "
                             "need a Mac)")
        self.executable = found
        self.timeout_s = timeout_s

    def argv(self, tool: str, *args: str) -> list[str]:
        """The argv of ``xcrun <tool> <args...>``."""
        return [self.executable, tool, *args]

    def run(self, tool: str, *args: str, env: dict[str, str] | None = None,
            timeout_s: float | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        """Run a tool to completion and capture its output.

        Raises:
            UsageError: xcrun cannot find the tool (Xcode missing or too old).
            XcrunError: the tool exited non-zero (with ``check``) or timed out.
        """
        full_env = {**os.environ, **(env or {})}
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            proc = subprocess.run(self.argv(tool, *args), capture_output=True, text=True,
                                  env=full_env, timeout=limit, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise XcrunError(f"`xcrun {tool} {args[0] if args else ''}` did not answer "
                             f"within {limit:g} s", "check that the simulator or device "
                             "responds (restart it)", output="") from None
        except OSError as exc:
            raise UsageError(f"cannot run {self.executable}: {exc}",
                             "install Xcode's command line tools") from None
        if proc.returncode != 0 and "unable to find utility" in proc.stderr:
            raise UsageError(f"xcrun cannot find {tool!r}: {proc.stderr.strip()}",
                             "install Xcode (15 or later for devicectl) and select it with "
                             "`xcode-select -s`")
        if check and proc.returncode != 0:
            raise _xcrun_error(tool, args, proc)
        return proc

    def popen(self, tool: str, *args: str, env: dict[str, str] | None = None,
              stdout: Any = subprocess.PIPE, stderr: Any = subprocess.STDOUT
              ) -> "subprocess.Popen[str]":
        """Start a long-running tool (``log stream``, ``--console``) in its own session."""
        try:
            return subprocess.Popen(self.argv(tool, *args), stdout=stdout, stderr=stderr,
                                    stdin=subprocess.DEVNULL, text=True, bufsize=1,
                                    env={**os.environ, **(env or {})},
                                    start_new_session=True)
        except OSError as exc:
            raise UsageError(f"cannot run {self.executable}: {exc}",
                             "install Xcode's command line tools") from None


def _xcrun_error(tool: str, args: Sequence[str], proc: subprocess.CompletedProcess[str]
                 ) -> XcrunError:
    output = (proc.stdout + proc.stderr).strip()
    match = _SIM_ERROR_RE.search(output)
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    detail = lines[-1] if lines else f"exit {proc.returncode}"
    if match and lines and lines[-1] == match.group(0):
        detail = lines[-1]
    what = " ".join([tool, *args[:1]])
    return XcrunError(f"`xcrun {what}` failed: {detail}", "see the simulator/device state "
                      "with `xcrun simctl list devices` or `xcrun devicectl list devices`",
                      output=output, domain=match.group("domain") if match else None,
                      code=int(match.group("code")) if match else None,
                      returncode=proc.returncode)


# --------------------------------------------------------------------------- app bundles
@dataclasses.dataclass(frozen=True)
class AppBundle:
    """What the kit needs from an app's ``Info.plist``.

    Attributes:
        path: the ``.app`` folder or ``.ipa`` file.
        bundle_id: ``CFBundleIdentifier``.
        executable: ``CFBundleExecutable`` (the process name in crash reports).
        platforms: ``CFBundleSupportedPlatforms`` (``iPhoneSimulator``, ``iPhoneOS``).
        url_schemes: ``CFBundleURLTypes[*].CFBundleURLSchemes``.
    """

    path: str
    bundle_id: str
    executable: str
    platforms: tuple[str, ...]
    url_schemes: tuple[str, ...]

    @property
    def for_simulator(self) -> bool:
        return "iPhoneSimulator" in self.platforms

    @property
    def for_device(self) -> bool:
        return "iPhoneOS" in self.platforms


def read_app_bundle(path: str | os.PathLike[str]) -> AppBundle:
    """Read an ``.app`` folder's or an ``.ipa``'s (``Payload/<name>.app/``) ``Info.plist``
    (XML or binary plist).

    Raises:
        UsageError: the path is missing, not an app, or its Info.plist is unreadable or has
            no valid ``CFBundleIdentifier``.
    """
    app = Path(path).expanduser()
    try:
        if app.is_dir():
            data = (app / "Info.plist").read_bytes()
        elif app.suffix == ".ipa" and app.is_file():
            with zipfile.ZipFile(app) as archive:
                names = [n for n in archive.namelist()
                         if re.fullmatch(r"Payload/[^/]+\.app/Info\.plist", n)]
                if not names:
                    raise UsageError(f"{app} has no Payload/<name>.app/Info.plist",
                                     "pass an .ipa exported by Xcode")
                data = archive.read(names[0])
        else:
            raise UsageError(f"{app} is not an .app folder or an .ipa file",
                             "pass the app built by Xcode (Products/*/Name.app or an .ipa)")
        info = plistlib.loads(data)
    except (OSError, zipfile.BadZipFile, plistlib.InvalidFileException, ValueError) as exc:
        raise UsageError(f"cannot read the Info.plist of {app}: {exc}",
                         "pass the app built by Xcode") from None
    if not isinstance(info, dict):
        raise UsageError(f"the Info.plist of {app} is not a dictionary", "rebuild the app")
    bundle_id = str(info.get("CFBundleIdentifier", ""))
    if not BUNDLE_ID_RE.match(bundle_id):
        raise UsageError(f"{app} has no valid CFBundleIdentifier ({bundle_id!r})",
                         "rebuild the app")
    schemes = tuple(s for t in info.get("CFBundleURLTypes") or [] if isinstance(t, dict)
                    for s in t.get("CFBundleURLSchemes") or [] if isinstance(s, str))
    return AppBundle(path=str(app), bundle_id=bundle_id,
                     executable=str(info.get("CFBundleExecutable") or app.stem),
                     platforms=tuple(str(p) for p in info.get("CFBundleSupportedPlatforms")
                                     or ()), url_schemes=schemes)


def check_bundle_id(bundle_id: str) -> str:
    """Validate a bundle id (``[A-Za-z0-9][A-Za-z0-9.-]*``). Raises UsageError."""
    if not BUNDLE_ID_RE.match(bundle_id or ""):
        raise UsageError(f"bundle id {bundle_id!r} is invalid",
                         "use letters, digits, dots and hyphens, e.g. org.coldstart.app")
    return bundle_id


# --------------------------------------------------------------------------- simctl
@dataclasses.dataclass(frozen=True)
class SimDevice:
    """One simulator from ``simctl list -j devices``: ``udid``, ``name``, ``state``
    (``Booted``, ``Shutdown``, ``Shutting Down``...), ``runtime`` (the runtime key, e.g.
    ``com.apple.CoreSimulator.SimRuntime.iOS-18-2``) and ``available``."""

    udid: str
    name: str
    state: str
    runtime: str
    available: bool = True


class LogStream:
    """A running ``simctl spawn <udid> log stream --style ndjson``: its lines, read by a
    thread from the first line on (the header line is not JSON and marks readiness)."""

    def __init__(self, proc: "subprocess.Popen[str]") -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.messages: list[str] = []
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True, name="log-stream")
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            with self._lock:
                self.lines.append(line)
                message = _ndjson_message(line)
                if message is not None:
                    self.messages.append(message)
            self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout_s: float) -> bool:
        """True once the stream printed its first line (its header) and is still running."""
        return self._ready.wait(timeout_s) and self.proc.poll() is None

    def snapshot(self) -> list[str]:
        """The event messages read so far."""
        with self._lock:
            return list(self.messages)

    def stop(self) -> None:
        """Stop the stream (a leaked ``log stream`` slows the simulator down)."""
        _kill_group(self.proc)
        self._thread.join(2)


def _ndjson_message(line: str) -> str | None:
    """``eventMessage`` of one ``log stream --style ndjson`` record (``None`` for the header
    and any line that is not a JSON object). One pair of quotes around the whole message
    (older React Native quoted strings in the native log) is removed."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("eventMessage"), str):
        return None
    message = obj["eventMessage"].strip()
    if len(message) >= 2 and message[0] == message[-1] == "'":
        message = message[1:-1]
    return message


def _kill_group(proc: "subprocess.Popen[Any]") -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 15)
            proc.wait(2)
        except (ProcessLookupError, PermissionError):
            pass
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait(2)


class Simctl:
    """``xcrun simctl`` commands (formats: Apple's ``simctl help``, notes/drivers.md s. 5)."""

    def __init__(self, xcrun: Xcrun) -> None:
        self.xcrun = xcrun

    def devices(self) -> list[SimDevice]:
        """Every simulator (``simctl list -j devices``).

        Raises:
            XcrunError: simctl failed or printed something that is not its JSON.
        """
        proc = self.xcrun.run("simctl", "list", "-j", "devices")
        try:
            data = json.loads(proc.stdout)
            groups = data["devices"]
        except (ValueError, KeyError, TypeError):
            raise XcrunError("`xcrun simctl list -j devices` printed no device list",
                             "run it yourself to see what is wrong",
                             output=proc.stdout[:2000]) from None
        found = []
        for runtime, items in groups.items():
            for item in items or []:
                if isinstance(item, dict) and item.get("udid"):
                    found.append(SimDevice(udid=str(item["udid"]), name=str(item.get("name")),
                                           state=str(item.get("state")), runtime=str(runtime),
                                           available=bool(item.get("isAvailable", True))))
        return found

    def resolve(self, udid: str | None = None, name: str | None = None) -> SimDevice:
        """The simulator with this UDID, or the available one named ``name`` (a booted one
        first when several share the name).

        Raises:
            UsageError: no such simulator, or it is unavailable (its runtime is missing).
        """
        devices = self.devices()
        if udid:
            match = [d for d in devices if d.udid.lower() == udid.lower()]
            what = f"UDID {udid}"
        else:
            match = sorted((d for d in devices if d.name == name),
                           key=lambda d: (d.state != "Booted", not d.available))
            what = f"name {name!r}"
        if not match:
            known = ", ".join(f"{d.name} ({d.udid}, {d.state})" for d in devices[:8])
            raise UsageError(f"no simulator with {what}",
                             f"pick one of: {known}" if known else
                             "create one with `xcrun simctl create` or in Xcode")
        device = match[0]
        if not device.available:
            raise UsageError(f"simulator {device.name} ({device.udid}) is unavailable",
                             "install its runtime in Xcode, or pick another simulator")
        return device

    def boot(self, device: SimDevice, timeout_s: float = 300.0) -> None:
        """Boot the simulator if needed and wait until it has finished booting
        (``simctl bootstatus <udid> -b``)."""
        self.xcrun.run("simctl", "bootstatus", device.udid, "-b", timeout_s=timeout_s)

    def install(self, udid: str, app_path: str) -> None:
        """``simctl install <udid> <app>``."""
        self.xcrun.run("simctl", "install", udid, app_path, timeout_s=300.0)

    def terminate(self, udid: str, bundle_id: str) -> bool:
        """``simctl terminate``; False (not an error) when the app was not running."""
        return self.xcrun.run("simctl", "terminate", udid, bundle_id, check=False,
                              timeout_s=30.0).returncode == 0

    def launch(self, udid: str, bundle_id: str, args: Sequence[str] = (),
               env: dict[str, str] | None = None) -> int:
        """``simctl launch <udid> <bundle> <args...>`` with ``env`` passed as
        ``SIMCTL_CHILD_<name>``; returns the pid simctl prints (``<bundle>: <pid>``).

        Raises:
            XcrunError: the launch request failed (e.g. the simulator is not booted).
        """
        child_env = {f"SIMCTL_CHILD_{k}": v for k, v in (env or {}).items()}
        proc = self.xcrun.run("simctl", "launch", udid, bundle_id, *args, env=child_env,
                              timeout_s=60.0)
        match = _LAUNCH_PID_RE.search(proc.stdout)
        if match is None:
            raise XcrunError(f"`xcrun simctl launch` printed no pid: {proc.stdout.strip()!r}",
                             "check the app is installed", output=proc.stdout)
        return int(match.group("pid"))

    def openurl(self, udid: str, url: str) -> None:
        """``simctl openurl <udid> <url>`` (starts the app that handles the scheme)."""
        self.xcrun.run("simctl", "openurl", udid, url, timeout_s=60.0)

    def launchctl_setenv(self, udid: str, env: dict[str, str], unset: bool = False) -> None:
        """``simctl spawn <udid> launchctl setenv K V`` (or ``unsetenv K``) for each key:
        processes launched afterwards in the simulator inherit them."""
        for key, value in env.items():
            args = ("unsetenv", key) if unset else ("setenv", key, value)
            self.xcrun.run("simctl", "spawn", udid, "launchctl", *args, timeout_s=30.0)

    def app_pid(self, udid: str, bundle_id: str) -> int | None:
        """The pid of the app's ``UIKitApplication:<bundle>[...]`` job in the simulator's
        ``launchctl list`` (columns ``PID``, ``Status``, ``Label``), or ``None`` when it is
        not running.

        Raises:
            XcrunError: the simulator did not answer (e.g. it shut down).
        """
        proc = self.xcrun.run("simctl", "spawn", udid, "launchctl", "list", timeout_s=30.0)
        label = f"UIKitApplication:{bundle_id}["
        for line in proc.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[2].startswith(label):
                return int(parts[0]) if parts[0].strip().isdigit() else None
        return None

    def log_stream(self, udid: str, level: str = "info") -> LogStream:
        """Start ``simctl spawn <udid> log stream --style ndjson --level <level>
        --predicate 'subsystem == "com.facebook.react.log"'``."""
        proc = self.xcrun.popen("simctl", "spawn", udid, "log", "stream", "--style", "ndjson",
                                "--level", level, "--predicate",
                                f'subsystem == "{RN_LOG_SUBSYSTEM}"',
                                stderr=subprocess.DEVNULL)
        return LogStream(proc)


# --------------------------------------------------------------------------- reports
def diagnostic_reports_dir(option: str | None = None) -> Path:
    """The DiagnosticReports folder: ``option`` (``--diagnostic-reports``), else
    ``$COLDSTART_DIAGNOSTIC_REPORTS``, else ``~/Library/Logs/DiagnosticReports``."""
    raw = option or os.environ.get(DIAGNOSTIC_REPORTS_ENV) or DEFAULT_DIAGNOSTIC_REPORTS
    return Path(raw).expanduser()


class DiagnosticReports:
    """A folder of crash reports (``*.ips``, ``*.crash``), watched across one launch.

    Args:
        directory: the folder (see :func:`diagnostic_reports_dir`).
    """

    SUFFIXES = (".ips", ".crash")

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def snapshot(self) -> set[str]:
        """Names of the reports in the folder now (empty when it does not exist yet)."""
        try:
            return {p.name for p in self.directory.iterdir() if p.suffix in self.SUFFIXES}
        except OSError:
            return set()

    def new_reports(self, before: set[str], since_epoch_s: float) -> list[Path]:
        """Reports not in ``before`` and modified at or after ``since_epoch_s`` (oldest
        first)."""
        found = []
        for name in sorted(self.snapshot() - before):
            path = self.directory / name
            try:
                if path.stat().st_mtime >= since_epoch_s - 1.0:
                    found.append(path)
            except OSError:
                continue
        return sorted(found, key=lambda p: p.stat().st_mtime)

    def wait_for(self, before: set[str], since_epoch_s: float,
                 accept: Callable[[str], bool], wait_s: float,
                 abort: threading.Event | None = None) -> tuple[Path, str] | None:
        """Poll until a new report whose text ``accept`` s appears, for up to ``wait_s``.

        Returns:
            ``(path, text)`` of the first accepted report, or ``None``.
        """
        deadline = time.monotonic() + wait_s
        seen: set[str] = set()
        while True:
            for path in self.new_reports(before, since_epoch_s):
                if path.name in seen:
                    continue
                try:
                    text = path.read_text(errors="replace")
                except OSError:
                    continue
                if not _complete_report(path, text):
                    continue  # still being written: look again next round
                seen.add(path.name)
                if accept(text):
                    return path, text
            if time.monotonic() >= deadline or (abort is not None and abort.is_set()):
                return None
            time.sleep(_POLL_S)


def _complete_report(path: Path, text: str) -> bool:
    """An ``.ips`` is complete once its second JSON object parses (ReportCrash writes the
    header line first); legacy ``.crash`` text is taken as it is."""
    if path.suffix != ".ips":
        return bool(text.strip())
    _head, sep, body = text.partition("\n")
    if not sep:
        return False
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- records
@dataclasses.dataclass(frozen=True)
class EventSummary:
    """What a launch's protocol events say, as :class:`~kit.records.LaunchRecord` fields.

    ``ok`` is the app's own score check (``inference-done``'s ``ok``), ``None`` when the
    app reported no inference.
    """

    last_phase: str | None
    phases: dict[str, float]
    sessions: list[SessionTiming]
    ort_version: str | None
    eps: list[str]
    scores: list[float]
    max_score_diff: float | None
    error: str | None
    ok: bool | None
    done: bool

    def record_fields(self) -> dict[str, Any]:
        """The fields shared by every target's record."""
        return {"last_phase": self.last_phase, "phases": dict(self.phases),
                "sessions": list(self.sessions), "ort_version": self.ort_version,
                "eps": list(self.eps), "scores": list(self.scores),
                "max_score_diff": self.max_score_diff, "error": self.error}


def summarize_events(events: Iterable[ProtocolEvent]) -> EventSummary:
    """Fold one launch's protocol events (kit/protocol.py) into record fields. Events may
    come from several sources (log and screen) and repeat; the last phase is the one the app
    reported latest (its ``t_ms``)."""
    phases: dict[str, float] = {}
    fields: dict[str, Any] = {}
    last_phase = None
    error = None
    for event in events:
        if event.phase == "error":
            error = error or str(event.fields.get("message", "error"))
            continue
        phases.setdefault(event.phase, event.t_ms)
        fields.update(event.fields)
    if phases:  # the same line may arrive twice (log and screen): order by the app's clock
        last_phase = max(phases, key=lambda p: (phases[p], _PHASE_ORDER.get(p, -1)))
    sessions = []
    for item in fields.get("sessions") or []:
        try:
            sessions.append(SessionTiming(i=int(item["i"]), model=str(item["model"]),
                                          start_ms=float(item["start_ms"]),
                                          end_ms=float(item["end_ms"])))
        except (KeyError, TypeError, ValueError):
            continue
    scores = [float(s) for s in fields.get("scores") or [] if isinstance(s, (int, float))]
    diff = fields.get("max_diff")
    ok = fields.get("ok") if isinstance(fields.get("ok"), bool) else None
    return EventSummary(last_phase=last_phase, phases=phases, sessions=sessions,
                        ort_version=fields.get("ort_version"),
                        eps=[str(e) for e in fields.get("eps") or []], scores=scores,
                        max_score_diff=float(diff) if isinstance(diff, (int, float)) else None,
                        error=error, ok=ok, done="done" in phases)


def crash_fields(text: str, ctx: LaunchContext, filename: str, hint: str | None = None
                 ) -> dict[str, Any]:
    """Keep ``text`` as ``artifacts/<launch-id>/<filename>``, parse it with
    :func:`kit.crash.parse_text` and classify it with :func:`kit.crash.classify`.

    Returns:
        ``crash``, ``crash_class``, ``signature`` and (when the report has one)
        ``signal``/``signal_name`` record fields.
    """
    from .. import crash as crashlib

    (ctx.artifacts_dir / filename).write_text(text)
    rel = f"{ctx.artifacts_rel}/{filename}"
    record = crashlib.parse_text(text, hint=hint)
    record = dataclasses.replace(record, raw_artifact=rel)
    verdict = crashlib.classify(record)
    out: dict[str, Any] = {"crash": record.to_dict(), "crash_class": verdict.crash_class,
                           "signature": verdict.signature}
    if record.signal is not None:
        out["signal"] = record.signal
        out["signal_name"] = record.signal_name
    return out


def record_for(ctx: LaunchContext, *, target: str, device: str, summary: EventSummary,
               started_at: str, wall_ms: float, artifacts: list[str],
               died: bool, hung: bool, crash: dict[str, Any] | None = None,
               death_note: str | None = None, extra: dict[str, Any] | None = None
               ) -> LaunchRecord:
    """The launch record of a mobile launch, from what was observed.

    Outcome rules (DESIGN.md): ``done`` reached -> ``completed`` (``wrong-output`` when the
    app's score check failed); an ``error`` event -> ``app-error``; the process died before
    ``done`` -> ``crashed`` (with the crash report when one was found); the timeout passed
    with the process alive -> ``hung``.
    """
    fields = summary.record_fields()
    if summary.done:
        outcome = Outcome.COMPLETED
        if ctx.scenario.infer and summary.ok is False:
            outcome = Outcome.WRONG_OUTPUT
    elif summary.error is not None:
        outcome = Outcome.APP_ERROR
    elif died:
        outcome = Outcome.CRASHED
        if crash is None:
            fields["error"] = death_note or "the app died before done without a crash report"
    elif hung:
        outcome = Outcome.HUNG
        fields["error"] = f"no done within {ctx.timeout_s:g} s; terminated"
    else:  # the loop ended without a verdict: nothing the app did explains it
        raise InfraError("the launch ended without done, death or timeout", "retry")
    if outcome is Outcome.CRASHED and crash:
        fields.update(crash)
    return LaunchRecord(launch_id=ctx.launch_id, index=ctx.index, attempt=ctx.attempt,
                        label=ctx.label, target=target, device=device,
                        scenario=ctx.scenario.to_url(), outcome=outcome,
                        started_at=started_at, wall_ms=wall_ms, artifacts=artifacts,
                        extra=dict(extra or {}), **fields)


# --------------------------------------------------------------------------- simulator
class Delivery(str, enum.Enum):
    """How the scenario reaches the app."""

    URL = "url"  #: ``simctl openurl`` cold-starts the app with the deep link
    ARGS = "args"  #: ``simctl launch ... -coldstartScenario <url>`` (launch arguments)

    def __str__(self) -> str:
        return self.value


def _accept_report(udid: str, pid: int | None, executable: str, bundle_id: str
                   ) -> Callable[[str], bool]:
    """Predicate for a simulator crash report of this launch: it names the simulator's
    UDID (``coalitionName``/``procPath``) and the process (its pid, else its name or
    bundle id)."""

    def accept(text: str) -> bool:
        if udid.lower() not in text.lower():
            return False
        from .. import crash as crashlib

        record = crashlib.parse_text(text, hint="ips")
        if pid is not None and record.pid is not None:
            return record.pid == pid
        return record.process in (executable, bundle_id) or bundle_id in text
    return accept


class SimulatorLauncher:
    """Cold-launches an app on one iOS simulator (see the module doc).

    Args:
        simctl: the simctl transport.
        device: the (booted) simulator.
        app: the installed app's bundle info.
        reports: the DiagnosticReports folder to collect crash reports from.
        poison: set :data:`POISON_ENV` for the app.
        delivery: how the scenario reaches the app (:class:`Delivery`).
        report_wait_s: seconds to wait for a crash report after a death.
        poll_s: seconds between liveness checks.
        start_wait_s: seconds the app may take to appear after the launch request; an app
            never seen running is an infra error (unless a crash report shows it died).
    """

    target = "ios-sim"

    def __init__(self, simctl: Simctl, device: SimDevice, app: AppBundle,
                 reports: DiagnosticReports, poison: bool = False,
                 delivery: Delivery = Delivery.URL,
                 report_wait_s: float = DEFAULT_REPORT_WAIT_S, poll_s: float = _POLL_S,
                 start_wait_s: float = 10.0) -> None:
        self.simctl = simctl
        self.start_wait_s = start_wait_s
        self.sim = device
        self.device = device.udid
        self.app = app
        self.reports = reports
        self.poison = poison
        self.delivery = delivery
        self.report_wait_s = report_wait_s
        self.poll_s = poll_s
        self._abort = threading.Event()
        self._env_set = False

    def prepare(self) -> None:
        """Before the campaign: with ``poison`` and URL delivery, set the variables in
        the simulator's launchd (see the module doc)."""
        if self.poison and self.delivery is Delivery.URL:
            self.simctl.launchctl_setenv(self.device, POISON_ENV)
            self._env_set = True

    def close(self) -> None:
        """After the campaign: terminate the app and unset what :meth:`prepare` set."""
        try:
            self.simctl.terminate(self.device, self.app.bundle_id)
            if self._env_set:
                self.simctl.launchctl_setenv(self.device, POISON_ENV, unset=True)
                self._env_set = False
        except (InfraError, UsageError):
            pass

    def abort(self) -> None:
        """Stop the launch in flight (Ctrl-C)."""
        self._abort.set()

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch. Raises InfraError when simctl fails (e.g. the simulator shut
        down) or the log stream cannot be started."""
        self._abort.clear()
        started_at = utc_now()
        t0 = time.monotonic()
        t0_epoch = time.time()
        url = ctx.scenario.to_url()
        self.simctl.terminate(self.device, self.app.bundle_id)
        stream = self.simctl.log_stream(self.device)
        pid: int | None = None
        died = hung = False
        try:
            if not stream.wait_ready(10.0):
                raise InfraError(f"`log stream` did not start on simulator {self.device}",
                                 "check the simulator is booted (`xcrun simctl list devices`)")
            before = self.reports.snapshot()
            if self.delivery is Delivery.ARGS:
                pid = self.simctl.launch(self.device, self.app.bundle_id,
                                         [SCENARIO_ARGUMENT, url],
                                         env=POISON_ENV if self.poison else None)
            else:
                self.simctl.openurl(self.device, url)
            deadline = t0 + ctx.timeout_s
            seen_alive = pid is not None
            next_check = 0.0
            while True:
                summary = summarize_events(iter_events(stream.snapshot(), ctx.launch_id))
                if summary.done or summary.error is not None:
                    break
                seen_alive = seen_alive or summary.last_phase is not None
                now = time.monotonic()
                if now >= next_check:
                    next_check = now + self.poll_s
                    running = self.simctl.app_pid(self.device, self.app.bundle_id)
                    if running is not None and (pid is None or running == pid):
                        pid, seen_alive = running, True
                    elif seen_alive or now - t0 > self.start_wait_s:
                        died = True  # gone (or never seen within start_wait_s)
                        time.sleep(0.3)  # lines already in the pipe
                        break
                if now >= deadline:
                    hung = True
                    break
                if self._abort.is_set():
                    raise InfraError("launch aborted", "resume with --resume")
                time.sleep(0.05)
        finally:
            stream.stop()
        lines = stream.lines
        (ctx.artifacts_dir / "log.ndjson").write_text("\n".join(lines) + "\n")
        artifacts = [f"{ctx.artifacts_rel}/log.ndjson"]
        summary = summarize_events(iter_events(stream.snapshot(), ctx.launch_id))
        crash = None
        note = None
        if died and not summary.done and summary.error is None:
            found = self.reports.wait_for(
                before, t0_epoch, _accept_report(self.device, pid, self.app.executable,
                                                 self.app.bundle_id),
                self.report_wait_s, abort=self._abort)
            if found is not None:
                path, text = found
                crash = crash_fields(text, ctx, "crash" + path.suffix, hint="ips")
                crash_name = f"{ctx.artifacts_rel}/crash{path.suffix}"
                artifacts.append(crash_name)
                crash["crash_report"] = path.name
                if pid is None:  # it crashed before a poll saw it: the report names it
                    pid = crash["crash"].get("pid")
            elif not seen_alive:  # never started: a setup problem, not a crash
                raise InfraError(f"the app did not start on simulator {self.device} within "
                                 f"{self.start_wait_s:g} s of the launch request (no process, "
                                 "no COLDSTART line)",
                                 "check the app is installed and opens coldstart:// URLs, or "
                                 "use --deliver args")
            else:
                note = (f"the app died before done and no crash report for it appeared in "
                        f"{self.reports.directory} within {self.report_wait_s:g} s")
        if hung or summary.done or summary.error is not None:
            self.simctl.terminate(self.device, self.app.bundle_id)
        extra = {"pid": pid}
        if crash is not None:
            extra["crash_report"] = crash.pop("crash_report")
        return record_for(ctx, target=self.target, device=self.device, summary=summary,
                          started_at=started_at, wall_ms=(time.monotonic() - t0) * 1000.0,
                          artifacts=artifacts, died=died, hung=hung, crash=crash,
                          death_note=note, extra=extra)


def setup_simulator(xcrun: Xcrun, *, udid: str | None, name: str | None,
                    app_path: str | None, bundle_id: str | None, install: bool = True,
                    log: Callable[[str], None] = lambda _m: None) -> tuple[Simctl, SimDevice,
                                                                            AppBundle]:
    """Resolve and boot the simulator, check and install the app.

    Raises:
        UsageError: unknown simulator, an app not built for the simulator, neither
            ``app_path`` nor ``bundle_id``.
        XcrunError: booting or installing failed.
    """
    simctl = Simctl(xcrun)
    device = simctl.resolve(udid=udid, name=name)
    if app_path:
        app = read_app_bundle(app_path)
        if not app.for_simulator:
            platforms = ",".join(app.platforms) or "none"
            raise UsageError(f"{app_path} is not built for the simulator "
                             f"(CFBundleSupportedPlatforms: {platforms})",
                             "build it with `-sdk iphonesimulator` (Products/*-iphonesimulator"
                             "/*.app), or use `coldstart run ios-device` for device builds")
        if bundle_id and bundle_id != app.bundle_id:
            raise UsageError(f"--bundle-id {bundle_id} does not match the app's "
                             f"CFBundleIdentifier {app.bundle_id}", "drop --bundle-id")
    elif bundle_id:
        check_bundle_id(bundle_id)
        app = AppBundle(path="", bundle_id=bundle_id, executable=bundle_id.split(".")[-1],
                        platforms=(), url_schemes=())
    else:
        raise UsageError("no app given", "pass --app App.app (or --bundle-id of an installed "
                         "app)")
    if device.state != "Booted":
        log(f"booting simulator {device.name} ({device.udid})")
    simctl.boot(device)
    if app_path and install:
        log(f"installing {app.path} on {device.name}")
        simctl.install(device.udid, app.path)
    return simctl, dataclasses.replace(device, state="Booted"), app


# --------------------------------------------------------------------------- devices
@dataclasses.dataclass(frozen=True)
class PhysicalDevice:
    """One device from ``devicectl list devices``: ``identifier`` (CoreDevice id),
    ``udid`` (``hardwareProperties.udid``), ``name`` and ``os_version``."""

    identifier: str
    udid: str
    name: str
    os_version: str | None


class Devicectl:
    """``xcrun devicectl`` commands (Xcode 15+). Every command is run with
    ``--json-output <file>`` and its JSON (``{"info": ..., "result": ...}`` or
    ``{"error": {"userInfo": {"NSLocalizedDescription": {"string": ...}}}}``) is read."""

    def __init__(self, xcrun: Xcrun) -> None:
        self.xcrun = xcrun

    def _json(self, *args: str, timeout_s: float = 120.0) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="coldstart-devicectl-") as tmp:
            out = Path(tmp) / "out.json"
            proc = self.xcrun.run("devicectl", *args, "--json-output", str(out), "--quiet",
                                  timeout_s=timeout_s, check=False)
            try:
                data = json.loads(out.read_text())
            except (OSError, ValueError):
                data = {}
        if proc.returncode != 0 or "error" in data:
            message = _devicectl_error(data) or (proc.stdout + proc.stderr).strip() or \
                f"exit {proc.returncode}"
            raise XcrunError(f"`xcrun devicectl {' '.join(args[:3])}` failed: {message}",
                             "unlock the device, trust this Mac and check the cable or "
                             "network pairing", output=proc.stdout + proc.stderr,
                             returncode=proc.returncode)
        return data.get("result") or {}

    def devices(self) -> list[PhysicalDevice]:
        """Paired devices (``devicectl list devices``)."""
        result = self._json("list", "devices")
        found = []
        for item in result.get("devices") or []:
            hw = item.get("hardwareProperties") or {}
            props = item.get("deviceProperties") or {}
            found.append(PhysicalDevice(identifier=str(item.get("identifier")),
                                        udid=str(hw.get("udid") or item.get("identifier")),
                                        name=str(props.get("name") or hw.get("marketingName")),
                                        os_version=props.get("osVersionNumber")))
        return found

    def resolve(self, udid: str) -> PhysicalDevice:
        """The device with this UDID or CoreDevice identifier. Raises UsageError."""
        devices = self.devices()
        for device in devices:
            if udid.lower() in (device.udid.lower(), device.identifier.lower()):
                return device
        known = ", ".join(f"{d.name} ({d.udid})" for d in devices) or "none"
        raise UsageError(f"no paired device with UDID {udid}",
                         f"connected devices: {known} (see `xcrun devicectl list devices`)")

    def install(self, device: str, app_path: str) -> None:
        """``devicectl device install app --device <id> <app>``."""
        self._json("device", "install", "app", "--device", device, app_path,
                   timeout_s=600.0)

    def launch_console(self, device: str, bundle_id: str, url: str,
                       env: dict[str, str]) -> "subprocess.Popen[str]":
        """Start ``devicectl device process launch --console --terminate-existing
        --environment-variables <json> --payload-url <url> <bundle>``: it relays the app's
        stdout/stderr until the app exits (``OS_ACTIVITY_DT_MODE`` in ``env`` mirrors
        os_log to stderr)."""
        return self.xcrun.popen("devicectl", "device", "process", "launch", "--device",
                                device, "--console", "--terminate-existing",
                                "--environment-variables", json.dumps(env, sort_keys=True),
                                "--payload-url", url, bundle_id)

    def processes(self, device: str) -> list[dict[str, Any]]:
        """``devicectl device info processes``: ``[{processIdentifier, executable}]``."""
        result = self._json("device", "info", "processes", "--device", device)
        return [p for p in result.get("runningProcesses") or [] if isinstance(p, dict)]

    def terminate(self, device: str, pid: int) -> None:
        """``devicectl device process terminate --pid``; errors ignored (already gone)."""
        try:
            self._json("device", "process", "terminate", "--device", device, "--pid",
                       str(pid), "--kill")
        except XcrunError:
            pass

    def crash_logs(self, device: str) -> list[str]:
        """Names in the device's ``systemCrashLogs`` domain."""
        result = self._json("device", "info", "files", "--device", device, "--domain-type",
                            "systemCrashLogs")
        names = []
        for item in result.get("files") or []:
            name = item.get("relativePath") or item.get("name") if isinstance(item, dict) \
                else None
            if isinstance(name, str):
                names.append(name)
        return names

    def copy_crash_log(self, device: str, name: str, destination: Path) -> Path:
        """``devicectl device copy from --domain-type systemCrashLogs --source <name>``."""
        destination.mkdir(parents=True, exist_ok=True)
        self._json("device", "copy", "from", "--device", device, "--domain-type",
                   "systemCrashLogs", "--source", name, "--destination",
                   str(destination / Path(name).name))
        return destination / Path(name).name


def _devicectl_error(data: dict[str, Any]) -> str | None:
    error = data.get("error")
    if not isinstance(error, dict):
        return None
    desc = (error.get("userInfo") or {}).get("NSLocalizedDescription")
    if isinstance(desc, dict):
        return str(desc.get("string"))
    return str(desc) if desc else None


class DeviceLauncher:
    """Cold-launches an app on one physical iOS device through ``devicectl``.

    Per launch: ``process launch --console --terminate-existing`` with the scenario as
    ``--payload-url`` and the environment (``OS_ACTIVITY_DT_MODE=YES`` so the app's os_log
    lines are relayed on the console, plus :data:`POISON_ENV` with ``poison``); the relayed
    lines are read until ``done``/``error``, the console's end (the app died) or the
    timeout; after a death, new ``systemCrashLogs`` entries naming the app are copied and
    parsed (JetsamEvent reports included).
    """

    target = "ios-device"

    def __init__(self, devicectl: Devicectl, device: PhysicalDevice, app: AppBundle,
                 poison: bool = False, report_wait_s: float = DEFAULT_REPORT_WAIT_S) -> None:
        self.devicectl = devicectl
        self.phone = device
        self.device = device.udid
        self.app = app
        self.poison = poison
        self.report_wait_s = report_wait_s
        self._abort = threading.Event()
        self._proc: "subprocess.Popen[str] | None" = None

    def abort(self) -> None:
        self._abort.set()
        if self._proc is not None:
            _kill_group(self._proc)

    def close(self) -> None:
        """Nothing to undo (the environment is per launch)."""

    def _terminate_app(self) -> None:
        try:
            for proc in self.devicectl.processes(self.phone.identifier):
                exe = str(proc.get("executable") or "")
                if exe.rstrip("/").endswith(f"/{self.app.executable}") and \
                        isinstance(proc.get("processIdentifier"), int):
                    self.devicectl.terminate(self.phone.identifier, proc["processIdentifier"])
        except XcrunError:
            pass

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch. Raises InfraError when devicectl fails."""
        self._abort.clear()
        started_at = utc_now()
        t0 = time.monotonic()
        env = {"OS_ACTIVITY_DT_MODE": "YES", **(POISON_ENV if self.poison else {})}
        before = set(self.devicectl.crash_logs(self.phone.identifier))
        proc = self.devicectl.launch_console(self.phone.identifier, self.app.bundle_id,
                                             ctx.scenario.to_url(), env)
        self._proc = proc
        lines: "queue.Queue[str | None]" = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line.rstrip("\n"))
            lines.put(None)

        threading.Thread(target=pump, daemon=True, name="devicectl-console").start()
        seen: list[str] = []
        died = hung = False
        deadline = t0 + ctx.timeout_s
        try:
            while True:
                try:
                    line = lines.get(timeout=0.1)
                except queue.Empty:
                    line = ""
                if line is None:
                    died = True
                    break
                if line:
                    seen.append(line)
                summary = summarize_events(iter_events(seen, ctx.launch_id))
                if summary.done or summary.error is not None:
                    break
                if time.monotonic() >= deadline:
                    hung = True
                    break
                if self._abort.is_set():
                    raise InfraError("launch aborted", "resume with --resume")
        finally:
            _kill_group(proc)
            self._proc = None
        (ctx.artifacts_dir / "console.txt").write_text("\n".join(seen) + "\n")
        artifacts = [f"{ctx.artifacts_rel}/console.txt"]
        summary = summarize_events(iter_events(seen, ctx.launch_id))
        if not died or summary.done or summary.error is not None:
            self._terminate_app()
            died = died and not (summary.done or summary.error is not None)
        crash = None
        note = None
        if died:
            crash, note = self._collect_crash(ctx, before)
            if crash is not None:
                artifacts.append(crash.pop("artifact"))
        return record_for(ctx, target=self.target, device=self.device, summary=summary,
                          started_at=started_at, wall_ms=(time.monotonic() - t0) * 1000.0,
                          artifacts=artifacts, died=died, hung=hung, crash=crash,
                          death_note=note)

    def _collect_crash(self, ctx: LaunchContext, before: set[str]
                       ) -> tuple[dict[str, Any] | None, str | None]:
        deadline = time.monotonic() + self.report_wait_s
        name_hint = self.app.executable
        while True:
            new = [n for n in self.devicectl.crash_logs(self.phone.identifier)
                   if n not in before and (Path(n).name.startswith(name_hint)
                                           or Path(n).name.startswith("JetsamEvent"))]
            for name in sorted(new, key=lambda n: not Path(n).name.startswith(name_hint)):
                path = self.devicectl.copy_crash_log(self.phone.identifier, name,
                                                     ctx.artifacts_dir / "device-reports")
                text = path.read_text(errors="replace")
                if Path(name).name.startswith("JetsamEvent") and name_hint not in text:
                    continue
                fields = crash_fields(text, ctx, "crash" + (Path(name).suffix or ".ips"),
                                      hint="ips")
                fields["artifact"] = f"{ctx.artifacts_rel}/crash{Path(name).suffix or '.ips'}"
                shutil.rmtree(ctx.artifacts_dir / "device-reports", ignore_errors=True)
                return fields, None
            if time.monotonic() >= deadline or self._abort.is_set():
                return None, (f"the app died before done and the device had no new crash "
                              f"report for it within {self.report_wait_s:g} s")
            time.sleep(1.0)


def setup_device(xcrun: Xcrun, *, udid: str, app_path: str | None, bundle_id: str | None,
                 install: bool = True, log: Callable[[str], None] = lambda _m: None
                 ) -> tuple[Devicectl, PhysicalDevice, AppBundle]:
    """Resolve the device, check and install the app (``.ipa`` or device ``.app``).

    Raises:
        UsageError: unknown device, an app built for the simulator, no app.
        XcrunError: devicectl failed.
    """
    devicectl = Devicectl(xcrun)
    device = devicectl.resolve(udid)
    if app_path:
        app = read_app_bundle(app_path)
        if app.for_simulator and not app.for_device:
            raise UsageError(f"{app_path} is built for the simulator, not for devices",
                             "archive and export an .ipa (or build with -sdk iphoneos)")
        if app_path and install:
            log(f"installing {app.path} on {device.name}")
            devicectl.install(device.identifier, app.path)
    elif bundle_id:
        check_bundle_id(bundle_id)
        app = AppBundle(path="", bundle_id=bundle_id, executable=bundle_id.split(".")[-1],
                        platforms=(), url_schemes=())
    else:
        raise UsageError("no app given", "pass --ipa App.ipa (or --bundle-id of an installed "
                         "app)")
    return devicectl, device, app
