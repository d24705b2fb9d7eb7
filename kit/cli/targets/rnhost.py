"""``coldstart rn-host build``: the rn-host target's own command (its ``run`` options are
:mod:`kit.targets.rnhost.options`)."""

from __future__ import annotations

import argparse
import sys
import time

from ...targets import host
from ...targets.rnhost.build import build_program

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """:data:`kit.cli.COMMAND_MODULES`' hook: ``rn-host build``."""
    parser = commands.add_parser("rn-host", help="build the app's native shell for the host "
                                                 "(docs/rn-host.md)")
    sub = parser.add_subparsers(dest="rnhost_command", metavar="ACTION")
    sub.required = True
    build = sub.add_parser("build", help="build the rn-host program for a runtime and bundle "
                                         "the app (from registry packages; cached)")
    build.add_argument("--runtime", "--name", dest="runtime", default=host.DEFAULT_RUNTIME,
                       metavar="NAME", help="runtime name (default: debian)")
    build.add_argument("--force", action="store_true", help="recompile even if up to date")
    build.add_argument("--tsan", action="store_true",
                       help="build it for the runtime's ThreadSanitizer variant (`runtime "
                            "build-ort --tsan`), as `run rn-host --detector tsan` does")
    build.set_defaults(func=_build)


def _log(message: str) -> None:
    print(f"rn-host: {message}", file=sys.stderr, flush=True)


def _build(args: argparse.Namespace) -> int:
    started = time.monotonic()
    runtime = (host.load_runtime(args.runtime, sanitizer="tsan") if args.tsan
               else host.load_runtime(args.runtime))
    program = build_program(runtime, force=args.force, log=_log)
    _log(f"ready in {time.monotonic() - started:.0f} s: {program.binary} with "
         f"{program.bundle}")
    return 0
