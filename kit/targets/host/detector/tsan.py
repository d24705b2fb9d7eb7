"""The race detector at native speed: ThreadSanitizer, on a kit build instrumented for it.

``coldstart run host --detector tsan --runtime NAME`` runs the instrumented variant of a kit
build (``coldstart runtime build-ort --tsan``: ``-fsanitize=thread`` on the two translation
units of onnxruntime#32461, the workload compiled and linked with it, so libtsan is loaded
first; docs/builds.md). ThreadSanitizer checks only instrumented accesses, but it sees every
``pthread`` and ``std::call_once`` synchronisation of the whole process through its
interceptors, so the racy accesses to the allocator statics are judged with the same
happens-before relation as under DRD.

How a launch runs: no wrapper; ``TSAN_OPTIONS`` (the sanitizer's flags, sanitizer_common's
``sanitizer_flags.inc`` and tsan's ``tsan_flags.inc``) sends the reports to
``<dir>/tsan.<pid>`` (``log_path``) and keeps the workload's own exit status
(``exitcode=0``). The reports are text (tsan_report.cpp; :func:`parse_tsan_text`)::

    WARNING: ThreadSanitizer: data race (pid=60149)
      Write of size 8 at 0x7f5e3c1f2040 by thread T2:
        #0 onnxruntime::XnnpackExecutionProvider::CreatePreferredAllocators() .../xnnpack_execution_provider.cc:194 (libonnxruntime.so.1.21.0+0x2b6d4e)
      Previous write of size 8 at 0x7f5e3c1f2040 by thread T1:
        #0 ...
      Location is global 'onnxruntime::xnnpack::GetStoredAllocator()::xnn_allocator_wrapper_' of size 48 at 0x7f5e3c1f2040 (libonnxruntime.so.1.21.0+0xf52040)

Each race is attributed exactly as a DRD race (:func:`kit.targets.host.detector.attribute.detector_payload`):
its address, minus the library's load base from the race witness, against the wrapper's and
the AllocatorPtr's extents. The reports are kept as ``artifacts/<id>/tsan-report.txt``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ...._bounded import read_tail_bounded
from ....errors import UsageError
from ....modelset import sha256_file
from ..witness.race import RaceObservation
from .attribute import detector_payload
from .report import Frame, Race, ToolReport
from .statics import LibraryInfo, allocator_ptr_offset, analyze_library, objdump_command
from .tool import TOOL_BARRIER_ENV

__all__ = ["TsanDetector", "parse_tsan_text", "tsan_env", "read_reports", "symbol_statics", "REPORT_NAME", "TSAN_SLOWDOWN",
           "MAX_REPORT_BYTES", "TOOL"]

TOOL = "tsan"
REPORT_NAME = "tsan-report.txt"
#: the most report text read from one launch (a racy launch writes 10-40 KB)
MAX_REPORT_BYTES = 16 * 1024 * 1024
#: what a launch's time-out is multiplied by (ThreadSanitizer's published cost is 5-15x on
#: instrumented code; here only two translation units are)
TSAN_SLOWDOWN = 4.0
_SAFE_PATH = re.compile(r"^[A-Za-z0-9/._+-]+$")
_ACCESS_RE = re.compile(r"^\s*(?:Atomic )?([Rr]ead|[Ww]rite) of size (\d+) at (0x[0-9a-fA-F]+) by "
                        r"(main thread|thread T(\d+))")
_PREVIOUS_RE = re.compile(r"^\s*Previous (?:atomic )?(read|write) of size (\d+) at "
                          r"(0x[0-9a-fA-F]+) by (main thread|thread T(\d+))")
_FRAME_RE = re.compile(r"^\s*#\d+\s+(?P<sym>.*?)\s*\((?P<mod>[^()\s]+)\+(?P<off>0x[0-9a-fA-F]+)\)")
_WARNING_RE = re.compile(r"WARNING: ThreadSanitizer: (.+?)(?: \(pid=\d+\))?\s*$")
_FATAL_RE = re.compile(r"(FATAL: ThreadSanitizer.*|ThreadSanitizer: CHECK failed.*|"
                       r"ThreadSanitizer: (?:failed|unexpected|can't).*)")
_SOURCE_RE = re.compile(r"^(?P<sym>.*?)\s+(?P<file>[^\s:]*[/.][^\s:]*):(?P<line>\d+)(?::\d+)?$")


def tsan_env(log_prefix: Path) -> dict[str, str]:
    """The environment a launch under ThreadSanitizer gets: ``TSAN_OPTIONS`` with
    ``log_path`` (``log_prefix`` must be a path of plain characters: the flag parser splits
    on spaces, commas and colons), ``exitcode=0`` (the workload's own status stays), no halt
    on the first report, and the workload's pthread barrier."""
    if not _SAFE_PATH.match(str(log_prefix)):
        raise UsageError(f"the report path {log_prefix} has characters TSAN_OPTIONS cannot "
                         "carry", "use a campaign directory of plain characters")
    options = [f"log_path={log_prefix}", "exitcode=0", "halt_on_error=0",
               "report_signal_unsafe=0", "history_size=3", "second_deadlock_stack=1"]
    return {"TSAN_OPTIONS": " ".join(options), TOOL_BARRIER_ENV: "pthread"}


def _thread(match: re.Match[str]) -> int:
    return 0 if match.group(4) == "main thread" else int(match.group(5))


def _frame(line: str) -> Frame | None:
    match = _FRAME_RE.match(line)
    if match is None:
        return None
    text = match.group("sym").strip()
    text = text[:-len(" <null>")] if text.endswith(" <null>") else text
    symbol, file, number = text, None, None
    source = _SOURCE_RE.match(text)
    if source is not None:
        symbol, file, number = source.group("sym"), source.group("file"), int(source.group("line"))
    return Frame(ip=None, module=match.group("mod"), symbol=None if symbol in ("", "<null>")
                 else symbol, file=file, line=number, offset=int(match.group("off"), 16))


def parse_tsan_text(text: str, frames: int = 12) -> tuple[list[Race], dict[str, int],
                                                          str | None]:
    """ThreadSanitizer's reports in ``text``: the data races (one :class:`Race` per
    report: its access, the previous access's thread and stack, the ``Location is`` line as
    ``where``), the other warnings by kind (``lock-order-inversion (potential deadlock)``:
    1), and the first fatal line of the runtime itself, or ``None``."""
    races: list[Race] = []
    other: dict[str, int] = {}
    fatal = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        found = _FATAL_RE.search(line)
        if found and fatal is None:
            fatal = found.group(1).strip()
        warning = _WARNING_RE.search(line)
        if warning is None:
            i += 1
            continue
        kind = warning.group(1).strip()
        end = i + 1
        while end < len(lines) and not lines[end].startswith(("==================",
                                                              "WARNING: ThreadSanitizer")):
            end += 1
        block = lines[i + 1:end]
        i = end
        if kind != "data race":
            other[kind] = other.get(kind, 0) + 1
            continue
        race = _race(block, frames)
        if race is None:
            other["data race (unreadable)"] = other.get("data race (unreadable)", 0) + 1
        else:
            races.append(race)
    return races, other, fatal


def _race(block: list[str], frames: int) -> Race | None:
    access = previous = None
    stack: list[Frame] = []
    other_stack: list[Frame] = []
    where = None
    current: list[Frame] | None = None
    for line in block:
        if access is None and (m := _ACCESS_RE.match(line)):
            access, current = m, stack
        elif previous is None and (m := _PREVIOUS_RE.match(line)):
            previous, current = m, other_stack
        elif line.strip().startswith("Location is"):
            where, current = line.strip(), None
        elif line.strip().startswith(("Thread T", "Mutex M", "Main thread")):
            current = None
        elif current is not None and len(current) < frames:
            frame = _frame(line)
            if frame is not None:
                current.append(frame)
    if access is None:
        return None
    return Race("data race", access.group(1).lower(), int(access.group(3), 16),
                int(access.group(2)), _thread(access),
                _thread(previous) if previous is not None else None, tuple(stack),
                tuple(other_stack), where)


def read_reports(paths: list[Path]) -> tuple[str, str | None]:
    """The reports' text, at most :data:`MAX_REPORT_BYTES` (regular files only), and why it
    is not whole, or ``None``."""
    parts, left, error = [], MAX_REPORT_BYTES, None
    for path in sorted(paths):
        try:
            data = read_tail_bounded(path, left + 1, what="ThreadSanitizer report")
        except UsageError as exc:
            error = exc.message
            continue
        if len(data) > left:
            error = f"the reports are larger than {MAX_REPORT_BYTES:,} bytes; read the last part"
            data = data[-left:]
        parts.append(data.decode("utf-8", "replace"))
        left -= len(data)
        if left <= 0:
            break
    return "".join(parts), error


def symbol_statics(path: str) -> tuple[int, int] | None:
    """(AllocatorPtr offset, wrapper offset) from the library's symbol table (the kit's
    builds keep it): ``GetStoredAllocator()``'s two statics (statics.py's module doc)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    found: dict[str, int] = {}
    try:
        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            table = elf.get_section_by_name(".symtab")
            if not isinstance(table, SymbolTableSection):
                return None
            for sym in table.iter_symbols():
                name = sym.name
                if ("GetStoredAllocator" not in name or sym["st_info"]["type"] != "STT_OBJECT"
                        or name.startswith("_ZGV")):  # _ZGV: a static's guard variable
                    continue
                if name.endswith("ort_allocator"):
                    found["allocator"] = int(sym["st_value"])
                elif name.endswith("xnn_allocator_wrapper_"):
                    found["wrapper"] = int(sym["st_value"])
    except Exception:  # an unreadable table is no evidence; the objdump route stays
        return None
    if len(found) != 2:
        return None
    return found["allocator"], found["wrapper"]


class TsanDetector:
    """The ThreadSanitizer detector for the launches of one instrumented runtime (the
    interface of :class:`kit.targets.host.detector.Detector`).

    Raises:
        UsageError: the runtime is not a ThreadSanitizer build (``sanitizer`` is not
            ``tsan``).
    """

    tool = TOOL

    def __init__(self, runtime: Any) -> None:
        if getattr(runtime, "sanitizer", None) != TOOL:
            raise UsageError(f"runtime {runtime.name!r} is not built with ThreadSanitizer",
                             f"build it: `sudo coldstart runtime build-ort --name "
                             f"{runtime.name} --tsan`")
        self.runtime = runtime
        self.slowdown = TSAN_SLOWDOWN
        self.library = str(runtime.ort_library)
        self._info: LibraryInfo | None = None
        self._info_error: str | None = None

    @property
    def version(self) -> str | None:
        """The compiler that instrumented the build (its ``--version`` line)."""
        build = self.runtime.build or {}
        return build.get("compiler")

    def analyze(self) -> LibraryInfo | None:
        """The library analysis (:func:`kit.targets.host.detector.statics.analyze_library`),
        made once; where the disassembly does not locate the AllocatorPtr (instrumented
        code calls ``__tsan_read8`` between the load and the store), the symbol table does."""
        if self._info is None and self._info_error is None:
            try:
                info = analyze_library(self.library, objdump_command(self.runtime),
                                       sha256_file(Path(self.library)))
            except Exception as exc:  # an unreadable library must not lose launches
                self._info_error = f"cannot analyse {self.library}: {exc}"
                return None
            statics = symbol_statics(self.library)
            if statics is not None and allocator_ptr_offset(info, statics[1])[0] is None:
                info = dataclasses.replace(info, error=None, pairs=(*(
                    p for p in info.pairs if p[1] != statics[1]), statics))
            self._info = info
        return self._info

    def describe(self) -> dict[str, Any]:
        """``campaign.json``'s note on the detector."""
        build = self.runtime.build or {}
        return {"tool": TOOL, "version": self.version, "where": "instrumented build",
                "slowdown": self.slowdown, "instrumented": build.get("instrumented")}

    def _prefix(self, artifacts_dir: Path) -> Path:
        if _SAFE_PATH.match(str(artifacts_dir)):
            return artifacts_dir / "tsan"
        # a campaign path TSAN_OPTIONS cannot carry: a private folder, moved afterwards
        return Path(tempfile.mkdtemp(prefix="coldstart-tsan-", dir="/tmp")) / "tsan"

    def wrap(self, argv: list[str], artifacts_dir: Path) -> tuple[list[str], dict[str, str]]:
        """The launch's argv (unchanged) and the environment to add to it."""
        prefix = self._prefix(Path(artifacts_dir))
        self._prefixes = getattr(self, "_prefixes", {})
        self._prefixes[str(artifacts_dir)] = prefix
        return list(argv), tsan_env(prefix)

    def finish(self, ctx: Any, witness: Any, stderr_path: Path, killed: bool,
               returncode: int | None = None) -> Any:
        """Read one finished launch's reports into the record's ``detector`` payload (as
        :meth:`kit.targets.host.detector.Detector.finish`). ``finished`` is true when the
        workload ended by itself (an exit or a signal, not the kit's kill): every report it
        made is then in the file. Never raises."""
        from .launch import DetectorResult

        artifacts_dir, rel = Path(ctx.artifacts_dir), ctx.artifacts_rel
        prefix = getattr(self, "_prefixes", {}).pop(str(artifacts_dir), artifacts_dir / "tsan")
        files = sorted(prefix.parent.glob(f"{prefix.name}.*"))
        text, error = read_reports(files)
        out = artifacts_dir / REPORT_NAME
        out.write_text(text)
        for path in files:
            path.unlink(missing_ok=True)
        if prefix.parent != artifacts_dir:
            shutil.rmtree(prefix.parent, ignore_errors=True)
        races, other, fatal = parse_tsan_text(text)
        if fatal is None:
            try:
                tail = read_tail_bounded(stderr_path, 64 * 1024, what="launch stderr")
                fatal = parse_tsan_text(tail.decode("utf-8", "replace"))[2]
            except UsageError:
                pass
        signal_name = None
        if returncode is not None and returncode < 0:
            import signal as _signal

            try:
                signal_name = _signal.Signals(-returncode).name
            except ValueError:
                signal_name = str(-returncode)
        finished = not killed and returncode is not None and fatal is None
        report = ToolReport(tool=TOOL, version=self.version, races=tuple(races),
                            other_errors=other, finished=finished, fatal_signal=signal_name,
                            bytes_read=len(text.encode()), read_error=error)
        if witness is None:
            witness = RaceObservation(False, reason="the race witness was off")
        payload = detector_payload(TOOL, self.version, f"{rel}/{REPORT_NAME}", report,
                                   witness, self.library, self.analyze())
        if self._info_error and payload["on_target"] is None:
            payload["reason"] += f"; {self._info_error}"
        tool_error = None
        if fatal is not None and not killed:
            tool_error = f"the race detector (tsan) failed: {fatal[:200]}"
            payload.update(on_target=None, reason=f"{tool_error} (its reports are not used)")
        return DetectorResult(payload, tool_error, [f"{rel}/{REPORT_NAME}"])

