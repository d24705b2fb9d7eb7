"""``coldstart run ios-sim`` and ``coldstart run ios-device``.

Each command resolves the simulator or device, checks and installs the app, then runs the
campaign through :func:`kit.cli_common.execute_campaign`. :func:`setup_target` does the
same preparation for library callers (the pytest plugin) and returns a :class:`TargetSetup`.
"""

from __future__ import annotations

import argparse
from typing import Callable

from ..cli_common import (TargetSetup, add_campaign_options, run_setup, scenario_from_args,
                          seconds_arg)
from ..errors import UsageError
from . import ios

__all__ = ["register", "setup_target"]


def _udid(text: str) -> str:
    if not ios.UDID_RE.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a UDID (hex digits and dashes)")
    return text


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``run ios-sim`` and ``run ios-device``."""
    sim = run_targets.add_parser(
        "ios-sim", help="cold-launch the app on an iOS simulator (xcrun simctl)",
        description="Boot the simulator if needed, install the app, then per launch: "
                    "terminate, launch with the scenario, read the COLDSTART lines from the "
                    "unified log, and collect the .ips crash report of any death.")
    which = sim.add_mutually_exclusive_group(required=True)
    which.add_argument("--udid", type=_udid, metavar="U", help="the simulator's UDID")
    which.add_argument("--device-name", metavar="NAME",
                       help="the simulator's name, e.g. 'iPhone 16' (a booted one first)")
    sim.add_argument("--app", metavar="App.app", help="the app built for the simulator "
                     "(-sdk iphonesimulator); installed before the campaign")
    sim.add_argument("--bundle-id", metavar="ID", help="bundle id of an installed app "
                     "(default: the --app's CFBundleIdentifier)")
    sim.add_argument("--no-install", action="store_true",
                     help="do not install --app (it is installed already)")
    sim.add_argument("--poison", action="store_true",
                     help="Apple malloc debugging: " + " ".join(f"{k}={v}" for k, v in
                                                                 ios.POISON_ENV.items()))
    sim.add_argument("--deliver", choices=[d.value for d in ios.Delivery],
                     default=ios.Delivery.URL.value,
                     help="scenario as the deep link (url: simctl openurl, the default) or "
                          f"as launch arguments (args: {ios.SCENARIO_ARGUMENT} URL)")
    sim.add_argument("--diagnostic-reports", metavar="DIR", default=None,
                     help="where macOS writes crash reports (default: "
                          f"${ios.DIAGNOSTIC_REPORTS_ENV} or "
                          f"{ios.DEFAULT_DIAGNOSTIC_REPORTS})")
    sim.add_argument("--report-wait", type=seconds_arg, default=ios.DEFAULT_REPORT_WAIT_S,
                     metavar="S", help="seconds to wait for a crash report after a death "
                                       "(default %(default)g)")
    add_campaign_options(sim, default_timeout_s=60.0)
    sim.set_defaults(func=_run, setup=_setup_sim)

    dev = run_targets.add_parser(
        "ios-device", help="cold-launch the app on an iOS device (xcrun devicectl)",
        description="Install the app, then per launch: launch with the scenario and the "
                    "environment through devicectl, read the relayed console, and copy "
                    "the device's crash report of any death.")
    dev.add_argument("--udid", type=_udid, required=True, metavar="U",
                     help="the device's UDID (or CoreDevice identifier)")
    dev.add_argument("--ipa", metavar="App.ipa", help="the app for devices (.ipa or a "
                     "device-built .app); installed before the campaign")
    dev.add_argument("--bundle-id", metavar="ID", help="bundle id of an installed app")
    dev.add_argument("--no-install", action="store_true",
                     help="do not install --ipa (it is installed already)")
    dev.add_argument("--poison", action="store_true",
                     help="Apple malloc debugging: " + " ".join(f"{k}={v}" for k, v in
                                                                 ios.POISON_ENV.items()))
    dev.add_argument("--report-wait", type=seconds_arg, default=ios.DEFAULT_REPORT_WAIT_S,
                     metavar="S", help="seconds to wait for the device's crash report "
                                       "(default %(default)g)")
    add_campaign_options(dev, default_timeout_s=90.0)
    dev.set_defaults(func=_run, setup=_setup_device)


def _log(message: str) -> None:
    print(f"ios: {message}", flush=True)


def _setup_sim(args: argparse.Namespace, log: Callable[[str], None] = _log) -> TargetSetup:
    xcrun = ios.Xcrun()
    simctl, device, app = ios.setup_simulator(
        xcrun, udid=args.udid, name=args.device_name, app_path=args.app,
        bundle_id=args.bundle_id, install=not args.no_install, log=log)
    reports = ios.DiagnosticReports(ios.diagnostic_reports_dir(args.diagnostic_reports))
    delivery = ios.Delivery(args.deliver)
    launcher = ios.SimulatorLauncher(simctl, device, app, reports, poison=args.poison,
                                     delivery=delivery, report_wait_s=args.report_wait)
    launcher.prepare()
    options = {"poison": "apple-malloc" if args.poison else None,
               "env": dict(ios.POISON_ENV) if args.poison else {},
               "delivery": delivery.value, "timeout_s": args.timeout,
               "diagnostic_reports": str(reports.directory), "report_wait_s": args.report_wait}
    build = {"app": app.path or None, "bundle_id": app.bundle_id,
             "executable": app.executable, "platforms": list(app.platforms)}
    devices = [{"id": device.udid, "kind": "ios-simulator", "name": device.name,
                "runtime": device.runtime}]
    return TargetSetup(target="ios-sim", launchers=[launcher], build=build, options=options,
                       devices=devices, close=launcher.close)


def _setup_device(args: argparse.Namespace, log: Callable[[str], None] = _log) -> TargetSetup:
    xcrun = ios.Xcrun()
    devicectl, device, app = ios.setup_device(xcrun, udid=args.udid, app_path=args.ipa,
                                              bundle_id=args.bundle_id,
                                              install=not args.no_install, log=log)
    launcher = ios.DeviceLauncher(devicectl, device, app, poison=args.poison,
                                  report_wait_s=args.report_wait)
    options = {"poison": "apple-malloc" if args.poison else None,
               "env": dict(ios.POISON_ENV) if args.poison else {},
               "delivery": "payload-url", "timeout_s": args.timeout,
               "report_wait_s": args.report_wait}
    build = {"app": app.path or None, "bundle_id": app.bundle_id,
             "executable": app.executable, "platforms": list(app.platforms)}
    devices = [{"id": device.udid, "kind": "ios-device", "name": device.name,
                "os_version": device.os_version}]
    return TargetSetup(target="ios-device", launchers=[launcher], build=build,
                       options=options, devices=devices, close=launcher.close)


def setup_target(args: argparse.Namespace, log: Callable[[str], None] = _log) -> TargetSetup:
    """Prepare the target named by parsed ``coldstart run ios-sim|ios-device`` arguments.

    Raises:
        UsageError: no Xcode tools, an unknown UDID or name, an app not built for the
            target, no app.
        InfraError: simctl/devicectl failed while booting or installing.
    """
    setup = getattr(args, "setup", None)
    if setup is None:
        raise UsageError("these arguments are not for an iOS target", "use ios-sim or "
                         "ios-device")
    return setup(args, log)


def _run(args: argparse.Namespace) -> int:
    scenario_from_args(args)  # a bad scenario is refused before the simulator boots
    return run_setup(args, setup_target(args))


