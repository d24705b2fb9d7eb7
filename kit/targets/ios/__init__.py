"""iOS targets: simulators (``ios-sim``, ``xcrun simctl``) and devices (``ios-device``,
``xcrun devicectl``).

Modules, bottom up (docs/formats.md section D5, docs/formats.md sections 4-6):

* :mod:`.xcrun` - the transport: ``xcrun <tool>`` with argv lists, :class:`XcrunError`
  (an infra error keeping the tool's output), a capped backoff;
* :mod:`.app` - the app: ``Info.plist``, bundle ids, how it takes a scenario, the poison
  environment;
* :mod:`.simctl`, :mod:`.devicectl` - the tools' commands and formats, and the
  simulator's log stream;
* :mod:`.reports` - crash reports (the host's DiagnosticReports folder) and which belong to
  a launch; :mod:`.procwatch` - a host process's end as an event;
* :mod:`.simulator`, :mod:`.device` - the launchers (:class:`kit.launch.Launcher`), which
  hand what they observed to :func:`kit.observe.make_record`;
* this package - the configurations and the :class:`~kit.launch.Target` objects
  (:data:`TARGETS`), and the names above re-exported.
"""

from __future__ import annotations

import dataclasses

from ...errors import InfraError, UsageError
from ...scenario import Scenario
from ...launch import LogFn, PreparedTarget
from ...store.identity import BuildIdentity
from ...store.meta import RunSetup
from .app import (BUNDLE_ID_RE, POISON_ENV, RN_LOG_SUBSYSTEM, SCENARIO_ARGUMENT, UDID_RE,
                  AppBundle, bundle_for_id, check_bundle_id, read_app_bundle)
from .device import DeviceLauncher, setup_device
from .devicectl import Devicectl, PhysicalDevice
from .reports import (DEFAULT_DIAGNOSTIC_REPORTS, DEFAULT_REPORT_WAIT_S,
                      DIAGNOSTIC_REPORTS_ENV, DiagnosticReports, diagnostic_reports_dir)
from .simctl import LogStream, SimDevice, Simctl
from .simulator import Delivery, SimulatorLauncher, setup_simulator
from .xcrun import Xcrun, XcrunError

__all__ = ["Xcrun", "XcrunError", "Simctl", "SimDevice", "LogStream", "Devicectl",
           "PhysicalDevice", "AppBundle", "read_app_bundle", "check_bundle_id",
           "bundle_for_id", "DiagnosticReports", "diagnostic_reports_dir",
           "SimulatorLauncher", "DeviceLauncher", "Delivery", "setup_simulator",
           "setup_device", "SimulatorConfig", "DeviceConfig", "SimulatorTarget",
           "DeviceTarget", "TARGETS", "POISON_ENV", "SCENARIO_ARGUMENT", "RN_LOG_SUBSYSTEM",
           "DIAGNOSTIC_REPORTS_ENV", "DEFAULT_DIAGNOSTIC_REPORTS", "DEFAULT_REPORT_WAIT_S",
           "DEFAULT_ERROR_GRACE_S", "BUNDLE_ID_RE", "UDID_RE", "UsageError", "InfraError"]

#: Seconds a death after the app's ``error`` line still makes the launch a crash (React
#: Native's RCTFatal aborts right after a fatal JS error is logged).
DEFAULT_ERROR_GRACE_S = 2.0


@dataclasses.dataclass(frozen=True)
class SimulatorConfig:
    """An ``ios-sim`` campaign's settings.

    Attributes:
        udid, device_name: the simulator (one of them).
        app: the ``.app`` built for the simulator, installed first unless ``install`` is
            off; ``bundle_id``: the installed app's (default: the ``.app``'s).
        poison: Apple malloc debugging (:data:`POISON_ENV`).
        deliver: ``url`` (``simctl openurl``) or ``args`` (launch arguments).
        diagnostic_reports: where macOS writes crash reports (``None``: the default).
        report_wait_s: how long to wait for a crash report after a death.
        error_grace_s: how long a death after an ``error`` line still counts as a crash.
        boot_timeout_s: how long a simulator that shut down may take to boot again.
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
    report_wait_s: float = DEFAULT_REPORT_WAIT_S
    error_grace_s: float = DEFAULT_ERROR_GRACE_S
    boot_timeout_s: float = 300.0
    timeout_s: float = 60.0


@dataclasses.dataclass(frozen=True)
class DeviceConfig:
    """An ``ios-device`` campaign's settings (see :class:`SimulatorConfig`; ``app`` is the
    ``.ipa`` or device-built ``.app``; ``reconnect_s``: how long to wait for a device that
    dropped off to come back)."""

    udid: str
    app: str | None = None
    bundle_id: str | None = None
    install: bool = True
    poison: bool = False
    report_wait_s: float = DEFAULT_REPORT_WAIT_S
    error_grace_s: float = DEFAULT_ERROR_GRACE_S
    reconnect_s: float = 60.0
    timeout_s: float = 90.0


def _prepared(name: str, launcher: SimulatorLauncher | DeviceLauncher, app: AppBundle,
              poison: bool, device: dict[str, object], *, timeout_s: float, delivery: str,
              **options: object) -> PreparedTarget:
    """The :class:`PreparedTarget` of one simulator or device."""
    mode = "apple-malloc" if poison else None
    launch = {"poison": mode,
              "env": dict(POISON_ENV) if poison else {}, "delivery": delivery}
    return PreparedTarget(target=name, launchers=[launcher], build=app.provenance(),
                          options={**launch, "timeout_s": timeout_s, **options},
                          setup=RunSetup(timeout_s=timeout_s, poison=mode,
                                         compared=launch, app_id=app.bundle_id),
                          devices=[device], close=launcher.close,
                          identity=BuildIdentity(artifact="app",
                                                 path=app.path or app.bundle_id))


class SimulatorTarget:
    """:class:`kit.launch.Target` for one iOS simulator."""

    name = "ios-sim"

    def prepare(self, config: SimulatorConfig, scenario: Scenario, log: LogFn
                ) -> PreparedTarget:
        """Resolve and boot the simulator, check and install the app.

        Raises:
            UsageError: no Xcode tools, an unknown UDID or name, an app not built for the
                simulator, no app. InfraError: simctl failed while booting or installing.
        """
        simctl, device, app = setup_simulator(
            Xcrun(), udid=config.udid, name=config.device_name, app_path=config.app,
            bundle_id=config.bundle_id, install=config.install,
            log=lambda m: log(f"ios: {m}"))
        reports = DiagnosticReports(diagnostic_reports_dir(config.diagnostic_reports))
        delivery = Delivery(config.deliver)
        launcher = SimulatorLauncher(simctl, device, app, reports, poison=config.poison,
                                     delivery=delivery, report_wait_s=config.report_wait_s,
                                     error_grace_s=config.error_grace_s,
                                     boot_timeout_s=config.boot_timeout_s,
                                     log=lambda m: log(f"ios: {m}"))
        launcher.prepare()
        return _prepared(self.name, launcher, app, config.poison,
                         {"id": device.udid, "kind": "ios-simulator", "name": device.name,
                          "runtime": device.runtime},
                         delivery=delivery.value, timeout_s=config.timeout_s,
                         diagnostic_reports=str(reports.directory),
                         report_wait_s=config.report_wait_s)


class DeviceTarget:
    """:class:`kit.launch.Target` for one physical iOS device."""

    name = "ios-device"

    def prepare(self, config: DeviceConfig, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """Resolve the device, check and install the app.

        Raises:
            UsageError: no Xcode tools, an unknown device, an app not built for devices.
            InfraError: devicectl failed while installing.
        """
        devicectl, device, app = setup_device(Xcrun(), udid=config.udid, app_path=config.app,
                                              bundle_id=config.bundle_id,
                                              install=config.install,
                                              log=lambda m: log(f"ios: {m}"))
        launcher = DeviceLauncher(devicectl, device, app, poison=config.poison,
                                  report_wait_s=config.report_wait_s,
                                  error_grace_s=config.error_grace_s,
                                  reconnect_s=config.reconnect_s,
                                  log=lambda m: log(f"ios: {m}"))
        return _prepared(self.name, launcher, app, config.poison,
                         {"id": device.udid, "kind": "ios-device", "name": device.name,
                          "os_version": device.os_version},
                         delivery="payload-url", timeout_s=config.timeout_s,
                         report_wait_s=config.report_wait_s)


TARGETS = (SimulatorTarget(), DeviceTarget())
