"""``coldstart run <target>``: one generic command over the target registry.

Each target's options module (``kit/targets/<t>/options.py``, named by the registry) adds
its own options and maps them to the target's typed configuration; this module adds the campaign options, turns the
arguments into a :class:`~kit.campaign.session.CampaignRequest` (with ``--resume``, reading
``campaign.json`` once for what was left out), runs it, and renders what the session
reports: progress on stderr, records on stdout with ``--json``, then the summary.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
from pathlib import Path
from types import ModuleType
from typing import Any

from .._bounded import describe_path, path_kind
from ..campaign.loop import RetryPolicy
from ..store.opened import OpenCampaign, open_to_resume
from ..campaign.request import resolve_request
from ..campaign.session import CampaignRequest, SessionResult, resume_command, run_session
from ..store.store import check_label, load_campaign
from ..errors import UsageError
from ..scenario import KEYS_HELP
from ..targets.registry import BUILTIN, get_target, target_entry
from .options import add_campaign_options, given_from_args
from .progress import ProgressView, stderr_console

__all__ = ["register", "build_request", "check_directory_arg", "stderr_console",
           "options_module", "render_result"]


def check_directory_arg(path: Path, flag: str) -> None:
    """Refuse a directory option that cannot become a directory: the path, or the nearest
    part of it that exists, is a file.

    Raises:
        UsageError: ``flag PATH is a file`` or ``... PART is a file``.
    """
    if not str(path).strip():
        raise UsageError(f"{flag} is empty", "give a directory")
    for part in (path, *path.parents):
        if path_kind(part) != "missing":
            if path_kind(part) != "a directory":
                what = f"{flag} {path} {describe_path(part)}" if part == path else \
                    f"{flag} {path} cannot be made: {part} {describe_path(part)}"
                raise UsageError(what, "choose a directory")
            return


def options_module(target: str) -> ModuleType:
    """The options module of ``target`` (``kit.targets.<t>.options``; :class:`TargetEntry`)."""
    return importlib.import_module(target_entry(target).options_module)


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``run <target>`` for every registered target."""
    for name, entry in BUILTIN.items():
        module = importlib.import_module(entry.options_module)
        parser = run_targets.add_parser(name, help=entry.description,
                                        description=module.description(name))
        module.add_arguments(parser, name)
        if name != "host":  # --detector is the host's: elsewhere a one-line refusal
            from ..targets.host.options import add_detector_options

            add_detector_options(parser, name)
        if name == "appium":  # --farm NAME: pull the farm's crash evidence at the end
            from ..farms.options import add_farm_arguments

            add_farm_arguments(parser, required=False)
        add_campaign_options(parser, default_timeout_s=module.default_timeout_s(name))
        parser.epilog = KEYS_HELP
        parser.set_defaults(func=_run, target=name)


def _open_resume(args: argparse.Namespace) -> OpenCampaign | None:
    """The campaign to resume, locked and read once (:func:`open_to_resume`), else
    ``None``."""
    if not getattr(args, "resume", False):
        return None
    if not args.out and not args.label:
        raise UsageError("--resume needs the campaign to resume", "pass --out DIR")
    out = Path(args.out) if args.out else Path("runs") / args.label
    return open_to_resume(out)


def build_request(target: str, args: argparse.Namespace,
                  opened: OpenCampaign | None = None) -> CampaignRequest:
    """The :class:`CampaignRequest` of parsed ``coldstart run <target>`` arguments (with
    ``--resume``, what was left out is the campaign's: ``opened``, read once, or read here).

    Raises:
        UsageError: bad arguments, or ones that contradict the campaign being resumed.
    """
    module = options_module(target)
    if opened is None and getattr(args, "resume", False):
        opened = _open_resume(args)
        opened.store.unlock()  # a caller that only builds the request writes nothing
    meta = opened.meta if opened is not None else None
    if args.label == "":
        raise UsageError("--label is empty", "give a label such as baseline or patched")
    if args.out is not None and not str(args.out).strip():
        raise UsageError("--out is empty", "give the campaign's directory, e.g. runs/baseline")
    given = given_from_args(args)
    out = Path(args.out) if args.out else (opened.path if opened is not None else None)
    resolved = resolve_request(given, meta, out, default_launches=args.default_launches,
                               default_timeout_s=args.default_timeout_s)
    check_label(resolved.label)
    out = out if out is not None else Path("runs") / resolved.label
    check_directory_arg(out, "--out")
    rule = resolved.rule
    timeout_s = resolved.timeout_s
    config = module.config_from_args(target, args, meta, timeout_s)
    baseline_hook = getattr(module, "baseline_from_args", None)
    if baseline_hook is not None:
        baseline = baseline_hook(target, args, meta, timeout_s, rule)
        if baseline is not None:
            import dataclasses

            assert rule is not None  # the hook refuses a baseline build without a rule
            base_config, base_options = baseline
            rule = dataclasses.replace(rule, baseline_config=base_config,
                                       baseline_options=base_options)
    if rule is not None and rule.interleaved:
        check_directory_arg(Path(rule.baseline), "--until-verdict")
    retry = RetryPolicy(max_attempts=args.max_attempts, budget=args.infra_budget)
    return CampaignRequest(target=target, config=config, scenario=resolved.scenario,
                           label=resolved.label, out=out, launches=resolved.launches,
                           timeout_s=timeout_s, retry=retry, resume=bool(args.resume),
                           rule=rule, stage=resolved.stage)


def _run(args: argparse.Namespace) -> int:
    opened = _open_resume(args)  # locked and read once, for the request and the session
    try:
        request = build_request(args.target, args, opened)
    except BaseException:
        if opened is not None:
            opened.store.unlock()
        raise
    dirs = [request.out] + ([request.rule.baseline] if request.rule is not None
                            and request.rule.interleaved else [])
    args.campaign_dir = " and ".join(str(d) for d in dirs)  # for the interrupt message
    console = stderr_console()
    with ProgressView(console, json_out=args.json) as view:
        result = run_session(get_target(request.target), request, view, opened)
    code = render_result(request, result, console)
    if getattr(args, "farm", None):  # run appium --farm NAME: pull its crash evidence
        from .farm import pull_after_run

        code = max(code, pull_after_run(args, request.out, console))
    return code


def render_result(request: CampaignRequest, result: SessionResult, console: Any) -> int:
    """Print how the session ended (the rule, each campaign's summary, abandoned launches)
    and return its exit code."""
    from ..analysis.summary import render_summary, summarize

    if result.rule_why is not None:
        console.print(f"until-verdict: {'stopped: ' if result.rule_stopped else 'not settled: '}"
                      f"{result.rule_why}", markup=False, highlight=False, soft_wrap=True)
        if result.compare is not None:
            console.print(f"verdict: {shlex.join(result.compare)}", markup=False,
                          highlight=False, soft_wrap=True)
    for campaign in result.campaigns:
        render_summary(summarize(campaign.campaign if campaign.campaign is not None
                                 else load_campaign(campaign.path)), console)
    lost = result.abandoned_text(resume_command(request.target, request.out))
    if lost:
        from rich.text import Text  # the path is data: never read as markup

        console.print(Text(lost, style="bold red"), highlight=False, soft_wrap=True)
    return int(result.exit_code)
