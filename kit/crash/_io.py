"""Bounded reads of the files the crash commands are given (issue #13: ``crash classify
/dev/zero`` grew to 9 GB).

Only regular files are read: a device (``/dev/zero``), a FIFO, a socket or a directory is
refused before it is opened (``stat`` follows symlinks, so a link to ``/dev/zero`` is
refused too; opening a FIFO would block). A file over its limit is refused, and the read
itself stops one byte past the limit, so a file that grows while it is read cannot exhaust
memory either.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import DataError, UsageError
from ._text import clip

__all__ = ["MAX_CRASH_FILE_BYTES", "MAX_RULE_FILE_BYTES", "read_limited", "check_regular_file"]

#: Largest crash report read (a tombstone with every thread and the memory map is ~1 MB).
MAX_CRASH_FILE_BYTES = 64 * 1024 * 1024
#: Largest rule file read.
MAX_RULE_FILE_BYTES = 1024 * 1024

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def check_regular_file(path: str | Path, what: str) -> os.stat_result:
    """``os.stat`` of ``path``, or :class:`UsageError` when it is missing or not a regular
    file (one line naming the path, cut to 200 characters)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {clip(path)}: {exc.strerror or exc}",
                         "pass files that exist") from None
    for test, kind in _KINDS:
        if test(info.st_mode):
            raise UsageError(f"{what} {clip(path)} is {kind}, not a regular file",
                             "pass a regular file")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{what} {clip(path)} is not a regular file",
                         "pass a regular file")
    return info


def read_limited(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Raises:
        UsageError: missing, unreadable, not a regular file (device, FIFO, socket,
            directory).
        DataError: larger than ``limit`` bytes.
    """
    info = check_regular_file(path, what)
    too_big = DataError(f"{what} {clip(path)} is larger than {limit // (1024 * 1024)} MiB",
                        f"pass a {what} file under {limit // (1024 * 1024)} MiB (cut it to "
                        "the crashing thread)")
    if info.st_size > limit:
        raise too_big
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {what} {clip(path)}: {exc.strerror or exc}",
                         "pass files that are readable") from None
    if len(data) > limit:
        raise too_big
    return data
