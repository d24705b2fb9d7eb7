"""A mutable draft that parsers fill field by field, then freeze into a CrashRecord."""

from __future__ import annotations

import dataclasses
from typing import Any

from .record import CrashRecord, Frame

__all__ = ["Draft", "MAX_FRAMES"]

#: Frames kept per record (the crashing thread's innermost ones); deeper ones are counted
#: in a note. Socorro looks at 40; a signature uses 3.
MAX_FRAMES = 64


@dataclasses.dataclass
class Draft:
    """Fields of a :class:`CrashRecord` under construction (first value set wins)."""

    platform: str
    source: str
    format: str = "unknown"
    kind: str = "unknown"
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    frames: list[Frame] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    dropped_frames: int = 0
    #: the 15-character process name of a ``Fatal signal`` line, used only when no tombstone
    #: line names the process
    short_process: str | None = None

    def set(self, name: str, value: Any, override: bool = False) -> None:
        """Set a record field unless it is already set (or ``override``); ignores ``None``."""
        if value is None or value == "":
            return
        if override or self.values.get(name) is None:
            self.values[name] = value

    def get(self, name: str) -> Any:
        """The value set for ``name``, or ``None``."""
        return self.values.get(name)

    def add_frame(self, frame: Frame) -> None:
        """Append a frame, counting (not keeping) those past :data:`MAX_FRAMES`."""
        if len(self.frames) < MAX_FRAMES:
            self.frames.append(frame)
        else:
            self.dropped_frames += 1

    def note(self, text: str) -> None:
        """Record what could not be read (each distinct note once)."""
        if text not in self.notes:
            self.notes.append(text)

    def build(self) -> CrashRecord:
        """The frozen record."""
        notes = list(self.notes)
        if self.dropped_frames:
            notes.append(f"kept the innermost {MAX_FRAMES} frames; "
                         f"{self.dropped_frames} deeper frames dropped")
        return CrashRecord(platform=self.platform, source=self.source, format=self.format,
                           kind=self.kind, frames=tuple(self.frames), notes=tuple(notes),
                           **self.values)
