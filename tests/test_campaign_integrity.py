"""Never a wrong count (issue #13): one writer per campaign, --out that holds only its own
campaign, bounded reads, one line for every malformed input, and appends that lose nothing.

The campaigns here are made by the real store and loop with a scripted launcher double, or
by the real `coldstart` command on the host target where a test says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.campaign import load_campaign, run_campaign
from kit.store.store import CampaignStore
from kit.store.repair import repair_campaign, RepairReport
from kit.errors import DataError, InfraError, UsageError
from kit.records import Outcome
from kit.scenario import parse_scenario
from tests.conftest import ROOT, coldstart, one_line_error
from tests.doubles.scripted_launcher import ScriptedLauncherDouble
from tests.helpers import make_campaign, prepare_store, record

SCENARIO = parse_scenario("mode=serial")


def _campaign(path: Path, n: int = 3) -> CampaignStore:
    store, old = prepare_store(path, label="base", target="host", scenario=SCENARIO,
                               launches=n, resume=False)
    run_campaign(store, old, [ScriptedLauncherDouble(lambda i, a: "completed")], label="base",
                 scenario=SCENARIO, launches=n, timeout_s=5)
    return store


# -- one writer ---------------------------------------------------------------------------
def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    first = CampaignStore(tmp_path / "c")
    first.lock()
    try:
        with pytest.raises(UsageError, match=rf"being written by another coldstart "
                                             rf"\(pid {os.getpid()}\)"):
            CampaignStore(tmp_path / "c").lock()
        assert CampaignStore(tmp_path / "c").writer_pid() == os.getpid()
    finally:
        first.unlock()
    assert CampaignStore(tmp_path / "c").writer_pid() is None
    CampaignStore(tmp_path / "c").lock()  # free again (and a stale lock file is harmless)


def _slow_run(out: Path, *extra: str) -> subprocess.Popen:
    """A real `coldstart run host` that holds its campaign while its launches hang."""
    return subprocess.Popen([sys.executable, "-m", "kit.cli", "run", "host", "--launches", "2",
                             "--scenario", "mode=serial&inject=hang@start", "--timeout", "60",
                             "--no-witness", "--out", str(out), *extra], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for_records_file(out: Path, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not (out / "artifacts").exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the first run never started its launches"
        time.sleep(0.1)


@pytest.mark.host
@pytest.mark.slow
def test_two_runs_on_one_out_and_a_resume_racing_a_run_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "c"
    first = _slow_run(out)
    try:
        _wait_for_records_file(out, first)
        second = coldstart("run", "host", "--launches", "2", "--scenario", "mode=serial",
                           "--out", str(out))
        one_line_error(second, f"pid {first.pid}")
        resume = coldstart("run", "host", "--resume", "--out", str(out))
        one_line_error(resume, f"pid {first.pid}")
        compare = coldstart("compare", str(out), str(out), "--no-reports")
        assert "Traceback" not in compare.stderr
    finally:
        first.kill()
        first.wait()
    records = load_campaign(out).records
    assert len({r.launch_id for r in records}) == len(records)  # no duplicates were written
    assert all(r.outcome is not Outcome.CRASHED for r in records)


def test_a_reader_notes_a_campaign_in_progress(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c")
    writer = CampaignStore(store.path)
    writer.lock()
    try:
        notes = load_campaign(store.path).notes
    finally:
        writer.unlock()
    assert any("in progress" in n and str(os.getpid()) in n for n in notes)
    assert not any("in progress" in n for n in load_campaign(store.path).notes)


def test_compare_on_a_campaign_in_progress_says_so_once_and_not_interrupted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import update_meta
    from kit.cli import main

    store = _campaign(tmp_path / "c")
    update_meta(store, launches=10)  # 3 of 10 made, and still being written
    other = _campaign(tmp_path / "d")
    writer = CampaignStore(store.path)
    writer.lock()
    try:
        assert main(["compare", str(store.path), str(other.path)]) == 0
    finally:
        writer.unlock()
    out = capsys.readouterr().out
    assert out.count("a campaign in progress") == 1, out
    assert "interrupted" not in out, out
    summary = (other.path / "comparison" / "summary.md").read_text()
    assert summary.count("a campaign in progress") == 1, summary
    assert "interrupted" not in summary, summary
    # once its writer is gone, the same campaign reads as interrupted, with the resume hint
    assert main(["compare", str(store.path), str(other.path), "--no-reports"]) == 0
    out = capsys.readouterr().out
    assert "in progress" not in out and "made 3 of its 10 planned launches" in out, out


# -- --out ----------------------------------------------------------------------------------
def test_a_fresh_run_never_adopts_what_is_in_out(tmp_path: Path) -> None:
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "launches.jsonl").write_text(json.dumps(record("x", 0).to_dict()) + "\n")
    with pytest.raises(UsageError, match="is not empty .*launches.jsonl.* and holds no "
                                         "campaign"):
        prepare_store(stray, label="base", target="host", scenario=SCENARIO, launches=3,
                      resume=False)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's own file\n")
    proc = coldstart("run", "host", "--launches", "1", "--out", str(mine))
    one_line_error(proc, "is not empty (notes.txt) and holds no campaign")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]  # nothing made, nothing lost
    assert (mine / "notes.txt").read_text() == "the user's own file\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    prepare_store(empty, label="base", target="host", scenario=SCENARIO, launches=1,
                  resume=False)  # an empty directory is fine


def test_an_existing_campaign_needs_resume_and_an_empty_out_is_refused(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c")
    with pytest.raises(UsageError, match="already holds a campaign"):
        prepare_store(store.path, label="base", target="host", scenario=SCENARIO, launches=3,
                      resume=False)
    one_line_error(coldstart("run", "host", "--out", ""), "--out is empty")


# -- malformed records and campaign.json --------------------------------------------------
BAD_LINES = {
    "42": "is not a JSON object but a number",
    "null": "is not a JSON object but null",
    "[]": "is not a JSON object but a list",
    "{\"v\": 1}": "outcome",
    "not json at all": "is not JSON",
}


@pytest.mark.parametrize("line", list(BAD_LINES), ids=list(BAD_LINES))
def test_a_line_that_is_not_a_record_is_one_line_with_the_repair(tmp_path: Path,
                                                                 line: str) -> None:
    store = _campaign(tmp_path / "c")
    with open(store.launches_path, "a") as fh:
        fh.write(line + "\n")
    with pytest.raises(DataError, match=BAD_LINES[line]) as err:
        load_campaign(store.path)
    assert "line 4" in err.value.message and "coldstart repair" in (err.value.hint or "")
    proc = coldstart("compare", str(store.path), str(_campaign(tmp_path / "d").path))
    one_line_error(proc, "line 4", progress=False)
    report = repair_campaign(store.path)
    assert (report.kept, report.dropped) == (3, 1)
    assert len(load_campaign(store.path).records) == 3
    assert report.backup is not None and line in report.backup.read_text()


@pytest.mark.parametrize("field,value,message", [
    ("crash_class", 7, "crash_class must be a string or null, not a number"),
    ("signature", ["a", "b"], "signature must be a string or null, not a list"),
    ("device", 3, "device must be a string, not a number"),
    ("index", -1, "index must be a whole number >= 0"),
    ("attempt", True, "attempt must be a whole number >= 1, not a boolean"),
    ("outcome", "exploded", "outcome 'exploded' is not one of"),
    ("scores", [1, "x"], "scores must be a list of numbers"),
    ("sessions", [{"i": 0}], "sessions[]: model must be a string"),
])
def test_a_record_field_of_the_wrong_type_is_named(tmp_path: Path, field: str, value: object,
                                                   message: str) -> None:
    store = _campaign(tmp_path / "c", 1)
    data = record("base", 1).to_dict()
    data[field] = value
    with open(store.launches_path, "a") as fh:
        fh.write(json.dumps(data) + "\n")
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_campaign(store.path)


@pytest.mark.parametrize("text,message", [
    ('{"label": "b", "target": "host", "scenario": "", "launches": 3, "build": [1]}',
     "build must be an object, not a list"),
    ("[]", "must hold a JSON object, not a list"),
    ('{"label": 3}', "label must be a string, not a number"),
    ('{"label": "../../b", "target": "host", "scenario": "", "launches": 3}',
     "label '../../b' is not a build label"),
    ('{"label": "", "target": "host", "scenario": "", "launches": 3}',
     "label '' is not a build label"),
    ('{"label": "b", "target": "host", "scenario": "", "launches": "3"}',
     "launches must be a whole number"),
    ('{"label": "b", "target": "host", "scenario": "", "launches": 3, "until_verdict": 4}',
     "until_verdict must be an object"),
    ("{", "is not valid JSON"),
])
def test_a_bad_campaign_json_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    store = _campaign(tmp_path / "c", 1)
    store.meta_path.write_text(text)
    for proc in (coldstart("compare", str(store.path), str(store.path), "--no-reports"),
                 coldstart("report", str(store.path), "--quiet"),
                 coldstart("run", "host", "--resume", "--out", str(store.path))):
        one_line_error(proc, message, progress=False)


def test_duplicate_launch_ids_are_an_error_until_repaired(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c", 3)
    first = store.launches_path.read_text().splitlines()[0]
    with open(store.launches_path, "a") as fh:
        fh.write(first + "\n")
    with pytest.raises(DataError, match="repeats launch id base-00000") as err:
        load_campaign(store.path)
    assert f"coldstart repair {store.path}" in (err.value.hint or "")
    proc = coldstart("repair", str(store.path))
    assert proc.returncode == 0 and "dropped 1 lines" in proc.stdout, proc.stderr
    assert [r.index for r in load_campaign(store.path).records] == [0, 1, 2]
    assert repair_campaign(store.path) == RepairReport(3, 0, (), None)  # nothing left to do


def test_two_counted_records_of_one_slot_count_once(tmp_path: Path) -> None:
    make_campaign(tmp_path, "b", [record("b", 0, "completed")])
    CampaignStore(tmp_path / "b").append(record("b", 0, "crashed", attempt=2))
    with pytest.raises(DataError, match="repeats launch slot 0 of b-00000"):
        load_campaign(tmp_path / "b")


# -- bounded reads ----------------------------------------------------------------------------
def test_devices_and_fifos_are_refused_not_read(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c", 1)
    store.launches_path.unlink()
    store.launches_path.symlink_to("/dev/zero")
    proc = coldstart("report", str(store.path), "--quiet", timeout=60)
    one_line_error(proc, "launches.jsonl", progress=False)
    assert "character device" in proc.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    other = _campaign(tmp_path / "d", 1)
    other.meta_path.unlink()
    other.meta_path.symlink_to(fifo)
    one_line_error(coldstart("compare", str(other.path), str(store.path), "--no-reports",
                             timeout=60), "a FIFO", progress=False)


def test_models_verify_refuses_a_device_and_an_expected_json_of_the_wrong_shape(
        tmp_path: Path) -> None:
    import shutil

    models = tmp_path / "models"
    shutil.copytree(ROOT / "models", models)
    (models / "embedding_model.onnx").unlink()
    (models / "embedding_model.onnx").symlink_to("/dev/zero")
    one_line_error(coldstart("models", "verify", "--models", str(models), timeout=60),
                   "does not match its pinned sha256", progress=False)
    (models / "embedding_model.onnx").unlink()
    shutil.copy(ROOT / "models" / "embedding_model.onnx", models / "embedding_model.onnx")
    for text, message in (("[]", "must hold a JSON object, not a list"),
                          ('{"scores": [], "tolerance": {"abs": 0.001}}', "scores is empty"),
                          ('{"scores": [0.5], "tolerance": {"abs": "x"}}', "abs must be a "
                                                                           "number")):
        (models / "expected.json").write_text(text)
        one_line_error(coldstart("models", "verify", "--models", str(models)), message,
                       progress=False)


def test_a_record_line_over_the_cap_is_refused_without_reading_it_whole(tmp_path: Path,
                                                                        monkeypatch) -> None:
    import kit.store.store as store_mod

    store = _campaign(tmp_path / "c", 1)
    monkeypatch.setattr(store_mod, "MAX_RECORD_BYTES", 1000)
    with open(store.launches_path, "a") as fh:
        fh.write("x" * 5000 + "\n")
    with pytest.raises(DataError, match="line 2 is longer than"):
        load_campaign(store.path)


# -- appends that lose nothing --------------------------------------------------------------
def test_a_failed_append_leaves_no_half_line_and_names_the_path(tmp_path: Path) -> None:
    """A file-size limit (RLIMIT_FSIZE, as a full disk would) hit mid-append: the launch is
    not half-written, the error names the file and the cause, and the next append (space
    back) writes whole lines after the last good one."""
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from kit.store.store import CampaignStore
        from kit.errors import InfraError
        from tests.helpers import record
        store = CampaignStore({str(tmp_path / 'c')!r})
        store.path.mkdir()
        store.append(record("b", 0))
        size = store.launches_path.stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, resource.RLIM_INFINITY))
        try:
            store.append(record("b", 1, error="x" * 2000), retry_s=0)
        except InfraError as exc:
            print("INFRA", exc.exit_code.value, exc.one_line())
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("INFRA 3 cannot record launch b-00001 in "), proc.stdout
    assert str(tmp_path / "c" / "launches.jsonl") in proc.stdout
    assert "File too large" in proc.stdout
    store = CampaignStore(tmp_path / "c")
    lines = store.launches_path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 2  # the first record, whole, and nothing else
    store.append(record("b", 1))
    assert [r.index for r in store.iter_records()] == [0, 1]


def test_an_append_waits_for_space_to_come_back(tmp_path: Path, monkeypatch) -> None:
    import errno

    store = CampaignStore(tmp_path / "c")
    store.path.mkdir()
    real = store._write_line
    failures = [OSError(errno.ENOSPC, "No space left on device")] * 2

    def flaky(data: bytes) -> None:
        if failures:
            raise failures.pop()
        real(data)

    monkeypatch.setattr(store, "_write_line", flaky)
    slept: list[float] = []
    store.append(record("b", 0), retry_s=60, sleep=slept.append)
    assert slept == [0.5, 1.0] and [r.index for r in store.iter_records()] == [0]
    failures[:] = [OSError(errno.ENOSPC, "No space left on device")] * 100
    with pytest.raises(InfraError, match="No space left on device"):
        store.append(record("b", 1), retry_s=3, sleep=lambda _s: None)


def test_a_cut_last_line_is_ignored_and_replaced_by_the_next_append(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c", 2)
    with open(store.launches_path, "ab") as fh:
        fh.write(b'{"v":1,"launch_id":"base-0')  # kill -9 mid-write
    assert len(load_campaign(store.path).records) == 2
    store.append(record("base", 2))
    assert [r.index for r in store.iter_records()] == [0, 1, 2]


# -- the command line -----------------------------------------------------------------------
def test_debug_anywhere_and_long_input_cut_in_error_lines() -> None:
    long = "x" * 100_000
    proc = coldstart("run", "host", "--label", long)
    line = one_line_error(proc, "label 'xxxx", progress=False)
    assert len(line) < 700
    proc = coldstart("compare", "/nonexistent/a", "/nonexistent/b", "--debug")
    # --debug after the command: the traceback, then the same line and exit code as without
    assert proc.returncode == 2 and "Traceback" in proc.stderr, proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1].startswith("coldstart: error: ")
    proc = coldstart("--debug", "crash", "classify", "/nonexistent/report.txt")
    assert proc.returncode == 2 and "Traceback" in proc.stderr, proc.stderr


def test_bad_signal_number_is_refused() -> None:
    proc = coldstart("crash", "classify", "--signal", "999", str(ROOT / "tests" / "data" /
                                                                "crashes" / "host" /
                                                                "no-backtrace.txt"))
    one_line_error(proc, "999", progress=False)


# -- fuzz: campaign.json and launches.jsonl of any type and shape ---------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(
    allow_nan=False) | st.text(max_size=8), lambda kids: st.lists(kids, max_size=3) |
    st.dictionaries(st.text(max_size=8), kids, max_size=3), max_leaves=8)
META_KEYS = ["schema", "label", "target", "scenario", "launches", "devices", "build", "tools",
             "options", "until_verdict", "interleaved", "created_at"]
RECORD_KEYS = list(record("b", 0).to_dict())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(meta_changes=st.dictionaries(st.sampled_from(META_KEYS), JSON, max_size=3),
       record_changes=st.dictionaries(st.sampled_from(RECORD_KEYS), JSON, max_size=3),
       whole=st.one_of(st.none(), JSON))
def test_fuzzed_campaign_files_give_data_errors_only(tmp_path_factory, meta_changes,
                                                     record_changes, whole) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    store = CampaignStore(root)
    meta = {"label": "b", "target": "host", "scenario": "", "launches": 1, **meta_changes}
    store.meta_path.write_text(json.dumps(meta))
    data = {**record("b", 0).to_dict(), **record_changes}
    line = json.dumps(whole if whole is not None else data)
    store.launches_path.write_text(line + "\n")
    try:
        campaign = load_campaign(root)
    except (DataError, UsageError) as exc:
        assert exc.one_line() and len(exc.one_line()) < 700
        return
    from kit.analysis.summary import summarize

    summarize(campaign)  # what loaded is usable


@pytest.mark.parametrize("args", [
    ("plan", "--baseline-rate", "0.5", "--ceiling", "1e-20"),
    ("plan", "--baseline-rate", "0.5", "--alpha", "1e-20"),
    ("plan", "--baseline-rate", "5e-324"),
    ("plan", "--baseline-rate", "0.5", "--ceiling", "5e-324"),
    ("compare", "a", "b", "--ceiling", "1e-301"),
])
def test_rates_too_small_for_any_launch_count_are_refused(args) -> None:
    # below 1e-9 no plan fits in any number of launches; the arithmetic used to overflow
    proc = coldstart(*args)
    one_line_error(proc, "is below 1e-09, the smallest rate", progress=False)


@pytest.mark.parametrize("flag, value, want", [
    ("--alpha", "0.0001", "at least 0.001"), ("--power", "0.9999999999999999", "between 0.5"),
    ("--power", "0.3", "between 0.5 and 0.99"), ("--beta", "0.99", "at most 0.5")])
def test_plan_refuses_settings_its_search_would_take_many_minutes_for(flag, value, want) -> None:
    # found by a hostile review: --alpha 1e-9 or --power 1 - 1e-16 ran for over 400 s
    proc = coldstart("plan", "--baseline-rate", "0.5", flag, value)
    line = one_line_error(proc, f"plan's {flag} {value} is outside what it designs for",
                          progress=False)
    assert want in line


@pytest.mark.parametrize("args, prog", [
    (("run", "host", "--poison", "bogus"), "coldstart run host"),
    (("models", "verify", "m1"), "coldstart models verify"),
    (("compare", "a", "b", "c"), "coldstart compare"),
])
def test_unrecognized_arguments_point_at_their_subcommands_help(args, prog) -> None:
    proc = coldstart(*args)
    line = one_line_error(proc, "unrecognized arguments", progress=False)
    assert line.endswith(f"(see `{prog} --help`)"), line


@pytest.mark.parametrize("name", ["launches.jsonl", "campaign.json", ".coldstart.lock"])
def test_a_fifo_for_any_campaign_file_is_named_by_every_reader_and_writer(
        tmp_path: Path, name: str) -> None:
    """Each command that opens a campaign file refuses a FIFO in its place (it once hung
    compare, report and plan --baseline in the cut-tail check), one line, exit 2."""
    good = _campaign(tmp_path / "good", 2)
    bad = _campaign(tmp_path / "bad", 2)
    (bad.path / name).unlink(missing_ok=True)
    os.mkfifo(bad.path / name)
    runs = [("compare", str(bad.path), str(good.path), "--no-reports"),
            ("compare", str(good.path), str(bad.path), "--no-reports"),
            ("report", str(bad.path), "--quiet"),
            ("report", str(tmp_path), "--quiet"),  # found as a child campaign
            ("plan", "--baseline", str(bad.path)),
            ("repair", str(bad.path)),
            ("run", "host", "--resume", "--out", str(bad.path), "--launches", "3")]
    for args in runs:
        proc = coldstart(*args, timeout=60)
        line = one_line_error(proc, "is a FIFO, not a", progress=False)
        assert str(bad.path / name) in line, (args, line)


def test_a_fifo_report_manifest_is_refused_not_read(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c", 1)
    out = tmp_path / "reports"
    out.mkdir()
    os.mkfifo(out / ".coldstart-report.json")
    proc = coldstart("report", str(store.path), "--quiet", "--out", str(out), timeout=60)
    one_line_error(proc, "report manifest", progress=False)
    assert "is a FIFO" in proc.stderr


def test_appending_to_a_fifo_records_file_is_refused(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c", 1)
    store.launches_path.unlink()
    os.mkfifo(store.launches_path)
    with pytest.raises(UsageError, match="is a FIFO, not a regular file"):
        store.append(record("base", 1, "completed"))


def test_refusals_say_what_a_path_is(tmp_path: Path) -> None:
    """One wording everywhere: a device is a character device, a FIFO a FIFO (not "a file",
    not "does not exist", not "holds no campaign")."""
    from kit._bounded import describe_path, path_kind

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "plain").write_text("x")
    assert [path_kind(p) for p in (tmp_path / "none", tmp_path, "/dev/zero", fifo,
                                   tmp_path / "plain")] == [
        "missing", "a directory", "a character device", "a FIFO", "a regular file"]
    assert describe_path(fifo) == "is a FIFO" and describe_path(tmp_path / "x") == \
        "does not exist"
    good = _campaign(tmp_path / "c", 1)
    (tmp_path / "f2").mkdir()
    os.mkfifo(tmp_path / "f2" / "campaign.json")
    for args, fragment in (
            (("app", "inspect", "/dev/zero"), "/dev/zero is a character device"),
            (("app", "inspect", str(fifo)), f"{fifo} is a FIFO"),
            (("report", "/dev/zero", "--quiet"), "/dev/zero is a character device"),
            (("report", str(fifo), "--quiet"), f"{fifo} is a FIFO"),
            (("compare", "/dev/zero", str(good.path)), "/dev/zero is a character device"),
            (("compare", str(good.path), str(fifo)), f"{fifo} is a FIFO"),
            (("report", str(good.path), "--out", "/dev/null"),
             "--out /dev/null is a character device"),
            (("run", "host", "--out", str(tmp_path / "f2"), "--resume"),
             f"{tmp_path / 'f2' / 'campaign.json'} is a FIFO"),
            (("run", "host", "--out", "/dev/null", "--resume"),
             "--out /dev/null is a character device"),
            (("plan", "--baseline", str(fifo)), f"{fifo} is a FIFO")):
        one_line_error(coldstart(*args, timeout=60), fragment, progress=False)


def test_repair_names_the_record_repeated_and_hints_name_the_real_path(tmp_path: Path) -> None:
    store = _campaign(tmp_path / "c", 3)
    lines = store.launches_path.read_text().splitlines()
    slot_twin = json.loads(lines[2])
    slot_twin["launch_id"] = "base-00002.r2"
    slot_twin["attempt"] = 2
    with open(store.launches_path, "a") as fh:
        fh.write(json.dumps(slot_twin) + "\n" + lines[0] + "\n")
    report = repair_campaign(store.path)
    assert report.reasons == (
        "line 4: base-00002.r2 repeats launch slot 2 of base-00002 (line 3)",
        "line 5: repeats launch id base-00000 (line 1)")
    bad = json.loads(lines[0])
    bad["outcome"] = "exploded"
    store.launches_path.write_text(json.dumps(bad) + "\n")
    line = one_line_error(coldstart("report", str(store.path), "--quiet"), progress=False)
    assert f"coldstart repair {store.path}" in line and "repair DIR" not in line


def test_a_cut_line_note_names_the_campaign_directory_not_only_its_label(
        tmp_path: Path) -> None:
    one, two = _campaign(tmp_path / "c1", 2), _campaign(tmp_path / "c2", 2)  # both "base"
    with open(two.launches_path, "a") as fh:
        fh.write('{"launch_id": "base-0')
    proc = coldstart("report", str(one.path), str(two.path), "--out", str(tmp_path / "r"),
                     "--quiet")
    assert proc.returncode == 0, proc.stderr
    notes = [json.loads((tmp_path / "r" / "summary.json").read_text())["campaigns"][i]["notes"]
             for i in (0, 1)]
    assert notes == [[], [f"dropped an incomplete last line of {two.launches_path} (21 bytes)"]]


def test_a_fifo_left_where_a_rewrite_goes_never_blocks_it(tmp_path: Path) -> None:
    """campaign.json, launches.jsonl (repair) and the report manifest are rewritten through
    a ``.tmp`` file: a FIFO by that name is removed, not written into."""
    from kit.store.meta import read_meta, write_meta

    store = _campaign(tmp_path / "c", 2)
    os.mkfifo(store.path / "campaign.json.tmp")
    meta = read_meta(store.path)
    write_meta(store.path, meta)
    assert read_meta(store.path) == meta and not (store.path / "campaign.json.tmp").exists()
    with open(store.launches_path, "a") as fh:
        fh.write("not json\n")
    os.mkfifo(store.path / "launches.jsonl.tmp")
    assert repair_campaign(store.path).kept == 2
    out = tmp_path / "r"
    out.mkdir()
    os.mkfifo(out / ".coldstart-report.json.tmp")
    proc = coldstart("report", str(store.path), "--quiet", "--out", str(out), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / ".coldstart-report.json").read_text())["files"]


def test_a_cut_tail_longer_than_the_read_bound_is_not_given_a_size_it_was_not_measured_at(
        tmp_path: Path) -> None:
    # a power loss can leave a run of NUL bytes after the last record; the read is bounded,
    # so a tail longer than one record's bound is named as such, never by the bound's size
    from kit.store.store import MAX_RECORD_BYTES

    store = _campaign(tmp_path / "c", 2)
    with open(store.launches_path, "ab") as fh:
        fh.truncate(store.launches_path.stat().st_size + MAX_RECORD_BYTES + 4096)
    note = store.cut_tail_note()
    assert note == (f"dropped an incomplete last line of {store.launches_path} "
                    f"(more than {MAX_RECORD_BYTES} bytes)")


def test_a_repair_that_fails_while_writing_leaves_the_records_where_they_were(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``repair`` streams the kept records into a new file (never all held at once) and
    puts it in place only when whole: a write that fails (a full disk) leaves
    ``launches.jsonl`` as it was, every record still there, and no temporary file."""
    import errno

    import kit._bounded as bounded

    store = _campaign(tmp_path / "c", 3)
    with open(store.launches_path, "a") as fh:
        fh.write("not a record\n")
    before = store.launches_path.read_bytes()
    real = bounded.AtomicFile.write
    calls = []

    def full_disk(self: Any, data: bytes) -> None:
        calls.append(len(data))
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, data)

    monkeypatch.setattr(bounded.AtomicFile, "write", full_disk)
    with pytest.raises(OSError, match="No space left"):
        repair_campaign(store.path)
    assert store.launches_path.read_bytes() == before
    assert sorted(p.name for p in store.path.iterdir() if "launches" in p.name) == [
        "launches.jsonl"]
    assert len(calls) == 2  # the records went one by one, not in one piece
    monkeypatch.setattr(bounded.AtomicFile, "write", real)
    report = repair_campaign(store.path)
    assert (report.kept, report.dropped) == (3, 1)
    assert report.backup is not None and report.backup.read_bytes() == before
