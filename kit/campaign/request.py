"""What a campaign session takes and gives: the typed request (:class:`CampaignRequest`, with
its rule :class:`RuleRequest`), the observer it reports to, and its result. Run one with
:func:`kit.campaign.session.run_session`."""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any, Protocol, Sequence

from ..analysis.sprt import MAX_RULE_LAUNCHES, SprtDesign
from ..analysis.target import DEFAULT_SIGNATURE
from ..analysis.verdict import VerdictSettings
from ..errors import ExitCode, UsageError
from ..records import LaunchRecord
from ..scenario import Scenario
from .loop import RetryPolicy
from ..store.meta import CampaignMeta, RuleMeta, StageMeta
from ..store.store import Campaign, check_label

__all__ = ["RuleRequest", "CampaignRequest", "check_out_arg", "SessionObserver", "CampaignRun",
           "SessionResult", "compare_argv", "resume_command", "Given", "Resolved",
           "resolve_request", "resolve_rule", "resolve_stage", "RULE_DEFAULTS"]


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
        stop_at_first_below: against a finished baseline, the rule's variant that stops at
            its first "below the ceiling" (:attr:`kit.analysis.sprt.SprtDesign.stop_at_first_below`).
    """

    baseline: Path
    settings: VerdictSettings = VerdictSettings()
    beta: float = 0.2
    design_rate: float | None = None
    baseline_config: Any = None
    baseline_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    stop_at_first_below: bool = False

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
        target: the target's name (:func:`kit.targets.registry.get_plugin`).
        config: the target's own typed configuration.
        scenario: what each launch does (no ``id``: launch ids are the kit's).
        label: the build label.
        out: the campaign directory (new or empty; with ``resume``, the campaign's).
        launches: the launch slots planned (each build's at most, when interleaved).
        timeout_s: seconds before a launch counts as ``hung``.
        retry: how infra errors are retried.
        resume: go on with the campaign in ``out``.
        rule: ``--until-verdict``, or ``None``.
        stage: a baseline staged by design (``--stage N:R``, :mod:`kit.analysis.stage`),
            or ``None``.
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
    stage: StageMeta | None = None

    def __post_init__(self) -> None:
        """A request is checked as it is made, whoever makes it (the front ends, a library
        caller): a build label (:func:`kit.store.store.check_label`) and an ``out``."""
        check_label(self.label)
        check_out_arg(self.out)


def check_out_arg(out: Any) -> None:
    """Refuse an empty ``--out`` (``""``, blanks or ``.``).

    Raises:
        UsageError: ``--out is empty``.
    """
    from ..errors import UsageError

    if out is not None and (not str(out).strip() or str(out) == "."):
        raise UsageError("--out is empty", "give the campaign's directory, e.g. runs/baseline")


class SessionObserver(Protocol):
    """What a session reports as it goes (the CLI prints it on stderr)."""

    def note(self, message: str) -> None:
        """One line for the user (setup steps, the rule's design, warnings)."""

    def started(self, title: str, total: int, records: Sequence[LaunchRecord]) -> None:
        """Launches begin: ``total`` slots in all, ``records`` already made (resume)."""

    def recorded(self, record: LaunchRecord) -> None:
        """One record was appended."""


@dataclasses.dataclass(frozen=True)
class CampaignRun:
    """How one campaign of the session ran (the pytest plugin's
    :class:`kit.pytest_plugin.CampaignResult` is what a test gets back, with assertions).

    Attributes:
        path, label: the campaign.
        planned: its launch slots.
        counted: slots with a counted record.
        abandoned: planned slots without one (every attempt an infra error, the retry
            budget spent, or an unfinished rule-less run); 0 when its rule ended the run.
        infra_errors: infra-error records made in this session.
        campaign: the campaign as the session left it (meta and records in memory: a
            renderer needs no second read).
    """

    path: Path
    label: str
    planned: int
    counted: int
    abandoned: int
    infra_errors: int
    campaign: Campaign | None = None


@dataclasses.dataclass(frozen=True)
class SessionResult:
    """What a session did: its campaigns (baseline first when interleaved), how the rule
    ended, and the exit code (0 ran; 3 when planned launches were abandoned or nothing could
    be counted)."""

    campaigns: tuple[CampaignRun, ...]
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
    return ("coldstart", "compare", str(baseline), str(candidate), "--event",
            settings.signature, "--alpha", f"{settings.alpha:g}", "--ceiling",
            f"{settings.ceiling:g}")


def resume_command(target: str, out: Path | str) -> str:
    """The command that finishes a campaign: ``coldstart run <target> --resume --out DIR``."""
    return f"coldstart run {target} --resume --out {shlex.quote(str(out))}"


#: Defaults of the rule's settings (``None`` from a front end means "not given").
RULE_DEFAULTS: dict[str, Any] = {"signature": DEFAULT_SIGNATURE, "alpha": 0.05,
                                 "ceiling": 0.05, "beta": 0.2, "design_rate": None,
                                 "stop_at_first_below": False}


@dataclasses.dataclass(frozen=True)
class Given:
    """What a front end gave of a campaign's own values; ``None`` (or ``""`` for the
    scenario) means left out: on resume the campaign's value, else the default.

    Attributes:
        rule: ``--until-verdict``'s settings by :data:`RULE_DEFAULTS` key.
    """

    scenario: str = ""
    label: str | None = None
    launches: int | None = None
    timeout_s: float | None = None
    until_verdict: str | None = None
    rule: dict[str, Any] = dataclasses.field(default_factory=dict)
    stage: tuple[int, int] | None = None


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The values of a request, each given or (on resume) the campaign's, or the default."""

    scenario: Scenario
    label: str
    launches: int
    timeout_s: float
    rule: RuleRequest | None
    stage: StageMeta | None = None


def resolve_request(given: Given, meta: CampaignMeta | None, out: Any, *,
                    default_launches: int, default_timeout_s: float) -> Resolved:
    """Merge what ``given`` left out: from ``meta`` (the campaign being resumed, read once)
    or the defaults; every conflict with the campaign is refused once, from
    :data:`kit.store.resume.CONFLICTS`. The CLI and the pytest plugin both call it.

    Raises:
        UsageError: a scenario that sets ``id``, a rule setting without a rule, another
            rule than the campaign's, or other ``--launches`` than the kept rule's
            thresholds were computed for.
    """
    from ..errors import UsageError
    from ..scenario import parse_scenario

    scenario = parse_scenario(given.scenario or (meta.scenario if meta is not None else ""))
    if scenario.id is not None:
        raise UsageError("the scenario sets id, but launch ids are set by the kit",
                         "drop id= from --scenario")
    label = given.label if given.label is not None else (
        meta.label if meta is not None else scenario.mode)
    launches = given.launches if given.launches is not None else (
        meta.launches if meta is not None else default_launches)
    kept_timeout = (kept_timeout_s(meta) if meta is not None and given.timeout_s is None
                    and "timeout_s" in meta.options else None)
    timeout_s = given.timeout_s if given.timeout_s is not None else (
        kept_timeout if kept_timeout is not None else default_timeout_s)
    rule = resolve_rule(given, meta.until_verdict if meta is not None else None, out,
                        resume=meta is not None,
                        launches=given.launches if meta is not None else None)
    if rule is not None:
        check_rule_launches(launches)
    stage = resolve_stage(given, meta, out, launches, rule)
    return Resolved(scenario, label, launches, timeout_s, rule, stage)


def check_rule_launches(launches: int) -> None:
    """Refuse a stopping rule designed for more than
    :data:`kit.analysis.sprt.MAX_RULE_LAUNCHES` launches, before any work.

    Raises:
        UsageError: ``launches`` over the limit.
    """
    if launches > MAX_RULE_LAUNCHES:
        raise UsageError(f"--until-verdict designs its rule for at most {MAX_RULE_LAUNCHES} "
                         f"launches, not {launches} (its exact thresholds would take hours)",
                         f"give --launches {MAX_RULE_LAUNCHES} or fewer (`coldstart plan` "
                         f"says how many a verdict needs), or run without --until-verdict")


def resolve_stage(given: Given, meta: CampaignMeta | None, out: Any, launches: int,
                  rule: RuleRequest | None) -> StageMeta | None:
    """The baseline stage of ``given`` (``--stage N:R``, counting ``--event``), or on resume
    the campaign's, which a stage or event given must match.

    Raises:
        UsageError: a stage with ``--until-verdict`` (a stage makes a baseline; the rule
            stops the candidate), a first stage not below ``--launches``, or another stage
            than the campaign's.
    """
    from ..analysis.verdict import check_signature
    from ..errors import UsageError
    from ..store.resume import conflict

    kept = meta.stage if meta is not None else None
    event = given.rule.get("signature")
    if meta is not None:
        if given.stage is not None and (kept is None or given.stage != (kept.launches,
                                                                        kept.events)):
            raise conflict("other", out, key="stage",
                           old=None if kept is None else f"{kept.launches}:{kept.events}",
                           new=f"{given.stage[0]}:{given.stage[1]}")
        if kept is not None and event is not None and event != kept.event:
            raise conflict("other", out, key="stage's --event", old=kept.event, new=event)
        if kept is not None:  # read back from campaign.json: held to what --event takes
            try:
                check_signature(kept.event)
            except UsageError as exc:
                from ..errors import DataError

                raise DataError(f"{out}/campaign.json: stage.event: {exc.message}",
                                "restore campaign.json from a backup, or start a new "
                                "campaign in another directory") from None
        return kept
    if given.stage is None:
        return None
    n, r = given.stage
    if rule is not None:
        raise UsageError("--stage makes a staged baseline; a run under --until-verdict is the "
                         "candidate, which its rule stops",
                         "run the baseline with --stage first, then the candidate with "
                         "--until-verdict")
    if n >= launches:
        raise UsageError(f"--stage {n}:{r} needs --launches above {n} (it goes on to "
                         f"--launches when the first {n} show fewer than {r} events)",
                         "give the staged baseline's most launches as --launches, as "
                         "`coldstart plan` prints them")
    event = event if event is not None else RULE_DEFAULTS["signature"]
    check_signature(event)
    return StageMeta(launches=n, events=r, event=event)


def kept_timeout_s(meta: CampaignMeta) -> float:
    """``options.timeout_s`` of a campaign being resumed, held to ``--timeout``'s bounds
    (a number of seconds in (0, :data:`~kit.argtypes.MAX_TIMEOUT_S`]).

    Raises:
        DataError: it is not such a number (one line; exit 2).
    """
    from .._fields import FieldReader
    from ..argtypes import MAX_TIMEOUT_S

    return FieldReader(meta.options, "campaign.json: options",
                       "give --timeout S to resume with, or restore campaign.json").num(
        "timeout_s", None, 0.0, MAX_TIMEOUT_S, low_inclusive=False)


def _flag(key: str) -> str:
    from ..analysis.decide import setting_option

    return setting_option(key)


def resolve_rule(given: Given, kept: RuleMeta | None, out: Any, *, resume: bool,
                 launches: int | None = None) -> RuleRequest | None:
    """The ``--until-verdict`` rule of ``given``. On resume (``kept``: the campaign's rule,
    or ``None`` for a campaign without one) the settings left out are the campaign's, and
    a setting given must match it; without ``--until-verdict`` and without a kept rule, a
    rule setting is refused (it would be unused). The baseline build of an interleaved run
    is the target's options module's business (``baseline_from_args``).

    Raises:
        UsageError: as :func:`resolve_request`.
    """
    from ..analysis.verdict import check_signature
    from ..errors import UsageError
    from ..store.resume import check_kept_rule, conflict

    values = {key: given.rule.get(key) for key in RULE_DEFAULTS}
    baseline = given.until_verdict
    if kept is None:
        if baseline is None:
            named = [key for key, value in values.items() if value is not None
                     and not (key == "signature" and given.stage is not None)]
            if named:
                raise UsageError(f"{_flag(named[0])} only applies with --until-verdict",
                                 f"add --until-verdict BASELINE_DIR, or give "
                                 f"{_flag(named[0])} to `coldstart compare` after the run")
            return None
        if resume:
            raise conflict("rule-added", out)
        if not str(baseline).strip():
            raise UsageError("--until-verdict is empty", "give the baseline campaign's "
                                                         "directory")
        full = {k: (v if v is not None else RULE_DEFAULTS[k]) for k, v in values.items()}
        check_signature(full["signature"])
        return RuleRequest(baseline=Path(baseline),
                           settings=VerdictSettings(signature=full["signature"],
                                                    alpha=full["alpha"],
                                                    ceiling=full["ceiling"]),
                           beta=full["beta"], design_rate=full["design_rate"],
                           stop_at_first_below=bool(full["stop_at_first_below"]))
    check_kept_rule(out, kept, {"until_verdict": baseline, **values})
    if launches is not None and kept.max_launches is not None and launches != kept.max_launches:
        raise conflict("rule-launches", out, old=kept.max_launches, new=launches)
    return RuleRequest(baseline=Path(kept.baseline),
                       settings=VerdictSettings(signature=kept.signature, alpha=kept.alpha,
                                                ceiling=kept.ceiling),
                       beta=kept.beta, design_rate=kept.design_rate,
                       stop_at_first_below=kept.stop_at_first_below)
