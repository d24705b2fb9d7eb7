"""The end of a process that is not the kit's child, as an event (no polling).

A simulator's app is an ordinary process of the Mac that runs the simulator (launchd_sim
starts it; ``ps`` lists it), so its pid, which ``simctl launch`` prints and every
``log stream`` record carries (``processID``), can be watched from the host:

* macOS and BSD: ``kqueue`` with ``EVFILT_PROC`` / ``NOTE_EXIT`` (``man 2 kqueue``);
* Linux 5.3+: a pidfd (``pidfd_open(2)``), readable once the process has ended.

:meth:`ProcessWatch.start` returns ``None`` where neither exists; the caller then falls back
to asking the simulator (``launchctl list``).
"""

from __future__ import annotations

import os
import select
import threading
from typing import Any, Callable

#: ``select`` untyped for its kqueue names, which exist on macOS and the BSDs only (the
#: type checker reads the module of the platform it runs on)
_kq: Any = select

__all__ = ["ProcessWatch"]


class ProcessWatch:
    """Calls ``on_exit`` once when process ``pid`` ends; :attr:`exited` is set then.

    Use :meth:`start`; :meth:`stop` ends the watch (idempotent).
    """

    def __init__(self, pid: int, on_exit: Callable[[], None]) -> None:
        self.pid = pid
        self.on_exit = on_exit
        self.exited = threading.Event()
        self._cancel_r, self._cancel_w = os.pipe()
        self._source: Any = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @classmethod
    def start(cls, pid: int, on_exit: Callable[[], None]) -> "ProcessWatch | None":
        """Watch ``pid``. A process that is already gone (or not visible from here: the
        caller tells the two apart) gives a watch whose :attr:`exited` is set at once.

        Returns:
            The watch, or ``None`` when this platform gives no process-exit event or the
            process may not be watched (``PermissionError``).
        """
        if hasattr(os, "pidfd_open"):
            opener = cls._open_pidfd
        elif hasattr(select, "kqueue") and hasattr(select, "KQ_NOTE_EXIT"):
            opener = cls._open_kqueue
        else:
            return None
        watch = cls(pid, on_exit)
        try:
            watch._source = opener(watch)
        except ProcessLookupError:
            watch._finish()
            return watch
        except OSError:  # EPERM, ENOSYS (an old kernel), EMFILE: no event source here
            watch._close_pipe()
            return None
        watch._thread = threading.Thread(target=watch._wait, daemon=True,
                                         name=f"pid-watch-{pid}")
        watch._thread.start()
        return watch

    def _open_pidfd(self) -> Any:
        return ("pidfd", os.pidfd_open(self.pid))  # type: ignore[attr-defined]

    def _open_kqueue(self) -> Any:
        kq = _kq.kqueue()
        try:
            kq.control([_kq.kevent(self.pid, filter=_kq.KQ_FILTER_PROC,
                                      flags=_kq.KQ_EV_ADD | _kq.KQ_EV_ONESHOT,
                                      fflags=_kq.KQ_NOTE_EXIT),
                        _kq.kevent(self._cancel_r, filter=_kq.KQ_FILTER_READ,
                                      flags=_kq.KQ_EV_ADD)], 0)
        except OSError:
            kq.close()
            raise
        return ("kqueue", kq)

    def _wait(self) -> None:
        kind, handle = self._source
        ended = False
        try:
            if kind == "pidfd":
                ready, _w, _x = select.select([handle, self._cancel_r], [], [])
                ended = handle in ready
            else:
                events = handle.control(None, 2, None)
                ended = any(e.filter == _kq.KQ_FILTER_PROC for e in events)
        except (OSError, ValueError):
            ended = False
        if ended:
            self._finish()

    def ended(self) -> bool:
        """Whether the process has ended, checked now instead of when the watch's thread
        gets to it: a pidfd is polled with no wait; with kqueue, ``kill(pid, 0)`` fails
        once the process is gone (launchd reaps its children at once). Never raises."""
        if self.exited.is_set():
            return True
        if self._source is None or self._closed:
            return False
        kind, handle = self._source
        if kind == "pidfd":
            try:
                return bool(select.select([handle], [], [], 0)[0])
            except (OSError, ValueError):
                return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # EPERM: it exists, owned by someone else
            return False
        return False

    def _finish(self) -> None:
        self.exited.set()
        try:
            self.on_exit()
        except Exception:  # noqa: BLE001 - a wake-up must never kill the watch thread
            pass

    def _close_pipe(self) -> None:
        for fd in (self._cancel_r, self._cancel_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def stop(self) -> None:
        """End the watch and release its descriptors."""
        if self._closed:
            return
        self._closed = True
        try:
            os.write(self._cancel_w, b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(2)
        if self._source is not None:
            kind, handle = self._source
            try:
                handle.close() if kind == "kqueue" else os.close(handle)
            except OSError:
                pass
        self._close_pipe()
