"""Every script under benchmarks/ starts, answers ``--help`` and finishes a tiny run that
prints its figures (issue #28: a benchmark nothing ran stopped importing).

The scripts are found by globbing, so a new benchmark is covered at once. Each declares its
smallest run in a module-level ``SMOKE`` literal, read here without importing the script:
``{"args": [...], "prints": REGEX, "marks": [...]}`` (``{tmp}`` in an argument is an empty
scratch directory; ``marks`` are the suite's own markers, ``host`` for the prepared host
runtime and ``slow`` for tens of seconds). The script runs as the README says, with this
interpreter from the checkout, and must exit 0 with output matching ``prints``. The full
runs (minutes to hours) stay the benchmarks' own commands.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.doc_commands import ROOT

SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))
#: the keys of SMOKE and their types
SMOKE_KEYS = {"args": list, "prints": str, "marks": list}
KNOWN_MARKS = {"host", "slow"}


def smoke_of(script: Path) -> dict[str, Any]:
    """The script's ``SMOKE`` literal (``ValueError`` when absent or malformed)."""
    tree = ast.parse(script.read_text(encoding="utf-8"), str(script))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "SMOKE"):
            smoke = ast.literal_eval(node.value)
            break
    else:
        raise ValueError(f"{script.name} declares no module-level SMOKE = {{'args': [...], "
                         f"'prints': REGEX, 'marks': [...]}} (its smallest run)")
    if not isinstance(smoke, dict) or set(smoke) != set(SMOKE_KEYS) or not all(
            isinstance(smoke[k], t) for k, t in SMOKE_KEYS.items()):
        raise ValueError(f"{script.name}: SMOKE must be a dict of exactly {SMOKE_KEYS}")
    if not set(smoke["marks"]) <= KNOWN_MARKS:
        raise ValueError(f"{script.name}: SMOKE marks {smoke['marks']} not in {KNOWN_MARKS}")
    re.compile(smoke["prints"])
    return smoke


def _params() -> list[Any]:
    params = []
    for script in SCRIPTS:
        try:
            marks = [getattr(pytest.mark, m) for m in smoke_of(script)["marks"]]
        except (ValueError, SyntaxError):
            marks = []  # the test itself says what is wrong
        params.append(pytest.param(script, id=script.stem, marks=marks))
    return params


def _run(script: Path, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script.relative_to(ROOT)), *args], cwd=ROOT,
                          text=True, capture_output=True, timeout=timeout,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def test_benchmarks_are_found():
    assert len(SCRIPTS) >= 10
    assert {"bench_detector.py", "bench_race.py", "bench_sequential.py"} <= {
        p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_benchmark_help(script: Path):
    """It imports (everything at its top) and its parser answers ``--help``."""
    proc = _run(script, "--help", timeout=120)
    assert proc.returncode == 0, f"{script.name} --help: {proc.stderr.strip()[-1500:]}"
    assert proc.stdout.startswith("usage: "), proc.stdout[:300]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("script", _params())
def test_benchmark_smoke_run(script: Path, tmp_path: Path):
    """The smallest run finishes and prints its figures."""
    smoke = smoke_of(script)
    args = [a.replace("{tmp}", str(tmp_path)) for a in smoke["args"]]
    proc = _run(script, *args, timeout=600)
    where = f"{script.name} {' '.join(args)}"
    assert proc.returncode == 0, f"{where}: exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, f"{where}: {proc.stderr[-2000:]}"
    assert re.search(smoke["prints"], proc.stdout, re.M), (
        f"{where}: no match for {smoke['prints']!r} in:\n{proc.stdout[-2000:]}")


def test_smoke_of_names_what_is_missing(tmp_path: Path):
    bare = tmp_path / "bench_new.py"
    bare.write_text('"""A benchmark."""\n\ndef main():\n    return 0\n')
    with pytest.raises(ValueError, match="declares no module-level SMOKE"):
        smoke_of(bare)
    bare.write_text('SMOKE = {"args": [], "prints": "x", "marks": ["gpu"]}\n')
    with pytest.raises(ValueError, match="not in"):
        smoke_of(bare)
