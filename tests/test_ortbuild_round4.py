"""``runtime build-ort`` against the hostile round of issue #46 (families 3, 4, 7, 8 and 9),
and the instrumented (ThreadSanitizer) variant, on the small source package of
tests/test_ortbuild.py in a folder standing for the Debian root
(tests/doubles/ort_build_root.py). Family 3 runs a real ninja on the host
(tests/doubles/ort_build_root.py's ``HostChrootExecutor``: the kit's executor without the
chroot)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kit.errors import InfraError, UsageError
from kit.targets.host import ortbuild
from kit.targets.host.ortbuild import TSAN, OrtBuild, build_variant, check_mirror, load_patch
from tests.helpers.ortbuild import EP, FIX

ROOT = Path(__file__).resolve().parent.parent


def _builder(mini, tmp_path):  # noqa: F811
    source, executor = mini
    messages: list[str] = []
    build = OrtBuild(executor, log_dir=tmp_path / "logs", source=source, jobs=2,
                     log=messages.append, needs_root=False)
    return build, messages


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, stdin=subprocess.DEVNULL)


# ---------------------------------------------------------------- family 4: bounded reads
@pytest.mark.parametrize("damage, words", [
    ("sparse", "larger than"), ("fifo", "FIFO"), ("truncated", "not valid JSON")])
def test_a_cached_variants_provenance_is_read_bounded(mini, tmp_path, damage, words):  # noqa: F811
    build, _ = _builder(mini, tmp_path)
    out, _, _ = build_variant(build, None)
    path = out / "provenance.json"
    text = path.read_bytes()
    path.unlink()
    if damage == "sparse":
        with open(path, "wb") as fh:
            fh.truncate(3 * 1024 ** 3)
    elif damage == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(text[: len(text) // 2])
    with pytest.raises(UsageError) as err:  # exit 2, one line, in bounded time
        build_variant(build, None)
    assert words in err.value.one_line() and "\n" not in err.value.one_line()
    assert "--force" in err.value.hint
    # and --force rebuilds it
    out2, info, cached = build_variant(build, None, rebuild=True)
    assert cached is False and out2 == out and json.loads(path.read_text()) == info


# ---------------------------------------------------------------- family 8: a broken cache
def test_a_cached_variant_with_its_lib_emptied_is_refused_then_rebuilt_by_force(mini, tmp_path):  # noqa: F811
    build, _ = _builder(mini, tmp_path)
    out, _, _ = build_variant(build, None)
    library = out / "lib" / "libonnxruntime.so.1.21.0"
    good = library.read_bytes()
    for item in (out / "lib").iterdir():
        item.unlink()
    with pytest.raises(InfraError) as err:
        build_variant(build, None)
    assert "is damaged (lib/libonnxruntime.so.1.21.0 is missing)" in err.value.message
    assert "with --force: it rebuilds the variant" in err.value.hint
    out2, _, cached = build_variant(build, None, rebuild=True)
    assert cached is False and library.read_bytes() == good
    assert (out / "lib" / "libonnxruntime.so").is_symlink()
    assert build_variant(build, None)[2] is True  # whole again: from the cache


def test_a_cached_library_that_changed_is_damaged(mini, tmp_path):  # noqa: F811
    build, _ = _builder(mini, tmp_path)
    out, _, _ = build_variant(build, None)
    (out / "lib" / "libonnxruntime.so.1.21.0").write_bytes(b"something else")
    with pytest.raises(InfraError, match="sha256 differs"):
        build_variant(build, None)


def test_an_older_kits_empty_complete_still_counts_as_whole(mini, tmp_path):  # noqa: F811
    build, _ = _builder(mini, tmp_path)
    out, _, _ = build_variant(build, None)
    (out / ".complete").write_bytes(b"")
    assert build_variant(build, None)[2] is True


# ---------------------------------------------------------------- family 9: up front
@pytest.mark.parametrize("text, words", [
    (f"--- a/{EP}\n+++ b/{EP}\n", "has no hunk"),
    ("diff --git a/x.bin b/x.bin\nindex 1..2 100644\nGIT binary patch\nliteral 3\nKcmZ?wP}\n\n"
     "literal 0\nHcmV?d00001\n\n", "binary diff")])
def test_a_patch_without_a_text_hunk_is_refused_before_any_work(tmp_path, text, words):
    path = tmp_path / "p.patch"
    path.write_text(text)
    with pytest.raises(UsageError, match=words):
        load_patch(str(path))
    env = {**os.environ, "COLDSTART_CACHE": str(tmp_path / "cache")}
    proc = _cli("runtime", "build-ort", "--patch", str(path), env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert words in proc.stderr
    assert not (tmp_path / "cache").exists()  # no root, no download, nothing made


def test_an_empty_name_is_refused_not_taken_as_baseline(tmp_path):
    env = {**os.environ, "COLDSTART_CACHE": str(tmp_path / "cache")}
    proc = _cli("runtime", "build-ort", "--name", "", env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "runtime name '' is invalid" in proc.stderr


def test_the_first_build_estimate_is_said_only_before_a_real_first_build(mini, tmp_path):  # noqa: F811
    build, messages = _builder(mini, tmp_path)
    build_variant(build, None)
    assert any("a first build compiles" in m for m in messages)
    shutil.rmtree(mini[1].host("/opt/coldstart-ort/1.0"))  # the tree gone, the variant cached
    messages.clear()
    assert build_variant(build, None)[2] is True
    assert not any("a first build" in m for m in messages)


# ---------------------------------------------------------------- family 7: the mirror
@pytest.mark.parametrize("mirror", [
    "http://deb.debian.org/debian\ndeb [trusted=yes] http://evil.example trixie main",
    "http://deb.debian.org/debian [trusted=yes]", "ftp://deb.debian.org/debian",
    "deb.debian.org/debian", "http://a b"])
def test_a_mirror_that_is_not_one_url_is_refused(tmp_path, mirror):
    with pytest.raises(UsageError):
        check_mirror(mirror)
    env = {**os.environ, "COLDSTART_CACHE": str(tmp_path / "cache")}
    for command in ("build-ort", "prepare"):
        proc = _cli("runtime", command, "--mirror", mirror, env=env)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "--mirror" in proc.stderr
    assert not (tmp_path / "cache").exists()


def test_a_plain_mirror_passes():
    for mirror in ("http://deb.debian.org/debian", "https://mirror.example/debian/",
                   "file:///srv/mirror"):
        assert check_mirror(mirror) == mirror


def test_the_download_step_never_writes_a_second_line(mini, tmp_path):  # noqa: F811
    source, executor = mini
    build = OrtBuild(executor, log_dir=tmp_path / "logs", source=source, needs_root=False,
                     mirror="http://x/debian\ndeb [trusted=yes] http://evil trixie main")
    with pytest.raises(UsageError):
        build_variant(build, None)
    assert not executor.host("/etc/apt/sources.list.d/coldstart-src.list").exists()


# ---------------------------------------------------------------- the tsan variant
def test_the_tsan_variant_recompiles_only_its_units_in_a_copy(mini, tmp_path):  # noqa: F811
    build, _ = _builder(mini, tmp_path)
    seen = []
    build.progress = seen.append
    plain_out, plain_info, _ = build_variant(build, None)
    tree = mini[1].host("/opt/coldstart-ort/1.0")
    plain_lib = (plain_out / "lib/libonnxruntime.so.1.21.0").read_bytes()
    seen.clear()
    out, info, cached = build_variant(build, None, instrument=TSAN)
    assert cached is False and out != plain_out and "-tsan-" in out.name
    assert info["instrumented"] == TSAN.describe() and info["key"] != plain_info["key"]
    assert {k: v for k, v in info.items() if k not in ("key", "instrumented")} == {
        k: v for k, v in plain_info.items() if k != "key"}
    library = (out / "lib/libonnxruntime.so.1.21.0").read_bytes()
    assert library.count(b"// built with -fsanitize=thread") == 1  # the EP; no xnnpack_init
    # one object (the mini source has one of the two units) and the link, nothing else
    assert seen[-1].total == 2
    # the plain tree is back in place and untouched; the copy kept beside it
    assert (tree / "build-tsan").is_dir() and not (tree / "build.plain").exists()
    flags = (tree / "build" / "flags.txt").read_text()
    assert "INCLUDE" not in flags and "INCLUDE" in (tree / "build-tsan" / "flags.txt").read_text()
    assert build_variant(build, None)[2] is True
    assert (plain_out / "lib/libonnxruntime.so.1.21.0").read_bytes() == plain_lib
    # a patched tsan variant: the patched unit, instrumented, and the link
    seen.clear()
    fix = tmp_path / "fix.patch"
    fix.write_text(FIX)
    out_fix, info_fix, _ = build_variant(build, load_patch(str(fix)), instrument=TSAN)
    fixed = (out_fix / "lib/libonnxruntime.so.1.21.0").read_bytes()
    assert b"std::call_once(once, init);\n\n// built with -fsanitize=thread" in fixed
    assert seen[-1].total == 2 and info_fix["patch"]["name"] == "fix"
    assert build_variant(build, None, instrument=TSAN)[2] is True


def test_an_interrupted_swap_is_undone_by_the_next_build(mini, tmp_path):  # noqa: F811
    build, _ = _builder(mini, tmp_path)
    build_variant(build, None)
    build_variant(build, None, instrument=TSAN)
    tree = mini[1].host("/opt/coldstart-ort/1.0")
    # as a kill -9 inside instrumented_tree leaves it
    (tree / "build").rename(tree / "build.plain")
    (tree / "build-tsan").rename(tree / "build")
    (tree / "build-swapped").write_text("tsan")
    assert build_variant(build, None)[2] is True
    assert "INCLUDE" not in (tree / "build" / "flags.txt").read_text()
    assert (tree / "build-tsan").is_dir() and not (tree / "build.plain").exists()


# ---------------------------------------------------------------- family 3: no orphans
_KILLED_BUILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kit.targets.host.ortbuild import hold_build_lock
    from tests.doubles.ort_build_root import HostChrootExecutor
    root, build = Path(sys.argv[1]), sys.argv[2]
    executor = HostChrootExecutor(root)
    executor.hold_fds = (hold_build_lock(root / "base", print),)
    for item in executor.stream(["ninja", "-C", build, "-j2"], root / "compile.log"):
        print(item, flush=True)
""")


def _alive(marker: str, exact: bool = False) -> list[int]:
    """Processes whose argv contains ``marker`` (``exact``: whose argv is it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ")
            except OSError:
                continue
            text = argv.decode(errors="replace")
            if (text == marker) if exact else (marker in text):
                pids.append(int(entry.name))
    return pids


def _wait(predicate, what: str, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit_s:g} s: {what}")
        time.sleep(0.05)


@pytest.mark.skipif(shutil.which("ninja") is None, reason="needs ninja on the host")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_a_killed_build_takes_ninja_and_the_compilers_with_it_and_holds_the_lock(tmp_path,
                                                                                 how):
    marker = f"sleep 600.{os.getpid()}{int(how)}"  # sleep takes a fraction: a unique argv
    release = tmp_path / "release"
    got_term = tmp_path / "got-term"
    build = tmp_path / "build"
    build.mkdir()
    # two "compilers" that stop only once the test lets them (after SIGTERM reached them)
    job = (f"sh -c 'trap \"touch {got_term}; while [ ! -e {release} ]; do sleep 0.05; done; "
           f"exit 1\" TERM; {marker} & wait; sleep 600'")
    (build / "build.ninja").write_text(
        f"rule cc\n  command = {job.replace('$', '$$')}\n"
        "build a: cc\nbuild b: cc\ndefault a b\n")
    kit = subprocess.Popen([sys.executable, "-c", _KILLED_BUILD, str(tmp_path), str(build)],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True)
    try:
        _wait(lambda: len(_alive(marker, exact=True)) == 2, "the two compilers started")
        kit.send_signal(how)
        kit.wait(timeout=60)
        _wait(got_term.exists, "SIGTERM reached the compilers")
        lock = os.open(tmp_path / "base" / ".lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # still held by the stopping compilers
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            release.touch()

            def free() -> bool:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return True
                except BlockingIOError:
                    return False
            _wait(free, "the lock is free once the last compiler is gone")
        finally:
            os.close(lock)
        _wait(lambda: not _alive(marker), "no compiler left")
        assert not _alive(f"-C {build}")  # no ninja left
    finally:
        release.touch()
        for pid in _alive(marker):
            os.kill(pid, signal.SIGKILL)
        if kit.poll() is None:
            kit.kill()
