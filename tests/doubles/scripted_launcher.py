"""ScriptedLauncherDouble: a launcher that returns scripted outcomes, for campaign-loop tests.

It imitates what a real launcher returns (kit/targets/host/launcher.py): one record per call
with the given outcome, an InfraError raised like a lost device, or (``"persistent"``) the
persistent infra-error record the host launcher makes when a resource limit kills the workload
(recorded in tests/test_host.py: SIGXFSZ under ``ulimit -f``). It never runs anything.
"""

from __future__ import annotations

import threading
from typing import Callable

from kit.launch import LaunchContext
from kit.errors import InfraError
from kit.records import PERSISTENT_INFRA_KEY, LaunchRecord, Outcome

#: the error of the host launcher's record for a workload killed by RLIMIT_FSIZE
RESOURCE_LIMIT_ERROR = ("killed by SIGXFSZ: the file size limit RLIMIT_FSIZE (30 blocks of "
                        "1024 bytes) was reached, not an app crash; raise it "
                        "(`ulimit -f unlimited`) and resume")


class ScriptedLauncherDouble:
    """Returns ``script(index, attempt)`` outcomes; ``"raise"`` raises InfraError (with
    ``infra_message``, as a transport's error that echoes its URL would); ``"persistent"``
    returns an infra-error record that every retry would meet again.

    ``calls`` lists every ``(index, attempt)`` it was asked for; ``on_launch`` (optional)
    runs before each launch, e.g. to interrupt the campaign.
    """

    target = "host"

    def __init__(self, script: Callable[[int, int], str], device: str = "double-1",
                 on_launch: Callable[[LaunchContext], None] | None = None,
                 infra_message: str = "device offline") -> None:
        self.script = script
        self.infra_message = infra_message
        self.device = device
        self.on_launch = on_launch
        self.calls: list[tuple[int, int]] = []
        self.aborted = threading.Event()

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        self.calls.append((ctx.index, ctx.attempt))
        if self.on_launch is not None:
            self.on_launch(ctx)
        outcome = self.script(ctx.index, ctx.attempt)
        if outcome == "raise":
            raise InfraError(self.infra_message, "reconnect it")
        (ctx.artifacts_dir / "stdout.txt").write_text("scripted\n")
        if outcome == "persistent":
            return LaunchRecord(launch_id=ctx.launch_id, index=ctx.index, attempt=ctx.attempt,
                                label=ctx.label, target=self.target, device=self.device,
                                scenario=ctx.scenario.to_url(), outcome=Outcome.INFRA_ERROR,
                                error=RESOURCE_LIMIT_ERROR, last_phase="start",
                                artifacts=[f"{ctx.artifacts_rel}/stdout.txt"],
                                extra={PERSISTENT_INFRA_KEY: True})
        return LaunchRecord(launch_id=ctx.launch_id, index=ctx.index, attempt=ctx.attempt,
                            label=ctx.label, target=self.target, device=self.device,
                            scenario=ctx.scenario.to_url(), outcome=Outcome(outcome),
                            last_phase="done" if outcome == "completed" else "start",
                            artifacts=[f"{ctx.artifacts_rel}/stdout.txt"])

    def abort(self) -> None:
        self.aborted.set()
