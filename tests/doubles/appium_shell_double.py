"""AppiumShellDouble: the lifecycle double (tests/doubles/appium_lifecycle_double.py) with the
device's DropBox and exit-info history behind UiAutomator2's ``mobile: shell``.

``POST /session/:id/execute/sync`` with ``mobile: shell {"command": "dumpsys", "args":
[...]}`` answers as UiAutomator2 does with ``adb_shell`` enabled: the command's stdout as a
string (appium-uiautomator2-driver ``mobileShell``). The device's history is kept as a device
keeps it and printed by tests/doubles/fake_adb_reports.py (``DropBoxManagerService.dump()``,
``ApplicationExitInfo.dump()``):

* a native death: a ``data_app_native_crash`` entry (``Process:``/``PID:`` header, then the
  tombstone with the frames the lifecycle double logs) and an exit-info entry ``reason=5
  (APP CRASH(NATIVE)) status=11``;
* a Java/JS fatal: ``data_app_crash`` and ``reason=4 (APP CRASH(EXCEPTION))``;
* ``terminateApp`` of a running app: ``reason=10 (USER REQUESTED)`` (``am force-stop``).

``shell`` picks what the server does: ``allowed``; ``insecure`` answers as Appium 3 does
without ``--allow-insecure=uiautomator2:adb_shell`` (HTTP 500 ``unknown error``, its
message from @appium/base-driver ``assertFeatureEnabled``). With neither the double forwards
the call, and the fake driver answers ``Unsupported execute method`` (the real answer).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from .appium_lifecycle_double import _FRAMES, AppiumLifecycleDouble, _App
from .fake_adb_reports import dropbox_dump, exit_info_dump, exit_info_entry

APP = "org.coldstart.app"
UID = 10187
INSECURE = ("An unknown server-side error occurred while processing the command. Original "
            "error: Potentially insecure feature 'adb_shell' has not been enabled. If you "
            "want to enable this feature and accept the security ramifications, please do "
            "so by following the documented instructions at "
            "http://appium.io/docs/en/latest/guides/security/")


def _tombstone(pid: int, phase: str) -> str:
    tid = pid + 29
    lines = ["Process: org.coldstart.app", f"PID: {pid}", f"UID: {UID}", "Flags: 0x38c8be44",
             "Package: org.coldstart.app v1 (0.1.0)", "Foreground: Yes",
             "Build: google/sdk_gphone64_x86_64/emu64xa:14/UE1A.230829.036/10780064:"
             "userdebug/dev-keys", "Dropped-Count: 0", "",
             "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***",
             "Build fingerprint: 'google/sdk_gphone64_x86_64/emu64xa:14/UE1A.230829.036/"
             "10780064:userdebug/dev-keys'", "Revision: '0'", "ABI: 'x86_64'",
             f"pid: {pid}, tid: {tid}, name: create-1  >>> org.coldstart.app <<<",
             "uid: 10187",
             "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x5555555555555555",
             "", "backtrace:"]
    for i, sym in enumerate(_FRAMES.get(phase or "", _FRAMES["models-ready"])):
        lines.append(f"      #{i:02d} pc {0xa1b2c4 + 64 * i:016x}  /data/app/~~Zx1==/"
                     f"org.coldstart.app-Yz2==/lib/x86_64/libonnxruntime.so ({sym}) "
                     "(BuildId: 0123abcd)")
    return "\n".join(lines) + "\n"


def _java(pid: int) -> str:
    return "\n".join([
        "Process: org.coldstart.app", f"PID: {pid}", f"UID: {UID}", "Foreground: Yes", "",
        "com.facebook.react.common.JavascriptException: TypeError: undefined is not a "
        "function, stack:", "runLaunch@1:2345",
        "\tat com.facebook.react.modules.core.ExceptionsManagerModule.reportException("
        "ExceptionsManagerModule.java:65)"]) + "\n"


class AppiumShellDouble(AppiumLifecycleDouble):
    """The lifecycle double with ``mobile: shell`` (see the module doc)."""

    def __init__(self, upstream: str, *, shell: str | None = "allowed", **kw: Any) -> None:
        super().__init__(upstream, **kw)
        self.shell = shell
        self.dropbox: list[tuple[_dt.datetime, str, str]] = []
        self.exits: list[tuple[_dt.datetime, int, int, str, int]] = []  # newest last
        self.shell_calls: list[list[str]] = []

    def died(self, app: _App, kind: str, phase: str | None) -> None:
        now = _dt.datetime.now()
        if kind == "native":
            self.dropbox.append((now, "data_app_native_crash", _tombstone(app.pid, phase or "")))
            self.exits.append((now, app.pid, 5, "APP CRASH(NATIVE)", 11))
        else:
            self.dropbox.append((now, "data_app_crash", _java(app.pid)))
            self.exits.append((now, app.pid, 4, "APP CRASH(EXCEPTION)", 0))

    def stopped(self, app: _App) -> None:
        self.exits.append((_dt.datetime.now(), app.pid, 10, "USER REQUESTED", 0))

    def _dumpsys(self, args: list[str]) -> str:
        if args[:2] == ["dropbox", "--print"] and len(args) == 3:
            entries = [e for e in self.dropbox if e[1] == args[2]]
            return dropbox_dump(args[2], entries, len(self.dropbox))
        if args[:2] == ["activity", "exit-info"] and len(args) == 3:
            blocks = []
            for n, (when, pid, reason, text, status) in enumerate(reversed(self.exits)):
                sub = (23, "FORCE STOP") if reason == 10 else (0, "UNKNOWN")
                desc = f"stop {APP} due to from pid 4321" if reason == 10 else "crash"
                blocks.append(exit_info_entry(n, when, pid, UID, APP, reason, text, sub[0],
                                              sub[1], status, 100, desc))
            return exit_info_dump(args[2], UID, blocks)
        return ""

    def answer(self, method: str, path: str, payload: dict[str, Any]
               ) -> tuple[int, Any] | None:
        if path.endswith("/execute/sync") and payload.get("script") == "mobile: shell" and \
                self.shell is not None:
            args = (payload.get("args") or [{}])[0]
            argv = [str(args.get("command", ""))] + [str(a) for a in args.get("args") or []]
            self.shell_calls.append(argv)
            if self.shell == "insecure":
                return 500, {"value": {"error": "unknown error", "message": INSECURE,
                                       "stacktrace": ""}}
            if argv[:2] == ["pm", "path"]:
                if self.build is None or argv[2:] != [APP]:
                    # pm path prints nothing and exits 1; mobile: shell fails on that status
                    return 500, {"value": {"error": "unknown error", "stacktrace": "",
                                           "message": "An unknown server-side error occurred "
                                                      "while processing the command. Original "
                                                      "error: Error executing adbExec. "
                                                      "Original error: 'Command 'adb shell pm "
                                                      f"path {argv[2] if argv[2:] else ''}' "
                                                      "exited with code 1'"}}
                token = self.build["uuid"].replace("-", "")[:22]
                return 200, {"value": f"package:/data/app/~~{token}==/{APP}-"
                                      f"{token[::-1]}==/base.apk\n"}
            out = self._dumpsys(argv[1:]) if argv[0] == "dumpsys" else ""
            return 200, {"value": out}
        return super().answer(method, path, payload)
