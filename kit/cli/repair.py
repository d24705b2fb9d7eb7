"""``coldstart repair DIR``: make a damaged campaign readable again
(:func:`kit.store.repair.repair_campaign`)."""

from __future__ import annotations

import argparse

from ..store.repair import repair_campaign

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``repair``."""
    repair = commands.add_parser(
        "repair", help="drop unreadable and repeated records from a campaign (keeps a backup)",
        description="Rewrite DIR/launches.jsonl keeping each valid record once (the first of "
                    "each launch id and launch slot); the old file stays beside it as "
                    "launches.jsonl.bak-<time>. compare and --resume refuse a campaign that "
                    "needs this.")
    repair.add_argument("dir", metavar="DIR", help="the campaign directory")
    repair.set_defaults(func=_repair)


def _repair(args: argparse.Namespace) -> int:
    report = repair_campaign(args.dir)
    if not report.dropped:
        print(f"{args.dir}: nothing to repair ({report.kept} records)")
        return 0
    print(f"{args.dir}: kept {report.kept} records, dropped {report.dropped} lines "
          f"(old file: {report.backup})")
    for reason in report.reasons:
        print(f"  {reason}")
    return 0
