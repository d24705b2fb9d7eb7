"""The race witness for real: built with the runtime's compiler, preloaded into the workload
on Debian's onnxruntime 1.21 (XNNPACK as a shared library), its output in every record.

Needs `coldstart runtime prepare` (scripts/setup.sh does it) and root for the Debian root's
chroot, as the host target itself does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.records import Outcome
from kit.targets.host import load_runtime
from kit.targets.host.witness import (ENV_FILE, OFF_REASON, STATIC_REASON, build_witness, parse_witness,
                         read_witness_file, witness_library)
from tests.conftest import coldstart
from tests.conftest import one_line_error as _one_line_error

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "witness"
HEX = re.compile(r"^0x[0-9a-f]+$")
pytestmark = pytest.mark.host


def campaign(out: Path, *args: str, launches: int = 3) -> list:
    proc = coldstart("run", "host", "--launches", str(launches), "--out", str(out), *args)
    assert proc.returncode == 0, proc.stderr
    return load_campaign(out).records


def one_line_error(proc, fragment: str) -> str:
    return _one_line_error(proc, fragment, progress=False)


@pytest.fixture(scope="module")
def runtime():
    proc = coldstart("runtime", "info")
    assert proc.returncode == 0, ("host runtime not prepared: run scripts/setup.sh "
                                  f"(or `coldstart runtime prepare`): {proc.stderr}")
    runtime = load_runtime()
    assert runtime.xnnpack_library is not None, "this host's ORT links XNNPACK statically"
    return runtime


@pytest.fixture(scope="module")
def library(runtime) -> str:
    return build_witness(runtime)


def test_build_is_kept_while_up_to_date(runtime, library: str) -> None:
    assert Path(library).read_bytes()[:4] == b"\x7fELF"
    assert witness_library(runtime) == library
    messages: list[str] = []
    assert build_witness(runtime, log=messages.append) == library
    assert messages == [f"race witness up to date ({library})"]


def _driver(runtime, tmp_path: Path) -> list[str]:
    """Compile two_contexts.c against the runtime's real libXNNPACK; argv to run it."""
    xnnpack = Path(runtime.xnnpack_library)
    source = (DATA / "two_contexts.c").read_bytes()
    if runtime.kind == "debian-root":
        inner = Path("/opt/coldstart/tests")
        host_dir = Path(runtime.root) / inner.relative_to("/")
        host_dir.mkdir(parents=True, exist_ok=True)
        (host_dir / "two_contexts.c").write_bytes(source)
        cmd = ["chroot", runtime.root, "gcc", "-O2", str(inner / "two_contexts.c"), "-o",
               str(inner / "two-contexts"), f"-l:{xnnpack.name}", "-lpthread"]
        binary = host_dir / "two-contexts"
    else:
        (tmp_path / "two_contexts.c").write_bytes(source)
        binary = tmp_path / "two-contexts"
        cmd = [shutil.which("gcc") or "cc", "-O2", str(tmp_path / "two_contexts.c"), "-o",
               str(binary), f"-L{runtime.lib_dir}", f"-l:{xnnpack.name}", "-lpthread"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    if runtime.loader:
        return [runtime.loader, "--library-path", runtime.lib_dir, str(binary)]
    return [str(binary)]


def test_two_contexts_through_the_real_xnnpack_are_witnessed(runtime, library: str,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "witness.jsonl"
    env = {**os.environ, "LD_PRELOAD": library, ENV_FILE: str(out)}
    proc = subprocess.run(_driver(runtime, tmp_path), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    status = re.search(r"STATUS (-?\d+) (-?\d+)", proc.stdout)
    contexts = re.search(r"CONTEXTS (0x[0-9a-f]+) (0x[0-9a-f]+)", proc.stdout)
    assert status and contexts, proc.stdout
    assert status.groups() == ("0", "0")  # the real xnn_initialize ran and succeeded
    race = read_witness_file(out).to_dict()
    assert race["available"] is True and race["witnessed"] is True
    assert race["contexts"] == [contexts.group(1), contexts.group(2)]
    assert len({c["tid"] for c in race["calls"]}) == 2
    assert race["skew_us"] > 0
    raw = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["event"] for r in raw] == ["loaded", "images", "xnn_initialize", "xnn_initialize"]
    assert raw[0]["resolved"] is True and raw[0]["pid"] > 0
    names = {os.path.realpath(o["name"]): o["base"] for o in raw[1]["objects"] if o["name"]}
    assert HEX.match(names[os.path.realpath(runtime.xnnpack_library)])  # its load base
    assert raw[2]["allocator"] == raw[3]["allocator"]  # one wrapper, as in onnxruntime
    assert [r["status"] for r in raw[2:]] == [0, 0]


def test_without_a_file_the_witness_writes_prefixed_lines_to_stderr(runtime, library: str,
                                                                    tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV_FILE}
    env["LD_PRELOAD"] = library
    proc = subprocess.run(_driver(runtime, tmp_path), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("COLDSTART-WITNESS ") == 4  # loaded, images, two calls
    assert parse_witness(proc.stderr.splitlines()).witnessed


def test_every_launch_record_carries_the_race(tmp_path: Path, library: str) -> None:
    records = campaign(tmp_path / "c")
    meta = load_campaign(tmp_path / "c").meta
    assert meta.options["witness"] == "on"
    assert meta.build["witness_library"] == library
    for record in records:
        race = record.race
        # completed, or crashed with the race witnessed: the real defect, ~1 in 1,000 launches
        assert record.outcome is Outcome.COMPLETED or (
            record.outcome is Outcome.CRASHED and race["witnessed"] is True), record
        assert race["available"] is True and race["reason"] is None
        calls = race["calls"]
        if record.outcome is Outcome.COMPLETED:
            assert len(calls) == 3  # one XNNPACK EP per session, each calls xnn_initialize
        else:  # the race crashed it: two contexts came, the third create may not have
            assert 2 <= len(calls) <= 3
        assert len({c["tid"] for c in calls}) == len(calls)
        assert all(HEX.match(c["context"]) for c in calls)
        assert race["contexts"] == list(dict.fromkeys(c["context"] for c in calls))
        assert race["witnessed"] is (len(race["contexts"]) >= 2)
        assert race["skew_us"] == pytest.approx((calls[1]["t_ns"] - calls[0]["t_ns"]) / 1000)
        assert f"artifacts/{record.launch_id}/witness.jsonl" in record.artifacts


def test_serial_creates_never_witness_a_race(tmp_path: Path) -> None:
    records = campaign(tmp_path / "c", "--scenario", "mode=serial", launches=3)
    for record in records:
        assert record.race["available"] is True
        assert len(record.race["calls"]) == 3
        assert len(record.race["contexts"]) == 1 and record.race["witnessed"] is False


def test_cpu_only_launch_has_the_witness_but_no_xnnpack_init(tmp_path: Path) -> None:
    record, = campaign(tmp_path / "c", "--scenario", "ep=cpu", launches=1)
    assert record.outcome is Outcome.COMPLETED
    assert record.race == {"available": True, "witnessed": False, "contexts": [],
                           "calls": [], "skew_us": None, "reason": None}


def test_a_crashed_launch_keeps_its_race_record(tmp_path: Path) -> None:
    # serial: the real race cannot crash the launch in creation, before the injected crash
    record, = campaign(tmp_path / "c", "--scenario", "mode=serial&inject=segv@sessions-created",
                       launches=1)
    assert record.outcome is Outcome.CRASHED and record.signal_name == "SIGSEGV"
    assert record.race["available"] is True and len(record.race["calls"]) == 3


def test_no_witness_says_so_and_writes_no_file(tmp_path: Path) -> None:
    record, = campaign(tmp_path / "c", "--no-witness", launches=1)
    assert record.race == {"available": False, "witnessed": False, "contexts": [],
                           "calls": [], "skew_us": None, "reason": OFF_REASON}
    assert not (tmp_path / "c" / "artifacts" / record.launch_id / "witness.jsonl").exists()
    assert load_campaign(tmp_path / "c").meta.options["witness"] == f"off: {OFF_REASON}"


def test_a_static_xnnpack_runtime_never_claims_a_race_was_absent(runtime, tmp_path: Path
                                                                  ) -> None:
    cache = tmp_path / "cache"
    static = cache / "runtimes" / "static" / "runtime.json"
    static.parent.mkdir(parents=True)
    static.write_text(json.dumps({**runtime.__dict__, "name": "static",
                                  "xnnpack_library": None}))
    env = {"COLDSTART_CACHE": str(cache)}
    proc = coldstart("run", "host", "--runtime", "static", "--launches", "1", "--out",
                     str(tmp_path / "c"), env=env)
    assert proc.returncode == 0, proc.stderr
    record, = load_campaign(tmp_path / "c").records
    assert record.race["available"] is False and record.race["witnessed"] is False
    assert record.race["reason"] == STATIC_REASON
    proc = coldstart("run", "host", "--runtime", "static", "--witness", "--out",
                     str(tmp_path / "d"), env=env)
    one_line_error(proc, "--witness cannot work on runtime 'static'")
    assert "statically" in proc.stderr


def test_log_verbose_amplifier_keeps_the_pipeline_correct(tmp_path: Path) -> None:
    record, = campaign(tmp_path / "c", "--scenario", "mode=serial&log=verbose", launches=1)
    assert record.outcome is Outcome.COMPLETED  # scores within tolerance of expected.json
    assert record.scenario.endswith("&warmup=none&log=verbose")
    assert record.race["available"] is True and len(record.race["calls"]) == 3
