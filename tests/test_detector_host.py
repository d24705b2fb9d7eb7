"""The race detector for real (issue #12): valgrind's DRD from the Debian root on the real
workload and onnxruntime 1.21, and on the calibration programs.

Needs `coldstart runtime prepare` (scripts/setup.sh does it; it installs valgrind into the
root) and root, as the host target itself does. A detector launch takes 30-60 s, so each
test makes at most two.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.launch import LaunchContext
from kit.targets.host.detector import Detector, ensure_tool, find_tool, record_on_target
from kit.targets.host.detector.tool import debuginfo_dir
from kit.targets.host.detector.calibration import EXPECTED, VARIANTS, build_calibration, run_calibration
from kit.modelset import load_modelset
from kit.records import Outcome
from kit.scenario import parse_scenario
from kit.targets.host import HostLauncher, load_runtime
from kit.targets.host.witness import witness_library

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.host, pytest.mark.slow]


def coldstart(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=900)


@pytest.fixture(scope="module")
def runtime():
    runtime = load_runtime()
    find_tool(runtime)  # fails with what to run when valgrind was not set up
    return runtime


def test_prepare_sets_up_the_roots_valgrind_without_mounts(runtime):
    install = ensure_tool(runtime)  # what `coldstart runtime prepare` does; idempotent
    assert install == find_tool(runtime)
    if runtime.kind == "debian-root":
        assert install.where == "root" and install.launcher[0] == runtime.loader
        assert install.env["VALGRIND_LIB"].startswith(runtime.root)
        # glibc's debug file, linked where valgrind looks for it from the host
        libc = Path(runtime.lib_dir, "libc.so.6").resolve()
        links = list((debuginfo_dir(runtime) / str(libc.parent).lstrip("/")).glob("*.debug"))
        assert links and all(p.resolve().is_file() for p in links)
        assert str(Path(runtime.root) / "usr/lib/debug/.build-id") in str(links[0].resolve())
    assert install.version.startswith("3.")


def test_calibration_drd_tells_the_racy_init_from_both_fixes(runtime, tmp_path):
    binaries = build_calibration(runtime)
    install = find_tool(runtime)
    for run in range(2):
        for variant in VARIANTS:
            result = run_calibration(install, runtime, "drd", variant, binaries[variant],
                                     tmp_path / str(run))
            assert result.complete and result.error is None, result
            assert result.right, result  # racy: a race on the statics; fixes: none
            if not EXPECTED[variant]:
                assert result.races == 0, result


def test_calibration_tsan_tells_the_racy_init_from_both_fixes(runtime, tmp_path):
    """The four programs built with -fsanitize=thread in the root, run as a launch is: the
    racy and half-fix programs race on their statics in every run, the fixes never."""
    if runtime.kind != "debian-root":
        pytest.skip("the ThreadSanitizer calibration is built in the kit's Debian root")
    binaries = build_calibration(runtime, tsan=True)
    for run in range(3):
        for variant in VARIANTS:
            result = run_calibration(None, runtime, "tsan", variant, binaries[variant],
                                     tmp_path / str(run))
            assert result.complete and result.error is None, result
            assert result.right, result
            if not EXPECTED[variant]:
                assert result.races == 0, result


def test_concurrent_launch_has_the_race_on_the_statics(runtime, tmp_path):
    out = tmp_path / "concurrent"
    proc = coldstart("run", "host", "--detector", "drd", "--launches", "2", "--out", str(out),
                     "--label", "conc")
    assert proc.returncode == 0, proc.stderr
    campaign = load_campaign(out)
    assert campaign.meta.options["detector"]["tool"] == "drd"
    for record in campaign.records:
        assert record.outcome is Outcome.COMPLETED, record.error
        assert record_on_target(record) is True, record.detector["reason"]
        payload = record.detector
        assert payload["tool"] == "drd" and payload["complete"]
        evidence = payload["evidence"]
        wrapper = int(evidence["wrapper"]["offset"], 16)
        allocator = int(evidence["allocator_ptr"]["offset"], 16)
        assert allocator % 16 == 0 and abs(allocator - wrapper) >= 48
        on = [r for r in payload["races"] if r["class"] == "on_target"]
        assert {r["section"] for r in on} <= {".data", ".bss"}
        assert all(r["module"].startswith("libonnxruntime.so") for r in on)
        assert payload["xml"] == f"artifacts/{record.launch_id}/detector.xml"
        assert payload["xml"] in record.artifacts and (out / payload["xml"]).exists()
        # the kit's own code is invisible: no race in the workload's or the witness's code
        for race in payload["races"]:
            top = (race["stack"] or [{}])[0].get("module") or ""
            assert "coldstart-workload" not in top and "witness" not in top, race


def test_serial_launch_has_no_race_on_the_statics(runtime, tmp_path):
    out = tmp_path / "serial"
    proc = coldstart("run", "host", "--detector", "drd", "--launches", "1", "--out", str(out),
                     "--scenario", "mode=serial", "--label", "serial")
    assert proc.returncode == 0, proc.stderr
    (record,) = load_campaign(out).records
    assert record.outcome is Outcome.COMPLETED
    assert record_on_target(record) is False, record.detector["reason"]


def test_a_tool_that_dies_is_an_infra_error(runtime, tmp_path):
    # helgrind without the root's glibc debug information: the real failure of running a
    # root's valgrind from the host (kit/targets/host/detector/tool.py): it aborts at the first join
    detector = Detector("helgrind", runtime)
    detector.install = dataclasses.replace(detector.install, options=())
    launcher = HostLauncher(runtime, load_modelset(None), witness=witness_library(runtime),
                            detector=detector)
    art = tmp_path / "artifacts" / "died-00000"
    art.mkdir(parents=True)
    ctx = LaunchContext(scenario=parse_scenario("").with_id("died-00000"), index=0, attempt=1,
                        label="died", artifacts_dir=art, artifacts_rel="artifacts/died-00000",
                        timeout_s=30.0)
    record = launcher.launch(ctx)
    assert record.outcome is Outcome.INFRA_ERROR and record.crash is None
    assert "race detector (helgrind) died" in record.error and "Assertion" in record.error
    assert "artifacts/died-00000/detector-message.txt" in record.artifacts
    assert "Assertion 'found' failed" in (art / "detector-message.txt").read_text()
    assert record_on_target(record) is None
