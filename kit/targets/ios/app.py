"""What the kit knows about the iOS app: its bundle (``Info.plist``), how it takes a
scenario, where its protocol lines go, and Apple's heap-poisoning environment. Shared by the
simulator, device and Appium (XCUITest) launchers."""

from __future__ import annotations

import dataclasses
import os
import plistlib
import re
import zipfile
from pathlib import Path

from ..._bounded import MiB, read_bytes_bounded
from ...errors import ColdstartError, UsageError

__all__ = ["AppBundle", "read_app_bundle", "check_bundle_id", "bundle_for_id", "POISON_ENV",
           "SCENARIO_ARGUMENT", "RN_LOG_SUBSYSTEM", "BUNDLE_ID_RE", "UDID_RE"]

#: Apple libmalloc debug variables (``man malloc``): freed blocks filled with 0x55
#: (``MallocScribble``), new blocks with 0xAA (``MallocPreScribble``), guard pages around
#: large blocks (``MallocGuardEdges``), abort on heap corruption malloc detects
#: (``MallocErrorAbort``). 0x55 in a fault address points at a use after free.
POISON_ENV: dict[str, str] = {"MallocScribble": "1", "MallocPreScribble": "1",
                              "MallocGuardEdges": "1", "MallocErrorAbort": "1"}
#: Launch argument naming the scenario URL (``-key value`` pairs land in the app's
#: ``NSUserDefaults`` argument domain).
SCENARIO_ARGUMENT = "-coldstartScenario"
#: os_log subsystem of React Native's JS console (``console.log`` -> category ``javascript``).
RN_LOG_SUBSYSTEM = "com.facebook.react.log"
BUNDLE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,154}$")
#: Simulator UDIDs are UUIDs; device UDIDs are 40 hex digits or ``XXXXXXXX-XXXXXXXXXXXXXXXX``.
UDID_RE = re.compile(r"^[A-Fa-f0-9-]{20,64}$")
#: The largest Info.plist or .ipa member read (a real one is a few KiB).
_PLIST_LIMIT = 8 * MiB


@dataclasses.dataclass(frozen=True)
class AppBundle:
    """What the kit needs from an app's ``Info.plist``.

    Attributes:
        path: the ``.app`` folder or ``.ipa`` file (``""`` for an installed app named by
            its bundle id).
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

    def provenance(self) -> dict[str, object]:
        """The build provenance ``campaign.json`` keeps."""
        return {"app": self.path or None, "bundle_id": self.bundle_id,
                "executable": self.executable, "platforms": list(self.platforms)}


def _plist_bytes(app: Path) -> bytes:
    if app.is_dir():
        return read_bytes_bounded(app / "Info.plist", _PLIST_LIMIT, what="Info.plist",
                                  missing=f"{app} has no Info.plist",
                                  missing_hint="pass the app built by Xcode")
    if app.suffix == ".ipa" and app.is_file():
        with zipfile.ZipFile(app) as archive:
            names = [i for i in archive.infolist()
                     if re.fullmatch(r"Payload/[^/]+\.app/Info\.plist", i.filename)]
            if not names:
                raise UsageError(f"{app} has no Payload/<name>.app/Info.plist",
                                 "pass an .ipa exported by Xcode")
            if names[0].file_size > _PLIST_LIMIT:
                raise UsageError(f"the Info.plist in {app} is larger than 8 MiB",
                                 "pass an .ipa exported by Xcode")
            return archive.read(names[0])
    raise UsageError(f"{app} is not an .app folder or an .ipa file",
                     "pass the app built by Xcode (Products/*/Name.app or an .ipa)")


def read_app_bundle(path: str | os.PathLike[str]) -> AppBundle:
    """Read an ``.app`` folder's or an ``.ipa``'s (``Payload/<name>.app/``) ``Info.plist``
    (XML or binary plist; Apple's ``plist`` format, read with :mod:`plistlib`).

    Raises:
        UsageError: the path is missing, not an app, or its Info.plist is unreadable, too
            large or has no valid ``CFBundleIdentifier``.
    """
    app = Path(path).expanduser()
    try:
        info = plistlib.loads(_plist_bytes(app))
    except ColdstartError as exc:
        raise UsageError(exc.message, exc.hint) from None
    except (OSError, zipfile.BadZipFile, plistlib.InvalidFileException, ValueError,
            RecursionError) as exc:
        raise UsageError(f"cannot read the Info.plist of {app}: {exc}",
                         "pass the app built by Xcode") from None
    if not isinstance(info, dict):
        raise UsageError(f"the Info.plist of {app} is not a dictionary", "rebuild the app")
    bundle_id = str(info.get("CFBundleIdentifier", ""))
    if not BUNDLE_ID_RE.match(bundle_id):
        raise UsageError(f"{app} has no valid CFBundleIdentifier ({bundle_id[:80]!r})",
                         "rebuild the app")
    types = info.get("CFBundleURLTypes")
    schemes = tuple(s for t in (types if isinstance(types, list) else [])
                    if isinstance(t, dict)
                    for s in (t.get("CFBundleURLSchemes") or []) if isinstance(s, str))
    platforms = info.get("CFBundleSupportedPlatforms")
    return AppBundle(path=str(app), bundle_id=bundle_id,
                     executable=str(info.get("CFBundleExecutable") or app.stem),
                     platforms=tuple(str(p) for p in platforms)
                     if isinstance(platforms, list) else (), url_schemes=schemes)


def check_bundle_id(bundle_id: str) -> str:
    """Validate a bundle id (``[A-Za-z0-9][A-Za-z0-9.-]*``, at most 155 characters).

    Raises:
        UsageError: it is not one.
    """
    if not BUNDLE_ID_RE.match(bundle_id or ""):
        raise UsageError(f"bundle id {bundle_id[:80]!r} is invalid",
                         "use letters, digits, dots and hyphens, e.g. org.coldstart.app")
    return bundle_id


def bundle_for_id(bundle_id: str) -> AppBundle:
    """The :class:`AppBundle` of an installed app known only by its bundle id (its
    executable is taken to be the id's last component). Raises UsageError."""
    check_bundle_id(bundle_id)
    return AppBundle(path="", bundle_id=bundle_id, executable=bundle_id.split(".")[-1],
                     platforms=(), url_schemes=())
