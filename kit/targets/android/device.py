"""An Android device and the app on it: the APK (:func:`inspect_apk`), a device made ready
for a campaign (:func:`prepare_device`: install, activity check, heap poisoning) and the
device's readiness (:func:`wait_until_ready`: booted, system services up).

Readiness (issue #16): after a reboot or a reconnect, adbd answers long before the system
does: ``am`` then fails with ``cmd: Can't find service: activity`` (exit status 20). A device
is ready when ``sys.boot_completed`` is ``1`` and ``service check`` finds the ``activity`` and
``package`` services (AOSP ``frameworks/native/cmds/service``: ``Service NAME: found`` /
``not found``); the boot id (``/proc/sys/kernel/random/boot_id``, new at every boot) tells a
reboot from a reconnect.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import time
from pathlib import Path
from typing import Any, Callable

from ...errors import InfraError, UsageError
from .transport import AdbTransport, shell_join, state_error

__all__ = ["ApkInfo", "inspect_apk", "PoisonMode", "DeviceSetup", "prepare_device",
           "Readiness", "read_readiness", "wait_until_ready", "DeviceNotReady",
           "PACKAGE_RE", "APP_SCHEME", "REMOTE_APK_DIR", "BOOT_ID_PATH", "READY_COMMAND",
           "REQUIRED_SERVICES", "WRAP_OPTIONS", "wrap_property", "state_error", "install_apk",
           "UPTIME_PATH"]

APP_SCHEME = "coldstart"
#: Java package names (``pm`` accepts letters, digits and ``_`` in dot-separated parts).
PACKAGE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+$")
_COMPONENT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*/[A-Za-z0-9_.$]+$")
REMOTE_APK_DIR = "/data/local/tmp"
_ANDROID_NS = "{http://schemas.android.com/apk/res/android}"
#: bionic malloc debug through the ``wrap.<package>`` property (docs/formats.md section D2)
WRAP_OPTIONS = "LIBC_DEBUG_MALLOC_OPTIONS=fill_on_free logwrapper"
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"
#: seconds since boot, then idle seconds (proc(5)); the clock a ``date`` change leaves alone
UPTIME_PATH = "/proc/uptime"
#: the system services a launch needs: ``am`` (activity) and ``pm`` / ``cmd package``
REQUIRED_SERVICES = ("activity", "package")
#: one round trip: ``sys.boot_completed``, each service's state, the boot id
READY_COMMAND = shell_join(["getprop", "sys.boot_completed"],
                           *(["service", "check", name] for name in REQUIRED_SERVICES),
                           ["cat", BOOT_ID_PATH])
_SERVICE_LINE = re.compile(r"^Service (\S+): (found|not found)\s*$", re.M)
_UUID_LINE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\s*$",
                        re.M | re.I)


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
    from ...app_inspect import inspect_app
    from ...modelset import sha256_file

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


# -- readiness -------------------------------------------------------------------------

class DeviceNotReady(InfraError):
    """The device answers but its system is not up (still booting, system server
    restarting). ``evidence`` holds the last readiness output."""

    def __init__(self, message: str, hint: str | None = None, evidence: str | None = None
                 ) -> None:
        super().__init__(message, hint)
        self.evidence = evidence


@dataclasses.dataclass(frozen=True)
class Readiness:
    """One look at the device's system (:func:`read_readiness`).

    Attributes:
        boot_completed: ``sys.boot_completed`` is ``1``.
        missing: the :data:`REQUIRED_SERVICES` that ``service check`` did not find.
        boot_id: the boot id, ``""`` when unreadable.
    """

    boot_completed: bool
    missing: tuple[str, ...]
    boot_id: str

    @property
    def ready(self) -> bool:
        """Booted, every required service up."""
        return self.boot_completed and not self.missing

    def describe(self) -> str:
        """What is not up, e.g. ``sys.boot_completed is not 1; no activity service``."""
        parts = [] if self.boot_completed else ["sys.boot_completed is not 1"]
        parts += [f"no {name} service" for name in self.missing]
        return "; ".join(parts) or "ready"


def read_readiness(text: str) -> Readiness:
    """Read the output of :data:`READY_COMMAND`. A service counts as missing only when
    ``service check`` says ``not found`` (a device without the ``service`` tool is judged by
    ``sys.boot_completed`` alone). Never raises."""
    lines = text.splitlines()
    states = dict(_SERVICE_LINE.findall(text))
    boot = _UUID_LINE.search(text)
    return Readiness(boot_completed=bool(lines) and lines[0].strip() == "1",
                     missing=tuple(n for n in REQUIRED_SERVICES if states.get(n) == "not found"),
                     boot_id=boot.group(0).strip() if boot else "")


def wait_until_ready(transport: Any, what: str, timeout_s: float, call_timeout_s: float = 30.0,
                     should_stop: Callable[[], bool] = lambda: False,
                     first_delay_s: float = 0.25, max_delay_s: float = 2.0
                     ) -> tuple[Readiness, float]:
    """Poll :data:`READY_COMMAND` (one round trip each; 0.25, 0.5, 1, 2, 2... s apart) until
    the device is ready, for at most ``timeout_s``.

    Args:
        transport: anything with :meth:`AdbTransport.shell`.
        what: the device, for messages.

    Returns:
        The readiness seen and the seconds waited (0 when ready at the first look).

    Raises:
        DeviceNotReady: not ready within ``timeout_s`` (or ``should_stop()``).
        TransportError: the device stopped answering.
    """
    started = time.monotonic()
    delay = first_delay_s
    first = True
    while True:
        result = transport.shell(READY_COMMAND, call_timeout_s)
        seen = read_readiness(result.output)
        waited = time.monotonic() - started
        if seen.ready:
            return seen, 0.0 if first else waited
        first = False
        if waited >= timeout_s or should_stop():
            raise DeviceNotReady(f"{what} is not ready after {waited:.1f} s: {seen.describe()}",
                                 "wait for the device to finish booting (or raise "
                                 "--reconnect-timeout); the launch is retried",
                                 evidence=result.output[-4000:])
        time.sleep(min(delay, max(0.0, timeout_s - waited)))
        delay = min(delay * 2, max_delay_s)


# -- device preparation ----------------------------------------------------------------

class PoisonMode(str, enum.Enum):
    """Heap poisoning on Android (docs/design.md; docs/formats.md section D2)."""

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
        boot_id: the boot id when prepared (:data:`BOOT_ID_PATH`; a change means a reboot).
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
    if state != "device":
        raise state_error(transport.serial, state)


#: What to do about a ``pm install`` failure, by its code (``PackageManager.INSTALL_*``,
#: printed by ``PackageManagerShellCommand`` as ``Failure [CODE: message]``).
_INSTALL_HINTS = (
    ("INSUFFICIENT_STORAGE", "free space on the device (`adb shell df /data`; uninstall "
                             "apps or delete files), then run again"),
    ("UPDATE_INCOMPATIBLE", "an app of this package signed with another key is installed: "
                            "`adb uninstall {package}`, then run again"),
    ("VERSION_DOWNGRADE", "a newer build of {package} is installed: `adb uninstall "
                          "{package}`, then run again"),
    ("NO_MATCHING_ABIS", "the APK has no native libraries for the device's ABI (see "
                         "`coldstart devices`): build it for that ABI"),
    ("OLDER_SDK", "the device's Android is older than the APK's minSdk (see `coldstart "
                  "devices`)"),
)


def _install_hint(failure: str, package: str) -> str:
    for code, hint in _INSTALL_HINTS:
        if code in failure:
            return hint.format(package=package)
    return ("check the APK's ABI and minSdk against `coldstart devices`, or uninstall an "
            "app signed with another key")


def wrap_property(package: str) -> str:
    """The property zygote reads for ``package``'s wrapper (``wrap.<package>``)."""
    return f"wrap.{package}"


#: install failures that an uninstall of the installed build clears (a newer version, or one
#: signed with another key)
_UNINSTALL_CLEARS = ("VERSION_DOWNGRADE", "UPDATE_INCOMPATIBLE")


def install_apk(transport: AdbTransport, apk: ApkInfo, package: str, *,
                call_timeout_s: float = 30.0, install_timeout_s: float = 300.0,
                downgrade: bool = False) -> None:
    """Push ``apk`` and ``pm install -r -t`` it (``-d`` with ``downgrade``: the campaign's
    build goes back over a newer one; where the device refuses that, or the installed
    build is signed with another key, it is uninstalled first and installed again).

    Raises:
        UsageError: the device refused the APK (``Failure [CODE...]``), with what to do.
        TransportError: the device stopped answering.
    """
    remote = f"{REMOTE_APK_DIR}/coldstart-{apk.sha256[:16]}.apk"
    transport.push(Path(apk.path), remote, install_timeout_s)
    flags = ["-r", "-t"] + (["-d"] if downgrade else [])
    try:
        result = transport.shell(shell_join(["pm", "install", *flags, remote]),
                                 install_timeout_s)
        if downgrade and "Success" not in result.stdout and \
                any(code in result.output for code in _UNINSTALL_CLEARS):
            transport.shell(shell_join(["pm", "uninstall", package]), install_timeout_s)
            result = transport.shell(shell_join(["pm", "install", "-r", "-t", remote]),
                                     install_timeout_s)
    finally:
        transport.shell(shell_join(["rm", "-f", remote]), call_timeout_s)
    if "Success" not in result.stdout:
        reason = re.search(r"Failure \[([^\]]+)\]", result.output)
        text = reason.group(1) if reason else result.output.strip()[-200:]
        raise UsageError(f"{transport.serial} refused the APK: {text}",
                         _install_hint(text, package))


def prepare_device(transport: AdbTransport, *, package: str, apk: ApkInfo | None,
                   poison: PoisonMode | None = None, call_timeout_s: float = 30.0,
                   install_timeout_s: float = 300.0, ready_timeout_s: float = 60.0,
                   log: Callable[[str], None] = lambda _m: None) -> DeviceSetup:
    """Check a device, wait until it is ready (:func:`wait_until_ready`), install the APK
    (when given) and set up poisoning.

    Args:
        package: the app's package (from the APK, or ``--package``).
        apk: the APK to install with ``pm install -r -t``, or ``None`` to use what is
            installed.
        ready_timeout_s: how long a device that is still booting may take.

    Raises:
        UsageError: no such device, unauthorized, install refused, package not installed,
            no activity for ``coldstart://`` links, poisoning unsupported (each one line).
        InfraError: the device is offline, not ready in time, or the transport fails.
    """
    if not PACKAGE_RE.match(package):
        raise UsageError(f"package {package!r} is not a valid Android package name",
                         "e.g. org.coldstart.app")
    _check_state(transport)
    readiness, waited = wait_until_ready(transport, transport.serial, ready_timeout_s,
                                         call_timeout_s)
    if waited > 0:
        log(f"{transport.serial}: ready after {waited:.1f} s")
    props = _getprops(transport.shell("getprop", call_timeout_s).stdout)
    sdk_text = props.get("ro.build.version.sdk", "")
    sdk = int(sdk_text) if sdk_text.isdigit() else None
    abi = props.get("ro.product.cpu.abi")
    method = None
    if poison is not None:  # before installing: an unsupported mode changes nothing
        method = _setup_poison(transport, poison, package, apk, sdk, abi, call_timeout_s)
    if apk is not None:
        log(f"{transport.serial}: installing {Path(apk.path).name}")
        install_apk(transport, apk, package, call_timeout_s=call_timeout_s,
                    install_timeout_s=install_timeout_s)
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
    boot_id = readiness.boot_id
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
    prop = wrap_property(package)
    set_result = transport.shell(shell_join(["setprop", prop, WRAP_OPTIONS]), call_timeout_s)
    check = transport.shell(shell_join(["getprop", prop]), call_timeout_s).stdout.strip()
    if set_result.exit_code != 0 or check != WRAP_OPTIONS:
        raise UsageError(f"could not set {prop} on {transport.serial}: "
                         f"{set_result.output.strip()[-200:]}",
                         "use a debuggable build with wrap.sh instead")
    return "wrap-property"


