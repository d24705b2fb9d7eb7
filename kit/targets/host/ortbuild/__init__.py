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

An instrumented variant (``--tsan``: :data:`TSAN`, ThreadSanitizer on the two translation
units of the race) is compiled in a copy of the plain tree (:mod:`.steps`).

Everything runs inside the Debian root (the library needs its glibc 2.41), so the result is a
``debian-root`` runtime whose ``ort_lib_dir`` is put before the root's libraries. The
modules: :mod:`.source` (what a build is made from, the up-front checks), :mod:`.process`
(the commands, their process groups and the lock), :mod:`.steps` (:class:`OrtBuild`),
:mod:`.variant` (the cache and the runtime).
"""

from __future__ import annotations

from .process import (BuildProgress, ChrootExecutor, Executor, format_progress,
                      hold_build_lock, parse_ninja_status)
from .source import (CMAKE_FLAGS, DEBIAN_ORT, FIRST_BUILD_CPU_S, INSTRUMENTATIONS,
                     KIT_PATCHES, TSAN, Instrumentation, OrtPatch, OrtSource, SourceFile,
                     check_mirror, data_file, load_patch, read_series, select_hunks)
from .steps import INNER_BASE, OrtBuild
from .variant import (build_ort_runtime, build_variant, first_build_estimate, provenance,
                      read_provenance, variant_key)

__all__ = ["SourceFile", "OrtSource", "DEBIAN_ORT", "CMAKE_FLAGS", "OrtPatch", "KIT_PATCHES",
           "load_patch", "Executor", "ChrootExecutor", "BuildProgress", "OrtBuild",
           "build_variant", "variant_key", "parse_ninja_status", "format_progress",
           "read_series", "select_hunks", "provenance", "read_provenance",
           "first_build_estimate", "build_ort_runtime", "hold_build_lock", "check_mirror",
           "data_file", "Instrumentation", "TSAN", "INSTRUMENTATIONS", "INNER_BASE",
           "FIRST_BUILD_CPU_S"]

_data = data_file  # the name the tests and older callers use
