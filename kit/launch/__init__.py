"""The contract between the targets and the campaign: a :class:`TargetPlugin` (one per
target, in the registry) owns its options, its typed config and ``prepare``, which returns
a :class:`PreparedTarget` (its launchers, build identity, provenance and typed run setup,
:class:`~kit.store.meta.RunSetup`); a :class:`Launcher` makes one cold launch per
:class:`LaunchContext`. Both ``kit/targets/`` and ``kit/campaign/`` import it; it imports
neither."""

from __future__ import annotations

from .launcher import LaunchContext, Launcher
from .plugin import BaselineBuild, TargetPlugin, config_from_json, config_to_json
from .target import LogFn, PreparedTarget, Target

__all__ = ["LaunchContext", "Launcher", "LogFn", "PreparedTarget", "Target", "TargetPlugin",
           "BaselineBuild", "config_from_json", "config_to_json"]
