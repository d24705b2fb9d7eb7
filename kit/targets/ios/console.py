"""The console of one ``xcrun devicectl device process launch --console`` (step 3 of
:mod:`kit.targets.ios.device`): its output read line by line by a thread, bounded, with
the app's protocol lines kept apart, and devicectl's own exit status and error."""

from __future__ import annotations

import subprocess
import threading
from typing import Any

from .xcrun import kill_group

__all__ = ["Console"]

#: The longest console line kept (longer ones are cut).
_MAX_LINE = 256 * 1024
#: Console lines kept per launch for ``console.txt`` (protocol lines are always kept).
_MAX_LINES = 20000

class Console:
    """The lines of one ``devicectl ... --console`` process, read by a thread; ``wake`` is
    set on each line and at the end."""

    def __init__(self, proc: Any, wake: threading.Event) -> None:
        self.proc = proc
        self.wake = wake
        self.lines: list[str] = []
        self.protocol: list[str] = []
        self.ended = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True,
                                        name="devicectl-console")
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                line = self.proc.stdout.readline(_MAX_LINE)
                if not line:
                    break
                text = line.rstrip("\n")
                with self._lock:
                    if len(self.lines) < _MAX_LINES:
                        self.lines.append(text)
                    if "COLDSTART " in text:
                        self.protocol.append(text)
                self.wake.set()
        except (OSError, ValueError):
            pass
        finally:
            self.ended.set()
            self.wake.set()

    def protocol_lines(self, start: int) -> list[str]:
        """The ``COLDSTART`` lines read so far, from index ``start`` on."""
        with self._lock:
            return self.protocol[start:]

    def text(self) -> str:
        """Every line kept (at most :data:`_MAX_LINES`), newline-terminated."""
        with self._lock:
            return "\n".join(self.lines) + "\n"

    def exit_status(self) -> int | None:
        """devicectl's exit status once its console ended (its output closes just before
        it exits: waited for up to 5 s), ``None`` while it runs."""
        if self.ended.is_set():
            try:
                self.proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass
        return self.proc.poll()

    def own_error(self) -> str | None:
        """devicectl's own last ``ERROR`` line when it exited with a failure, else
        ``None`` (the app's end is not devicectl's failure)."""
        if self.exit_status() in (0, None):
            return None
        with self._lock:
            return next((ln.strip() for ln in reversed(self.lines) if ln.startswith("ERROR")),
                        None)

    def stop(self) -> None:
        """Kill devicectl's process group and close its output once the reader ended."""
        kill_group(self.proc)
        self._thread.join(2)
        if self.proc.stdout is not None and not self._thread.is_alive():
            self.proc.stdout.close()
