"""``coldstart run appium``: cold launches through an Appium server (local, grid or farm).

Bad input exits 2 with one line before anything runs: an unreachable server, capabilities
the server refuses, a driver without app lifecycle commands, a bad ``--caps`` file or app
id. Credentials in ``--server`` and secret-looking capabilities are redacted from every
line printed and everything stored (:mod:`kit.redact`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from pathlib import Path

from ...errors import UsageError
from ...targets import appium
from ...targets.appium import AppiumRunConfig, AppiumTarget
from ...launch import LogFn, PreparedTarget, TargetPlugin
from ...scenario import Scenario
from ...store.meta import CampaignMeta
from ...argtypes import positive_seconds, seconds_arg

__all__ = ["AppiumPlugin", "PLUGIN", "add_arguments", "config_from_args", "setup_target",
           "load_caps"]


class AppiumPlugin(TargetPlugin[AppiumRunConfig]):
    """The app through an Appium server (local, grid or device farm)."""

    name = "appium"
    help = ("cold-launch the app through an Appium server (UiAutomator2, XCUITest; local, "
            "grid or device farm)")
    description = ("One session per device; per launch: terminate, start with the "
                   "scenario's deep link (iOS: launch arguments and environment with "
                   "--poison), poll the status element, the app state and the platform log, "
                   "and collect the crash text of any death.")
    default_timeout_s = 90.0
    config_type = AppiumRunConfig

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from ...farms.options import add_farm_arguments

        add_arguments(parser)
        # --farm NAME: the farm's crash evidence is pulled at the end (:meth:`after_run`)
        add_farm_arguments(parser, required=False)

    def config_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                         timeout_s: float) -> AppiumRunConfig:
        return config_from_args(args, timeout_s)

    def prepare(self, config: AppiumRunConfig, scenario: Scenario,
                log: LogFn) -> PreparedTarget:
        return AppiumTarget().prepare(config, scenario, log)

    def config_to_json(self, config: AppiumRunConfig) -> dict[str, Any]:
        """The config without secrets: the server URL's credentials and secret-looking
        capabilities redacted (:mod:`kit.redact`)."""
        from ...redact import Redactor

        redactor = Redactor(urls=[config.session.server_url])
        redactor.add_secrets_from(config.session.caps)
        return dict(redactor.value(super().config_to_json(config)))

    def after_run(self, args: argparse.Namespace, out: Path, console: Any) -> int:
        """``--farm NAME``: pull the farm's crash evidence into the campaign."""
        if not getattr(args, "farm", None):
            return 0
        from ...farms.options import pull_into

        def log(message: str) -> None:
            console.print(message, markup=False, highlight=False, soft_wrap=True)

        return pull_into(out, args, None, log)


def add_arguments(run: argparse.ArgumentParser) -> None:
    """The options of ``run appium``."""
    run.add_argument("--server", required=True, metavar="URL",
                     help="Appium server URL, e.g. http://127.0.0.1:4723 or "
                          "https://USER:KEY@hub.example/wd/hub (credentials are redacted)")
    run.add_argument("--platform", required=True, choices=[p.value for p in appium.Platform],
                     help="android (UiAutomator2) or ios (XCUITest)")
    run.add_argument("--app-id", default="org.coldstart.app", metavar="ID",
                     help="package / bundle id of the app (default %(default)s)")
    run.add_argument("--app", default=None, metavar="PATH_OR_URL",
                     help="app to install (appium:app): .apk, .app, .ipa, or a farm's app "
                          "reference; omit when installed already")
    run.add_argument("--caps", default=None, metavar="FILE",
                     help="JSON object of extra capabilities, passed through (udid, farm "
                          "options...); they override the kit's defaults")
    run.add_argument("--poison", action="store_true",
                     help="iOS: Apple malloc debugging through mobile: launchApp's "
                          "environment (Android: use a GWP-ASan/HWASan build)")
    run.add_argument("--deliver", choices=("url", "args"), default="url",
                     help="iOS: scenario as the deep link (default) or as launch arguments")
    run.add_argument("--status-id", default=appium.STATUS_TEST_ID, metavar="TESTID",
                     help="testID of the app's status element (default %(default)s)")
    run.add_argument("--poll", type=positive_seconds, default=0.25, metavar="S",
                     help="seconds between polls (default %(default)g)")
    run.add_argument("--report-wait", type=positive_seconds, default=appium.DEFAULT_REPORT_WAIT_S,
                     metavar="S", help="seconds to wait for crash text after a death "
                                       "(default %(default)g)")
    run.add_argument("--appium-shell", action="store_true",
                     help="Android: read dumpsys dropbox and exit-info after each launch "
                          "through mobile: shell (the server needs --allow-insecure="
                          "uiautomator2:adb_shell; on by itself with --farm saucelabs and "
                          "--farm headspin's adb API)")
    run.add_argument("--error-grace", type=seconds_arg, default=appium.DEFAULT_ERROR_GRACE_S,
                     metavar="S", help="seconds a death after the app's error line still "
                                       "counts as a crash (default %(default)g)")
    run.add_argument("--reconnect-timeout", type=seconds_arg, default=60.0, metavar="S",
                     help="seconds to wait for a locked device to be unlocked "
                          "(default %(default)g)")


def config_from_args(args: argparse.Namespace, timeout_s: float) -> AppiumRunConfig:
    """The :class:`~kit.targets.appium.AppiumRunConfig` of ``run appium``.

    Raises:
        UsageError: ``--caps`` is not a JSON object file; ``--appium-shell`` on iOS.
    """
    session = appium.AppiumConfig(server_url=args.server,
                                  platform=appium.Platform(args.platform), app_id=args.app_id,
                                  caps=load_caps(args.caps), app=args.app, poison=args.poison,
                                  deliver=args.deliver, status_test_id=args.status_id,
                                  poll_s=args.poll, report_wait_s=args.report_wait,
                                  error_grace_s=args.error_grace,
                                  shell=_shell_route(args),
                                  shell_api=getattr(args, "farm_api", None)
                                  if getattr(args, "farm", None) == "headspin" else None,
                                  farm=_farm_config(args),
                                  reconnect_s=args.reconnect_timeout)
    return AppiumRunConfig(session=session, timeout_s=timeout_s)


def _farm_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--farm`` and its settings that are no secret (credentials live in the environment
    only), for ``campaign.json``."""
    if not getattr(args, "farm", None):
        return None
    from ...farms.options import check_farm_args

    check_farm_args(args)  # a bad --farm-api / --farm-ref: refused before the campaign
    return {"name": args.farm, "api": args.farm_api, "region": args.farm_region,
            "ref": args.farm_ref, "steps": args.farm_steps}


def _shell_route(args: argparse.Namespace) -> str | None:
    """The shell route (Android only): ``--appium-shell``, else the ``--farm``'s own
    (:data:`kit.farms.shell.FARM_ROUTES`), else none.

    Raises:
        UsageError: ``--appium-shell`` with ``--platform ios``.
    """
    from ...farms.shell import FARM_ROUTES

    android = args.platform == appium.Platform.ANDROID.value
    if getattr(args, "appium_shell", False):
        if not android:
            raise UsageError("--appium-shell reads Android's dumpsys: it needs --platform "
                             "android", "leave --appium-shell out on iOS")
        return "mobile-shell"
    return FARM_ROUTES.get(getattr(args, "farm", None) or "") if android else None


def load_caps(path: str | None) -> dict[str, Any]:
    """Read ``--caps``: a JSON object (W3C capabilities; vendor keys such as
    ``bstack:options`` pass through).

    Raises:
        UsageError: the file is missing, not JSON, or not an object.
    """
    if not path:
        return {}
    from ..._bounded import MiB, read_bytes_bounded

    raw = read_bytes_bounded(path, MiB, what="--caps", missing_hint="pass a JSON file of "
                                                                     "capabilities")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"--caps {path} is not valid JSON: {str(exc)[:100]}",
                         "fix the file (a JSON object)") from None
    if not isinstance(data, dict):
        raise UsageError(f"--caps {path} is not a JSON object", "e.g. {\"appium:udid\": \"...\"}")
    return data


def setup_target(args: argparse.Namespace, log: Callable[[str], None] = lambda _m: None
                 ) -> PreparedTarget:
    """Prepare an Appium target from parsed ``coldstart run appium`` arguments (checks the
    server, opens the session): what a program that drives the launchers itself calls.

    Raises:
        UsageError: see :meth:`kit.targets.appium.AppiumTarget.prepare`.
        InfraError: the server went away while the session was being created.
    """
    from ...scenario import parse_scenario

    timeout_s = args.timeout if args.timeout is not None else PLUGIN.default_timeout_s
    return AppiumTarget().prepare(config_from_args(args, timeout_s),
                                  parse_scenario(args.scenario or ""), log)


#: the Appium target's plug-in (the registry's entry)
PLUGIN = AppiumPlugin()
