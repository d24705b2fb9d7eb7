"""No file written through a link, and one writer even when the lock is removed (issue #26).

Every case is a real campaign directory made by the real store, attacked the way a hostile
user, a cleanup job or ``rsync --delete`` would: a symbolic link planted where the kit
writes, a FIFO at a temporary name, the lock file removed or replaced while a writer holds
it, a full disk, and a ``kill -9`` in the middle of writing the reports.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit._bounded import write_atomic
from kit.store.store import LOCK_NAME, CampaignStore
from kit.errors import InfraError, UsageError
from kit.report import check_report_dir, write_reports
from kit.scenario import parse_scenario
from tests.conftest import ROOT, coldstart, one_line_error
from tests.helpers import make_campaign, prepare_store, record

SCENARIO = parse_scenario("mode=serial")
THESIS = "four years of work\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "thesis.txt"
    victim.write_text(THESIS)
    return victim


def _store(path: Path, n: int = 3) -> CampaignStore:
    store, _ = prepare_store(path, label="base", target="host", scenario=SCENARIO,
                             launches=n, resume=False)
    return store


# -- (1) no file written through a link --------------------------------------------------
def test_a_symlink_at_the_lock_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / LOCK_NAME).symlink_to(victim)
    with pytest.raises(UsageError, match="is a symbolic link"):
        CampaignStore(tmp_path / "d").lock()
    assert victim.read_text() == THESIS


def test_run_refuses_an_out_whose_lock_is_a_symlink_in_one_line(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / LOCK_NAME).symlink_to(victim)
    proc = coldstart("run", "host", "--launches", "1", "--no-witness", "--out",
                     str(tmp_path / "d"), timeout=120)
    one_line_error(proc, "is a symbolic link")
    assert victim.read_text() == THESIS


@pytest.mark.parametrize("name", ["launches.jsonl", "campaign.json", LOCK_NAME])
def test_resume_refuses_a_campaign_file_that_is_a_symlink(tmp_path: Path, name: str) -> None:
    store = _store(tmp_path / "c")
    victim = _victim(tmp_path)
    if name == "campaign.json":  # a copy of the real one, so that only the link is wrong
        victim.write_bytes(store.meta_path.read_bytes())
    before = victim.read_bytes()
    path = store.path / name
    path.unlink(missing_ok=True)
    path.symlink_to(victim)
    with pytest.raises(UsageError, match=f"{name} is a symbolic link"):
        prepare_store(store.path, label="base", target="host", scenario=SCENARIO,
                      launches=3, resume=True)
    assert victim.read_bytes() == before


def test_an_append_never_follows_a_link_swapped_in_for_the_records(tmp_path: Path) -> None:
    store = _store(tmp_path / "c")
    store.lock()
    try:
        store.append(record("base", 0))
        victim = _victim(tmp_path)
        victim.write_text("no newline at the end")  # what an append would cut back
        store.launches_path.unlink()
        store.launches_path.symlink_to(victim)
        with pytest.raises(UsageError, match="launches.jsonl is a symbolic link"):
            store.append(record("base", 1))
        assert victim.read_text() == "no newline at the end"
    finally:
        store.unlock()


def test_an_artifacts_link_is_refused_before_anything_is_removed(tmp_path: Path) -> None:
    store = _store(tmp_path / "c")
    elsewhere = tmp_path / "home"
    (elsewhere / "base-00000").mkdir(parents=True)
    (elsewhere / "base-00000" / "notes.txt").write_text("mine")
    (store.path / "artifacts").symlink_to(elsewhere)
    store.lock()
    try:
        with pytest.raises(UsageError, match="artifacts is a symbolic link, not a directory"):
            store.artifacts_dir("base-00000")
    finally:
        store.unlock()
    assert (elsewhere / "base-00000" / "notes.txt").read_text() == "mine"


def test_write_atomic_replaces_a_link_at_its_temp_name_and_never_blocks_on_a_fifo(
        tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    target = tmp_path / "summary.json"
    Path(f"{target}.tmp").symlink_to(victim)
    write_atomic(target, b"{}\n")
    assert victim.read_text() == THESIS
    assert target.read_bytes() == b"{}\n"
    os.mkfifo(f"{target}.tmp")  # opening it for writing would block forever
    write_atomic(target, b"[]\n")
    assert target.read_bytes() == b"[]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", "thesis.txt"]
    link = tmp_path / "linked.json"
    link.symlink_to(victim)  # a link at the name itself is replaced, not written through
    write_atomic(link, b"1\n")
    assert victim.read_text() == THESIS and not link.is_symlink()


def test_write_atomic_never_replaces_a_fifo_a_socket_or_a_device(tmp_path: Path) -> None:
    # the rename would turn them into a file: `farm testspec --out /dev/null` once did
    import socket

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    try:
        for path, kind in ((fifo, "a FIFO"), (sock, "a socket"),
                           (Path(os.devnull), "a character device")):
            with pytest.raises(UsageError, match=f"is {kind}, not a file the kit can write"):
                write_atomic(path, b"x")
        assert fifo.is_fifo() and sock.is_socket() and Path(os.devnull).is_char_device()
        proc = coldstart("farm", "testspec", "--app-id", "org.x", "--out", str(fifo))
        one_line_error(proc, "is a FIFO, not a file the kit can write")
        assert fifo.is_fifo()
    finally:
        server.close()


def test_a_full_disk_names_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    # a file-size limit (RLIMIT_FSIZE) fails the write with EFBIG, as a full disk does
    script = textwrap.dedent(f"""
        import errno, resource, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from kit._bounded import write_atomic
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            write_atomic({str(tmp_path / 'report.html')!r}, b"x" * 100000)
        except OSError as exc:
            print(exc.errno == errno.EFBIG, exc.filename)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.split() == ["True", str(tmp_path / "report.html")], out.stderr
    assert list(tmp_path.iterdir()) == []


# -- (2) reports through the one safe-write helper ------------------------------------------
def test_report_temp_files_that_are_links_or_fifos_are_never_written_through(
        tmp_path: Path) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", i) for i in range(3)])
    out = tmp_path / "report"
    out.mkdir()
    victim = _victim(tmp_path)
    (out / "summary.json.tmp").symlink_to(victim)
    (out / "junit.xml.tmp").symlink_to(victim)
    os.mkfifo(out / "report.html.tmp")
    os.mkfifo(out / "summary.md.tmp")
    write_reports(out, [campaign])
    assert victim.read_text() == THESIS
    assert sorted(p.name for p in out.iterdir()) == [
        ".coldstart-report.json", "junit.xml", "report.html", "summary.json", "summary.md"]


def test_a_campaigns_default_report_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    campaign = make_campaign(tmp_path, "base", [record("base", i) for i in range(3)])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (campaign.path / "report").symlink_to(elsewhere)
    proc = coldstart("report", str(campaign.path), "--quiet", timeout=120)
    one_line_error(proc, "report is a symbolic link, not a directory")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("killed_after", [1, 3, 5])
def test_a_kill_9_while_reports_are_written_never_makes_a_later_run_refuse(
        tmp_path: Path, killed_after: int) -> None:
    first = make_campaign(tmp_path, "base", [record("base", i) for i in range(3)])
    second = make_campaign(tmp_path, "cand", [record("cand", i, "crashed",
                                                     crash_class="abort") for i in range(4)])
    out = tmp_path / "report"
    write_reports(out, [first])
    # a real SIGKILL, sent by the process to itself after its N-th file write
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        import kit._bounded, kit.report
        import kit.report.json_report, kit.report.junit, kit.report.html_report
        import kit.report.markdown
        from kit.campaign import load_campaign
        real, count = kit._bounded.write_atomic, [0]
        def write(path, data, **kw):
            real(path, data, **kw)
            count[0] += 1
            if count[0] == {killed_after}:
                os.kill(os.getpid(), signal.SIGKILL)
        for module in (kit.report, kit.report.json_report, kit.report.junit,
                       kit.report.html_report, kit.report.markdown):
            module.write_atomic = write
        kit.report.write_reports({str(out)!r}, [load_campaign({str(second.path)!r})])
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    check_report_dir(out)  # every file there is still known as a report run's own
    write_reports(out, [second])
    assert '"cand"' in (out / "summary.json").read_text()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


# -- (3) one writer, even when the lock is removed or replaced ----------------------------
def test_a_removed_lock_lets_no_second_writer_in_and_stops_the_first(tmp_path: Path) -> None:
    store = _store(tmp_path / "c")
    store.lock()
    try:
        store.append(record("base", 0))
        (store.path / LOCK_NAME).unlink()  # a cleanup job, rsync --delete
        assert CampaignStore(store.path).writer_pid() is not None
        with pytest.raises(UsageError, match="being written by another coldstart"):
            CampaignStore(store.path).lock()
        before = store.launches_path.read_bytes()
        with pytest.raises(InfraError, match="lost the campaign's lock.*was removed") as exc:
            store.append(record("base", 1))
        assert exc.value.exit_code == 3
        assert store.launches_path.read_bytes() == before
    finally:
        store.unlock()


@pytest.mark.parametrize("replacement", ["file", "directory"])
def test_a_lock_replaced_under_its_writer_stops_it(tmp_path: Path, replacement: str) -> None:
    store = _store(tmp_path / "c")
    store.lock()
    try:
        lock = store.path / LOCK_NAME
        if replacement == "file":
            (store.path / "new").write_text("123\n")
            os.replace(store.path / "new", lock)
        else:
            lock.unlink()
            lock.mkdir()
        with pytest.raises(InfraError, match="lost the campaign's lock.*was replaced"):
            store.append(record("base", 0))
        with pytest.raises(InfraError, match="lost the campaign's lock"):
            store.write_meta(store.read_meta())
        assert store.launches_path.read_bytes() == b""
    finally:
        store.unlock()
    if replacement == "directory":  # named in one line, never opened
        with pytest.raises(UsageError, match="lock file .* is a directory"):
            CampaignStore(store.path).lock()


def test_a_campaign_moved_away_under_its_writer_stops_it(tmp_path: Path) -> None:
    store = _store(tmp_path / "c")
    store.lock()
    try:
        os.rename(store.path, tmp_path / "moved")
        with pytest.raises(InfraError, match="was moved or removed"):
            store.append(record("base", 0))
        assert (tmp_path / "moved" / "launches.jsonl").read_bytes() == b""
    finally:
        store.unlock()


def test_two_report_runs_into_one_directory_take_turns(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ``report`` runs of one campaign both end well (each used to unlink the other's
    temporary files, and one ended with a bare ENOENT); a run held up longer than its wait
    says so in one line."""
    import fcntl

    import kit.report as report

    campaign = make_campaign(tmp_path, "base", [record("base", i) for i in range(200)])
    for _ in range(2):
        procs = [subprocess.Popen([sys.executable, "-m", "kit.cli", "report",
                                   str(campaign.path), "--quiet"], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        assert [code for code, _ in results] == [0, 0, 0], results
    out = campaign.path / "report"
    assert sorted(p.name for p in out.iterdir()) == [
        ".coldstart-report.json", "junit.xml", "report.html", "summary.json", "summary.md"]
    # another run holding the directory: this one waits, then says so
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        monkeypatch.setattr(report, "REPORT_WAIT_S", 0.2)
        with pytest.raises(UsageError, match="another coldstart report has been writing into"):
            write_reports(out, [campaign])
    finally:
        os.close(fd)
    write_reports(out, [campaign])  # let go: it writes
