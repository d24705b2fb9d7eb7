"""Finding, installing and running the race detector (valgrind's helgrind or DRD).

How a launch runs under the tool, per kind of runtime (:class:`kit.targets.host.Runtime`):

* ``debian-root``: the root's own valgrind (``apt-get install valgrind`` inside the root,
  done by :func:`ensure_tool`), run **on the host, without chroot and without any mount**:
  the launcher ``<root>/usr/bin/valgrind.bin`` goes through the root's dynamic loader
  (``<root>/usr/lib64/ld-linux-x86-64.so.2 --library-path <root libs>``), ``VALGRIND_LIB``
  points at ``<root>/usr/libexec/valgrind`` (the tool binaries and their preload objects),
  and the client is the workload's usual argv, which is itself the root's loader. The
  process sees the host's ``/proc`` and ``/sys``, so nothing has to be mounted and nothing
  is left behind by a launch, Ctrl-C or ``kill -9`` (the workload dies with the kit through
  ``PR_SET_PDEATHSIG``, the tool being the same process).
* ``system`` and ``ort-root``: the host's own ``valgrind``, when :func:`ensure_tool` finds it
  and a threaded smoke program runs under it.

Why the root's glibc debug information matters (measured here, valgrind 3.24.0 and 3.19):
valgrind finds glibc's versioned symbols (``pthread_create@@GLIBC_2.34``) only in
``libc6-dbg``'s debug file. Inside a chroot it finds that file under
``/usr/lib/debug/.build-id``; run from the host it looks in the host's ``/usr/lib/debug``,
finds nothing, fails to intercept ``pthread_create`` while it does intercept
``pthread_join``, and helgrind then aborts on the first join (``hg_main.c:5421
(hg_handle_client_request): Assertion 'found' failed``: the assertion seen with Debian 12's
3.19 too). valgrind also tries ``<--extra-debuginfo-path><object's dir>/<.gnu_debuglink
name>``, so :func:`ensure_tool` makes a small tree of symbolic links of that shape into the
root's ``/usr/lib/debug/.build-id`` (``<cache>/runtimes/<name>/valgrind-debuginfo``, made
once, read only by later launches). With it, both tools run the workload to ``done``.

The tool writes its findings as XML (``--xml=yes --xml-file=F``; valgrind's
docs/internals/xml-output-protocol4.txt), read by :mod:`kit.targets.host.detector.report`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

from ...._bounded import read_json_bounded, write_atomic
from ....errors import DataError, InfraError, UsageError

__all__ = ["TOOLS", "SLOWDOWN", "ToolInstall", "find_tool", "ensure_tool", "wrap_command",
           "TOOL_BARRIER_ENV", "WITNESS_QUIET_ENV", "debuginfo_dir"]

#: The tools, as ``--detector`` names them (valgrind's ``--tool=`` names).
TOOLS = ("helgrind", "drd")
#: What a launch's time-out is multiplied by under each tool. Measured on 2 shared cores
#: (docs/race.md): the default scenario takes 0.4 s without a tool and 35-100 s under one,
#: up to 210 s with sessions=8; the default 30 s time-out becomes 15 (DRD) or 20 (helgrind)
#: minutes, several times the slowest launch seen.
SLOWDOWN = {"helgrind": 40.0, "drd": 30.0}
#: Tells the workload to release its create threads with a pthread barrier, which the tools
#: understand, instead of its spin barrier (which they would report as a race).
TOOL_BARRIER_ENV = "COLDSTART_BARRIER"
#: Tells the race witness to take its snapshot of the allocator wrapper through
#: process_vm_readv(2), which the tools do not see, instead of a plain load.
WITNESS_QUIET_ENV = "COLDSTART_WITNESS_QUIET"
_VERSION_RE = re.compile(r"valgrind-(\d+\.\d+(?:\.\d+)?)")
_SMOKE = ("#include <thread>\nint x;\nint main() {\n  std::thread a([] { x = 1; });\n"
          "  a.join();\n  std::thread b([] { x = 2; });\n  b.join();\n  return x == 2 ? 0 : 1;\n}\n")


@dataclasses.dataclass(frozen=True)
class ToolInstall:
    """A valgrind that can run the workload of one runtime.

    Attributes:
        launcher: argv prefix that starts valgrind (before ``--tool=``).
        env: environment variables valgrind needs (``VALGRIND_LIB``), added to the launch's.
        options: valgrind options every launch gets (``--extra-debuginfo-path``).
        version: e.g. ``3.24.0``.
        where: ``root`` (the Debian root's valgrind) or ``host``.
    """

    launcher: tuple[str, ...]
    env: dict[str, str]
    options: tuple[str, ...]
    version: str
    where: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``campaign.json``'s ``build.detector``)."""
        return {"launcher": list(self.launcher), "env": dict(self.env),
                "options": list(self.options), "version": self.version, "where": self.where}


def debuginfo_dir(runtime: Any) -> Path:
    """``<cache>/runtimes/<name>/valgrind-debuginfo``: the link tree of the module doc."""
    from ..runtime import runtime_dir

    return runtime_dir(runtime.name) / "valgrind-debuginfo"


def _stamp(runtime: Any) -> Path:
    return debuginfo_dir(runtime).parent / "detector.json"


def _root_paths(root: Path) -> dict[str, Path]:
    return {"loader": root / "usr/lib64/ld-linux-x86-64.so.2", "bin": root / "usr/bin/valgrind.bin",
            "lib": root / "usr/libexec/valgrind", "debug": root / "usr/lib/debug/.build-id"}


def _run_bounded(cmd: list[str], env: dict[str, str] | None = None,
                 timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _version_of(launcher: list[str], env: dict[str, str]) -> str | None:
    try:
        proc = _run_bounded([*launcher, "--version"], env={**os.environ, **env}, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = _VERSION_RE.search(proc.stdout + proc.stderr)
    return match.group(1) if match else None


def find_tool(runtime: Any) -> ToolInstall:
    """The valgrind that runs ``runtime``'s workload, as :func:`ensure_tool` left it.

    Reads ``<cache>/runtimes/<name>/detector.json`` and checks its files still exist; it
    runs nothing.

    Raises:
        UsageError: no usable valgrind for this runtime (the hint says how to get one).
    """
    hint = (f"run `coldstart runtime prepare --runtime {runtime.name}`, which installs "
            f"valgrind into the Debian root" if runtime.kind == "debian-root" else
            "install valgrind on this host (Debian: apt-get install valgrind libc6-dbg), then "
            f"run `coldstart runtime prepare --runtime {runtime.name}`")
    try:
        data: Any = read_json_bounded(_stamp(runtime), what="race detector setup", hint=hint)
        install = ToolInstall(launcher=tuple(data["launcher"]), env=dict(data["env"]),
                              options=tuple(data["options"]), version=str(data["version"]),
                              where=str(data["where"]))
    except FileNotFoundError:
        raise UsageError(f"no race detector (valgrind) is set up for runtime {runtime.name!r}",
                         hint) from None
    except UsageError as exc:
        if "does not exist" in exc.message:
            raise UsageError(f"no race detector (valgrind) is set up for runtime "
                             f"{runtime.name!r}", hint) from None
        raise
    except (OSError, ValueError, KeyError, TypeError, DataError):
        raise UsageError(f"the race detector's setup of runtime {runtime.name!r} is corrupt",
                         hint) from None
    missing = [p for p in install.launcher if os.path.isabs(p) and not os.path.exists(p)]
    if missing:
        raise UsageError(f"valgrind for runtime {runtime.name!r} is gone ({missing[0]})", hint)
    return install


def _link_debuginfo(root: Path, lib_dir: Path, out: Path) -> int:
    """Make ``out/<object's real dir>/<debuglink name>`` -> the root's build-id debug file
    for every object in ``lib_dir`` that has one. Returns how many links exist."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import NoteSection

    build_ids = _root_paths(root)["debug"]
    count = 0
    for path in sorted(lib_dir.iterdir()):
        real = path.resolve()
        if not real.is_file() or ".so" not in real.name:
            continue
        try:
            with open(real, "rb") as fh:
                elf = ELFFile(fh)
                link = elf.get_section_by_name(".gnu_debuglink")
                note = elf.get_section_by_name(".note.gnu.build-id")
                if link is None or not isinstance(note, NoteSection):
                    continue
                name = link.data().split(b"\0", 1)[0].decode("ascii", "replace")
                build_id = next((n["n_desc"] for n in note.iter_notes()
                                 if n["n_type"] == "NT_GNU_BUILD_ID"), None)
        except (OSError, ELFError, ValueError):
            continue
        if not build_id or not name or "/" in name:
            continue
        target = build_ids / build_id[:2] / f"{build_id[2:]}.debug"
        if not target.is_file():
            continue
        dest = out / str(real.parent).lstrip("/") / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_symlink() or dest.exists():
            dest.unlink()
        dest.symlink_to(target)
        count += 1
    return count


def _root_install(runtime: Any, log: Callable[[str], None]) -> ToolInstall:
    root = Path(runtime.root)
    paths = _root_paths(root)
    if not paths["bin"].exists():
        if os.geteuid() != 0:
            raise UsageError("installing valgrind into the Debian root needs root (chroot)",
                             "run `sudo coldstart runtime prepare`")
        log("installing valgrind into the Debian root (apt-get, about 10 s)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["chroot", str(root), "apt-get", "update", "-q"],
                    ["chroot", str(root), "apt-get", "install", "-y", "-q",
                     "--no-install-recommends", "valgrind", "libc6-dbg"],
                    ["chroot", str(root), "apt-get", "clean"]):
            proc = _run_bounded(cmd, env=env, timeout=600)
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise InfraError(f"`{' '.join(cmd[2:])}` inside the Debian root failed: {tail}",
                                 "check that the Debian mirror is reachable")
    out = debuginfo_dir(runtime)
    linked = _link_debuginfo(root, Path(runtime.lib_dir), out)
    if linked == 0:
        raise InfraError("the Debian root has no glibc debug information (libc6-dbg)",
                         f"run `chroot {root} apt-get install libc6-dbg`")
    launcher = [str(paths["loader"]), "--library-path", runtime.lib_dir, str(paths["bin"])]
    env = {"VALGRIND_LIB": str(paths["lib"])}
    version = _version_of(launcher, env)
    if version is None:
        raise InfraError("the Debian root's valgrind does not start",
                         f"try `chroot {root} valgrind --version`")
    log(f"race detector: valgrind {version} from the Debian root ({linked} debug links)")
    return ToolInstall(tuple(launcher), env, (f"--extra-debuginfo-path={out}",), version, "root")


def _host_install(runtime: Any, log: Callable[[str], None]) -> ToolInstall:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise UsageError("this host has no valgrind, which --detector needs",
                         "install it (Debian: apt-get install valgrind libc6-dbg), then run "
                         f"`coldstart runtime prepare --runtime {runtime.name}` again")
    version = _version_of([valgrind], {})
    compiler = shutil.which("g++")
    if version is None or compiler is None:
        raise UsageError(f"{valgrind} does not start, or there is no g++ to check it",
                         "install valgrind and g++")
    smoke_dir = debuginfo_dir(runtime).parent
    smoke_dir.mkdir(parents=True, exist_ok=True)
    src, exe = smoke_dir / "detector-smoke.cpp", smoke_dir / "detector-smoke"
    src.write_text(_SMOKE)
    proc = _run_bounded([compiler, "-std=c++17", "-pthread", str(src), "-o", str(exe)])
    if proc.returncode != 0:
        raise UsageError("the detector's smoke program does not compile", proc.stderr[-200:])
    proc = _run_bounded([valgrind, "--tool=helgrind", "--error-exitcode=0", str(exe)])
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "Assertion" in ln
                      or "FATAL" in ln), proc.stderr.strip()[-200:])
        raise UsageError(f"the host's valgrind {version} fails on a threaded program: "
                         f"{first.strip()}", "install libc6-dbg, or a newer valgrind")
    log(f"race detector: the host's valgrind {version} ({valgrind})")
    return ToolInstall((valgrind,), {}, (), version, "host")


def ensure_tool(runtime: Any, log: Callable[[str], None] = lambda _m: None) -> ToolInstall:
    """Set up the race detector for ``runtime`` and remember it (``detector.json``).

    ``debian-root``: installs ``valgrind`` and ``libc6-dbg`` into the root with ``chroot
    apt-get`` when missing (needs root and the mirror), then makes the debug-information
    link tree of the module doc. ``system``/``ort-root``: checks the host's ``valgrind``
    on a small threaded program (built with the host's ``g++``).

    Raises:
        UsageError: no valgrind, or it cannot run threaded programs (the hint says how).
        InfraError: apt-get inside the root failed.
    """
    install = (_root_install(runtime, log) if runtime.kind == "debian-root"
               else _host_install(runtime, log))
    stamp = _stamp(runtime)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(stamp, (json.dumps(install.to_dict(), indent=2) + "\n").encode())
    return install


def wrap_command(install: ToolInstall, tool: str, argv: list[str], xml_path: Path
                 ) -> tuple[list[str], dict[str, str]]:
    """The argv and the extra environment that run ``argv`` under ``tool``.

    Options (valgrind's manual): ``--xml=yes --xml-file=F`` (the findings as XML),
    ``--child-silent-after-fork=yes`` (nothing from children in the XML), and for DRD
    ``--check-stack-var=no`` (its default: no races on stack variables).

    Raises:
        UsageError: ``tool`` is not one of :data:`TOOLS`.
    """
    if tool not in TOOLS:
        raise UsageError(f"unknown race detector {tool!r}",
                         f"use --detector {' or --detector '.join(TOOLS)}")
    # valgrind expands %p, %q{VAR} and %% in --xml-file (its manual, "--log-file"): a
    # literal % in the path is written %%
    options = [f"--tool={tool}", "--xml=yes",
               f"--xml-file={str(xml_path).replace('%', '%%')}",
               "--child-silent-after-fork=yes", *install.options]
    env = {**install.env, TOOL_BARRIER_ENV: "pthread", WITNESS_QUIET_ENV: "1"}
    return [*install.launcher, *options, *argv], env
