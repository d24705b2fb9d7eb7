"""What a running campaign shows: a progress bar with running counts on a terminal, one plain
line every few launches elsewhere (CI logs), and, with ``--json``, each record as one JSON
line on stdout. Everything but the records goes to stderr, so ``--json`` output is valid JSON
Lines for every target."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Sequence

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .._terminal import printable
from ..records import LaunchRecord, Outcome

__all__ = ["stderr_console", "stdout_console", "ProgressView", "PLAIN_EVERY_S"]

_OUTCOME_STYLE = {Outcome.COMPLETED: "green", Outcome.CRASHED: "bold red",
                  Outcome.APP_ERROR: "yellow", Outcome.WRONG_OUTPUT: "magenta",
                  Outcome.HUNG: "red", Outcome.INFRA_ERROR: "dim"}
#: without a terminal, a progress line at least this often (and every tenth of the run)
PLAIN_EVERY_S = 30.0
#: width for output that is not a terminal: long enough that CI log lines are not split
_PIPE_WIDTH = 200


class SafeConsole(Console):
    """A rich console whose text from data never reaches the terminal as control
    characters: every text segment goes through :func:`kit._terminal.printable` as it is
    rendered (rich's own styles and cursor controls are added after, so they stay)."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None
               ) -> Any:
        for segment in super().render(renderable, options):
            if segment.control or not segment.text:
                yield segment
            else:
                yield Segment(printable(segment.text), segment.style, segment.control)


def _console(stderr: bool) -> Console:
    """A terminal: rich measures it and wraps. Piped: the width in ``COLUMNS`` when the user
    set one (20-1000), wrapped to it; else lines left whole (``_PIPE_WIDTH`` for tables and
    boxes), so that a CI log keeps each line on one line."""
    stream = sys.stderr if stderr else sys.stdout
    if hasattr(stream, "isatty") and stream.isatty():
        return SafeConsole(stderr=stderr, highlight=False)
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and 20 <= int(columns) <= 1000:
        return SafeConsole(stderr=stderr, highlight=False, width=int(columns))
    return SafeConsole(stderr=stderr, soft_wrap=True, highlight=False, width=_PIPE_WIDTH)


def stderr_console() -> Console:
    """A rich console on stderr (progress never mixes with machine-readable stdout); lines
    are not wrapped when it is not a terminal."""
    return _console(True)


def stdout_console() -> Console:
    """A rich console on stdout, unwrapped when piped."""
    return _console(False)


class ProgressView:
    """A :class:`kit.campaign.session.SessionObserver` for the terminal.

    Args:
        console: where progress and notes go (stderr).
        json_out: print each record as a JSON line on stdout.
        plain: plain lines instead of a bar (default: when ``console`` is not a terminal).
    """

    def __init__(self, console: Console, json_out: bool = False,
                 plain: bool | None = None) -> None:
        self.console = console
        self.json_out = json_out
        self.plain = (not console.is_terminal) if plain is None else plain
        self.counts: dict[Outcome, int] = {}
        self.title = ""
        self.total = 0
        self.done = 0
        self._progress: Progress | None = None
        self._task: Any = None
        self._last_line = 0.0
        self._t0 = time.monotonic()

    # -- SessionObserver -----------------------------------------------------------------
    def note(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False, soft_wrap=True)

    def started(self, title: str, total: int, records: Sequence[LaunchRecord]) -> None:
        self.title, self.total = title, total
        for record in records:
            self.counts[record.outcome] = self.counts.get(record.outcome, 0) + 1
        self.done = len({(r.label, r.index) for r in records if r.counted})
        self._t0 = time.monotonic()
        if self.plain:
            resumed = f" ({self.done} made before)" if self.done else ""
            self.console.print(f"{title}: {total} launches planned{resumed}", markup=False,
                               soft_wrap=True)
            self._last_line = time.monotonic()
            return
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(),
                                  TextColumn("{task.fields[counts]}"), console=self.console,
                                  transient=False)
        self._progress.__enter__()
        self._task = self._progress.add_task(title, total=total, completed=self.done,
                                             counts=self._counts_text(markup=True))

    def recorded(self, record: LaunchRecord) -> None:
        self.counts[record.outcome] = self.counts.get(record.outcome, 0) + 1
        if record.counted:
            self.done += 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1 if record.counted else 0,
                                  counts=self._counts_text(markup=True))
        elif self.plain:
            step = max(1, self.total // 10)
            now = time.monotonic()
            if (record.counted and (self.done % step == 0 or self.done >= self.total)) or \
                    now - self._last_line >= PLAIN_EVERY_S:
                self._plain_line(now)
        if self.json_out:
            print(json.dumps(record.to_dict(), separators=(",", ":")), flush=True)

    # -- helpers -------------------------------------------------------------------------
    def _plain_line(self, now: float) -> None:
        self._last_line = now
        elapsed = int(now - self._t0)
        self.console.print(f"{self.title}: {self.done}/{self.total} launches, "
                           f"{self._counts_text(markup=False)} "
                           f"({elapsed // 60}:{elapsed % 60:02d})", markup=False,
                           soft_wrap=True)  # one whole line in a log, whatever COLUMNS says

    def _counts_text(self, markup: bool) -> str:
        items = sorted(self.counts.items(), key=lambda kv: kv[0].value)
        if markup:
            return "  ".join(f"[{_OUTCOME_STYLE[o]}]{o.value} {n}[/]" for o, n in items)
        return ", ".join(f"{o.value} {n}" for o, n in items) or "none yet"

    def close(self) -> None:
        """Stop the bar (idempotent)."""
        if self._progress is not None:
            self._progress.__exit__(None, None, None)
            self._progress = None

    def __enter__(self) -> "ProgressView":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
