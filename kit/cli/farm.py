"""``coldstart farm pull DIR [--farm NAME]``: pull a finished campaign's farm crash evidence
again and match it to its launches (never relaunches; :mod:`kit.farms.pull`). The farm and
its settings default to what ``run appium --farm`` kept in ``campaign.json``. Exit 3 when a
session's evidence was not ready by the deadline (the records are kept; pull again later).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..farms.options import add_farm_arguments

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    farm = commands.add_parser("farm", help="device-farm crash evidence",
                               description="Device-farm crash evidence (docs/farms.md).")
    sub = farm.add_subparsers(dest="farm_command", metavar="ACTION")
    sub.required = True
    pull = sub.add_parser("pull", help="pull a finished campaign's evidence again",
                          description=__doc__.split("\n\n")[0])
    pull.add_argument("dir", metavar="DIR", help="the campaign directory")
    add_farm_arguments(pull, required=False)
    pull.set_defaults(func=_pull)
    spec = sub.add_parser("testspec", help="an AWS Device Farm test spec that dumps DropBox "
                                           "and exit-info after the tests",
                          description="Print (or write) an AWS Device Farm custom test spec "
                                      "whose post_test saves dumpsys dropbox and exit-info to "
                                      "the customer artifacts (docs/farms.md).")
    spec.add_argument("--app-id", required=True, metavar="PKG", help="the app's package")
    spec.add_argument("--test-command", action="append", default=None, metavar="LINE",
                      help="a line of the test phase (repeat for more)")
    spec.add_argument("--out", default=None, metavar="FILE",
                      help="write the spec there (default: print it)")
    spec.set_defaults(func=_testspec)


def _testspec(args: argparse.Namespace) -> int:
    import sys

    from ..farms.testspec import render_testspec

    text = render_testspec(args.app_id, args.test_command)
    if args.out:
        from .._bounded import write_atomic

        write_atomic(Path(args.out), text.encode())
    else:
        sys.stdout.write(text)
    return 0


def _pull(args: argparse.Namespace) -> int:
    from .progress import stderr_console

    return _pull_into(Path(args.dir), args, stderr_console())


def _pull_into(out: Path, args: argparse.Namespace, console: Any) -> int:
    from ..farms.options import pull_into

    def log(message: str) -> None:
        console.print(message, markup=False, highlight=False, soft_wrap=True)

    return pull_into(out, args, _stored_farm(out), log)


def _stored_farm(out: Path) -> Any:
    """The farm settings the campaign's setup keeps (``None`` when it has none; a missing
    or unreadable campaign is refused later by the pull, in one line)."""
    from ..errors import ColdstartError
    from ..store.store import CampaignStore

    try:
        return CampaignStore(out).read_meta().setup.farm
    except ColdstartError:
        return None
