"""The options of ``coldstart run android`` (:class:`kit.targets.android.AndroidConfig`) and
the adb connection options ``coldstart devices`` shares, read the same way by the command
line and the pytest plugin."""

from __future__ import annotations

import argparse

from ...launch import LogFn, PreparedTarget, TargetPlugin
from ...scenario import Scenario
from ...store.meta import CampaignMeta
from ...targets import android
from ...targets.android import AndroidConfig
from ...argtypes import positive_seconds

__all__ = ["AndroidPlugin", "PLUGIN", "add_arguments", "add_connection_options",
           "config_from_args"]


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("adb")
    group.add_argument("--adb-server", metavar="HOST:PORT", default=None,
                       help="adb server to use (default: ANDROID_ADB_SERVER_HOST/PORT, "
                            "else 127.0.0.1:5037; a local one is started if needed)")
    group.add_argument("--direct", metavar="HOST:PORT", action="append", default=[],
                       help="talk to a TCP device's adbd directly (adb-shell, no server); "
                            "repeatable")
    group.add_argument("--adbkey", metavar="PATH", default=None,
                       help="private key for --direct (default: ~/.android/adbkey)")
    group.add_argument("--auth-timeout", type=positive_seconds, default=30.0, metavar="S",
                       help="for --direct: how long to wait for the device to accept the "
                            "key (default 30)")


class AndroidPlugin(TargetPlugin[AndroidConfig]):
    """Android devices and emulators over adb."""

    name = "android"
    help = "cold-launch the app on Android devices and emulators over adb"
    description = ("Install the APK, then cold-launch it with the scenario as a deep link, "
                   "once per launch; several --serial values run in parallel into one "
                   "campaign.")
    default_timeout_s = 60.0
    config_type = AndroidConfig

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def config_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                         timeout_s: float) -> AndroidConfig:
        return config_from_args(args, timeout_s)

    def prepare(self, config: AndroidConfig, scenario: Scenario,
                log: LogFn) -> PreparedTarget:
        return android.AndroidTarget().prepare(config, scenario, log)


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The options of ``run android``."""
    run.add_argument("--serial", action="append", default=[], metavar="S",
                     help="device serial from `coldstart devices` (repeatable; default: the "
                          "only device)")
    app = run.add_mutually_exclusive_group()
    app.add_argument("--apk", metavar="APK", help="install this APK (pm install -r -t) and "
                                                   "record its provenance")
    app.add_argument("--package", metavar="PKG",
                     help="use the app already installed under this package")
    run.add_argument("--poison", choices=[m.value for m in android.PoisonMode], default=None,
                     help="heap poisoning: gwp-asan (APK with gwpAsanMode=always) or "
                          "malloc-debug (debuggable APK with wrap.sh, or the wrap property "
                          "on a root / emulator image)")
    add_connection_options(run)
    tuning = run.add_argument_group("timing")
    tuning.add_argument("--report-wait", type=positive_seconds, default=8.0, metavar="S",
                        help="after a death, wait up to S s for its report (default 8)")
    tuning.add_argument("--reconnect-timeout", type=positive_seconds, default=60.0, metavar="S",
                        help="how long to try to get a dropped device back (default 60)")
    tuning.add_argument("--poll", type=positive_seconds, default=1.0, metavar="S",
                        help="check the process with pidof after S s without a log line "
                             "(default 1)")
    tuning.add_argument("--error-grace", type=positive_seconds, default=3.0, metavar="S",
                        help="after the app reports an error, watch S s for the process to "
                             "die (a fatal JS error) before calling it an app-error "
                             "(default 3)")


def config_from_args(args: argparse.Namespace, timeout_s: float) -> AndroidConfig:
    """The :class:`~kit.targets.android.AndroidConfig` of ``run android``."""
    return AndroidConfig(serials=tuple(args.serial), direct=tuple(args.direct),
                         adb_server=args.adb_server, adbkey=args.adbkey,
                         auth_timeout_s=args.auth_timeout, apk=args.apk, package=args.package,
                         poison=args.poison, poll_s=args.poll, report_wait_s=args.report_wait,
                         reconnect_s=args.reconnect_timeout, error_grace_s=args.error_grace,
                         timeout_s=timeout_s)


#: the Android target's plug-in (the registry's entry)
PLUGIN = AndroidPlugin()
