"""Every file the kit writes and reads back is read bounded (``kit/_bounded.py``): a
``runtime.json`` grown to 2 GB, a FIFO or a device in its place, or one cut short is a
one-line error, never read whole, waited on, or a traceback (issue #46, family 4)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, assert_one_line_error

#: address space for the inner run: the kit and numpy start in well under this, a 2 GB
#: file read whole does not fit
LIMIT_AS = 1536 * 1024 * 1024


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def _run(cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, preexec_fn=_limited,
                          env={**os.environ, "COLDSTART_CACHE": str(cache)})


def _plant(cache: Path, make: str) -> Path:
    folder = cache / "runtimes" / "odd"
    folder.mkdir(parents=True)
    path = folder / "runtime.json"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "huge":
        with open(path, "wb") as fh:  # sparse: 2 GB long, no disk used
            fh.truncate(2 * 1024 ** 3)
    elif make == "cut":
        path.write_text('{"name": "odd", "kind": "system", "ort_libr')
    elif make == "list":
        path.write_text("[1, 2]")
    elif make == "typed":
        path.write_text(json.dumps({"name": "odd", "kind": "system", "root": None,
                                    "include_dir": "/i", "lib_dir": "/l", "ort_library": 7,
                                    "xnnpack_library": None}))
    return path


@pytest.mark.parametrize("make, said", [
    ("fifo", "runtime file"), ("huge", "is larger than 4 MiB"), ("cut", "is not valid JSON"),
    ("list", "is corrupt (not an object but list)"), ("typed", "is corrupt (ort_library is int)")])
@pytest.mark.parametrize("command", [("runtime", "info", "--name", "odd"),
                                     ("run", "host", "--runtime", "odd", "--no-witness")])
def test_an_odd_runtime_json_is_one_line(tmp_path: Path, make: str, said: str,
                                         command: tuple[str, ...]) -> None:
    cache = tmp_path / "cache"
    _plant(cache, make)
    args = [*command, "--out", str(tmp_path / "c")] if command[0] == "run" else list(command)
    proc = _run(cache, *args)
    assert_one_line_error(proc.stderr, said, 2, proc.returncode)
    assert not (tmp_path / "c").exists()


def test_the_kits_own_stamps_are_read_bounded(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The witness's and the race detector's stamps, read back, as a FIFO or cut short: the
    witness is taken as not built, the detector's setup as corrupt (one line), never a hang."""
    from kit._bounded import read_json_bounded
    from kit.errors import DataError, UsageError
    from kit.targets.host.detector.tool import _stamp as detector_stamp, find_tool
    from kit.targets.host.runtime import Runtime
    from kit.targets.host.witness.build import _stamp as witness_stamp, witness_library

    monkeypatch.setenv("COLDSTART_CACHE", str(tmp_path / "cache"))
    runtime = Runtime(name="odd", kind="system", root=None, include_dir="/i", lib_dir="/l",
                      ort_library="/l/libonnxruntime.so", xnnpack_library=None)
    for stamp in (witness_stamp(runtime), detector_stamp(runtime)):
        stamp.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(stamp)
    assert witness_library(runtime) is None
    with pytest.raises(UsageError, match="is a FIFO"):
        find_tool(runtime)
    cut = tmp_path / "cut.json"
    cut.write_text('{"a": ')
    with pytest.raises(DataError, match=r"cut.json is not valid JSON \(Expecting value\)"):
        read_json_bounded(cut, what="stamp", hint="make it again")
    cut.write_text("[" * 100_000 + "]" * 100_000)  # deeper than json can go
    with pytest.raises(DataError, match="is not valid JSON"):
        read_json_bounded(cut, what="stamp", hint="make it again")
