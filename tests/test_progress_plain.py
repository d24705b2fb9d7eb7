"""Issue #23: without a terminal, the progress line stays one whole line in a log, whatever
width ``COLUMNS`` sets for wrapped output (tables, boxes)."""

from __future__ import annotations

import pytest

from kit.cli.progress import ProgressView, stderr_console
from tests.helpers import record


def test_the_plain_progress_line_is_never_cut(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # a CI runner's narrow default
    title = "ios-device campaign baseline on 00008110-001A2B3C4D5E801E"
    with ProgressView(stderr_console()) as view:
        assert view.plain
        view.started(title, 2, [])
        view.recorded(record("b", 0, "completed"))
        view.recorded(record("b", 1, "crashed"))
    lines = capsys.readouterr().err.splitlines()
    assert f"{title}: 2 launches planned" in lines
    last = [ln for ln in lines if ln.startswith(f"{title}: 2/2 launches, ")]
    assert len(last) == 1 and "completed 1" in last[0] and "crashed 1" in last[0]
