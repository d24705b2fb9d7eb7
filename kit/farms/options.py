"""The farm options, shared by ``coldstart farm pull`` and ``coldstart run appium --farm``
(credentials come from the environment only, docs/farms.md)."""

from __future__ import annotations

import argparse
import os

from ..argtypes import positive_seconds
from .base import FarmSettings

__all__ = ["add_farm_arguments", "settings_from_args"]


def add_farm_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--farm NAME`` and its settings (``--farm-api``, ``--farm-region``, ``--farm-ref``,
    ``--farm-steps``, ``--farm-deadline``)."""
    from . import FARMS

    parser.add_argument("--farm", required=required, choices=list(FARMS), default=None,
                        help="the device farm whose crash evidence is pulled"
                             + ("" if required else " at the end of the campaign"))
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


def settings_from_args(args: argparse.Namespace) -> FarmSettings:
    """The :class:`FarmSettings` of parsed farm options (credentials: ``os.environ``)."""
    return FarmSettings(name=args.farm, api=args.farm_api, region=args.farm_region,
                        deadline_s=float(args.farm_deadline), env=dict(os.environ),
                        ref=args.farm_ref, steps=args.farm_steps)
