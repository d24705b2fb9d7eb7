"""``coldstart runtime build-ort``: build onnxruntime itself, from Debian's source, with or
without a patch, so that a baseline and a patched build differ only by the patch.

The route (docs/builds.md):

1. **sources** -- Debian's ``onnxruntime_1.21.0+dfsg.orig.tar.xz`` (upstream v1.21.0, with
   the racy code of onnxruntime#32461) and the packaging of 1.23.2+dfsg-6.1 (its
   ``debian/patches``; the packaging of 1.21 is no longer in the archive), downloaded with
   ``apt-get source --download-only`` inside the kit's Debian 13 root and checked by sha256;
2. **build-deps** -- ``apt-get build-dep onnxruntime=1.21.0+dfsg-1`` inside the root: every
   dependency (XNNPACK as a shared library, pthreadpool, cpuinfo, protobuf, onnx, re2, ...)
   is a Debian package, nothing is downloaded by ORT's FetchContent;
3. **source tree** -- the tarball extracted, Debian's patches of ``kit/data/ort/debian-series.txt``
   applied (some with only the hunks that fit 1.21), then the kit's port
   (``kit/data/ort/port-1.21.patch``);
4. **configure** -- CMake with one fixed set of flags (:data:`CMAKE_FLAGS`);
5. **compile** -- the requested patch applied to the shared tree (and taken out again
   afterwards), ``ninja onnxruntime`` with progress; a killed build resumes where it stopped,
   and a second variant is one translation unit and a relink;
6. **install** -- ``libonnxruntime.so*`` (symbols kept, not stripped) and the public headers
   copied into a variant folder keyed by the source's and the patch's sha256, the flags and
   the compiler: a finished variant is cached and never built again.

Everything runs inside the Debian root (the library needs its glibc 2.41), so the result is a
``debian-root`` runtime whose ``ort_lib_dir`` is put before the root's libraries.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import time
from importlib.resources import files
from pathlib import Path
from typing import Callable, Iterable, Protocol, Sequence

from ..._bounded import MiB, read_bytes_bounded, write_atomic
from ...errors import InfraError, UsageError

__all__ = ["SourceFile", "OrtSource", "DEBIAN_ORT", "CMAKE_FLAGS", "OrtPatch", "KIT_PATCHES",
           "load_patch", "Executor", "ChrootExecutor", "BuildProgress", "OrtBuild",
           "build_variant", "variant_key", "parse_ninja_status", "format_progress"]

#: the patches shipped in ``kit/data/ort/patches`` (``baseline`` is no patch)
KIT_PATCHES = ("fix", "half-fix")
_PATCH_LIMIT = 4 * MiB
#: the inner (in-root) folder that holds every build
INNER_BASE = "/opt/coldstart-ort"


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """One file of a Debian source package: its name in the pool, sha256 and size (bytes),
    and the ``package=version`` that ``apt-get source`` fetches it with."""

    name: str
    sha256: str
    size: int
    request: str


@dataclasses.dataclass(frozen=True)
class OrtSource:
    """What a build is made from: the upstream tarball, the Debian packaging whose patches
    are applied, the series and port files (``kit/data/ort`` names, or absolute paths), the
    version directory, the
    ``apt-get build-dep`` request, the ninja target, the library it makes and the header
    folders the workload needs."""

    package: str
    version: str
    upstream: SourceFile
    packaging: SourceFile
    series: str
    port: str
    tree: str
    build_dep: str
    target: str = "onnxruntime"
    library_glob: str = "libonnxruntime.so*"
    headers: tuple[str, ...] = ("include/onnxruntime/core/session",
                                "include/onnxruntime/core/providers/cpu")
    suites: tuple[str, ...] = ("trixie", "sid")


#: Debian 13's onnxruntime 1.21.0+dfsg-1 (sha256 and size as in the Sources index)
DEBIAN_ORT = OrtSource(
    package="onnxruntime", version="1.21.0+dfsg-1",
    upstream=SourceFile("onnxruntime_1.21.0+dfsg.orig.tar.xz",
                        "32df1f82bd6b07b18372c0f387133214905cbde7a586b3ad83f0ed0075f80273",
                        37970624, "onnxruntime=1.21.0+dfsg-1"),
    packaging=SourceFile("onnxruntime_1.23.2+dfsg-6.1.debian.tar.xz",
                         "140fe4766a37f1a57451bef8f21174ae43ff206d0dc80e467f52e6e9694c37f9",
                         24396, "onnxruntime=1.23.2+dfsg-6.1"),
    series="debian-series.txt", port="port-1.21.patch", tree="1.21.0",
    build_dep="onnxruntime=1.21.0+dfsg-1")

_NO_WERROR = ("-Wno-error=uninitialized -Wno-error=array-bounds -Wno-error=unused-variable "
              "-Wno-error=unused-but-set-variable")
#: The one set of CMake flags (those of Debian's ``debian/rules`` for 1.23.2, less Python,
#: DNNL and DLPack, plus what keeps FetchContent offline); ``{tree}`` is the inner tree.
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_CXX_FLAGS={_NO_WERROR}",
    f"-DCMAKE_C_FLAGS={_NO_WERROR}",
    "-Donnxruntime_BUILD_SHARED_LIB=ON", "-Donnxruntime_USE_XNNPACK=ON",
    "-Donnxruntime_BUILD_UNIT_TESTS=OFF", "-Donnxruntime_BUILD_BENCHMARKS=OFF",
    "-Donnxruntime_DISABLE_ABSEIL=ON", "-Donnxruntime_ENABLE_CPUINFO=ON",
    "-Donnxruntime_USE_FULL_PROTOBUF=ON", "-Donnxruntime_USE_PREINSTALLED_EIGEN=ON",
    "-Deigen_SOURCE_PATH=/usr/include/eigen3", "-Donnxruntime_ENABLE_PYTHON=OFF",
    "-Donnxruntime_USE_DNNL=OFF", "-Donnxruntime_ENABLE_DLPACK=OFF",
    "-DFETCHCONTENT_FULLY_DISCONNECTED=ON", "-Dsafeint_SOURCE_DIR=/usr/include/safeint",
    "-DFETCHCONTENT_SOURCE_DIR_UTF8_RANGE={tree}/stub/utf8_range")
#: measured CPU time of a first build on this route (docs/builds.md), for the estimate
FIRST_BUILD_CPU_S = 3700


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(MiB), b""):
            digest.update(block)
    return digest.hexdigest()


def _data(name: str) -> bytes:
    """A file of ``kit/data/ort`` by name, or any file by absolute path (a test's source)."""
    if os.path.isabs(name):
        return Path(name).read_bytes()
    return (files("kit") / "data" / "ort" / name).read_bytes()


@dataclasses.dataclass(frozen=True)
class OrtPatch:
    """A patch for onnxruntime's source: ``name`` (``fix``, ``half-fix`` or a file's stem),
    the unified diff ``text``, its ``sha256``, the first line of its header, the files it
    changes (paths relative to the tree) and where it came from (``kit`` or a path)."""

    name: str
    text: bytes
    sha256: str
    summary: str
    files: tuple[str, ...]
    origin: str

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "sha256": self.sha256, "summary": self.summary,
                "origin": self.origin}


def _patch_files(text: bytes, shown: str) -> tuple[str, ...]:
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    try:
        patch = PatchSet(io.StringIO(text.decode("utf-8")))
    except (UnicodeDecodeError, UnidiffParseError) as exc:
        raise UsageError(f"the patch {shown} is not a unified diff ({exc})",
                         "give a unified diff against onnxruntime 1.21.0 (diff -u, git diff)"
                         ) from None
    names = []
    for patched in patch:
        path = patched.target_file if patched.target_file != "/dev/null" else patched.source_file
        path = path[2:] if path[:2] in ("a/", "b/") else path
        if path.startswith("/") or ".." in Path(path).parts:
            raise UsageError(f"the patch {shown} names {path!r}, outside the source tree",
                             "give a diff with paths relative to the source (a/..., b/...)")
        names.append(path)
    if not names:
        raise UsageError(f"the patch {shown} changes no file",
                         "give a unified diff against onnxruntime 1.21.0 (diff -u, git diff)")
    return tuple(names)


def load_patch(spec: str | None) -> OrtPatch | None:
    """The patch named by ``--patch``: ``None`` or ``baseline`` for none, ``fix`` or
    ``half-fix`` for the kit's (``kit/data/ort/patches``), else a file (read bounded,
    4 MiB).

    Raises:
        UsageError: the file is missing, not regular, too large or not a unified diff that
            changes files inside the tree.
    """
    if spec is None or spec == "baseline":
        return None
    if spec in KIT_PATCHES:
        text, origin, name = _data(f"patches/{spec}.patch"), "kit", spec
    else:
        path = Path(spec).expanduser()
        text = read_bytes_bounded(path, _PATCH_LIMIT, what="patch")
        origin, name = str(path.resolve()), re.sub(r"[^A-Za-z0-9._-]", "-", path.stem)[:40]
        if not name or not name[0].isalnum():
            name = f"patch-{_sha256(text)[:8]}"
    summary = next((ln.strip() for ln in text.decode("utf-8", "replace").splitlines()
                    if ln.strip() and not ln.startswith(("---", "+++", "diff ", "@@"))), "")
    return OrtPatch(name, text, _sha256(text), summary[:200], _patch_files(text, spec), origin)


class Executor(Protocol):
    """Runs commands where the build lives: ``host(inner)`` is the host path of an inner path
    (``/opt/coldstart-ort/...``); ``run`` writes the command and its output to ``log`` and
    returns the exit status; ``stream`` yields the output lines as they come, then the
    status as an ``int``."""

    def host(self, inner: str) -> Path: ...

    def run(self, argv: Sequence[str], log: Path, cwd: str | None = None,
            stdin: bytes | None = None) -> int: ...

    def stream(self, argv: Sequence[str], log: Path, cwd: str | None = None,
               env: dict[str, str] | None = None) -> Iterable[str | int]: ...


class ChrootExecutor:
    """:class:`Executor` inside a Debian root, through ``chroot(8)`` (needs root)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def host(self, inner: str) -> Path:
        return self.root / inner.lstrip("/")

    def _argv(self, argv: Sequence[str], cwd: str | None) -> list[str]:
        if cwd is None:
            return ["chroot", str(self.root), *argv]
        return ["chroot", str(self.root), "/usr/bin/env", "-C", cwd, *argv]

    def run(self, argv: Sequence[str], log: Path, cwd: str | None = None,
            stdin: bytes | None = None) -> int:
        with open(log, "ab") as out:
            out.write(f"\n$ {' '.join(argv)}\n".encode())
            out.flush()
            proc = subprocess.run(self._argv(argv, cwd), stdout=out, stderr=subprocess.STDOUT,
                                  input=stdin, env={**os.environ,
                                                    "DEBIAN_FRONTEND": "noninteractive"})
        return proc.returncode

    def stream(self, argv: Sequence[str], log: Path, cwd: str | None = None,
               env: dict[str, str] | None = None) -> Iterable[str | int]:
        with open(log, "ab") as out:
            out.write(f"\n$ {' '.join(argv)}\n".encode())
            out.flush()
            proc = subprocess.Popen(self._argv(argv, cwd), stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
            assert proc.stdout is not None
            try:
                for raw in proc.stdout:
                    out.write(raw)
                    out.flush()
                    yield raw.decode("utf-8", "replace").rstrip("\n")
            finally:
                if proc.poll() is None:  # the caller stopped (Ctrl-C): stop the build too
                    proc.terminate()
                yield proc.wait()


_NINJA_STATUS = "[coldstart %f/%t] "
_STATUS_RE = re.compile(r"^\[coldstart (\d+)/(\d+)\] ")


def parse_ninja_status(line: str) -> tuple[int, int] | None:
    """``(finished, total)`` from a ninja status line printed with
    ``NINJA_STATUS='[coldstart %f/%t] '`` (ninja(1): ``%f`` finished edges, ``%t`` total
    edges of this run), else ``None``."""
    match = _STATUS_RE.match(line)
    return (int(match.group(1)), int(match.group(2))) if match else None


@dataclasses.dataclass(frozen=True)
class BuildProgress:
    """Where a compile step stands: ``done``/``total`` edges of this ninja run, seconds
    elapsed in it, and the seconds left at the rate so far (``None`` before the first)."""

    done: int
    total: int
    elapsed_s: float

    @property
    def left_s(self) -> float | None:
        if self.done <= 0 or self.total <= 0:
            return None
        return self.elapsed_s / self.done * (self.total - self.done)


def _minutes(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def format_progress(progress: BuildProgress) -> str:
    """``compile 123/547 files, 10m05s elapsed, about 34m40s left`` (one line)."""
    left = progress.left_s
    tail = f", about {_minutes(left)} left" if left is not None else ""
    return (f"compile {progress.done}/{progress.total} files, "
            f"{_minutes(progress.elapsed_s)} elapsed{tail}")


def variant_key(source: OrtSource, patch: OrtPatch | None, compiler: str) -> str:
    """sha256 of what a variant is made from: the two source files' sha256, the series and
    port files, the CMake flags, the compiler's version line and the patch's sha256."""
    parts = {"upstream": source.upstream.sha256, "packaging": source.packaging.sha256,
             "series": _sha256(_data(source.series)), "port": _sha256(_data(source.port)),
             "flags": list(CMAKE_FLAGS), "compiler": compiler,
             "patch": patch.sha256 if patch else None}
    return _sha256(json.dumps(parts, sort_keys=True).encode())


def _tree_key(source: OrtSource) -> str:
    return _sha256(json.dumps([source.upstream.sha256, source.packaging.sha256,
                               _sha256(_data(source.series)),
                               _sha256(_data(source.port))]).encode())


def _configure_key(source: OrtSource, compiler: str) -> str:
    return _sha256(json.dumps([_tree_key(source), list(CMAKE_FLAGS), compiler]).encode())


def read_series(text: str) -> list[tuple[str, set[int] | None]]:
    """``kit/data/ort/debian-series.txt``: ``[(patch file, hunks or None for all)]``
    (``#`` starts a comment; ``hunks=1,3`` is 1-based over the whole patch).

    Raises:
        UsageError: a line the format does not allow.
    """
    entries: list[tuple[str, set[int] | None]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, *opts = line.split()
        hunks: set[int] | None = None
        for opt in opts:
            key, _, value = opt.partition("=")
            if key != "hunks" or not re.fullmatch(r"\d+(,\d+)*", value):
                raise UsageError(f"series line {number}: {raw!r} is not 'NAME [hunks=N,...]'",
                                 "fix kit/data/ort/debian-series.txt")
            hunks = {int(v) for v in value.split(",")}
        entries.append((name, hunks))
    return entries


def select_hunks(text: str, hunks: set[int]) -> str:
    """The unified diff ``text`` with only the ``hunks`` (1-based over the whole patch);
    files left with no hunk are dropped."""
    from unidiff import PatchSet

    patch = PatchSet(io.StringIO(text))
    number = 0
    for patched in list(patch):
        for hunk in list(patched):
            number += 1
            if number not in hunks:
                patched.remove(hunk)
        if len(patched) == 0:
            patch.remove(patched)
    return str(patch)


@dataclasses.dataclass
class OrtBuild:
    """One ``build-ort`` run: the source, an executor for the root, where logs go
    (``log_dir``, a host folder), the number of parallel jobs and the callbacks for
    one-line messages and compile progress."""

    executor: Executor
    log_dir: Path
    source: OrtSource = DEBIAN_ORT
    jobs: int = 1
    mirror: str = "http://deb.debian.org/debian"
    log: Callable[[str], None] = lambda _m: None
    progress: Callable[[BuildProgress], None] = lambda _p: None
    needs_root: bool = True

    # -- paths -------------------------------------------------------------------------
    @property
    def base(self) -> str:
        return INNER_BASE

    @property
    def tree(self) -> str:
        return f"{INNER_BASE}/{self.source.tree}"

    def _h(self, inner: str) -> Path:
        return self.executor.host(inner)

    def _logfile(self, step: str) -> Path:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return self.log_dir / f"build-ort-{step}.log"

    def _fail(self, step: str, status: int, hint: str) -> InfraError:
        return InfraError(f"build-ort: the {step} step failed (exit {status}; log: "
                          f"{self._logfile(step)})", hint)

    # -- steps -------------------------------------------------------------------------
    def compiler(self) -> str:
        """The root's ``c++ --version`` first line (part of every cache key).

        Raises:
            InfraError: there is no compiler in the root.
        """
        log = self._logfile("compiler")
        log.write_bytes(b"")
        status = self.executor.run(["c++", "--version"], log)
        lines = [ln for ln in log.read_text(errors="replace").splitlines()
                 if ln and not ln.startswith("$ ")]
        if status != 0 or not lines:
            raise self._fail("compiler", status, "install g++ in the Debian root "
                             "(`coldstart runtime prepare --force`)")
        return lines[0].strip()

    def download(self) -> None:
        """Step 1: the upstream tarball and the packaging, kept while their sha256 match.

        Raises:
            InfraError: a file could not be downloaded, or its sha256 or size is wrong.
        """
        downloads = f"{INNER_BASE}/downloads"
        self._h(downloads).mkdir(parents=True, exist_ok=True)
        wanted = (self.source.upstream, self.source.packaging)
        missing = [f for f in wanted if not self._checked(self._h(f"{downloads}/{f.name}"), f)]
        if not missing:
            return
        log = self._logfile("sources")
        lines = "".join(f"deb-src {self.mirror} {suite} main\n" for suite in self.source.suites)
        lists = self.executor.host("/etc/apt/sources.list.d/coldstart-src.list")
        lists.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(lists, lines.encode())
        self.log(f"downloading Debian's {self.source.package} source (about 40 MB)")
        # sid's Release file can be past its Valid-Until on a mirror snapshot
        apt = ["apt-get", "-o", "Acquire::Check-Valid-Until=false"]
        status = self.executor.run([*apt, "update"], log)
        if status != 0:
            raise self._fail("sources", status, f"check that {self.mirror} is reachable")
        for item in missing:
            # the .dsc of these versions is gone from the pool (404): apt-get then exits 100
            # after fetching what it could, so the checksum below is what decides
            self.executor.run([*apt, "source", "--download-only", item.request], log,
                              cwd=downloads)
            path = self._h(f"{downloads}/{item.name}")
            if not self._checked(path, item):
                got = "missing" if not path.exists() else f"sha256 {_sha256_file(path)}"
                raise InfraError(f"build-ort: {item.name} from {item.request} is {got}, not "
                                 f"sha256 {item.sha256} (log: {log})",
                                 "check the mirror (--mirror), then run build-ort again")

    @staticmethod
    def _checked(path: Path, item: SourceFile) -> bool:
        try:
            return (path.is_file() and not path.is_symlink()
                    and path.stat().st_size == item.size and _sha256_file(path) == item.sha256)
        except OSError:
            return False

    def build_deps(self) -> None:
        """Step 2: ``apt-get build-dep`` of the source inside the root (once).

        Raises:
            InfraError: apt-get failed.
        """
        stamp = self._h(f"{INNER_BASE}/.build-deps")
        if stamp.exists() and stamp.read_text().strip() == self.source.build_dep:
            return
        self.log(f"installing the build dependencies of {self.source.build_dep} in the root "
                 f"(apt-get build-dep: about 150 packages, 90 MB)")
        status = self.executor.run(
            ["apt-get", "-o", "Acquire::Check-Valid-Until=false", "build-dep", "-y",
             "--no-install-recommends", self.source.build_dep], self._logfile("build-deps"))
        if status != 0:
            raise self._fail("build-deps", status, f"check that {self.mirror} is reachable")
        write_atomic(stamp, (self.source.build_dep + "\n").encode())

    def source_tree(self) -> None:
        """Step 3: extract, apply Debian's series and the kit's port; kept while its key
        (the sources' sha256, the series, the port) is the same.

        Raises:
            InfraError: extraction failed, or a patch of the series no longer applies.
        """
        stamp = self._h(f"{self.tree}/source.json")
        key = _tree_key(self.source)
        if _stamp_key(stamp) == key:
            return
        self.log("extracting and patching the source")
        log = self._logfile("source-tree")
        for part in ("src", "debian", "build", "applied.json", "pristine"):
            _remove(self._h(f"{self.tree}/{part}"))
        self._h(f"{self.tree}/debian").mkdir(parents=True, exist_ok=True)
        downloads = f"{INNER_BASE}/downloads"
        steps = [
            (["tar", "-xf", f"{downloads}/{self.source.upstream.name}", "-C", self.tree], None),
            (["tar", "-xf", f"{downloads}/{self.source.packaging.name}", "-C",
              f"{self.tree}/debian", "--strip-components=1"], None)]
        for argv, cwd in steps:
            status = self.executor.run(argv, log, cwd=cwd)
            if status != 0:
                raise self._fail("source-tree", status, "run build-ort again (the sources "
                                 "are checked by sha256 first)")
        top = [p for p in self._h(self.tree).iterdir()
               if p.is_dir() and p.name not in ("debian", "stub", "build")]
        if len(top) != 1:
            raise InfraError(f"build-ort: the upstream tarball holds {len(top)} top folders, "
                             f"not one (log: {log})", "check the source file")
        top[0].rename(self._h(f"{self.tree}/src"))
        stub = self._h(f"{self.tree}/stub/utf8_range")
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "CMakeLists.txt").write_text("# an empty stand-in: protobuf comes from Debian\n")
        patches = self._h(f"{self.tree}/debian/patches")
        for name, hunks in read_series(_data(self.source.series).decode()):
            text = (patches / name).read_text(encoding="utf-8")
            if hunks:
                text = select_hunks(text, hunks)
            self._apply(text.encode(), f"Debian's {name}", log)
        self._apply(_data(self.source.port), "the kit's port", log)
        write_atomic(stamp, json.dumps({"key": key}).encode())

    def _apply(self, text: bytes, what: str, log: Path, dry_run: bool = False) -> int:
        argv = ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch",
                "-r", "-", "-d", f"{self.tree}/src"] + (["--dry-run"] if dry_run else [])
        status = self.executor.run(argv, log, stdin=text)
        if status != 0 and not dry_run:
            raise InfraError(f"build-ort: {what} does not apply to the source (log: {log})",
                             "the source or the series changed: report it")
        return status

    def configure(self, compiler: str) -> None:
        """Step 4: CMake with :data:`CMAKE_FLAGS` (kept while the flags and compiler are).

        Raises:
            InfraError: CMake failed.
        """
        stamp = self._h(f"{self.tree}/build/.coldstart-configure")
        key = _configure_key(self.source, compiler)
        if _stamp_key(stamp) == key:
            return
        _remove(self._h(f"{self.tree}/build"))
        self.log("configuring (cmake, about a minute)")
        flags = [flag.replace("{tree}", self.tree) for flag in CMAKE_FLAGS]
        status = self.executor.run(["cmake", "-G", "Ninja", "-S", f"{self.tree}/src/cmake",
                                    "-B", f"{self.tree}/build", *flags],
                                   self._logfile("configure"))
        if status != 0:
            raise self._fail("configure", status, "see the log; run build-ort again after a fix")
        write_atomic(stamp, json.dumps({"key": key}).encode())

    def _revert(self) -> None:
        """Take the last variant's patch out of the tree (its files back from
        ``pristine/``; a file it created is removed)."""
        applied = self._h(f"{self.tree}/applied.json")
        if not applied.exists():
            return
        names = json.loads(applied.read_text()).get("files", [])
        for name in names:
            saved = self._h(f"{self.tree}/pristine/{name}")
            target = self._h(f"{self.tree}/src/{name}")
            if saved.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(saved, target)  # a new mtime: ninja recompiles it
            elif target.exists():
                target.unlink()
        applied.unlink()

    def apply_patch(self, patch: OrtPatch) -> None:
        """Put ``patch`` into the tree, keeping pristine copies of what it changes.

        Raises:
            UsageError: the patch does not apply to the source (exit 2).
        """
        log = self._logfile("patch")
        if self._apply(patch.text, patch.name, log, dry_run=True) != 0:
            raise UsageError(f"the patch {patch.name} does not apply to {self.source.package} "
                             f"{self.source.tree} (log: {log})",
                             "give a unified diff against onnxruntime 1.21.0's source")
        for name in patch.files:
            current = self._h(f"{self.tree}/src/{name}")
            saved = self._h(f"{self.tree}/pristine/{name}")
            if current.exists() and not saved.exists():
                saved.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(current, saved)
        write_atomic(self._h(f"{self.tree}/applied.json"),
                     json.dumps({"patch": patch.sha256, "files": list(patch.files)}).encode())
        self._apply(patch.text, f"the patch {patch.name}", log)

    def compile(self) -> None:
        """Step 5: ``ninja <target>`` with progress (resumes where a killed one stopped).

        Raises:
            InfraError: the compile failed.
        """
        started = time.monotonic()
        status = 1
        argv = ["ninja", "-C", f"{self.tree}/build", f"-j{self.jobs}", self.source.target]
        for item in self.executor.stream(argv, self._logfile("compile"),
                                         env={"NINJA_STATUS": _NINJA_STATUS}):
            if isinstance(item, int):
                status = item
                continue
            counts = parse_ninja_status(item)
            if counts:
                self.progress(BuildProgress(counts[0], counts[1], time.monotonic() - started))
        if status != 0:
            raise self._fail("compile", status, "see the first error in the log; run build-ort "
                             "again to resume")

    def install(self, variant: str, provenance: dict) -> Path:
        """Step 6: copy the library (and its links) and the public headers into the variant
        folder; returns its host path."""
        out = self._h(f"{INNER_BASE}/variants/{variant}")
        _remove(out)
        (out / "lib").mkdir(parents=True)
        (out / "include").mkdir(parents=True)
        build = self._h(f"{self.tree}/build")
        for path in sorted(build.glob(self.source.library_glob)):
            target = out / "lib" / path.name
            if path.is_symlink():
                os.symlink(os.readlink(path), target)
            else:
                shutil.copy2(path, target)
        for folder in self.source.headers:
            for header in sorted(self._h(f"{self.tree}/src/{folder}").glob("*.h")):
                shutil.copy2(header, out / "include" / header.name)
        write_atomic(out / "provenance.json", json.dumps(provenance, indent=2).encode())
        write_atomic(out / ".complete", b"")
        return out


def _stamp_key(path: Path) -> str | None:
    try:
        return str(json.loads(path.read_text())["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def provenance(source: OrtSource, patch: OrtPatch | None, compiler: str, key: str) -> dict:
    """What ``campaign.json`` and ``runtime info`` say of a kit build: the source package
    (name, version, file, sha256), the packaging, the patch (or ``None`` for the
    baseline), the flags, the compiler and the variant key."""
    return {"source": {"package": source.package, "version": source.version,
                       "file": source.upstream.name, "sha256": source.upstream.sha256,
                       "archive": "Debian"},
            "packaging": {"version": source.packaging.request.split("=", 1)[1],
                          "file": source.packaging.name, "sha256": source.packaging.sha256,
                          "series_sha256": _sha256(_data(source.series)),
                          "port_sha256": _sha256(_data(source.port))},
            "patch": patch.describe() if patch else None,
            "flags": list(CMAKE_FLAGS), "compiler": compiler, "key": key}


def build_variant(build: OrtBuild, patch: OrtPatch | None) -> tuple[Path, dict, bool]:
    """Make (or find cached) the variant of ``build.source`` with ``patch``: returns its
    host folder (``lib/``, ``include/``, ``provenance.json``), its provenance and whether it
    came from the cache. One build at a time per root (a lock beside the trees; a second
    one waits).

    Raises:
        UsageError: the patch does not apply (exit 2); no root privileges for the chroot.
        InfraError: a step failed: the message names it and its log (exit 3).
    """
    if build.needs_root and os.geteuid() != 0:
        raise UsageError("building onnxruntime inside the Debian root needs root (chroot, "
                         "apt-get)", "run `sudo coldstart runtime build-ort ...`")
    base = build.executor.host(INNER_BASE)
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            build.log("another build-ort is running in this root: waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
        compiler = build.compiler()
        key = variant_key(build.source, patch, compiler)
        variant = f"{patch.name if patch else 'baseline'}-{key[:16]}"
        out = build.executor.host(f"{INNER_BASE}/variants/{variant}")
        if (out / ".complete").exists():
            return out, json.loads((out / "provenance.json").read_text()), True
        build.download()
        build.build_deps()
        build.source_tree()
        build.configure(compiler)
        build._revert()
        if patch is not None:
            build.apply_patch(patch)
        try:
            build.compile()
            info = provenance(build.source, patch, compiler, key)
            return build.install(variant, info), info, False
        finally:
            build._revert()
    finally:
        os.close(fd)


def first_build_estimate(jobs: int) -> str:
    """What a first build costs, in words (measured: :data:`FIRST_BUILD_CPU_S`)."""
    minutes = FIRST_BUILD_CPU_S / max(1, jobs) / 60
    return (f"a first build compiles about 550 files: about {FIRST_BUILD_CPU_S:,} CPU-seconds, "
            f"{minutes:.0f} minutes with {jobs} job(s) on idle cores; later variants reuse "
            f"the tree (about a minute each)")


def build_ort_runtime(name: str | None, patch_spec: str | None, *, jobs: int | None = None,
                      force: bool = False, mirror: str = "http://deb.debian.org/debian",
                      log: Callable[[str], None] = lambda _m: None,
                      progress: Callable[[BuildProgress], None] = lambda _p: None):
    """Build (or take from the cache) onnxruntime with ``patch_spec`` (:func:`load_patch`)
    and register it as the host runtime ``name`` (default: the patch's name, ``baseline``
    without one), with its workload built.

    Raises:
        UsageError: a bad patch, a bad name, or a name in use by another runtime (without
            ``force``): exit 2.
        InfraError: a build step failed (exit 3; the message names the step and its log).
    """
    from .runtime import (Runtime, build_workload, debian_root, load_runtime, needed_libs,
                          runtime_dir)

    patch = load_patch(patch_spec)
    name = name or (patch.name if patch else "baseline")
    folder = runtime_dir(name)  # validates the name
    if (folder / "runtime.json").exists() and not force:
        try:
            existing = load_runtime(name)
        except UsageError:
            existing = None
        same = (existing is not None and existing.build is not None
                and (existing.build.get("patch") or {}).get("sha256")
                == (patch.sha256 if patch else None))
        if not same:
            what = (f"a build with patch {(existing.build.get('patch') or {}).get('name')}"
                    if existing is not None and existing.build is not None
                    else f"a runtime of kind {existing.kind}" if existing is not None
                    else "a runtime")
            raise UsageError(f"the runtime name {name!r} is in use ({what})",
                             "choose another --name, or add --force to replace it")
    jobs = jobs or len(os.sched_getaffinity(0))
    root, _include, libs = debian_root(False, mirror, log)
    builder = OrtBuild(ChrootExecutor(root), log_dir=folder, jobs=jobs, mirror=mirror,
                       log=log, progress=progress)
    if not (root / INNER_BASE.lstrip("/") / DEBIAN_ORT.tree / "build"
            / ".coldstart-configure").exists():
        log(first_build_estimate(jobs))
    started = time.monotonic()
    out, info, cached = build_variant(builder, patch)
    log(f"onnxruntime {DEBIAN_ORT.version} ({patch.name if patch else 'baseline'}) "
        + ("from the cache" if cached else f"ready in {_minutes(time.monotonic() - started)}")
        + f": {out}")
    candidates = sorted((out / "lib").glob(DEBIAN_ORT.library_glob), key=lambda p: len(p.name))
    if not candidates:
        raise InfraError(f"build-ort: no {DEBIAN_ORT.library_glob} in {out / 'lib'}",
                         "run build-ort again with --force")
    ort_library = candidates[0].resolve()
    xnnpack = next((str(p.resolve()) for p in needed_libs(ort_library, libs)
                    if "xnnpack" in p.name.lower()), None)
    runtime = Runtime(name=name, kind="debian-root", root=str(root),
                      include_dir=str(out / "include"), lib_dir=str(libs),
                      ort_library=str(ort_library), xnnpack_library=xnnpack,
                      ort_lib_dir=str(out / "lib"), build=info)
    runtime.save()
    return build_workload(runtime, log=log)
