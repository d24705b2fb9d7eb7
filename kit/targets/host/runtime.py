"""The host runtime: onnxruntime with the XNNPACK EP, and the native workload built on it.

Three kinds of runtime (:class:`Runtime`), prepared once by :func:`prepare_runtime` and
described by ``<cache>/runtimes/<name>/runtime.json``:

* ``system``: the host's own ``libonnxruntime-dev`` (Debian 13+ packages ORT 1.21 built
  with XNNPACK); built with the host's ``g++``, run directly.
* ``debian-root``: a Debian 13 (trixie) root made with ``debootstrap`` under the cache,
  holding ``libonnxruntime-dev`` and ``g++``. The workload is compiled inside it with
  ``chroot`` (the runtime's own compiler and headers) and run on the host through the root's
  dynamic loader (``<root>/usr/lib64/ld-linux-x86-64.so.2 --library-path <root libs>``), so
  every library it loads, glibc included, is the root's, while it sees the host's ``/proc``
  (XNNPACK's cpuinfo needs it) and needs no root privileges per launch.
* ``ort-root``: a user's own ORT build (``include/`` and ``lib/``), e.g. with the fix of
  PR #32489; built with the host's ``g++`` and an rpath to ``lib/``.

The launches themselves are :mod:`kit.targets.host.launcher`'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import time
from importlib.resources import files
from pathlib import Path
from typing import Callable

from ..._bounded import describe_path, read_json_bounded, write_atomic
from ...store.store import utc_now
from ...errors import InfraError, UsageError
from ...modelset import ModelSet, cache_dir
from ...scenario import Scenario

__all__ = ["Runtime", "prepare_runtime", "load_runtime", "build_workload", "check_scenario",
           "POISON_ENV", "runtime_dir", "DEFAULT_RUNTIME", "run_compiler", "debian_root",
           "needed_libs", "workload_digest", "fetch_debug_symbols", "DEBUG_MIRROR",
           "own_workload"]

DEFAULT_RUNTIME = "debian"
DEBIAN_SUITE = "trixie"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: Debian's debug archive (wiki.debian.org/HowToGetABacktrace): the ``*-dbgsym`` packages.
DEBUG_MIRROR = "http://deb.debian.org/debian-debug"
_ROOT_PACKAGES = ("libonnxruntime-dev", "g++")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")
#: glibc heap poisoning (mallopt(3) M_PERTURB; tunables(7)): freed memory is filled with
#: 0x55, and the per-thread cache, whose chunks are never perturbed, is turned off.
POISON_ENV = {"MALLOC_PERTURB_": "85", "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}
_CXXFLAGS = ("-std=c++17", "-O2", "-g", "-rdynamic", "-pthread")
def runtime_dir(name: str) -> Path:
    """``<cache>/runtimes/<name>`` (see :func:`kit.modelset.cache_dir`)."""
    if not _NAME_RE.match(name):
        raise UsageError(f"runtime name {name!r} is invalid",
                         "use 1-40 characters from A-Z a-z 0-9 . _ -")
    return cache_dir() / "runtimes" / name


@dataclasses.dataclass(frozen=True)
class Runtime:
    """A prepared onnxruntime for the host workload.

    Attributes:
        name: the runtime's name (``debian`` by default).
        kind: ``system``, ``debian-root`` or ``ort-root``.
        root: the Debian root (``debian-root``) or the user's ORT dir (``ort-root``).
        include_dir: folder holding ``onnxruntime_cxx_api.h``.
        lib_dir: folder holding ``libonnxruntime.so``.
        ort_library: the resolved ``libonnxruntime.so`` file.
        xnnpack_library: the shared XNNPACK library ORT links, or ``None`` when XNNPACK is
            linked statically into ORT (then its init cannot be interposed).
        workload: path of the built workload binary, or ``None`` before
            :func:`build_workload`.
        workload_hash: sha256 of the source and flags it was built from.
        ort_lib_dir: for an onnxruntime the kit built (``coldstart runtime build-ort``):
            the folder holding it, put before ``lib_dir`` (the root's libraries) on the
            loader's library path; ``None`` otherwise.
        build: that build's provenance (:func:`kit.targets.host.ortbuild.provenance`:
            source package, version and sha256, patch, flags, compiler), else ``None``.
        sanitizer: ``tsan`` for the instrumented variant of a kit build (``build-ort
            --tsan``; its workload is compiled and linked with the sanitizer too), kept
            beside the plain one as ``runtime-tsan.json``; else ``None``.
    """

    name: str
    kind: str
    root: str | None
    include_dir: str
    lib_dir: str
    ort_library: str
    xnnpack_library: str | None
    workload: str | None = None
    workload_hash: str | None = None
    ort_lib_dir: str | None = None
    build: dict | None = None
    sanitizer: str | None = None

    @property
    def library_path(self) -> str:
        """The loader's ``--library-path``: ``ort_lib_dir`` (when set), then ``lib_dir``."""
        return f"{self.ort_lib_dir}:{self.lib_dir}" if self.ort_lib_dir else self.lib_dir

    @property
    def loader(self) -> str | None:
        """The root's dynamic loader for ``debian-root`` runtimes, else ``None``."""
        if self.kind != "debian-root" or self.root is None:
            return None
        return str(Path(self.root) / "usr/lib64/ld-linux-x86-64.so.2")

    def command(self, *args: str) -> list[str]:
        """argv that runs the built workload with ``args`` on this runtime.

        Raises:
            UsageError: the workload is not built yet.
        """
        if not self.workload or not Path(self.workload).exists():
            raise UsageError(f"the workload for runtime {self.name!r} is not built",
                             f"run `coldstart runtime build --runtime {self.name}`")
        if self.loader:
            return [self.loader, "--library-path", self.library_path, self.workload, *args]
        return [self.workload, *args]

    def save(self) -> None:
        path = runtime_dir(self.name) / _record_name(self.sanitizer)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = dataclasses.asdict(self)
        if data["sanitizer"] is None:  # the plain record stays readable by older kits
            del data["sanitizer"]
        write_atomic(path, (json.dumps(data, indent=2) + "\n").encode())


def _record_name(sanitizer: str | None) -> str:
    return "runtime.json" if sanitizer is None else f"runtime-{sanitizer}.json"


#: the most of a runtime.json that is read (a real one is about 3 KB)
RUNTIME_JSON_LIMIT = 1024 * 1024


def load_runtime(name: str = DEFAULT_RUNTIME, sanitizer: str | None = None) -> Runtime:
    """Load a runtime prepared by :func:`prepare_runtime` (with ``sanitizer``: its
    instrumented variant, made by ``build-ort --tsan``).

    Raises:
        UsageError: it was never prepared (or its files are gone).
    """
    path = runtime_dir(name) / _record_name(sanitizer)
    if sanitizer is not None and not path.exists():
        raise UsageError(f"runtime {name!r} has no {sanitizer} variant",
                         f"build it: `sudo coldstart runtime build-ort --name {name} --{sanitizer}"
                         "` (with the runtime's --patch)")
    again = f"run `coldstart runtime prepare --name {name} --force`"
    # read bounded: a runtime.json grown huge, a FIFO or a device in its place is refused
    # in one line, never read whole or waited on
    hint = ("run `coldstart runtime prepare`" if name == DEFAULT_RUNTIME
            else f"run `coldstart runtime prepare --name {name} --ort-root DIR`")
    data = read_json_bounded(path, what="runtime file", hint=again,
                             missing=f"host runtime {name!r} is not prepared",
                             missing_hint=hint)
    try:
        if not isinstance(data, dict):
            raise TypeError(f"not an object but {type(data).__name__}")
        runtime = Runtime(**data)
        for field in dataclasses.fields(Runtime):
            value = getattr(runtime, field.name)
            kind = dict if field.name == "build" else str
            if not (isinstance(value, kind) or (value is None and "None" in str(field.type))):
                raise TypeError(f"{field.name} is {type(value).__name__}")
    except TypeError as exc:
        raise UsageError(f"{path} is corrupt ({exc})", again) from None
    if not Path(runtime.ort_library).exists():
        raise UsageError(f"host runtime {name!r} points at {runtime.ort_library}, which is gone",
                         f"run `coldstart runtime prepare --name {name} --force`")
    return runtime


def needed_libs(library: Path, lib_dir: Path) -> list[Path]:
    """``DT_NEEDED`` entries of an ELF file, resolved in ``lib_dir`` (read with ``readelf``
    when the host has binutils, else by scanning for ``lib*.so*`` strings)."""
    names: list[str] = []
    if shutil.which("readelf"):
        proc = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True)
        names = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", proc.stdout)
    if not names:
        data = library.read_bytes()
        names = sorted({m.decode() for m in re.findall(rb"lib[A-Za-z0-9_+.-]+\.so[0-9.]*", data)})
    return [lib_dir / n for n in names if (lib_dir / n).exists()]


def _describe_libs(name: str, kind: str, root: Path | None, include_dir: Path,
                   lib_dir: Path) -> Runtime:
    header = include_dir / "onnxruntime_cxx_api.h"
    if not header.exists():
        raise UsageError(f"no onnxruntime_cxx_api.h in {include_dir}",
                         "point --ort-root at an ORT build with include/ and lib/")
    candidates = sorted(lib_dir.glob("libonnxruntime.so*"), key=lambda p: len(p.name))
    if not candidates:
        raise UsageError(f"no libonnxruntime.so in {lib_dir}",
                         "point --ort-root at an ORT build with include/ and lib/")
    ort_library = candidates[0].resolve()
    xnnpack = next((str(p.resolve()) for p in needed_libs(ort_library, lib_dir)
                    if "xnnpack" in p.name.lower()), None)
    return Runtime(name=name, kind=kind, root=str(root) if root else None,
                   include_dir=str(include_dir), lib_dir=str(lib_dir),
                   ort_library=str(ort_library), xnnpack_library=xnnpack)


def _run_step(cmd: list[str], what: str, log_path: Path, hint: str) -> None:
    with open(log_path, "ab") as log:
        log.write(f"\n$ {shlex.join(cmd)}\n".encode())
        log.flush()
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    if proc.returncode != 0:
        raise InfraError(f"{what} failed (exit {proc.returncode}; log: {log_path})", hint)


def _host_has_system_ort() -> tuple[Path, Path] | None:
    include = Path("/usr/include/onnxruntime")
    for lib in (Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib/aarch64-linux-gnu"),
                Path("/usr/lib64"), Path("/usr/lib")):
        if (include / "onnxruntime_cxx_api.h").exists() and list(lib.glob("libonnxruntime.so*")):
            return include, lib
    return None


def _debian_major() -> int | None:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return None
    ident = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', text, re.M))
    if ident.get("ID") != "debian" and "debian" not in ident.get("ID_LIKE", ""):
        return None
    try:
        return int(ident.get("VERSION_ID", "").split(".")[0])
    except ValueError:
        return None


def prepare_runtime(name: str = DEFAULT_RUNTIME, ort_root: str | None = None,
                    force: bool = False, mirror: str = DEFAULT_MIRROR,
                    log: Callable[[str], None] = lambda _m: None) -> Runtime:
    """Make an onnxruntime with the XNNPACK EP available to the host workload.

    Order: ``ort_root`` when given; else the host's own ``libonnxruntime-dev`` (installed
    with apt-get on Debian 13+ when missing and running as root); else a Debian 13 root
    made with ``debootstrap`` under ``<cache>/debian-trixie`` (about 1 minute and 700 MB;
    reused while it is complete).

    Raises:
        UsageError: no root privileges for apt-get/debootstrap/chroot, a bad ``ort_root``,
            or a non-x86_64/aarch64 Debian host without a system ORT.
        InfraError: apt-get or debootstrap failed (network, mirror).
    """
    existing = runtime_dir(name) / "runtime.json"
    if existing.exists() and not force and ort_root is None:
        try:
            runtime = load_runtime(name)
            log(f"runtime {name!r} already prepared ({runtime.kind}, {runtime.ort_library})")
            return runtime
        except UsageError:
            pass
    if ort_root is not None:  # checked before anything is made (runtime.save makes the dir)
        root = Path(ort_root).expanduser().resolve()
        if root.exists() and not root.is_dir():  # a device, a FIFO, a file: say which
            raise UsageError(f"--ort-root {ort_root} {describe_path(root)}",
                             "point --ort-root at an ORT build folder with include/ and lib/")
        include = root / "include"
        if (include / "onnxruntime" / "onnxruntime_cxx_api.h").exists():
            include = include / "onnxruntime"
        runtime = _describe_libs(name, "ort-root", root, include, root / "lib")
        if shutil.which("g++") is None:
            raise UsageError("building against --ort-root needs g++ on the host",
                             "install g++ (Debian: apt-get install g++)")
        runtime.save()
        log(f"runtime {name!r}: your ORT build at {root}")
        return runtime
    runtime_dir(name).mkdir(parents=True, exist_ok=True)
    system = _host_has_system_ort()
    major = _debian_major()
    if system is None and major is not None and major >= 13:
        if os.geteuid() != 0:
            raise UsageError("this Debian host has no libonnxruntime-dev",
                             "run `sudo apt-get install libonnxruntime-dev g++`, then "
                             "prepare again")
        log("installing the distro's libonnxruntime-dev and g++ with apt-get")
        log_path = runtime_dir(name) / "prepare.log"
        _run_step(["apt-get", "install", "-y", "--no-install-recommends", *_ROOT_PACKAGES],
                  "apt-get install libonnxruntime-dev", log_path, "check apt's sources")
        system = _host_has_system_ort()
    if system is not None:
        runtime = _describe_libs(name, "system", None, *system)
        runtime.save()
        log(f"runtime {name!r}: the host's own onnxruntime ({runtime.ort_library})")
        return runtime
    runtime = _describe_libs(name, "debian-root", *debian_root(force, mirror, log))
    runtime.save()
    log(f"runtime {name!r}: Debian {DEBIAN_SUITE} root at {runtime.root}")
    return runtime


def debian_root(force: bool, mirror: str, log: Callable[[str], None]
                ) -> tuple[Path, Path, Path]:
    """The kit's Debian root (made once with ``debootstrap``, or again with ``force``):
    ``(root, include dir, library dir)``."""
    root = cache_dir() / f"debian-{DEBIAN_SUITE}"
    stamp = root / ".coldstart-complete"
    arch = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}.get(platform.machine())
    if arch is None:
        raise UsageError(f"no Debian root recipe for {platform.machine()}",
                         "use --ort-root with your own ORT build")
    libs = root / "usr/lib" / arch
    if stamp.exists() and not force:
        log(f"reusing the Debian {DEBIAN_SUITE} root at {root}")
        return root, root / "usr/include/onnxruntime", libs
    if os.geteuid() != 0:
        raise UsageError("making the Debian 13 root needs root (debootstrap, chroot)",
                         "run `sudo coldstart runtime prepare`, or use --ort-root with your "
                         "own ORT build (see the README)")
    log_path = cache_dir() / f"debian-{DEBIAN_SUITE}.log"
    cache_dir().mkdir(parents=True, exist_ok=True)
    if shutil.which("debootstrap") is None:
        log("installing debootstrap with apt-get")
        _run_step(["apt-get", "install", "-y", "debootstrap"], "apt-get install debootstrap",
                  log_path, "install debootstrap yourself")
    if root.exists():
        shutil.rmtree(root)
    started = time.monotonic()
    log(f"debootstrap {DEBIAN_SUITE} into {root} (about a minute; log: {log_path})")
    _run_step(["debootstrap", "--variant=minbase", DEBIAN_SUITE, str(root), mirror],
              "debootstrap", log_path, f"check that {mirror} is reachable")
    log("installing libonnxruntime-dev and g++ inside the root")
    _run_step(["chroot", str(root), "apt-get", "install", "-y", "--no-install-recommends",
               *_ROOT_PACKAGES], "apt-get inside the Debian root", log_path,
              f"check that {mirror} is reachable")
    _run_step(["chroot", str(root), "apt-get", "clean"], "apt-get clean", log_path,
              "see the log")
    stamp.write_text(utc_now() + "\n")
    log(f"Debian root ready in {time.monotonic() - started:.0f} s")
    return root, root / "usr/include/onnxruntime", libs


def fetch_debug_symbols(runtime: Runtime, mirror: str = DEBUG_MIRROR,
                        log: Callable[[str], None] = lambda _m: None) -> bool:
    """Install the ``*-dbgsym`` packages of the Debian root's onnxruntime and XNNPACK from
    Debian's debug archive, when it can be reached, so host crash frames inside them get
    names (:func:`kit.crash.symbolize_host` reads ``<root>/usr/lib/debug``).

    Best effort: an unreachable archive, a missing package or a failed install is said in one
    log line and changes nothing (the archive's source list is removed again, so the root's
    other apt-get calls never meet it); the frames then stay as the backtrace prints them and
    the rules class them by XNNPACK's exported frames (kit/data/rules). Returns whether the
    symbols are installed. Only for a ``debian-root`` runtime of the root's own onnxruntime.
    """
    if runtime.kind != "debian-root" or runtime.root is None or runtime.ort_lib_dir is not None:
        return False
    import urllib.error
    import urllib.request

    root = Path(runtime.root)
    stamp = root / ".coldstart-dbgsym"
    if stamp.exists():
        log(f"debug symbols of Debian's onnxruntime already installed ({stamp.read_text().strip()})")
        return True
    release = f"{mirror}/dists/{DEBIAN_SUITE}-debug/Release"
    try:
        with urllib.request.urlopen(release, timeout=15) as answer:
            answer.read(64)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        log(f"no debug symbols: Debian's debug archive is not reachable from here ({release}: "
            f"{str(getattr(exc, 'reason', exc))[:80]}); host crash frames inside Debian's "
            f"onnxruntime stay unnamed and the rules class them by XNNPACK's exported frames")
        return False
    packages = []
    for lib in (runtime.ort_library, runtime.xnnpack_library):
        if not lib:
            continue
        inner = "/" + str(Path(lib).relative_to(root))
        found = subprocess.run(["chroot", str(root), "dpkg-query", "-S", inner],
                               capture_output=True, text=True, check=False)
        name = found.stdout.split(":", 1)[0].strip() if found.returncode == 0 else ""
        if re.fullmatch(r"[a-z0-9][a-z0-9.+-]{1,80}", name):
            packages.append(f"{name}-dbgsym")
    listing = root / "etc/apt/sources.list.d/coldstart-debug.list"
    log_path = runtime_dir(runtime.name) / "dbgsym.log"
    try:
        listing.write_text(f"deb {mirror} {DEBIAN_SUITE}-debug main\n")
        log(f"installing {', '.join(packages)} from Debian's debug archive")
        _run_step(["chroot", str(root), "apt-get", "update", "-q"], "apt-get update",
                  log_path, f"check that {mirror} is reachable")
        _run_step(["chroot", str(root), "apt-get", "install", "-y", "-q",
                   "--no-install-recommends", *packages], "apt-get install dbgsym",
                  log_path, "see the log")
    except (UsageError, InfraError) as exc:
        log(f"no debug symbols: {exc.one_line()}; frames stay as the backtrace prints them")
        return False
    finally:
        listing.unlink(missing_ok=True)
    stamp.write_text(" ".join(packages) + "\n")
    return True


def _source() -> bytes:
    return (files("kit") / "workload" / "coldstart_workload.cpp").read_bytes()


def run_compiler(cmd: list[str], what: str, log_path: Path) -> None:
    """Run a compiler command (argv), writing the command and its output to ``log_path``.

    Raises:
        UsageError: it failed: ``<what> failed to compile: <first error line>``, with the
            log's path as the hint.
    """
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log_path.write_text(f"$ {shlex.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        lines = proc.stderr.splitlines()
        # the linker's own complaint, not collect2's "ld returned 1 exit status" after it
        first = next((ln for ln in lines if "undefined reference" in ln
                      or "cannot find -l" in ln), None) or next(
            (ln for ln in lines if "error" in ln and not ln.startswith("collect2:")),
            None) or next((ln for ln in lines if "error" in ln),
                          lines[-1] if proc.stderr.strip() else "no output")
        raise UsageError(f"{what} failed to compile: {first.strip()}", f"full log: {log_path}")


def workload_digest(runtime: Runtime) -> str:
    """sha256 (hex) of this checkout's workload source, its flags and the runtime's ORT:
    what :attr:`Runtime.workload_hash` is when the built workload is this checkout's."""
    flags = _CXXFLAGS + (("-fsanitize=thread",) if runtime.sanitizer == "tsan" else ())
    return hashlib.sha256(_source() + repr((flags, runtime.kind, runtime.ort_library)
                                           ).encode()).hexdigest()


def _workload_binary(runtime: Runtime, digest: str) -> Path:
    """Where :func:`build_workload` puts the binary built from ``digest``."""
    if runtime.kind == "debian-root" and runtime.root is not None:
        inner = (Path("/opt/coldstart") if runtime.ort_lib_dir is None
                 else Path("/opt/coldstart/runtimes") / runtime.name)
        return Path(runtime.root) / inner.relative_to("/") / f"workload-{digest[:12]}" / \
            "coldstart-workload"
    return runtime_dir(runtime.name) / f"workload-{digest[:12]}" / "coldstart-workload"


def own_workload(runtime: Runtime) -> Runtime:
    """``runtime`` with this checkout's own workload binary when one was built (checkouts
    that share a cache each keep theirs in a folder of its digest, while ``runtime.json``
    names the last one built), else ``runtime`` as it is."""
    digest = workload_digest(runtime)
    if runtime.workload_hash == digest:
        return runtime
    binary = _workload_binary(runtime, digest)
    if binary.is_file() and os.access(binary, os.X_OK):
        return dataclasses.replace(runtime, workload=str(binary), workload_hash=digest)
    return runtime


def workload_needs_build(runtime: Runtime) -> bool:
    """Whether a run must build the workload first: none was built, or the one ``runtime``
    names was built by the kit (``.../coldstart-workload``) from another source or flags than
    this checkout's (:func:`workload_digest`; an older checkout's, without a key this one
    sends). A workload the kit did not build (another program registered in ``runtime.json``)
    is launched as it is."""
    if runtime.workload_hash is None:
        return True
    return (runtime.workload_hash != workload_digest(runtime)
            and Path(runtime.workload or "").name == "coldstart-workload")


def build_workload(runtime: Runtime, force: bool = False,
                   log: Callable[[str], None] = lambda _m: None) -> Runtime:
    """Compile the workload with the runtime's own compiler and headers.

    Rebuilds only when the source, flags or runtime changed (or ``force``).

    Returns:
        The runtime with ``workload`` and ``workload_hash`` set (also saved).

    Raises:
        UsageError: the compiler is missing or the workload does not compile (the first
            error line is shown; the full log is in the runtime's folder).
    """
    source = _source()
    flags = _CXXFLAGS + (("-fsanitize=thread",) if runtime.sanitizer == "tsan" else ())
    digest = workload_digest(runtime)
    if (not force and runtime.workload_hash == digest and runtime.workload
            and Path(runtime.workload).exists()):
        log(f"workload up to date ({runtime.workload})")
        return runtime
    out_dir = runtime_dir(runtime.name)
    log_path = out_dir / "build.log"
    if runtime.kind == "debian-root":
        assert runtime.root is not None
        if os.geteuid() != 0:
            raise UsageError("building inside the Debian root needs root (chroot)",
                             "run `sudo coldstart runtime build`")
        root = Path(runtime.root)
        # the root's own ORT in /opt/coldstart; a kit build's in a folder of its own name
        inner = (Path("/opt/coldstart") if runtime.ort_lib_dir is None
                 else Path("/opt/coldstart/runtimes") / (
                     runtime.name + (f"-{runtime.sanitizer}" if runtime.sanitizer else "")))
        # one folder per source and flags: checkouts that share this cache never overwrite
        # the binary another one is launching
        inner = inner / f"workload-{digest[:12]}"
        (root / inner.relative_to("/")).mkdir(parents=True, exist_ok=True)
        (root / inner.relative_to("/") / "coldstart_workload.cpp").write_bytes(source)
        include, link = "/usr/include/onnxruntime", []
        if runtime.ort_lib_dir is not None:
            include = "/" + str(Path(runtime.include_dir).relative_to(root))
            link = [f"-L/{Path(runtime.ort_lib_dir).relative_to(root)}"]
        cmd = ["chroot", runtime.root, "g++", *flags, f"-I{include}",
               str(inner / "coldstart_workload.cpp"), "-o", str(inner / "coldstart-workload"),
               *link, "-lonnxruntime"]
        binary = root / inner.relative_to("/") / "coldstart-workload"
    else:
        compiler = shutil.which("g++")
        if compiler is None:
            raise UsageError("no g++ on this host", "install g++ (Debian: apt-get install g++)")
        out_dir = out_dir / f"workload-{digest[:12]}"
        out_dir.mkdir(parents=True, exist_ok=True)
        src = out_dir / "coldstart_workload.cpp"
        src.write_bytes(source)
        binary = out_dir / "coldstart-workload"
        cmd = [compiler, *flags, f"-I{runtime.include_dir}", str(src), "-o", str(binary),
               f"-L{runtime.lib_dir}", f"-Wl,-rpath,{runtime.lib_dir}", "-lonnxruntime"]
    log(f"compiling the workload ({runtime.kind})")
    run_compiler(cmd, "the workload", log_path)
    built = dataclasses.replace(runtime, workload=str(binary), workload_hash=digest)
    built.save()
    log(f"built {binary}")
    return built


def check_scenario(scenario: Scenario, modelset: ModelSet) -> None:
    """Check the scenario fits the model set (names known; all three roles for infer=1).

    Raises:
        UsageError: an unknown model, or ``infer=1`` without mel, embedding and keyword.
    """
    for name in scenario.models:
        modelset.by_name(name)
    created = [scenario.models[i % len(scenario.models)] for i in range(scenario.sessions)]
    roles = {modelset.by_name(n).role for n in created}
    missing = {"mel", "embedding", "keyword"} - roles
    if scenario.infer and missing:
        raise UsageError(f"infer=1 needs the {', '.join(sorted(missing))} model(s) among the "
                         f"{scenario.sessions} sessions created (they cycle through models=)",
                         "add them to models=, raise sessions=, or set infer=0")


