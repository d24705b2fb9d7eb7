"""Bounded reads of user-supplied files: only regular files, and never more than a limit.

A path that is a device (``/dev/zero``), a FIFO or a socket, or a symlink to one, is refused
before anything is read (it is opened with ``O_NONBLOCK`` so that a FIFO cannot block the
open, then checked with ``fstat``); a file over its limit is refused after reading one byte
past the limit. Lines are streamed with a per-line cap.
"""

from __future__ import annotations

import os
import stat
from typing import Iterator

from .errors import DataError, UsageError

__all__ = ["open_regular", "read_bytes_bounded", "iter_lines_bounded", "MiB", "Line"]

MiB = 1024 * 1024
_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


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
    shown = _shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(missing or f"{what} {shown} does not exist", missing_hint) from None
    except IsADirectoryError:
        raise UsageError(f"{what} {shown} is a directory", "give a regular file") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {shown}: {exc.strerror or exc}",
                         "check the path and its permissions") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UsageError(f"{what} {shown} is {_kind(mode)}, not a regular file",
                         "give a regular file")
    os.set_blocking(fd, True)
    return fd


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
