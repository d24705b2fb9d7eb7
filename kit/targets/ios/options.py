"""The options of ``coldstart run ios-sim`` and ``coldstart run ios-device``
(:mod:`kit.targets.ios`)."""

from __future__ import annotations

import argparse

from ...launch import LogFn, PreparedTarget, TargetPlugin
from ...scenario import Scenario
from ...store.meta import CampaignMeta
from ...targets import ios
from ...targets.ios import DeviceConfig, SimulatorConfig
from ...argtypes import seconds_arg

__all__ = ["SimulatorPlugin", "DevicePlugin", "SIMULATOR", "DEVICE", "add_arguments",
           "config_from_args"]


def _udid(text: str) -> str:
    if not ios.UDID_RE.match(text):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} is not a UDID (hex digits and dashes)")
    return text


class SimulatorPlugin(TargetPlugin[SimulatorConfig]):
    """One iOS simulator (xcrun simctl)."""

    name = "ios-sim"
    help = "cold-launch the app on an iOS simulator (xcrun simctl)"
    description = ("Boot the simulator if needed, install the app, then per launch: "
                   "terminate, launch with the scenario, read the COLDSTART lines from the "
                   "unified log, and collect the .ips crash report of any death.")
    default_timeout_s = 60.0
    config_type = SimulatorConfig

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser, self.name)

    def config_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                         timeout_s: float) -> SimulatorConfig:
        config = config_from_args(self.name, args, timeout_s)
        assert isinstance(config, SimulatorConfig)
        return config

    def prepare(self, config: SimulatorConfig, scenario: Scenario,
                log: LogFn) -> PreparedTarget:
        return ios.SimulatorTarget().prepare(config, scenario, log)


class DevicePlugin(TargetPlugin[DeviceConfig]):
    """One physical iOS device (xcrun devicectl)."""

    name = "ios-device"
    help = "cold-launch the app on an iOS device (xcrun devicectl)"
    description = ("Install the app, then per launch: launch with the scenario and the "
                   "environment through devicectl, read the relayed console, and copy the "
                   "device's crash report of any death.")
    default_timeout_s = 90.0
    config_type = DeviceConfig

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser, self.name)

    def config_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                         timeout_s: float) -> DeviceConfig:
        config = config_from_args(self.name, args, timeout_s)
        assert isinstance(config, DeviceConfig)
        return config

    def prepare(self, config: DeviceConfig, scenario: Scenario,
                log: LogFn) -> PreparedTarget:
        return ios.DeviceTarget().prepare(config, scenario, log)


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """The options of ``run ios-sim`` / ``run ios-device``."""
    poison_help = "Apple malloc debugging: " + " ".join(f"{k}={v}" for k, v in
                                                        ios.POISON_ENV.items())
    if name == "ios-sim":
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--udid", type=_udid, metavar="U", help="the simulator's UDID")
        which.add_argument("--device-name", metavar="NAME",
                           help="the simulator's name, e.g. 'iPhone 16' (a booted one first)")
        parser.add_argument("--app", metavar="App.app", help="the app built for the simulator "
                            "(-sdk iphonesimulator); installed before the campaign")
        parser.add_argument("--bundle-id", metavar="ID", help="bundle id of an installed app "
                            "(default: the --app's CFBundleIdentifier)")
        parser.add_argument("--no-install", action="store_true",
                            help="do not install --app (it is installed already)")
        parser.add_argument("--poison", action="store_true", help=poison_help)
        parser.add_argument("--deliver", choices=[d.value for d in ios.Delivery],
                            default=ios.Delivery.URL.value,
                            help="scenario as the deep link (url: simctl openurl, the default) "
                                 f"or as launch arguments (args: {ios.SCENARIO_ARGUMENT} URL)")
        parser.add_argument("--diagnostic-reports", metavar="DIR", default=None,
                            help="where macOS writes crash reports (default: "
                                 f"${ios.DIAGNOSTIC_REPORTS_ENV} or "
                                 f"{ios.DEFAULT_DIAGNOSTIC_REPORTS})")
        parser.add_argument("--report-wait", type=seconds_arg,
                            default=ios.DEFAULT_REPORT_WAIT_S, metavar="S",
                            help="seconds to wait for a crash report after a death "
                                 "(default %(default)g)")
        parser.add_argument("--error-grace", type=seconds_arg,
                            default=ios.DEFAULT_ERROR_GRACE_S, metavar="S",
                            help="seconds a death after the app's error line still counts "
                                 "as a crash (default %(default)g)")
        parser.add_argument("--boot-timeout", type=seconds_arg, default=300.0, metavar="S",
                            help="seconds a simulator that shut down may take to boot again "
                                 "(default %(default)g)")
        return
    parser.add_argument("--udid", type=_udid, required=True, metavar="U",
                        help="the device's UDID (or CoreDevice identifier)")
    parser.add_argument("--ipa", metavar="App.ipa", help="the app for devices (.ipa or a "
                        "device-built .app); installed before the campaign")
    parser.add_argument("--bundle-id", metavar="ID", help="bundle id of an installed app")
    parser.add_argument("--no-install", action="store_true",
                        help="do not install --ipa (it is installed already)")
    parser.add_argument("--poison", action="store_true", help=poison_help)
    parser.add_argument("--report-wait", type=seconds_arg, default=ios.DEFAULT_REPORT_WAIT_S,
                        metavar="S", help="seconds to wait for the device's crash report "
                                          "(default %(default)g)")
    parser.add_argument("--error-grace", type=seconds_arg, default=ios.DEFAULT_ERROR_GRACE_S,
                        metavar="S", help="seconds a death after the app's error line still "
                                          "counts as a crash (default %(default)g)")
    parser.add_argument("--reconnect-timeout", type=seconds_arg, default=60.0, metavar="S",
                        help="seconds to wait for a device that dropped off to come back "
                             "(default %(default)g)")


def config_from_args(name: str, args: argparse.Namespace,
                     timeout_s: float) -> SimulatorConfig | DeviceConfig:
    """The target's config from parsed ``run ios-sim`` / ``run ios-device`` arguments."""
    if name == "ios-sim":
        return SimulatorConfig(udid=args.udid, device_name=args.device_name, app=args.app,
                               bundle_id=args.bundle_id, install=not args.no_install,
                               poison=args.poison, deliver=args.deliver,
                               diagnostic_reports=args.diagnostic_reports,
                               report_wait_s=args.report_wait,
                               error_grace_s=args.error_grace,
                               boot_timeout_s=args.boot_timeout, timeout_s=timeout_s)
    return DeviceConfig(udid=args.udid, app=args.ipa, bundle_id=args.bundle_id,
                        install=not args.no_install, poison=args.poison,
                        report_wait_s=args.report_wait, error_grace_s=args.error_grace,
                        reconnect_s=args.reconnect_timeout, timeout_s=timeout_s)


#: the iOS targets' plug-ins (the registry's entries)
SIMULATOR = SimulatorPlugin()
DEVICE = DevicePlugin()
