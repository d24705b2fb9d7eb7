"""Bounded reads of user-supplied files: only regular files, and never more than a limit.

A path that is a device (``/dev/zero``), a FIFO or a socket, or a symlink to one, is refused
before anything is read (it is opened with ``O_NONBLOCK`` so that a FIFO cannot block the
open, then checked with ``fstat``); a file over its limit is refused after reading one byte
past the limit. Lines are streamed with a per-line cap.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from .errors import DataError, UsageError

__all__ = ["check_directory_arg", "open_regular", "open_regular_if_exists", "open_regular_rw", "lstat_kind",
           "check_writable_entries",
           "read_tail_bounded", "write_atomic", "write_atomic_stream", "AtomicFile", "read_bytes_bounded", "read_json_bounded",
           "iter_lines_bounded",
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


def open_regular_rw(path: str | os.PathLike[str], what: str, mode: int = 0o644, *,
                    dir_fd: int | None = None, shown: str | None = None) -> int:
    """Open (creating it when absent) ``path`` for reading and writing, refusing anything
    that is there but a regular file, as :func:`open_regular` does (``O_NONBLOCK`` at open,
    then ``fstat``), so that a FIFO or a device in a campaign never blocks or takes a write.
    A symbolic link there is refused, never followed (``O_NOFOLLOW``): a link planted at a
    file the kit writes would have it write into the link's target. ``dir_fd``: ``path``
    is relative to that open directory (``openat``), so a directory renamed or swapped
    under the writer is not written; ``shown`` names the file in messages (default: ``path``).

    Raises:
        OSError: the open itself failed (callers decide: a full disk is not bad input).
        UsageError: it is a symbolic link, a device, FIFO, socket or directory.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=dir_fd)
    except IsADirectoryError:
        raise UsageError(f"{what} {_shown(shown or path)} is a directory",
                         "give a regular file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_error(shown or path, what) from None
        raise
    return _regular(fd, what, _shown(shown or path))


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _link_error(path: str | os.PathLike[str], what: str) -> UsageError:
    return UsageError(f"{what} {_shown(path)} is a symbolic link: the kit never writes "
                      f"through one", "remove the link (a file the kit writes is its own)")


def lstat_kind(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> str:
    """What ``path`` itself is, not following a symbolic link: ``"missing"``,
    ``"a symbolic link"``, or what :func:`path_kind` says (``"a regular file"``, ``"a
    directory"``, ``"a FIFO"``, ...)."""
    try:
        mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError):
        return "unreadable"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a regular file" if stat.S_ISREG(mode) else _kind(mode)


def check_writable_entries(directory: str | os.PathLike[str], names: Iterable[str],
                           flag: str = "--out") -> None:
    """Refuse ``directory`` when an entry the kit writes there (``names``) is a symbolic
    link, a FIFO, a device or a socket (a directory where a file belongs is named too):
    writing would land in the link's target, block, or reach a device.

    Raises:
        UsageError: one line naming the entry and what it is.
    """
    for name in names:  # "name/": a directory belongs there (lstat without the slash)
        bare = name.rstrip("/")
        want = "a directory" if name.endswith("/") else "a regular file"
        kind = lstat_kind(os.path.join(directory, bare))
        if kind in ("missing", want):
            continue
        raise UsageError(f"{_shown(os.path.join(directory, bare))} is {kind}, not {want}: "
                         f"the kit writes it, never through a link, a FIFO or a device",
                         f"remove it, or choose another {flag}")


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


#: the most bytes of a small JSON file the kit wrote and reads back (runtime.json, a stamp)
JSON_LIMIT = 4 * MiB


def read_json_bounded(path: str | os.PathLike[str], *, what: str, hint: str,
                      limit: int = JSON_LIMIT, missing: str | None = None,
                      missing_hint: str = "check the path") -> object:
    """The parsed content of a JSON file the kit wrote and reads back, read as
    :func:`read_bytes_bounded` (never more than ``limit`` bytes; a FIFO or device refused
    before any read, so it never blocks).

    Raises:
        UsageError: see :func:`open_regular` (a missing file: ``missing``, when given).
        DataError: larger than ``limit``, or not JSON (truncated, not UTF-8, too deep);
            ``hint`` says how to make it again.
    """
    data = read_bytes_bounded(path, limit, what=what, missing=missing,
                              missing_hint=missing_hint)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise DataError(f"{what} {_shown(path)} is not valid JSON ({why})", hint) from None


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


def write_atomic(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically; the one way the kit writes a whole file
    (:class:`AtomicFile`, written in one piece).

    Raises:
        UsageError, OSError: as :class:`AtomicFile`.
    """
    out = AtomicFile(path, durable=durable)
    try:
        out.write(data)
    except BaseException:
        out.discard()
        raise
    out.commit()


def write_atomic_stream(path: str | os.PathLike[str], chunks: Iterable[bytes], *,
                        durable: bool = True) -> None:
    """Replace ``path`` with the bytes of ``chunks`` (an iterable, consumed once, so a
    large artifact is never held whole) atomically, through :class:`AtomicFile`.

    Raises:
        UsageError, OSError: as :class:`AtomicFile`.
    """
    out = AtomicFile(path, durable=durable)
    try:
        for data in chunks:
            out.write(data)
    except BaseException:
        out.discard()
        raise
    out.commit()


class AtomicFile:
    """A file that replaces ``path`` whole or not at all, written in pieces (a file too large
    to hold, such as a repaired ``launches.jsonl``); :func:`write_atomic` writes one piece.

    The content goes to ``<path>.tmp``: whatever is left by that name (a temp file of a run
    killed mid-write, a symbolic link, a FIFO) is unlinked first, never followed or
    opened, and the file is made with ``O_CREAT | O_EXCL | O_NOFOLLOW``, so the write never
    blocks or lands elsewhere. :meth:`commit` fsyncs it (``durable``), then renames it over
    ``path``, which replaces a link at ``path`` rather than writing through it;
    :meth:`discard` removes it. A write that fails names ``path``.

    Raises:
        UsageError: ``<path>.tmp`` or ``path`` is a directory, or ``path`` is a FIFO, a
            device or a socket (the rename would replace it: ``--out /dev/null`` must not
            turn the machine's ``/dev/null`` into a file).
        OSError: the write or the rename failed (a full disk: ``filename`` is ``path``).
    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True) -> None:
        target = os.fspath(path)
        tmp = f"{target}.tmp"
        kind = lstat_kind(target)
        if kind == "a directory":
            raise UsageError(f"{_shown(target)} is a directory, not a file the kit can write",
                             "remove it, or choose another directory")
        if kind not in ("missing", "a regular file", "a symbolic link", "unreadable"):
            raise UsageError(f"{_shown(target)} is {kind}, not a file the kit can write",
                             "choose a path for a regular file")
        fd = -1
        for _ in range(5):  # a link put back between unlink and open: unlinked again
            if lstat_kind(tmp) == "a directory":
                raise UsageError(f"{_shown(tmp)} is a directory in the place of a temporary "
                                 f"file", "remove it")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
                             | getattr(os, "O_CLOEXEC", 0), 0o644)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, target) from None
        if fd < 0:
            raise UsageError(f"{_shown(tmp)} keeps being made by another process",
                             "stop whatever writes it")
        self.path, self.tmp, self.durable = target, tmp, durable
        self._fh: BinaryIO | None = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        """Append ``data`` (a short write is written on, never taken for the whole)."""
        assert self._fh is not None, "written after commit or discard"
        try:
            view = memoryview(data)
            while view:
                view = view[self._fh.write(view):]
        except OSError as exc:
            raise self._named(exc) from None

    def commit(self) -> None:
        """Flush, fsync (``durable``) and rename over ``path``; on failure, discard."""
        assert self._fh is not None, "committed after commit or discard"
        try:
            self._fh.flush()
            if self.durable:
                os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
            os.replace(self.tmp, self.path)
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise self._named(exc) from None
            raise

    def discard(self) -> None:
        """Close and remove the temporary file (``path`` is left as it was)."""
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)

    def _named(self, exc: OSError) -> OSError:
        return exc if exc.filename else OSError(exc.errno, exc.strerror, self.path)


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


def check_directory_arg(path: Path, flag: str) -> None:
    """Refuse a directory option that cannot become a directory: empty, or the path (or the
    nearest part of it that exists) is not a directory.

    Raises:
        UsageError: ``flag is empty``, ``flag PATH is a file`` or ``... PART is a file``.
    """
    if not str(path).strip():
        raise UsageError(f"{flag} is empty", "give a directory")
    for part in (path, *path.parents):
        if path_kind(part) != "missing":
            if path_kind(part) != "a directory":
                what = f"{flag} {path} {describe_path(part)}" if part == path else \
                    f"{flag} {path} cannot be made: {part} {describe_path(part)}"
                raise UsageError(what, "choose a directory")
            return
