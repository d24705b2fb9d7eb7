"""The Android target: cold-launch the React Native app over adb and record every launch.

One :class:`AndroidLauncher` per device, on an :class:`~kit.targets.adb_transport.AdbTransport`
(adb server or adbd directly). Before a campaign, :func:`prepare_device` installs the APK
(``pm install -r -t``), checks the package and the activity that takes ``coldstart://`` links
(``cmd package resolve-activity``) and sets up heap poisoning; :func:`inspect_apk` reads the
APK's package, activities, flags and its ORT libraries (build provenance).

One launch (notes/drivers.md sections 2 and 6, notes/crash-formats.md section 3):

1. one round trip: ``am force-stop``; clear the main, system and crash buffers; read the
   device clock (crash evidence is matched by pid and by device time, never host time);
2. ``am start -W -a VIEW -d <scenario URL> -n <component>``; its text is parsed (it exits 0
   even when the activity is missing, so an ``Error:`` line is what fails);
3. a ``logcat`` follower that runs for the whole campaign (one stream, no round trip per
   launch) delivers the app's ``COLDSTART`` lines (tag ``ReactNativeJS``; lines of any other
   launch id are stale and ignored), ``ActivityManager`` process starts/deaths, ``libc``
   fatal signals and ``AndroidRuntime`` fatal exceptions; when the log is quiet for
   ``poll_s`` a ``pidof`` checks the process;
4. the launch ends at ``done`` (completed, or wrong-output when the app's own check of the
   scores failed), ``error`` (app-error), the process's death (crashed) or the timeout (hung:
   the app is force-stopped);
5. on a death: ``dumpsys activity exit-info``, ``logcat -b crash`` and DropBox
   (``data_app_native_crash``, ``SYSTEM_TOMBSTONE``, ``data_app_crash``) are read, again until
   the report for that pid is written (at most ``report_wait_s``); the best text is parsed
   and classified with :mod:`kit.crash`; all raw text is kept under ``artifacts/<id>/``. An
   exit-info entry ``reason=10 (USER REQUESTED)`` means a force-stop the kit did not make: the
   launch is an infra error, as is a reboot (the boot id changed).

A transport failure (device offline, unauthorized, rebooting, a dropped connection) raises
:class:`~kit.targets.adb_transport.TransportError`; the campaign records an infra error and
retries the slot, and the next launch on that device first reconnects with backoff.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ..campaign import LaunchContext, utc_now
from ..errors import InfraError, UsageError
from ..protocol import parse_line
from ..records import LaunchRecord, Outcome, SessionTiming
from .adb_transport import AdbTransport, TransportError, shell_join

__all__ = ["ApkInfo", "inspect_apk", "PoisonMode", "DeviceSetup", "prepare_device",
           "AndroidLauncher", "AndroidTimeouts", "parse_am_start", "parse_threadtime",
           "LogLine", "PACKAGE_RE", "APP_SCHEME", "FOLLOW_COMMAND", "REMOTE_APK_DIR"]

APP_SCHEME = "coldstart"
#: Java package names (``pm`` accepts letters, digits and ``_`` in dot-separated parts).
PACKAGE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+$")
_COMPONENT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*/[A-Za-z0-9_.$]+$")
REMOTE_APK_DIR = "/data/local/tmp"
_ANDROID_NS = "{http://schemas.android.com/apk/res/android}"
#: Buffers and tags the follower keeps (logcat filter specs; everything else is silenced).
_FOLLOW_SPECS = ("ReactNativeJS:V", "ActivityManager:I", "libc:F", "DEBUG:F",
                 "AndroidRuntime:E", "*:S")
FOLLOW_COMMAND = shell_join(["logcat", "-v", "threadtime", "-b", "main", "-b", "system",
                             "-b", "crash", *_FOLLOW_SPECS])
_CLEAR = ["logcat", "-b", "main", "-b", "system", "-b", "crash", "-c"]
_DROPBOX_TAGS = ("SYSTEM_TOMBSTONE", "data_app_native_crash", "data_app_crash")
_WRAP_OPTIONS = "LIBC_DEBUG_MALLOC_OPTIONS=fill_on_free logwrapper"


# -- the APK ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ApkInfo:
    """What the kit needs from an APK (:func:`inspect_apk`).

    Attributes:
        path: the APK file; ``sha256`` its hash.
        package: manifest ``package``.
        link_activity: the activity with a VIEW filter for ``coldstart://`` links (fully
            qualified), or ``None``.
        main_activity: the launcher activity, or ``None``.
        debuggable: ``android:debuggable`` is true.
        gwp_asan: ``android:gwpAsanMode`` is ``always`` (1).
        abis: ABIs with native libraries (``lib/<abi>/``).
        ort_libraries: ``lib/*/libonnxruntime*.so`` as
            :meth:`kit.app_inspect.NativeLibrary.to_dict` (path, ABI, size, sha256, ORT
            version found in the binary, XNNPACK evidence).
        wrap_sh_abis: ABIs that ship ``lib/<abi>/wrap.sh``.
    """

    path: str
    sha256: str
    package: str
    link_activity: str | None
    main_activity: str | None
    debuggable: bool
    gwp_asan: bool
    abis: tuple[str, ...]
    ort_libraries: tuple[dict[str, Any], ...]
    wrap_sh_abis: tuple[str, ...]

    def provenance(self) -> dict[str, Any]:
        """The build provenance kept in ``campaign.json``."""
        return {"apk": Path(self.path).name, "apk_sha256": self.sha256,
                "package": self.package, "debuggable": self.debuggable,
                "gwp_asan": self.gwp_asan, "abis": list(self.abis),
                "ort_libraries": [dict(lib) for lib in self.ort_libraries],
                "wrap_sh_abis": list(self.wrap_sh_abis)}


def _qualify(package: str, name: str) -> str:
    return package + name if name.startswith(".") else (
        name if "." in name else f"{package}.{name}")


def _activities(apk_path: Path, package: str) -> tuple[str | None, str | None]:
    """``(activity for coldstart:// VIEW links, launcher activity)`` from the manifest's
    intent filters (fully qualified), ``None`` when absent."""
    from pyaxmlparser import APK

    try:
        manifest = APK(str(apk_path)).get_android_manifest_xml()
    except Exception:  # the library raises many types on a damaged manifest
        return None, None
    link_activity = main_activity = None
    for node in manifest.iter("activity", "activity-alias") if manifest is not None else ():
        name = node.get(_ANDROID_NS + "name")
        if not name:
            continue
        for flt in node.iter("intent-filter"):
            actions = {a.get(_ANDROID_NS + "name") for a in flt.iter("action")}
            schemes = {d.get(_ANDROID_NS + "scheme") for d in flt.iter("data")}
            categories = {c.get(_ANDROID_NS + "name") for c in flt.iter("category")}
            if "android.intent.action.VIEW" in actions and APP_SCHEME in schemes \
                    and link_activity is None:
                link_activity = _qualify(package, name)
            if "android.intent.action.MAIN" in actions and \
                    "android.intent.category.LAUNCHER" in categories and main_activity is None:
                main_activity = _qualify(package, name)
    return link_activity, main_activity


def inspect_apk(path: str | Path) -> ApkInfo:
    """Read an APK: package, poisoning switches and ORT libraries through
    :func:`kit.app_inspect.inspect_app` (which also finds each library's ORT version and
    XNNPACK evidence), plus the activities the launch needs.

    Raises:
        UsageError: the file is missing or is not an APK with a valid package name.
        DataError: the zip is corrupt.
    """
    from ..app_inspect import inspect_app
    from ..modelset import sha256_file

    apk_path = Path(path)
    if not apk_path.is_file():
        raise UsageError(f"APK {apk_path} not found", "build the app (see docs/android.md) "
                         "or pass the path of an existing .apk")
    inspection = inspect_app(apk_path)
    package = inspection.app_id or ""
    if inspection.kind != "apk" or not PACKAGE_RE.match(package):
        why = "; ".join(inspection.notes) or f"package {package!r} is not a package name"
        raise UsageError(f"{apk_path} is not a usable APK ({why})",
                         "pass the .apk that Gradle built")
    link_activity, main_activity = _activities(apk_path, package)
    poison = inspection.poison
    return ApkInfo(path=str(apk_path), sha256=sha256_file(apk_path), package=package,
                   link_activity=link_activity, main_activity=main_activity,
                   debuggable=bool(poison.get("debuggable")),
                   gwp_asan=poison.get("gwp_asan_mode") == "always",
                   abis=tuple(sorted({lib.abi for lib in inspection.libraries if lib.abi})),
                   ort_libraries=tuple(lib.to_dict() for lib in inspection.libraries),
                   wrap_sh_abis=tuple(poison.get("wrap_sh") or ()))


# -- device preparation ----------------------------------------------------------------

class PoisonMode(str, enum.Enum):
    """Heap poisoning on Android (BACKGROUND.md; notes/drivers.md section 2)."""

    GWP_ASAN = "gwp-asan"  #: ``android:gwpAsanMode="always"`` in the APK (API 30+)
    MALLOC_DEBUG = "malloc-debug"  #: bionic malloc debug ``fill_on_free``

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class DeviceSetup:
    """A device ready for a campaign.

    Attributes:
        serial, transport: the device and ``server`` / ``direct``.
        model, abi, sdk, fingerprint: from ``getprop``.
        package, component: the app and its deep-link activity (``pkg/.Activity``).
        boot_id: ``/proc/sys/kernel/random/boot_id`` (a change means a reboot).
        poison: the mode, and ``poison_method`` how it is applied (``manifest``,
            ``wrap.sh``, ``wrap-property``), or ``None``.
    """

    serial: str
    transport: str
    model: str | None
    abi: str | None
    sdk: int | None
    fingerprint: str | None
    package: str
    component: str
    boot_id: str
    poison: str | None = None
    poison_method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The device entry of ``campaign.json``."""
        return {"id": self.serial, "kind": "android", **dataclasses.asdict(self)}


def _getprops(text: str) -> dict[str, str]:
    return dict(re.findall(r"^\[([^\]]+)\]: \[(.*)\]\s*$", text, re.M))


def _check_state(transport: AdbTransport) -> None:
    state = transport.state()
    if state == "device":
        return
    if state in ("absent", "no-server"):
        raise UsageError(f"no device {transport.serial}" + (
            " (no adb server answers)" if state == "no-server" else ""),
            "run `coldstart devices` and pass one of its serials with --serial")
    if state == "unauthorized":
        raise UsageError(f"device {transport.serial} is unauthorized",
                         "accept the USB debugging prompt on the device, then run again")
    raise InfraError(f"device {transport.serial} is {state}",
                     "reconnect it (`adb reconnect`) and run again")


def _wrap_property(package: str) -> str:
    return f"wrap.{package}"


def prepare_device(transport: AdbTransport, *, package: str, apk: ApkInfo | None,
                   poison: PoisonMode | None = None, call_timeout_s: float = 30.0,
                   install_timeout_s: float = 300.0,
                   log: Callable[[str], None] = lambda _m: None) -> DeviceSetup:
    """Check a device, install the APK (when given) and set up poisoning.

    Args:
        package: the app's package (from the APK, or ``--package``).
        apk: the APK to install with ``pm install -r -t``, or ``None`` to use what is
            installed.

    Raises:
        UsageError: no such device, unauthorized, install refused, package not installed,
            no activity for ``coldstart://`` links, poisoning unsupported (each one line).
        InfraError: the device is offline or the transport fails.
    """
    if not PACKAGE_RE.match(package):
        raise UsageError(f"package {package!r} is not a valid Android package name",
                         "e.g. org.coldstart.app")
    _check_state(transport)
    props = _getprops(transport.shell("getprop", call_timeout_s).stdout)
    sdk_text = props.get("ro.build.version.sdk", "")
    sdk = int(sdk_text) if sdk_text.isdigit() else None
    abi = props.get("ro.product.cpu.abi")
    method = None
    if poison is not None:  # before installing: an unsupported mode changes nothing
        method = _setup_poison(transport, poison, package, apk, sdk, abi, call_timeout_s)
    if apk is not None:
        remote = f"{REMOTE_APK_DIR}/coldstart-{apk.sha256[:16]}.apk"
        log(f"{transport.serial}: installing {Path(apk.path).name}")
        transport.push(Path(apk.path), remote, install_timeout_s)
        result = transport.shell(shell_join(["pm", "install", "-r", "-t", remote]),
                                 install_timeout_s)
        transport.shell(shell_join(["rm", "-f", remote]), call_timeout_s)
        if "Success" not in result.stdout:
            reason = re.search(r"Failure \[([^\]]+)\]", result.output)
            raise UsageError(f"{transport.serial} refused the APK: "
                             f"{reason.group(1) if reason else result.output.strip()[-200:]}",
                             "check the APK's ABI and minSdk against `coldstart devices`, "
                             "or uninstall an app signed with another key")
    listed = transport.shell(shell_join(["pm", "list", "packages", package]), call_timeout_s)
    if f"package:{package}" not in listed.stdout.split():
        raise UsageError(f"package {package} is not installed on {transport.serial}",
                         "pass --apk to install it, or check --package")
    resolved = transport.shell(shell_join(["cmd", "package", "resolve-activity", "--brief",
                                           "-a", "android.intent.action.VIEW", "-d",
                                           f"{APP_SCHEME}://run", package]), call_timeout_s)
    component = next((ln.strip() for ln in reversed(resolved.stdout.splitlines())
                      if _COMPONENT_RE.match(ln.strip())), None)
    if component is None or not component.startswith(package + "/"):
        raise UsageError(f"activity not found: {package} has no activity for "
                         f"{APP_SCHEME}:// links on {transport.serial}",
                         "install the coldstart app (its MainActivity has the intent filter)")
    boot_id = transport.shell(shell_join(["cat", "/proc/sys/kernel/random/boot_id"]),
                              call_timeout_s).stdout.strip()
    return DeviceSetup(serial=transport.serial, transport=transport.kind,
                       model=props.get("ro.product.model"), abi=abi, sdk=sdk,
                       fingerprint=props.get("ro.build.fingerprint"), package=package,
                       component=component, boot_id=boot_id,
                       poison=None if poison is None else poison.value, poison_method=method)


def _setup_poison(transport: AdbTransport, poison: PoisonMode, package: str,
                  apk: ApkInfo | None, sdk: int | None, abi: str | None,
                  call_timeout_s: float) -> str:
    """Check that ``poison`` works for this device and app; apply it. Returns the method.

    Raises:
        UsageError: the mode is not supported here (with what to do instead).
    """
    if poison is PoisonMode.GWP_ASAN:
        if sdk is not None and sdk < 30:
            raise UsageError(f"--poison gwp-asan needs Android 11 (API 30) or later; "
                             f"{transport.serial} has API {sdk}", "use --poison malloc-debug")
        if apk is None:
            raise UsageError("--poison gwp-asan needs --apk (the kit checks its manifest)",
                             "pass the APK built with gwpAsanMode=\"always\"")
        if not apk.gwp_asan:
            raise UsageError(f"{Path(apk.path).name} does not set "
                             "android:gwpAsanMode=\"always\"", "build the app's gwp-asan "
                             "variant (docs/android.md), or use --poison malloc-debug")
        return "manifest"
    # malloc debug: wrap.sh in a debuggable APK, else the wrap property (root images)
    if apk is not None and apk.debuggable and abi in apk.wrap_sh_abis:
        if sdk is not None and sdk < 27:
            raise UsageError(f"wrap.sh needs Android 8.1 (API 27) or later; "
                             f"{transport.serial} has API {sdk}", "use a newer device")
        return "wrap.sh"
    uid = transport.shell(shell_join(["id", "-u"]), call_timeout_s).stdout.strip()
    if uid != "0":
        why = ("the APK has no lib/{}/wrap.sh".format(abi) if apk is not None and
               apk.debuggable else "the APK is not debuggable with a wrap.sh" if apk is not None
               else "no --apk to check for wrap.sh")
        raise UsageError(f"--poison malloc-debug is not available on {transport.serial}: "
                         f"{why}, and the device shell is not root",
                         "install a debuggable build with wrap.sh (docs/android.md), or run "
                         "`adb root` on an emulator / userdebug image")
    prop = _wrap_property(package)
    set_result = transport.shell(shell_join(["setprop", prop, _WRAP_OPTIONS]), call_timeout_s)
    check = transport.shell(shell_join(["getprop", prop]), call_timeout_s).stdout.strip()
    if set_result.exit_code != 0 or check != _WRAP_OPTIONS:
        raise UsageError(f"could not set {prop} on {transport.serial}: "
                         f"{set_result.output.strip()[-200:]}",
                         "use a debuggable build with wrap.sh instead")
    return "wrap-property"


# -- text the device prints ------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class LogLine:
    """One ``logcat -v threadtime`` line: ``MM-DD HH:MM:SS.mmm PID TID L TAG: msg``."""

    time: str
    pid: int
    tid: int
    level: str
    tag: str
    msg: str


_THREADTIME = re.compile(r"^(?P<time>\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+)\s+(?P<pid>\d+)\s+"
                         r"(?P<tid>\d+)\s+(?P<level>[VDIWEFS])\s+(?P<tag>.*?)\s*: (?P<msg>.*)$")


def parse_threadtime(line: str) -> LogLine | None:
    """Split a threadtime line (liblog's default format); ``None`` for other lines
    (``--------- beginning of crash`` and the like). Never raises."""
    m = _THREADTIME.match(line)
    if m is None:
        return None
    return LogLine(m.group("time"), int(m.group("pid")), int(m.group("tid")),
                   m.group("level"), m.group("tag"), m.group("msg"))


def parse_am_start(text: str) -> dict[str, str]:
    """``am start -W`` output as ``Key: value`` pairs (``Status``, ``LaunchState``,
    ``Activity``, ``TotalTime``, ``WaitTime``, ``Error``, ``Warning``...; notes/drivers.md
    section 2). Older releases print ``ThisTime`` and no ``LaunchState``; every key is kept
    as printed. Never raises."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            out.setdefault(key.strip(), value.strip())
    return out


def _dropbox_entries(text: str) -> list[tuple[str, str, str]]:
    """``dumpsys dropbox --print`` split into ``(time, tag, entry text)``; the entry text
    keeps its ``=`` line and header so :func:`kit.crash.parse_text` reads it as DropBox."""
    entries: list[tuple[str, str, str]] = []
    lines = text.splitlines()
    starts = [i for i in range(len(lines) - 1) if re.match(r"^={20,}\s*$", lines[i]) and
              re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \(", lines[i + 1])]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        head = lines[start + 1].split(" ")
        entries.append((f"{head[0]} {head[1]}", head[2], "\n".join(lines[start:end]) + "\n"))
    return entries


# -- the launcher ----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class AndroidTimeouts:
    """Durations of an Android campaign, in seconds.

    Attributes:
        call_s: any one adb call (``am start`` gets the launch timeout on top).
        poll_s: quiet time after which ``pidof`` checks the process.
        report_wait_s: how long to wait after a death for its report (DropBox entry,
            exit-info) to be written.
        reconnect_s: how long to try to get a dropped device back before the launch fails.
    """

    call_s: float = 30.0
    poll_s: float = 1.0
    report_wait_s: float = 8.0
    reconnect_s: float = 60.0


_START_PROC = re.compile(r"^Start proc (\d+):([^/\s]+)")
_DIED = re.compile(r"^Process (\S+) \(pid (\d+)\) has died")
_FATAL_SIGNAL = re.compile(r"^Fatal signal \d+ .* pid (\d+) \(")
_JAVA_PROCESS = re.compile(r"^Process: (\S+), PID: (\d+)")


class AndroidLauncher:
    """Cold-launches the app on one device (a :class:`~kit.campaign.Launcher`).

    Args:
        transport: the device's transport.
        setup: from :func:`prepare_device`.
        timeouts: see :class:`AndroidTimeouts`.
    """

    target = "android"

    def __init__(self, transport: AdbTransport, setup: DeviceSetup,
                 timeouts: AndroidTimeouts | None = None) -> None:
        self.transport = transport
        self.setup = setup
        self.device = transport.serial
        self.timeouts = timeouts or AndroidTimeouts()
        self.package = setup.package
        self._boot_id = setup.boot_id
        self._follower: Any = None
        self._broken = False
        self._abort = threading.Event()
        self.reboots = 0

    # -- lifecycle --------------------------------------------------------------------
    def abort(self) -> None:
        """Stop the launch in flight (Ctrl-C): its loop ends at the next line or poll."""
        self._abort.set()

    def close(self) -> None:
        """Stop the log follower."""
        if self._follower is not None:
            self._follower.close()
            self._follower = None
        self.transport.close()

    def _ready(self) -> None:
        """Reconnect after a failure, notice a reboot, (re)start the log follower."""
        if self._broken:
            if self._follower is not None:
                self._follower.close()
                self._follower = None
            self.transport.reconnect(self.timeouts.reconnect_s)
            self._broken = False
            boot_id = self.transport.shell(shell_join(["cat", "/proc/sys/kernel/random/boot_id"]),
                                           self.timeouts.call_s).stdout.strip()
            if boot_id and boot_id != self._boot_id:
                self.reboots += 1
                self._boot_id = boot_id
                if self.setup.poison_method == "wrap-property":
                    self.transport.shell(shell_join(["setprop", _wrap_property(self.package),
                                                     _WRAP_OPTIONS]), self.timeouts.call_s)
        if self._follower is None or not self._follower.alive:
            if self._follower is not None:
                self._follower.close()
            self._follower = self.transport.stream(FOLLOW_COMMAND, self.timeouts.call_s)

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch; see the module doc. Never raises for what the app does.

        Raises:
            InfraError: the device or transport failed (the next call reconnects), or the
                launch was aborted.
        """
        if self._abort.is_set():
            raise InfraError("aborted", "resume with --resume")
        round_trips_before = self.transport.round_trips
        try:
            self._ready()
            return self._launch(ctx, round_trips_before)
        except TransportError:
            self._broken = True
            raise

    # -- one launch -------------------------------------------------------------------
    def _launch(self, ctx: LaunchContext, round_trips_before: int) -> LaunchRecord:
        t = self.timeouts
        started_at = utc_now()
        t0 = time.monotonic()
        launch_id = ctx.launch_id
        prep = self.transport.shell(shell_join(["am", "force-stop", self.package], _CLEAR,
                                               ["date", "+%Y-%m-%d %H:%M:%S"]), t.call_s)
        device_start = prep.stdout.strip().splitlines()[-1:] or [""]
        device_start_text = device_start[0].strip()
        follower = self._follower
        follower.drain()  # everything before the clear belongs to earlier launches
        seen: list[str] = []
        url = ctx.scenario.to_url()
        am = self.transport.shell(shell_join(
            ["am", "start", "-W", "-a", "android.intent.action.VIEW", "-d", url, "-n",
             self.setup.component]), ctx.timeout_s + t.call_s)
        am_fields = parse_am_start(am.stdout)
        (ctx.artifacts_dir / "am-start.txt").write_text(am.output)
        artifacts = [f"{ctx.artifacts_rel}/am-start.txt"]
        if "Error" in am_fields:
            raise InfraError(f"{self.device}: am start failed: {am_fields['Error']}",
                             "check that the app is still installed")
        deadline = t0 + ctx.timeout_s
        events: list[Any] = []
        pid: int | None = None
        death: str | None = None
        stale = 0
        outcome: Outcome | None = None
        last_activity = time.monotonic()
        while outcome is None and death is None:
            if self._abort.is_set():
                self._force_stop()
                raise InfraError("aborted", "resume with --resume")
            now = time.monotonic()
            if now >= deadline:
                outcome = Outcome.HUNG
                break
            line = follower.get(min(t.poll_s, deadline - now, 0.25))
            if line is None:
                if not follower.alive:
                    raise TransportError(f"{self.device}: the log stream ended "
                                         f"({follower.end_reason})", state="offline")
                if time.monotonic() - last_activity >= t.poll_s:
                    last_activity = time.monotonic()
                    running = self._pidof()
                    if running is None:
                        death = "pidof: the process is gone"
                    elif pid is None:
                        pid = running
                    elif running != pid:
                        death = f"pidof: pid {pid} is gone (now {running})"
                continue
            seen.append(line)
            last_activity = time.monotonic()
            entry = parse_threadtime(line)
            if entry is None:
                continue
            if entry.tag == "ReactNativeJS":
                parsed = parse_line(entry.msg)
                if parsed.event is None:
                    continue
                if parsed.event.id != launch_id:
                    stale += 1
                    continue
                pid = entry.pid
                events.append(parsed.event)
                if parsed.event.phase == "done":
                    outcome = Outcome.COMPLETED
                elif parsed.event.phase == "error":
                    outcome = Outcome.APP_ERROR
            elif entry.tag == "ActivityManager":
                started = _START_PROC.match(entry.msg)
                died = _DIED.match(entry.msg)
                if started and started.group(2) == self.package:
                    pid = int(started.group(1))
                elif died and died.group(1) == self.package and (
                        pid is None or int(died.group(2)) == pid):
                    pid = int(died.group(2))
                    death = entry.msg
            elif entry.tag == "libc":
                fatal = _FATAL_SIGNAL.match(entry.msg)
                if fatal and pid is not None and int(fatal.group(1)) == pid:
                    death = entry.msg
            elif entry.tag == "AndroidRuntime":
                java = _JAVA_PROCESS.match(entry.msg)
                if java and java.group(1) == self.package and (
                        pid is None or int(java.group(2)) == pid):
                    pid = int(java.group(2))
                    death = entry.msg
        fields: dict[str, Any] = {}
        for event in events:
            fields.update(event.fields)
        phases = {e.phase: e.t_ms for e in events if e.phase != "error"}
        last_phase = next((e.phase for e in reversed(events) if e.phase != "error"), None)
        scores = [float(s) for s in fields.get("scores") or [] if isinstance(s, (int, float))]
        record: dict[str, Any] = dict(
            launch_id=launch_id, index=ctx.index, attempt=ctx.attempt, label=ctx.label,
            target=self.target, device=self.device, scenario=url, last_phase=last_phase,
            phases=phases, started_at=started_at,
            sessions=[SessionTiming(**s) for s in fields.get("sessions") or []
                      if isinstance(s, dict)],
            ort_version=fields.get("ort_version"), eps=list(fields.get("eps") or []),
            xnnpack_nodes=fields.get("xnnpack_nodes") if isinstance(
                fields.get("xnnpack_nodes"), dict) else None, scores=scores,
            error=next((str(e.fields.get("message")) for e in events if e.phase == "error"),
                       None))
        android: dict[str, Any] = {
            "pid": pid, "launch_state": am_fields.get("LaunchState"),
            "am_status": am_fields.get("Status"),
            "total_time_ms": _int_or_none(am_fields.get("TotalTime")),
            "wait_time_ms": _int_or_none(am_fields.get("WaitTime")),
            "device_time": device_start_text, "stale_lines": stale}
        if outcome is Outcome.COMPLETED and ctx.scenario.infer and fields.get("ok") is False:
            outcome = Outcome.WRONG_OUTPUT
        if outcome is Outcome.HUNG:
            self._force_stop()
            record["error"] = f"no done within {ctx.timeout_s:g} s; force-stopped"
        elif death is not None:
            outcome = Outcome.CRASHED
            record.update(self._collect_death(ctx, pid, device_start_text, death, artifacts,
                                              android))
        assert outcome is not None
        (ctx.artifacts_dir / "logcat.txt").write_text("\n".join(seen) + ("\n" if seen else ""))
        artifacts.append(f"{ctx.artifacts_rel}/logcat.txt")
        android["round_trips"] = self.transport.round_trips - round_trips_before
        record.update(outcome=outcome, wall_ms=(time.monotonic() - t0) * 1000.0,
                      artifacts=artifacts, extra={"android": android})
        return LaunchRecord(**record)

    def _pidof(self) -> int | None:
        result = self.transport.shell(shell_join(["pidof", self.package]), self.timeouts.call_s)
        first = result.stdout.split()[:1]
        return int(first[0]) if result.exit_code == 0 and first and first[0].isdigit() else None

    def _force_stop(self) -> None:
        try:
            self.transport.shell(shell_join(["am", "force-stop", self.package]),
                                 self.timeouts.call_s)
        except TransportError:
            self._broken = True

    def _collect_death(self, ctx: LaunchContext, pid: int | None, device_start: str,
                       trigger: str, artifacts: list[str], android: dict[str, Any]
                       ) -> dict[str, Any]:
        """Read exit-info, the crash buffer and DropBox until this pid's report is written;
        parse, classify and keep the raw text.

        Raises:
            TransportError: the device rebooted, or a force-stop the kit did not make
                killed the app (both are infra errors).
        """
        from .. import crash as crashlib

        mark = f"==coldstart-{uuid.uuid4().hex[:12]}=="
        parts: list[list[str]] = [["dumpsys", "activity", "exit-info", self.package],
                                  ["logcat", "-d", "-v", "threadtime", "-b", "crash"]]
        parts += [["dumpsys", "dropbox", "--print", tag] for tag in _DROPBOX_TAGS]
        parts.append(["cat", "/proc/sys/kernel/random/boot_id"])
        command = shell_join(*[p for part in parts for p in (part, ["echo", mark])][:-1])
        give_up = time.monotonic() + self.timeouts.report_wait_s
        while True:
            out = self.transport.shell(command, self.timeouts.call_s).stdout
            sections = (out.split(mark + "\n") + [""] * 6)[:6]
            exit_text, crash_text = sections[0], sections[1]
            boot_id = sections[5].strip()
            if boot_id and boot_id != self._boot_id:
                self._boot_id = boot_id
                self.reboots += 1
                raise TransportError(f"{self.device} rebooted during the launch",
                                     state="rebooted")
            # by pid; without one (the app died before logging anything), by device time,
            # leaving out force-stops: the kit's own one at the start of this launch can
            # fall in the same second as the clock reading
            exits = [e for e in crashlib.parse_exit_info(exit_text)
                     if (e.process or "").split(":")[0] == self.package and
                     ((pid is not None and e.pid == pid) or
                      (pid is None and (e.timestamp or "") >= device_start and
                       e.reason != 10))]
            exit_entry = exits[0] if exits else None
            if pid is None and exit_entry is not None:
                pid = exit_entry.pid
            dropbox: list[tuple[str, str, str]] = []
            for text in sections[2:5]:
                for when, tag, entry in _dropbox_entries(text):
                    if when >= device_start[:19] and pid is not None and (
                            f"pid: {pid}," in entry or f"PID: {pid}\n" in entry):
                        dropbox.append((when, tag, entry))
            reason = exit_entry.reason if exit_entry is not None else None
            native = reason == 5 or "Fatal signal" in trigger or "Fatal signal" in crash_text
            java = reason == 4 or "FATAL EXCEPTION" in crash_text
            have_report = (any(tag != "data_app_crash" for _, tag, _ in dropbox) if native
                           else any(tag == "data_app_crash" for _, tag, _ in dropbox) or
                           "FATAL EXCEPTION" in crash_text if java else True)
            if (exit_entry is not None and have_report) or time.monotonic() >= give_up:
                break
            time.sleep(0.2)
        if exit_entry is not None and reason == 10:
            raise TransportError(f"{self.device}: the app was force-stopped by someone else "
                                 f"({exit_entry.description or 'USER REQUESTED'})",
                                 "keep other tools off the device during a campaign",
                                 state="stopped")
        rel = ctx.artifacts_rel
        (ctx.artifacts_dir / "exit-info.txt").write_text(exit_text)
        (ctx.artifacts_dir / "logcat-crash.txt").write_text(crash_text)
        artifacts += [f"{rel}/exit-info.txt", f"{rel}/logcat-crash.txt"]
        order = {"SYSTEM_TOMBSTONE": 0, "data_app_native_crash": 1, "data_app_crash": 2}
        dropbox.sort(key=lambda item: order.get(item[1], 9))
        kept: list[tuple[str, str]] = []
        for n, (_when, tag, entry) in enumerate(dropbox):
            name = f"dropbox-{n}-{tag}.txt"
            (ctx.artifacts_dir / name).write_text(entry)
            artifacts.append(f"{rel}/{name}")
            kept.append((entry, f"{rel}/{name}"))
        if kept:
            text, source = kept[0]
        elif "Fatal signal" in crash_text or "FATAL EXCEPTION" in crash_text:
            text, source = crash_text, f"{rel}/logcat-crash.txt"
        else:
            text, source = exit_text, f"{rel}/exit-info.txt"
        parsed = dataclasses.replace(crashlib.parse_text(text), raw_artifact=source)
        verdict = crashlib.classify(parsed)
        android["death"] = trigger
        android["classification"] = verdict.to_dict()
        if exit_entry is not None:
            android["exit_info"] = {"pid": exit_entry.pid, "timestamp": exit_entry.timestamp,
                                    "reason": exit_entry.reason,
                                    "reason_text": exit_entry.reason_text,
                                    "status": exit_entry.status,
                                    "description": exit_entry.description}
        else:
            android["exit_info"] = None
        signal = parsed.signal
        if signal is None and exit_entry is not None and reason in (2, 5):
            signal = exit_entry.status
        return {"crash": parsed.to_dict(), "crash_class": verdict.crash_class.value,
                "signature": verdict.signature, "signal": signal,
                "signal_name": parsed.signal_name,
                "exit_code": exit_entry.status if exit_entry is not None and reason == 1
                else None}


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
