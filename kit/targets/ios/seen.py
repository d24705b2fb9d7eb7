"""What one launch on an iOS simulator saw (step 3 of :mod:`kit.targets.ios.simulator`):
the app's protocol events and pid, how the watch ended, and the lines of the log stream and
of the unified log read again after the stream ended (issue #44), each line taken once."""

from __future__ import annotations

import dataclasses

from ...observe import ProcessEnd
from ...protocol import ProtocolEvent, iter_events
from .simctl import LogLine, LogStream

__all__ = ["LaunchSeen"]


@dataclasses.dataclass
class LaunchSeen:
    """What one launch's watch saw."""

    end: ProcessEnd | None = None  # None: the app was never seen
    pid: int | None = None
    events: list[ProtocolEvent] = dataclasses.field(default_factory=list)
    infra: str | None = None
    consumed: int = 0  # protocol lines of the window read so far
    stream_lost: bool = False  # the log stream ended under the launch (lines may be lost)
    reread: bool = False  # ... and the unified log was read again since (none is lost)
    earlier_raw: str = ""  # the window of the stream that ended
    shown_raw: str = ""  # what the last read of the unified log gave
    recovered: list[LogLine] = dataclasses.field(default_factory=list)  # from that read
    read_lines: set[tuple[str, int | None]] = dataclasses.field(default_factory=set)

    def take(self, stream: LogStream | None, launch_id: str
             ) -> list[tuple[ProtocolEvent, int | None]]:
        """This launch's events among the stream's new lines (none without a stream) and
        the lines a read of the unified log recovered, each line once, with each line's
        pid."""
        lines = stream.protocol_lines(self.consumed) if stream is not None else []
        self.consumed += len(lines)
        lines = lines + self.recovered
        self.recovered = []
        fresh = []
        for line in lines:
            key = (line.message, line.pid)
            if key not in self.read_lines:
                self.read_lines.add(key)
                fresh.append(line)
        new = [(event, line.pid) for line in fresh
               for event in iter_events([line.message], launch_id)]
        self.events.extend(event for event, _pid in new)
        return new
