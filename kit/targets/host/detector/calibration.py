"""The detector's calibration set: does a tool tell the racy lazy init from its fixes?

Four small programs (``calibration/*.cpp`` next to this module; ``lazy_init.h`` says what
they share) run onnxruntime's lazy init of the XNNPACK allocator statics on three threads:
``racy`` (onnxruntime 1.21 as it is), ``call_once`` (the shape of the fix, PR #32489),
``mutex``, and ``half_fix`` (the shape of the kit's negative-control patch: the creation
guarded, the wrapper's context still written by every caller). Each prints the addresses of
its two statics, so a run is judged with the same overlap rule as a launch: a tool is right
on a run when it reports a race on the statics of ``racy`` and ``half_fix`` and none on those
of ``call_once`` and ``mutex``.

:func:`build_calibration` compiles them with the runtime's own compiler (``chroot <root>
g++`` for a Debian root, as the workload is built); :func:`run_calibration` runs one under
a tool exactly as a launch is run (:func:`kit.targets.host.detector.tool.wrap_command`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable

from ....errors import UsageError
from .attribute import ALLOCATOR_PTR, WRAPPER, overlapping_target
from .report import read_report
from .tool import ToolInstall, wrap_command

__all__ = ["VARIANTS", "EXPECTED", "CalibrationRun", "build_calibration", "run_calibration"]

#: The programs, and whether a right tool reports a race on their statics.
VARIANTS = ("racy", "call_once", "mutex", "half_fix")
EXPECTED = {"racy": True, "call_once": False, "mutex": False, "half_fix": True}
_FLAGS = ("-std=c++17", "-O2", "-g", "-pthread")
#: the flags of the programs run under ThreadSanitizer (its documented -O1 -g)
TSAN_FLAGS = ("-std=c++17", "-O1", "-g", "-pthread", "-fsanitize=thread")
_PREFIX = "COLDSTART-CALIBRATION "


@dataclasses.dataclass(frozen=True)
class CalibrationRun:
    """One calibration program run under one tool.

    Attributes:
        tool, variant: which.
        races: all races the tool reported.
        on_statics: races overlapping the program's two statics.
        allocators: how many allocators the program created (2+: it really collided).
        complete: the tool finished and its XML was read whole.
        error: why the run says nothing (no output line, unreadable XML), else ``None``.
    """

    tool: str
    variant: str
    races: int
    on_statics: int
    allocators: int | None
    complete: bool
    error: str | None = None

    @property
    def right(self) -> bool:
        """The tool's answer matches :data:`EXPECTED` (and the run was complete)."""
        return self.error is None and self.complete and (
            (self.on_statics > 0) == EXPECTED[self.variant])


def _sources() -> dict[str, bytes]:
    base = files("kit") / "targets" / "host" / "detector" / "calibration"
    names = ["lazy_init.h", *(f"{v}.cpp" for v in VARIANTS)]
    return {name: (base / name).read_bytes() for name in names}


def build_calibration(runtime: Any, log: Callable[[str], None] = lambda _m: None,
                      tsan: bool = False) -> dict[str, Path]:
    """Compile the four programs for ``runtime`` (kept while sources and flags are
    unchanged; ``tsan``: instrumented, :data:`TSAN_FLAGS`) and return ``{variant: binary}``.

    Raises:
        UsageError: no compiler, or a program does not compile (first error line shown).
    """
    from ..runtime import run_compiler, runtime_dir

    sources = _sources()
    flags = TSAN_FLAGS if tsan else _FLAGS
    digest = hashlib.sha256(json.dumps([sorted((k, v.hex()) for k, v in sources.items()),
                                        flags, runtime.kind]).encode()).hexdigest()[:16]
    if runtime.kind == "debian-root":
        if os.geteuid() != 0:
            raise UsageError("building the calibration inside the Debian root needs root",
                             "run it as root (chroot)")
        inner = Path("/opt/coldstart/calibration") / digest
        outer = Path(runtime.root) / inner.relative_to("/")
        compile_prefix = ["chroot", runtime.root, "g++"]
        src_dir = inner
    else:
        compiler = shutil.which("g++")
        if compiler is None:
            raise UsageError("no g++ on this host", "install g++")
        outer = runtime_dir(runtime.name) / "calibration" / digest
        compile_prefix, src_dir = [compiler], outer
    built = {v: outer / v for v in VARIANTS}
    if all(p.exists() for p in built.values()):
        return built
    outer.mkdir(parents=True, exist_ok=True)
    for name, data in sources.items():
        (outer / name).write_bytes(data)
    for variant in VARIANTS:
        log(f"compiling the calibration program {variant}")
        run_compiler([*compile_prefix, *flags, str(src_dir / f"{variant}.cpp"), "-o",
                      str(src_dir / variant)], f"calibration {variant}",
                     outer / f"{variant}.log")
    return built


def _line(stdout: str) -> dict[str, Any] | None:
    for line in stdout.splitlines():
        if line.startswith(_PREFIX):
            try:
                data = json.loads(line[len(_PREFIX):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _tsan_report(work_dir: Path, variant: str) -> tuple[Path, dict[str, str]]:
    from .tsan import tsan_env

    prefix = work_dir / f"tsan-{variant}"
    for old in work_dir.glob(f"{prefix.name}.*"):
        old.unlink()
    return prefix, tsan_env(prefix)


def run_calibration(install: ToolInstall | None, runtime: Any, tool: str, variant: str,
                    binary: Path, work_dir: Path, timeout_s: float = 300.0) -> CalibrationRun:
    """Run one program under ``tool`` and judge it. The XML (ThreadSanitizer: its reports,
    ``tsan-<variant>.<pid>``; ``binary`` built with ``tsan=True``, ``install`` unused) is
    left in ``work_dir``.

    Raises:
        UsageError: an unknown tool (:func:`kit.targets.host.detector.tool.wrap_command`).
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    xml = work_dir / f"{tool}-{variant}.xml"
    argv = [str(binary)]
    if getattr(runtime, "loader", None):
        argv = [runtime.loader, "--library-path", runtime.lib_dir, str(binary)]
    if tool == "tsan":
        prefix, extra = _tsan_report(work_dir, variant)
        cmd = argv
    else:
        assert install is not None
        cmd, extra = wrap_command(install, tool, argv, xml)
    try:
        proc = subprocess.run(cmd, env={**os.environ, **extra}, capture_output=True, text=True,
                              errors="replace", timeout=timeout_s, stdin=subprocess.DEVNULL)
        stdout = proc.stdout
    except subprocess.TimeoutExpired:
        return CalibrationRun(tool, variant, 0, 0, None, False, f"no end in {timeout_s:g} s")
    if tool == "tsan":
        report = _read_tsan(prefix, proc.returncode)
    else:
        report = read_report(xml)
    info = _line(stdout)
    if info is None:
        return CalibrationRun(tool, variant, len(report.races), 0, None, report.complete,
                              "the program printed no COLDSTART-CALIBRATION line")
    try:
        targets = [(WRAPPER, int(info["wrapper"], 16), int(info["wrapper_size"])),
                   (ALLOCATOR_PTR, int(info["allocator_ptr"], 16),
                    int(info["allocator_ptr_size"]))]
    except (KeyError, TypeError, ValueError):
        return CalibrationRun(tool, variant, len(report.races), 0, None, report.complete,
                              "the program's line lacks the statics' addresses")
    on = sum(1 for r in report.races if overlapping_target(r.address, r.size, targets))
    return CalibrationRun(tool, variant, len(report.races), on, info.get("allocators"),
                          report.complete, report.read_error)


def _read_tsan(prefix: Path, returncode: int) -> Any:
    from .report import ToolReport
    from .tsan import read_reports, parse_tsan_text

    text, error = read_reports(sorted(prefix.parent.glob(f"{prefix.name}.*")))
    races, other, fatal = parse_tsan_text(text)
    return ToolReport(tool="tsan", version=None, races=tuple(races), other_errors=other,
                      finished=returncode >= 0 and fatal is None, fatal_signal=None,
                      bytes_read=len(text), read_error=error or fatal)
