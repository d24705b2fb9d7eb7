"""``coldstart run appium``: cold launches through an Appium server (local, grid or farm).

Bad input exits 2 with one line before anything runs: an unreachable server, capabilities
the server refuses, a driver without app lifecycle commands, a bad ``--caps`` file or app
id. Credentials in ``--server`` and secret-looking capabilities are redacted from every
line printed and everything stored (:mod:`kit.redact`).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any, Callable

from ..cli_common import add_campaign_options, scenario_from_args
from ..errors import UsageError
from ..redact import install_log_redaction
from . import appium
from ..cli_common import TargetSetup, run_setup, seconds_arg

__all__ = ["register", "setup_target", "load_caps", "APP_ID_RE"]

#: Android package names and iOS bundle ids.
APP_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_-]+)+$")


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``run appium``."""
    run = run_targets.add_parser(
        "appium", help="cold-launch the app through an Appium server (UiAutomator2, "
                       "XCUITest; local, grid or device farm)",
        description="One session per device; per launch: terminate, start with the "
                    "scenario's deep link (iOS: launch arguments and environment with "
                    "--poison), poll the status element, the app state and the platform "
                    "log, and collect the crash text of any death.")
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
    run.add_argument("--poll", type=_duration, default=0.25, metavar="S",
                     help="seconds between polls (default %(default)g)")
    run.add_argument("--report-wait", type=_duration, default=appium.DEFAULT_REPORT_WAIT_S,
                     metavar="S", help="seconds to wait for crash text after a death "
                                       "(default %(default)g)")
    add_campaign_options(run, default_timeout_s=90.0)
    run.set_defaults(func=_run, setup=_setup)


def load_caps(path: str | None) -> dict[str, Any]:
    """Read ``--caps``: a JSON object (W3C capabilities; vendor keys such as
    ``bstack:options`` pass through).

    Raises:
        UsageError: the file is missing, not JSON, or not an object.
    """
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"cannot read --caps {path}: {exc.strerror}",
                         "pass a JSON file of capabilities") from None
    except ValueError as exc:
        raise UsageError(f"--caps {path} is not valid JSON: {exc}",
                         "fix the file (a JSON object)") from None
    if not isinstance(data, dict):
        raise UsageError(f"--caps {path} is not a JSON object", "e.g. {\"appium:udid\": \"...\"}")
    return data


def _log(message: str) -> None:
    print(f"appium: {message}", flush=True)


def _setup(args: argparse.Namespace, log: Callable[[str], None] = _log) -> TargetSetup:
    caps = load_caps(args.caps)
    redactor = install_log_redaction(urls=[args.server])
    redactor.add_secrets_from(caps)
    if not APP_ID_RE.match(args.app_id):
        raise UsageError(f"--app-id {args.app_id!r} is not a package or bundle id",
                         "e.g. org.coldstart.app")
    info = appium.check_server(args.server, redactor)
    version = (info.get("build") or {}).get("version")
    log(f"server {redactor.url(args.server)} (Appium {version or 'unknown version'})")
    config = appium.AppiumConfig(server_url=args.server,
                                 platform=appium.Platform(args.platform), app_id=args.app_id,
                                 caps=caps, app=args.app, poison=args.poison,
                                 deliver=args.deliver, status_test_id=args.status_id,
                                 poll_s=args.poll, report_wait_s=args.report_wait)
    launcher = appium.AppiumLauncher(config, redactor)
    launcher.open()
    session = launcher.session
    options = redactor.value({
        "server": redactor.url(args.server), "server_version": version,
        "platform": args.platform, "capabilities": appium.build_capabilities(config),
        "poison": "apple-malloc" if args.poison and args.platform == "ios" else None,
        "deliver": args.deliver, "status_test_id": args.status_id, "poll_s": args.poll,
        "report_wait_s": args.report_wait, "timeout_s": args.timeout,
        "log_types": launcher.log_types})
    device_caps = session.capabilities if session is not None else {}
    devices = [redactor.value({
        "id": launcher.device, "kind": f"appium-{args.platform}",
        "session_id": session.session_id if session is not None else None,
        "platform_version": device_caps.get("platformVersion") or
        device_caps.get("appium:platformVersion"),
        "device_name": device_caps.get("deviceName") or device_caps.get("appium:deviceName")})]
    build = redactor.value({"app": args.app, "app_id": args.app_id})
    return TargetSetup(target="appium", launchers=[launcher], build=build, options=options,
                       devices=devices, close=launcher.close)


def setup_target(args: argparse.Namespace, log: Callable[[str], None] = _log) -> TargetSetup:
    """Prepare an Appium target from parsed ``coldstart run appium`` arguments (checks the
    server, opens the session).

    Raises:
        UsageError: see the module doc.
        InfraError: the server went away while the session was being created.
    """
    return _setup(args, log)


def _run(args: argparse.Namespace) -> int:
    scenario_from_args(args)  # a bad scenario is refused before the session opens
    return run_setup(args, _setup(args))


def _duration(text: str) -> float:
    value = seconds_arg(text)
    if value == 0:
        raise argparse.ArgumentTypeError("0 is out of range (0, 600] seconds")
    return value
