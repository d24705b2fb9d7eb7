"""coldstart: cold-launch integration test kit for mobile ML bindings.

It proves, with statistics, whether an onnxruntime build still crashes when several
XNNPACK sessions are created at once in a fresh process (onnxruntime issue #32461).
The public API is re-exported here; modules starting with ``_`` are private.
"""

from __future__ import annotations

from .version import __version__

from .campaign import Campaign, load_campaign, run_campaign
from .launch import LaunchContext, Launcher
from .errors import ColdstartError, DataError, ExitCode, InfraError, UsageError
from .protocol import ProtocolEvent, format_event, parse_line
from .records import LaunchRecord, Outcome, SessionTiming
from .scenario import PHASES, Scenario, parse_scenario

__all__ = [
    "__version__",
    "Campaign", "LaunchContext", "Launcher", "load_campaign", "run_campaign",
    "ColdstartError", "DataError", "ExitCode", "InfraError", "UsageError",
    "ProtocolEvent", "format_event", "parse_line",
    "LaunchRecord", "Outcome", "SessionTiming",
    "PHASES", "Scenario", "parse_scenario",
]
