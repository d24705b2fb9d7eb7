"""``coldstart crash classify|symbolize|rules``: crash files from users, read and classed.

A thin layer over :mod:`kit.crash`: each command reads files, calls the library and renders
the result (a rich table, or JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..crash import (HINTS, CrashRecord, RuleSet, classify, explain, load_rules, parse_host,
                    parse_text, symbolize_android, symbolize_apple)
from ..crash._io import MAX_CRASH_FILE_BYTES, read_limited
from ..crash.signature import normalize_frame
from ..errors import UsageError

__all__ = ["register"]

_TOP_FRAMES = 3
#: characters of one table cell: rich folds a cell in time and memory super-linear in its
#: length (a 1 MB sanitizer headline took 2.4 s, 10 MB 92 s and 578 MB; issue #46 family 5);
#: the whole value stays in ``--json``
_CELL_CHARS = 300


def _cell(text: str) -> str:
    """``text`` cut to :data:`_CELL_CHARS` characters, saying how many were left out."""
    if len(text) <= _CELL_CHARS:
        return text
    return f"{text[:_CELL_CHARS]}... ({len(text) - _CELL_CHARS} more characters; see --json)"


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``crash`` and its subcommands."""
    crash = commands.add_parser("crash", help="parse, symbolize and classify crash reports")
    sub = crash.add_subparsers(dest="crash_command", metavar="ACTION")
    sub.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--rules", metavar="PATH", default=None,
                        help="extra rule file or directory (added to the shipped rules; a "
                             "rule with a shipped rule's id replaces it)")
    common.add_argument("--hint", choices=HINTS, default=None,
                        help="format family, to skip detection")
    common.add_argument("--signal", type=_signal_arg, default=None, metavar="N",
                        help="read the files as host workload output that died by signal N "
                             "(1 to 64)")
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    classify_p = sub.add_parser("classify", parents=[common],
                                help="detect each file's format, read it and class the crash")
    classify_p.add_argument("--explain", action="store_true",
                            help="say which format family was detected and why, what was "
                                 "read, and why each rule did or did not fire")
    classify_p.add_argument("--java-root-cause", action="store_true",
                            help="sign a Java death by its root cause (the last 'Caused by:') "
                                 "instead of the outer exception")
    classify_p.add_argument("files", nargs="+", metavar="FILE")
    classify_p.set_defaults(func=_classify)
    symbolize_p = sub.add_parser("symbolize", parents=[common],
                                 help="symbolize a report's frames (llvm-symbolizer with "
                                      "--symbols, atos with --dsym on macOS), then class it")
    symbolize_p.add_argument("file", metavar="FILE")
    symbolize_p.add_argument("--symbols", metavar="DIR", default=None,
                             help="folder with the unstripped .so files (matched by build-id)")
    symbolize_p.add_argument("--dsym", metavar="PATH", default=None,
                             help="App.dSYM (or its DWARF file) for Apple reports; macOS only")
    symbolize_p.add_argument("--arch", default="arm64", help="architecture for atos")
    symbolize_p.set_defaults(func=_symbolize)
    rules_p = sub.add_parser("rules", help="check and list the known-signature rules")
    rules_p.add_argument("--rules", metavar="PATH", default=None,
                         help="extra rule file or directory to check with the shipped ones")
    rules_p.add_argument("--json", action="store_true", help="print JSON")
    rules_p.set_defaults(func=_rules)


def _signal_arg(text: str) -> int:
    """``--signal``: a signal number from 1 to 64 (issue #13: 999 was silently ignored)."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if not 1 <= number <= 64:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a signal number (1 to 64)")
    return number


def _data(path_text: str) -> bytes:
    """A crash file's bytes: a regular file of at most 64 MiB (one line and exit 2 for a
    device, a FIFO, a directory or a bigger file)."""
    return read_limited(Path(path_text), MAX_CRASH_FILE_BYTES, "crash file")


def _read(path_text: str, args: argparse.Namespace) -> CrashRecord:
    data = _data(path_text)
    if args.signal is not None:
        return parse_host(args.signal, data)
    return parse_text(data, hint=args.hint)


def _signal_text(record: CrashRecord) -> str:
    parts = [p for p in (record.exception, record.signal_name) if p]
    if record.code:
        parts.append(record.code)
    return " ".join(dict.fromkeys(parts)) or "-"


def _frames_text(record: CrashRecord) -> str:
    out = []
    for frame in record.frames[:_TOP_FRAMES]:
        name = normalize_frame(frame, managed=record.kind in ("java", "js")) or "?"
        out.append(name if len(name) <= 70 else name[:67] + "...")
    return "\n".join(out) or "-"


def _render(rows: list[tuple[str, CrashRecord, Any]], as_json: bool) -> None:
    if as_json:
        payload = [{"file": name, "record": rec.to_dict(), "classification": cls.to_dict()}
                   for name, rec, cls in rows]
        print(json.dumps(payload, indent=2))
        return
    from rich.table import Table
    table = Table(show_lines=True)
    for column in ("file", "format", "signal", "top frames", "class", "signature"):
        table.add_column(column, overflow="fold")
    for name, rec, cls in rows:
        table.add_row(_cell(name), _cell(rec.format), _cell(_signal_text(rec)),
                      _frames_text(rec), cls.crash_class.value, _cell(cls.signature))
    _console().print(table)


def _console() -> Any:
    from .progress import stdout_console  # a pipe gets wide lines, not rich's 80 columns

    return stdout_console()


def _load(args: argparse.Namespace) -> RuleSet:
    return load_rules(args.rules)


def _sign_by(args: argparse.Namespace) -> str:
    return "root-cause" if getattr(args, "java_root_cause", False) else "exception"


def _classify(args: argparse.Namespace) -> int:
    rules = _load(args)
    if args.explain:
        return _explain(args, rules)
    rows = []
    for name in args.files:
        record = _read(name, args)
        rows.append((name, record, classify(record, rules, sign_by=_sign_by(args))))
    _render(rows, args.json)
    return 0


def _explain(args: argparse.Namespace, rules: RuleSet) -> int:
    payload = []
    for name in args.files:
        result = explain(_data(name), rules, hint=args.hint, signal=args.signal,
                         sign_by=_sign_by(args))
        if args.json:
            payload.append({"file": name, "family": result.family, "why": result.why,
                            "record": result.record.to_dict(),
                            "classification": result.classification.to_dict(),
                            "explain": list(result.lines)})
            continue
        print(f"== {name}")
        for line in result.lines:
            print(line)
    if args.json:
        print(json.dumps(payload, indent=2))
    return 0


def _symbolize(args: argparse.Namespace) -> int:
    if not args.symbols and not args.dsym:
        raise UsageError("symbolize needs --symbols DIR (Android/ELF) or --dsym PATH (Apple)",
                         "see `coldstart crash symbolize --help`")
    rules = _load(args)
    record = _read(args.file, args)
    if args.dsym:
        result = symbolize_apple(record, args.dsym, arch=args.arch)
    else:
        result = symbolize_android(record, args.symbols)
    cls = classify(result.record, rules)
    if args.json:
        _render([(args.file, result.record, cls)], as_json=True)
        return 0
    from rich.table import Table
    table = Table(title=_cell(f"{args.file}: {cls.crash_class.value}  {cls.signature}"))
    for column in ("#", "module", "pc", "symbol", "source"):
        table.add_column(column, overflow="fold")
    for frame in result.record.frames:
        source = f"{frame.file}:{frame.line}" if frame.file and frame.line else (frame.file or "")
        table.add_row(str(frame.index), _cell(frame.module or ""), frame.pc or "",
                      _cell(frame.symbol or ""), _cell(source))
    console = _console()
    console.print(table)
    for note in result.record.notes:
        console.print(_cell(f"note: {note}"), markup=False)
    return 0


def _rules(args: argparse.Namespace) -> int:
    rules = load_rules(args.rules)
    if args.json:
        print(json.dumps({"sources": list(rules.sources), "skip": len(rules.skip),
                          "rules": [{"id": r.id, "crash_class": r.crash_class,
                                     "title": r.title, "issue": r.issue, "origin": r.origin}
                                    for r in rules.rules]}, indent=2))
        return 0
    from rich.table import Table
    table = Table(title=f"{len(rules.rules)} rules, {len(rules.skip)} skip patterns")
    for column in ("id", "class", "title", "from"):
        table.add_column(column, overflow="fold")
    for rule in rules.rules:
        table.add_row(rule.id, rule.crash_class, rule.title, rule.origin)
    _console().print(table)
    return 0
