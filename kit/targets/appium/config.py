"""What an Appium campaign is configured with, and the capabilities the kit asks for."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

__all__ = ["Platform", "AppiumConfig", "build_capabilities", "STATUS_TEST_ID",
           "DEFAULT_REPORT_WAIT_S", "DEFAULT_ERROR_GRACE_S"]

#: The React Native ``testID`` of the element showing the last protocol line (docs/app.md;
#: rn-app/src/LaunchScreen.tsx).
STATUS_TEST_ID = "coldstart-status"
#: Seconds to wait for crash text in the log after a death.
DEFAULT_REPORT_WAIT_S = 10.0
#: Seconds a death after the app's ``error`` line still makes the launch a crash (a fatal
#: JS error is logged, then React Native ends the app).
DEFAULT_ERROR_GRACE_S = 2.0


class Platform(str, enum.Enum):
    """The device platform behind the Appium session."""

    ANDROID = "android"
    IOS = "ios"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class AppiumConfig:
    """What an Appium campaign needs.

    Attributes:
        server_url: the server, e.g. ``http://127.0.0.1:4723`` or a farm's
            ``https://USER:KEY@hub.example/wd/hub`` (credentials are redacted everywhere).
        platform: :class:`Platform`.
        app_id: Android package or iOS bundle id of the app.
        caps: extra capabilities (from ``--caps FILE``), passed through unchanged; they
            override the kit's defaults (:func:`build_capabilities`).
        app: path or URL of the app to install (``appium:app``), or ``None`` when it is
            installed already (or named in ``caps``, as farms do with uploaded apps).
        poison: heap poisoning (iOS: :data:`kit.targets.ios.POISON_ENV` through
            ``mobile: launchApp``; Android needs a GWP-ASan or HWASan build instead).
        deliver: ``url`` (deep link) or ``args`` (iOS launch arguments).
        status_test_id: the status element's testID.
        poll_s: seconds between polls of the element, the app state and the log.
        report_wait_s: seconds to wait for crash text after a death.
        error_grace_s: seconds a death after an ``error`` line still counts as a crash.
        command_timeout_s: HTTP timeout of one client command.
        shell: the in-session shell route (:mod:`kit.farms.shell`: ``mobile-shell``,
            ``headspin-adb``), or ``None`` for no shell pass.
        shell_api: the API base of a route that has one (HeadSpin), or ``None``.
        farm: the ``--farm`` settings that are no secret (``name``, ``api``, ``region``,
            ``ref``, ``steps``), kept in ``campaign.json`` for ``coldstart farm pull``;
            ``None`` without ``--farm``.
        reconnect_s: seconds to wait for a locked device to be unlocked.
    """

    server_url: str
    platform: Platform
    app_id: str
    caps: dict[str, Any] = dataclasses.field(default_factory=dict)
    app: str | None = None
    poison: bool = False
    deliver: str = "url"
    status_test_id: str = STATUS_TEST_ID
    poll_s: float = 0.25
    report_wait_s: float = DEFAULT_REPORT_WAIT_S
    error_grace_s: float = DEFAULT_ERROR_GRACE_S
    command_timeout_s: float = 120.0
    shell: str | None = None
    shell_api: str | None = None
    farm: dict[str, Any] | None = None
    reconnect_s: float = 60.0


def build_capabilities(config: AppiumConfig) -> dict[str, Any]:
    """The session's capabilities: the kit's defaults for repeated cold launches
    (``noReset``, ``autoLaunch`` off, a ``newCommandTimeout`` longer than a launch) for
    UiAutomator2 or XCUITest, then ``config.caps`` on top (a farm's own keys pass through)."""
    caps: dict[str, Any] = {"appium:noReset": True, "appium:fullReset": False,
                            "appium:autoLaunch": False, "appium:newCommandTimeout": 300}
    if config.platform is Platform.ANDROID:
        caps.update({"platformName": "Android", "appium:automationName": "UiAutomator2",
                     "appium:appPackage": config.app_id})
    else:
        caps.update({"platformName": "iOS", "appium:automationName": "XCUITest",
                     "appium:bundleId": config.app_id})
    if config.app:
        caps["appium:app"] = config.app
    caps.update(config.caps)
    return caps
