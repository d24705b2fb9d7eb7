"""Attributing a launch's races: on the XNNPACK allocator statics (``on_target``) or not.

:func:`detector_payload` turns the tool's report (:mod:`kit.targets.host.detector.report`), the race
witness's observation (the wrapper's address and the load bases) and the library analysis
(:mod:`kit.targets.host.detector.statics`) into a launch record's ``detector`` payload::

    {"tool": "drd", "version": "3.24.0", "xml": "artifacts/<id>/detector.xml",
     "complete": true, "finished": true, "fatal_signal": null, "read_error": null,
     "race_count": 50, "on_target_race_count": 3, "races_left_out": 0,
     "races": [{"kind": "ConflictingAccess", "access": "store", "address": "0x57c0040",
                "size": 8, "thread": 4, "other_thread": null,
                "module": "libonnxruntime.so.1.21.0", "offset": "0xf52040",
                "section": ".data", "segment": "Allocation context: Data section of ...",
                "target": "xnn_allocator wrapper", "class": "on_target",
                "stack": [{"module": "libonnxruntime.so.1.21.0", "offset": "0x294dbe",
                           "symbol": null}, ...],
                "other_stack": [...]}, ...],
     "on_target": true, "reason": "...",
     "evidence": {"library": "...", "base": "0x484c000",
                  "wrapper": {"address": "0x579e040", "offset": "0xf52040", "size": 48},
                  "allocator_ptr": {"offset": "0xf52950", "size": 16, "how": "..."}}}

``on_target`` is ``true`` only with address evidence: the library's load base and the
wrapper's address from the witness, and at least one race whose bytes overlap the wrapper
or the AllocatorPtr extent. It is ``false`` only when the tool finished, its whole XML was
read, both extents are known and no race overlaps them; otherwise ``null`` with the reason.
Every other race stays in ``races`` with ``"class": "other"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .report import Frame, Race, ToolReport
from .statics import ALLOCATOR_PTR_SIZE, WRAPPER_SIZE, LibraryInfo, allocator_ptr_offset

__all__ = ["detector_payload", "record_on_target", "overlapping_target", "MAX_RACES_KEPT",
           "MAX_FRAMES_KEPT", "WRAPPER", "ALLOCATOR_PTR"]

#: The most races a record keeps (on-target ones first); the XML artifact has them all.
MAX_RACES_KEPT = 40
#: The most frames kept per stack in a record (on-target races; other races keep 3).
MAX_FRAMES_KEPT = 8
_OTHER_FRAMES = 3
WRAPPER = "xnn_allocator wrapper"
ALLOCATOR_PTR = "AllocatorPtr static"


def _hex(value: int | None) -> str | None:
    return None if value is None else f"{value:#x}"


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


class _Bases:
    """Load bases by real path, from the witness's ``images`` line."""

    def __init__(self, images: tuple[tuple[str, int], ...]) -> None:
        self._by_path = {_real(name): base for name, base in images if name}

    def base_of(self, module: str | None) -> int | None:
        return None if not module else self._by_path.get(_real(module))


def _frame(frame: Frame, bases: _Bases) -> dict[str, Any]:
    base = bases.base_of(frame.module)
    offset = frame.ip - base if base is not None and frame.ip is not None else frame.offset
    return {"module": os.path.basename(frame.module) if frame.module else None,
            "offset": _hex(offset) if offset is not None and offset >= 0 else None,
            "symbol": frame.symbol}


def overlapping_target(offset: int, size: int, targets: list[tuple[str, int, int]]
                       ) -> str | None:
    """The name of the first ``(name, start, length)`` extent that the ``size`` bytes at
    ``offset`` overlap, or ``None`` (offsets and extents in the same address space)."""
    return next((name for name, start, length in targets
                 if offset < start + length and start < offset + max(size, 1)), None)


def detector_payload(tool: str, version: str | None, xml_rel: str, report: ToolReport,
                     witness: Any, library: str, info: LibraryInfo | None) -> dict[str, Any]:
    """The record's ``detector`` payload (see the module doc). Never raises.

    Args:
        tool: ``helgrind``, ``drd`` or ``tsan``.
        version: the tool's version as set up (the XML's own version wins when read).
        xml_rel: the XML artifact's path relative to the campaign directory.
        report: the parsed XML.
        witness: the launch's :class:`kit.targets.host.witness.race.RaceObservation`.
        library: path of the runtime's ``libonnxruntime.so``.
        info: the library's analysis, or ``None`` when it could not be made.
    """
    bases = _Bases(tuple(getattr(witness, "images", ()) or ()))
    base = bases.base_of(library)
    wrappers = sorted({int(c.allocator, 16) for c in getattr(witness, "calls", ())})
    missing: list[str] = []
    wrapper_off = alloc_off = None
    alloc_how = None
    if not getattr(witness, "available", False):
        missing.append(f"no race witness ({getattr(witness, 'reason', None) or 'off'})")
    elif base is None:
        missing.append("the witness did not record libonnxruntime.so's load base")
    elif not wrappers:
        missing.append("no xnn_initialize call: the XNNPACK EP never initialised")
    elif len(wrappers) > 1:
        missing.append(f"{len(wrappers)} different allocator wrappers reached xnn_initialize")
    else:
        wrapper_off = wrappers[0] - base
        if info is not None and info.section_of(wrapper_off) is None:
            missing.append(f"the wrapper (+{wrapper_off:#x}) is not in a writable section of "
                           f"{os.path.basename(library)}")
            wrapper_off = None
        elif info is None:
            alloc_how = "the library could not be analysed"
        else:
            alloc_off, alloc_how = allocator_ptr_offset(info, wrapper_off)
    targets: list[tuple[str, int, int]] = []
    if wrapper_off is not None:
        targets.append((WRAPPER, wrapper_off, WRAPPER_SIZE))
    if alloc_off is not None:
        targets.append((ALLOCATOR_PTR, alloc_off, ALLOCATOR_PTR_SIZE))
    image_end = info.image_end if info is not None else 0
    races = []
    for race in report.races:
        races.append(_race_entry(race, bases, base, image_end, library, info, targets))
    on = [r for r in races if r["class"] == "on_target"]
    kept = (on + [r for r in races if r["class"] != "on_target"])[:MAX_RACES_KEPT]
    if on:
        counts = {name: sum(1 for r in on if r["target"] == name) for name, _o, _s in targets}
        said = " and ".join(f"{n} on the {name} (+{off:#x})" for (name, off, _s), n in
                            zip(targets, counts.values()) if n)
        verdict, reason = True, f"{len(on)} of {len(races)} races are on the allocator statics: {said}"
    elif missing:
        verdict, reason = None, "no address evidence: " + "; ".join(missing)
    elif alloc_off is None:
        verdict, reason = None, (f"no race on the wrapper, but the AllocatorPtr static is not "
                                 f"located ({alloc_how})")
    elif report.read_error is not None:
        verdict, reason = None, f"the tool's XML could not be read whole: {report.read_error}"
    elif not report.finished:
        verdict, reason = None, "the tool did not finish (its XML has no FINISHED status)"
    else:
        verdict, reason = False, (f"none of the {len(races)} races is on the allocator statics "
                                  f"(wrapper +{wrapper_off:#x}, AllocatorPtr +{alloc_off:#x})")
    evidence: dict[str, Any] = {"library": library, "base": _hex(base), "wrapper": None,
                                "allocator_ptr": None}
    if wrapper_off is not None:
        evidence["wrapper"] = {"address": _hex(wrappers[0]), "offset": _hex(wrapper_off),
                               "size": WRAPPER_SIZE}
    if alloc_off is not None or alloc_how:
        evidence["allocator_ptr"] = {"offset": _hex(alloc_off), "size": ALLOCATOR_PTR_SIZE,
                                     "how": alloc_how}
    return {"tool": report.tool or tool, "version": report.version or version, "xml": xml_rel,
            "complete": report.complete, "finished": report.finished,
            "fatal_signal": report.fatal_signal, "read_error": report.read_error,
            "other_errors": report.other_errors, "race_count": len(races),
            "on_target_race_count": len(on), "races_left_out": len(races) - len(kept),
            "races": kept, "on_target": verdict, "reason": reason, "evidence": evidence}


def _race_entry(race: Race, bases: _Bases, base: int | None, image_end: int, library: str,
                info: LibraryInfo | None, targets: list[tuple[str, int, int]]) -> dict[str, Any]:
    module = offset = section = target = None
    if base is not None and base <= race.address < base + image_end:
        module, offset = os.path.basename(library), race.address - base
        section = info.section_of(offset) if info is not None else None
        target = overlapping_target(offset, race.size, targets)
    frames = MAX_FRAMES_KEPT if target else _OTHER_FRAMES
    return {"kind": race.kind, "access": race.access, "address": _hex(race.address),
            "size": race.size, "thread": race.thread, "other_thread": race.other_thread,
            "module": module, "offset": _hex(offset), "section": section,
            "segment": race.where, "target": target,
            "class": "on_target" if target else "other",
            "stack": [_frame(f, bases) for f in race.stack[:frames]],
            "other_stack": [_frame(f, bases) for f in race.other_stack[:frames]]}


def record_on_target(record: Any) -> bool | None:
    """Whether a launch record shows a race on the XNNPACK allocator statics: ``True``,
    ``False``, or ``None`` (not run under the detector, or unknown; see the module doc).

    Accepts a :class:`kit.records.LaunchRecord` (its ``detector`` payload) or its dict.
    """
    payload = record.get("detector") if isinstance(record, dict) else getattr(
        record, "detector", None)
    if not isinstance(payload, Mapping):
        return None
    value = payload.get("on_target")
    return value if isinstance(value, bool) else None
