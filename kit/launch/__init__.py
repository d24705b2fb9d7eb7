"""The contract between the targets and the campaign: a :class:`Launcher` makes one cold
launch per :class:`LaunchContext`; a :class:`Target` prepares a :class:`PreparedTarget`
(its launchers, build identity and launch options). Both ``kit/targets/`` and
``kit/campaign/`` import it; it imports neither."""

from __future__ import annotations

from .launcher import LaunchContext, Launcher
from .target import LogFn, PreparedTarget, Target

__all__ = ["LaunchContext", "Launcher", "LogFn", "PreparedTarget", "Target"]
