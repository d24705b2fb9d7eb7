"""Whether the app installed on a simulator is the campaign's build (issue #23): an erased
simulator has lost it (its launch requests then fail with "Simulator device failed to
open coldstart://...", which does not name the cause), and someone else may have installed
another build. ``simctl get_app_container <udid> <bundle> app`` names the installed
``.app`` folder on this Mac; its executable's sha256 is compared with the campaign's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...errors import InfraError, UsageError
from .app import AppBundle
from .simctl import SimDevice, Simctl

__all__ = ["ForeignBuild", "InstalledApp"]


class ForeignBuild(InfraError):
    """The campaign's app is not installed, or another build is, and it cannot be
    installed again (no ``.app`` / ``.ipa`` given; simulators and devices alike):
    every later launch would fail or run another build, so the campaign stops (a
    persistent infra error, exit 3)."""

    def record(self, ctx: Any, *, target: str, device: str, started_at: str,
               t0: float) -> Any:
        """The launch's record: a lost launch with this persistent infra error (through
        :func:`kit.observe.make_record`, as every launch; ``t0``: its ``time.monotonic()``
        start)."""
        import time

        from ...observe import Observation, ProcessEnd, make_record

        observation = Observation(events=(), end=ProcessEnd.LOST, timeout_s=ctx.timeout_s,
                                  infer=ctx.scenario.infer, infra=self.one_line(),
                                  persistent=True)
        return make_record(ctx, target=target, device=device, observation=observation,
                           started_at=started_at, wall_ms=(time.monotonic() - t0) * 1000.0,
                           artifacts=[])


def _sha256(path: Path) -> str:
    """sha256 of a file, ``""`` when it cannot be read here (unknown)."""
    from ...modelset import sha256_file

    try:
        return sha256_file(path)
    except (OSError, InfraError, UsageError):
        return ""


class InstalledApp:
    """The campaign's app on one simulator.

    Args:
        simctl: the simctl transport; ``device``: the simulator; ``app``: the campaign's
            app (its ``path`` empty when only a bundle id was given); ``log``: one line
            for the user.

    Attributes:
        sha256: the campaign's executable's sha256 (the ``.app`` given, else the first one
            seen installed), or ``None`` until known.
        reinstalls: installs of the app again during the campaign.
    """

    def __init__(self, simctl: Simctl, device: SimDevice, app: AppBundle,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.simctl = simctl
        self.sim = device
        self.app = app
        self.log = log
        self.sha256: str | None = None
        self.reinstalls = 0
        self._seen = False  # the app was seen installed during the campaign
        self._source = Path(app.path) if app.path and Path(app.path).is_dir() else None

    def found(self) -> str | None:
        """sha256 of the installed executable; ``None``: not installed; ``""``: unknown.
        Raises XcrunError."""
        where = self.simctl.app_container(self.sim.udid, self.app.bundle_id)
        return None if where is None else _sha256(Path(where) / self.app.executable)

    def wanted(self) -> str | None:
        """The campaign's executable's sha256, when known."""
        if self.sha256 is None and self._source is not None:
            self.sha256 = _sha256(self._source / self.app.executable) or None
        return self.sha256

    def check(self) -> None:
        """Before a launch: an app that is missing or another build is replaced by the
        campaign's ``.app``. An executable that cannot be read is unknown and checks
        nothing.

        Raises:
            ForeignBuild: there is no ``.app`` to install. XcrunError: simctl failed.
        """
        found, wanted = self.found(), self.wanted()
        seen, self._seen = self._seen, self._seen or found is not None
        if found == "" or (found is not None and wanted in (None, found)):
            if wanted is None and found:
                self.sha256 = found  # --bundle-id: the build found first is the one
            return
        if found is None and wanted is None and not seen:
            return  # never seen installed, nothing to install: the request says why
        why = ("the app is not installed (the simulator was erased?)" if found is None else
               f"another build of {self.app.bundle_id} is installed (executable sha256 "
               f"{found[:16]}...)")
        if self._source is None:
            raise ForeignBuild(f"simulator {self.sim.name} ({self.sim.udid}): {why}: the "
                               "campaign stops and its remaining launches are abandoned",
                               "pass --app so that the kit can install it again, then run "
                               "again with --resume")
        self.log(f"simulator {self.sim.name}: {why}: installing {self._source.name} again")
        self.simctl.install(self.sim.udid, str(self._source))
        self.reinstalls += 1

    def replaced(self) -> str | None:
        """Why a death with no crash report is not the app's own: its build was removed or
        replaced during the launch (an install terminates the running app and writes no
        report); ``None`` when the campaign's build is still there or it cannot be
        told. Never raises."""
        try:
            found = self.found()
        except InfraError:
            return None
        wanted = self.wanted()
        if found is None:
            return "the app was uninstalled during the launch"
        if found and wanted and found != wanted:
            return (f"another build of {self.app.bundle_id} was installed during the launch "
                    "(the install terminated the app)")
        return None
