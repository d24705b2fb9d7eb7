"""FakeAndroidDevice: the scripted Android device behind :class:`FakeAdbd`.

It answers the shell commands a cold-launch loop sends (docs/formats.md section D2) the way
Android 14 does, from its own state: installed packages (``pm install -r -t`` of a pushed
APK whose sha256 the test registered), ``getprop``, ``pidof``, ``am force-stop``,
``am start -W`` (blocks until the first frame, exits 0 even on errors), ``cmd package
resolve-activity``, ``logcat`` (main/system/crash ring buffers, ``-c``, ``-d``, ``-b``,
filter specs, and following), ``dumpsys activity exit-info`` (a 16-entry ring per package,
newest first), ``dumpsys dropbox --print`` and ``setprop``/``id``/``date``/``cat``.

Each cold launch runs an :class:`AppBehaviour` picked by launch id from a shared
:class:`LaunchScript`: the app's ``COLDSTART`` lines appear on the ``ReactNativeJS`` tag on a
timeline, and a death leaves what Android leaves (``F libc`` line and tombstone summary in
the crash buffer, ``ActivityManager ... has died``, an exit-info entry, DropBox entries a
little later). A late line from the previous launch id is logged after every clear, as logd
does when a dying process's last lines are still in flight.

Everything a kit could special-case is absent: the device is driven only through adbd.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as _dt
import hashlib
import heapq
import itertools
import json
import shlex
import threading
import time
from typing import Callable

from tests.doubles import fake_adb_reports as reports
from tests.doubles.fake_adbd import Stream

__all__ = ["AppBehaviour", "LaunchScript", "FakeApp", "FakeAndroidDevice", "EXIT_INFO_RING"]

EXIT_INFO_RING = 16
_PHASES = ("start", "models-ready", "sessions-created", "inference-done", "sessions-released",
           "done")
_CRASH_SITE_AFTER = {"creation": "models-ready", "inference": "sessions-created",
                     "release": "inference-done", "teardown": "done"}
#: The tombstone's stack per crash site (a teardown crash is a late release: a session
#: freed after ``done``, e.g. by a finalizer, goes through ``xnn_destroy_operator``).
_CRASH_STACK = {"creation": "creation", "inference": "inference", "release": "release",
                "teardown": "release"}
_REASONS = {1: "EXIT_SELF", 2: "SIGNALED", 3: "LOW_MEMORY", 4: "APP CRASH(EXCEPTION)",
            5: "APP CRASH(NATIVE)", 6: "ANR", 10: "USER REQUESTED", 16: "PACKAGE UPDATED"}


@dataclasses.dataclass(frozen=True)
class AppBehaviour:
    """What one cold launch of the app does.

    Attributes:
        kind: ``completed``, ``native-crash`` (a #32461 crash at ``site``; at ``teardown``
            the app dies as it logs ``done``, so the process is gone before any reader of
            the log has the line), ``other-crash``
            (an abort in app code after ``after``), ``js-error`` (the app reports an
            ``error`` phase and stays up), ``js-fatal`` (uncaught JS error: a Java
            ``FATAL EXCEPTION``), ``js-error-fatal`` (an ``error`` line after ``after``,
            then, ``death_after_ms`` later, the uncaught JavascriptException kills the app;
            its DropBox report comes ``report_delay_s`` after that), ``hang`` (stops
            reporting after ``after``), ``vanish`` (the process is gone after ``after`` and
            leaves nothing: no log line, no exit-info entry, no report), ``drop`` (the
            device's adbd drops every connection after ``after`` for ``offline_s``; the app
            completes meanwhile; with ``reboot`` the device reboots instead, and its system
            comes up ``services_late_s`` after adbd), ``runtime-restart`` (the system server
            restarts after ``after``: the app dies with it, the activity and package
            services are missing for ``services_late_s``; same boot id), ``init-crash``
            (``Application.onCreate`` throws before the app logs any line: a Java ``FATAL
            EXCEPTION``, and ``am start -W`` reports the launch with no launch time).
        site: ``creation``, ``inference``, ``release`` or ``teardown`` (after ``done``) for
            ``native-crash``.
        after: last phase reported before the behaviour's event.
        first_frame_ms: ``am start -W`` TotalTime.
        phase_gap_ms: time between two phases.
        wrong_output: ``inference-done`` reports ``ok: false``.
        unverified: ``inference-done`` reports neither ``scores`` nor ``ok``.
        am_start: how ``am start`` fails for this launch id: ``no-service`` (``cmd: Can't
            find service: activity``, exit 20, the system down for ``services_late_s``; the
            app is not started), ``status-timeout`` (``Status: timeout``; the app runs),
            ``no-status`` (only the ``Starting:`` line; the app runs), ``no-activity-class``
            (``Error type 3`` / ``Error: Activity class {...} does not exist.``, exit 0: the
            package was replaced by a build without that activity; the app is not started),
            ``task-to-front`` (``START_TASK_TO_FRONT``: ``Warning: Activity not started, its
            current task has been brought to the front``, exit 0; no new process);
            ``None``: it works. (Strings: AOSP ActivityManagerShellCommand.runStartActivity.)
        crash_buffer: a ``js-error-fatal`` logs its FATAL EXCEPTION in the crash buffer
            (False: only DropBox has the report, later).
        log_start: ``ActivityManager`` logs ``Start proc`` for this launch.
        logcat_eof: half a phase gap after ``after`` (or the first phase), every running
            ``logcat`` follower dies as AOSP logcat does when its logd socket fails:
            ``logcat: Unexpected EOF!`` on stderr, exit status 1 (the device and the app
            go on).
        clock_back_s: half a phase gap after ``after`` (or the first phase), the device's
            wall clock is set back this many seconds (``date -s``, a network time fix);
            ``/proc/uptime`` goes on.
        foreign_build: half a phase gap after ``after``, someone else installs this app
            (same package, another build): the running process is killed with exit-info
            reason 16 ``PACKAGE UPDATED``, as ``pm install -r`` does.
        kill_server: half a phase gap after ``after``, the device calls its
            ``on_kill_server`` (the test runs ``adb kill-server`` on its server).
        kill_driver: half a phase gap after ``after``, the device calls its
            ``on_kill_driver`` (the test sends SIGKILL to the ``coldstart`` process that
            drives it); the app goes on, as an app does when its driver dies.
        logd_restart_s: half a phase gap after ``after``, logd restarts (``stop logd;
            start logd``, or logd killed by the low-memory killer): every running
            ``logcat`` ends (``logcat: Unexpected EOF!``, exit 1), the ring buffers are
            lost, and for this many seconds a new ``logcat`` is refused (liblog's connect
            to ``/dev/socket/logdr`` fails: ``logcat: Logcat read failure: Connection
            refused``, exit 1; ``logcat -c``: ``failed to clear the 'main' log``) and what
            is logged meanwhile is dropped. Exit-info, DropBox and tombstones are kept
            by other services and are written as ever.
        tombstone_late_s: a ``native-crash`` logs its ``Fatal signal`` line at once,
            but crash_dump's tombstone (the ``DEBUG`` lines, ``tombstoned``'s line) and
            the DropBox entries come this many seconds after the death (a slow or busy
            device: tombstoned queues dumps).
        uninstall: half a phase gap after ``after``, someone else removes the app (an
            MDM, ``adb uninstall``): its process is killed, ``pm path`` prints nothing,
            and its exit-info records go with it (AppExitInfoTracker drops a removed
            package's records); no crash report.
    """

    kind: str = "completed"
    site: str | None = None
    after: str | None = None
    first_frame_ms: int = 120
    phase_gap_ms: int = 40
    offline_s: float = 0.0
    reboot: bool = False
    services_late_s: float = 0.0
    wrong_output: bool = False
    unverified: bool = False
    am_start: str | None = None
    death_after_ms: int = 400
    report_delay_s: float | None = None
    crash_buffer: bool = True
    log_start: bool = True
    logcat_eof: bool = False
    clock_back_s: float = 0.0
    foreign_build: "FakeApp | None" = None
    kill_server: bool = False
    kill_driver: bool = False
    logd_restart_s: float = 0.0
    tombstone_late_s: float = 0.0
    uninstall: bool = False

    def last_phase(self) -> str:
        """The last phase this launch reports (``""``: none; ``after=""`` for ``vanish``)."""
        if (self.kind == "vanish" and self.after == "") or self.kind == "init-crash":
            return ""
        if self.kind == "native-crash":
            return _CRASH_SITE_AFTER[self.site or "creation"]
        if self.kind in ("hang", "other-crash", "js-fatal", "js-error-fatal", "vanish",
                         "runtime-restart") and self.after:
            return self.after
        return "done"

    @classmethod
    def completed(cls, **kw: object) -> "AppBehaviour":
        return cls(kind="completed", **kw)  # type: ignore[arg-type]

    @classmethod
    def native_crash(cls, site: str = "creation", **kw: object) -> "AppBehaviour":
        return cls(kind="native-crash", site=site, **kw)  # type: ignore[arg-type]

    @classmethod
    def hang(cls, after: str = "models-ready", **kw: object) -> "AppBehaviour":
        return cls(kind="hang", after=after, **kw)  # type: ignore[arg-type]

    @classmethod
    def drop(cls, after: str = "models-ready", offline_s: float = 1.0, reboot: bool = False,
             **kw: object) -> "AppBehaviour":
        return cls(kind="drop", after=after, offline_s=offline_s, reboot=reboot,
                   **kw)  # type: ignore[arg-type]


class LaunchScript:
    """Behaviours by launch id, shared by every device of a test (a campaign hands indices
    to whichever device is free). Unknown ids complete.

    Args:
        together: the first cold start asked of each device waits until this many devices
            have asked for one (at most ``together_s``), as devices of a farm do when a
            campaign drives them in parallel: then every device gets launches, however
            loaded the machine is. A kit that drives the devices one after another makes
            the first device wait in vain, and then does every launch there.

    Attributes:
        launched: ``(launch_id, device serial)`` for every cold start, in order.
    """

    def __init__(self, behaviours: dict[str, "AppBehaviour | tuple[AppBehaviour, ...]"]
                 | None = None,
                 default: AppBehaviour | None = None, together: int = 1,
                 together_s: float = 60.0) -> None:
        self.behaviours = dict(behaviours or {})
        self.default = default or AppBehaviour.completed()
        self.launched: list[tuple[str, str]] = []
        self.together = together
        self.together_s = together_s
        self._lock = threading.Lock()
        self._arrivals: set[str] = set()
        self._arrived = threading.Condition()

    def arrive(self, device: str) -> None:
        """A cold start was asked of ``device``: wait for ``together`` devices (see above)."""
        with self._arrived:
            self._arrivals.add(device)
            self._arrived.notify_all()
            self._arrived.wait_for(lambda: len(self._arrivals) >= self.together,
                                   self.together_s)

    def take(self, launch_id: str, device: str) -> AppBehaviour:
        """The behaviour of the next cold start of ``launch_id``: a tuple of behaviours
        gives one per attempt (the last one repeats)."""
        with self._lock:
            tries = sum(1 for made, _ in self.launched if made == launch_id)
            self.launched.append((launch_id, device))
            found = self.behaviours.get(launch_id, self.default)
            if isinstance(found, tuple):
                return found[min(tries, len(found) - 1)]
            return found

    def unused(self) -> list[str]:
        """Scripted launch ids that no ``am start`` asked for."""
        with self._lock:
            ran = {launch_id for launch_id, _ in self.launched}
        return sorted(set(self.behaviours) - ran)

    def assert_used_up(self) -> None:
        """Fail when a scripted behaviour never ran (the test did not test what it says;
        adb-shell's ``FakeTcpTransport`` checks its script the same way)."""
        unused = self.unused()
        assert not unused, f"scripted launches never made: {unused}"


@dataclasses.dataclass(frozen=True)
class FakeApp:
    """An app the device can install: ``pm install`` of a file with ``apk_sha256`` installs
    ``package`` with launcher activity ``activity`` (relative to the package) and an intent
    filter for ``scheme://`` VIEW links."""

    package: str
    apk_sha256: str
    activity: str = ".MainActivity"
    uid: int = 10187
    version_code: int = 1
    scheme: str = "coldstart"
    ort_version: str = "1.24.1"
    models: tuple[str, ...] = ("melspectrogram", "embedding_model", "hey_jarvis_v0.1")


@dataclasses.dataclass
class _Entry:
    seq: int
    buffer: str
    when: _dt.datetime
    pid: int
    tid: int
    level: str
    tag: str
    msg: str

    def line(self) -> str:
        return reports.threadtime(self.when, self.pid, self.tid, self.level, self.tag, self.msg)


_LEVELS = "VDIWEFS"


def _filter_ok(specs: list[tuple[str, str]], entry: _Entry) -> bool:
    """Logcat filter specs: the first spec naming the tag decides, else ``*``, else V."""
    default = "V"
    for tag, level in specs:
        if tag == entry.tag:
            return _LEVELS.index(entry.level) >= _LEVELS.index(level)
        if tag == "*":
            default = level
    return _LEVELS.index(entry.level) >= _LEVELS.index(default)


class FakeAndroidDevice:
    """A scripted device (see the module doc).

    Args:
        serial_hint: a name for logs and :attr:`LaunchScript.launched`.
        apps: apps ``pm install`` knows by sha256.
        script: the launch script (shared between devices).
        model, abi, sdk: ``ro.product.model``, ``ro.product.cpu.abi`` (``arm64-v8a`` or
            ``x86_64``), ``ro.build.version.sdk``.
        slowness: multiplies every app and ``am start`` time (a slow device).
        clock_offset_s: the device's wall clock minus the host's (devices disagree).
        report_delay_s: how long after a death the DropBox entries appear.
        root: ``id -u`` prints 0 (``adb root`` on an emulator or userdebug image).
        on_drop: called by a ``drop`` behaviour with ``(offline_s, reboot)``; the test wires
            it to :meth:`FakeAdbd.drop`.
        missing_tools: shell commands this image lacks (``log``, ``service``: a trimmed or
            vendor image); they answer ``inaccessible or not found``, exit 127.
        hidden_system_server: ``pidof system_server`` finds nothing (a /proc the shell
            cannot read).
        install_failure: ``pm install`` fails with this ``INSTALL_FAILED_*`` code, as
            ``PackageManagerShellCommand`` prints it (``Failure [CODE]`` on stdout, exit 1),
            e.g. ``INSTALL_FAILED_INSUFFICIENT_STORAGE`` for a full /data.
        no_boot_id: ``cat /proc/sys/kernel/random/boot_id`` fails (``Permission denied``
            on stderr, exit 1), as on some devices and emulators.
        on_kill_server: called by a ``kill_server`` behaviour.
        on_kill_driver: called by a ``kill_driver`` behaviour.
        earlier_boot_tombstone: ``(pid, ahead_s)``: the device rebooted before the
            campaign with its clock set back: DropBox keeps a SYSTEM_TOMBSTONE of an
            earlier boot (an abort in other code of this package, of ``pid``, which the new
            boot hands out again: pids start at 4000) stamped ``ahead_s`` after the
            device's present.
    """

    def __init__(self, serial_hint: str, apps: tuple[FakeApp, ...], script: LaunchScript,
                 model: str = "Pixel 8", abi: str = "arm64-v8a", sdk: int = 34,
                 slowness: float = 1.0, clock_offset_s: float = -7 * 3600 + 123.4,
                 report_delay_s: float = 0.3, root: bool = False,
                 on_drop: Callable[[float, bool], None] | None = None,
                 missing_tools: tuple[str, ...] = (), hidden_system_server: bool = False,
                 install_failure: str | None = None, no_boot_id: bool = False,
                 on_kill_server: Callable[[], None] | None = None,
                 on_kill_driver: Callable[[], None] | None = None,
                 earlier_boot_tombstone: tuple[int, float] | None = None) -> None:
        self.install_failure = install_failure
        self.no_boot_id = no_boot_id
        self.on_kill_server = on_kill_server
        self.on_kill_driver = on_kill_driver
        self.install_paths: dict[str, str] = {}  # package -> base.apk, new at each install
        self._booted_at = time.monotonic()
        self._follow_generation = 0  # bumped when every logcat follower dies
        self.missing_tools = frozenset(missing_tools)
        self.hidden_system_server = hidden_system_server
        self.name = serial_hint
        self.apps = {a.apk_sha256: a for a in apps}
        self.script = script
        self.slowness = slowness
        self.clock_offset_s = clock_offset_s
        self.report_delay_s = report_delay_s
        self.root = root
        self.on_drop = on_drop
        self.abi = abi
        self.tomb_abi = "arm64" if abi.startswith("arm64") else "x86_64"
        self.props: dict[str, str] = {
            "ro.product.model": model, "ro.product.manufacturer": "Google",
            "ro.product.cpu.abi": abi,
            "ro.product.cpu.abilist": abi + (",armeabi-v7a,armeabi" if abi.startswith("arm")
                                             else ",x86"),
            "ro.build.version.sdk": str(sdk), "ro.build.version.release": str(sdk - 20),
            "ro.build.fingerprint": f"google/shiba/shiba:{sdk - 20}/AP1A.240505.005/11677807:"
                                    "user/release-keys",
            "ro.build.type": "userdebug" if root else "user",
            "ro.debuggable": "1" if root else "0", "sys.boot_completed": "1",
            "ro.serialno": f"FAKE{abs(hash(serial_hint)) % 10**8:08d}",
        }
        self.files: dict[str, bytes] = {}
        self.installed: dict[str, FakeApp] = {}
        self.boot_id = self._new_boot_id()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._entries: list[_Entry] = []
        self._seq = itertools.count(1)
        self._pids = itertools.count(4000)
        self._tids = itertools.count(100)
        self._running: dict[str, int] = {}  # package -> pid
        self._launch_of_pid: dict[int, str] = {}
        self._last_launch: dict[str, tuple[str, int]] = {}  # package -> (launch id, pid)
        self._exit_info: dict[str, collections.deque[str]] = {}
        self._exit_raw: dict[str, collections.deque[tuple]] = {}
        self._dropbox: list[tuple[_dt.datetime, str, str]] = []
        self._tombstone_no = itertools.count(0)
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._timer_seq = itertools.count()
        self._timer_cv = threading.Condition()
        self._stop = threading.Event()
        self.commands: list[str] = []
        #: system_server's pid (ActivityManager logs under it; a runtime restart changes it)
        self.system_pid = 1400
        self._system_down_until = 0.0  # monotonic: activity/package services missing
        self._log_pids = itertools.count(21000)
        self._logd_down_until = 0.0  # monotonic: logd restarting (readers refused)
        if earlier_boot_tombstone is not None:
            self._stale_tombstone(*earlier_boot_tombstone)
        threading.Thread(target=self._timer_loop, daemon=True, name=f"{serial_hint}-timeline"
                         ).start()

    # -- plumbing ---------------------------------------------------------------------
    @staticmethod
    def _new_boot_id() -> str:
        import uuid

        return str(uuid.uuid4())

    def now(self) -> _dt.datetime:
        """The device's wall clock (local time, naive, as Android prints it)."""
        return _dt.datetime.now() + _dt.timedelta(seconds=self.clock_offset_s)

    def system_up(self) -> bool:
        """The system server's services answer (not booting, not restarting)."""
        return time.monotonic() >= self._system_down_until

    def take_system_down(self, seconds: float, booting: bool) -> None:
        """The activity and package services are missing for ``seconds`` (with
        ``booting``, ``sys.boot_completed`` is unset meanwhile too); the system server gets
        a new pid."""
        with self._lock:
            self._system_down_until = max(self._system_down_until,
                                          time.monotonic() + seconds)
            self.system_pid += 7
            if booting:
                self.props.pop("sys.boot_completed", None)

        def up() -> None:
            if self.system_up():
                with self._lock:
                    self.props["sys.boot_completed"] = "1"

        self._at(seconds + 0.01, up)

    def _no_service(self, service: str, out: Stream) -> int:
        """What ``cmd`` prints while ``service`` is not registered (exit 20)."""
        out.write(f"cmd: Can't find service: {service}\n", fd=2)
        return 20

    def banner(self) -> bytes:
        p = self.props
        return ("device::ro.product.name=shiba;ro.product.model=" + p["ro.product.model"] +
                ";ro.product.device=shiba;features=shell_v2,cmd,stat_v2,ls_v2,"
                "fixed_push_mkdir,apex,abb,fixed_push_symlink_timestamp,abb_exec,"
                "remount_shell,track_app\x00").encode()

    def close(self) -> None:
        self._stop.set()
        with self._timer_cv:
            self._timer_cv.notify_all()
        with self._lock:
            self._changed.notify_all()

    def _at(self, delay_s: float, action: Callable[[], None]) -> None:
        with self._timer_cv:
            heapq.heappush(self._timers, (time.monotonic() + delay_s, next(self._timer_seq),
                                          action))
            self._timer_cv.notify_all()

    def _timer_loop(self) -> None:
        while not self._stop.is_set():
            with self._timer_cv:
                if not self._timers:
                    self._timer_cv.wait(0.1)
                    continue
                due, _, action = self._timers[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._timer_cv.wait(min(wait, 0.1))
                    continue
                heapq.heappop(self._timers)
            action()

    def log(self, buffer: str, pid: int, tid: int, level: str, tag: str, msg: str) -> None:
        """Append one line to a ring buffer (and wake followers); dropped while logd is
        down."""
        if time.monotonic() < self._logd_down_until:
            return
        with self._lock:
            self._entries.append(_Entry(next(self._seq), buffer, self.now(), pid, tid, level,
                                        tag, msg))
            self._changed.notify_all()

    # -- ShellHandler -----------------------------------------------------------------
    def push_file(self, path: str, mode: int, data: bytes) -> str | None:
        if not path.startswith(("/data/local/tmp/", "/sdcard/")):
            return f"couldn't create file: Permission denied ({path})"
        with self._lock:
            self.files[path] = data
        return None

    def stat_file(self, path: str) -> tuple[int, int, int]:
        if path.rstrip("/") in ("/data/local/tmp", "/sdcard"):
            return 0o040771, 4096, 0
        with self._lock:
            data = self.files.get(path)
        return (0o100644, len(data), 0) if data is not None else (0, 0, 0)

    def run_shell(self, command: str, stream: Stream) -> int:
        self.commands.append(command)
        try:
            lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError as exc:
            stream.write(f"/system/bin/sh: syntax error: {exc}\n", fd=2)
            return 2
        status = 0
        argv: list[str] = []
        skip = False
        for token in tokens + [";"]:
            if token in (";", "&&", "||"):
                if argv and not skip:
                    status = self._run_one(argv, status, stream)
                argv = []
                skip = (token == "&&" and status != 0) or (token == "||" and status == 0)
                continue
            if token in ("|", "&", ">", "<"):
                stream.write("/system/bin/sh: pipes are not scripted in this double\n", fd=2)
                return 2
            argv.append(token)
        return status

    def _run_one(self, argv: list[str], last: int, out: Stream) -> int:
        argv = [a.replace("$?", str(last)) for a in argv]
        name, args = argv[0], argv[1:]
        handler = getattr(self, "_cmd_" + name.replace("-", "_"), None)
        if handler is None or name in self.missing_tools:
            out.write(f"/system/bin/sh: {name}: inaccessible or not found\n", fd=2)
            return 127
        return int(handler(args, out))

    # -- simple commands --------------------------------------------------------------
    def _cmd_echo(self, args: list[str], out: Stream) -> int:
        out.write(" ".join(args) + "\n")
        return 0

    def _cmd_true(self, args: list[str], out: Stream) -> int:
        return 0

    def _cmd_log(self, args: list[str], out: Stream) -> int:
        """``log [-p PRIORITY] [-t TAG] MESSAGE`` (toolbox): one line in the main buffer."""
        level, tag, i = "I", "log", 0
        while i < len(args) - 1 and args[i] in ("-p", "-t"):
            if args[i] == "-p":
                level = args[i + 1][:1].upper()
            else:
                tag = args[i + 1]
            i += 2
        pid = next(self._log_pids)
        self.log("main", pid, pid, level if level in _LEVELS else "I", tag,
                 " ".join(args[i:]))
        return 0

    def _cmd_service(self, args: list[str], out: Stream) -> int:
        """``service check NAME``: ``Service NAME: found`` / ``not found``."""
        if args[:1] != ["check"] or len(args) != 2:
            out.write("usage: service [-h|-?]\n       service list\n       service check "
                      "SERVICE\n", fd=2)
            return 0
        known = args[1] in ("activity", "package", "dropbox", "window")
        found = known and (self.system_up() or args[1] == "dropbox")
        out.write(f"Service {args[1]}: {'found' if found else 'not found'}\n")
        return 0

    def _cmd_id(self, args: list[str], out: Stream) -> int:
        uid = 0 if self.root else 2000
        if args == ["-u"]:
            out.write(f"{uid}\n")
        else:
            name = "root" if self.root else "shell"
            out.write(f"uid={uid}({name}) gid={uid}({name}) groups={uid}({name}) "
                      "context=u:r:shell:s0\n")
        return 0

    def _cmd_date(self, args: list[str], out: Stream) -> int:
        fmt = args[0][1:] if args and args[0].startswith("+") else "%a %b %d %H:%M:%S %Z %Y"
        out.write(self.now().strftime(fmt) + "\n")
        return 0

    def _cmd_cat(self, args: list[str], out: Stream) -> int:
        for path in args:
            if path == "/proc/sys/kernel/random/boot_id":
                if self.no_boot_id:
                    out.write(f"cat: {path}: Permission denied\n", fd=2)
                    return 1
                out.write(self.boot_id + "\n")
            elif path == "/proc/uptime":
                up = time.monotonic() - self._booted_at
                out.write(f"{up:.2f} {up * 3.7:.2f}\n")
            elif path in self.files:
                out.write(self.files[path])
            else:
                out.write(f"cat: {path}: No such file or directory\n", fd=2)
                return 1
        return 0

    def _cmd_rm(self, args: list[str], out: Stream) -> int:
        with self._lock:
            for path in (a for a in args if not a.startswith("-")):
                self.files.pop(path, None)
        return 0

    def _cmd_getprop(self, args: list[str], out: Stream) -> int:
        with self._lock:
            if args:
                out.write(self.props.get(args[0], "") + "\n")
            else:
                out.write("".join(f"[{k}]: [{v}]\n" for k, v in sorted(self.props.items())))
        return 0

    def _cmd_setprop(self, args: list[str], out: Stream) -> int:
        if len(args) != 2:
            out.write("usage: setprop NAME VALUE\n", fd=2)
            return 1
        if args[0].startswith("wrap.") and not self.root:
            out.write(f"Failed to set property '{args[0]}' to '{args[1]}'.\n"
                      "See dmesg for error reason.\n", fd=2)
            return 1
        with self._lock:
            self.props[args[0]] = args[1]
        return 0

    def _cmd_pidof(self, args: list[str], out: Stream) -> int:
        with self._lock:
            pids = [str(self._running[a]) for a in args if a in self._running]
            if "system_server" in args and self.system_up() and not self.hidden_system_server:
                pids.append(str(self.system_pid))
        if not pids:
            return 1
        out.write(" ".join(pids) + "\n")
        return 0

    # -- packages ---------------------------------------------------------------------
    def _cmd_pm(self, args: list[str], out: Stream) -> int:
        if not self.system_up():
            return self._no_service("package", out)
        if args[:2] == ["list", "packages"]:
            flt = next((a for a in args[2:] if not a.startswith("-")), "")
            with self._lock:
                names = sorted(set(self.installed) | {"com.android.settings",
                                                      "com.google.android.gms"})
            out.write("".join(f"package:{n}\n" for n in names if flt in n))
            return 0
        if args[:1] == ["path"] and len(args) == 2:
            with self._lock:
                path = self.install_paths.get(args[1]) if args[1] in self.installed else None
            if path is None:
                return 1
            out.write(f"package:{path}\n")
            return 0
        if args[:1] == ["uninstall"] and len(args) == 2:
            with self._lock:
                if args[1] not in self.installed:
                    out.write("Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
                    return 1
                self._kill(args[1], reason=15, subreason=0, subtext="UNKNOWN",
                           description="uninstall pkg")
                del self.installed[args[1]]
                self.install_paths.pop(args[1], None)
            out.write("Success\n")
            return 0
        if args[:1] == ["install"]:
            path = next((a for a in args[1:] if not a.startswith("-")), None)
            if path is None or path not in self.files:
                out.write(f"Failure [INSTALL_FAILED_INVALID_URI: Don't know how to install "
                          f"{path}]\n")  # pm prints failures on stdout and exits 1
                return 1
            app = self.apps.get(hashlib.sha256(self.files[path]).hexdigest())
            if app is None:
                out.write("Failure [INSTALL_PARSE_FAILED_NOT_APK: Failed to parse "
                          f"{path}: Failed to load asset path {path}]\n")
                return 1
            time.sleep(0.05 * self.slowness)
            if self.install_failure is not None:
                out.write(f"Failure [{self.install_failure}]\n")
                return 1
            with self._lock:
                old = self.installed.get(app.package)
                if old is not None and app.version_code < old.version_code and not (
                        "-d" in args and self.root):  # -d: debuggable builds only
                    out.write("Failure [INSTALL_FAILED_VERSION_DOWNGRADE: Downgrade detected: "
                              f"Update version code {app.version_code} is older than current "
                              f"{old.version_code}]\n")
                    return 1
                self._install(app)
            out.write("Performing Streamed Install\nSuccess\n")
            return 0
        out.write("Unknown command\n", fd=2)
        return 255

    def _install(self, app: FakeApp) -> None:
        """Install ``app`` (lock held): its process is killed (PACKAGE UPDATED) and its
        base.apk gets a new directory, as PackageManagerService does."""
        import base64
        import os

        self._kill(app.package, reason=16, subreason=25, subtext="PACKAGE UPDATE",
                   description="replace package")
        self.installed[app.package] = app
        tag = base64.b64encode(os.urandom(16), b"-_").decode()
        self.install_paths[app.package] = f"/data/app/~~{tag}/{app.package}-" + \
            base64.b64encode(os.urandom(16), b"-_").decode() + "/base.apk"

    def _cmd_sha256sum(self, args: list[str], out: Stream) -> int:
        """toybox ``sha256sum FILE``: ``<hash>  FILE``."""
        status = 0
        for path in args:
            with self._lock:
                package = next((p for p, at in self.install_paths.items() if at == path),
                               None)
                app = self.installed.get(package or "")
            if app is None:
                out.write(f"sha256sum: {path}: No such file or directory\n", fd=2)
                status = 1
                continue
            out.write(f"{app.apk_sha256}  {path}\n")
        return status

    def _cmd_cmd(self, args: list[str], out: Stream) -> int:
        if args[:1] in (["package"], ["activity"]) and not self.system_up():
            return self._no_service(args[0], out)
        if args[:2] != ["package", "resolve-activity"]:
            out.write(f"Can't find service: {args[0] if args else ''}\n", fd=2)
            return 20
        rest = [a for a in args[2:] if a != "--brief"]
        data = None
        package = None
        i = 0
        while i < len(rest):
            if rest[i] in ("-a", "-c", "--user"):
                i += 2
                continue
            if rest[i] == "-d":
                data = rest[i + 1]
                i += 2
                continue
            package = rest[i]
            i += 1
        app = self.installed.get(package or "")
        if app is None or (data is not None and not data.startswith(app.scheme + ":")):
            out.write("No activity found\n")
            return 0
        out.write("priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 "
                  f"isDefault=true\n{app.package}/{app.activity}\n")
        return 0

    # -- activity manager -------------------------------------------------------------
    def _kill(self, package: str, reason: int, subreason: int, subtext: str,
              description: str | None, status: int = 0) -> int | None:
        """Kill ``package``'s process (lock held) and add its exit-info entry."""
        pid = self._running.pop(package, None)
        if pid is None:
            return None
        app = self.installed[package]
        self._add_exit(app, pid, reason, subreason, subtext, status, description)
        return pid

    def _add_exit(self, app: FakeApp, pid: int, reason: int, subreason: int, subtext: str,
                  status: int, description: str | None) -> None:
        ring = self._exit_raw.setdefault(app.package, collections.deque(maxlen=EXIT_INFO_RING))
        ring.appendleft((self.now(), pid, app.uid, app.package, reason,
                         _REASONS.get(reason, "UNKNOWN"), subreason, subtext, status,
                         100 if reason != 10 else 400, description))

    def _cmd_am(self, args: list[str], out: Stream) -> int:
        if not self.system_up():
            return self._no_service("activity", out)
        if args[:1] == ["force-stop"] and len(args) == 2:
            package = args[1]
            with self._lock:
                app = self.installed.get(package)
                if app is not None:
                    self.log("system", self.system_pid, 1460, "I", "ActivityManager",
                             f"Force stopping {package} appid={app.uid} user=0: from pid "
                             "31337")
                    pid = self._kill(package, 10, 21, "FORCE STOP",
                                     f"stop {package} due to from pid 31337")
                    if pid is not None:
                        self.log("system", self.system_pid, 1460, "I", "ActivityManager",
                                 f"Killing {pid}:{package}/u0a{app.uid - 10000} (adj 0): "
                                 f"stop {package} due to from pid 31337")
            return 0
        if args[:1] == ["start"]:
            return self._am_start(args[1:], out)
        out.write(f"Error: unknown command '{args[0] if args else ''}'\n", fd=2)
        return 255

    def _am_start(self, args: list[str], out: Stream) -> int:
        wait = "-W" in args
        data = component = package = None
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in ("-a", "-c", "-t", "-f"):
                i += 2
                continue
            if arg == "-d":
                data = args[i + 1]
            elif arg == "-n":
                component = args[i + 1]
            if arg in ("-d", "-n"):
                i += 2
                continue
            if not arg.startswith("-"):
                package = arg
            i += 1
        pkg = (component or "").split("/")[0] or package or ""
        app = self.installed.get(pkg)
        shown = component or pkg
        if app is None and component is not None:  # an explicit component of no package
            out.write(reports.am_start_error(shown, data, f"Activity class {{{component}}} "
                                             "does not exist."))
            return 0
        if app is None:
            out.write(reports.am_start_error(shown, data, "Activity not started, unable to "
                                             "resolve Intent { act=android.intent.action.VIEW "
                                             f"flg=0x10000000 cmp={shown} }}"))
            return 0
        if component is not None and component.split("/", 1)[1] not in (
                app.activity, app.package + app.activity):
            out.write(reports.am_start_error(shown, data, f"Activity class {{{component}}} "
                                             "does not exist."))
            return 0
        full = f"{app.package}/{app.activity}"
        launch_id = None
        if data:
            from urllib.parse import parse_qs, urlsplit

            launch_id = (parse_qs(urlsplit(data).query).get("id") or [None])[0]
        self.script.arrive(self.name)
        with self._lock:
            if app.package in self._running:
                out.write(f"Starting: Intent {{ act=android.intent.action.VIEW cmp={full} }}\n"
                          "Warning: Activity not started, intent has been delivered to "
                          "currently running top-most instance.\nStatus: ok\n"
                          f"LaunchState: HOT\nActivity: {full}\nWaitTime: 9\nComplete\n")
                return 0
            behaviour = self.script.take(launch_id or "", self.name)
            if behaviour.am_start == "no-service":  # the system server went away just now
                self.take_system_down(behaviour.services_late_s, booting=False)
                return self._no_service("activity", out)
            if behaviour.am_start == "no-activity-class":
                out.write(reports.am_start_error(full, data, f"Activity class {{{full}}} "
                                                 "does not exist."))
                return 0
            if behaviour.am_start == "task-to-front":
                out.write(f"Starting: Intent {{ act=android.intent.action.VIEW cmp={full} }}\n"
                          "Warning: Activity not started, its current task has been brought "
                          f"to the front\nStatus: ok\nLaunchState: UNKNOWN (0)\n"
                          f"Activity: {full}\nWaitTime: 11\nComplete\n")
                return 0
            pid = next(self._pids)
            self._running[app.package] = pid
            self._launch_of_pid[pid] = launch_id or ""
            previous = self._last_launch.get(app.package)
            self._last_launch[app.package] = (launch_id or "", pid)
            if previous is not None and previous[0]:
                # a late line of the previous process, delivered after the clear
                self.log("main", previous[1], previous[1], "I", "ReactNativeJS",
                         json.dumps({"v": 1, "id": previous[0], "phase": "done",
                                     "t_ms": 999.0}, separators=(",", ":"))
                         .join(("COLDSTART ", "")))
            if behaviour.log_start:
                self.log("system", self.system_pid, 1437, "I", "ActivityManager",
                         f"Start proc {pid}:{app.package}/u0a{app.uid - 10000} for "
                         f"next-top-activity {{{full}}}")
        self._run_app(app, pid, launch_id or "", behaviour)
        first_frame_s = behaviour.first_frame_ms * self.slowness / 1000.0
        if wait:
            time.sleep(first_frame_s)
        if wait and behaviour.kind == "init-crash":  # -W returns once the launch is gone
            with self._lock:
                self._changed.wait_for(lambda: self._running.get(app.package) != pid, 30.0)
        total = int(behaviour.first_frame_ms * self.slowness)
        starting = f"Starting: Intent {{ act=android.intent.action.VIEW cmp={full} }}\n"
        if not wait or behaviour.am_start == "no-status":
            out.write(starting)
        elif behaviour.kind == "init-crash":  # dead before its first frame
            out.write(reports.am_start_cancelled(full, data, total + 3))
        elif behaviour.am_start == "status-timeout":
            out.write(f"{starting}Status: timeout\nLaunchState: UNKNOWN (0)\n"
                      f"Activity: {full}\nWaitTime: {total + 3}\nComplete\n")
        else:
            out.write(reports.am_start_ok(full, data, "COLD", total, total + 3))
        return 0

    # -- the app's timeline -----------------------------------------------------------
    def _run_app(self, app: FakeApp, pid: int, launch_id: str, b: AppBehaviour) -> None:
        gap_s = b.phase_gap_ms * self.slowness / 1000.0
        js_tid = pid + 27
        last = b.last_phase()
        phases = _PHASES[:_PHASES.index(last) + 1] if last else ()
        if b.kind in ("js-error",):
            phases = _PHASES[:_PHASES.index(b.after or "models-ready") + 1]

        def alive() -> bool:
            with self._lock:
                return self._running.get(app.package) == pid

        def emit(phase: str, t_ms: float) -> None:
            if not alive():
                return
            fields: dict[str, object] = {"v": 1, "id": launch_id, "phase": phase,
                                         "t_ms": round(t_ms, 1)}
            if phase == "sessions-created":
                fields.update(sessions=[{"i": i, "model": m, "start_ms": 80.0 + i * 0.4,
                                         "end_ms": 180.0 + i * 3.1}
                                        for i, m in enumerate(app.models)],
                              eps=["xnnpack", "cpu"], ort_version=app.ort_version)
            if phase == "inference-done" and not b.unverified:
                fields.update(scores=[0.912], score=0.912, ok=not b.wrong_output)
            self.log("main", pid, js_tid, "I", "ReactNativeJS",
                     "COLDSTART " + json.dumps(fields, separators=(",", ":")))

        self._at(0.0, lambda: self.log("main", pid, pid, "I", "ReactNativeJS",
                                       'Running "ColdstartApp" with {"rootTag":11}'))
        teardown = b.kind == "native-crash" and b.site == "teardown"
        for n, phase in enumerate(phases, 1):
            if teardown and phase == "done":
                self._at(gap_s * n, lambda n=n: self._teardown_crash(
                    app, pid, b, lambda: emit("done", n * b.phase_gap_ms)))
                continue
            self._at(gap_s * n, lambda phase=phase, n=n: emit(phase, n * b.phase_gap_ms))
        end_s = gap_s * (len(phases) + 1)
        def error_line(message: str) -> None:
            if alive():
                self.log("main", pid, js_tid, "I", "ReactNativeJS", "COLDSTART " + json.dumps(
                    {"v": 1, "id": launch_id, "phase": "error", "t_ms": end_s * 1000,
                     "message": message}, separators=(",", ":")))

        if b.kind == "js-error":
            self._at(end_s, lambda: error_line(
                "InferenceSession.create rejected: Load model from /data/user/0/"
                "org.coldstart.app/files/models/embedding_model.onnx failed: Protobuf "
                "parsing failed."))
        elif b.kind == "js-error-fatal":
            self._at(end_s, lambda: error_line("TypeError: Cannot read property 'dims' of "
                                               "undefined"))
            self._at(end_s + b.death_after_ms * self.slowness / 1000.0,
                     lambda: self._java_crash(app, pid, b))
        elif b.kind in ("native-crash", "other-crash") and not teardown:
            self._at(end_s, lambda: self._native_crash(app, pid, b))
        elif b.kind == "js-fatal":
            self._at(end_s, lambda: self._java_crash(app, pid, b))
        elif b.kind == "init-crash":  # before the first frame (am start -W waits for it)
            self._at(gap_s / 2, lambda: self._java_crash(app, pid, b))
        elif b.kind == "vanish":
            self._at(end_s, lambda: self._vanish(app, pid))
        elif b.kind == "runtime-restart":
            self._at(end_s, lambda: self._runtime_restart(app, pid, b))
        elif b.kind == "drop":
            drop_at = gap_s * (_PHASES.index(b.after or "models-ready") + 1) + gap_s / 2
            self._at(drop_at, lambda: self._drop(b))
        fault_at = gap_s * (_PHASES.index(b.after or "start") + 1) + gap_s / 2
        if b.logcat_eof:
            self._at(fault_at, self._kill_followers)
        if b.clock_back_s:
            self._at(fault_at, lambda: self._set_clock_back(b.clock_back_s))
        if b.foreign_build is not None:
            foreign = b.foreign_build
            self._at(fault_at, lambda: self._foreign_install(foreign))
        if b.kill_server and self.on_kill_server is not None:
            self._at(fault_at, self.on_kill_server)
        if b.kill_driver and self.on_kill_driver is not None:
            self._at(fault_at, self.on_kill_driver)
        if b.logd_restart_s:
            self._at(fault_at, lambda: self._logd_restart(b.logd_restart_s))
        if b.uninstall:
            self._at(fault_at, lambda: self._uninstalled(app.package))

    def _logd_restart(self, down_s: float) -> None:
        """logd restarts (see :attr:`AppBehaviour.logd_restart_s`)."""
        with self._lock:
            self._entries.clear()
            self._logd_down_until = time.monotonic() + down_s
            self._follow_generation += 1
            self._changed.notify_all()

    def _uninstalled(self, package: str) -> None:
        """Someone else removes ``package`` (see :attr:`AppBehaviour.uninstall`)."""
        with self._lock:
            self._running.pop(package, None)
            self.installed.pop(package, None)
            self.install_paths.pop(package, None)
            self._exit_raw.pop(package, None)
            self._changed.notify_all()

    def _stale_tombstone(self, pid: int, ahead_s: float) -> None:
        """An earlier boot's SYSTEM_TOMBSTONE (see ``earlier_boot_tombstone``)."""
        app = next(iter(self.apps.values()))
        when = self.now() + _dt.timedelta(seconds=ahead_s)
        tomb = reports.Tombstone(pid=pid, tid=pid + 61, thread="mqt_native_modu",
                                 process=app.package, uid=app.uid, abi=self.tomb_abi,
                                 fingerprint=self.props["ro.build.fingerprint"], when=when,
                                 signal=6, signal_name="SIGABRT", code=-1, code_name="SI_QUEUE",
                                 fault_addr="--------",
                                 backtrace=tuple(reports.other_native_stack(self.tomb_abi)),
                                 cause=None, abort_message="terminating due to uncaught "
                                 "exception of type std::out_of_range: vector")
        self._dropbox.append((when, "SYSTEM_TOMBSTONE", "\n".join(tomb.lines(full=True)) +
                              "\n"))

    def _kill_followers(self) -> None:
        with self._lock:
            self._follow_generation += 1
            self._changed.notify_all()

    def _set_clock_back(self, seconds: float) -> None:
        with self._lock:
            self.clock_offset_s -= seconds

    def _foreign_install(self, app: FakeApp) -> None:
        with self._lock:
            self._install(app)
            self._changed.notify_all()

    def _teardown_crash(self, app: FakeApp, pid: int, b: AppBehaviour,
                        log_done: Callable[[], None]) -> None:
        """``done`` and the death in one step (the lock held): no shell command, ``pidof``
        included, and no log reader can come between the line and the death."""
        with self._lock:
            log_done()
            self._native_crash(app, pid, b)

    def _native_crash(self, app: FakeApp, pid: int, b: AppBehaviour) -> None:
        with self._lock:
            if self._running.get(app.package) != pid:
                return
        tid = pid + 61
        thread = "mqt_native_modu"
        when = self.now()
        if b.kind == "native-crash":
            stack = reports.ort_stack(_CRASH_STACK[b.site or "creation"], self.tomb_abi)
            sig, sig_name, code, code_name, addr = 11, "SIGSEGV", 1, "SEGV_MAPERR", \
                "0x0000000000000018"
            cause, abort = "null pointer dereference", None
        else:
            stack = reports.other_native_stack(self.tomb_abi)
            sig, sig_name, code, code_name, addr = 6, "SIGABRT", -1, "SI_QUEUE", "--------"
            cause, abort = None, ("terminating due to uncaught exception of type "
                                  "std::out_of_range: vector")
        tomb = reports.Tombstone(pid=pid, tid=tid, thread=thread, process=app.package,
                                 uid=app.uid, abi=self.tomb_abi,
                                 fingerprint=self.props["ro.build.fingerprint"], when=when,
                                 signal=sig, signal_name=sig_name, code=code,
                                 code_name=code_name, fault_addr=addr,
                                 backtrace=tuple(stack), cause=cause, abort_message=abort)
        number = next(self._tombstone_no) % 32
        fault = addr if addr != "--------" else "0x0"
        self.log("crash", pid, tid, "F", "libc",
                 f"Fatal signal {sig} ({sig_name}), code {code} ({code_name}), fault addr "
                 f"{fault} in tid {tid} ({thread}), pid {pid} ({app.package[:15]})")
        dump_pid = pid + 400

        def dumped() -> None:
            self.log("main", dump_pid, dump_pid, "I", "crash_dump64",
                     "obtaining output fd from tombstoned, type: kDebuggerdTombstoneProto")
            self.log("main", 588, 588, "I", "tombstoned",
                     f"received crash request for pid {pid}")
            self.log("main", dump_pid, dump_pid, "I", "crash_dump64",
                     f"performing dump of process {pid} (target tid = {tid})")
            for line in tomb.lines():
                self.log("crash", dump_pid, dump_pid, "F", "DEBUG", line)
            self.log("main", 588, 588, "E", "tombstoned",
                     f"Tombstone written to: tombstone_{number:02d}")

        late_s = b.tombstone_late_s * self.slowness
        if late_s:
            self._at(late_s, dumped)
        else:
            dumped()
        with self._lock:
            self._running.pop(app.package, None)
            self._add_exit(app, pid, 5, 0, "UNKNOWN", sig, "crash")
            self.log("system", self.system_pid, 1461, "I", "ActivityManager",
                     f"Process {app.package} (pid {pid}) has died: fg  TOP ")
        header = (f"Process: {app.package}\nPID: {pid}\nUID: {app.uid}\nFlags: 0x38c8be44\n"
                  f"Package: {app.package} v1 (1.0)\nForeground: Yes\nProcess-Runtime: 2214\n"
                  f"Build: {self.props['ro.build.fingerprint']}\nDropped-Count: 0\n\n")

        def reports_written() -> None:
            with self._lock:
                stamp = self.now()
                self._dropbox.append((stamp, "data_app_native_crash",
                                      header + "\n".join(tomb.lines()) + "\n"))
                self._dropbox.append((stamp, "SYSTEM_TOMBSTONE",
                                      "\n".join(tomb.lines(full=True)) + "\n"))
            self.log("main", self.system_pid, 2107, "I", "DropBoxManagerService",
                     "add tag=data_app_native_crash isTagEnabled=true flags=0x2")
            self.log("main", self.system_pid, 1492, "I", "BootReceiver",
                     f"Copying /data/tombstones/tombstone_{number:02d} to DropBox "
                     "(SYSTEM_TOMBSTONE)")

        self._at(late_s + self.report_delay_s * self.slowness, reports_written)

    def _java_crash(self, app: FakeApp, pid: int, b: AppBehaviour) -> None:
        with self._lock:
            if self._running.get(app.package) != pid:
                return
        block = reports.application_init_exception(pid, app.package) \
            if b.kind == "init-crash" else \
            reports.javascript_exception(pid, app.package,
                                         "Cannot read property 'dims' of undefined")
        for line in block if b.crash_buffer else ():
            self.log("crash", pid, pid + 27, "E", "AndroidRuntime", line)
        with self._lock:
            self._running.pop(app.package, None)
            self._add_exit(app, pid, 4, 0, "UNKNOWN", 0, "crash")
            self.log("system", self.system_pid, 1461, "I", "ActivityManager",
                     f"Process {app.package} (pid {pid}) has died: fg  TOP ")
        # ActivityManagerService.addErrorToDropBox's header as Android 14 writes it
        text = (f"Process: {app.package}\nPID: {pid}\nUID: {app.uid}\nFrozen: false\n"
                f"Flags: 0x38c8be44\nPackage: {app.package} v{app.version_code} (1.0)\n"
                "Foreground: Yes\nProcess-Runtime: 2891\nInstaller: com.android.shell\n"
                f"Build: {self.props['ro.build.fingerprint']}\nLoading-Progress: 1.0\n"
                "Dropped-Count: 0\n\n" + "\n".join(block[2:]))
        delay = self.report_delay_s if b.report_delay_s is None else b.report_delay_s
        self._at(delay * self.slowness, lambda: self._add_dropbox("data_app_crash", text))

    def _vanish(self, app: FakeApp, pid: int) -> None:
        """The process is gone and nothing says why (no line, no exit-info, no report)."""
        with self._lock:
            if self._running.get(app.package) == pid:
                self._running.pop(app.package, None)

    def _runtime_restart(self, app: FakeApp, pid: int, b: AppBehaviour) -> None:
        """system_server dies and comes back: every app dies with it, and nothing about
        the app's death is recorded (the ActivityManager that would log it is gone)."""
        with self._lock:
            self._running.clear()
        self.take_system_down(b.services_late_s, booting=False)

    def _add_dropbox(self, tag: str, text: str) -> None:
        with self._lock:
            self._dropbox.append((self.now(), tag, text))

    def _drop(self, b: AppBehaviour) -> None:
        if b.reboot:
            with self._lock:
                self._running.clear()
                self._entries.clear()
                self.boot_id = self._new_boot_id()
                self._booted_at = time.monotonic() + b.offline_s
                self._pids = itertools.count(4000)  # pids start again; exit-info and
                self._changed.notify_all()  # DropBox are kept on disk across the boot
            # adbd is back after offline_s; the system only services_late_s after that
            self.take_system_down(b.offline_s + b.services_late_s, booting=True)
        if self.on_drop is not None:
            self.on_drop(b.offline_s, b.reboot)

    # -- logcat -----------------------------------------------------------------------
    def _cmd_logcat(self, args: list[str], out: Stream) -> int:
        buffers: list[str] = []
        specs: list[tuple[str, str]] = []
        clear = dump = False
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "-c":
                clear = True
            elif arg == "-d":
                dump = True
            elif arg == "-b":
                buffers += args[i + 1].split(",")
                i += 1
            elif arg == "-v":
                if args[i + 1] != "threadtime":
                    out.write("logcat: this double prints threadtime only\n", fd=2)
                    return 1
                i += 1
            elif arg.startswith("-"):
                out.write(f"logcat: unknown option -- '{arg}'\n", fd=2)
                return 1
            else:
                tag, _, level = arg.rpartition(":")
                specs.append((tag or arg, level if tag else "V"))
            i += 1
        if not buffers:
            buffers = ["main", "system", "crash"]
        if "all" in buffers:
            buffers = ["main", "system", "crash", "events", "radio"]
        if time.monotonic() < self._logd_down_until:  # logd restarting: no socket yet
            if clear:  # logcat.cpp reports each buffer it could not clear
                for name in buffers:
                    out.write(f"failed to clear the '{name}' log\n", fd=2)
                return 1
            out.write("logcat: Logcat read failure: Connection refused\n", fd=2)
            return 1
        if clear:
            with self._lock:
                self._entries = [e for e in self._entries if e.buffer not in buffers]
            return 0
        seen = 0
        started: set[str] = set()
        boot = self.boot_id
        generation = self._follow_generation
        while True:
            with self._lock:
                fresh = [e for e in self._entries if e.seq > seen]
                if fresh:
                    seen = fresh[-1].seq
            lines = []
            for entry in fresh:
                if entry.buffer not in buffers or not _filter_ok(specs, entry):
                    continue
                if entry.buffer not in started and len(buffers) > 1:
                    started.add(entry.buffer)
                    lines.append(f"--------- beginning of {entry.buffer}")
                lines.append(entry.line())
            if lines and not out.write("\n".join(lines) + "\n"):
                return 0
            if dump:
                return 0
            with self._lock:
                if self.boot_id != boot or self._stop.is_set():
                    return 0
                if self._follow_generation != generation:
                    out.write("logcat: Unexpected EOF!\n", fd=2)  # logcat.cpp, -EIO
                    return 1
                if not any(e.seq > seen for e in self._entries):
                    self._changed.wait(0.1)
            if out.closed.is_set() or out.conn.dead.is_set():
                return 0

    # -- dumpsys ----------------------------------------------------------------------
    def _cmd_dumpsys(self, args: list[str], out: Stream) -> int:
        if args[:1] == ["activity"] and not self.system_up():
            out.write("Can't find service: activity\n", fd=2)
            return 0
        if args[:2] == ["activity", "exit-info"]:
            package = args[2] if len(args) > 2 else None
            with self._lock:
                chunks = []
                for pkg, ring in self._exit_raw.items():
                    if package is not None and pkg != package:
                        continue
                    uid = self.installed[pkg].uid if pkg in self.installed else 0
                    entries = [reports.exit_info_entry(n, *raw) for n, raw in enumerate(ring)]
                    chunks.append(reports.exit_info_dump(pkg, uid, entries))
            out.write("".join(chunks) or reports.exit_info_dump(package or "", 0, []))
            return 0
        if args[:1] == ["dropbox"]:
            tags = [a for a in args[1:] if not a.startswith("-")]
            with self._lock:
                entries = [e for e in self._dropbox if not tags or e[1] in tags]
                total = len(self._dropbox)
            out.write(reports.dropbox_dump(" ".join(tags), entries, total))
            return 0
        out.write(f"Can't find service: {args[0] if args else ''}\n")
        return 0
