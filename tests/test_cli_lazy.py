"""``coldstart`` imports only the module of the command it runs (``coldstart --help``:
none); the table of commands (``kit.cli.COMMANDS``) and what each module registers agree."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kit.cli import COMMANDS, build_parser
from tests.conftest import ROOT


def _commands(parser) -> dict[str, object]:
    """The parser's commands, in ``--help`` order."""
    action = next(a for a in parser._actions if a.dest == "command")
    return {a.dest: action.choices[a.dest] for a in action._choices_actions}


def test_every_module_registers_the_commands_the_table_names() -> None:
    full = _commands(build_parser())
    assert list(full) == list(COMMANDS)
    helps = {a.dest: a.help for a in next(a for a in build_parser()._actions
                                          if a.dest == "command")._choices_actions}
    assert helps == {name: line for name, (_m, line) in COMMANDS.items()}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_line_parses_its_command_as_the_full_parser_does(command: str) -> None:
    lazy = _commands(build_parser([command, "--help"]))
    full = _commands(build_parser())
    assert list(lazy) == list(full)
    assert lazy[command].format_help() == full[command].format_help()


def test_help_imports_no_command_module_nor_numpy() -> None:
    code = ("import sys\nfrom kit.cli import build_parser\nbuild_parser(['--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('kit.cli.') or m == 'numpy'"
            " or m.startswith('kit.campaign')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True,
                         capture_output=True, check=True).stdout
    assert out.strip() == "[]"
