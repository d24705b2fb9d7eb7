"""What many test files share: the ``coldstart`` command run as a user runs it, and the
check that bad input gets one line and the right exit code, with no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# piped output is read whole by the tests; a CI's own COLUMNS would wrap it (tests that
# are about COLUMNS set it themselves)
os.environ.pop("COLUMNS", None)


def coldstart(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
              cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m kit.cli ARGS`` from the checkout (text output captured)."""
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], cwd=cwd or ROOT,
                          text=True, capture_output=True, env={**os.environ, **(env or {})},
                          timeout=timeout)


def assert_one_line_error(stderr: str, fragment: str = "", code: int | None = None,
                          returncode: int | None = None, progress: bool = True) -> str:
    """Check a refusal: exit ``code`` (when given), exactly one ``coldstart: error:`` line
    holding ``fragment``, last on stderr, and no traceback; with ``progress`` off, nothing
    else on stderr. Returns the error line."""
    if code is not None:
        assert returncode == code, (returncode, stderr)
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("coldstart: error: ")]
    assert errors and errors == lines[-1:], stderr
    if not progress:
        assert len(lines) == 1, stderr
    assert fragment in errors[0], (fragment, errors[0])
    assert "Traceback" not in stderr
    return errors[0]


def one_line_error(proc: subprocess.CompletedProcess, fragment: str = "", code: int = 2,
                   progress: bool = True) -> str:
    """:func:`assert_one_line_error` on a finished :func:`coldstart` process."""
    return assert_one_line_error(proc.stderr, fragment, code, proc.returncode, progress)
