"""What a campaign session takes and gives: the typed request (:class:`CampaignRequest`, with
its rule :class:`RuleRequest`), the observer it reports to, and its result. Run one with
:func:`kit.campaign.session.run_session`."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any, Protocol, Sequence

from ..analysis.sprt import SprtDesign
from ..analysis.verdict import VerdictSettings
from ..errors import ExitCode
from ..records import LaunchRecord
from ..scenario import Scenario
from .loop import RetryPolicy

__all__ = ["RuleRequest", "CampaignRequest", "SessionObserver", "CampaignResult",
           "SessionResult", "compare_argv", "resume_command"]


@dataclasses.dataclass(frozen=True)
class RuleRequest:
    """``--until-verdict``: stop as soon as ``compare`` against ``baseline`` is settled.

    Attributes:
        baseline: the baseline campaign's directory.
        settings: the verdict settings (signature, alpha, ceiling).
        beta, design_rate: the sequential design (``design_rate`` None: ceiling/4).
        baseline_config: for an interleaved run, the target config of the baseline build;
            ``baseline`` is then made or continued alongside this run.
        baseline_options: what ``campaign.json`` keeps so that a resume goes on interleaved
            (e.g. ``{"baseline_runtime": "debian"}``).
    """

    baseline: Path
    settings: VerdictSettings = VerdictSettings()
    beta: float = 0.2
    design_rate: float | None = None
    baseline_config: Any = None
    baseline_options: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def interleaved(self) -> bool:
        return self.baseline_config is not None

    def design(self, launches: int) -> SprtDesign:
        rate = self.design_rate if self.design_rate is not None else self.settings.ceiling / 4
        return SprtDesign(self.settings.ceiling, rate, self.settings.alpha, self.beta, launches)


@dataclasses.dataclass(frozen=True)
class CampaignRequest:
    """One ``coldstart run``: what to launch, where, how often, and when to stop.

    Attributes:
        target: the target's name (:func:`kit.targets.base.get_target`).
        config: the target's own typed configuration.
        scenario: what each launch does (no ``id``: launch ids are the kit's).
        label: the build label.
        out: the campaign directory (new or empty; with ``resume``, the campaign's).
        launches: the launch slots planned (each build's at most, when interleaved).
        timeout_s: seconds before a launch counts as ``hung``.
        retry: how infra errors are retried.
        resume: go on with the campaign in ``out``.
        rule: ``--until-verdict``, or ``None``.
    """

    target: str
    config: Any
    scenario: Scenario
    label: str
    out: Path
    launches: int
    timeout_s: float
    retry: RetryPolicy = RetryPolicy()
    resume: bool = False
    rule: RuleRequest | None = None


class SessionObserver(Protocol):
    """What a session reports as it goes (the CLI prints it on stderr)."""

    def note(self, message: str) -> None:
        """One line for the user (setup steps, the rule's design, warnings)."""

    def started(self, title: str, total: int, records: Sequence[LaunchRecord]) -> None:
        """Launches begin: ``total`` slots in all, ``records`` already made (resume)."""

    def recorded(self, record: LaunchRecord) -> None:
        """One record was appended."""


@dataclasses.dataclass(frozen=True)
class CampaignResult:
    """How one campaign of the session ended.

    Attributes:
        path, label: the campaign.
        planned: its launch slots.
        counted: slots with a counted record.
        abandoned: planned slots without one (every attempt an infra error, the retry
            budget spent, or an unfinished rule-less run); 0 when its rule ended the run.
        infra_errors: infra-error records made in this session.
    """

    path: Path
    label: str
    planned: int
    counted: int
    abandoned: int
    infra_errors: int


@dataclasses.dataclass(frozen=True)
class SessionResult:
    """What a session did: its campaigns (baseline first when interleaved), how the rule
    ended, and the exit code (0 ran; 3 when planned launches were abandoned or nothing could
    be counted)."""

    campaigns: tuple[CampaignResult, ...]
    rule_stopped: bool | None = None
    rule_why: str | None = None
    compare: tuple[str, ...] | None = None

    @property
    def abandoned(self) -> int:
        return sum(c.abandoned for c in self.campaigns)

    @property
    def exit_code(self) -> ExitCode:
        if self.abandoned or not any(c.counted for c in self.campaigns):
            return ExitCode.INFRA
        return ExitCode.OK

    def abandoned_text(self, resume_argv: str) -> str | None:
        """``"4 of 15 planned launches were abandoned ..."`` with the resume command, or
        ``None``."""
        lost = [c for c in self.campaigns if c.abandoned]
        if not lost:
            return None
        parts = [f"{c.abandoned} of {c.planned} planned launches of {c.label}" for c in lost]
        return (f"{' and '.join(parts)} were abandoned: the infrastructure failed "
                f"({sum(c.infra_errors for c in lost)} infra errors this run, see "
                f"the infra-error rows); finish them with `{resume_argv}`")


def compare_argv(baseline: Path | str, candidate: Path | str,
                 settings: VerdictSettings) -> tuple[str, ...]:
    """The ``coldstart compare`` command that states a rule run's verdict."""
    return ("coldstart", "compare", str(baseline), str(candidate), "--signature",
            settings.signature, "--alpha", f"{settings.alpha:g}", "--ceiling",
            f"{settings.ceiling:g}")


def resume_command(target: str, out: Path | str) -> str:
    """The command that finishes a campaign: ``coldstart run <target> --resume --out DIR``."""
    return f"coldstart run {target} --resume --out {shlex.quote(str(out))}"
