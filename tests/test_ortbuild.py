"""``coldstart runtime build-ort`` without building onnxruntime: the download, checksum,
series, patch, cache, resume, progress and provenance logic on a small source package of the
same layout that the tests make, in a folder standing for the Debian root
(tests/doubles/ort_build_root.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys

import pytest

from kit.analysis.compare import build_change
from kit.store.identity import BuildIdentity, OrtVariant
from kit.analysis.decide import decide
from kit.errors import InfraError, UsageError
from kit.targets.host import ortbuild
from kit.targets.host.ortbuild import (BuildProgress, OrtBuild,
                                       build_variant, format_progress, load_patch,
                                       parse_ninja_status, read_series, select_hunks)
from tests.helpers.ortbuild import DEPS, EP, FIX, ONE_PATCH

def _kit_build(provenance: dict) -> BuildIdentity:
    """The identity of a host campaign on the kit's build with ``provenance``."""
    return BuildIdentity(artifact="ort_library", ort_build=OrtVariant.from_dict(provenance, "x"))


def _builder(mini, tmp_path, **kw):
    source, executor = mini
    seen: list[BuildProgress] = []
    messages: list[str] = []
    build = OrtBuild(executor, log_dir=tmp_path / "logs", source=source, jobs=2,
                     log=messages.append, progress=seen.append, needs_root=False, **kw)
    return build, seen, messages


def _calls(executor, word):
    return [c for c in executor.calls if word in c]


def test_baseline_build_applies_the_series_hunks_and_the_port(mini, tmp_path):
    build, seen, _ = _builder(mini, tmp_path)
    out, info, cached = build_variant(build, None)
    assert cached is False
    src = mini[1].host("/opt/coldstart-ort/1.0/src")
    deps = (src / DEPS).read_text()
    assert "line 21 (hunk two)" in deps and "line 3 (hunk one)" not in deps  # hunks=2 only
    assert "line 30 (port)" in deps
    assert (src / "onnxruntime/core/added.cc").exists()
    library = out / "lib" / "libonnxruntime.so.1.21.0"
    assert b"racy();" in library.read_bytes()
    assert (out / "lib" / "libonnxruntime.so").is_symlink()
    assert sorted(p.name for p in (out / "include").iterdir()) == [
        "cpu_provider_factory.h", "onnxruntime_c_api.h", "onnxruntime_cxx_api.h"]
    assert info["patch"] is None
    assert info["source"]["sha256"] == mini[0].upstream.sha256
    assert info["compiler"] == "c++ (Debian 14.2.0-19) 14.2.0"
    assert json.loads((out / "provenance.json").read_text()) == info
    flags = (mini[1].host("/opt/coldstart-ort/1.0/build") / "flags.txt").read_text().split("\n")
    assert "-Donnxruntime_USE_XNNPACK=ON" in flags and "-DCMAKE_BUILD_TYPE=Release" in flags
    # progress: every status line of the one ninja run, ending at total/total
    assert seen and seen[-1].done == seen[-1].total == len(seen)


def test_a_patch_builds_a_second_variant_and_leaves_the_tree_as_debians(mini, tmp_path):
    build, seen, _ = _builder(mini, tmp_path)
    base_out, base_info, _ = build_variant(build, None)
    fix_file = tmp_path / "my-fix.patch"
    fix_file.write_text(FIX)
    patch = load_patch(str(fix_file))
    assert patch.name == "my-fix" and patch.files == (EP,)
    seen.clear()
    out, info, cached = build_variant(build, patch)
    assert cached is False and out != base_out
    assert b"std::call_once(once, init);" in (out / "lib/libonnxruntime.so.1.21.0").read_bytes()
    assert b"racy();" in (base_out / "lib/libonnxruntime.so.1.21.0").read_bytes()
    assert info["patch"]["name"] == "my-fix"
    assert info["patch"]["sha256"] == hashlib.sha256(FIX.encode()).hexdigest()
    # only the patched file and the link ran again
    assert seen[-1].total == 2
    src = mini[1].host("/opt/coldstart-ort/1.0/src")
    assert (src / EP).read_text() == "// the EP\nracy();\n"  # taken out again
    assert build_change(_kit_build(base_info), _kit_build(info)) == (
        f"patch none -> my-fix, sha256 {patch.sha256[:8]}...")


def test_a_finished_variant_comes_from_the_cache_without_any_step(mini, tmp_path):
    build, _, _ = _builder(mini, tmp_path)
    first = build_variant(build, None)
    calls = len(mini[1].calls)
    again = build_variant(build, None)
    assert again[2] is True and again[0] == first[0]
    # one call: the compiler's version, part of the key
    assert [c[0] for c in mini[1].calls[calls:]] == ["c++"]


def test_the_cache_key_changes_with_the_patch_the_compiler_and_the_source(mini):
    source, _ = mini
    patch = load_patch("fix")
    keys = {ortbuild.variant_key(source, None, "g++ 14"),
            ortbuild.variant_key(source, patch, "g++ 14"),
            ortbuild.variant_key(source, None, "g++ 15"),
            ortbuild.variant_key(dataclasses.replace(
                source, upstream=dataclasses.replace(source.upstream, sha256="0" * 64)),
                None, "g++ 14")}
    assert len(keys) == 4


def test_a_killed_compile_resumes_where_it_stopped(mini, tmp_path):
    build, seen, _ = _builder(mini, tmp_path)
    mini[1].fail_after = 1
    with pytest.raises(InfraError) as err:
        build_variant(build, None)
    assert "the compile step failed" in err.value.message
    assert str(tmp_path / "logs" / "build-ort-compile.log") in err.value.message
    total_first = seen[0].total
    seen.clear()
    mini[1].fail_after = None
    out, _, cached = build_variant(build, None)
    assert cached is False and (out / ".complete").exists()
    assert seen[-1].total == total_first - 1  # the object made before the kill is kept
    assert len(_calls(mini[1], "source")) == 2  # two files downloaded, once each


def test_a_download_with_the_wrong_checksum_names_the_file(mini, tmp_path):
    source, executor = mini
    bad = dataclasses.replace(source, upstream=dataclasses.replace(source.upstream,
                                                                    sha256="f" * 64))
    build = OrtBuild(executor, log_dir=tmp_path / "logs", source=bad, needs_root=False)
    with pytest.raises(InfraError) as err:
        build_variant(build, None)
    assert "mini_1.0.orig.tar.xz from mini=1.0-1 is sha256" in err.value.message
    assert "not sha256 ffff" in err.value.message


def test_a_missing_source_is_an_infra_error_not_a_traceback(mini, tmp_path):
    source, executor = mini
    executor.archive.clear()
    build = OrtBuild(executor, log_dir=tmp_path / "logs", source=source, needs_root=False)
    with pytest.raises(InfraError) as err:
        build_variant(build, None)
    assert "mini_1.0.orig.tar.xz from mini=1.0-1 is missing" in err.value.message


def test_a_patch_that_does_not_apply_is_refused_and_changes_nothing(mini, tmp_path):
    build, _, _ = _builder(mini, tmp_path)
    build_variant(build, None)
    wrong = tmp_path / "wrong.patch"
    wrong.write_text(FIX.replace("-racy();", "-something else();"))
    with pytest.raises(UsageError) as err:
        build_variant(build, load_patch(str(wrong)))
    assert "the patch wrong does not apply" in err.value.message
    src = mini[1].host("/opt/coldstart-ort/1.0/src")
    assert (src / EP).read_text() == "// the EP\nracy();\n"
    assert not mini[1].host("/opt/coldstart-ort/1.0/applied.json").exists()


@pytest.mark.parametrize("text, words", [
    ("not a diff at all\n", "changes no file"),
    ("--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", "outside"),
    ("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", "outside")])
def test_bad_patch_files_are_one_line_usage_errors(tmp_path, text, words):
    path = tmp_path / "p.patch"
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        load_patch(str(path))
    assert words in err.value.message


def test_the_kits_patches_change_only_the_ep_and_say_what_they_are():
    for name in ortbuild.KIT_PATCHES:
        patch = load_patch(name)
        assert patch.files == (EP,)
        assert patch.origin == "kit" and patch.summary == f"coldstart patch: {name}"
    fix, half = load_patch("fix").text.decode(), load_patch("half-fix").text.decode()
    # the fix publishes the context inside the call_once; the half fix outside it
    assert "+    wrapper->context = stored.get();" in fix
    assert "std::call_once(create_once" in half and "wrapper->context" not in half
    assert load_patch("baseline") is None and load_patch(None) is None


def test_the_shipped_series_parses_and_names_hunks_explicitly():
    entries = read_series(ortbuild._data("debian-series.txt").decode())
    names = [n for n, _ in entries]
    assert "use-system-xnnpack.patch" in names and "set-soversion.patch" not in names
    assert dict(entries)["system-safeint.patch"] == {2}
    with pytest.raises(UsageError):
        read_series("one.patch hunks=a\n")


def test_select_hunks_counts_over_the_whole_patch():
    text = ONE_PATCH.split("\n", 1)[1]
    only_first = select_hunks(text, {1})
    assert "hunk one" in only_first and "hunk two" not in only_first


def test_ninja_status_and_progress_words():
    assert parse_ninja_status("[coldstart 12/547] Building CXX object x.o") == (12, 547)
    assert parse_ninja_status("[12/547] Building CXX object x.o") is None
    text = format_progress(BuildProgress(100, 500, 600.0))
    assert text == "compile 100/500 files, 10m00s elapsed, about 40m00s left"
    assert format_progress(BuildProgress(0, 500, 3.0)) == "compile 0/500 files, 0m03s elapsed"


def test_build_change_names_what_differs():
    base = {"source": {"sha256": "a"}, "flags": ["x"], "patch": None, "key": "1"}
    fix = {**base, "patch": {"name": "fix", "sha256": "abcdef0123"}, "key": "2"}
    assert build_change(_kit_build(base), _kit_build(fix)) == (
        "patch none -> fix, sha256 abcdef01...")
    other = {**fix, "flags": ["y"]}
    assert build_change(_kit_build(base), _kit_build(other)) == (
        "onnxruntime build: flags differ; patch none -> fix, sha256 abcdef01...")
    assert build_change(_kit_build(base), BuildIdentity(sha256="x")) is None
    assert build_change(_kit_build(base), _kit_build(dict(base))) is None


def test_a_verdict_between_two_kit_builds_names_the_patch():
    dec = decide(10, 10, 0, 69, change="patch none -> fix, sha256 abcdef01...", kind="build")
    assert dec.verdict.value == "fixed"
    assert dec.reason.startswith("the build change (patch none -> fix, sha256 abcdef01...) "
                                 "fixes ")
    assert dec.to_dict()["change"] == "patch none -> fix, sha256 abcdef01..."
    still = decide(10, 10, 10, 10, change="patch none -> half-fix", kind="build")
    assert still.verdict.value == "not-fixed"
    assert "the candidate (patch none -> half-fix) still" in still.reason


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], capture_output=True,
                          text=True, env=env)


def test_cli_refuses_a_bad_patch_and_a_name_in_use_in_one_line(tmp_path):
    env = {**os.environ, "COLDSTART_CACHE": str(tmp_path / "cache")}
    proc = _cli("runtime", "build-ort", "--patch", str(tmp_path / "missing.patch"), env=env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "missing.patch does not exist" in proc.stderr
    used = tmp_path / "cache" / "runtimes" / "fix"
    used.mkdir(parents=True)
    lib = tmp_path / "libonnxruntime.so"
    lib.write_bytes(b"x")
    (used / "runtime.json").write_text(json.dumps({
        "name": "fix", "kind": "ort-root", "root": str(tmp_path), "include_dir": str(tmp_path),
        "lib_dir": str(tmp_path), "ort_library": str(lib), "xnnpack_library": None}))
    proc = _cli("runtime", "build-ort", "--patch", "fix", env=env)
    assert proc.returncode == 2, proc.stderr
    assert "the runtime name 'fix' is in use (a runtime of kind ort-root)" in proc.stderr
    assert "--force" in proc.stderr
