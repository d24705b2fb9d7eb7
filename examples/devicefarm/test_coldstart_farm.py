"""Sample device-farm test module: cold-launch the app on every target and assert it does not
crash with the onnxruntime#32461 signature (uses the ``coldstart`` pytest plugin).

Device farms that run "Appium + pytest" test packages run it as it is; locally or in CI::

    pytest examples/devicefarm \\
        --coldstart-target "appium --server https://USER:KEY@hub.example/wd/hub \\
                            --platform android --caps examples/devicefarm/caps.example.json" \\
        --coldstart-launches 50 --coldstart-report-dir reports/

Give one ``--coldstart-target`` per device; with pytest-xdist (``-n 4 --dist loadgroup``)
the devices run in parallel. ``reports/<target>/<label>/junit.xml`` is the campaign's JUnit
report (kit.report); pytest's own ``--junitxml`` gets the counts as properties.
"""

from __future__ import annotations

import os

import pytest

#: The build under test (a label such as ``patched-1.24.3``), from the farm's environment.
LABEL = os.environ.get("COLDSTART_LABEL", "candidate")
#: The production shape that meets the defect: three creates at once on XNNPACK.
SCENARIO = "mode=concurrent&sessions=3&ep=xnnpack,cpu"

pytestmark = pytest.mark.coldstart


def test_cold_starts_do_not_crash_with_the_xnnpack_race(coldstart) -> None:
    result = coldstart.run(LABEL, scenario=SCENARIO)
    result.assert_launched()
    result.assert_no_crash("xnnpack-allocator-uaf")


def test_cold_starts_reach_done(coldstart) -> None:
    result = coldstart.run(f"{LABEL}-serial", scenario="mode=serial&sessions=3")
    result.assert_launched()
    result.assert_no_crash()
