"""The ``coldstart`` command: a thin layer over the library.

Each command lives in a module listed in :data:`COMMAND_MODULES`; a module exposes
``register(commands, run_targets)`` and adds its parsers to the top-level subparsers
(``commands``) and/or to the targets of ``coldstart run`` (``run_targets``). A parser sets
``func(args) -> int``.

This is the one error boundary: a :class:`~kit.errors.ColdstartError` becomes one line on
stderr and its exit code (2 for usage and data errors, 3 for infrastructure); ``--debug``
prints the traceback instead (through :func:`kit.redact.redact_known`, so credentials never
show) with the same exit code (1 for an unexpected exception). Ctrl-C exits 130 after the
command has saved its work.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import traceback
from typing import Any, NoReturn, Sequence, TextIO

from ..version import __version__
from ..errors import ColdstartError, ExitCode

__all__ = ["main", "build_parser", "COMMAND_MODULES"]

#: Modules that register commands, in the order they appear in ``--help``.
COMMAND_MODULES: tuple[str, ...] = (
    "kit.cli.models",
    "kit.cli.crash",
    "kit.cli.run",  # run <target> for every registered target
    "kit.cli.targets.host",  # runtime
    "kit.cli.targets.android",  # devices
    "kit.cli.targets.rnhost",  # rn-host build
    "kit.cli.analysis",
    "kit.cli.repair",
    "kit.cli.app",
    "kit.cli.farm",
)
#: Each command's module and its line in ``coldstart --help``, in that order: a command
#: line imports only the module of its command (``coldstart --help`` none), so that the
#: help of the kit comes at once (benchmarks/bench_help.py). A module's ``register`` adds
#: the commands listed here for it (tests/test_cli_lazy.py checks the two agree).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("kit.cli.run", "run a campaign of cold launches on a target"),
    "models": ("kit.cli.models", "fetch and verify the openWakeWord model set"),
    "crash": ("kit.cli.crash", "parse, symbolize and classify crash reports"),
    "runtime": ("kit.cli.targets.host", "prepare the host's onnxruntime with XNNPACK and "
                                        "build the native workload"),
    "devices": ("kit.cli.targets.android", "list reachable Android devices with model, ABI, "
                                           "SDK level and state"),
    "rn-host": ("kit.cli.targets.rnhost", "build the app's native shell for the host "
                                          "(docs/rn-host.md)"),
    "compare": ("kit.cli.analysis", "baseline vs candidate: fixed, not-fixed or "
                                    "inconclusive"),
    "plan": ("kit.cli.analysis", "launches needed for a verdict, and the sequential "
                                 "stopping rule"),
    "report": ("kit.cli.analysis", "write summary.json, junit.xml, report.html and "
                                   "summary.md"),
    "repair": ("kit.cli.repair", "drop unreadable and repeated records from a campaign "
                                 "(keeps a backup)"),
    "app": ("kit.cli.app", "inspect a built app (APK, IPA, .app)"),
    "farm": ("kit.cli.farm", "device-farm crash evidence"),
}
#: the longest message line printed (echoed input is cut to fit)
MAX_ERROR_CHARS = 400


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error and exit code 2, like every other usage error."""

    #: the innermost parser of the last parse (``run host``'s for ``coldstart run host ...``)
    innermost: "_Parser | None" = None

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        _Parser.innermost = self  # the subcommand's parser is entered after its parent's
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(ExitCode.USAGE, f"coldstart: error: {_cut(message)} (see `{self.prog} "
                                  f"--help`)\n")


def _cut(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (echoed input can be huge)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more " \
                                           f"characters)"


class _Only:
    """The ``commands`` subparsers as a module's ``register`` sees them when only some of
    its commands are wanted: the others go to a parser that is thrown away."""

    def __init__(self, commands: argparse._SubParsersAction[Any], wanted: set[str]) -> None:
        self.commands = commands
        self.wanted = wanted

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name in self.wanted:
            parser: argparse.ArgumentParser = self.commands.add_parser(name, **kwargs)
            return parser
        kwargs.pop("help", None)
        kwargs.pop("aliases", None)
        return _Parser(prog=name, **kwargs)


def _command_word(argv: Sequence[str]) -> str | None:
    """The command of a command line (its first word that is not an option)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every registered command, or with ``argv`` only the command it
    names (the other commands are listed, with their line of help, and not imported)."""
    parser = _Parser(prog="coldstart", description="Cold-launch an app or workload many "
                     "times, classify every crash, and compare builds with statistics.")
    parser.add_argument("--version", action="version", version=f"coldstart {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks instead of one-line errors (anywhere on the "
                             "command line)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    from ..scenario import KEYS_HELP

    run = commands.add_parser("run", help="run a campaign of cold launches on a target",
                              description="Run a campaign of cold launches on a target.",
                              epilog=KEYS_HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    run_targets = run.add_subparsers(dest="target", metavar="TARGET", parser_class=_Parser)
    run_targets.required = True
    word = _command_word(argv) if argv is not None else None
    if argv is None or word in COMMANDS:
        wanted = set(COMMANDS) if word is None else {word}
        for name in COMMAND_MODULES:
            if argv is None or name == COMMANDS[str(word)][0]:
                importlib.import_module(name).register(_Only(commands, wanted - {"run"}),
                                                       run_targets)
    for name, (_module, line) in COMMANDS.items():  # the rest: listed, not imported
        if name not in commands.choices:
            commands.add_parser(name, help=line)
    # in --help order
    commands._choices_actions.sort(key=lambda a: list(COMMANDS).index(a.dest)
                                   if a.dest in COMMANDS else -1)
    return parser


class _PipeGuard:
    """Standard output that turns into ``/dev/null`` once its reader is gone (``coldstart
    run --json | head``): the command finishes its work (a campaign's launches, compare's
    reports) and its exit code says how that went, instead of dying of EPIPE half-way."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:  # the descriptor itself, so that the interpreter's last flush succeeds too
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError):
            pass
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``coldstart`` console script. Returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):  # a path that is not UTF-8 never stops a print
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    stdout = sys.stdout
    sys.stdout = _PipeGuard(stdout)  # type: ignore[assignment]
    try:
        return _main(argv)
    finally:
        sys.stdout = stdout


#: errors of the machine, not of the input: exit 3 like other infrastructure failures
_INFRA_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS,
                 errno.ENOMEM}


def _main(argv: list[str]) -> int:
    # --debug anywhere: taken out before parsing, so every subcommand accepts it
    debug = "--debug" in argv[:argv.index("--")] if "--" in argv else "--debug" in argv
    if debug:
        cut = argv.index("--") if "--" in argv else len(argv)
        argv = [a for a in argv[:cut] if a != "--debug"] + argv[cut:]
    try:
        return _dispatch(argv, debug)
    except Exception:  # a defect of the kit: its traceback, redacted (URLs, capabilities)
        _print_traceback()
        return 1


def _print_traceback() -> None:
    from ..redact import redact_known

    print(redact_known(traceback.format_exc()), end="", file=sys.stderr)


def _dispatch(argv: list[str], debug: bool) -> int:
    """Parse and run; every expected failure is one line (after the traceback with
    ``debug``) and its exit code."""
    args = None
    try:
        parser = build_parser(argv)
        args, extra = parser.parse_known_args(argv)
        if extra:  # named by the subcommand they were given to, with its --help
            (_Parser.innermost or parser).error(f"unrecognized arguments: {' '.join(extra)}")
        return int(args.func(args) or 0)
    except ColdstartError as exc:
        if debug:
            _print_traceback()  # and the same exit code as without --debug
        from ..redact import redact_known  # a last net: every message is redacted already
        print(f"coldstart: error: {redact_known(exc.one_line())}", file=sys.stderr)
        return int(exc.exit_code)
    except OSError as exc:  # permissions, a full disk, a vanished file: the environment
        if debug:
            _print_traceback()
        campaign = getattr(args, "campaign_dir", None)  # a write that names no file
        where = f": {exc.filename}" if exc.filename else (
            f" (while writing in {campaign})" if campaign else "")
        infra = exc.errno in _INFRA_ERRNOS
        hint = ("free space or fix the disk" if infra else "check the path and its "
                "permissions") + "; --debug shows the traceback"
        print(f"coldstart: error: {_cut(f'{exc.strerror or exc}{where}')} ({hint})",
              file=sys.stderr)
        return int(ExitCode.INFRA if infra else ExitCode.USAGE)
    except KeyboardInterrupt:
        if debug:
            _print_traceback()
        campaign = getattr(args, "campaign_dir", None)  # set once a campaign directory exists
        print(f"coldstart: interrupted; finished launches are saved in {campaign} (resume with "
              f"--resume)" if campaign else "coldstart: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
