"""The pytest plugin on the real host target, through pytest's ``pytester``: a test module
runs a campaign of the native workload and asserts on it, and a crash fails the test with its
rate and class."""

from __future__ import annotations

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
# another class; only the injected crash may
@pytest.mark.parametrize("scenario, passes", [("mode=serial", True),
                                              ("mode=serial&inject=segv@sessions-created",
                                               False)])
def test_plugin_runs_host_campaigns(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                    scenario: str, passes: bool) -> None:
    monkeypatch.setenv("COLDSTART_CACHE", str(CACHE))
    pytester.makepyfile(test_host_module=MODULE.format(label="candidate", scenario=scenario))
    runs = pytester.path / "runs"
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider",
                                           "--coldstart-target", "host",
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
    lines = (campaigns[0].parent / "launches.jsonl").read_text().splitlines()
    assert len(lines) == 2
