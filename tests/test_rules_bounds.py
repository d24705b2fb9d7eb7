"""A user's rule file cannot take the machine at load (issue #26, item 6): a pattern whose
counted repeats multiply to a huge expansion is refused before ``regex`` compiles it (it
expands ``x{n}`` at compile time: ``((a{1000}){1000}){1000}`` took 21 GB), and TOML or a
pattern nested too deeply is one line, exit 2, never a ``RecursionError``."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit.crash.rules import MAX_PATTERN_EXPANSION, check_pattern_size, load_rules
from kit.errors import DataError
from tests.conftest import ROOT, coldstart, one_line_error

RULE = textwrap.dedent("""\
    [[rule]]
    id = "mine"
    crash_class = "other-native-crash"
    title = "mine"
    kinds = ["native"]
    [[rule.chain]]
    name = "top"
    frames = ['{pattern}']
    """)


def _rules(tmp_path: Path, pattern: str) -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(RULE.format(pattern=pattern))
    return path


@pytest.mark.parametrize("pattern", [
    "(?:(?:(?:a{1000}){1000}){1000})",
    "(?:x{400}){400}",
    "(?:(?:ab){1000,}){1000}",            # an open-ended repeat counts its minimum
    "(?:[a-z]{999}|(?:b{99}){99}){200}",  # branches add, repeats multiply
])
def test_a_pattern_that_would_expand_past_the_bound_is_refused_in_one_line(
        tmp_path: Path, pattern: str) -> None:
    with pytest.raises(DataError, match="counted repeats multiply"):
        load_rules(_rules(tmp_path, pattern))


def test_the_refusal_comes_before_any_compile_and_in_one_line_from_the_cli(
        tmp_path: Path) -> None:
    # under a 1 GiB address-space limit: a compile of the pattern would die of it
    path = _rules(tmp_path, "(?:(?:(?:a{1000}){1000}){1000})")
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from kit.cli import main
        import kit.crash.rules  # imported before the limit
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        sys.exit(main(["crash", "rules", "--rules", {str(path)!r}]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    one_line_error(proc, "counted repeats multiply")


@pytest.mark.parametrize("pattern", ["^onnxruntime::.*Allocator.*$", "a{3}b{2,5}", "x{100000}",
                                     "(?:ab|cd){50}(?!e)"])
def test_ordinary_patterns_pass(pattern: str) -> None:
    check_pattern_size(pattern)


def test_a_pattern_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    pattern = "(" * 900 + "a" + ")" * 900
    with pytest.raises(DataError, match="nested|too many|deeper"):
        load_rules(_rules(tmp_path, pattern))


@pytest.mark.parametrize("nested", ["a = " + "[" * 5000 + "]" * 5000,
                                    "a = " + "{b = " * 3000 + "1" + "}" * 3000])
def test_deeply_nested_toml_is_one_line_exit_2(tmp_path: Path, nested: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(nested + "\n")
    with pytest.raises(DataError, match="nested too deeply|not valid TOML"):
        load_rules(path)
    one_line_error(coldstart("crash", "rules", "--rules", str(path), timeout=120),
                   "deep.toml", progress=False)


def test_the_bound_is_what_the_docs_say() -> None:
    assert MAX_PATTERN_EXPANSION == 100_000
    check_pattern_size("a{100000}")
    with pytest.raises(re.error):
        check_pattern_size("a{100001}")
