"""The host race detector (issue #12): a happens-before detector sees the data race of
onnxruntime#32461 on the XNNPACK allocator statics in every concurrent cold launch, whether
or not the threads really collided.

Each launch of ``coldstart run host --detector drd`` (or ``helgrind``) runs the workload
under valgrind's tool from the runtime's own root, on the host and without mounts
(:mod:`kit.targets.host.detector.tool`), reads the tool's XML (:mod:`kit.targets.host.detector.report`) and ties each
race to an offset in libonnxruntime.so through the race witness's load bases and wrapper
address and a disassembly of the library (:mod:`kit.targets.host.detector.statics`,
:mod:`kit.targets.host.detector.attribute`). The calibration programs (:mod:`kit.targets.host.detector.calibration`)
show which tool tells the racy lazy init from its two fixed shapes. docs/race.md has the
measured rates.

The API the target and verdict layers use:

* :class:`Detector` (``wrap``, ``slowdown``, ``finish``) and :func:`ensure_tool`;
  :class:`TsanDetector`, the same for ThreadSanitizer builds; :func:`make_detector`;
* :func:`record_on_target`: ``True``/``False``/``None`` for one launch record;
* :data:`TOOLS`, :func:`check_tool_name`.
"""

from __future__ import annotations

from ....errors import UsageError
from .attribute import ALLOCATOR_PTR, WRAPPER, detector_payload, record_on_target
from .launch import Detector, DetectorResult
from .report import ToolReport, read_report
from .tool import SLOWDOWN, TOOLS, ToolInstall, ensure_tool, find_tool
from .tsan import TsanDetector

__all__ = ["Detector", "DetectorResult", "ensure_tool", "find_tool", "ToolInstall",
           "record_on_target", "detector_payload", "read_report", "ToolReport", "TOOLS",
           "SLOWDOWN", "WRAPPER", "ALLOCATOR_PTR", "check_tool_name", "PAYLOAD_KEY",
           "DETECTORS", "TsanDetector", "make_detector"]

#: every ``--detector`` name: valgrind's tools, and ThreadSanitizer on the kit's
#: instrumented builds (:mod:`kit.targets.host.detector.tsan`)
DETECTORS = (*TOOLS, "tsan")

#: The key of the payload in a launch record (``LaunchRecord.extra["detector"]``).
PAYLOAD_KEY = "detector"


def check_tool_name(tool: str, target: str = "host") -> str:
    """``tool`` if it is a detector the ``target`` can run, else a one-line error.

    Raises:
        UsageError: not ``host``, or not one of :data:`TOOLS`.
    """
    if target != "host":
        raise UsageError(f"--detector works on the host target only, not {target!r}",
                         "run the detector with `coldstart run host --detector drd`")
    if tool not in DETECTORS:
        raise UsageError(f"unknown race detector {tool!r}",
                         f"use --detector {' or --detector '.join(DETECTORS)}")
    return tool


def make_detector(tool: str, runtime: object) -> "Detector | TsanDetector":
    """The detector ``tool`` for ``runtime``'s launches (``tsan``: an instrumented runtime).

    Raises:
        UsageError: see :class:`Detector` and :class:`TsanDetector`.
    """
    return TsanDetector(runtime) if tool == "tsan" else Detector(tool, runtime)
