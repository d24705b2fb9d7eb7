"""The farm options, shared by ``coldstart farm pull`` and ``coldstart run appium --farm``
(credentials come from the environment only, docs/farms.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Callable

from ..argtypes import positive_seconds
from .base import FarmSettings

__all__ = ["add_farm_arguments", "settings_from_args", "settings_for_campaign", "STORED",
           "pull_into", "check_farm_args"]

#: the farm settings ``run appium --farm`` keeps in ``campaign.json`` (``setup.farm``)
STORED = ("api", "region", "ref", "steps")


def add_farm_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--farm NAME`` and its settings (``--farm-api``, ``--farm-region``, ``--farm-ref``,
    ``--farm-steps``, ``--farm-deadline``)."""
    from . import FARMS

    parser.add_argument("--farm", required=required, choices=list(FARMS), default=None,
                        help="the device farm whose crash evidence is pulled"
                             + ("" if required else " (run: at the end of the campaign; "
                                "pull: default, the campaign's own)"))
    parser.add_argument("--farm-api", default=None, metavar="URL",
                        help="the farm's API base URL (default: its documented host)")
    parser.add_argument("--farm-region", default=None, metavar="REGION",
                        help="Sauce Labs region (us-west-1...), AWS region (us-west-2)")
    parser.add_argument("--farm-ref", default=None, metavar="REF",
                        help="AWS Device Farm job/run ARN; Firebase Test Lab gs://BUCKET/DIR; "
                             "elsewhere a session id overriding the records' own")
    parser.add_argument("--farm-steps", default=None, metavar="PATH",
                        help="Firebase Test Lab: projects/P/histories/H/executions/E "
                             "(Tool Results testIssues)")
    parser.add_argument("--farm-deadline", type=positive_seconds, default=300.0, metavar="S",
                        help="seconds a session's evidence may take to be ready "
                             "(default %(default)g, at most 600)")


def check_farm_args(args: argparse.Namespace) -> None:
    """Refuse, before any work, a ``--farm-api`` that is not an ``http(s)`` URL and a
    ``--farm-ref`` that is not one line (:func:`kit.farms.http.check_api_url`,
    :func:`kit.farms.check_ref`).

    Raises:
        UsageError: in one line.
    """
    from . import check_ref
    from .http import check_api_url

    if getattr(args, "farm_api", None) is not None:
        check_api_url(args.farm_api)
    if getattr(args, "farm_ref", None) is not None:
        check_ref(args.farm_ref)


def settings_for_campaign(args: argparse.Namespace, stored: Any) -> FarmSettings:
    """The settings of ``coldstart farm pull``: the options given, else what ``run appium
    --farm`` kept in the campaign's ``campaign.json`` (``stored``: its ``setup.farm``).

    Raises:
        UsageError: no farm given nor stored, or one that is not the campaign's.
    """
    from ..errors import UsageError

    check_farm_args(args)
    kept = stored if isinstance(stored, dict) else {}
    name = kept.get("name") if isinstance(kept.get("name"), str) else None
    if args.farm and name and args.farm != name:
        raise UsageError(f"--farm {args.farm} is not this campaign's farm ({name})",
                         f"leave --farm out, or give --farm {name}")
    if not args.farm and not name:
        raise UsageError("the campaign names no farm", "give --farm NAME")
    values: dict[str, Any] = {"farm": args.farm or name}
    for key in STORED:
        given = getattr(args, f"farm_{key}", None)
        value = kept.get(key) if isinstance(kept.get(key), str) else None
        values[key] = given if given is not None else value
    return FarmSettings(name=values["farm"], api=values["api"], region=values["region"],
                        deadline_s=float(args.farm_deadline), env=dict(os.environ),
                        ref=values["ref"], steps=values["steps"])


def settings_from_args(args: argparse.Namespace) -> FarmSettings:
    """The :class:`FarmSettings` of parsed farm options (credentials: ``os.environ``).
    Raises UsageError (:func:`check_farm_args`)."""
    check_farm_args(args)
    return FarmSettings(name=args.farm, api=args.farm_api, region=args.farm_region,
                        deadline_s=float(args.farm_deadline), env=dict(os.environ),
                        ref=args.farm_ref, steps=args.farm_steps)


def pull_into(out: Path, args: argparse.Namespace, stored: Any,
              log: Callable[[str], None]) -> int:
    """Pull the farm evidence of the campaign in ``out`` with the farm options in ``args``
    (else ``stored``, what ``run appium --farm`` kept) and report it through ``log``
    (credentials redacted); returns the pull's exit code (3: evidence incomplete, the
    records kept)."""
    from ..redact import install_log_redaction
    from .pull import pull_campaign

    redactor = install_log_redaction()

    def say(message: str) -> None:
        log(redactor.text(message))

    settings = settings_for_campaign(args, stored)
    report = pull_campaign(out, settings, redactor=redactor, log=say)
    for line in report.lines():
        say(line)
    if report.exit_code:
        say(f"farm {settings.name}: the evidence is incomplete (an infrastructure error of "
            f"the evidence step; the launch records are kept): run `coldstart farm pull "
            f"{out}` later")
    return report.exit_code
