"""The log follower of one Android launch (step 4 of :mod:`kit.targets.android.launcher`):
the ``logcat`` command the launcher keeps running for the whole campaign, and
:class:`LogFollow`, which starts it again when it dies under a launch, with backoff, and
drops what a new follower replays from before the launch's marker (docs/formats.md D2)."""

from __future__ import annotations

import collections
import time
from typing import TYPE_CHECKING

from .text import parse_threadtime
from .transport import TransportError, shell_join

if TYPE_CHECKING:
    from .launcher import AndroidLauncher

__all__ = ["FOLLOW_COMMAND", "FOLLOWER_BACKOFF_S", "LogFollow", "MARK_TAG", "is_mark"]

#: the tag of the launcher's markers (``log -t``)
MARK_TAG = "coldstart"
#: Tags the follower keeps (logcat filter specs; everything else is silenced).
_FOLLOW_SPECS = ("ReactNativeJS:V", "ActivityManager:I", "libc:F", "DEBUG:F",
                 "AndroidRuntime:E", f"{MARK_TAG}:I", "*:S")
FOLLOW_COMMAND = shell_join(["logcat", "-v", "threadtime", "-b", "main", "-b", "system",
                             "-b", "crash", *_FOLLOW_SPECS])
#: the waits (s) before each start of a log follower that died under a launch: the first
#: at once (a logcat that hit ``Unexpected EOF!``), then backing off, so that a logd that
#: restarts (readers refused for about 2 s; issue #44) is waited out, not spent in 24 ms
FOLLOWER_BACKOFF_S = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)


def is_mark(line: str, marker: str) -> bool:
    """True when the logcat ``threadtime`` line ``line`` is the launch marker ``marker``
    (tag :data:`MARK_TAG`)."""
    entry = parse_threadtime(line)
    return entry is not None and entry.tag == MARK_TAG and entry.msg == marker


class LogFollow:
    """The log follower of one launch, started again when it dies under the launch, with
    backoff (:data:`FOLLOWER_BACKOFF_S`).

    A restarted follower first replays the buffers: what it delivers before the launch's
    marker is held back and dropped at the marker (lines of before the launch); a replay
    that never shows the marker (logd restarted and lost its buffers) is released once it
    goes quiet, and every line read before is skipped when it comes again."""

    #: quiet time (s) after which a replay with no marker is taken as complete
    REPLAY_QUIET_S = 0.5

    def __init__(self, launcher: "AndroidLauncher", marker: str) -> None:
        self.launcher = launcher
        self.marker = marker
        self.restarts = 0
        self.next_try = 0.0  # monotonic time of the next start allowed
        self.why = ""  # how the last follower ended
        self.held: list[str] | None = None  # a replay's lines until the marker
        self.held_at = 0.0
        self._replayed: collections.Counter[str] = collections.Counter()

    @property
    def exhausted(self) -> bool:
        """Every start the backoff allows was made in this launch."""
        return self.restarts >= len(FOLLOWER_BACKOFF_S)

    def due(self, now: float) -> bool:
        """True when a new follower may be started at monotonic time ``now`` (s)."""
        return not self.exhausted and now >= self.next_try

    def restart(self, seen: list[str], skip: bool = True) -> None:
        """Start a new follower in place of the dead one (waiting out the backoff); with
        ``skip``, hold its replay back up to the launch's marker (when the device has
        markers) and skip ``seen`` lines when they come again.

        Raises:
            TransportError: every start was made, or the new follower cannot be started
                (the device is gone: the launch is an infra error).
        """
        lr = self.launcher
        old = lr._follower
        self.why = old.end_reason if old is not None else "no follower"
        if self.exhausted:
            raise TransportError(f"{lr.device}: the log stream ended ({self.why}), "
                                 f"{self.restarts} times in this launch", state="offline")
        wait = self.next_try - time.monotonic()
        if wait > 0:
            lr._abort.wait(wait)
        self.restarts += 1
        delay = FOLLOWER_BACKOFF_S[min(self.restarts, len(FOLLOWER_BACKOFF_S) - 1)]
        self.next_try = time.monotonic() + delay
        lr._calls.note(f"the log stream ended ({self.why}): starting it again")
        if old is not None:
            old.close()
        lr._follower = None
        lr._follower = lr.transport.stream(FOLLOW_COMMAND, lr.timeouts.call_s)
        if skip:
            if lr._marks:
                self.held, self.held_at = [], time.monotonic()
            self._replayed = collections.Counter(seen)

    def hold(self, line: str) -> bool:
        """True when ``line`` is part of a replay held back (see the class doc)."""
        if self.held is None:
            return False
        if is_mark(line, self.marker):
            self.held = None  # what came before the marker is of before the launch
        else:
            self.held.append(line)
            self.held_at = time.monotonic()
        return True

    def release(self, now: float) -> list[str]:
        """A held replay that went quiet without the marker (logd lost its buffers): its
        lines, to be read (``[]`` while it is still coming, or none is held)."""
        if self.held is None or now - self.held_at < self.REPLAY_QUIET_S:
            return []
        lines, self.held = self.held, None
        return lines

    def fresh(self, line: str) -> bool:
        """False for a line a restarted follower replays that was read before."""
        if self._replayed[line] > 0:
            self._replayed[line] -= 1
            return False
        return True
