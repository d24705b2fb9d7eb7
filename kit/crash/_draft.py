"""A mutable draft that parsers fill field by field, then freeze into a CrashRecord."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from .record import CrashRecord, Frame

__all__ = ["Draft", "MAX_FRAMES", "unmark"]

# Markdown bold around a word or phrase ("**Abort message:** '**Scudo ERROR**'"): a rendered
# copy's mark, never the report's; "char**, int**" (no space inside, a word before) is C++
BOLD_SPAN = re.compile(r"(?<![\w*])\*\*(?=[^\s*])(?P<inner>[^*\n]+?)(?<=[^\s*])\*\*(?![\w*])")
#: text fields a paste mark must not reach (they sign and classify the record)
_TEXT_FIELDS = ("abort_message", "message", "exception", "cause", "process", "thread_name")


def unmark(text: str) -> str:
    """``text`` without Markdown bold pairs (``**x**`` -> ``x``) and without backquotes that
    wrap the whole of it (an inline code span)."""
    if "**" in text:
        text = BOLD_SPAN.sub(r"\g<inner>", text)
    if len(text) > 2 and text[0] == "`" and text[-1] == "`" and "`" not in text[1:-1]:
        text = text[1:-1]
    return text

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
    #: a Java root cause's frames (``CrashRecord.cause_frames``)
    cause_frames: list[Frame] = dataclasses.field(default_factory=list)
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
        for name in _TEXT_FIELDS:
            value = self.values.get(name)
            if isinstance(value, str) and ("**" in value or value[:1] == "`"):
                self.values[name] = unmark(value)
        if any(f.symbol and ("**" in f.symbol or f.symbol[:1] == "`") for f in self.frames):
            self.frames = [dataclasses.replace(f, symbol=unmark(f.symbol))
                           if f.symbol and ("**" in f.symbol or f.symbol[:1] == "`") else f
                           for f in self.frames]
        notes = list(self.notes)
        if self.dropped_frames:
            notes.append(f"kept the innermost {MAX_FRAMES} frames; "
                         f"{self.dropped_frames} deeper frames dropped")
        return CrashRecord(platform=self.platform, source=self.source, format=self.format,
                           kind=self.kind, frames=tuple(self.frames), notes=tuple(notes),
                           cause_frames=tuple(self.cause_frames[:MAX_FRAMES]),
                           **self.values)
