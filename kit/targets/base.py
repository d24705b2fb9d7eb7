"""The ``Target`` protocol and the registry of targets (pytest-xdist's scheduler protocol is
the model: one protocol, one module per implementation, picked by name).

A target turns a typed configuration into a :class:`PreparedTarget`: the launchers (one per
device, each a :class:`kit.campaign.Launcher`), the build provenance and launch options that
``campaign.json`` keeps, and ``open``/``close``/``finish`` hooks around the campaign. The
campaign session (:mod:`kit.campaign.session`) drives it; the two front ends, the CLI and
the pytest plugin, only build its configuration, through the target's options module.

Adding a target: a module under ``kit/targets/`` whose ``TARGETS`` lists its
:class:`Target` (a config dataclass and ``prepare``), an options module beside it with
``add_arguments(parser, name)`` and ``config_from_args(name, args, meta, timeout_s)`` (see
:class:`TargetEntry`), and one entry in :data:`BUILTIN`.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Protocol, Sequence

from ..store.meta import RunSetup
from ..errors import UsageError
from ..records import LaunchRecord
from ..scenario import Scenario

__all__ = ["LogFn", "Target", "PreparedTarget", "TargetEntry", "BUILTIN", "get_target",
           "target_entry", "target_names"]

#: One line of progress for the user (the CLI prints it on stderr).
LogFn = Callable[[str], None]


def _nothing() -> None:
    return None


@dataclasses.dataclass
class PreparedTarget:
    """A target ready to launch: what a campaign needs from it.

    Attributes:
        target: the target name (``host``, ``android``, ``ios-sim``...).
        launchers: one :class:`kit.campaign.Launcher` per device; they run in parallel.
        build: build provenance for ``campaign.json`` (library and APK hashes, runtime...).
        options: the options that shape launches (poison, timeouts, delivery...); a resumed
            campaign must have the same.
        devices: one dict per device for ``campaign.json``.
        open: called once before the first launch (sessions, environment).
        close: called once after the campaign, whatever happened.
        finish: called after the launches with every record of the campaign; returns
            provenance known only then (e.g. the ORT version the app reported), merged into
            ``build``.
        learned: the ``build`` keys ``finish`` returns: a resumed campaign may learn other
            values for them (they are not part of the setup a resume must match).

    :attr:`setup` is the typed view of ``options`` (:class:`kit.store.meta.RunSetup`)
    that the session reads (whether a witness or a detector watched the launches).
    """

    target: str
    launchers: list[Any]
    build: dict[str, Any]
    options: dict[str, Any]
    devices: list[dict[str, Any]]
    open: Callable[[], None] = _nothing
    close: Callable[[], None] = _nothing
    finish: Callable[[Sequence[LaunchRecord]], dict[str, Any]] = lambda _records: {}
    learned: tuple[str, ...] = ()

    @property
    def setup(self) -> RunSetup:
        return RunSetup.from_options(self.options)


class Target(Protocol):
    """One kind of target.

    Attributes:
        name: the name on the command line and in records (``host``...).
    """

    name: str

    def prepare(self, config: Any, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """Check ``config`` (and that ``scenario`` can run here) and make the target ready
        (devices found, app installed...); ``log`` takes progress lines for the user.

        Raises:
            UsageError: a bad configuration; InfraError: the infrastructure failed.
        """
        ...


@dataclasses.dataclass(frozen=True)
class TargetEntry:
    """A registered target: where its :class:`Target` and its options module live (imported
    on first use, so that ``coldstart --help`` stays fast), and one line for ``coldstart run
    --help``.

    The options module has ``description(name)``, ``default_timeout_s(name)``,
    ``add_arguments(parser, name)``, ``config_from_args(name, args, meta, timeout_s)`` and
    optionally ``baseline_from_args``; both front ends (the CLI, the pytest plugin) read a
    target's options through it."""

    name: str
    module: str
    options_module: str
    description: str


#: Built-in targets, in ``--help`` order.
BUILTIN: dict[str, TargetEntry] = {e.name: e for e in (
    TargetEntry("host", "kit.targets.host", "kit.targets.host.options",
                "cold-launch the native workload on this machine"),
    TargetEntry("android", "kit.targets.android", "kit.targets.android.options",
                "cold-launch the app on Android devices and emulators over adb"),
    TargetEntry("ios-sim", "kit.targets.ios", "kit.targets.ios.options",
                "cold-launch the app on an iOS simulator (xcrun simctl)"),
    TargetEntry("ios-device", "kit.targets.ios", "kit.targets.ios.options",
                "cold-launch the app on an iOS device (xcrun devicectl)"),
    TargetEntry("appium", "kit.targets.appium", "kit.targets.appium.options",
                "cold-launch the app through an Appium server (UiAutomator2, XCUITest; "
                "local, grid or device farm)"),
)}


def target_names() -> tuple[str, ...]:
    """The registered target names, in ``--help`` order."""
    return tuple(BUILTIN)


def target_entry(name: str) -> TargetEntry:
    """The registry entry of ``name``.

    Raises:
        UsageError: no such target.
    """
    entry = BUILTIN.get(name)
    if entry is None:
        raise UsageError(f"unknown target {name[:40]!r}", f"use one of {', '.join(BUILTIN)}")
    return entry


def get_target(name: str) -> Target:
    """The :class:`Target` called ``name`` (its module's ``TARGETS``).

    Raises:
        UsageError: no such target.
    """
    entry = target_entry(name)
    for target in importlib.import_module(entry.module).TARGETS:
        if target.name == name:
            return target
    raise UsageError(f"target {name!r} is not defined by {entry.module}", "reinstall the kit")
