#!/usr/bin/env python3
"""Test double: a host workload that replays the real workload's recorded protocol lines,
then ends as its script says: it exits, dies by a real signal, or hangs.

It stands in for the workload of a host runtime (``kind: ort-root`` in that runtime's
``runtime.json``, so the kit runs it directly, with the real workload's arguments). It plays
what the real workload cannot be made to do on purpose: print an ``error`` and then die, die
after ``done`` (a crash in teardown), or report ``inference-done`` without its scores.

The lines and the backtraces are the real workload's, recorded (``recorded_workload.json``
beside this file says how); only the launch id is this launch's (from ``--scenario``). Each
launch takes the next entry of the script that :class:`RecordedWorkload` writes (its path in
``$COLDSTART_RECORDED_WORKLOAD_SCRIPT``); :meth:`RecordedWorkload.unused_script` tells a test
what was not played. An entry is ``RECORDING,END``:

* RECORDING: ``completed`` (``start`` .. ``done``), ``error`` (``start``, ``models-ready``,
  then ``error``: a create that failed), ``unchecked`` (``completed`` with the scores, the
  score and ``ok`` left out of ``inference-done``);
* END: ``exit:N``; ``signal:N`` (the recorded ``COLDSTART-CRASH`` backtrace of signal N on
  stderr, as the workload's handler prints it, then a real death by N); ``hang`` (until the
  kit kills it).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

HERE = Path(__file__).resolve().parent
RECORDING = HERE / "recorded_workload.json"
SCRIPT_ENV = "COLDSTART_RECORDED_WORKLOAD_SCRIPT"


class RecordedWorkload:
    """The double's script for one test, in ``root/recorded-workload.json``.

    Usage::

        double = RecordedWorkload(tmp_path)
        double.register(cache, real_runtime)  # a runtime "recorded" running this double
        double.script(["error,signal:6"])
        monkeypatch.setenv(*double.env())
        ...
        assert double.unused_script() == []
    """

    def __init__(self, root: Path) -> None:
        self.path = root / "recorded-workload.json"
        self._write({"script": [], "taken": 0})

    def _write(self, state: dict) -> None:
        self.path.write_text(json.dumps(state))

    def script(self, entries: list[str]) -> None:
        """The next launches' entries, in order (a launch past the end fails loudly)."""
        for entry in entries:
            recording, _, end = entry.partition(",")
            assert recording in ("completed", "error", "unchecked") and \
                end.split(":")[0] in ("exit", "signal", "hang"), entry
        self._write({"script": list(entries), "taken": 0})

    def unused_script(self) -> list[str]:
        state = json.loads(self.path.read_text())
        return state["script"][state["taken"]:]

    def env(self) -> tuple[str, str]:
        """``(name, value)`` that points the double at this script."""
        return SCRIPT_ENV, str(self.path)

    @staticmethod
    def register(cache: Path, real: dict, name: str = "recorded") -> str:
        """Write runtime ``name`` into ``cache`` (a ``COLDSTART_CACHE``): the real runtime's
        description (``coldstart runtime info``, without ``loader``) with this double as its
        workload. Returns ``name``."""
        runtime = {**real, "name": name, "kind": "ort-root", "workload": str(Path(__file__))}
        folder = cache / "runtimes" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "runtime.json").write_text(json.dumps(runtime))
        return name


def _take_entry() -> str:
    path = Path(os.environ[SCRIPT_ENV])
    with open(path.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = json.loads(path.read_text())
        index = state["taken"]
        if index >= len(state["script"]):
            sys.stderr.write(f"recorded_workload: launch {index + 1} is past the script\n")
            sys.exit(3)
        state["taken"] = index + 1
        path.write_text(json.dumps(state))
        return state["script"][index]


def main(argv: list[str]) -> None:
    url = argv[argv.index("--scenario") + 1]
    launch_id = dict(parse_qsl(urlsplit(url).query)).get("id", "unset")
    recording, _, end = _take_entry().partition(",")
    recorded = json.loads(RECORDING.read_text())
    events = recorded["recordings"]["error" if recording == "error" else "completed"]
    for event in events:
        event = {**event, "id": launch_id}
        if recording == "unchecked" and event["phase"] == "inference-done":
            event = {k: v for k, v in event.items() if k not in ("scores", "score", "ok")}
        sys.stdout.write("COLDSTART " + json.dumps(event, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    kind, _, arg = end.partition(":")
    if kind == "exit":
        sys.exit(int(arg))
    if kind == "hang":
        while True:
            signal.pause()
    number = int(arg)
    sys.stderr.write(recorded["backtraces"][str(number)])
    sys.stderr.flush()
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a real death, but no core file
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    time.sleep(5)  # the signal is delivered before this ends
    sys.exit(4)


if __name__ == "__main__":
    main(sys.argv[1:])
