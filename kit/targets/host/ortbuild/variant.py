"""A variant: one patch (or none), optionally instrumented, built once and cached in a folder
of its own (:func:`build_variant`), and registered as a host runtime
(:func:`build_ort_runtime`)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

from ...._bounded import read_bytes_bounded
from ....errors import DataError, InfraError, UsageError
from .process import BuildProgress, ChrootExecutor, hold_build_lock, minutes
from .source import (CMAKE_FLAGS, DEBIAN_ORT, FIRST_BUILD_CPU_S, INSTRUMENTATIONS,
                     Instrumentation, OrtPatch, OrtSource, check_mirror, data_file,
                     load_patch, sha256_bytes, sha256_file)
from .steps import INNER_BASE, OrtBuild

__all__ = ["variant_key", "provenance", "read_provenance", "build_variant",
           "first_build_estimate", "build_ort_runtime", "PROVENANCE_LIMIT"]

#: the most of a cached variant's provenance.json that is read (a real one is about 2 KB)
PROVENANCE_LIMIT = 256 * 1024
_COMPLETE_LIMIT = 64 * 1024


def variant_key(source: OrtSource, patch: OrtPatch | None, compiler: str,
                instrument: Instrumentation | None = None) -> str:
    """sha256 of what a variant is made from: the two source files' sha256, the series and
    port files, the CMake flags, the compiler's version line and the patch's sha256 (and
    the instrumentation, when there is one: a plain variant's key never changes)."""
    parts: dict[str, object] = {"upstream": source.upstream.sha256, "packaging": source.packaging.sha256,
             "series": sha256_bytes(data_file(source.series)),
             "port": sha256_bytes(data_file(source.port)),
             "flags": list(CMAKE_FLAGS), "compiler": compiler,
             "patch": patch.sha256 if patch else None}
    if instrument is not None:
        parts["instrumented"] = instrument.describe()
    return sha256_bytes(json.dumps(parts, sort_keys=True).encode())


def provenance(source: OrtSource, patch: OrtPatch | None, compiler: str, key: str,
               instrument: Instrumentation | None = None) -> dict:
    """What ``campaign.json`` and ``runtime info`` say of a kit build: the source package
    (name, version, file, sha256), the packaging, the patch (or ``None`` for the
    baseline), the flags, the compiler, the variant key, and for an instrumented variant
    ``instrumented`` (:meth:`Instrumentation.describe`)."""
    info: dict[str, object] = {"source": {"package": source.package, "version": source.version,
                       "file": source.upstream.name, "sha256": source.upstream.sha256,
                       "archive": "Debian"},
            "packaging": {"version": source.packaging.request.split("=", 1)[1],
                          "file": source.packaging.name, "sha256": source.packaging.sha256,
                          "series_sha256": sha256_bytes(data_file(source.series)),
                          "port_sha256": sha256_bytes(data_file(source.port))},
            "patch": patch.describe() if patch else None,
            "flags": list(CMAKE_FLAGS), "compiler": compiler, "key": key}
    if instrument is not None:
        info["instrumented"] = instrument.describe()
    return info


def read_provenance(folder: Path) -> dict:
    """A cached variant's ``provenance.json``, read bounded (:data:`PROVENANCE_LIMIT`;
    regular files only, so a FIFO or a device never blocks).

    Raises:
        UsageError: missing, not a regular file, too large, or not a JSON object.
    """
    path = folder / "provenance.json"
    hint = "run build-ort again with --force: it rebuilds the variant"
    try:
        data = json.loads(read_bytes_bounded(path, PROVENANCE_LIMIT,
                                             what="the cached variant's provenance.json"))
    except (UsageError, DataError) as exc:
        raise UsageError(exc.message, hint) from None
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc})", hint) from None
    if not isinstance(data, dict) or not isinstance(data.get("key"), str):
        raise UsageError(f"{path} is not a build's provenance (no key)", hint)
    return data


def _damage(out: Path, source: OrtSource) -> str | None:
    """Why the cached variant in ``out`` cannot be used, or ``None`` when it is whole:
    every file ``.complete`` lists has its sha256 (a ``.complete`` left empty by an older
    kit lists none), and the library is a regular file with content."""
    try:
        listed = read_bytes_bounded(out / ".complete", _COMPLETE_LIMIT, what=".complete")
    except (UsageError, DataError) as exc:
        return exc.message
    if listed.strip():
        try:
            made = json.loads(listed)["files"]
            items = [(str(k), str(v)) for k, v in made.items()]
        except (ValueError, KeyError, TypeError, AttributeError):
            return f"{out / '.complete'} is not the kit's"
        for name, digest in items:
            path = out / name
            if not path.is_file() or path.is_symlink():
                return f"{name} is missing"
            if sha256_file(path) != digest:
                return f"{name} is not the file that was built (sha256 differs)"
    libs = sorted((out / "lib").glob(source.library_glob), key=lambda p: len(p.name))
    if not libs:
        return f"no {source.library_glob} in {out / 'lib'}"
    real = libs[0].resolve()
    if not real.is_file() or real.stat().st_size == 0:
        return f"{libs[0].name} is not a file with content"
    return None


def build_variant(build: OrtBuild, patch: OrtPatch | None, *,
                  instrument: Instrumentation | None = None,
                  rebuild: bool = False) -> tuple[Path, dict, bool]:
    """Make (or find cached) the variant of ``build.source`` with ``patch`` (instrumented
    with ``instrument``, else plain): returns its host folder (``lib/``, ``include/``,
    ``provenance.json``), its provenance and whether it came from the cache. One build at a
    time per root (:func:`kit.targets.host.ortbuild.process.hold_build_lock`). ``rebuild``
    makes a cached variant again (a damaged one is refused without it).

    Raises:
        UsageError: the patch does not apply (exit 2); no root privileges for the chroot;
            a cached variant whose provenance.json cannot be read.
        InfraError: a build step failed: the message names it and its log (exit 3); a
            cached variant is damaged (without ``rebuild``).
    """
    if build.needs_root and os.geteuid() != 0:
        raise UsageError("building onnxruntime inside the Debian root needs root (chroot, "
                         "apt-get)", "run `sudo coldstart runtime build-ort ...`")
    fd = hold_build_lock(build.executor.host(INNER_BASE), build.log)
    held = build.executor.hold_fds
    build.executor.hold_fds = (*held, fd)
    try:
        build.restore_trees()
        compiler = build.compiler()
        key = variant_key(build.source, patch, compiler, instrument)
        name = patch.name if patch else "baseline"
        variant = f"{name}-{instrument.name}-{key[:16]}" if instrument else f"{name}-{key[:16]}"
        out = build.executor.host(f"{INNER_BASE}/variants/{variant}")
        if (out / ".complete").exists() and not rebuild:
            info = read_provenance(out)
            damage = _damage(out, build.source)
            if damage is not None:
                raise InfraError(f"build-ort: the cached variant {variant} is damaged "
                                 f"({damage})", "run build-ort again with --force: it "
                                 "rebuilds the variant")
            return out, info, True
        if (out / ".complete").exists():
            build.log(f"rebuilding the cached variant {variant} (--force)")
            (out / ".complete").unlink()
        if not build.configured():
            build.log(first_build_estimate(build.jobs))
        build.download()
        build.build_deps()
        build.source_tree()
        build.configure(compiler)
        build.revert()
        if instrument is not None:
            # the copy starts from the plain tree as it is (built once by the plain variant);
            # whatever is out of date in it, ninja recompiles in the copy
            with build.instrumented_tree(instrument):
                build.configure(compiler, instrument)
                return _compile_install(build, patch, compiler, key, variant, instrument)
        return _compile_install(build, patch, compiler, key, variant, None)
    finally:
        build.executor.hold_fds = held
        os.close(fd)


def _compile_install(build: OrtBuild, patch: OrtPatch | None, compiler: str, key: str,
                     variant: str, instrument: Instrumentation | None
                     ) -> tuple[Path, dict, bool]:
    if patch is not None:
        build.apply_patch(patch)
    try:
        build.compile("compile" if instrument is None else f"compile-{instrument.name}")
        info = provenance(build.source, patch, compiler, key, instrument)
        return build.install(variant, info), info, False
    finally:
        build.revert()


def first_build_estimate(jobs: int) -> str:
    """What a first build costs, in words (measured: :data:`FIRST_BUILD_CPU_S`)."""
    minutes_ = FIRST_BUILD_CPU_S / max(1, jobs) / 60
    return (f"a first build compiles about 550 files: about {FIRST_BUILD_CPU_S:,} CPU-seconds, "
            f"{minutes_:.0f} minutes with {jobs} job(s) on idle cores; later variants reuse "
            f"the tree (about a minute each)")


def _check_name_free(name: str, patch: OrtPatch | None, force: bool) -> None:
    from ..runtime import load_runtime, runtime_dir

    if not (runtime_dir(name) / "runtime.json").exists() or force:
        return
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


def _registered(name: str, instrument: Instrumentation | None, library: Path,
                info: dict):
    """The runtime ``name`` (its ``instrument`` variant) when it already stands for this
    very build, else ``None``."""
    from ..runtime import load_runtime

    try:
        runtime = load_runtime(name, sanitizer=instrument.name if instrument else None)
    except UsageError:
        return None
    if runtime.ort_library != str(library) or runtime.build != info:
        return None
    return runtime


def build_ort_runtime(name: str | None, patch_spec: str | None, *, jobs: int | None = None,
                      force: bool = False, mirror: str = "http://deb.debian.org/debian",
                      instrument: str | None = None,
                      log: Callable[[str], None] = lambda _m: None,
                      progress: Callable[[BuildProgress], None] = lambda _p: None):
    """Build (or take from the cache) onnxruntime with ``patch_spec`` (:func:`load_patch`)
    and register it as the host runtime ``name`` (default: the patch's name, ``baseline``
    without one), with its workload built. With ``instrument`` (``tsan``), the
    instrumented variant of the same patch is built too and registered beside it
    (``load_runtime(name, sanitizer="tsan")``); that runtime is returned.

    Everything given is checked before any work: the patch, the name (``''`` is refused),
    the mirror.

    Raises:
        UsageError: a bad patch, name, mirror or instrumentation, or a name in use by
            another runtime (without ``force``): exit 2.
        InfraError: a build step failed (exit 3; the message names the step and its log).
    """
    from ..runtime import Runtime, build_workload, debian_root, needed_libs, runtime_dir

    patch = load_patch(patch_spec)
    name = name if name is not None else (patch.name if patch else "baseline")
    folder = runtime_dir(name)  # validates the name ('' included)
    check_mirror(mirror)
    inst = None
    if instrument is not None:
        inst = INSTRUMENTATIONS.get(instrument)
        if inst is None:
            raise UsageError(f"unknown instrumentation {instrument!r}",
                             f"use {' or '.join(INSTRUMENTATIONS)}")
    _check_name_free(name, patch, force)
    jobs = jobs or len(os.sched_getaffinity(0))
    root, _include, libs = debian_root(False, mirror, log)
    builder = OrtBuild(ChrootExecutor(root), log_dir=folder, jobs=jobs, mirror=mirror,
                       log=log, progress=progress)
    runtime = None
    for each in (None, inst) if inst is not None else (None,):
        started = time.monotonic()
        out, info, cached = build_variant(builder, patch, instrument=each, rebuild=force)
        what = (patch.name if patch else "baseline") + (f", {each.name}" if each else "")
        log(f"onnxruntime {DEBIAN_ORT.version} ({what}) "
            + ("from the cache" if cached else f"ready in {minutes(time.monotonic() - started)}")
            + f": {out}")
        candidates = sorted((out / "lib").glob(DEBIAN_ORT.library_glob),
                            key=lambda p: len(p.name))
        ort_library = candidates[0].resolve()
        kept = _registered(name, each, ort_library, info)
        if kept is not None:  # the same build, registered: its workload stays as it is
            runtime = build_workload(kept, log=log)
            continue
        xnnpack = next((str(p.resolve()) for p in needed_libs(ort_library, libs)
                        if "xnnpack" in p.name.lower()), None)
        runtime = Runtime(name=name, kind="debian-root", root=str(root),
                          include_dir=str(out / "include"), lib_dir=str(libs),
                          ort_library=str(ort_library), xnnpack_library=xnnpack,
                          ort_lib_dir=str(out / "lib"), build=info,
                          sanitizer=each.name if each else None)
        runtime.save()
        runtime = build_workload(runtime, log=log)
    return runtime
