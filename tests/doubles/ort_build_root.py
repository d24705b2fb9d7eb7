"""A Debian root for ``kit.targets.host.ortbuild`` tests: runs the build's commands on the
host, in a temporary folder that stands for the root, with small stand-ins for the tools
that would take the real build 40 minutes.

What each stand-in imitates (recorded from a real ``coldstart runtime build-ort`` in the
Debian 13 root):

* ``apt-get update`` / ``build-dep``: exit 0; ``apt-get source --download-only PKG=VER``
  copies the files the test's archive holds for that request into the working directory and,
  as the real one does for onnxruntime 1.21 (whose ``.dsc`` answers 404), exits 100 after
  ``E: Failed to fetch ... 404  Not Found``;
* ``c++ --version``: ``c++ (Debian 14.2.0-19) 14.2.0``;
* ``cmake -G Ninja -S SRC -B BUILD ...``: writes ``BUILD/build.ninja`` listing the ``.cc``
  files under ``SRC/..`` and the flags it was given (``BUILD/flags.txt``);
* ``ninja -C BUILD -jN TARGET``: prints ninja's status lines as ``NINJA_STATUS`` asks
  (``[coldstart 3/7] Building CXX object ...``) for every ``.cc`` newer than its object, then
  links ``libonnxruntime.so.1.21.0`` (the objects concatenated) and the ``libonnxruntime.so``
  and ``.so.1`` links; ``fail_after`` stops it after that many objects with exit 1, as a
  killed or failed ninja leaves a build that the next run resumes.
  With ``-DCMAKE_PROJECT_<p>_INCLUDE=FILE`` (the kit's instrumented tree), the sources that
  FILE's ``set_property(SOURCE ...)`` names are compiled with its flag: their objects end with
  a ``// built with -fsanitize=thread`` line, and an object whose flags changed is rebuilt
  (as ninja does when an edge's command changed).
* ``tar`` and ``patch`` are the host's own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

INNER = "/opt/coldstart-ort"


class HostRootExecutor:
    """``kit.targets.host.ortbuild.Executor`` over a folder standing for the root."""

    def __init__(self, root: Path, archive: dict[str, list[Path]]) -> None:
        self.root = Path(root)
        self.archive = archive  # "pkg=version" -> files apt-get source would fetch
        self.calls: list[list[str]] = []
        self.fail_after: int | None = None
        self.compiler = "c++ (Debian 14.2.0-19) 14.2.0"
        self.hold_fds: tuple[int, ...] = ()

    def host(self, inner: str) -> Path:
        return self.root / inner.lstrip("/")

    def _map(self, arg: str) -> str:
        for prefix in (INNER, "/etc/apt"):
            if arg.startswith(prefix):
                return str(self.host(arg))
            if arg.startswith("-D") and prefix in arg:
                key, _, value = arg.partition("=")
                return f"{key}={self.host(value)}" if value.startswith(prefix) else arg
        return arg

    def run(self, argv: Sequence[str], log: Path, cwd: str | None = None,
            stdin: bytes | None = None) -> int:
        status, out = self._run(list(argv), cwd, stdin)
        with open(log, "ab") as fh:
            fh.write(f"\n$ {' '.join(argv)}\n".encode() + out)
        return status

    def stream(self, argv: Sequence[str], log: Path, cwd: str | None = None,
               env: dict[str, str] | None = None) -> Iterable[str | int]:
        self.calls.append(list(argv))
        lines, status = self._ninja([self._map(a) for a in argv], (env or {}).get(
            "NINJA_STATUS", "[%f/%t] "))
        with open(log, "ab") as fh:
            fh.write(f"\n$ {' '.join(argv)}\n".encode())
            for line in lines:
                fh.write(line.encode() + b"\n")
                yield line
        yield status

    def _run(self, argv: list[str], cwd: str | None, stdin: bytes | None) -> tuple[int, bytes]:
        self.calls.append(argv)
        args = [self._map(a) for a in argv]
        where = str(self.host(cwd)) if cwd else None
        if args[0] == "apt-get":
            return self._apt(args, where)
        if args[0] == "c++":
            return 0, (self.compiler + "\n").encode()
        if args[0] == "cmake":
            source, build = Path(args[args.index("-S") + 1]), Path(args[args.index("-B") + 1])
            if not source.is_dir():
                return 1, b"CMake Error: The source directory does not exist.\n"
            build.mkdir(parents=True, exist_ok=True)
            (build / "flags.txt").write_text("\n".join(args[args.index("-B") + 2:]))
            (build / "build.ninja").write_text(str(source.parent))
            return 0, b"-- Build files have been written to: " + str(build).encode() + b"\n"
        proc = subprocess.run(args, cwd=where, input=stdin, capture_output=True)
        return proc.returncode, proc.stdout + proc.stderr

    def _apt(self, args: list[str], cwd: str | None) -> tuple[int, bytes]:
        if "source" not in args:
            return 0, b"Reading package lists... Done\n"
        request = args[-1]
        files = self.archive.get(request, [])
        for path in files:
            shutil.copyfile(path, Path(cwd or ".") / path.name)
        name = request.replace("=", "_")
        return 100, (f"E: Failed to fetch http://deb.debian.org/debian/pool/main/{name}.dsc  "
                     f"404  Not Found\nE: Failed to fetch some archives.\n").encode()

    def _ninja(self, args: list[str], status_format: str) -> tuple[list[str], int]:
        build = Path(args[args.index("-C") + 1])
        if not (build / "build.ninja").exists():
            return ["ninja: error: loading 'build.ninja': No such file or directory"], 1
        tree = Path((build / "build.ninja").read_text())
        sources = sorted(tree.rglob("*.cc"))
        objects = build / "objects"
        objects.mkdir(exist_ok=True)
        flagged, flag = _instrumented(build, tree)
        todo = []
        for src in sources:
            obj = objects / (str(src.relative_to(tree)).replace("/", "_") + ".o")
            tail = f"\n// built with {flag}\n".encode() if src in flagged else b""
            if (not obj.exists() or obj.stat().st_mtime_ns < src.stat().st_mtime_ns
                    or obj.read_bytes() != src.read_bytes() + tail):
                todo.append((src, obj, tail))
        library = build / "libonnxruntime.so.1.21.0"
        total = len(todo) + (1 if todo or not library.exists() else 0)
        lines = [f"ninja: Entering directory `{build}'"]
        if total == 0:
            return lines + ["ninja: no work to do."], 0
        done = 0
        for src, obj, tail in todo:
            if self.fail_after is not None and done >= self.fail_after:
                return lines + [f"FAILED: {obj.name}", "ninja: build stopped: interrupted "
                                "by user."], 1
            obj.write_bytes(src.read_bytes() + tail)
            os.utime(obj, ns=(src.stat().st_mtime_ns + 1, src.stat().st_mtime_ns + 1))
            done += 1
            lines.append(_status(status_format, done, total)
                         + f"Building CXX object {obj.name}")
        library.write_bytes(b"".join(p.read_bytes() for p in sorted(objects.iterdir())))
        for link in ("libonnxruntime.so.1", "libonnxruntime.so"):
            if not (build / link).is_symlink():
                os.symlink(library.name if link.endswith(".1") else "libonnxruntime.so.1",
                           build / link)
        done += 1
        lines.append(_status(status_format, done, total) + "Linking CXX shared library "
                     "libonnxruntime.so.1.21.0")
        return lines, 0


def _instrumented(build: Path, tree: Path) -> tuple[set[Path], str]:
    """The sources the configure's project include instruments, and its flag."""
    flags = (build / "flags.txt").read_text().split("\n") if (build / "flags.txt").exists() \
        else []
    include = next((f.split("=", 1)[1] for f in flags
                    if f.startswith("-DCMAKE_PROJECT_") and "_INCLUDE=" in f), None)
    if include is None:
        return set(), ""
    text = Path(include).read_text()
    match = re.search(r"set_property\(SOURCE (.*?) APPEND PROPERTY COMPILE_OPTIONS \"([^\"]+)\"",
                      text)
    if match is None:
        return set(), ""
    names = re.findall(r'"([^"]+)"', match.group(1))
    # the include names inner paths, <inner tree>/src/<file>; ``tree`` is the host's src
    return {tree / n.split("/src/", 1)[1] for n in names}, match.group(2).split(";")[0]


def _status(fmt: str, done: int, total: int) -> str:
    return fmt.replace("%f", str(done)).replace("%t", str(total))


class HostChrootExecutor:
    """The kit's ``ChrootExecutor`` without the chroot: the same process handling (a
    session of its own, the parent-death signal, the held file descriptors) for commands
    run on the host, such as a real ``ninja`` in a test's folder."""

    def __new__(cls, root: Path):
        from kit.targets.host.ortbuild import ChrootExecutor

        class _OnHost(ChrootExecutor):
            def _argv(self, argv, cwd):
                return list(argv) if cwd is None else ["/usr/bin/env", "-C", cwd, *argv]

        return _OnHost(root)
