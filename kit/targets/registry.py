"""The registry of targets (pytest-xdist's scheduler protocol is the model: one protocol,
:class:`kit.launch.Target`, one module per implementation, picked by name).

The registry sits above the targets and below the front ends: the CLI and the pytest plugin
look a target up here (:func:`get_target`) and hand it to the campaign session
(:func:`kit.campaign.session.run_session`), which knows no target by name. Each entry names
the target's module and its options module, imported on first use.

Adding a target: a module under ``kit/targets/`` whose ``TARGETS`` lists its
:class:`~kit.launch.Target` (a config dataclass and ``prepare``), an options module beside it
with ``add_arguments(parser, name)`` and ``config_from_args(name, args, meta, timeout_s)``
(see :class:`TargetEntry`), and one entry in :data:`BUILTIN` (docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import importlib

from ..errors import UsageError
from ..launch import Target

__all__ = ["TargetEntry", "BUILTIN", "get_target", "target_entry", "target_names"]


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
