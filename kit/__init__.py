"""coldstart: cold-launch integration test kit for mobile ML bindings.

It proves, with statistics, whether an onnxruntime build still crashes when several
XNNPACK sessions are created at once in a fresh process (onnxruntime issue #32461).
The public API is re-exported here; modules starting with ``_`` are private.
"""

from __future__ import annotations

from .version import __version__

from typing import TYPE_CHECKING, Any

from .errors import ColdstartError, DataError, ExitCode, InfraError, UsageError

if TYPE_CHECKING:
    from .campaign.loop import run_campaign
    from .launch import LaunchContext, Launcher
    from .protocol import ProtocolEvent, format_event, parse_line
    from .records import LaunchRecord, Outcome, SessionTiming
    from .scenario import PHASES, Scenario, parse_scenario
    from .store.store import Campaign, load_campaign

#: the public names imported on first use (PEP 562), so that ``import kit`` (every
#: ``coldstart`` command) stays light: name -> its module
_LAZY = {"Campaign": "kit.store.store", "load_campaign": "kit.store.store",
         "run_campaign": "kit.campaign.loop", "LaunchContext": "kit.launch",
         "Launcher": "kit.launch", "ProtocolEvent": "kit.protocol",
         "format_event": "kit.protocol", "parse_line": "kit.protocol",
         "LaunchRecord": "kit.records", "Outcome": "kit.records",
         "SessionTiming": "kit.records", "PHASES": "kit.scenario", "Scenario": "kit.scenario",
         "parse_scenario": "kit.scenario"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kit' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

__all__ = [
    "__version__",
    "Campaign", "LaunchContext", "Launcher", "load_campaign", "run_campaign",
    "ColdstartError", "DataError", "ExitCode", "InfraError", "UsageError",
    "ProtocolEvent", "format_event", "parse_line",
    "LaunchRecord", "Outcome", "SessionTiming",
    "PHASES", "Scenario", "parse_scenario",
]
