"""Whether the app installed on a device is the campaign's build (issue #23: someone else
installed another build mid-campaign, and every later launch ran it while
``campaign.json`` named the APK the kit had installed).

``pm path <package>`` names a new directory at every install (PackageManagerService puts
each install under ``/data/app/~~<random>/<package>-<random>/``), so a path seen before is
the same install and costs nothing to check; a new one is hashed on the device (toybox
``sha256sum``). A build that is not the campaign's is replaced by the campaign's APK, or,
with no APK to install, the campaign stops (:class:`ForeignBuild`).
"""

from __future__ import annotations

from typing import Any, Callable

from ...errors import InfraError, UsageError
from .device import WRAP_OPTIONS, ApkInfo, install_apk, wrap_property
from .text import marked_command, read_marked
from .transport import shell_join

__all__ = ["ForeignBuild", "InstalledBuild", "not_listed"]

_MARK = "==coldstart-build=="


def not_listed(shell: Any, package: str, call_timeout_s: float) -> bool:
    """``pm list packages <package>`` worked (exit status 0) and does not list ``package``
    (its filter is a substring: names are compared exactly): the app is not installed. A
    ``pm`` that failed says nothing (``False``), so a passing failure never turns a death
    into a removal.

    Args:
        shell: anything with :meth:`~kit.targets.android.transport.AdbTransport.shell`.

    Raises:
        TransportError: the device stopped answering.
    """
    listed = shell.shell(shell_join(["pm", "list", "packages", package]), call_timeout_s)
    names = {line.strip()[len("package:"):] for line in listed.stdout.splitlines()
             if line.strip().startswith("package:")}
    return listed.exit_code == 0 and package not in names


class ForeignBuild(InfraError):
    """The installed app is not the campaign's build and cannot be made so (no APK to
    install again, or the install failed): every later launch would count another build,
    so the campaign stops (a persistent infra error, exit 3)."""


class InstalledBuild:
    """The campaign's build on one device.

    Args:
        package: the app.
        apk: the campaign's APK (installed again when another build replaced it), or
            ``None`` (the build found installed at the first check is the campaign's).
        device: the device, for messages.
        log: takes one line for the user.

    Attributes:
        path: the installed ``base.apk`` known to be the campaign's build, or ``None``.
        sha256: that build's sha256 (the APK's, else the first one seen).
        reinstalls: installs of the campaign's APK after another build replaced it.
    """

    def __init__(self, package: str, apk: ApkInfo | None, device: str,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.package = package
        self.apk = apk
        self.device = device
        self.log = log
        self.path: str | None = None
        self.sha256 = apk.sha256 if apk is not None else None
        self.reinstalls = 0

    def check(self, calls: Any, path: str, call_timeout_s: float,
              poison_method: str | None = None) -> dict[str, Any] | None:
        """Make sure the build at ``path`` (``pm path``'s ``base.apk``; ``""``: unknown,
        nothing is checked) is the campaign's. Another build is replaced by the campaign's
        APK (``pm install -r -t -d``; an uninstall first where the device refuses that,
        :func:`~kit.targets.android.device.install_apk`). A hash that cannot be read at
        the first check accepts the build found (the kit installed it just before).

        Args:
            calls: the launcher's call log (``shell``, ``note``) on the device transport
                (``calls.transport``).
            poison_method: ``wrap-property`` sets the wrap property again after an install.

        Returns:
            ``{"replaced": ..., "reinstalls": N}`` after a reinstall (for the next
            record), else ``None``.

        Raises:
            ForeignBuild: another build is installed and there is no APK to install again,
                or the install failed. TransportError: the device stopped answering.
        """
        if not path or path == self.path:
            return None
        hashed = calls.shell(shell_join(*marked_command(
            _MARK, [("apk_sha256", ["sha256sum", path])])), call_timeout_s)
        sha = read_marked(hashed.stdout, _MARK).get("apk_sha256", "")
        if not sha and self.path is None:
            self.path = path  # no hash tool: the build found at the start is the one
            return None
        if sha and self.sha256 is None:
            self.sha256 = sha  # no APK given: the build found at the start is the one
        if sha and sha == self.sha256:
            if self.path is not None:
                calls.note(f"the campaign's build was installed again ({path})")
            self.path = path
            return None
        found = f"sha256 {sha[:16]}..." if sha else "its sha256 could not be read"
        calls.note(f"another build of {self.package} is installed at {path}: {found}")
        return self._install_again(calls, found, call_timeout_s, poison_method)

    def missing(self, calls: Any, call_timeout_s: float, poison_method: str | None = None
                ) -> dict[str, Any] | None:
        """``pm path`` printed nothing: when ``pm list packages <package>`` (exit status 0)
        does not list the package either, the app is not installed (removed by someone
        else, an MDM or ``adb uninstall``; issue #44) and the campaign's APK is installed
        again, as for another build (:meth:`check`). A ``pm`` that fails concludes
        nothing.

        Returns:
            ``{"replaced": "not installed", "reinstalls": N}`` after an install, else
            ``None``.

        Raises:
            ForeignBuild: no APK to install, or the install failed. TransportError: the
                device stopped answering.
        """
        if not not_listed(calls, self.package, call_timeout_s):
            return None
        calls.note(f"{self.package} is not installed (`pm path`, `pm list packages`)")
        return self._install_again(calls, "not installed", call_timeout_s, poison_method)

    def _install_again(self, calls: Any, found: str, call_timeout_s: float,
                       poison_method: str | None) -> dict[str, Any]:
        """Install the campaign's APK in place of what ``found`` describes."""
        if self.apk is None and found == "not installed":
            raise ForeignBuild(
                f"{self.device}: {self.package} is no longer installed (removed by someone "
                "else) and the kit has no APK to install again: the campaign stops and its "
                "remaining launches are abandoned", "keep other tools off the device; pass "
                "--apk so that the kit can install it again, then run again with --resume")
        if self.apk is None:
            raise ForeignBuild(
                f"{self.device}: another build of {self.package} is installed ({found}; "
                f"the campaign's is sha256 {(self.sha256 or '?')[:16]}...): this and "
                "every later launch would run it, so the campaign stops and its remaining "
                "launches are abandoned", "keep other tools off the device; pass --apk so "
                "that the kit can install its build again, then run again with --resume")
        what = (f"{self.package} was removed" if found == "not installed" else
                f"another build of {self.package} was installed ({found})")
        self.log(f"{self.device}: {what}: installing "
                 f"{self.apk.path.rsplit('/', 1)[-1]} again")
        try:
            install_apk(calls.transport, self.apk, self.package,
                        call_timeout_s=call_timeout_s, downgrade=True)
        except UsageError as exc:
            raise ForeignBuild(f"{self.device}: {what} and the "
                               f"campaign's APK could not be installed again "
                               f"({exc.message}): the campaign stops and its remaining "
                               "launches are abandoned", exc.hint) from None
        self.reinstalls += 1
        calls.note(f"installed {self.apk.path.rsplit('/', 1)[-1]} again")
        listed = calls.shell(shell_join(*marked_command(
            _MARK, [("apk_path", ["pm", "path", self.package])])), call_timeout_s)
        self.path = read_marked(listed.stdout, _MARK).get("apk_path") or None
        if poison_method == "wrap-property":
            calls.shell(shell_join(["setprop", wrap_property(self.package), WRAP_OPTIONS]),
                        call_timeout_s)
        return {"replaced": found, "reinstalls": self.reinstalls}
