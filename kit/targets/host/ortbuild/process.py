"""Running a build's commands inside the Debian root, and the one-build-per-root lock.

Every command (``apt-get``, ``cmake``, ``ninja`` and the compilers it starts) is a child in a
session of its own (setsid(2): a terminal's SIGINT or SIGHUP reaches the kit, never the
build directly), with a parent-death signal (prctl(2) ``PR_SET_PDEATHSIG``, SIGTERM): when
the kit dies, however it dies (``kill -9``, SIGTERM, SIGHUP, ``timeout``), its direct child
gets SIGTERM. ``chroot`` execs the command in the same process, so the signal reaches
``ninja`` itself, which on SIGTERM sends it on to the process group of every command it runs
and stops (ninja's ``SubprocessSet``). When the kit stops on its own (Ctrl-C, an error) it
sends SIGTERM to the child's group, then SIGKILL after :data:`STOP_GRACE_S`.

The lock (:func:`hold_build_lock`) is an ``flock`` on ``<root>/opt/coldstart-ort/.lock``;
its file descriptor is handed to every child (``pass_fds``), and the compilers inherit it
from ninja, so the lock is held until the last process of a build is gone: a second
``build-ort`` waits for a killed one's compilers instead of running a second ninja in the
same tree.
"""

from __future__ import annotations

import ctypes
import dataclasses
import fcntl
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Callable, Iterable, Protocol, Sequence

__all__ = ["Executor", "ChrootExecutor", "hold_build_lock", "parse_ninja_status",
           "BuildProgress", "format_progress", "minutes", "NINJA_STATUS", "STOP_GRACE_S"]

#: seconds between SIGTERM and SIGKILL when the kit stops a build it started
STOP_GRACE_S = 10.0
_PR_SET_PDEATHSIG = 1


class Executor(Protocol):
    """Runs commands where the build lives: ``host(inner)`` is the host path of an inner path
    (``/opt/coldstart-ort/...``); ``run`` writes the command and its output to ``log`` and
    returns the exit status; ``stream`` yields the output lines as they come, then the
    status as an ``int``. ``hold_fds`` are file descriptors every child keeps open (the
    build lock)."""

    hold_fds: tuple[int, ...]

    def host(self, inner: str) -> Path: ...

    def run(self, argv: Sequence[str], log: Path, cwd: str | None = None,
            stdin: bytes | None = None) -> int: ...

    def stream(self, argv: Sequence[str], log: Path, cwd: str | None = None,
               env: dict[str, str] | None = None) -> Iterable[str | int]: ...


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() == 1:  # the kit died before prctl: do not start at all
        os._exit(1)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the child's group (ninja passes it on), SIGKILL after the grace."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


class ChrootExecutor:
    """:class:`Executor` inside a Debian root, through ``chroot(8)`` (needs root)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.hold_fds: tuple[int, ...] = ()

    def host(self, inner: str) -> Path:
        return self.root / inner.lstrip("/")

    def _argv(self, argv: Sequence[str], cwd: str | None) -> list[str]:
        if cwd is None:
            return ["chroot", str(self.root), *argv]
        return ["chroot", str(self.root), "/usr/bin/env", "-C", cwd, *argv]

    def _popen(self, argv: Sequence[str], cwd: str | None, **kw) -> subprocess.Popen:
        return subprocess.Popen(self._argv(argv, cwd), start_new_session=True,
                                preexec_fn=_die_with_parent, pass_fds=self.hold_fds, **kw)

    def run(self, argv: Sequence[str], log: Path, cwd: str | None = None,
            stdin: bytes | None = None) -> int:
        with open(log, "ab") as out:
            out.write(f"\n$ {' '.join(argv)}\n".encode())
            out.flush()
            proc = self._popen(argv, cwd, stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.PIPE if stdin is not None else
                               subprocess.DEVNULL,
                               env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            try:
                proc.communicate(stdin)
            finally:
                if proc.poll() is None:  # Ctrl-C or an error here: stop the command too
                    _stop(proc)
        return proc.returncode

    def stream(self, argv: Sequence[str], log: Path, cwd: str | None = None,
               env: dict[str, str] | None = None) -> Iterable[str | int]:
        with open(log, "ab") as out:
            out.write(f"\n$ {' '.join(argv)}\n".encode())
            out.flush()
            proc = self._popen(argv, cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
            assert proc.stdout is not None
            try:
                for raw in proc.stdout:
                    out.write(raw)
                    out.flush()
                    yield raw.decode("utf-8", "replace").rstrip("\n")
            finally:
                if proc.poll() is None:  # the caller stopped (Ctrl-C): stop the build too
                    _stop(proc)
                proc.stdout.close()
                yield proc.wait()


def hold_build_lock(base: Path, log: Callable[[str], None]) -> int:
    """Take the root's build lock (``base/.lock``, waiting for a running build), returning
    its file descriptor: hand it to the executor's ``hold_fds`` and close it when done."""
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another build-ort is running in this root (or its compilers are still "
                "stopping): waiting for it")
            fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


NINJA_STATUS = "[coldstart %f/%t] "
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


def minutes(seconds: float) -> str:
    """``12m05s``."""
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def format_progress(progress: BuildProgress) -> str:
    """``compile 123/547 files, 10m05s elapsed, about 34m40s left`` (one line)."""
    left = progress.left_s
    tail = f", about {minutes(left)} left" if left is not None else ""
    return (f"compile {progress.done}/{progress.total} files, "
            f"{minutes(progress.elapsed_s)} elapsed{tail}")
