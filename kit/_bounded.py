"""Bounded reads of user-supplied files: only regular files, and never more than a limit.

A path that is a device (``/dev/zero``), a FIFO or a socket, or a symlink to one, is refused
before anything is read (it is opened with ``O_NONBLOCK`` so that a FIFO cannot block the
open, then checked with ``fstat``); a file over its limit is refused after reading one byte
past the limit. Lines are streamed with a per-line cap.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Iterator

from .errors import DataError, UsageError

__all__ = ["open_regular", "open_regular_if_exists", "open_regular_rw",
           "read_tail_bounded", "write_atomic", "read_bytes_bounded", "iter_lines_bounded",
           "path_kind", "describe_path", "MiB", "Line"]

MiB = 1024 * 1024
_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def path_kind(path: str | os.PathLike[str]) -> str:
    """What ``path`` is, following symlinks: ``"missing"`` (nothing there, or a dangling
    link), ``"a directory"``, ``"a character device"``, ``"a block device"``, ``"a FIFO"``,
    ``"a socket"`` or ``"a regular file"`` (``"unreadable"`` when it cannot be looked at).
    Never opens it (``stat(2)`` only), so it never blocks."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError):
        return "unreadable"
    return "a regular file" if stat.S_ISREG(mode) else _kind(mode)


def describe_path(path: str | os.PathLike[str]) -> str:
    """:func:`path_kind` as the end of a sentence about ``path``: ``"does not exist"``,
    ``"is a FIFO"``, ``"is a character device"``, ``"is a directory"``, ...; messages that
    refuse a path say what it is with this, so every command words it alike (a regular
    file: ``"is a file"``)."""
    kind = path_kind(path)
    if kind == "missing":
        return "does not exist"
    if kind == "unreadable":
        return "cannot be read"
    return "is a file" if kind == "a regular file" else f"is {kind}"


def _shown(path: str | os.PathLike[str]) -> str:
    text = str(path)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text)} characters)"


def open_regular(path: str | os.PathLike[str], what: str, *, missing: str | None = None,
                 missing_hint: str = "check the path") -> int:
    """Open ``path`` read-only and return its descriptor, refusing anything but a regular
    file.

    Raises:
        UsageError: it does not exist (``missing`` is then the message), cannot be read, or
            is a device, FIFO, socket or directory (messages cut long paths).
    """
    fd = _open_checked(path, what, missing, missing_hint, allow_missing=False)
    assert fd is not None
    return fd


def _open_checked(path: str | os.PathLike[str], what: str, missing: str | None,
                  missing_hint: str, *, allow_missing: bool) -> int | None:
    shown = _shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        if allow_missing:
            return None
        raise UsageError(missing or f"{what} {shown} does not exist", missing_hint) from None
    except IsADirectoryError:
        raise UsageError(f"{what} {shown} is a directory", "give a regular file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {shown}: {exc.strerror or exc}",
                         "check the path and its permissions") from None
    return _regular(fd, what, shown)


def _regular(fd: int, what: str, shown: str) -> int:
    """``fd`` in blocking mode when it is a regular file; else closed, and UsageError."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UsageError(f"{what} {shown} is {_kind(mode)}, not a regular file",
                         "give a regular file")
    os.set_blocking(fd, True)
    return fd


def open_regular_if_exists(path: str | os.PathLike[str], what: str) -> int | None:
    """:func:`open_regular`, but ``None`` when nothing is there (a file a reader may find
    absent, such as a new campaign's lock or records). Raises as :func:`open_regular`."""
    return _open_checked(path, what, None, "check the path", allow_missing=True)


def open_regular_rw(path: str | os.PathLike[str], what: str, mode: int = 0o644) -> int:
    """Open (creating it when absent) ``path`` for reading and writing, refusing anything
    that is there but a regular file, as :func:`open_regular` does (``O_NONBLOCK`` at open,
    then ``fstat``), so that a FIFO or a device in a campaign never blocks or takes a write.

    Raises:
        OSError: the open itself failed (callers decide: a full disk is not bad input).
        UsageError: it is a device, FIFO, socket or directory.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0), mode)
    except IsADirectoryError:
        raise UsageError(f"{what} {_shown(path)} is a directory",
                         "give a regular file") from None
    return _regular(fd, what, _shown(path))


def read_bytes_bounded(path: str | os.PathLike[str], limit: int, *, what: str = "file",
                       missing: str | None = None, missing_hint: str = "check the path"
                       ) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes.

    Raises:
        UsageError: see :func:`open_regular`.
        DataError: the file is larger than ``limit``.
    """
    fd = open_regular(path, what, missing=missing, missing_hint=missing_hint)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise DataError(f"{what} {_shown(path)} is larger than {_size(limit)}",
                        "is it the right file? it is refused rather than read whole")
    return data


def read_tail_bounded(path: str | os.PathLike[str], limit: int, *, what: str = "file"
                      ) -> bytes:
    """The last ``limit`` bytes (or fewer) of a regular file: for an artifact read back, such
    as a launch's stderr, of which only the end matters however long it grew.

    Raises:
        UsageError: see :func:`open_regular`.
    """
    fd = open_regular(path, what)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - limit))
        return fh.read(limit)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: written to ``<path>.tmp`` (a leftover by
    that name, a FIFO included, is removed first and the file made with ``O_EXCL``, so the
    write never blocks or lands elsewhere), fsynced, then renamed over ``path``.

    Raises:
        OSError: the write or the rename failed (the temporary file is removed).
    """
    tmp = f"{os.fspath(path)}.tmp"
    if path_kind(tmp) not in ("missing", "a directory"):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _size(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n} bytes"


class Line:
    """One line of :func:`iter_lines_bounded`: ``number`` (1-based), ``data`` (without the
    newline; empty when ``too_long``), ``too_long`` (the line was over the cap and skipped),
    ``complete`` (False for a last line with no newline: cut by ``kill -9`` mid-write)."""

    __slots__ = ("number", "data", "too_long", "complete")

    def __init__(self, number: int, data: bytes, too_long: bool, complete: bool) -> None:
        self.number = number
        self.data = data
        self.too_long = too_long
        self.complete = complete


def iter_lines_bounded(path: str | os.PathLike[str], max_line: int, *, what: str = "file",
                       chunk: int = 1 << 16) -> Iterator[Line]:
    """Stream the lines of a regular file, none held longer than ``max_line`` bytes.

    Raises:
        UsageError: see :func:`open_regular` (a missing file is an error here; callers that
            accept one check first).
    """
    fd = open_regular(path, what)
    number = 0
    with os.fdopen(fd, "rb") as fh:
        buf = bytearray()
        skipping = False
        while True:
            block = fh.read(chunk)
            if not block:
                break
            start = 0
            while True:
                nl = block.find(b"\n", start)
                if nl < 0:
                    if not skipping:
                        buf += block[start:]
                        if len(buf) > max_line:
                            skipping = True
                            buf.clear()
                    break
                number += 1
                if skipping:
                    yield Line(number, b"", True, True)
                    skipping = False
                else:
                    buf += block[start:nl]
                    if len(buf) > max_line:
                        yield Line(number, b"", True, True)
                    else:
                        yield Line(number, bytes(buf), False, True)
                buf.clear()
                start = nl + 1
        if skipping or buf:
            number += 1
            yield Line(number, b"" if skipping else bytes(buf), skipping, False)
