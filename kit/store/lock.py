"""The one writer of a campaign directory (docs/design.md: two processes never write one
campaign).

The writer holds an exclusive ``flock(2)`` on the campaign directory itself and on its
``.coldstart.lock`` file, which holds the writer's pid for messages. The directory's lock is
what keeps a second writer out when the file is removed or replaced (a cleanup job, ``rsync
--delete``, a network filesystem); the file's lock is what older readers ask. The file is
opened relative to the locked directory with ``O_NOFOLLOW``, so a link planted there is
refused, never written through. :meth:`CampaignLock.check` asks, before each write, that the
paths still name the locked directory and file (device and inode): a writer whose lock is
gone stops (exit 3) instead of writing on beside another writer.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from .._bounded import describe_path, open_regular_if_exists, open_regular_rw, path_kind
from ..errors import InfraError, UsageError

__all__ = ["CampaignLock", "LOCK_NAME"]

LOCK_NAME = ".coldstart.lock"


class CampaignLock:
    """The writer's lock on the campaign directory ``path`` (module doc). Not thread-safe:
    one per store, taken and released by the thread that runs the campaign."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path / LOCK_NAME
        self._fd: int | None = None
        self._dir_fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether :meth:`take` succeeded and :meth:`release` was not called since."""
        return self._fd is not None

    @property
    def dir_fd(self) -> int | None:
        """The locked directory's descriptor while held (files are opened relative to it)."""
        return self._dir_fd

    def take(self) -> None:
        """Become the campaign's one writer, held until :meth:`release` or the process ends
        (``kill -9`` included): an exclusive ``flock`` on the campaign directory itself (so
        that removing or replacing ``.coldstart.lock`` lets no second writer in) and on
        ``.coldstart.lock`` (opened relative to the locked directory, never through a
        link), which holds the pid. After the locks are taken, the paths must still name
        the locked directory and file (same device and inode); :meth:`check` asks
        again before each append.

        Raises:
            UsageError: another process holds it (its pid is named), or the lock file is a
                link, a FIFO, a device or a directory.
        """
        if self._fd is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            dir_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY
                             | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise UsageError(f"cannot open campaign directory {self.path}: "
                             f"{exc.strerror or exc}",
                             "check the directory's permissions") from None
        try:
            fd = self._take(dir_fd)
        except BaseException:
            os.close(dir_fd)
            raise
        self._dir_fd, self._fd = dir_fd, fd
        try:
            self.check()
        except InfraError as exc:
            self.release()
            raise UsageError(exc.message, "try again; two processes never write one "
                                          "campaign") from None

    def _take(self, dir_fd: int) -> int:
        """Both locks (directory, then file); the lock file's descriptor."""
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise self._held_error(self._holder()) from None
        except OSError as exc:  # a filesystem that cannot lock a directory: the file's lock
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF):
                raise  # and the identity checks still hold
        try:
            fd = open_regular_rw(LOCK_NAME, "lock file", dir_fd=dir_fd,
                                 shown=str(self.lock_path))
        except OSError as exc:
            raise UsageError(f"cannot open lock file {self.lock_path}: "
                             f"{exc.strerror or exc}",
                             "check the directory's permissions") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # an older coldstart that locks only the file
            holder = _read_pid(fd)
            os.close(fd)
            raise self._held_error(holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd

    def _held_error(self, holder: int | None) -> UsageError:
        who = f"pid {holder}" if holder else "another process"
        return UsageError(f"{self.path} is being written by another coldstart ({who})",
                          "wait for it to finish, or stop it; two processes never write "
                          "one campaign")

    def _holder(self) -> int | None:
        """The pid in the lock file, read without following a link (``None``: none)."""
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_NONBLOCK
                         | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            return _read_pid(fd) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        finally:
            os.close(fd)

    def check(self) -> None:
        """Check that this writer still holds the campaign: the directory's path and
        ``.coldstart.lock`` still name what it locked (a lock file removed, replaced by
        another file or a directory, or a directory moved away fails).

        Raises:
            InfraError: the lock is gone (exit 3): nothing more is written.
        """
        if self._fd is None or self._dir_fd is None:
            return
        lost = None
        mine = os.fstat(self._fd)
        try:
            there = os.stat(LOCK_NAME, dir_fd=self._dir_fd, follow_symlinks=False)
            if (there.st_dev, there.st_ino) != (mine.st_dev, mine.st_ino):
                lost = f"{self.lock_path} was replaced"
        except FileNotFoundError:
            lost = f"{self.lock_path} was removed"
        if lost is None:
            d = os.fstat(self._dir_fd)
            try:
                now = os.stat(self.path)
                if (now.st_dev, now.st_ino) != (d.st_dev, d.st_ino):
                    lost = f"{self.path} was replaced by another directory"
            except OSError:
                lost = f"{self.path} was moved or removed"
        if lost:
            raise InfraError(f"lost the campaign's lock: {lost} while this coldstart "
                             f"(pid {os.getpid()}) was writing it; nothing more is written",
                             "make sure no cleanup job touches a campaign being written, "
                             "then go on with --resume")

    def release(self) -> None:
        """Release :meth:`take` (the lock file stays: an empty lock is harmless)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    def writer_pid(self) -> int | None:
        """The pid of a process writing this campaign now, else ``None`` (never blocks):
        the directory's lock is asked first (it holds when the lock file was removed),
        then the lock file's (an older coldstart's).

        Raises:
            UsageError: the lock file is a device, FIFO, socket or directory.
        """
        if path_kind(self.lock_path) not in ("a regular file", "missing", "unreadable"):
            kind = describe_path(self.lock_path)
            raise UsageError(f"lock file {self.lock_path} {kind}, not a regular file",
                             "remove it: a campaign's lock is a small file the kit makes")
        with contextlib.suppress(OSError):
            dir_fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY
                             | getattr(os, "O_CLOEXEC", 0))
            try:
                fcntl.flock(dir_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._holder() or -1
            finally:
                os.close(dir_fd)
        try:
            fd = open_regular_if_exists(self.lock_path, "lock file")
        except UsageError:
            return None  # a lock this user may not read: no writer of ours holds it
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or -1
        finally:
            os.close(fd)
        return None


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
