"""Setting up an iOS simulator campaign: the simulator resolved and booted, the app read
(or named by its bundle id) and installed (:mod:`kit.targets.ios.simulator` launches it)."""

from __future__ import annotations

import dataclasses
from typing import Callable

from ...errors import UsageError
from .app import AppBundle, bundle_for_id, read_app_bundle
from .simctl import BOOTED, SimDevice, Simctl
from .xcrun import Xcrun

__all__ = ["setup_simulator"]


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
            raise UsageError(f"--bundle-id {bundle_id[:80]} does not match the app's "
                             f"CFBundleIdentifier {app.bundle_id}", "drop --bundle-id")
    elif bundle_id:
        app = bundle_for_id(bundle_id)
    else:
        raise UsageError("no app given", "pass --app App.app (or --bundle-id of an installed "
                         "app)")
    if device.state != BOOTED:
        log(f"booting simulator {device.name} ({device.udid})")
    simctl.boot(device.udid)
    if app_path and install:
        log(f"installing {app.path} on {device.name}")
        simctl.install(device.udid, app.path)
    return simctl, dataclasses.replace(device, state=BOOTED), app

