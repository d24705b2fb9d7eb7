"""Every command line the README and docs/*.md show is one the CLI accepts (issue #28).

The lines are found by :mod:`tests.doc_commands` (fenced blocks and inline code, so a new
doc or a new line is checked without a change here). Each ``coldstart`` line is parsed by the
CLI's own parser (:func:`kit.cli.build_parser`) without running it, its stand-ins
(``DIR``, ``N``, ``FILE...``) filled with a value the option's own type accepts; a line from
prose or with ``...`` may leave out required arguments, but every command and option it
names must exist. Each ``python benchmarks/X.py ...`` line is parsed by that script's own
parser (its ``parse_args``, stopped before the benchmark starts). The lines that take seconds
on the host (:data:`RUN_FOR_REAL`) run for real, in a scratch directory holding small
campaigns under the ``runs/...`` names the docs use and crash fixtures for ``FILE``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.cli import build_parser, main as coldstart_main
from tests.doc_commands import PLACEHOLDER, ROOT, DocCommand, doc_commands
from tests.helpers import make_campaign, record

COMMANDS = doc_commands()
CLI_LINES = [c for c in COMMANDS if c.program == "coldstart"]
BENCH_LINES = [c for c in COMMANDS if c.program != "coldstart"]
#: commands that finish in seconds on the host; their complete documented lines run for
#: real, except lines with an option named here (state the suite does not make: a runtime
#: other than the prepared one, e.g. a `runtime build-ort` build, is only parsed)
RUN_FOR_REAL: dict[tuple[str, ...], set[str]] = {
    ("plan",): set(), ("crash", "classify"): set(), ("crash", "rules"): set(),
    ("report",): set(), ("compare",): set(), ("runtime", "info"): {"--name"},
    ("models", "verify"): set()}
#: what the docs' stand-ins mean, for a run: an option's value is tried through its type
NAMED_VALUES = {"N": "2", "P": "0.5", "C": "0.05", "A": "0.05", "W": "0.8", "K": "2",
                "S": "5"}
#: tried in turn for any other stand-in of a typed option
TYPED_VALUES = ("2", "0.5", "0", "00000000-0000-4000-8000-000000000000", "mode=serial")
#: a launch-record crash fixture (``FILE``) and a host workload's stderr (other files)
CRASH_FIXTURE = ROOT / "tests/data/crashes/android/tombstone-full-xnnpack-create.txt"
HOST_FIXTURE = ROOT / "tests/data/crashes/host/backtrace-mangled-create.txt"
#: error fragments a prose mention or a ``...`` line may get (the rest is left out on purpose)
MISSING = ("the following arguments are required", "expected one argument",
           "is required")


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                None)


def _fill(action: argparse.Action | None, token: str, paths: dict[str, str],
          spare: list[str]) -> str:
    """A value for stand-in ``token`` given to ``action`` (``None``: a positional); an
    untyped one (a path) is ``paths[token]``, else the next of ``spare`` (kept for the
    token's next use), else the token in lower case."""
    if action is not None and action.choices:
        return str(next(iter(action.choices)))
    kind = None if action is None else action.type
    if kind is None:
        if token not in paths and spare:
            paths[token] = spare.pop(0)
        return paths.get(token) or token.strip("<>$").lower() or "x"
    for text in (NAMED_VALUES.get(token), *TYPED_VALUES):
        if text is None:
            continue
        try:
            kind(text)
        except Exception:  # noqa: BLE001 - any refusal: try the next value
            continue
        return text
    return token


def resolve(tokens: list[str], paths: dict[str, str] | None = None,
            spare: tuple[str, ...] = ()) -> tuple[tuple[str, ...], list[str], list[str]]:
    """``(command path, argv with the stand-ins filled, positional arguments)``; untyped
    stand-ins (paths) come from ``paths`` or, in turn, from ``spare`` (see :func:`_fill`).
    Unknown names stay as written (the parse then refuses them; :func:`inexact_options`
    names the ones argparse would take as abbreviations)."""
    paths, pool = dict(paths or {}), list(spare)
    parser = build_parser()
    path: list[str] = []
    rest = [t for t in tokens if t != "--debug"]
    while (sub := _subparsers(parser)) is not None and rest:
        word = rest[0]
        if PLACEHOLDER.match(word):  # `run <target>`, `run ...`: the first target
            word = "host" if "host" in sub.choices else next(iter(sub.choices))
        if word not in sub.choices:
            break
        parser = sub.choices[word]
        path.append(word)
        rest = rest[1:]
    argv, positionals = list(path), []
    options = parser._option_string_actions
    taking: argparse.Action | None = None
    for word in rest:
        if word == "...":
            continue
        if word.startswith("-") and not PLACEHOLDER.match(word):
            action = options.get(word.split("=", 1)[0])
            taking = action if action is not None and action.nargs != 0 else None
            argv.append(word)
            continue
        if PLACEHOLDER.match(word):
            word = _fill(taking, word, paths, pool)
        if taking is None:
            positionals.append(word)
        elif taking.nargs in (None, 1, "?"):
            taking = None
        argv.append(word)
    return tuple(path), argv, positionals


def inexact_options(argv: list[str]) -> list[str]:
    """The ``--options`` of ``argv`` that are not spelled as the command defines them
    (argparse takes a prefix: a doc that abbreviates, or an option renamed to a longer
    name, would still parse)."""
    parser = build_parser()
    words = list(argv)
    while (sub := _subparsers(parser)) is not None and words and words[0] in sub.choices:
        parser = sub.choices[words.pop(0)]
    known = set(parser._option_string_actions)
    return [w for w in words if w.startswith("--") and w.split("=", 1)[0] not in known
            and w != "--"]


def parse(argv: list[str]) -> str | None:
    """``None`` when the CLI's parser takes ``argv``, else its error line."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            if exc.code not in (0, None):
                return err.getvalue().strip() or f"exit {exc.code}"
    return None


def _id(command: DocCommand) -> str:
    return command.where


def test_the_docs_show_commands():
    """The finder finds the docs' commands (a broken finder would check nothing)."""
    wheres = {c.where.split(":")[0] for c in CLI_LINES}
    assert {"README.md", "docs/verdict.md", "docs/crash.md", "docs/race.md"} <= wheres
    assert len(CLI_LINES) >= 75
    assert len({c.program for c in BENCH_LINES}) >= 5


@pytest.mark.parametrize("command", CLI_LINES, ids=_id)
def test_documented_command_parses(command: DocCommand):
    path, argv, _ = resolve(list(command.tokens))
    assert path, f"{command.where}: `{command.text}` names no coldstart command"
    wrong = inexact_options(argv)
    assert not wrong, (f"{command.where}: `{command.text}`: {wrong} not options of "
                       f"`coldstart {' '.join(path)}` (see its --help)")
    error = parse(argv)
    if error and command.fragment and any(m in error for m in MISSING):
        error = None  # prose or `...`: names checked, the rest left out on purpose
    assert error is None, f"{command.where}: `{command.text}` -> {argv}: {error}"


def _real_runs() -> list[Any]:
    seen: dict[tuple[str, ...], DocCommand] = {}
    for command in CLI_LINES:
        if "..." in command.tokens:
            continue
        path, argv, _ = resolve(command.minimal())
        if (path in RUN_FOR_REAL and not RUN_FOR_REAL[path] & set(argv)
                and parse(argv) is None):
            seen.setdefault(tuple(command.minimal()), command)
    return [pytest.param(c, id=c.where, marks=[pytest.mark.host] if c.tokens[0] == "runtime"
                         else []) for c in seen.values()]


def _campaigns(root: Path, names: set[str]) -> None:
    """Small campaigns: a name with ``baseline`` crashes with the target class and a
    witnessed race in 8 of 10 launches; any other is 20 clean launches."""
    for name in sorted(names):
        label = Path(name).name
        if "baseline" in name:
            recs = [record(label, i, "crashed" if i < 8 else "completed",
                           crash_class="xnnpack-allocator-uaf" if i < 8 else None,
                           race={"available": True, "witnessed": i < 8,
                                 "contexts": ["0x1", "0x2"] if i < 8 else ["0x1"],
                                 "skew_us": 4.0}) for i in range(10)]
        else:
            recs = [record(label, i, race={"available": True, "witnessed": False,
                                           "contexts": ["0x1"], "skew_us": 30.0})
                    for i in range(20)]
        make_campaign((root / name).parent, label, recs)


@pytest.mark.parametrize("command", _real_runs())
def test_documented_command_runs(command: DocCommand, tmp_path, monkeypatch, capsys):
    """The complete line (its optional parts left out) runs in seconds and succeeds."""
    path, argv, positionals = resolve(command.minimal(), {"FILE": str(CRASH_FIXTURE)},
                                      ("runs/baseline", "runs/patched"))
    runs = {t for t in argv if t.startswith("runs/")}
    _campaigns(tmp_path, runs)
    if path[0] == "crash":
        for name in positionals:  # a file name of the docs' own: a host workload's stderr
            if not (tmp_path / name).exists() and not Path(name).is_absolute():
                (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(HOST_FIXTURE, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    code = coldstart_main(argv)
    out, err = capsys.readouterr()
    allowed = {0, 1} if "--fail-on" in argv else {0}
    assert code in allowed, f"{command.where}: coldstart {' '.join(argv)} -> {code}: {err}"
    assert "Traceback" not in err
    assert out.strip(), f"{command.where}: coldstart {' '.join(argv)} printed nothing"


#: runs a benchmark up to its parse_args, then stops: its own parser checks the arguments
_PARSE_ONLY = """
import argparse, os, runpy, sys
init = argparse.ArgumentParser.__init__
def exact(self, *args, **kwargs):  # the docs spell options out: no prefixes taken
    init(self, *args, **{**kwargs, "allow_abbrev": False})
argparse.ArgumentParser.__init__ = exact
parse = argparse.ArgumentParser.parse_args
def stop(self, args=None, namespace=None):
    parse(self, args, namespace)
    print("parsed", flush=True)
    os._exit(0)
argparse.ArgumentParser.parse_args = stop
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("command", BENCH_LINES, ids=_id)
def test_documented_benchmark_line_parses(command: DocCommand):
    script = ROOT / command.program
    assert script.is_file(), f"{command.where}: {command.program} does not exist"
    argv = [NAMED_VALUES.get(t, "2") if PLACEHOLDER.match(t) and t != "..." else t
            for t in command.tokens if t != "..."]
    proc = subprocess.run([sys.executable, "-c", _PARSE_ONLY, str(script), *argv], cwd=ROOT,
                          text=True, capture_output=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("parsed"), (
        f"{command.where}: `{command.text}`: {proc.stderr.strip()[-600:]}")


def test_fill_uses_the_options_type():
    """A stand-in gets a value the option's type accepts: a rate for --baseline-rate P,
    a whole number for --launches N, a choice for a choice."""
    _, argv, _ = resolve(["plan", "--baseline-rate", "P", "--ceiling", "C"])
    assert argv == ["plan", "--baseline-rate", "0.5", "--ceiling", "0.05"]
    _, argv, positionals = resolve(["run", "<target>", "--launches", "N", "--out", "DIR"])
    assert argv[:2] == ["run", "host"] and argv[argv.index("--launches") + 1] == "2"
    assert positionals == []
    assert "--no-such-option" in (parse(["compare", "--no-such-option", "a", "b"]) or "")
    assert parse(["plan", "--baseline-ra", "0.5"]) is None  # argparse's prefix match...
    assert inexact_options(["plan", "--baseline-ra", "0.5"]) == ["--baseline-ra"]  # caught
