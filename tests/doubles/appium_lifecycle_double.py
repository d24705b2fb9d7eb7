"""AppiumLifecycleDouble: the app lifecycle and device logs that @appium/fake-driver lacks.

It is an HTTP proxy on loopback in front of a real Appium 3 server running the fake driver
(docs/formats.md section D4: the fake driver answers ``mobile: terminateApp`` and friends
with ``UnknownMethodException`` and knows no ``logcat``/``syslog``/``crashlog``). Everything
goes to the real server except what the fake driver cannot do, which the double answers as
UiAutomator2 / XCUITest do (docs/formats.md section D3):

* ``POST /session/:id/execute/sync`` with ``mobile: queryAppState`` (0-4), ``mobile:
  terminateApp`` (bool), ``mobile: deepLink`` / ``mobile: launchApp`` / ``mobile:
  activateApp`` (start the scripted app; ``launchApp`` records its arguments and
  environment);
* ``GET /session/:id/se/log/types`` and ``POST /session/:id/se/log`` (entries
  ``{timestamp, level, message}`` since the previous call): ``logcat`` in threadtime format
  (``ReactNativeJS`` lines, and a crash's tombstone summary from ``DEBUG``/``libc``, or the
  ``AndroidRuntime`` FATAL EXCEPTION of a JS error) for ``platform="android"``;
  ``syslog`` and ``crashlog`` (the ``.ips`` text) for ``platform="ios"``;
* finding the status element while the app is not running: "no such element".

The scripted app runs in a thread: each phase is a log line and then the status element's
text, as the React Native app logs a line and then renders it (rn-app/src/LaunchScreen.tsx).
The text is set on the real fake-driver element with one set-value, which replaces it whole,
as React Native re-renders the Text with the new line: the screen is never blank or half
written between two lines. A cold-started app's screen is blank until its first line, and an
app that was terminated or died never writes its screen again. Script entries:
``completed``, ``unchecked`` (``inference-done`` with neither scores nor ``ok``),
``crash@PHASE`` (``crash@done``: a crash in teardown, a late release of a session; the app
dies as it logs ``done``, before rendering it, so a reader of the log gets that line only
after the death), ``js-fatal@PHASE`` (the JS error kills the app before it reports PHASE),
``error-fatal@PHASE`` (an ``error`` line after PHASE, then the fatal JS error ends the app),
``error@PHASE`` (the app lives on), ``hang@PHASE``, ``crash-nolog@PHASE`` (a native
death whose tombstone never reaches the session's logcat: only the device's DropBox has it,
tests/doubles/appium_shell_double.py), ``foreign@PHASE`` (after PHASE
another build is installed over the running app, which ends with no crash text; ``mobile:
listApps`` then shows its new location and ``CFBundleVersion`` 2 (iOS) or ``versionCode`` 2
(Android; the shell double's ``pm path`` a new APK path), and ``mobile: installApp``
installs the campaign's again), ``erase@PHASE`` (iOS: after PHASE the app is
gone, as from an erased simulator, and the running app ends with no crash text); a ``~D``
suffix gives the crash text D
seconds after the death (an iOS ``.ips`` arrives late). A ``!FAULT`` suffix breaks the
session once the kit has seen the death (a ``mobile: queryAppState`` reported the app dead)
and has read every line the app logged: at the first log read after that report with none
of the app's lines pending (a read with some gets those; the crash text is held back
from every read of such a launch):``!500`` makes every later log read fail with the HTTP 500 that
Appium's proxy answers when the driver's device-side server went away (``unknown error``,
"An unknown server-side error occurred while processing the command. Original error: Could
not proxy command to the remote server. Original error: socket hang up", as quoted in
Appium's troubleshooting notes); ``!gone`` deletes the session on the real server (as a
farm's session limit or ``newCommandTimeout`` does), whose every later answer is its own
HTTP 404 ``invalid session id``. A ``+logdown:N`` suffix (before any ``!FAULT``) makes
the first N log reads after the app's start fail with that HTTP 500 while the rest of the
session answers (the driver's log endpoint erroring mid-launch), the entries kept for the
next read that works. ``locked:S`` (iOS) locks the device's screen for S seconds from the
next launch request: ``mobile: isLocked`` answers true, and every launch request meanwhile
fails with Appium's HTTP 500 ``unknown error`` around SpringBoard's denial ("... for
reason: Locked", the text recorded from devicectl in tests/doubles/xcrun_double; the
XCUITest driver's own wrapping of it is not recorded here).
:meth:`AppiumLifecycleDouble.unused_script` tells a test what was not played. If the real
server is gone, the double stops listening too (the client then sees the connection
refused, as with a dead server).
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

from kit.protocol import format_event
from tests.doubles.fake_adb_reports import javascript_exception

sys.path.insert(0, str(Path(__file__).parent / "xcrun_double"))
from ips_double import make_ips  # noqa: E402

PHASES = ("start", "models-ready", "sessions-created", "inference-done", "sessions-released",
          "done")
_SESSION_RE = re.compile(r"^/session/(?P<sid>[^/]+)(?P<rest>/.*)?$")
_W3C_ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
_FRAMES = {
    "models-ready": ["onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*, "
                     "unsigned long, unsigned long)+20", "xnn_create_fully_connected_nc_f32+412",
                     "onnxruntime::xnnpack::Gemm::PrePack(onnxruntime::Tensor const&, int, "
                     "std::__ndk1::shared_ptr<onnxruntime::IAllocator>, bool&, "
                     "onnxruntime::PrePackedWeights*)+640"],
    "sessions-created": ["onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate("
                         "void*, unsigned long, unsigned long)+20",
                         "reshape_fully_connected_nc+388",
                         "xnn_reshape_fully_connected_nc_f32+76"],
    "inference-done": ["onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_deallocate("
                       "void*, void*)+20", "xnn_deallocate+36", "xnn_delete_operator+92"],
}
_FRAMES["done"] = _FRAMES["inference-done"]  # a teardown crash is a late release
#: Appium's answer when the driver's device-side server went away (W3C error JSON, HTTP 500)
_PROXY_ERROR = {"value": {
    "error": "unknown error", "stacktrace": "",
    "message": "An unknown server-side error occurred while processing the command. "
               "Original error: Could not proxy command to the remote server. Original "
               "error: socket hang up"}}


def _stamp() -> str:
    now = time.time()
    return time.strftime("%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"


class _App:
    """The scripted app of one session."""

    def __init__(self, double: "AppiumLifecycleDouble", sid: str) -> None:
        self.double = double
        self.sid = sid
        self.state = 1
        self.generation = 0
        self.pid = 4321
        self.logs: dict[str, list[dict[str, Any]]] = {"logcat": [], "syslog": [],
                                                      "crashlog": []}
        self.lock = threading.Lock()
        #: held while the screen is written and while the app starts, stops or dies, so a
        #: terminated app's last line never lands on the next launch's screen
        self.screen = threading.Lock()
        #: ``!FAULT`` of the running launch, and whether it is in force
        self.fault: str | None = None
        self.dead_seen = False
        self.broken = False
        #: log reads left that fail (``+logdown:N``), the entries kept for the next read
        self.log_down = 0

    def log(self, kind: str, message: str) -> None:
        with self.lock:
            self.logs[kind].append({"timestamp": int(time.time() * 1000), "level": "ALL",
                                    "message": message})

    def say(self, launch_id: str, phase: str, t0: float, generation: int,
            **fields: Any) -> None:
        line = format_event(launch_id, phase, (time.monotonic() - t0) * 1000.0, **fields)
        if self.double.platform == "android":
            self.log("logcat", f"{_stamp()}  {self.pid:5d}  {self.pid + 29:5d} I ReactNativeJS: "
                               f"{line}")
        else:
            self.log("syslog", f"Nov 29 17:40:01 iPhone ColdstartApp(React)[{self.pid}] "
                               f"<Notice>: {line}")
        with self.double.logged:
            self.double.phases_logged.append(phase)
            self.double.logged.notify_all()
        with self.screen:
            if generation == self.generation:
                self.double.set_status(self.sid, line)

    def terminate(self) -> bool:
        with self.screen:
            was_running = self.state >= 2
            self.generation += 1
            self.state = 1
        if was_running:
            self.double.stopped(self)
        return was_running

    def start(self, url: str) -> None:
        with self.screen:
            self.generation += 1
            self.pid += 7
            self.double.set_status(self.sid, "")  # a new process: nothing rendered yet
            self.state = 4
            generation = self.generation
        outcome, _, fault = self.double.next_outcome().partition("!")
        outcome, _, outage = outcome.partition("+")
        self.fault, self.dead_seen, self.broken = fault or None, False, False
        self.log_down = int(outage.partition(":")[2] or 0) if outage.startswith("logdown") \
            else 0
        threading.Thread(target=self._run, args=(url, outcome, generation),
                         daemon=True).start()

    def _run(self, url: str, outcome: str, generation: int) -> None:
        launch_id = dict(parse_qsl(urlsplit(url).query)).get("id", "no-id")
        outcome, _, delay = outcome.partition("~")
        kind, _, at = outcome.partition("@")
        self.quiet = kind == "crash-nolog"  # a native death whose logcat lost the tombstone
        kind = "crash" if self.quiet else kind
        t0 = time.monotonic()
        fields = {"sessions-created": {"sessions": [
            {"i": i, "model": m, "start_ms": 40.0 + i, "end_ms": 90.0 + i}
            for i, m in enumerate(("melspectrogram", "embedding_model", "hey_jarvis_v0.1"))],
            "eps": ["xnnpack", "cpu"], "ort_version": "1.24.3"},
            "inference-done": {"scores": [0.998019], "score": 0.998019, "ok": True,
                               "max_diff": 0.0} if kind != "unchecked" else {}}
        for phase in PHASES:
            time.sleep(self.double.phase_delay_s)
            if generation != self.generation:
                return  # terminated meanwhile
            if kind == "js-fatal" and phase == at:
                self._die_js(float(delay or 0))
                return
            if kind == "crash" and phase == at == "done":
                self._stop_running()  # dead first: the screen is never written again
                self.say(launch_id, phase, t0, generation)
                self._crash_text(phase)
                return
            self.say(launch_id, phase, t0, generation, **fields.get(phase, {}))
            if phase != at:
                continue
            if kind == "error":
                self.say(launch_id, "error", t0, generation,
                         message="InferenceSession.create rejected", after=phase)
            if kind == "error-fatal":
                self.say(launch_id, "error", t0, generation, after=phase, fatal=True,
                         message="Unhandled JS Exception: TypeError: undefined is not a "
                                 "function")
                time.sleep(0.05)  # React Native ends the app right after logging it
                self._die_js(float(delay or 0))
            if kind == "crash":
                self._die_native(phase)
            if kind in ("foreign", "erase"):  # another build is installed over the running
                # app, or the simulator is erased (its apps are gone): the app ends with no
                # crash text
                self.double.build = None if kind == "erase" else {
                    "version": "2", "uuid": str(uuid.uuid4()).upper()}
                self._stop_running()
            return

    def _stop_running(self) -> None:
        with self.screen:
            self.state = 1
            self.generation += 1

    def _die_native(self, phase: str) -> None:
        self._stop_running()
        self._crash_text(phase)

    def _crash_text(self, phase: str) -> None:
        self.double.died(self, "native", phase)
        if self.double.platform == "android" and getattr(self, "quiet", False):
            return
        if self.double.platform == "android":
            pid, tid = self.pid, self.pid + 29
            head = [f"{_stamp()}  {pid:5d}  {tid:5d} F libc    : Fatal signal 11 (SIGSEGV), "
                    f"code 1 (SEGV_MAPERR), fault addr 0x5555555555555555 in tid {tid} "
                    f"(create-1), pid {pid} (org.coldstart.app)"]
            body = ["*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***",
                    "Build fingerprint: 'google/sdk_gphone64_x86_64/emu64xa:14/"
                    "UE1A.230829.036/10780064:userdebug/dev-keys'",
                    "ABI: 'x86_64'",
                    f"pid: {pid}, tid: {tid}, name: create-1  >>> org.coldstart.app <<<",
                    "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x5555555555555555",
                    "backtrace:"]
            for i, sym in enumerate(_FRAMES.get(phase, _FRAMES["models-ready"])):
                body.append(f"      #{i:02d} pc {0xa1b2c4 + 64 * i:016x}  /data/app/~~Zx1==/"
                            f"org.coldstart.app-Yz2==/lib/x86_64/libonnxruntime.so ({sym}) "
                            "(BuildId: 0123abcd)")
            lines = head + [f"{_stamp()}  4400  4400 F DEBUG   : {b}" for b in body]
            for line in lines:
                self.log("logcat", line)
        else:
            kind = {"models-ready": "uaf-create", "sessions-created": "uaf-infer",
                    "inference-done": "uaf-release", "done": "uaf-release"}.get(phase, "abort")
            self.log("crashlog", make_ips(kind, udid=self.double.udid, pid=self.pid,
                                          bundle_id="org.coldstart.app"))

    def _die_js(self, report_delay_s: float = 0.0) -> None:
        self._stop_running()
        self.double.died(self, "java", None)
        time.sleep(report_delay_s)
        if self.double.platform == "android":  # React Native's body, as the adb doubles give
            for text in javascript_exception(self.pid, "org.coldstart.app",
                                             "Cannot read property 'dims' of undefined"):
                self.log("logcat", f"{_stamp()}  {self.pid:5d}  {self.pid + 2:5d} E "
                                   f"AndroidRuntime: {text}")
        else:
            self.log("crashlog", make_ips("js-fatal", udid=self.double.udid, pid=self.pid,
                                          bundle_id="org.coldstart.app"))


class AppiumLifecycleDouble:
    """The proxy; ``url`` is what the kit is given as ``--server``.

    Args:
        upstream: the real Appium server's URL (``http://127.0.0.1:PORT``).
        platform: ``android`` or ``ios`` (which logs and crash texts to give).
        script: outcomes of the next launches, in order (then ``completed``).
        on_launch: called with the 0-based launch number as the app starts (e.g. to kill
            the real server mid campaign).
        no_list_apps: an error text that ``mobile: listApps`` fails with (HTTP 500).
        credentials: ``(user, key)`` the proxy requires as HTTP Basic auth, like a farm.
    """

    def __init__(self, upstream: str, platform: str = "android",
                 script: list[str] | None = None,
                 credentials: tuple[str, str] | None = None,
                 phase_delay_s: float = 0.05,
                 on_launch: "Callable[[int], None] | None" = None,
                 no_list_apps: str = "") -> None:
        self.upstream = urlsplit(upstream)
        self.platform = platform
        self.script = list(script or [])
        self.credentials = credentials
        self.phase_delay_s = phase_delay_s
        self.on_launch = on_launch
        #: when set, ``mobile: listApps`` fails with this original error (a driver that
        #: cannot list the apps of this device)
        self.no_list_apps = no_list_apps
        self.udid = "6F1C2A4B-1D2E-4F60-9A7B-0C1D2E3F4A5B"
        self.apps: dict[str, _App] = {}
        self.calls: list[tuple[str, str, Any]] = []
        self.auth_seen: list[str | None] = []
        self.launches = 0
        #: ``!FAULT`` suffixes put in force, in order
        self.faults_played: list[str] = []
        #: log reads answered with an error by ``+logdown:N``
        self.log_failures = 0
        #: the device's screen is locked until then (epoch s; ``locked:S``)
        self.locked_until = 0.0
        #: the installed build (iOS): its CFBundleVersion and install location's UUID
        self.build: dict[str, str] | None = {"version": "1", "uuid": str(uuid.uuid4()).upper()}
        #: what ``mobile: installApp`` installed, in order
        self.installs: list[str] = []
        #: phases the apps have logged, in order (see :meth:`wait_logged`)
        self.phases_logged: list[str] = []
        self.logged = threading.Condition()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.gone = threading.Event()

    @property
    def url(self) -> str:
        if self.credentials:
            user, key = self.credentials
            return f"http://{user}:{key}@127.0.0.1:{self.port}/wd/hub"
        return f"http://127.0.0.1:{self.port}"

    def next_outcome(self) -> str:
        with self._lock:
            index = self.launches
            self.launches += 1
        if self.on_launch is not None:
            self.on_launch(index)
        return self.script[index] if index < len(self.script) else "completed"

    def died(self, app: _App, kind: str, phase: str | None) -> None:
        """The app of a session died (``native`` at ``phase``, or ``java``): what a
        device keeps of it (none here; :mod:`tests.doubles.appium_shell_double`)."""

    def stopped(self, app: _App) -> None:
        """The app was force-stopped (``terminateApp`` while it ran)."""

    def take_lock(self) -> bool:
        """Whether a launch request now meets a locked device: a ``locked:S`` script entry
        next locks it for S seconds from this request (and is taken)."""
        with self._lock:
            entry = self.script[self.launches] if self.launches < len(self.script) else ""
            if entry.startswith("locked:"):
                self.launches += 1
                self.locked_until = time.time() + float(entry.partition(":")[2])
            return time.time() < self.locked_until

    def unused_script(self) -> list[str]:
        """Script entries no launch has taken yet."""
        with self._lock:
            return list(self.script[self.launches:])

    def wait_logged(self, phase: str, timeout_s: float) -> bool:
        """Wait until an app has logged a line of ``phase`` (True), or ``timeout_s``."""
        with self.logged:
            return self.logged.wait_for(lambda: phase in self.phases_logged, timeout_s)

    def stop(self) -> None:
        if not self.gone.is_set():
            self.gone.set()
            self._server.shutdown()
        self._server.server_close()

    # ---------------------------------------------------------------- upstream
    def forward(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port,
                                          timeout=60)
        try:
            conn.request(method, path, body=body,
                         headers={"Content-Type": "application/json; charset=utf-8"})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def set_status(self, sid: str, text: str) -> None:
        """Show ``text`` in the fake app's status field in one step (the fake driver's
        set-value replaces the value, as React Native re-renders the Text; no clear first,
        which would leave the field blank for a round trip)."""
        try:
            status, data = self.forward("POST", f"/session/{sid}/element", json.dumps(
                {"using": "accessibility id", "value": "coldstart-status"}).encode())
            if status != 200:
                return
            eid = json.loads(data)["value"][_W3C_ELEMENT]
            self.forward("POST", f"/session/{sid}/element/{eid}/value",
                         json.dumps({"text": text, "value": list(text)}).encode())
        except OSError:
            pass

    # ---------------------------------------------------------------- handler
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _reply(self, status: int, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                double.auth_seen.append(self.headers.get("Authorization"))
                path = urlsplit(self.path).path
                hub = re.match(r"^(?:/v0/[^/]+)?/wd/hub", path)  # HeadSpin: /v0/TOKEN/wd/hub
                if hub:
                    path = path[hub.end():] or "/"
                if double.credentials:
                    user, key = double.credentials
                    good = "Basic " + base64.b64encode(f"{user}:{key}".encode()).decode()
                    if self.headers.get("Authorization") != good:
                        self._reply(401, {"value": {"error": "unauthorized",
                                                    "message": "bad credentials"}})
                        return
                payload = json.loads(body) if body else {}
                double.calls.append((method, path, payload))
                local = double.answer(method, path, payload)
                if local is not None:
                    self._reply(*local)
                    return
                try:
                    status, data = double.forward(method, path, body)
                except OSError:  # the real server died: so does this one
                    self.close_connection = True
                    threading.Thread(target=double.stop, daemon=True).start()
                    return
                if method == "POST" and path == "/session" and status == 200:
                    sid = json.loads(data)["value"]["sessionId"]
                    double.apps[sid] = _App(double, sid)
                self._reply(status, data)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        return Handler

    def _break(self, sid: str, app: _App) -> None:
        """Put the launch's ``!FAULT`` in force (see the module doc)."""
        app.broken = True
        self.faults_played.append(str(app.fault))
        if app.fault == "gone":
            self.apps.pop(sid, None)
            self.forward("DELETE", f"/session/{sid}", None)

    def answer(self, method: str, path: str, payload: dict[str, Any]
               ) -> tuple[int, Any] | None:
        """The double's own answer to a request, or ``None`` to forward it."""
        match = _SESSION_RE.match(path)
        if match is None or match.group("sid") not in self.apps:
            return None
        app = self.apps[match.group("sid")]
        rest = match.group("rest") or ""
        if rest == "/execute/sync" and str(payload.get("script", "")).startswith("mobile:"):
            name = payload["script"]
            args = (payload.get("args") or [{}])[0]
            if name == "mobile: queryAppState":
                state = app.state
                if state < 2 and app.fault:
                    app.dead_seen = True
                return 200, {"value": state}
            if name == "mobile: terminateApp":
                return 200, {"value": app.terminate()}
            if name == "mobile: listApps" and self.platform == "ios" and self.no_list_apps:
                return 500, {"value": {"error": "unknown error", "stacktrace": "",
                                       "message": "An unknown server-side error occurred "
                                                  "while processing the command. Original "
                                                  "error: " + self.no_list_apps}}
            if name == "mobile: listApps" and self.platform == "ios":
                # the installation proxy's map of bundle id to Info.plist keys and Path, as
                # the XCUITest driver reads it (installProxyService.listApplications():
                # apps[bundleId].CFBundleExecutable, appium-xcuitest-driver's
                # app-management.js); a new Bundle/Application/<UUID>/ at every install
                return 200, {"value": {} if self.build is None else {"org.coldstart.app": {
                    "CFBundleIdentifier": "org.coldstart.app",
                    "CFBundleExecutable": "ColdstartApp", "CFBundleName": "ColdstartApp",
                    "CFBundleShortVersionString": "1.0",
                    "CFBundleVersion": self.build["version"],
                    "Path": f"/private/var/containers/Bundle/Application/"
                            f"{self.build['uuid']}/ColdstartApp.app"}}}
            if name == "mobile: listApps" and self.platform == "android":
                # UiAutomator2's map of package name to {packageName, versionCode}
                # (appium-android-driver mobileListApps, lib/commands/app-management.ts)
                apps = {} if self.build is None else {"org.coldstart.app": {
                    "packageName": "org.coldstart.app",
                    "versionCode": int(self.build["version"])}}
                return 200, {"value": {"com.android.settings": {
                    "packageName": "com.android.settings", "versionCode": 34}, **apps}}
            if name == "mobile: installApp":
                self.installs.append(str(args.get("app")))
                self.build = {"version": "1", "uuid": str(uuid.uuid4()).upper()}
                return 200, {"value": None}
            if name == "mobile: isLocked":
                return 200, {"value": time.time() < self.locked_until}
            if name in ("mobile: deepLink", "mobile: launchApp", "mobile: activateApp"):
                if self.platform == "ios" and self.take_lock():
                    return 500, {"value": {
                        "error": "unknown error", "stacktrace": "",
                        "message": "An unknown server-side error occurred while processing "
                                   "the command. Original error: The request was denied by "
                                   "service delegate (SBMainWorkspace) for reason: Locked "
                                   "(\"Unable to launch org.coldstart.app because the device "
                                   "was not, or could not be, unlocked\")."}}
                url = args.get("url", "")
                arguments = args.get("arguments") or []
                if "-coldstartScenario" in arguments:
                    url = arguments[arguments.index("-coldstartScenario") + 1]
                if app.state >= 2 and name != "mobile: deepLink":
                    return 200, {"value": None}  # already running: only activated
                app.start(url)
                return 200, {"value": None}
            return None
        if rest == "/se/log/types" and method == "GET":
            types = ["logcat", "bugreport", "server"] if self.platform == "android" else \
                ["syslog", "crashlog", "performance", "server"]
            return 200, {"value": types}
        if rest == "/se/log" and method == "POST":
            kind = payload.get("type")
            if app.log_down > 0 and kind in app.logs:
                app.log_down -= 1
                self.log_failures += 1
                return 500, _PROXY_ERROR
            if app.fault and not app.broken and kind in app.logs:
                with app.lock:  # the crash text is held back until the fault is in force
                    pending = app.logs[kind]
                    ours = [i for i, e in enumerate(pending)
                            if "ReactNativeJS" in e["message"] or "(React)" in e["message"]]
                    if ours or not app.dead_seen:
                        cut = ours[-1] + 1 if ours else 0
                        served, app.logs[kind] = pending[:cut], pending[cut:]
                        return 200, {"value": served}
                self._break(match.group("sid"), app)
                if app.fault == "gone":
                    return None  # the real server answers: invalid session id
            if app.broken:
                return 500, _PROXY_ERROR
            if kind not in app.logs:
                return 500, {"value": {"error": "unknown error",
                                       "message": f"Don't understand log type '{kind}'"}}
            with app.lock:
                entries, app.logs[kind] = app.logs[kind], []
            return 200, {"value": entries}
        if rest == "/element" and payload.get("value") == "coldstart-status" and app.state < 2:
            return 404, {"value": {"error": "no such element", "message": "An element could "
                                   "not be located on the page using the given search "
                                   "parameters.", "stacktrace": ""}}
        if method == "DELETE" and rest == "":
            app.terminate()
        return None
