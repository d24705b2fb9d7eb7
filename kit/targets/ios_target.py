"""The iOS targets as a campaign session sees them: simulators (``ios-sim``, xcrun simctl)
and devices (``ios-device``, xcrun devicectl); see :mod:`kit.targets.ios` for the
launchers."""

from __future__ import annotations

import dataclasses

from ..scenario import Scenario
from .base import LogFn, PreparedTarget

__all__ = ["SimulatorConfig", "DeviceConfig", "SimulatorTarget", "DeviceTarget", "TARGETS"]


@dataclasses.dataclass(frozen=True)
class SimulatorConfig:
    """An ``ios-sim`` campaign's settings.

    Attributes:
        udid, device_name: the simulator (one of them).
        app: the ``.app`` built for the simulator, installed first unless ``install`` is
            off; ``bundle_id``: the installed app's (default: the ``.app``'s).
        poison: Apple malloc debugging (:data:`kit.targets.ios.POISON_ENV`).
        deliver: ``url`` (``simctl openurl``) or ``args`` (launch arguments).
        diagnostic_reports: where macOS writes crash reports (``None``: the default).
        report_wait_s: how long to wait for a crash report after a death.
        timeout_s: a launch's timeout (kept in the campaign's options).
    """

    udid: str | None = None
    device_name: str | None = None
    app: str | None = None
    bundle_id: str | None = None
    install: bool = True
    poison: bool = False
    deliver: str = "url"
    diagnostic_reports: str | None = None
    report_wait_s: float = 15.0
    timeout_s: float = 60.0


@dataclasses.dataclass(frozen=True)
class DeviceConfig:
    """An ``ios-device`` campaign's settings (see :class:`SimulatorConfig`; ``app`` is the
    ``.ipa`` or device-built ``.app``)."""

    udid: str
    app: str | None = None
    bundle_id: str | None = None
    install: bool = True
    poison: bool = False
    report_wait_s: float = 15.0
    timeout_s: float = 90.0


def _build(app: object) -> dict[str, object]:
    return {"app": getattr(app, "path") or None, "bundle_id": getattr(app, "bundle_id"),
            "executable": getattr(app, "executable"),
            "platforms": list(getattr(app, "platforms"))}


class SimulatorTarget:
    """:class:`kit.targets.base.Target` for one iOS simulator."""

    name = "ios-sim"

    def prepare(self, config: SimulatorConfig, scenario: Scenario, log: LogFn
                ) -> PreparedTarget:
        """Resolve and boot the simulator, check and install the app.

        Raises:
            UsageError: no Xcode tools, an unknown UDID or name, an app not built for the
                simulator, no app. InfraError: simctl failed while booting or installing.
        """
        from . import ios

        xcrun = ios.Xcrun()
        simctl, device, app = ios.setup_simulator(
            xcrun, udid=config.udid, name=config.device_name, app_path=config.app,
            bundle_id=config.bundle_id, install=config.install,
            log=lambda m: log(f"ios: {m}"))
        reports = ios.DiagnosticReports(ios.diagnostic_reports_dir(config.diagnostic_reports))
        delivery = ios.Delivery(config.deliver)
        launcher = ios.SimulatorLauncher(simctl, device, app, reports, poison=config.poison,
                                         delivery=delivery, report_wait_s=config.report_wait_s)
        launcher.prepare()
        options = {"poison": "apple-malloc" if config.poison else None,
                   "env": dict(ios.POISON_ENV) if config.poison else {},
                   "delivery": delivery.value, "timeout_s": config.timeout_s,
                   "diagnostic_reports": str(reports.directory),
                   "report_wait_s": config.report_wait_s}
        devices = [{"id": device.udid, "kind": "ios-simulator", "name": device.name,
                    "runtime": device.runtime}]
        return PreparedTarget(target=self.name, launchers=[launcher], build=_build(app),
                              options=options, devices=devices, close=launcher.close)


class DeviceTarget:
    """:class:`kit.targets.base.Target` for one physical iOS device."""

    name = "ios-device"

    def prepare(self, config: DeviceConfig, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """Resolve the device, check and install the app.

        Raises:
            UsageError: no Xcode tools, an unknown device, an app not built for devices.
            InfraError: devicectl failed while installing.
        """
        from . import ios

        xcrun = ios.Xcrun()
        devicectl, device, app = ios.setup_device(xcrun, udid=config.udid, app_path=config.app,
                                                  bundle_id=config.bundle_id,
                                                  install=config.install,
                                                  log=lambda m: log(f"ios: {m}"))
        launcher = ios.DeviceLauncher(devicectl, device, app, poison=config.poison,
                                      report_wait_s=config.report_wait_s)
        options = {"poison": "apple-malloc" if config.poison else None,
                   "env": dict(ios.POISON_ENV) if config.poison else {},
                   "delivery": "payload-url", "timeout_s": config.timeout_s,
                   "report_wait_s": config.report_wait_s}
        devices = [{"id": device.udid, "kind": "ios-device", "name": device.name,
                    "os_version": device.os_version}]
        return PreparedTarget(target=self.name, launchers=[launcher], build=_build(app),
                              options=options, devices=devices, close=launcher.close)


TARGETS = (SimulatorTarget(), DeviceTarget())
