"""What every ``coldstart run <target>`` shares: campaign options, progress, the summary.

A target's command module adds its own options, then calls :func:`add_campaign_options`
and, in its ``func``, builds its launchers and calls :func:`execute_campaign`.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .campaign import CampaignStore, Launcher, prepare_store, run_campaign, update_meta
from .errors import ExitCode, UsageError
from .records import LaunchRecord, Outcome
from .scenario import Scenario, parse_scenario

__all__ = ["add_campaign_options", "scenario_from_args", "execute_campaign", "ProgressView",
           "stderr_console", "TargetSetup", "run_setup", "seconds_arg", "fraction_arg",
           "execute_interleaved", "kept_rule", "check_directory_arg", "SLOW_RULE_LAUNCHES"]

_OUTCOME_STYLE = {Outcome.COMPLETED: "green", Outcome.CRASHED: "bold red",
                  Outcome.APP_ERROR: "yellow", Outcome.WRONG_OUTPUT: "magenta",
                  Outcome.HUNG: "red", Outcome.INFRA_ERROR: "dim"}


def stderr_console() -> Console:
    """A rich console on stderr (progress never mixes with machine-readable stdout)."""
    return Console(stderr=True)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(f"{value} is out of range 1..1000000")
    return value


#: from this many launches on, computing the --until-verdict rule takes seconds: say so
SLOW_RULE_LAUNCHES = 5000


def _number(text: str, what: str = "a number") -> float:
    """``text`` as a float — a decimal or a ratio such as ``1/150`` (how the docs quote
    rates) — or the argparse error saying it is not ``what``."""
    try:
        if "/" in text:
            numerator, denominator = text.split("/", 1)
            return float(numerator) / float(denominator)
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def fraction_arg(text: str, zero_allowed: bool = False) -> float:
    """argparse type for a rate or an error rate: a number in ``(0, 1)`` (``[0, 1)`` with
    ``zero_allowed``, for a true rate).

    Raises:
        argparse.ArgumentTypeError: not a number, or out of range (argparse prints it).
    """
    value = _number(text)
    if zero_allowed and not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a rate in [0, 1), e.g. 0 or 0.01")
    if not zero_allowed and not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in (0, 1), e.g. 0.05")
    return value


def seconds_arg(text: str, low: float = 0.0, high: float = 600.0,
                low_inclusive: bool = True) -> float:
    """argparse type for a duration option: a number of seconds in ``[low, high]`` (``(low,
    high]`` without ``low_inclusive``); the default range is 0..600 s.

    Raises:
        argparse.ArgumentTypeError: not a number, or out of range (argparse prints it).
    """
    value = _number(text, "a number of seconds")
    if not ((low <= value if low_inclusive else low < value) and value <= high):
        bracket = "[" if low_inclusive else "("
        raise argparse.ArgumentTypeError(f"{value} is out of range {bracket}{low:g}, "
                                         f"{high:g}] seconds")
    return value


def _positive_float(text: str) -> float:
    return seconds_arg(text, 0.0, 86400.0, low_inclusive=False)


def add_campaign_options(parser: argparse.ArgumentParser, default_timeout_s: float,
                         default_launches: int = 20) -> None:
    """Add ``--launches --scenario --label --out --timeout --resume --max-attempts --json``
    and the ``--until-verdict`` family (:mod:`kit.sequential`)."""
    from .scenario import KEYS_HELP

    parser.epilog = KEYS_HELP
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    group = parser.add_argument_group("campaign")
    group.add_argument("--launches", type=_positive_int, default=None, metavar="N",
                       help=f"cold launches to make (default {default_launches}; with --resume, "
                            f"the campaign's own)")
    parser.set_defaults(default_launches=default_launches)
    group.add_argument("--scenario", default="", metavar="Q",
                       help="scenario as coldstart://run?..., k=v&k=v or k=v,k=v (default: "
                            "the production shape, concurrent x3 xnnpack,cpu)")
    group.add_argument("--label", default=None, metavar="L",
                       help="build label, e.g. baseline or patched (default: the mode)")
    group.add_argument("--out", default=None, metavar="DIR",
                       help="campaign directory (default: runs/<label>)")
    group.add_argument("--timeout", type=_positive_float, default=default_timeout_s,
                       metavar="S", help=f"seconds before a launch counts as hung "
                                         f"(default {default_timeout_s:g})")
    group.add_argument("--resume", action="store_true",
                       help="finish an interrupted campaign in --out")
    group.add_argument("--max-attempts", type=_positive_int, default=3, metavar="K",
                       help="tries per launch slot when the infrastructure fails (default 3)")
    group.add_argument("--json", action="store_true",
                       help="print the records of this run as JSON lines on stdout")
    from . import sequential

    sequential.add_until_verdict_options(parser)


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The scenario from ``--scenario``.

    With ``--resume --out DIR`` and no ``--scenario`` (or ``--label``, ``--launches``,
    ``--until-verdict``), the campaign's own are used, so resuming needs no retyping (and a
    resumed campaign is not cut short to the default launches). Sets ``args.launches``.

    Raises:
        UsageError: a bad scenario, one that sets ``id`` (launch ids are the kit's), or
            ``--resume`` on a directory that holds no campaign.
    """
    if getattr(args, "resume", False):
        meta_path = Path(args.out or Path("runs") / (args.label or "")) / "campaign.json"
        if not args.out and not args.label:
            raise UsageError("--resume needs the campaign to resume", "pass --out DIR")
        if meta_path.parent.exists() and not meta_path.parent.is_dir():
            raise UsageError(f"--out {meta_path.parent} is a file",
                             "give the campaign's directory")
        if not meta_path.exists():
            raise UsageError(f"nothing to resume: {meta_path.parent} holds no campaign",
                             "drop --resume to start one, or fix --out")
        meta = CampaignStore(meta_path.parent).read_meta()
        pair = meta.get("interleaved")
        if isinstance(pair, dict):
            raise UsageError(f"{meta_path.parent} is the baseline of the interleaved run "
                             f"{pair.get('candidate')}: resuming it alone would ignore the "
                             f"run's rule", f"resume that run: coldstart run "
                             f"{meta.get('target')} --resume --out "
                             f"{shlex.quote(str(pair.get('candidate')))}")
        args.scenario = args.scenario or meta.get("scenario", "")
        args.label = args.label if args.label is not None else meta.get("label")
        kept = meta.get("until_verdict")
        if hasattr(args, "until_verdict"):
            from . import sequential

            sequential.resume_rule(args, kept if isinstance(kept, dict) else None,
                                   meta.get("launches"), meta_path.parent)
        if args.launches is None:
            args.launches = meta.get("launches")
    if hasattr(args, "until_verdict"):
        from . import sequential

        sequential.settle_rule_args(args)
    if args.launches is None:
        args.launches = getattr(args, "default_launches", 20)
    if getattr(args, "label", None) == "":
        raise UsageError("--label is empty", "give a label such as baseline or patched")
    scenario = parse_scenario(args.scenario)
    if scenario.id is not None:
        raise UsageError("the scenario sets id, but launch ids are set by the kit",
                         "drop id= from --scenario")
    return scenario


def _check_resume_settings(store: CampaignStore, build: dict[str, Any],
                           options: dict[str, Any]) -> None:
    """Refuse to resume a campaign with another build or other launch options (a campaign
    holds launches of one setup: ``campaign.json`` describes them all)."""
    meta = store.read_meta()
    changed = []
    # options first: they are what the user typed (--poison, --witness...), the build
    # follows from them
    for section, new in (("options", options), ("build", build)):
        old = meta.get(section) or {}
        for key, value in new.items():
            if key in old and old[key] != value and key != "ort_versions_reported":
                changed.append(f"{section}.{key} was {old[key]!r}, now {value!r}")
    if changed:
        raise UsageError(f"cannot resume {store.path} with other settings: {changed[0]}"
                         + (f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""),
                         "resume with the campaign's own options, or choose another --out")


def _check_rule_args(args: argparse.Namespace, out: Path, target: str,
                     options: Sequence[dict[str, Any]]) -> None:
    """Refuse ``--until-verdict`` settings that cannot work, before anything is made: an
    empty baseline, the run's own ``--out`` as its baseline, ``race-witnessed`` on a run (or
    a build, one ``options`` dict each) without the witness. Says so when computing the
    thresholds will take a while.

    Raises:
        UsageError: one of the above.
    """
    if not args.until_verdict.strip():
        raise UsageError("--until-verdict is empty", "give the baseline campaign's directory")
    if Path(args.until_verdict).resolve() == out.resolve():
        raise UsageError(f"--until-verdict names this run's own --out ({out})",
                         "give the baseline campaign's directory")
    for opts in options:
        witness = opts.get("witness", f"off: the {target} target has no race witness")
        if args.signature == "race-witnessed" and witness != "on":
            raise UsageError(f"--signature race-witnessed counts only launches the race "
                             f"witness watched, and this run has none ({witness})",
                             "run with the witness on the host, or give a crash class as "
                             "--signature")
    if args.launches >= SLOW_RULE_LAUNCHES:
        stderr_console().print(f"until-verdict: computing the rule's exact thresholds for "
                               f"{args.launches} launches (this can take a minute)")


class ProgressView:
    """A rich progress bar with running counts by outcome (a
    :class:`~kit.campaign.CampaignObserver`)."""

    def __init__(self, console: Console, title: str, json_out: bool = False) -> None:
        self.console = console
        self.title = title
        self.json_out = json_out
        self.counts: dict[Outcome, int] = {}
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(),
                                  TextColumn("{task.fields[counts]}"), console=console,
                                  transient=False)
        self._task: Any = None

    def __enter__(self) -> "ProgressView":
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)  # type: ignore[arg-type]

    def seed(self, records: Sequence[LaunchRecord]) -> None:
        """Count the records a resumed campaign already has, so that the running counts
        cover the whole campaign (call before :meth:`started`)."""
        for record in records:
            self.counts[record.outcome] = self.counts.get(record.outcome, 0) + 1

    def _counts_text(self) -> str:
        return "  ".join(f"[{_OUTCOME_STYLE[o]}]{o.value} {n}[/]"
                         for o, n in sorted(self.counts.items(), key=lambda kv: kv[0].value))

    def started(self, total: int, done: int) -> None:
        self._task = self._progress.add_task(self.title, total=total, completed=done,
                                             counts=self._counts_text())

    def recorded(self, record: LaunchRecord) -> None:
        self.counts[record.outcome] = self.counts.get(record.outcome, 0) + 1
        advance = 1 if record.counted else 0
        self._progress.update(self._task, advance=advance, counts=self._counts_text())
        if self.json_out:
            import json

            print(json.dumps(record.to_dict(), separators=(",", ":")), flush=True)


def execute_campaign(args: argparse.Namespace, launchers: Sequence[Launcher], *,
                     target: str, scenario: Scenario, build: dict[str, Any],
                     options: dict[str, Any], devices: list[dict[str, Any]]) -> int:
    """Run a campaign from parsed CLI args, show progress and the summary table.

    Returns:
        :attr:`ExitCode.OK` when the campaign ran (whatever crashed), ``INFRA`` when no
        launch could be counted because the infrastructure failed every time.

    Raises:
        UsageError: bad label/out/resume combination (see :func:`kit.campaign.prepare_store`).
    """
    label = args.label or scenario.mode
    out = Path(args.out) if args.out else Path("runs") / label
    should_stop = None
    if getattr(args, "until_verdict", None) is not None:  # before the store: a bad rule
        from . import sequential                           # leaves nothing behind

        _check_rule_args(args, out, target, [options])
        should_stop = sequential.stop_rule_from_args(args, target=target)
    check_directory_arg(out, "--out")
    # build, options and rule go into campaign.json as it is made, so that a kill -9 at
    # any moment leaves a campaign that --resume continues as it was started
    kept = {} if should_stop is None else {
        "until_verdict": should_stop.to_meta(args.until_verdict, None, "not finished")}
    setup = {"build": build, "devices": devices, "options": options}
    store, records = prepare_store(out, label=label, target=target, scenario=scenario,
                                   launches=args.launches, resume=args.resume,
                                   meta_extra={**setup, **kept})
    args.campaign_dir = store.path  # for the interrupt message
    if args.resume:
        _check_resume_settings(store, build, options)
        update_meta(store, launches=args.launches, **setup, **kept)
    console = stderr_console()
    console.print(f"[bold]{target}[/] campaign [bold]{label}[/]: {scenario.describe()} "
                  f"-> {store.path}")
    if should_stop is not None:
        console.print(f"until-verdict against {args.until_verdict} "
                      f"({should_stop.baseline_events}/{should_stop.baseline_n}): "
                      f"{should_stop.design.describe()}", highlight=False)
        from .campaign import load_campaign
        from .summary import unfinished_note

        from .verdict import option_differences

        base = load_campaign(args.until_verdict)
        unfinished = unfinished_note(base)
        if unfinished:
            console.print(f"note: the baseline {unfinished}; the rule takes its counts as "
                          f"they stand", highlight=False)
        differ = option_differences(base.meta.get("options"), options)
        if differ:
            console.print(f"note: the baseline ran with other launch options "
                          f"({'; '.join(differ)}): the verdict will compare them as well as "
                          f"the builds", highlight=False)
    with ProgressView(console, label, json_out=args.json) as view:
        view.seed(records)
        all_records = run_campaign(store, records, launchers, label=label, scenario=scenario,
                                   launches=args.launches, timeout_s=args.timeout,
                                   max_attempts=args.max_attempts, observer=view,
                                   should_stop=should_stop)
    if should_stop is not None:
        stopped, why = should_stop.decision([r for r in all_records if r.counted])
        _print_rule_end(console, stopped, why, args.until_verdict, store.path,
                        should_stop.settings)
        update_meta(store, until_verdict=should_stop.to_meta(args.until_verdict, stopped, why))
    from .campaign import load_campaign
    from .summary import render_summary, summarize

    render_summary(summarize(load_campaign(store.path)), console)
    if all_records and not any(r.counted for r in all_records):
        return int(ExitCode.INFRA)
    return int(ExitCode.OK)


def _print_rule_end(console: Console, stopped: bool, why: str, baseline: str | Path,
                    candidate: Path, settings: Any) -> None:
    """How a run under ``--until-verdict`` ended, and the ``compare`` command that states
    its verdict (``settings``: the rule's :class:`~kit.verdict.VerdictSettings`)."""
    console.print(f"until-verdict: {'stopped: ' if stopped else 'not settled: '}{why}")
    console.print(f"verdict: coldstart compare {shlex.quote(str(baseline))} "
                  f"{shlex.quote(str(candidate))} --signature {settings.signature} "
                  f"--alpha {settings.alpha:g} --ceiling {settings.ceiling:g}",
                  highlight=False, soft_wrap=True)


def check_directory_arg(path: Path, flag: str) -> None:
    """Refuse a directory option that cannot become a directory: the path, or the nearest
    part of it that exists, is a file.

    Raises:
        UsageError: ``flag PATH is a file`` or ``... PART is a file``.
    """
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                what = f"{flag} {path} is a file" if part == path else \
                    f"{flag} {path} cannot be made: {part} is a file"
                raise UsageError(what, "choose a directory")
            return


def _check_baseline_dir(base_out: Path, meta: dict[str, Any], out: Path, target: str,
                        scenario: Scenario, launches: int) -> None:
    """Refuse an interleaved run's baseline directory that holds a campaign it cannot
    continue: another target or scenario, more launches planned than ``--launches``, one
    already finished (then the run is an ordinary ``--until-verdict`` against it), or the
    baseline of another interleaved run.

    Raises:
        UsageError: one of the above, saying which.
    """
    if not meta:
        return
    flag = f"--until-verdict {base_out}"
    for key, want in (("target", target), ("scenario", scenario.key())):
        if meta.get(key) != want:
            raise UsageError(f"{flag} holds a campaign of another {key} ({meta.get(key)!r}; "
                             f"this run: {want!r})", "give the baseline another directory, "
                                                     "or this run the baseline's options")
    pair = meta.get("interleaved")
    theirs = pair.get("candidate") if isinstance(pair, dict) else None
    if theirs is not None and Path(str(theirs)).resolve() != out.resolve():
        raise UsageError(f"{flag} is the baseline of the interleaved run {theirs}",
                         f"resume that run (--resume --out {shlex.quote(str(theirs))}), or "
                         f"give this run a baseline directory of its own")
    planned = meta.get("launches")
    if isinstance(planned, int) and planned > launches:
        raise UsageError(f"{flag} plans {planned} launches, more than this run's --launches "
                         f"{launches}", f"give --launches {planned} (each build makes at most "
                                        f"--launches)")
    if theirs is not None or not isinstance(planned, int):
        return
    made = len({r.index for r in CampaignStore(base_out).read_records()[0]})
    if made >= planned:
        raise UsageError(f"{flag} is a finished campaign ({made} of {planned} launches): "
                         f"no baseline launch is left to interleave",
                         "drop --baseline-runtime to run against it as it is")


def kept_rule(args: argparse.Namespace) -> dict[str, Any] | None:
    """With ``--resume``: the rule the campaign in ``--out`` started under (its
    ``campaign.json``'s ``until_verdict``), else ``None``."""
    if not getattr(args, "resume", False) or not args.out:
        return None
    store = CampaignStore(args.out)
    if not store.exists():
        return None
    kept = store.read_meta().get("until_verdict")
    return kept if isinstance(kept, dict) else None


def execute_interleaved(args: argparse.Namespace, baseline: "TargetSetup",
                        candidate: "TargetSetup", *, scenario: Scenario,
                        baseline_build: dict[str, str]) -> int:
    """Make both builds' launches, alternating, until the verdict is settled: the
    candidate's campaign in ``--out``, the baseline's in ``--until-verdict DIR`` (made, or
    continued when it exists), each at most ``--launches``, under
    :class:`kit.sequential.InterleavedRule` (docs/verdict.md, "Sequential stopping").

    ``baseline_build`` names the option that chose the baseline's build (e.g.
    ``{"baseline_runtime": "debian"}``); ``campaign.json`` keeps it so that ``--resume``
    goes on interleaved.

    Returns:
        :attr:`ExitCode.OK`, or ``INFRA`` when no launch of either build could be counted.

    Raises:
        UsageError: bad rule settings, or a baseline directory holding a campaign of another
            target, scenario or build.
    """
    from . import sequential
    from .campaign import load_campaign
    from .summary import render_summary, summarize
    from .verdict import count_target

    label = args.label or scenario.mode
    out = Path(args.out) if args.out else Path("runs") / label
    target = candidate.target
    _check_rule_args(args, out, target, [baseline.options, candidate.options])
    rule = sequential.interleaved_rule_from_args(args)
    assert rule is not None  # --until-verdict is set
    base_out = Path(args.until_verdict)
    for path, flag in ((out, "--out"), (base_out, "--until-verdict")):
        check_directory_arg(path, flag)
    store: CampaignStore | None = None
    records: list[LaunchRecord] = []
    if args.resume:  # this run's own campaign first: a resume names what differs in it
        store, records = prepare_store(out, label=label, target=target, scenario=scenario,
                                       launches=args.launches, resume=True)
        _check_resume_settings(store, candidate.build, candidate.options)
    base_existing = CampaignStore(base_out)
    base_there = base_existing.exists()
    base_meta = base_existing.read_meta() if base_there else {}
    base_label = str(base_meta.get("label") or "baseline")
    _check_baseline_dir(base_out, base_meta, out, target, scenario, args.launches)
    if base_label == label:
        raise UsageError(f"the baseline and this run are both labelled {label!r}",
                         "give this run another --label, e.g. --label patched")

    def kept(stopped: bool | None, why: str) -> dict[str, Any]:  # absolute: cwd may change
        return {**rule.to_meta(str(base_out.resolve()), stopped, why), **baseline_build}

    pair = {"candidate": str(out.resolve())}
    # build, options and rule go into campaign.json as it is made (see execute_campaign)
    base_setup = {"build": baseline.build, "devices": baseline.devices,
                  "options": baseline.options, "launches": args.launches,
                  "interleaved": {**pair, **kept(None, "not finished")}}
    cand_setup = {"build": candidate.build, "devices": candidate.devices,
                  "options": candidate.options, "launches": args.launches,
                  "until_verdict": kept(None, "not finished")}

    def open_baseline() -> tuple[CampaignStore, list[LaunchRecord]]:
        opened = prepare_store(base_out, label=base_label, target=target, scenario=scenario,
                               launches=args.launches, resume=base_there,
                               meta_extra=base_setup)
        if base_there:
            _check_resume_settings(opened[0], baseline.build, baseline.options)
        return opened

    # what is there is checked before anything is made, so that a refusal makes nothing
    base_store, base_records = open_baseline() if base_there else (None, [])
    if store is None:
        store, records = prepare_store(out, label=label, target=target, scenario=scenario,
                                       launches=args.launches, resume=False,
                                       meta_extra=cand_setup)
    args.campaign_dir = f"{store.path} and {base_out}"  # for the interrupt message
    if base_store is None:
        base_store, base_records = open_baseline()
    else:
        update_meta(base_store, **base_setup)
    if args.resume:
        update_meta(store, **cand_setup)
    console = stderr_console()
    console.print(f"[bold]{target}[/] campaigns [bold]{base_label}[/] -> {base_store.path} and "
                  f"[bold]{label}[/] -> {store.path}, interleaved: {scenario.describe()}")
    console.print(f"until-verdict, both builds at most {args.launches} launches: "
                  f"{rule.design.describe()}", highlight=False)
    arms = [sequential.Arm(s, r, setup.launchers, lab, scenario, args.launches, args.timeout,
                           args.max_attempts)
            for s, r, setup, lab in ((base_store, base_records, baseline, base_label),
                                     (store, records, candidate, label))]
    with ProgressView(console, f"{base_label} + {label}", json_out=args.json) as view:
        view.seed([*base_records, *records])
        result = sequential.run_interleaved(*arms, rule, observer=view)
    sig = rule.settings.signature
    need_b, need_c, _ = rule.needs_counts(*count_target(result.baseline_records, sig),
                                          *count_target(result.candidate_records, sig))
    stopped = not (need_b or need_c)
    _print_rule_end(console, stopped, result.why, base_out, store.path, rule.settings)
    update_meta(base_store, interleaved={**pair, **kept(stopped, result.why)})
    update_meta(store, until_verdict=kept(stopped, result.why))
    for path in (base_store.path, store.path):
        render_summary(summarize(load_campaign(path)), console)
    if not any(r.counted for r in [*result.baseline_records, *result.candidate_records]):
        return int(ExitCode.INFRA)
    return int(ExitCode.OK)


@dataclasses.dataclass
class TargetSetup:
    """A prepared target: what :func:`kit.cli_common.execute_campaign` needs, plus
    ``close()`` to undo the preparation (sessions, environment) after the campaign.

    Attributes:
        target: the target name (``ios-sim``, ``ios-device``, ``appium``).
        launchers: one :class:`~kit.campaign.Launcher` per device.
        build: build provenance for ``campaign.json`` (app path, bundle id...).
        options: the options that shape launches (poison, delivery, timeouts...).
        devices: one dict per device for ``campaign.json``.
        close: called once after the campaign, even when it failed.
    """

    target: str
    launchers: list[Any]
    build: dict[str, Any]
    options: dict[str, Any]
    devices: list[dict[str, Any]]
    close: Callable[[], None] = lambda: None


def run_setup(args: argparse.Namespace, setup: TargetSetup) -> int:
    """Run the campaign of parsed ``coldstart run`` arguments on a prepared target (the
    ``func`` of the iOS and Appium commands); ``setup.close()`` runs whatever happens."""
    try:
        scenario = scenario_from_args(args)
        return execute_campaign(args, setup.launchers, target=setup.target,
                                scenario=scenario, build=setup.build, options=setup.options,
                                devices=setup.devices)
    finally:
        setup.close()
