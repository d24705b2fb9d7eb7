"""The pytest plugin on the real host target, through pytest's ``pytester``: a test module
runs a campaign of the native workload (and of the app itself, rn-host) and asserts on it,
and a crash fails the test with its rate and class."""

from __future__ import annotations

import json

import pytest

from kit.modelset import cache_dir

pytestmark = [pytest.mark.host, pytest.mark.slow]
pytest_plugins = ("pytester",)

#: the prepared runtime's cache, read before pytester gives the inner runs a HOME of their own
CACHE = cache_dir()

MODULE = '''
def test_host_launches(coldstart):
    result = coldstart.run("{label}", scenario="{scenario}", launches=2)
    result.assert_launched()
    result.assert_no_crash()
'''


# serial creates: the real race cannot crash a launch, or crash it first in creation as
# another class; only the injected crash may. rn-host: the app's own JS (docs/rn-host.md)
@pytest.mark.parametrize("target, scenario, passes", [
    ("host", "mode=serial", True), ("host", "mode=serial&inject=segv@sessions-created", False),
    ("rn-host", "mode=serial", True)])
def test_plugin_runs_host_campaigns(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                    target: str, scenario: str, passes: bool) -> None:
    monkeypatch.setenv("COLDSTART_CACHE", str(CACHE))
    pytester.makepyfile(test_host_module=MODULE.format(label="candidate", scenario=scenario))
    runs = pytester.path / "runs"
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider",
                                           "--coldstart-target", target,
                                           "--coldstart-out", str(runs), timeout=600)
    out = result.stdout.str() + result.stderr.str()
    if passes:
        assert result.ret == 0, out
        result.assert_outcomes(passed=1)
    else:
        assert result.ret == 1, out
        result.assert_outcomes(failed=1)
        assert "2/2" in out and "other-native-crash" in out
    campaigns = list(runs.rglob("campaign.json"))
    assert len(campaigns) == 1
    assert json.loads(campaigns[0].read_text())["target"] == target
    lines = (campaigns[0].parent / "launches.jsonl").read_text().splitlines()
    assert len(lines) == 2


STAGED = '''
def test_staged_baseline(coldstart):
    result = coldstart.run("baseline", scenario="mode=serial&inject=segv@sessions-created",
                           launches=3, stage="1:1", event="any-crash")
    assert result.campaign.meta.stage.launches == 1
    assert result.count() == (1, 1)

def test_bad_stage_fails_with_one_line(coldstart):
    coldstart.run("other", launches=3, stage=(2, 3))
'''


def test_plugin_runs_a_staged_baseline(pytester: pytest.Pytester,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``coldstart.run(..., stage="1:1", event=...)`` is ``coldstart run --stage 1:1``: a
    first stage of one launch that crashed meets it, so the campaign stops at one of its
    three launches; a stage with more events than launches fails the test in one line."""
    monkeypatch.setenv("COLDSTART_CACHE", str(CACHE))
    pytester.makepyfile(test_staged_module=STAGED)
    runs = pytester.path / "runs"
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider",
                                           "--coldstart-target", "host",
                                           "--coldstart-out", str(runs), timeout=600)
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, failed=1)
    assert "coldstart: --stage 2:3: the events R must be between 1 and the launches N" in out
    campaigns = list(runs.rglob("campaign.json"))
    assert len(campaigns) == 1
    lines = (campaigns[0].parent / "launches.jsonl").read_text().splitlines()
    assert len(lines) == 1
