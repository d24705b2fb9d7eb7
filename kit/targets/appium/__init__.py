"""The Appium target: cold launches through a UiAutomator2 (Android) or XCUITest (iOS)
session, on a local server or a remote grid / device farm.

Modules: :mod:`.config` (:class:`AppiumConfig`, the capabilities), :mod:`.session` (the
transport: the server URL, ``/status``, :class:`AppiumSession` with every client failure
mapped once), :mod:`.launcher` (:class:`AppiumLauncher`: launch, observe, collect); this
package holds :class:`AppiumRunConfig`, :class:`AppiumTarget` (:data:`TARGETS`) and
re-exports the names above.

Credentials in the server URL (``https://USER:KEY@hub/wd/hub``) and in capabilities are given
to the client, never written: every message, record and option stored goes through
:class:`kit.redact.Redactor`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...argtypes import APP_ID_RE
from ...errors import InfraError, UsageError
from ...scenario import Scenario
from ...launch import LogFn, PreparedTarget
from ...store.identity import BuildIdentity
from ...store.meta import RunSetup
from .config import (DEFAULT_ERROR_GRACE_S, DEFAULT_REPORT_WAIT_S, STATUS_TEST_ID,
                     AppiumConfig, Platform, build_capabilities)
from .launcher import AppiumLauncher
from .session import AppiumSession, AppState, ServerURL, check_server, parse_server_url

__all__ = ["AppiumRunConfig", "AppiumTarget", "TARGETS", "APP_ID_RE", "AppiumConfig",
           "Platform", "build_capabilities", "AppiumSession", "AppState", "ServerURL",
           "check_server", "parse_server_url", "AppiumLauncher", "STATUS_TEST_ID",
           "DEFAULT_REPORT_WAIT_S", "DEFAULT_ERROR_GRACE_S", "UsageError", "InfraError"]



@dataclasses.dataclass(frozen=True)
class AppiumRunConfig:
    """An Appium campaign's settings.

    Attributes:
        session: the Appium session's settings (:class:`AppiumConfig`:
            server URL, platform, app id, capabilities, poison, delivery, polling).
        timeout_s: a launch's timeout (kept in the campaign's options).
    """

    session: AppiumConfig
    timeout_s: float = 90.0


class AppiumTarget:
    """:class:`kit.launch.Target` for a device behind an Appium server."""

    name = "appium"

    def prepare(self, config: AppiumRunConfig, scenario: Scenario, log: LogFn
                ) -> PreparedTarget:
        """Check the server and open the session (credentials in the server URL and the
        capabilities are redacted from every log and record from here on).

        Raises:
            UsageError: a bad app id, a server that is not Appium, capabilities it refuses,
                a driver without app lifecycle. InfraError: the server went away.
        """
        from ...redact import install_log_redaction

        cfg = config.session
        redactor = install_log_redaction(urls=[cfg.server_url])
        redactor.add_secrets_from(cfg.caps)
        if not APP_ID_RE.match(cfg.app_id):
            raise UsageError(f"--app-id {cfg.app_id[:80]!r} is not a package or bundle id",
                             "e.g. org.coldstart.app")
        import os

        from ...farms.shell import make_shell_factory

        udid = cfg.caps.get("appium:udid") or cfg.caps.get("udid")
        factory = make_shell_factory(cfg.shell, serial=str(udid) if udid else None,
                                     env=dict(os.environ), api=cfg.shell_api,
                                     redactor=redactor)
        info = check_server(cfg.server_url, redactor)
        version = (info.get("build") or {}).get("version")
        launcher = AppiumLauncher(cfg, redactor, shell_factory=factory,
                                  log=lambda m: log(f"appium: {m}"))
        launcher.open()  # a refusal is the only line the user sees
        log(f"appium: server {redactor.url(cfg.server_url)} "
            f"(Appium {version or 'unknown version'}), session open")
        session = launcher.session
        platform = cfg.platform.value
        options = redactor.value({
            "server": redactor.url(cfg.server_url), "server_version": version,
            "platform": platform, "capabilities": build_capabilities(cfg),
            "poison": "apple-malloc" if cfg.poison and platform == "ios" else None,
            "deliver": cfg.deliver, "status_test_id": cfg.status_test_id,
            "poll_s": cfg.poll_s, "report_wait_s": cfg.report_wait_s,
            "reconnect_s": cfg.reconnect_s,
            "timeout_s": config.timeout_s, "log_types": launcher.log_types,
            "shell": cfg.shell, "farm": cfg.farm})
        device_caps = session.capabilities if session is not None else {}
        devices = [redactor.value({
            "id": launcher.device, "kind": f"appium-{platform}",
            "session_id": session.session_id if session is not None else None,
            "platform_version": device_caps.get("platformVersion") or
            device_caps.get("appium:platformVersion"),
            "device_name": device_caps.get("deviceName") or
            device_caps.get("appium:deviceName")})]
        build = redactor.value({"app": cfg.app, "app_id": cfg.app_id})
        return PreparedTarget(target=self.name, launchers=[launcher], build=build,
                              options=options, devices=devices, close=launcher.close,
                              setup=RunSetup(timeout_s=config.timeout_s,
                                             poison=options["poison"],
                                             compared={"poison": options["poison"]},
                                             app_id=build["app_id"],
                                             farm=options["farm"]),
                              identity=BuildIdentity(artifact="app",
                                                     path=build["app"] or build["app_id"]))


TARGETS = (AppiumTarget(),)
