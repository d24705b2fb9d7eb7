"""The registry of targets: one :class:`~kit.launch.TargetPlugin` object per target name
(pytest-xdist's scheduler protocol is the model: one protocol, one implementation per
target, picked by name).

The registry sits above the targets and below the front ends: the CLI and the pytest plugin
ask it for a plug-in (:func:`get_plugin`), build the request through
:func:`kit.campaign.build.build_request` and hand the plug-in to the campaign session
(:func:`kit.campaign.session.run_session`); none of them knows a target by name. Each entry
names where its plug-in object lives, imported on first use.

Adding a target: its package under ``kit/targets/`` with a plug-in object (a
:class:`~kit.launch.TargetPlugin` subclass's instance) and one entry in :data:`BUILTIN`
(docs/architecture.md).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import UsageError
from ..launch import TargetPlugin

__all__ = ["BUILTIN", "get_plugin", "plugins", "target_names"]

#: Built-in targets, in ``--help`` order: name -> ``module:attribute`` of its plug-in.
BUILTIN: dict[str, str] = {
    "host": "kit.targets.host.options:PLUGIN",
    "rn-host": "kit.targets.rnhost.options:PLUGIN",
    "android": "kit.targets.android.options:PLUGIN",
    "ios-sim": "kit.targets.ios.options:SIMULATOR",
    "ios-device": "kit.targets.ios.options:DEVICE",
    "appium": "kit.targets.appium.options:PLUGIN",
}


def target_names() -> tuple[str, ...]:
    """The registered target names, in ``--help`` order."""
    return tuple(BUILTIN)


def get_plugin(name: str) -> TargetPlugin[Any]:
    """The plug-in of the target called ``name``.

    Raises:
        UsageError: no such target.
    """
    where = BUILTIN.get(name)
    if where is None:
        raise UsageError(f"unknown target {name[:40]!r}", f"use one of {', '.join(BUILTIN)}")
    module, attribute = where.split(":")
    plugin = getattr(importlib.import_module(module), attribute)
    if not isinstance(plugin, TargetPlugin) or plugin.name != name:
        raise UsageError(f"target {name!r} is not defined by {module}", "reinstall the kit")
    return plugin


def plugins() -> tuple[TargetPlugin[Any], ...]:
    """Every registered plug-in, in ``--help`` order."""
    return tuple(get_plugin(name) for name in BUILTIN)
