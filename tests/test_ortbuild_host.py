"""The kit's own onnxruntime builds for real (``coldstart runtime build-ort``): one detector
launch per variant. Runs only where the builds exist on the machine (they take about 40
minutes to make, so the suite never makes them: `scripts/main-job.sh` does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.targets.host.detector import record_on_target
from kit.errors import UsageError
from kit.records import Outcome
from kit.targets.host import load_runtime

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.host, pytest.mark.slow]
SCENARIO = "mode=concurrent&models=hey_jarvis_v0.1&sessions=2&infer=0"
#: whether DRD must see the race on the allocator statics in a concurrent launch
EXPECTED = {"baseline": True, "fix": False, "half-fix": True}


def _built(name: str):
    try:
        runtime = load_runtime(name)
    except UsageError:
        runtime = None
    if runtime is None or runtime.build is None:
        pytest.skip(f"no kit build {name!r} on this machine (make it with `coldstart runtime "
                    f"build-ort --name {name}{'' if name == 'baseline' else ' --patch ' + name}`)")
    return runtime


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_one_detector_launch_per_variant(name, tmp_path):
    runtime = _built(name)
    out = tmp_path / name
    proc = subprocess.run([sys.executable, "-m", "kit.cli", "run", "host", "--runtime", name,
                           "--detector", "drd", "--launches", "1", "--scenario", SCENARIO,
                           "--label", name, "--out", str(out)], cwd=ROOT, text=True,
                          capture_output=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    campaign = load_campaign(out)
    build = campaign.meta.build
    assert build["ort_build"]["patch"] == (None if name == "baseline" else
                                           {**build["ort_build"]["patch"], "name": name})
    assert build["ort_library"] == runtime.ort_library
    (record,) = campaign.records
    assert record.outcome is Outcome.COMPLETED, record.error
    assert record_on_target(record) is EXPECTED[name], record.detector
