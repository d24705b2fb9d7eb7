"""What a launcher is: one device that makes one cold launch per call, given a
:class:`LaunchContext` (the campaign loop, :mod:`kit.campaign.loop`, drives one worker per
launcher; each target's launchers implement :class:`Launcher`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Protocol

from ..records import LaunchRecord
from ..scenario import Scenario

__all__ = ["LaunchContext", "Launcher"]


@dataclasses.dataclass(frozen=True)
class LaunchContext:
    """Everything a launcher needs for one launch.

    Attributes:
        scenario: the campaign's scenario bound to this launch's id.
        index, attempt, label: see :class:`~kit.records.LaunchRecord`.
        artifacts_dir: absolute path of ``artifacts/<launch-id>/`` (created, empty).
        artifacts_rel: the same path relative to the campaign dir (for records).
        timeout_s: seconds the launch may take before it counts as ``hung``.
    """

    scenario: Scenario
    index: int
    attempt: int
    label: str
    artifacts_dir: Path
    artifacts_rel: str
    timeout_s: float

    @property
    def launch_id(self) -> str:
        assert self.scenario.id is not None
        return self.scenario.id


class Launcher(Protocol):
    """One target device that can cold-launch the app (one worker thread drives each).

    ``target`` is the target name (``host``, ``android``...), ``device`` the device id.
    """

    target: str
    device: str

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """Make one cold launch and return its record. Must not raise for anything the app
        does; raise :class:`~kit.errors.InfraError` (or return an ``infra-error`` record)
        when the launch could not be made or observed."""
        ...

    def abort(self) -> None:
        """Stop a launch in flight (called from another thread on Ctrl-C)."""
        ...
