"""xcrun_double: replays ``xcrun simctl`` / ``xcrun devicectl`` output formats for the kit's tests.

Run through the ``xcrun`` shell script beside this file (tests put the folder on ``PATH``).
State lives in ``$XCRUN_DOUBLE_HOME`` (``state.json``, guarded by a file lock), written by
:class:`tests.doubles.xcrun_double.XcrunDouble`. What it imitates (formats from Apple's help
texts and public scripts, docs/formats.md section D5, docs/formats.md sections 4-6):

* ``simctl list -j devices``, ``bootstatus <udid> -b``, ``install``, ``terminate`` (exit 3
  with "found nothing to terminate" when not running), ``launch`` (prints ``<bundle>: <pid>``;
  ``SIMCTL_CHILD_*`` variables reach the app), ``openurl`` (starts the app with the URL and
  the variables set with ``launchctl setenv``), ``spawn <udid> launchctl list|setenv|unsetenv``
  (``PID<TAB>Status<TAB>Label`` with ``UIKitApplication:<bundle>[xxxx][rb-legacy]``), ``spawn
  <udid> log stream --style ndjson`` (a non-JSON header line, then one JSON record per
  os_log event with ``eventMessage``, ``subsystem``, ``category``, ``processID``...), ``spawn
  <udid> log show --style ndjson --info --start 'YYYY-MM-DD HH:MM:SS' --predicate ...``
  (the unified log's records since that local time, the same JSON, no header);
  commands on a shut-down simulator fail with CoreSimulator's "Unable to lookup in current
  state: Shutdown" (domain=com.apple.CoreSimulator.SimError, code=405), exit 149.
* ``devicectl list devices``, ``device install app``, ``device process launch --console``
  (relays the app's stderr until it exits), ``device info processes``, ``device process
  terminate``, ``device info files --domain-type systemCrashLogs``, ``device copy from``,
  each writing ``{"info": ..., "result": ...}`` (or ``{"error": ...}``) to ``--json-output``.

Simulator states follow CoreSimulator's: ``Booted``, ``Shutting Down``, ``Shutdown``,
``Booting``; a state may be timed (``"next": [{"at": epoch, "state": ...}]`` in the device's
entry), e.g. ``Shutting Down`` for a second, then ``Shutdown``. ``bootstatus -b`` boots a
shut-down simulator (``Booting`` for ``boot_s``) and blocks until it is booted, and fails
while it is still shutting down. A shut-down simulator kills its apps, and its ``log stream``
ends. A paired device that dropped off is listed with ``tunnelState`` ``unavailable`` (or not
at all, with ``drop_style`` ``absent``) until ``gone_until``, and every command naming it
fails as devicectl does ("ERROR: ..." on stderr, exit 1).

The app itself is a real process (``xcrun_double.py __app__``) that follows the next entry of
the state's ``script`` (each launch request takes one; :meth:`XcrunDouble.unused_script`
tells a test what was not played):

* ``completed``, ``wrong-output``, ``unchecked`` (``inference-done`` with neither scores nor
  ``ok``), ``crash@PHASE`` (``crash@done``: a crash in teardown, as a late release of a
  session; the unified log delivers lines asynchronously, and this ``done`` line reaches the
  log stream or the console only once the app is dead), ``js-fatal@PHASE`` (RCTFatal
  before PHASE, no ``error`` line),
  ``error-fatal@PHASE`` (an ``error`` line after PHASE, then RCTFatal's SIGABRT),
  ``error@PHASE`` (an ``error`` line, the app lives on), ``hang@PHASE``, ``vanish@PHASE``
  (dies with no report), ``nostart`` (the request succeeds but no app appears),
  ``launch-exit`` (``simctl launch`` only: the app aborts before its first line, a crash
  report is written, and simctl fails as it does for a process that exited during the
  launch request: ``FBSOpenApplicationServiceErrorDomain, code=1`` ... ``Underlying error
  (domain=FBProcessExit, code=128)``, text recorded in
  https://github.com/appinioGmbH/flutter_packages/issues/147);
* simulators: ``shutdown[:S]`` (the simulator shuts down at the launch request, ``Shutting
  Down`` for S seconds first), ``shutdown@PHASE[:S]`` (it shuts down after PHASE),
  ``erase@PHASE`` (it shuts down after PHASE and is erased, ``simctl erase``: its apps are
  gone; an ``openurl`` then fails as CoreSimulator does for a scheme nobody handles,
  ``Simulator device failed to open <url>``, NSOSStatusErrorDomain -10814),
  ``logend-crash@PHASE`` (after PHASE every ``log stream`` of the simulator ends, as a
  ``simctl spawn`` whose logd connection went away does; half a second later the app
  crashes as ``crash@PHASE``'s next phase would), ``logdrop-crash@PHASE`` (every ``log
  stream`` ends just as PHASE is logged, without delivering that line, which the unified
  log keeps (``log show`` has it); half a second later the app crashes as ``crash@PHASE``
  would), ``logdrop-done@PHASE`` (the same, and the app logs PHASE and every later phase
  through ``done`` at once, before any new stream can start, and runs on),
  ``logdown-crash@PHASE:S`` (as ``logdrop-crash@PHASE``, and for S seconds every new ``log
  stream`` ends at once with no header line, exit 1, while ``log show`` still reads the
  stored log),
  ``foreign@PHASE`` (after PHASE someone
  else installs another build of the app: its executable differs, and the running app is
  terminated with no crash report, as an install over a running app does);
* both: ``clockback@PHASE:S`` (after PHASE the device's clock is set back by S seconds,
  3600 by default, a simulator's being the Mac's; a moment later the app crashes as
  ``crash@PHASE``'s next phase would, and ReportCrash names and stamps its report by the
  clock set back);
* devices: ``drop:S`` (the device drops off for S seconds at the launch request),
  ``locked:S`` (the device is locked for S seconds from the launch request: every launch
  request meanwhile fails with devicectl's error for a locked device, ``... for reason:
  Locked ("Unable to launch <bundle> because the device was not, or could not be,
  unlocked")`` ... ``BSErrorCodeDescription
  = Locked``, exit 1), ``console-exit@PHASE`` (after PHASE devicectl's console dies with its
  own error while the device stays reachable; the app runs on and completes, unseen),
  ``console-lost-crash@PHASE`` (after PHASE the console relay dies: ``ERROR: The connection
  to the device's console was interrupted. (com.apple.dt.CoreDeviceError error 4 (0x4))``,
  exit 1, the device reachable; 0.15 s later the app crashes as ``crash@PHASE`` would, its
  ``.ips`` written as ever), ``launch-hang`` (devicectl's launch request hangs: no process
  is started, nothing is printed, the app a previous launch left running is not
  terminated, and devicectl never exits by itself),
  ``drop@PHASE:S`` (it drops off after PHASE: the console ends with devicectl's error),
  ``mute@PHASE:S`` (it drops off after PHASE and the console just goes quiet).

A ``~D`` suffix (``error-fatal@sessions-created~2.2``) writes that launch's crash report D
seconds after the death instead of ``report_delay_s``. A crash is a real
``SIGSEGV``/``SIGABRT`` of the app's process; a separate "ReportCrash" process writes the
``.ips``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

HOME = Path(os.environ.get("XCRUN_DOUBLE_HOME", "/nonexistent"))
PHASES = ("start", "models-ready", "sessions-created", "inference-done", "sessions-released",
          "done")
#: Which crash a phase's death looks like: the defect surfaces in creation (after
#: models-ready), inference (after sessions-created) and release (after inference-done).
CRASH_KIND = {"start": "abort", "models-ready": "uaf-create", "sessions-created": "uaf-infer",
              "inference-done": "uaf-release", "sessions-released": "abort",
              "done": "uaf-release"}

# --------------------------------------------------------------------------- state
@contextlib.contextmanager
def locked_state(write: bool = True):
    HOME.mkdir(parents=True, exist_ok=True)
    with open(HOME / "state.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = HOME / "state.json"
        state = json.loads(path.read_text())
        yield state
        if write:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state, indent=1))
            os.replace(tmp, path)


def log_call(argv: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith("SIMCTL_CHILD_")}
    with open(HOME / "calls.jsonl", "a") as fh:
        fh.write(json.dumps({"argv": argv, "env": env}) + "\n")


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def fail(message: str, code: int = 1) -> None:
    sys.stderr.write(message)
    sys.exit(code)


def settle(device: dict) -> str:
    """Apply the device's timed state changes that are due; its state now."""
    now = time.time()
    pending = device.get("next") or []
    while pending and pending[0]["at"] <= now:
        device["state"] = pending.pop(0)["state"]
    device["next"] = pending
    return device["state"]


def sim_device(state: dict, udid: str) -> dict:
    for runtime_devices in state["devices"].values():
        for device in runtime_devices:
            if device["udid"] == udid:
                settle(device)
                return device
    fail("Invalid device: %s\n" % udid, 148)
    raise AssertionError


def state_error(current: str) -> str:
    return ("An error was encountered processing the command "
            "(domain=com.apple.CoreSimulator.SimError, code=405):\n"
            f"Unable to lookup in current state: {current}\n")


def require_booted(state: dict, udid: str) -> dict:
    device = sim_device(state, udid)
    if device["state"] != "Booted":
        fail(state_error(device["state"]), 149)
    return device


def shut_down(state: dict, udid: str, shutting_s: float) -> None:
    """The simulator shuts down: its apps are killed; ``Shutting Down``, then ``Shutdown``."""
    device = sim_device(state, udid)
    device["state"] = "Shutting Down" if shutting_s > 0 else "Shutdown"
    device["next"] = [{"at": time.time() + shutting_s, "state": "Shutdown"}] \
        if shutting_s > 0 else []
    for key, pid in list(state.setdefault("running", {}).items()):
        if key.startswith(f"{udid}/"):
            if alive(pid) and pid != os.getpid():  # an app that shuts it down dies after
                os.kill(pid, signal.SIGKILL)
            state["running"].pop(key)
    state.setdefault("launchctl_env", {}).pop(udid, None)  # launchd starts afresh


def split_outcome(outcome: str) -> tuple[str, str, str, float | None]:
    """``kind@phase:arg~delay`` -> (kind, phase, arg, report delay)."""
    outcome, _, delay = outcome.partition("~")
    head, _, arg = outcome.partition(":")
    kind, _, at = head.partition("@")
    return kind, at, arg, float(delay) if delay else None


def next_outcome(state: dict) -> str:
    script = state.setdefault("script", [])
    index = state.get("launches", 0)
    state["launches"] = index + 1
    return script[index] if index < len(script) else "completed"


def physical_gone(device: dict) -> bool:
    return time.time() < device.get("gone_until", 0)


# --------------------------------------------------------------------------- app
def start_app(udid: str, bundle: str, url: str | None, env: dict[str, str], outcome: str,
              console: bool = False) -> subprocess.Popen:
    argv = [sys.executable, "-S", __file__, "__app__", udid, bundle, url or "", outcome,
            "console" if console else "log"]
    repo = str(Path(__file__).resolve().parents[3])  # the app formats lines with kit.protocol
    # the app runs on the device, never in the host tool's process group: stopping the
    # console (the kit kills its group) must not kill the app, as on a real device
    return subprocess.Popen(argv, env={**os.environ, "XCRUN_DOUBLE_APP_ENV": json.dumps(env),
                                       "PYTHONPATH": repo},
                            start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=None if console else subprocess.DEVNULL,
                            stderr=None if console else subprocess.DEVNULL)


def app_main(udid: str, bundle: str, url: str, outcome: str, mode: str) -> None:
    from kit.protocol import format_event

    with locked_state(write=False) as state:
        delay_s = state.get("phase_delay_s", 0.05)
        report_delay_s = state.get("report_delay_s", 0.4)
        simulator = mode == "log"
    query = dict(parse_qsl(urlsplit(url).query)) if url else {}
    launch_id = query.get("id", "no-id")
    kind, at, arg, own_delay = split_outcome(outcome)
    if own_delay is not None:
        report_delay_s = own_delay
    t0 = time.monotonic()
    log_path = HOME / f"sim-{udid}" / "log.ndjson"
    pid = os.getpid()

    def text_of(phase: str, **fields: object) -> str:
        """The line as the log stream (an ndjson record) or the console shows it."""
        line = format_event(launch_id, phase, (time.monotonic() - t0) * 1000.0, **fields)
        if mode == "console":
            stamp = time.strftime("%Y-%m-%d %H:%M:%S.000000+0000", time.gmtime())
            return f"{stamp} ColdstartApp[{pid}:91001] [javascript] {line}\n"
        record = {"traceID": 0, "eventMessage": line, "eventType": "logEvent",
                  "formatString": "%{public}s", "subsystem": "com.facebook.react.log",
                  "category": "javascript", "threadID": 91001, "processID": pid,
                  "processImagePath": f"/CoreSimulator/Devices/{udid}/ColdstartApp.app/"
                                      "ColdstartApp",
                  "timestamp": time.strftime("%Y-%m-%d %H:%M:%S.000000+0000", time.gmtime()),
                  "messageType": "Default"}
        return json.dumps(record) + "\n"

    def say(phase: str, **fields: object) -> None:
        deliver(mode, log_path, text_of(phase, **fields))

    checked = kind not in ("unchecked",)
    fields = {
        "start": {"scenario": url, "platform": "ios",
                  "poison": json.loads(os.environ.get("XCRUN_DOUBLE_APP_ENV", "{}"))},
        "models-ready": {"models": ["melspectrogram", "embedding_model", "hey_jarvis_v0.1"],
                         "load": "path"},
        "sessions-created": {"sessions": [{"i": i, "model": m, "start_ms": 40.0 + i,
                                           "end_ms": 90.0 + i} for i, m in enumerate(
                                               ("melspectrogram", "embedding_model",
                                                "hey_jarvis_v0.1"))],
                             "eps": ["xnnpack", "cpu"], "ort_version": "1.24.3"},
        "inference-done": {"scores": [0.998019], "score": 0.998019,
                           "ok": kind != "wrong-output", "max_diff": 0.0 if kind !=
                           "wrong-output" else 0.4} if checked else {},
    }
    for phase in PHASES if kind != "launch-exit" else ():
        time.sleep(delay_s)
        if kind == "js-fatal" and phase == at:
            break  # the JS error is thrown before this phase is reported
        if kind == "crash" and phase == at == "done":  # delivered after the death
            subprocess.Popen([sys.executable, "-S", __file__, "__logd__", str(pid), mode,
                              str(log_path)], stdin=subprocess.DEVNULL,
                             env={**os.environ, "XCRUN_DOUBLE_LATE_LINE": text_of(phase)})
            break
        if kind in ("logdrop-crash", "logdrop-done", "logdown-crash") and phase == at:
            with locked_state() as state:  # no stream reads (nor starts) meanwhile
                gens = state.setdefault("log_generation", {})
                gens[udid] = gens.get(udid, 0) + 1
                if kind == "logdown-crash":
                    state.setdefault("log_down_until", {})[udid] = time.time() + float(
                        arg or 5)
                for later in PHASES[PHASES.index(phase):] if kind == "logdrop-done" \
                        else (phase,):
                    say(later, **fields.get(later, {}))
            if kind == "logdrop-done":
                kind = "completed"
                break
            time.sleep(0.5)
            kind = "crash"
            break
        say(phase, **fields.get(phase, {}))
        if phase != at:
            continue
        if kind == "error":
            say("error", message="InferenceSession.create rejected: no such file",
                after=phase)
        if kind == "error-fatal":
            say("error", message="Unhandled JS Exception: TypeError: undefined is not a "
                                 "function", after=phase, fatal=True)
            time.sleep(0.05)  # RCTFatal raises right after the error is logged
        if kind in ("shutdown", "erase"):  # the simulator shuts down under the app
            with locked_state() as state:
                shut_down(state, udid, float(arg or 0))
                if kind == "erase":  # `simctl erase`: content and settings are gone
                    for bundle_dir in state.get("installed", {}).pop(udid, {}).values():
                        shutil.rmtree(bundle_dir, ignore_errors=True)
            os.kill(pid, signal.SIGKILL)
        if kind == "logend-crash":  # the log stream ends; the app dies a moment later
            with locked_state() as state:
                gens = state.setdefault("log_generation", {})
                gens[udid] = gens.get(udid, 0) + 1
            time.sleep(0.5)
            kind, at = "crash", PHASES[PHASES.index(phase) + 1]
            break
        if kind == "clockback":  # the device's clock is set back; the app dies a moment
            # later, and its report and lines carry the clock as it is then
            with locked_state() as state:
                state["clock_offset_s"] = state.get("clock_offset_s", 0.0) - float(arg or 3600)
            time.sleep(0.2)
            kind, at = "crash", PHASES[PHASES.index(phase) + 1]
            break
        if kind == "foreign":  # another build replaces the app and terminates it
            import uuid

            with locked_state() as state:
                where = state.get("installed", {}).get(udid, {}).get(bundle)
                if where and simulator:
                    Path(where, "ColdstartApp").write_bytes(b"\xcf\xfa\xed\xfe-other-build")
                for device in state.get("physical", []) if not simulator else ():
                    if device["udid"] == udid:
                        device["app_version"] = "2"
                        device["app_url"] = ("file:///private/var/containers/Bundle/"
                                             f"Application/{str(uuid.uuid4()).upper()}/"
                                             "ColdstartApp.app/")
            os.kill(pid, signal.SIGKILL)
        if kind == "console-lost-crash":  # the console relay dies; the app crashes soon
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.kill(os.getppid(), signal.SIGUSR2)
            time.sleep(0.15)
            kind = "crash"
            break
        if kind == "console-exit":  # devicectl's console dies; the app goes on unseen
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.kill(os.getppid(), signal.SIGUSR1)
            kind = "completed"
            mode = "gone"
            continue
        if kind in ("drop", "mute"):  # the device drops off: devicectl's console ends with
            # its error ("drop") or goes quiet and never ends ("mute")
            with locked_state() as state:
                for device in state.get("physical", []):
                    if device["udid"] == udid:
                        device["gone_until"] = time.time() + float(arg or 5)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)  # nothing of the app reaches this Mac any more
            os.dup2(devnull, 2)
            if kind == "drop":
                os.kill(os.getppid(), signal.SIGUSR1)
            kind = "hang"  # the app itself runs on, out of sight
        break
    if kind in ("completed", "wrong-output", "unchecked", "error", "hang"):
        while True:  # an iOS app keeps running until it is terminated
            time.sleep(1)
    report = {"crash": CRASH_KIND.get(at, "abort"), "js-fatal": "js-fatal",
              "error-fatal": "js-fatal", "launch-exit": "abort"}.get(kind)
    if report is not None:
        writer = [sys.executable, "-S", __file__, "__reportcrash__", udid, bundle, str(pid), report,
                  str(report_delay_s), "sim" if simulator else "device"]
        subprocess.Popen(writer, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a real death, but no core file
    if kind == "vanish":
        os.kill(pid, signal.SIGKILL)
    os.kill(pid, signal.SIGSEGV if report and report.startswith("uaf") else signal.SIGABRT)


def deliver(mode: str, log_path: Path, text: str) -> None:
    """One line of the app to its reader: the console (stderr) or the simulator's log
    (``gone``: nobody reads any more)."""
    if mode == "gone":
        return
    if mode == "console":
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    with open(log_path, "a") as fh:
        fh.write(text)


def logd_main(pid: str, mode: str, log_path: str) -> None:
    """Deliver ``XCRUN_DOUBLE_LATE_LINE`` once process ``pid`` is dead (see ``crash@done``)."""
    while alive(int(pid)):
        time.sleep(0.005)
    deliver(mode, Path(log_path), os.environ["XCRUN_DOUBLE_LATE_LINE"])


def reportcrash_main(udid: str, bundle: str, pid: str, kind: str, delay_s: str,
                     where: str) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from ips_double import make_ips

    time.sleep(float(delay_s))
    with locked_state(write=False) as state:
        directory = Path(state["reports_dir"]) if where == "sim" else \
            HOME / f"device-{udid}" / "crashes"
        now = time.time() + state.get("clock_offset_s", 0.0)  # the device's clock
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d-%H%M%S", time.localtime(now))
    final = directory / f"ColdstartApp-{stamp}-{pid}.ips"
    text = make_ips(kind, udid=udid, pid=int(pid), bundle_id=bundle,
                    simulator=where == "sim")
    head, body = text.split("\n", 1)
    with open(final, "w") as fh:  # ReportCrash writes the header first, then the body
        fh.write(head + "\n")
        fh.flush()
        time.sleep(0.05)
        fh.write(body)
    os.utime(final, (now, now))  # written by the device's clock (a simulator's: the Mac's)


# --------------------------------------------------------------------------- simctl
def simctl(args: list[str]) -> None:
    command, rest = args[0], args[1:]
    if command == "list":
        with locked_state(write=False) as state:
            for devices in state["devices"].values():
                for device in devices:
                    settle(device)
            print(json.dumps({"devices": {
                runtime: [{k: v for k, v in d.items() if k != "next"} for d in devices]
                for runtime, devices in state["devices"].items()}}, indent=2))
        return
    if command == "bootstatus":
        with locked_state() as state:
            device = sim_device(state, rest[0])
            print(f"Monitoring boot status for {device['name']} ({device['udid']}).",
                  flush=True)
            current = device["state"]
            if current == "Shutting Down":
                fail("An error was encountered processing the command "
                     "(domain=com.apple.CoreSimulator.SimError, code=405):\n"
                     "Unable to boot device in current state: Shutting Down\n", 149)
            boot_s = float(state.get("boot_s", 0.1))
            ready_at = time.time() + boot_s
            if current == "Shutdown":
                device["state"] = "Booting"
                device["next"] = [{"at": ready_at, "state": "Booted"}]
            elif current == "Booting":
                ready_at = max([n["at"] for n in device.get("next", [])] or [time.time()])
        if current == "Booted":
            print("Device already booted, nothing to do.")
            return
        time.sleep(max(0.0, ready_at - time.time()))
        print(f"Device booted in {boot_s:g} seconds")
        return
    if command == "install":
        udid, app = rest[0], rest[1]
        import plistlib

        with locked_state() as state:
            require_booted(state, udid)
            info = plistlib.loads((Path(app) / "Info.plist").read_bytes())
            copy = HOME / f"sim-{udid}" / "Bundle" / info["CFBundleIdentifier"] / Path(app).name
            shutil.rmtree(copy, ignore_errors=True)  # simctl install replaces the bundle
            copy.mkdir(parents=True)
            for item in Path(app).iterdir():  # the bundle's files (the double's apps are flat)
                if item.is_file():
                    shutil.copyfile(item, copy / item.name)
            state.setdefault("installed", {}).setdefault(udid, {})[
                info["CFBundleIdentifier"]] = str(copy)
        return
    if command == "get_app_container":
        udid, bundle = rest[0], rest[1]
        with locked_state(write=False) as state:
            require_booted(state, udid)
            where = state.get("installed", {}).get(udid, {}).get(bundle)
        if where is None:  # as recorded in Appium's simctl log for an app that is not
            # installed: https://github.com/appium/appium/issues/15256 (and #7856); simctl's
            # exit status is not shown there (the kit reads the text, not the status)
            fail("An error was encountered processing the command "
                 "(domain=NSPOSIXErrorDomain, code=2):\n"
                 "The operation couldn\u2019t be completed. No such file or directory\n"
                 "No such file or directory\n", 2)
        print(where)
        return
    if command == "terminate":
        udid, bundle = rest
        with locked_state() as state:
            require_booted(state, udid)
            pid = state.setdefault("running", {}).get(f"{udid}/{bundle}")
            if not alive(pid):
                fail("An error was encountered processing the command "
                     "(domain=com.apple.CoreSimulator.SimError, code=3):\n"
                     "found nothing to terminate\n", 3)
            os.kill(pid, signal.SIGKILL)
            state["running"].pop(f"{udid}/{bundle}")
        return
    if command in ("launch", "openurl"):
        flags = []
        while rest and rest[0].startswith("-"):  # simctl launch's options come first
            flags.append(rest.pop(0))
        with locked_state() as state:
            udid = rest[0]
            require_booted(state, udid)
            outcome = next_outcome(state)
            kind, at, arg, _delay = split_outcome(outcome)
            shutdown_now = kind == "shutdown" and not at
            if shutdown_now:
                shut_down(state, udid, float(arg or 0))
        if shutdown_now:
            fail(state_error("Shutdown" if not arg else "Shutting Down"), 149)
        with locked_state() as state:
            if command == "launch":
                bundle, app_args = rest[1], rest[2:]
                url = app_args[app_args.index("-coldstartScenario") + 1] \
                    if "-coldstartScenario" in app_args else None
                env = {k[len("SIMCTL_CHILD_"):]: v for k, v in os.environ.items()
                       if k.startswith("SIMCTL_CHILD_")}
            else:
                url = rest[1]
                bundle = state.get("url_handlers", {}).get(urlsplit(url).scheme)
                if bundle not in state.get("installed", {}).get(udid, {}):
                    fail("An error was encountered processing the command "
                         "(domain=NSOSStatusErrorDomain, code=-10814):\n"
                         "Simulator device failed to open " + url + ".\n", 1)
                env = dict(state.get("launchctl_env", {}).get(udid, {}))
            if bundle not in state.get("installed", {}).get(udid, {}):
                fail("An error was encountered processing the command "
                     "(domain=FBSOpenApplicationServiceErrorDomain, code=4):\n"
                     f"The request to open \"{bundle}\" failed.\n", 4)
            key = f"{udid}/{bundle}"
            old = state.setdefault("running", {}).get(key)
            if alive(old) and "--terminate-running-process" in flags:
                os.kill(old, signal.SIGKILL)
            if outcome == "nostart":  # the request succeeds, the app never comes up
                print(f"{bundle}: 0" if command == "launch" else "", end="")
                return
            proc = start_app(udid, bundle, url, env, outcome)
            state["running"][key] = proc.pid
        if command == "launch" and kind == "launch-exit":
            proc.wait()  # SpringBoard sees the process exit before the launch completes
            fail("An error was encountered processing the command "
                 "(domain=FBSOpenApplicationServiceErrorDomain, code=1):\n"
                 f"The request to open \"{bundle}\" failed.\n"
                 "The request was denied by service delegate (SBMainWorkspace).\n"
                 "Underlying error (domain=FBProcessExit, code=128):\n"
                 "\tThe operation couldn\u2019t be completed. The process exited.\n"
                 "\tThe process exited.\n", 1)
        if command == "launch":
            print(f"{bundle}: {proc.pid}")
        return
    if command == "spawn":
        udid, tool, tool_args = rest[0], rest[1], rest[2:]
        with locked_state(write=False) as state:
            require_booted(state, udid)
        if tool == "launchctl":
            launchctl(udid, tool_args)
        elif tool == "log" and tool_args[:1] == ["stream"]:
            log_stream(udid, tool_args[1:])
        elif tool == "log" and tool_args[:1] == ["show"]:
            log_show(udid, tool_args[1:])
        else:
            fail(f"spawn: {tool}: not supported by the double\n", 2)
        return
    fail(f"simctl: unknown subcommand {command}\n", 64)


def launchctl(udid: str, args: list[str]) -> None:
    if args[0] == "list":
        with locked_state(write=False) as state:
            rows = ["PID\tStatus\tLabel", "-\t0\tcom.apple.mobile.keybagd",
                    "118\t0\tcom.apple.backboardd"]
            for key, pid in state.get("running", {}).items():
                sim, bundle = key.split("/", 1)
                if sim == udid and alive(pid):
                    rows.append(f"{pid}\t0\tUIKitApplication:{bundle}[{pid % 65536:04x}]"
                                "[rb-legacy]")
        print("\n".join(rows))
    elif args[0] in ("setenv", "unsetenv"):
        with locked_state() as state:
            env = state.setdefault("launchctl_env", {}).setdefault(udid, {})
            if args[0] == "setenv":
                env[args[1]] = args[2]
            else:
                env.pop(args[1], None)


def log_stream(udid: str, args: list[str]) -> None:
    """Relay the simulator's log records that the predicate names, until it shuts down."""
    predicate = args[args.index("--predicate") + 1] if "--predicate" in args else ""
    path = HOME / f"sim-{udid}" / "log.ndjson"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    with locked_state(write=False) as state:
        down = time.time() < state.get("log_down_until", {}).get(udid, 0)
    if down:  # the simulator's logd cannot be reached: the stream ends at once
        sys.exit(1)
    print(f'Filtering the log data using "{predicate}"', flush=True)
    next_check = time.monotonic() + 0.2
    parent = os.getppid()
    with locked_state(write=False) as state:
        generation = state.get("log_generation", {}).get(udid, 0)
    with open(path) as fh:
        fh.seek(0, os.SEEK_END)
        while True:
            line = fh.readline()
            if not line:
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + 0.2
                    if os.getppid() != parent:
                        return  # whoever started it is gone: do not outlive it
                    with locked_state(write=False) as state:
                        if sim_device(state, udid)["state"] != "Booted":
                            return  # simctl spawn ends with the simulator
                        if state.get("log_generation", {}).get(udid, 0) != generation:
                            return  # its logd connection went away: the stream ends
                time.sleep(0.02)
                continue
            record = json.loads(line)
            if f'"{record.get("subsystem")}"' in predicate:
                with locked_state(write=False) as state:
                    if state.get("log_generation", {}).get(udid, 0) != generation:
                        return  # its logd connection went away: this line is not delivered
                sys.stdout.write(line)
                sys.stdout.flush()


def log_show(udid: str, args: list[str]) -> None:
    """The simulator's log records since ``--start`` (local time) that the predicate names
    (``log show --style ndjson``)."""
    import calendar

    predicate = args[args.index("--predicate") + 1] if "--predicate" in args else ""
    start = args[args.index("--start") + 1] if "--start" in args else "1970-01-01 00:00:00"
    try:
        since = time.mktime(time.strptime(start, "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        fail(f"log: Could not parse start date: {start}\n", 64)
    path = HOME / f"sim-{udid}" / "log.ndjson"
    if not path.exists():
        return
    for line in path.read_text().splitlines():
        record = json.loads(line)
        stamp = calendar.timegm(time.strptime(record["timestamp"][:19], "%Y-%m-%d %H:%M:%S"))
        if stamp >= since and f'"{record.get("subsystem")}"' in predicate:
            sys.stdout.write(line + "\n")


# --------------------------------------------------------------------------- devicectl
def option(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def write_json(args: list[str], result: dict | None = None, error: str | None = None) -> None:
    out = option(args, "--json-output")
    data = {"info": {"arguments": ["devicectl", *args], "commandType":
                     "devicectl." + ".".join(a for a in args[:3] if not a.startswith("-")),
                     "environment": {"TERM": "xterm-256color"},
                     "outcome": "failed" if error else "success", "version": "341"}}
    if error:
        data["error"] = {"code": 1000, "domain": "com.apple.dt.CoreDeviceError",
                         "userInfo": {"NSLocalizedDescription": {"string": error}}}
    else:
        data["result"] = result or {}
    if out:
        Path(out).write_text(json.dumps(data, indent=2))
    if error:
        sys.stderr.write(f"ERROR: {error}\n")
        sys.exit(1)


def device_for(state: dict, args: list[str]) -> dict:
    wanted = option(args, "--device")
    for device in state.get("physical", []):
        if wanted in (device["identifier"], device["udid"]):
            if physical_gone(device):
                write_json(args, error="The device is not connected. (com.apple.dt."
                                       "CoreDeviceError error 4000 (0xFA0))")
            return device
    write_json(args, error="The specified device was not found.")
    raise AssertionError


def connection_lost(*_args: object) -> None:
    """SIGUSR1 from the app: the device dropped off mid-launch (see app_main)."""
    sys.stderr.write("ERROR: The connection to the device was lost. (com.apple.dt."
                     "CoreDeviceError error 4 (0x04))\n")
    sys.stderr.flush()
    os._exit(1)


def console_interrupted(*_args: object) -> None:
    """SIGUSR2 from the app: the console relay died, the device still reachable (see
    ``console-lost-crash``)."""
    sys.stderr.write("ERROR: The connection to the device's console was interrupted. "
                     "(com.apple.dt.CoreDeviceError error 4 (0x4))\n")
    sys.stderr.flush()
    os._exit(1)


def devicectl(args: list[str]) -> None:
    if args[:2] == ["list", "devices"]:
        with locked_state(write=False) as state:
            absent = state.get("drop_style") == "absent"
            devices = [{"identifier": d["identifier"],
                        "deviceProperties": {"name": d["name"], "osVersionNumber": "18.2"},
                        "hardwareProperties": {"udid": d["udid"], "platform": "iOS",
                                               "marketingName": "iPhone 15"},
                        "connectionProperties": {
                            "pairingState": "paired",
                            "tunnelState": "unavailable" if physical_gone(d) else
                            "connected", **({} if physical_gone(d) else
                                            {"transportType": "wired"})}}
                       for d in state.get("physical", [])
                       if not (absent and physical_gone(d))]
        write_json(args, {"devices": devices})
        return
    if args[:3] == ["device", "install", "app"]:
        import uuid

        with locked_state() as state:
            device = device_for(state, args)
            device.setdefault("installed", []).append(args[5])
            device["app_url"] = ("file:///private/var/containers/Bundle/Application/"
                                 f"{str(uuid.uuid4()).upper()}/ColdstartApp.app/")
        write_json(args, {"installedApplications": [{"bundleID": "org.coldstart.app"}]})
        return
    if args[:3] == ["device", "process", "launch"]:
        with locked_state() as state:
            device = device_for(state, args)
            outcome = next_outcome(state)
            kind, at, arg, _delay = split_outcome(outcome)
            udid = device["udid"]
            old = state.setdefault("running", {}).get(f"device-{udid}")
            if alive(old) and "--terminate-existing" in args and kind != "launch-hang":
                os.kill(old, signal.SIGKILL)
            if kind == "drop" and not at:
                device["gone_until"] = time.time() + float(arg or 5)
            if kind == "locked" and not at:
                device["locked_until"] = time.time() + float(arg or 5)
            locked = time.time() < device.get("locked_until", 0)
        if locked:  # devicectl on a locked device: SpringBoard's denial, as recorded in
            # https://github.com/rithikmahajan/app-front-nov-25/blob/main/IOS_SIMULATOR_LOCKED_SOLUTION.md
            # ("The request was denied by service delegate (SBMainWorkspace) for reason:
            # Locked (...)"), under CoreDeviceError 10002 with "BSErrorCodeDescription =
            # Locked" (FBSOpenApplicationErrorDomain error 7), the line public scripts match
            bundle = args[-1]
            sys.stderr.write(
                "ERROR: The application failed to launch. (com.apple.dt.CoreDeviceError "
                "error 10002 (0x2712))\n"
                f"       BundleIdentifier = {bundle}\n"
                "       The request was denied by service delegate (SBMainWorkspace) for "
                f"reason: Locked (\"Unable to launch {bundle} because the device was not, "
                "or could not be, unlocked\").\n"
                "       BSErrorCodeDescription = Locked\n")
            sys.exit(1)
        if kind == "drop" and not at:
            sys.stderr.write("ERROR: The device is not connected. (com.apple.dt."
                             "CoreDeviceError error 4000 (0xFA0))\n")
            sys.exit(1)
        if kind == "launch-hang":  # the request never starts a process, nor ends
            while True:
                time.sleep(1)
        env = json.loads(option(args, "--environment-variables") or "{}")
        url = option(args, "--payload-url")
        bundle = args[-1]
        signal.signal(signal.SIGUSR1, connection_lost)
        signal.signal(signal.SIGUSR2, console_interrupted)
        with locked_state() as state:  # listed before the app (which reads the state
            # under this lock first) can print anything
            proc = start_app(udid, bundle, url, env, outcome, console="--console" in args)
            state["running"][f"device-{udid}"] = proc.pid
        code = proc.wait()
        if code < 0:
            sys.stderr.write(f"App terminated due to signal {-code}.\n")
        return
    if args[:3] == ["device", "info", "apps"]:
        with locked_state(write=False) as state:
            device = device_for(state, args)
        apps = [{"appClip": False, "builtByDeveloper": True, "bundleIdentifier":
                 "org.coldstart.app", "bundleVersion": device.get("app_version", "1"),
                 "defaultApp": False, "hidden": False, "internalApp": False,
                 "name": "ColdstartApp", "removable": True, "url": device["app_url"],
                 "version": "1.0"}] if device.get("app_url") else []
        wanted = option(args, "--bundle-id")
        # the keys of a recorded `devicectl device info apps --bundle-id` answer (devicectl
        # version 341): https://github.com/flutter/flutter/blob/master/packages/flutter_tools/
        # test/general.shard/ios/core_devices_test.dart ("Successfully parses apps")
        write_json(args, {"apps": [a for a in apps if wanted in (None, a["bundleIdentifier"])],
                          "defaultAppsIncluded": False, "deviceIdentifier":
                              device["identifier"], "hiddenAppsIncluded": False,
                          "internalAppsIncluded": False, "removableAppsIncluded": True,
                          **({"matchingBundleIdentifier": wanted} if wanted else {})})
        return
    if args[:3] == ["device", "info", "processes"]:
        with locked_state(write=False) as state:
            device = device_for(state, args)
            pid = state.get("running", {}).get(f"device-{device['udid']}")
        procs = [{"processIdentifier": 1, "executable": "file:///sbin/launchd"}]
        if alive(pid):
            procs.append({"processIdentifier": pid, "executable":
                          "file:///private/var/containers/Bundle/Application/X/"
                          "ColdstartApp.app/ColdstartApp"})
        write_json(args, {"runningProcesses": procs})
        return
    if args[:3] == ["device", "process", "terminate"]:
        with locked_state(write=False) as state:
            device_for(state, args)
        pid = int(option(args, "--pid") or 0)
        if not alive(pid):
            write_json(args, error=f"No process with PID {pid} was found.")
        os.kill(pid, signal.SIGKILL)
        write_json(args, {})
        return
    if args[:3] == ["device", "info", "files"]:
        with locked_state(write=False) as state:
            device = device_for(state, args)
        folder = HOME / f"device-{device['udid']}" / "crashes"
        files = sorted(folder.iterdir()) if folder.exists() else []
        write_json(args, {"files": [{"relativePath": p.name, "fileSize": p.stat().st_size}
                                    for p in files]})
        return
    if args[:3] == ["device", "copy", "from"]:
        with locked_state(write=False) as state:
            device = device_for(state, args)
        source = HOME / f"device-{device['udid']}" / "crashes" / (option(args, "--source")
                                                                    or "")
        if not source.is_file():
            write_json(args, error=f"The file {source.name} could not be found.")
        shutil.copyfile(source, option(args, "--destination") or "")
        write_json(args, {})
        return
    write_json(args, error=f"unknown devicectl command {' '.join(args[:3])}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["__app__"]:
        app_main(*argv[1:6])
        return
    if argv[:1] == ["__logd__"]:
        logd_main(*argv[1:4])
        return
    if argv[:1] == ["__reportcrash__"]:
        reportcrash_main(*argv[1:7])
        return
    log_call(argv)
    if not argv:
        fail("Usage: xcrun [options] <tool name> ... arguments ...\n", 1)
    tool, rest = argv[0], argv[1:]
    if tool == "simctl":
        simctl(rest)
    elif tool == "devicectl":
        devicectl(rest)
    else:
        fail(f'xcrun: error: unable to find utility "{tool}", not a developer tool or in '
             "PATH\n", 72)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    main(sys.argv[1:])
