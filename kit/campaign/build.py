"""One way from a target's options to a :class:`~kit.campaign.request.CampaignRequest`, for
the CLI (``coldstart run <target>``) and the pytest plugin alike: the run parser is the
plug-in's options plus the campaign options (:func:`add_run_arguments`), and
:func:`build_request` turns parsed arguments into the request (with ``--resume``, what was
left out is the campaign's: its stored config and values, read once).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, NoReturn, Sequence

from .._bounded import check_directory_arg
from ..errors import UsageError
from ..launch import TargetPlugin
from ..scenario import KEYS_HELP
from ..store.opened import OpenCampaign, open_to_write
from ..store.store import check_label
from .loop import RetryPolicy
from .options import add_campaign_options, given_from_args
from .request import CampaignRequest, check_out_arg, resolve_request

__all__ = ["add_run_arguments", "build_request", "open_resume", "parse_run_args"]


def add_run_arguments(parser: argparse.ArgumentParser, plugin: TargetPlugin[Any]) -> None:
    """The options of ``coldstart run <plugin>``: the target's own, then the campaign's."""
    plugin.add_arguments(parser)
    add_campaign_options(parser, default_timeout_s=plugin.default_timeout_s)
    parser.epilog = KEYS_HELP
    parser.set_defaults(target=plugin.name)


class _RaisingParser(argparse.ArgumentParser):
    """A run parser whose error is a :class:`UsageError` (a library caller, e.g. the pytest
    plugin, must not exit)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", f"see `coldstart run "
                                                    f"{self.prog.split()[-1]} --help`")


def parse_run_args(plugin: TargetPlugin[Any], argv: Sequence[str],
                   prog: str | None = None) -> argparse.Namespace:
    """``argv`` parsed as ``coldstart run <plugin> ARGV`` is.

    Raises:
        UsageError: bad arguments (argparse's message on one line).
    """
    parser = _RaisingParser(prog=prog or f"coldstart run {plugin.name}", add_help=False)
    add_run_arguments(parser, plugin)
    return parser.parse_args(list(argv))


def open_resume(args: argparse.Namespace) -> OpenCampaign | None:
    """The campaign to resume (``--resume``), locked and read once
    (:func:`kit.store.opened.open_to_write`), else ``None``.

    Raises:
        UsageError: ``--resume`` without ``--out`` or ``--label``; see
            :func:`kit.store.opened.open_to_write`.
    """
    if not getattr(args, "resume", False):
        return None
    if not args.out and not args.label:
        raise UsageError("--resume needs the campaign to resume", "pass --out DIR")
    out = Path(args.out) if args.out else Path("runs") / args.label
    return open_to_write(out, mode="resume")


def build_request(plugin: TargetPlugin[Any], args: argparse.Namespace,
                  opened: OpenCampaign | None = None) -> CampaignRequest:
    """The :class:`CampaignRequest` of parsed run arguments (:func:`add_run_arguments`);
    with ``--resume``, what was left out is the campaign's (``opened``, read once, or read
    here and unlocked again).

    Raises:
        UsageError: bad arguments, or ones that contradict the campaign being resumed.
    """
    if opened is None and getattr(args, "resume", False):
        opened = open_resume(args)
        assert opened is not None
        opened.close()  # a caller that only builds the request writes nothing
    meta = opened.meta if opened is not None else None
    if args.label == "":
        raise UsageError("--label is empty", "give a label such as baseline or patched")
    check_out_arg(args.out)
    out = Path(args.out) if args.out else (opened.path if opened is not None else None)
    resolved = resolve_request(given_from_args(args), meta, out,
                               default_launches=args.default_launches,
                               default_timeout_s=args.default_timeout_s)
    check_label(resolved.label)  # before it names a directory
    out = out if out is not None else Path("runs") / resolved.label
    check_directory_arg(out, "--out")
    rule = resolved.rule
    config = plugin.config_from_args(args, meta, resolved.timeout_s)
    baseline = plugin.baseline_from_args(args, meta, resolved.timeout_s, rule)
    if baseline is not None:
        assert rule is not None  # a plug-in refuses a baseline build without a rule
        rule = dataclasses.replace(rule, baseline_config=baseline.config,
                                   baseline_options=baseline.kept)
    if rule is not None and rule.interleaved:
        check_directory_arg(Path(rule.baseline), "--until-verdict")
    retry = RetryPolicy(max_attempts=args.max_attempts, budget=args.infra_budget)
    return CampaignRequest(target=plugin.name, config=config, scenario=resolved.scenario,
                           label=resolved.label, out=out, launches=resolved.launches,
                           timeout_s=resolved.timeout_s, retry=retry,
                           resume=bool(args.resume), rule=rule, stage=resolved.stage)
