"""One host launch under the race detector: wrapping its command, reading what it left.

:class:`Detector` is what :class:`kit.targets.host.HostLauncher` holds in detector mode:

* :meth:`Detector.wrap` puts the tool in front of the workload's argv (see
  :func:`kit.targets.host.detector.tool.wrap_command`) and names the XML file,
  ``artifacts/<id>/detector.xml``;
* :attr:`Detector.slowdown` multiplies the launch's time-out;
* :meth:`Detector.finish` reads the XML and the witness's observation into the record's
  ``detector`` payload (:func:`kit.targets.host.detector.attribute.detector_payload`), and says whether
  the tool itself died: its XML lacks the closing ``FINISHED`` status although the kit did
  not kill it. Such a launch is an ``infra-error``, never a crash of the workload, and its
  ``on_target`` is ``null`` (a tool that broke down is no evidence); the tool's own lines
  from stderr are kept as ``artifacts/<id>/detector-message.txt``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from ...._bounded import read_tail_bounded
from ....errors import UsageError
from ....modelset import sha256_file
from ..witness.race import RaceObservation
from .attribute import detector_payload
from .report import read_report
from .statics import LibraryInfo, analyze_library, objdump_command
from .tool import SLOWDOWN, TOOLS, ToolInstall, find_tool, wrap_command

__all__ = ["Detector", "DetectorResult", "XML_NAME", "MESSAGE_NAME"]

XML_NAME = "detector.xml"
MESSAGE_NAME = "detector-message.txt"
_TAIL_BYTES = 512 * 1024
_TOOL_LINE_RE = re.compile(r"^(==\d+==|--\d+--|valgrind:|Helgrind:|drd:|DRD:|vex:|host stacktrace"
                           r"|sched status|Thread \d+: status|\s+at 0x|\s+by 0x)")


@dataclasses.dataclass(frozen=True)
class DetectorResult:
    """What :meth:`Detector.finish` read from one launch.

    Attributes:
        payload: the record's ``detector`` payload.
        tool_error: one line saying the tool itself died (the launch is an infra error),
            or ``None``.
        artifacts: artifact paths (relative to the campaign) it added.
    """

    payload: dict[str, Any]
    tool_error: str | None
    artifacts: list[str]


class Detector:
    """The race detector for the launches of one runtime.

    Args:
        tool: ``helgrind`` or ``drd``.
        runtime: a built :class:`kit.targets.host.Runtime`.

    Raises:
        UsageError: an unknown tool, or no valgrind set up for the runtime (the hint says
            what to run).
    """

    def __init__(self, tool: str, runtime: Any) -> None:
        if tool not in TOOLS:
            raise UsageError(f"unknown race detector {tool!r}",
                             f"use --detector {' or --detector '.join(TOOLS)}")
        self.tool = tool
        self.runtime = runtime
        self.install: ToolInstall = find_tool(runtime)
        self.slowdown = SLOWDOWN[tool]
        self.library = str(runtime.ort_library)
        self._info: LibraryInfo | None = None
        self._info_error: str | None = None

    @property
    def version(self) -> str:
        """valgrind's version, e.g. ``3.24.0``."""
        return self.install.version

    def analyze(self) -> LibraryInfo | None:
        """The library analysis (:func:`kit.targets.host.detector.statics.analyze_library`), made once;
        ``None`` when the library cannot be read as ELF."""
        if self._info is None and self._info_error is None:
            try:
                self._info = analyze_library(self.library, objdump_command(self.runtime),
                                             sha256_file(Path(self.library)))
            except Exception as exc:  # an unreadable library must not lose launches
                self._info_error = f"cannot analyse {self.library}: {exc}"
        return self._info

    def describe(self) -> dict[str, Any]:
        """``campaign.json``'s note on the detector (tool, version, where it runs from)."""
        return {"tool": self.tool, "version": self.version, "where": self.install.where,
                "slowdown": self.slowdown}

    def wrap(self, argv: list[str], artifacts_dir: Path) -> tuple[list[str], dict[str, str]]:
        """The launch's argv under the tool and the environment to add to it."""
        return wrap_command(self.install, self.tool, argv, artifacts_dir / XML_NAME)

    def finish(self, ctx: Any, witness: Any, stderr_path: Path, killed: bool,
               returncode: int | None = None) -> DetectorResult:
        """Read one finished launch (see the module doc). Never raises.

        Args:
            ctx: the launch's :class:`kit.launch.LaunchContext`.
            witness: the launch's :class:`kit.targets.host.witness.race.RaceObservation`, or ``None``
                when the witness was off.
            stderr_path: the launch's stderr file (the tool's messages are in it).
            killed: the kit killed the process (time-out, Ctrl-C): an unfinished XML is then
                expected and is not the tool's fault.
            returncode: the process's status (unused: valgrind's XML says how it ended).
        """
        artifacts_dir, artifacts_rel = Path(ctx.artifacts_dir), ctx.artifacts_rel
        if witness is None:
            witness = RaceObservation(False, reason="the race witness was off")
        xml_path = artifacts_dir / XML_NAME
        report = read_report(xml_path)
        xml_rel = f"{artifacts_rel}/{XML_NAME}"
        payload = detector_payload(self.tool, self.version, xml_rel, report, witness,
                                   self.library, self.analyze())
        if self._info_error and payload["on_target"] is None:
            payload["reason"] += f"; {self._info_error}"
        artifacts = [xml_rel] if xml_path.exists() else []
        tool_error = None
        if not killed and not report.finished and not report.capped:
            lines = _tool_lines(stderr_path)
            message = artifacts_dir / MESSAGE_NAME
            message.write_text("\n".join(lines) + "\n")
            artifacts.append(f"{artifacts_rel}/{MESSAGE_NAME}")
            first = next((ln for ln in lines if "Assertion" in ln or "impossible" in ln
                          or "FATAL" in ln or "rror" in ln), lines[0] if lines else None)
            why = (first or report.read_error or "no message").strip()
            tool_error = f"the race detector ({self.tool}) died before the launch ended: {why}"
            # what a tool that broke down reported is not evidence either way
            payload.update(on_target=None, reason=f"{tool_error} (its reports are not used)")
        return DetectorResult(payload, tool_error, artifacts)


def _tool_lines(stderr_path: Path, limit: int = 200) -> list[str]:
    """valgrind's own lines from the end of the launch's stderr (bounded read)."""
    try:
        text = read_tail_bounded(stderr_path, _TAIL_BYTES, what="launch stderr").decode(
            "utf-8", "replace")
    except UsageError:  # gone, or not a regular file: nothing of the tool's to show
        return []
    lines = [ln for ln in text.splitlines() if _TOOL_LINE_RE.match(ln)]
    return lines[-limit:]
