"""The steps of one build (:class:`OrtBuild`): download, build-deps, source tree, configure,
patch, compile, install; and the instrumented build tree (:meth:`OrtBuild.instrumented_tree`).

An instrumented variant (docs/builds.md, "ThreadSanitizer") is compiled in a copy of the
plain build tree, ``build-<name>`` beside ``build``, made once by copying the finished plain
tree (objects and ninja's logs, times kept) and configured again with the instrumentation's
CMake include, so ninja recompiles only the instrumented translation units and relinks.
CMake and ninja keep absolute paths, so for its configure and compile the copy is moved into
``build``'s place and the plain tree waits as ``build.plain``; both are renames, and an
interrupted swap is undone by the next build (:meth:`OrtBuild.restore_trees`) before
anything else, under the root's lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Callable, Iterator

from ...._bounded import write_atomic
from ....errors import InfraError, UsageError
from .process import NINJA_STATUS, BuildProgress, Executor, parse_ninja_status
from .source import (CMAKE_FLAGS, DEBIAN_ORT, Instrumentation, OrtPatch, OrtSource,
                     data_file, read_series, select_hunks, sha256_bytes, sha256_file)

__all__ = ["OrtBuild", "INNER_BASE", "tree_key", "configure_key"]

#: the inner (in-root) folder that holds every build
INNER_BASE = "/opt/coldstart-ort"


def tree_key(source: OrtSource) -> str:
    """sha256 of what the source tree is made of (the sources, the series, the port)."""
    return sha256_bytes(json.dumps([source.upstream.sha256, source.packaging.sha256,
                                    sha256_bytes(data_file(source.series)),
                                    sha256_bytes(data_file(source.port))]).encode())


def configure_key(source: OrtSource, compiler: str,
                  instrument: Instrumentation | None = None) -> str:
    """sha256 of a configured tree: the source tree, the flags, the compiler (and the
    instrumentation, for an instrumented tree)."""
    parts: list = [tree_key(source), list(CMAKE_FLAGS), compiler]
    if instrument is not None:
        parts.append(instrument.describe())
    return sha256_bytes(json.dumps(parts).encode())


def _stamp_key(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return str(json.loads(fh.read(4096))["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


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

    def configured(self) -> bool:
        """Whether the plain tree was configured once (else a first build lies ahead)."""
        return self._h(f"{self.tree}/build/.coldstart-configure").exists() or self._h(
            f"{self.tree}/build.plain/.coldstart-configure").exists()

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
        from .source import check_mirror

        check_mirror(self.mirror)  # one field of a deb-src line, never two lines
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
                got = "missing" if not path.exists() else f"sha256 {sha256_file(path)}"
                raise InfraError(f"build-ort: {item.name} from {item.request} is {got}, not "
                                 f"sha256 {item.sha256} (log: {log})",
                                 "check the mirror (--mirror), then run build-ort again")

    @staticmethod
    def _checked(path: Path, item) -> bool:
        try:
            return (path.is_file() and not path.is_symlink()
                    and path.stat().st_size == item.size and sha256_file(path) == item.sha256)
        except OSError:
            return False

    def build_deps(self) -> None:
        """Step 2: ``apt-get build-dep`` of the source inside the root (once).

        Raises:
            InfraError: apt-get failed.
        """
        stamp = self._h(f"{INNER_BASE}/.build-deps")
        if stamp.is_file() and stamp.stat().st_size < 4096 and \
                stamp.read_text(errors="replace").strip() == self.source.build_dep:
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
        key = tree_key(self.source)
        if _stamp_key(stamp) == key:
            return
        self.log("extracting and patching the source")
        log = self._logfile("source-tree")
        for part in ("src", "debian", "build", "applied.json", "pristine"):
            _remove(self._h(f"{self.tree}/{part}"))
        for other in self._h(self.tree).glob("build-*") if self._h(self.tree).is_dir() else ():
            _remove(other)  # instrumented trees of the old source
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
               if p.is_dir() and p.name not in ("debian", "stub")
               and not p.name.startswith("build")]
        if len(top) != 1:
            raise InfraError(f"build-ort: the upstream tarball holds {len(top)} top folders, "
                             f"not one (log: {log})", "check the source file")
        top[0].rename(self._h(f"{self.tree}/src"))
        stub = self._h(f"{self.tree}/stub/utf8_range")
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "CMakeLists.txt").write_text("# an empty stand-in: protobuf comes from Debian\n")
        patches = self._h(f"{self.tree}/debian/patches")
        for name, hunks in read_series(data_file(self.source.series).decode()):
            text = (patches / name).read_text(encoding="utf-8")
            if hunks:
                text = select_hunks(text, hunks)
            self._apply(text.encode(), f"Debian's {name}", log)
        self._apply(data_file(self.source.port), "the kit's port", log)
        write_atomic(stamp, json.dumps({"key": key}).encode())

    def _apply(self, text: bytes, what: str, log: Path, dry_run: bool = False) -> int:
        argv = ["patch", "-p1", "--forward", "--batch", "--no-backup-if-mismatch",
                "-r", "-", "-d", f"{self.tree}/src"] + (["--dry-run"] if dry_run else [])
        status = self.executor.run(argv, log, stdin=text)
        if status != 0 and not dry_run:
            raise InfraError(f"build-ort: {what} does not apply to the source (log: {log})",
                             "the source or the series changed: report it")
        return status

    def configure(self, compiler: str, instrument: Instrumentation | None = None) -> None:
        """Step 4: CMake with :data:`CMAKE_FLAGS` (kept while the flags and compiler are).
        With ``instrument`` (the instrumented copy in ``build``'s place): the same flags and
        the instrumentation's include, over the copy's existing configuration.

        Raises:
            InfraError: CMake failed.
        """
        stamp = self._h(f"{self.tree}/build/.coldstart-configure")
        key = configure_key(self.source, compiler, instrument)
        if _stamp_key(stamp) == key:
            return
        flags = [flag.replace("{tree}", self.tree) for flag in CMAKE_FLAGS]
        step = "configure"
        if instrument is None:
            _remove(self._h(f"{self.tree}/build"))
            self.log("configuring (cmake, about a minute)")
        else:  # configured again in place: ninja then sees two changed commands
            step = f"configure-{instrument.name}"
            include = f"{self.tree}/instrument-{instrument.name}.cmake"
            write_atomic(self._h(include),
                         instrument.cmake_include(f"{self.tree}/src",
                                                  self.source.target).encode())
            flags.append(f"-DCMAKE_PROJECT_{self.source.project}_INCLUDE={include}")
            self.log(f"configuring the {instrument.name} copy of the build tree (cmake, about "
                     f"a minute)")
        status = self.executor.run(["cmake", "-G", "Ninja", "-S", f"{self.tree}/src/cmake",
                                    "-B", f"{self.tree}/build", *flags], self._logfile(step))
        if status != 0:
            raise self._fail(step, status, "see the log; run build-ort again after a fix")
        write_atomic(stamp, json.dumps({"key": key}).encode())

    def revert(self) -> None:
        """Take the last variant's patch out of the tree (its files back from
        ``pristine/``; a file it created is removed)."""
        applied = self._h(f"{self.tree}/applied.json")
        if not applied.exists():
            return
        try:
            names = json.loads(applied.read_bytes()[:1 << 20]).get("files", [])
        except (OSError, ValueError, AttributeError):
            names = []
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

    def compile(self, step: str = "compile") -> None:
        """Step 5: ``ninja <target>`` with progress (resumes where a killed one stopped).

        Raises:
            InfraError: the compile failed.
        """
        started = time.monotonic()
        status = 1
        argv = ["ninja", "-C", f"{self.tree}/build", f"-j{self.jobs}", self.source.target]
        for item in self.executor.stream(argv, self._logfile(step),
                                         env={"NINJA_STATUS": NINJA_STATUS}):
            if isinstance(item, int):
                status = item
                continue
            counts = parse_ninja_status(item)
            if counts:
                self.progress(BuildProgress(counts[0], counts[1], time.monotonic() - started))
        if status != 0:
            raise self._fail(step, status, "see the first error in the log; run build-ort "
                             "again to resume")

    # -- the instrumented tree ---------------------------------------------------------
    def restore_trees(self) -> None:
        """Undo a swap that a killed build left (see the module doc); idempotent."""
        plain = self._h(f"{self.tree}/build.plain")
        if not plain.is_dir():
            return
        build = self._h(f"{self.tree}/build")
        swapped = self._h(f"{self.tree}/build-swapped")
        if build.exists():
            name = _read_swap(swapped)
            target = self._h(f"{self.tree}/build-{name}") if name else None
            if target is not None and not target.exists():
                build.rename(target)
            else:
                _remove(build)
        plain.rename(build)
        _remove(swapped)

    @contextlib.contextmanager
    def instrumented_tree(self, instrument: Instrumentation) -> Iterator[None]:
        """The instrumented copy in ``build``'s place for the body (copied from the plain
        tree on first use: what is out of date in it is recompiled there), the plain tree
        back afterwards."""
        tree = self._h(self.tree)
        copy = tree / f"build-{instrument.name}"
        if not (copy / ".coldstart-configure").exists():
            _remove(copy)
            self.log(f"copying the build tree for the {instrument.name} variants (once)")
            partial = tree / f"build-{instrument.name}.partial"
            _remove(partial)
            shutil.copytree(tree / "build", partial, symlinks=True)
            partial.rename(copy)
        write_atomic(tree / "build-swapped", instrument.name.encode())
        (tree / "build").rename(tree / "build.plain")
        copy.rename(tree / "build")
        try:
            yield
        finally:
            (tree / "build").rename(copy)
            (tree / "build.plain").rename(tree / "build")
            _remove(tree / "build-swapped")

    # -- install -----------------------------------------------------------------------
    def install(self, variant: str, provenance: dict) -> Path:
        """Step 6: copy the library (and its links) and the public headers into the variant
        folder; returns its host path. ``.complete`` lists the files copied with their
        sha256, so a damaged cached variant is told from a whole one."""
        out = self._h(f"{INNER_BASE}/variants/{variant}")
        _remove(out)
        (out / "lib").mkdir(parents=True)
        (out / "include").mkdir(parents=True)
        build = self._h(f"{self.tree}/build")
        made: dict[str, str] = {}
        for path in sorted(build.glob(self.source.library_glob)):
            target = out / "lib" / path.name
            if path.is_symlink():
                os.symlink(os.readlink(path), target)
            else:
                shutil.copy2(path, target)
                made[f"lib/{path.name}"] = sha256_file(target)
        for folder in self.source.headers:
            for header in sorted(self._h(f"{self.tree}/src/{folder}").glob("*.h")):
                shutil.copy2(header, out / "include" / header.name)
        write_atomic(out / "provenance.json", json.dumps(provenance, indent=2).encode())
        write_atomic(out / ".complete", json.dumps({"files": made}, indent=2).encode())
        return out


def _read_swap(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            name = fh.read(64).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return name if name.isalnum() else None
