"""Building the race witness with the runtime's own C compiler (issue #8).

The witness must be linked against the same C library as the workload it is preloaded into:

* ``debian-root``: compiled inside the Debian 13 root with ``chroot <root> gcc`` (like
  :func:`kit.targets.host.build_workload`), written to ``<root>/opt/coldstart/``; needs root;
* ``system`` and ``ort-root``: compiled with the host's ``gcc`` (or ``cc``) into
  ``<cache>/runtimes/<name>/``.

A runtime whose onnxruntime links XNNPACK statically (``Runtime.xnnpack_library is None``,
like the Android and iOS packages) has no ``xnn_initialize`` to interpose:
:func:`witness_supported` says so and :func:`build_witness` refuses.

The build is kept while the source, flags and runtime are unchanged; its provenance is
``<cache>/runtimes/<name>/witness.json`` (``{"library": path, "hash": sha256}``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ...._bounded import read_json_bounded, write_atomic
from ....errors import ColdstartError, UsageError
from .race import STATIC_REASON

if TYPE_CHECKING:  # kit.targets.host imports this package: no import cycle at run time
    from ..runtime import Runtime

__all__ = ["build_witness", "witness_supported", "witness_library", "CFLAGS", "LIBRARY_NAME"]

#: Compiler flags: a position-independent shared object (linked with -ldl, which dlsym
#: needs on glibc < 2.34).
CFLAGS = ("-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-fPIC", "-shared")
LIBRARY_NAME = "libcoldstart-witness.so"
_SOURCE_NAME = "coldstart_witness.c"


def _source() -> bytes:
    return (files("kit") / "targets" / "host" / "witness" / _SOURCE_NAME).read_bytes()


def witness_supported(runtime: Runtime) -> tuple[bool, str | None]:
    """Whether the witness can watch this runtime: ``(True, None)``, or ``(False, reason)``
    when onnxruntime links XNNPACK statically (:data:`~kit.targets.host.witness.race.STATIC_REASON`)."""
    if runtime.xnnpack_library is None:
        return False, STATIC_REASON
    return True, None


def _digest(runtime: Runtime, source: bytes) -> str:
    return hashlib.sha256(source + repr((CFLAGS, runtime.kind, runtime.root,
                                         runtime.xnnpack_library)).encode()).hexdigest()


def _runtime_dir(runtime: Runtime) -> Path:
    from ..runtime import runtime_dir

    return runtime_dir(runtime.name)


def _stamp(runtime: Runtime) -> Path:
    return _runtime_dir(runtime) / "witness.json"


def witness_library(runtime: Runtime) -> str | None:
    """Path of an up-to-date built witness for ``runtime``, or ``None``. Never raises."""
    try:
        stamp = read_json_bounded(_stamp(runtime), what="witness stamp", hint="")
        library, digest = str(stamp["library"]), str(stamp["hash"])  # type: ignore[index]
    except (OSError, ValueError, KeyError, TypeError, ColdstartError):
        return None
    if digest != _digest(runtime, _source()) or not Path(library).is_file():
        return None
    return library


def _check_path(path: Path) -> None:
    # LD_PRELOAD splits on spaces and colons
    if any(ch in str(path) for ch in " :\t\n"):
        raise UsageError(f"the witness path {path} contains a space or colon, which "
                         "LD_PRELOAD cannot carry", "set COLDSTART_CACHE to a plain path")


def build_witness(runtime: Runtime, force: bool = False,
                  log: Callable[[str], None] = lambda _m: None) -> str:
    """Compile the race witness for ``runtime`` (kept while up to date, unless ``force``).

    Returns:
        The absolute path of the shared library to preload.

    Raises:
        UsageError: XNNPACK is linked statically (nothing to interpose), no root privileges
            for the Debian root's chroot, no C compiler, or the source does not compile
            (first error line shown; the log is ``witness-build.log`` in the runtime's
            folder).
    """
    ok, reason = witness_supported(runtime)
    if not ok:
        raise UsageError(f"no race witness for runtime {runtime.name!r}: {reason}",
                         "run with --no-witness")
    source = _source()
    existing = witness_library(runtime)
    if existing and not force:
        log(f"race witness up to date ({existing})")
        return existing
    out_dir = _runtime_dir(runtime)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / "witness-build.log"
    if runtime.kind == "debian-root":
        assert runtime.root is not None
        if os.geteuid() != 0:
            raise UsageError("building the race witness inside the Debian root needs root "
                             "(chroot)", "run `sudo coldstart runtime build`, or run with "
                                         "--no-witness")
        inner = Path("/opt/coldstart")
        host_dir = Path(runtime.root) / inner.relative_to("/")
        host_dir.mkdir(parents=True, exist_ok=True)
        (host_dir / _SOURCE_NAME).write_bytes(source)
        cmd = ["chroot", runtime.root, "gcc", *CFLAGS, str(inner / _SOURCE_NAME), "-o",
               str(inner / LIBRARY_NAME), "-ldl"]
        library = host_dir / LIBRARY_NAME
    else:
        compiler = shutil.which("gcc") or shutil.which("cc")
        if compiler is None:
            raise UsageError("no C compiler (gcc or cc) on this host",
                             "install gcc (Debian: apt-get install gcc), or run with "
                             "--no-witness")
        src = out_dir / _SOURCE_NAME
        src.write_bytes(source)
        library = out_dir / LIBRARY_NAME
        cmd = [compiler, *CFLAGS, str(src), "-o", str(library), "-ldl"]
    _check_path(library)
    log(f"compiling the race witness ({runtime.kind})")
    from ..runtime import run_compiler

    run_compiler(cmd, "the race witness", log_path)
    stamp = _stamp(runtime)
    write_atomic(stamp, (json.dumps({"library": str(library), "hash": _digest(runtime, source)},
                                    indent=2) + "\n").encode())
    log(f"built {library}")
    return str(library)
