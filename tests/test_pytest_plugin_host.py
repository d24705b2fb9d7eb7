"""The pytest plugin on the real host target: a test module runs a campaign of the native
workload and asserts on it, and a crash fails the test with its rate and class."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.host, pytest.mark.slow]

MODULE = '''
def test_host_launches(coldstart):
    result = coldstart.run("{label}", scenario="{scenario}", launches=2)
    result.assert_launched()
    result.assert_no_crash()
'''


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=600)


# serial creates: the real race cannot crash a launch, or crash it first in creation as
# another class; only the injected crash may
@pytest.mark.parametrize("scenario, passes", [("mode=serial", True),
                                              ("mode=serial&inject=segv@sessions-created",
                                               False)])
def test_plugin_runs_host_campaigns(tmp_path: Path, scenario: str, passes: bool) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "test_host_module.py").write_text(
        MODULE.format(label="candidate", scenario=scenario))
    proc = _pytest(tmp_path / "t", "--coldstart-target", "host",
                   "--coldstart-out", str(tmp_path / "runs"))
    out = proc.stdout + proc.stderr
    if passes:
        assert proc.returncode == 0, out
        assert "1 passed" in proc.stdout
    else:
        assert proc.returncode == 1, out
        assert "1 failed" in proc.stdout
        assert "2/2" in out and "other-native-crash" in out
    campaigns = list((tmp_path / "runs").rglob("campaign.json"))
    assert len(campaigns) == 1
    lines = (campaigns[0].parent / "launches.jsonl").read_text().splitlines()
    assert len(lines) == 2
