"""Bounded reads of the files the crash commands are given (issue #13: ``crash classify
/dev/zero`` grew to 9 GB): the kit's one bounded reader (:mod:`kit._bounded`) with the crash
files' limits. Only regular files are read (a device, a FIFO, a socket, a directory, or a
link to one, is refused before anything is read), and a read stops one byte past the limit.
"""

from __future__ import annotations

from pathlib import Path

from .._bounded import MiB, read_bytes_bounded
from ._text import clip

__all__ = ["MAX_CRASH_FILE_BYTES", "MAX_RULE_FILE_BYTES", "read_limited"]

#: Largest crash report read (a tombstone with every thread and the memory map is ~1 MB).
MAX_CRASH_FILE_BYTES = 64 * MiB
#: Largest rule file read.
MAX_RULE_FILE_BYTES = MiB


def read_limited(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Raises:
        UsageError: missing, unreadable, not a regular file (device, FIFO, socket,
            directory).
        DataError: larger than ``limit`` bytes.
    """
    return read_bytes_bounded(path, limit, what=what,
                              missing=f"cannot read {what} {clip(path)}: no such file",
                              missing_hint="pass files that exist")
