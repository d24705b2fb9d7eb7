"""``coldstart run <target>``: one generic command over the target registry.

Each target's plug-in (:mod:`kit.targets.registry`) adds its own options; the request is
built by :func:`kit.campaign.build.build_request` (with ``--resume``, reading
``campaign.json`` once for what was left out); this module runs it and renders what the
session reports: progress on stderr, records on stdout with ``--json``, then the summary.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from .._bounded import check_directory_arg
from ..campaign.build import add_run_arguments, build_request, open_resume
from ..campaign.session import CampaignRequest, SessionResult, resume_command, run_session
from ..store.store import load_campaign
from ..targets.registry import get_plugin, plugins
from .progress import ProgressView, stderr_console

__all__ = ["register", "check_directory_arg", "stderr_console", "render_result"]


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``run <target>`` for every registered target; an option of another target is
    refused in one line that names the targets that have it."""
    parsers = []
    for plugin in plugins():
        parser = run_targets.add_parser(plugin.name, help=plugin.help,
                                        description=plugin.description)
        add_run_arguments(parser, plugin)
        parser.set_defaults(func=_run)
        parsers.append((plugin.name, parser))
    owners: dict[str, list[str]] = {}
    for name, parser in parsers:
        for flag in parser._option_string_actions:
            owners.setdefault(flag, []).append(name)
    for name, parser in parsers:
        for flag, names in owners.items():
            if flag.startswith("--") and flag not in parser._option_string_actions:
                parser.add_argument(flag, action=_Elsewhere, nargs="?", help=argparse.SUPPRESS,
                                    owners=tuple(names))


class _Elsewhere(argparse.Action):
    """An option another target has: refused in one line naming the targets it works on."""

    def __init__(self, *args: Any, owners: tuple[str, ...], **kwargs: Any) -> None:
        self.owners = owners
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        which = " and ".join(self.owners)
        parser.error(f"{option_string} works on the {which} target"
                     f"{'s' if len(self.owners) > 1 else ''} only, not "
                     f"{namespace.target!r}")


def _run(args: argparse.Namespace) -> int:
    plugin = get_plugin(args.target)
    opened = open_resume(args)  # locked and read once, for the request and the session
    try:
        request = build_request(plugin, args, opened)
    except BaseException:
        if opened is not None:
            opened.close()
        raise
    dirs = [request.out] + ([request.rule.baseline] if request.rule is not None
                            and request.rule.interleaved else [])
    args.campaign_dir = " and ".join(str(d) for d in dirs)  # for the interrupt message
    console = stderr_console()
    with ProgressView(console, json_out=args.json) as view:
        result = run_session(plugin, request, view, opened)
    code = render_result(request, result, console)
    return max(code, plugin.after_run(args, request.out, console))


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
