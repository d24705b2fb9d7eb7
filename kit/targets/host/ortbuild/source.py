"""What a kit build of onnxruntime is made from: Debian's source files, the one set of CMake
flags, the Debian series and the kit's port, a patch (:func:`load_patch`), an optional
instrumentation (:data:`TSAN`), and the checks made before any work (the patch, the
mirror)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import re
import urllib.parse
from importlib.resources import files
from pathlib import Path

from ...._bounded import MiB, read_bytes_bounded
from ....errors import UsageError

__all__ = ["SourceFile", "OrtSource", "DEBIAN_ORT", "CMAKE_FLAGS", "FIRST_BUILD_CPU_S",
           "OrtPatch", "KIT_PATCHES", "load_patch", "read_series", "select_hunks",
           "data_file", "sha256_bytes", "sha256_file", "Instrumentation", "TSAN",
           "INSTRUMENTATIONS", "check_mirror"]

#: the patches shipped in ``kit/data/ort/patches`` (``baseline`` is no patch)
KIT_PATCHES = ("fix", "half-fix")
_PATCH_LIMIT = 4 * MiB


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
    project: str = "onnxruntime"


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


@dataclasses.dataclass(frozen=True)
class Instrumentation:
    """A sanitizer build of some translation units (docs/builds.md, "ThreadSanitizer").

    Attributes:
        name: the variant's suffix and ``--detector`` name (``tsan``).
        flag: the compile and link flag (``-fsanitize=thread``).
        sources: the instrumented translation units, relative to the source tree; the rest
            of the library stays as the plain build compiled it.
        compile_extra: more compile options for those units: ``-g`` (file and line in the
            reports) and ``-Wno-error`` (ORT builds with ``-Werror``; GCC warns where
            ThreadSanitizer cannot see a fence, ``-Wtsan``).
    """

    name: str
    flag: str
    sources: tuple[str, ...]
    compile_extra: tuple[str, ...] = ("-g", "-Wno-error")

    def describe(self) -> dict[str, object]:
        """``provenance["instrumented"]``: what was compiled with the flag."""
        return {"name": self.name, "flag": self.flag, "sources": list(self.sources),
                "compile_extra": list(self.compile_extra)}

    def cmake_include(self, src: str, target: str) -> str:
        """A CMake file for ``CMAKE_PROJECT_<project>_INCLUDE`` (read right after the
        project's ``project()``): the flag on the listed sources only (a source property of
        the top directory, where ORT's targets are made) and on the link of ``target``
        (deferred to the end of the directory, when the target exists), which then needs
        the sanitizer's runtime (libtsan). Checked with CMake 3.31 in the kit's root: only
        the listed sources recompile, then the archive and the link."""
        paths = " ".join(f'"{src}/{name}"' for name in self.sources)
        return (f"# coldstart: {self.name} on {len(self.sources)} translation unit(s)\n"
                f"set_property(SOURCE {paths} APPEND PROPERTY COMPILE_OPTIONS "
                f"\"{';'.join((self.flag, *self.compile_extra))}\")\n"
                f"cmake_language(DEFER CALL target_link_options {target} PRIVATE "
                f"\"{self.flag}\")\n")


#: ThreadSanitizer on the two translation units that hold onnxruntime#32461's racy code
TSAN = Instrumentation("tsan", "-fsanitize=thread", (
    "onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc",
    "onnxruntime/core/providers/xnnpack/xnnpack_init.cc"))
INSTRUMENTATIONS = {TSAN.name: TSAN}


def sha256_bytes(data: bytes) -> str:
    """The sha256 of ``data`` (hex)."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """The sha256 of a file (hex), read 1 MiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(MiB), b""):
            digest.update(block)
    return digest.hexdigest()


def data_file(name: str) -> bytes:
    """A file of ``kit/data/ort`` by name, or any file by absolute path (a test's source)."""
    if os.path.isabs(name):
        return Path(name).read_bytes()
    return (files("kit") / "data" / "ort" / name).read_bytes()


def check_mirror(mirror: str) -> str:
    """``mirror`` when it is an ``http``, ``https`` or ``file`` URL that can stand as one
    field of a ``deb`` line (sources.list(5): fields are separated by white space, one
    entry per line, ``[`` opens options).

    Raises:
        UsageError: white space, a control character, brackets or quotes, another scheme,
            or no host.
    """
    bad = next((ch for ch in mirror if ch.isspace() or ord(ch) < 32 or ord(ch) == 127
                or ch in "[]\"'#"), None)
    parsed = urllib.parse.urlsplit(mirror) if bad is None else None
    if (bad is not None or parsed is None or parsed.scheme not in ("http", "https", "file")
            or (parsed.scheme != "file" and not parsed.netloc)):
        what = f"contains {bad!r}" if bad is not None else "is not an http(s) or file URL"
        raise UsageError(f"--mirror {mirror!r} {what}",
                         "give one Debian mirror URL, e.g. http://deb.debian.org/debian")
    return mirror


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

    @property
    def spec(self) -> str:
        """What ``--patch`` takes to name this patch again (a kit name or the file)."""
        return self.name if self.origin == "kit" else self.origin


def _patch_files(text: bytes, shown: str) -> tuple[str, ...]:
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    hint = "give a unified diff against onnxruntime 1.21.0 (diff -u, git diff)"
    try:
        patch = PatchSet(io.StringIO(text.decode("utf-8")))
    except (UnicodeDecodeError, UnidiffParseError) as exc:
        raise UsageError(f"the patch {shown} is not a unified diff ({exc})", hint) from None
    names = []
    for patched in patch:
        path = patched.target_file if patched.target_file != "/dev/null" else patched.source_file
        path = path[2:] if path[:2] in ("a/", "b/") else path
        if path.startswith("/") or ".." in Path(path).parts:
            raise UsageError(f"the patch {shown} names {path!r}, outside the source tree",
                             "give a diff with paths relative to the source (a/..., b/...)")
        # patch(1) applies text hunks only: a binary diff or headers without a hunk would
        # pass here and fail (or change nothing) after the download and the build-deps
        if patched.is_binary_file:
            raise UsageError(f"the patch {shown} changes {path!r} as a binary diff, which "
                             f"patch(1) cannot apply", hint)
        if len(patched) == 0:
            raise UsageError(f"the patch {shown} names {path!r} but has no hunk for it", hint)
        names.append(path)
    if not names:
        raise UsageError(f"the patch {shown} changes no file", hint)
    return tuple(names)


def load_patch(spec: str | None) -> OrtPatch | None:
    """The patch named by ``--patch``: ``None`` or ``baseline`` for none, ``fix`` or
    ``half-fix`` for the kit's (``kit/data/ort/patches``), else a file (read bounded,
    4 MiB).

    Raises:
        UsageError: the file is missing, not regular, too large or not a unified diff whose
            every file has a text hunk inside the tree.
    """
    if spec is None or spec == "baseline":
        return None
    if spec in KIT_PATCHES:
        text, origin, name = data_file(f"patches/{spec}.patch"), "kit", spec
    else:
        path = Path(spec).expanduser()
        text = read_bytes_bounded(path, _PATCH_LIMIT, what="patch")
        origin, name = str(path.resolve()), re.sub(r"[^A-Za-z0-9._-]", "-", path.stem)[:40]
        if not name or not name[0].isalnum():
            name = f"patch-{sha256_bytes(text)[:8]}"
    summary = next((ln.strip() for ln in text.decode("utf-8", "replace").splitlines()
                    if ln.strip() and not ln.startswith(("---", "+++", "diff ", "@@"))), "")
    return OrtPatch(name, text, sha256_bytes(text), summary[:200], _patch_files(text, spec),
                    origin)


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
