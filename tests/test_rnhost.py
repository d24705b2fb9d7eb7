"""The rn-host target (docs/rn-host.md): the app's own JS with onnxruntime-react-native's C++
in the Debian root.

The first tests read files only (and run ``node`` on the stand-in); the ``host`` ones need
the prepared runtime and `coldstart rn-host build` (scripts/setup.sh does both) and fail
with that hint if not.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kit.analysis.target import hold_never_engaged, is_eligible
from kit.campaign import load_campaign
from kit.records import Outcome
from tests.conftest import coldstart, one_line_error

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "rn-app"
#: the app's own sources: what runs on a phone (tests, scripts and the host shell excluded)
APP_SOURCES = [APP / "index.js", APP / "App.tsx", *sorted((APP / "src").glob("*.ts*"))]


def react_native_usage() -> dict[str, set[str]]:
    """Each name the app imports from ``react-native`` -> the members it reads of it
    (``Linking.getInitialURL``, ``NativeModules.ColdstartNative``...)."""
    used: dict[str, set[str]] = {}
    for path in APP_SOURCES:
        text = path.read_text()
        for names in re.findall(r"import\s*\{([^}]*)\}\s*from\s*'react-native'", text):
            for item in names.split(","):
                parts = item.split()
                if not parts:
                    continue
                name, local = parts[0], parts[-1]  # `Platform as RNPlatform`
                members = used.setdefault(name, set())
                members.update(re.findall(rf"\b{re.escape(local)}\??\.(\w+)", text))
    return used


def coldstart_native_members() -> set[str]:
    """The members of the app's ``ColdstartNativeModule`` interface (src/native.ts)."""
    text = (APP / "src" / "native.ts").read_text()
    body = text[text.index("export interface ColdstartNativeModule"):]
    body = body[:body.index("\n}")]
    return set(re.findall(r"^\s+(?:readonly\s+)?(\w+)\??[(:]", body, re.M))


def stand_in_shape() -> dict[str, list[str] | None]:
    """The stand-in's exports -> their own keys (``None`` for a non-object), read by node."""
    node = shutil.which("node")
    assert node is not None, "rn-host needs node (Debian: apt-get install nodejs)"
    script = ("import(process.argv[1]).then(m => console.log(JSON.stringify(Object.fromEntries("
              "Object.entries(m).map(([k, v]) => [k, v !== null && typeof v === 'object' ? "
              "Object.keys(v) : null])))))")
    proc = subprocess.run([node, "-e", script, str(APP / "host" / "react-native.mjs")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_stand_in_has_everything_the_app_takes_from_react_native() -> None:
    used = react_native_usage()
    # the scan sees what the app is known to use, so an empty scan cannot pass
    assert {"Linking", "NativeModules", "AppRegistry", "Image", "StyleSheet", "Text"} <= set(used)
    assert "getInitialURL" in used["Linking"] and "resolveAssetSource" in used["Image"]
    shape = stand_in_shape()
    missing = sorted(f"{name}.{member}" if member else name
                     for name, members in used.items()
                     for member in (members or {""})
                     if name not in shape or (member and member not in (shape[name] or [])))
    assert missing == [], f"rn-app/host/react-native.mjs lacks {missing}"
    assert "Onnxruntime" in shape["NativeModules"]  # onnxruntime-react-native's lib/binding.ts


def test_the_stand_in_has_every_coldstart_native_member() -> None:
    members = coldstart_native_members()
    assert {"resolveAsset", "readFileBase64", "crash", "launchEnv", "launchUrl"} <= members
    node = shutil.which("node")
    assert node is not None
    script = ("import(process.argv[1]).then(m => console.log(JSON.stringify("
              "Object.getOwnPropertyNames(m.NativeModules.ColdstartNative))))")
    proc = subprocess.run([node, "-e", script, str(APP / "host" / "react-native.mjs")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(members - set(json.loads(proc.stdout))) == []


def test_the_host_bundle_pins_the_apps_versions() -> None:
    """Every package rn-app/host's lock installs (esbuild aside) is one rn-app's lock
    installs too (at the top or nested under its dependent), to the integrity hash."""
    app = json.loads((APP / "package-lock.json").read_text())["packages"]
    host = json.loads((APP / "host" / "package-lock.json").read_text())["packages"]
    pinned = {(k.rsplit("node_modules/", 1)[1], v.get("version"), v.get("integrity"))
              for k, v in app.items() if "node_modules/" in k}
    installed = {(k[len("node_modules/"):], v["version"], v["integrity"])
                 for k, v in host.items() if k.startswith("node_modules/")
                 and "esbuild" not in k}
    assert {"react", "react-test-renderer", "onnxruntime-react-native",
            "onnxruntime-common", "base64-js"} <= {name for name, _, _ in installed}
    assert sorted(installed - pinned) == []
    assert "node_modules/react-native" not in host  # its C++ comes from `npm pack`


# ---------------------------------------------------------------- on the host, for real

def run_rn_host(out: Path, *args: str, launches: int = 3) -> None:
    proc = coldstart("run", "rn-host", "--launches", str(launches), "--out", str(out), *args,
                     timeout=600)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def built() -> None:
    proc = coldstart("rn-host", "build", timeout=900)
    assert proc.returncode == 0, ("rn-host not built: run scripts/setup.sh (or `coldstart "
                                  f"runtime prepare` and `coldstart rn-host build`): {proc.stderr}")


@pytest.mark.host
def test_the_whole_app_launches_with_the_bindings_threads(tmp_path: Path, built: None) -> None:
    run_rn_host(tmp_path / "c")
    campaign = load_campaign(tmp_path / "c")
    expected = json.loads((ROOT / "models" / "expected.json").read_text())
    tolerance = expected["tolerance"]["abs"]
    assert campaign.meta.target == "rn-host"
    assert campaign.meta.build_identity.program.endswith("coldstart-rn-host")
    assert len(campaign.records) == 3
    for record in campaign.records:
        assert record.outcome is Outcome.COMPLETED, (record.error, record.artifacts)
        assert record.ort_version == "1.21.0"
        assert record.max_score_diff is not None and record.max_score_diff <= tolerance
        assert record.xnnpack_nodes.totals["XnnpackExecutionProvider"] > 0
        # the threads that reached XNNPACK are the binding's LoadModelAsyncWorker threads:
        # one per create, the same threads ORT's log placed the nodes from
        placed = {s["thread"] for s in record.xnnpack_nodes.per_session}
        reached = {c["tid"] for c in record.race["calls"]}
        assert len(placed) == 3 and reached == placed
        # the app's own screen, rendered through react-test-renderer
        stdout = (tmp_path / "c" / record.artifacts[0]).read_text()
        summary = re.search(r"^COLDSTART-SUMMARY (.*)$", stdout, re.M)
        assert summary is not None, stdout
        parts = summary.group(1).split(" | ")
        assert parts[0] == "done" and parts[2:] == ["ORT 1.21.0", "concurrent x3 xnnpack,cpu"]
        score = re.fullmatch(r"score (\S+) ok", parts[1])
        assert score is not None and abs(float(score.group(1)) - expected["score"]) <= tolerance


@pytest.mark.host
@pytest.mark.parametrize("inject, signal_name, frame", [
    ("segv@sessions-created", "SIGSEGV", "coldstart_inject_segv"),
    ("abort@models-ready", "SIGABRT", "abort")])
def test_injected_crashes_are_crashes_with_evidence(tmp_path: Path, built: None, inject: str,
                                                    signal_name: str, frame: str) -> None:
    """JavaScriptCore's own SIGSEGV handler does not swallow the app's native crash: the
    kit's handler writes its evidence and the process dies of the signal."""
    run_rn_host(tmp_path / "c", "--scenario", f"inject={inject}", launches=1)
    record = load_campaign(tmp_path / "c").records[0]
    assert record.outcome is Outcome.CRASHED and record.signal_name == signal_name
    assert record.last_phase == inject.split("@")[1]
    assert (tmp_path / "c" / record.artifacts[-1]).name == "crash.txt"
    assert frame in [f.symbol for f in record.crash.frames]


@pytest.mark.host
def test_the_hold_reaches_the_bindings_threads_and_is_recorded(tmp_path: Path,
                                                                built: None) -> None:
    """hold=MS goes to the program as --hold-ms, out of the app's URL (the app refuses the
    key), and the record gets the host target's ``hold`` field from the program's
    ``COLDSTART-HOLD`` lines. A held launch may crash or complete: both count here."""
    run_rn_host(tmp_path / "c", "--scenario", "hold=20", launches=2)
    for record in load_campaign(tmp_path / "c").records:
        assert record.outcome in (Outcome.COMPLETED, Outcome.CRASHED), (record.outcome,
                                                                        record.error)
        assert record.hold is not None and record.hold.ms == 20
        assert record.hold.engaged > 0 and record.hold.source == "stderr"
        assert not hold_never_engaged(record) and is_eligible(record, "xnnpack-allocator-uaf")
        stderr = (tmp_path / "c" / record.artifacts[1]).read_text(errors="replace")
        assert re.search(r"^COLDSTART-HOLD n=1 ms=20 t_ms=[0-9.]+ i=[0-2]$", stderr, re.M), \
            stderr[-2000:]
    # under a hold the program runs JavaScriptCore's collector often (docs/race.md, "The
    # hold on the app"), and the campaign says so
    options = json.loads((tmp_path / "c" / "campaign.json").read_text())["options"]
    assert options["hold_env"] == {"JSC_slowPathAllocsBetweenGCs": "10"}


@pytest.mark.host
def test_a_hold_that_never_engages_leaves_the_launch_out(tmp_path: Path, built: None) -> None:
    """ep=cpu: no XNNPACK allocator is created, so the hold's line never comes; the launch
    completes and is not eligible for a failure-tier rate with the hold."""
    run_rn_host(tmp_path / "c", "--scenario", "hold=20&ep=cpu", launches=1)
    record = load_campaign(tmp_path / "c").records[0]
    assert record.outcome is Outcome.COMPLETED, (record.error, record.artifacts)
    assert record.hold is not None and (record.hold.ms, record.hold.engaged) == (20, 0)
    assert record.hold.source == "none" and hold_never_engaged(record)
    assert not is_eligible(record, "xnnpack-allocator-uaf")


@pytest.mark.host
def test_the_apps_own_refusal_is_an_app_error(tmp_path: Path, built: None) -> None:
    run_rn_host(tmp_path / "c", "--scenario", "load=bytes", launches=1)
    record = load_campaign(tmp_path / "c").records[0]
    assert record.outcome is Outcome.APP_ERROR
    assert record.error.startswith("load=bytes is refused: onnxruntime-react-native 1.24.x")


@pytest.mark.host
def test_resume_goes_on_and_refuses_another_runtime(tmp_path: Path, built: None) -> None:
    out = tmp_path / "c"
    run_rn_host(out, "--scenario", "mode=serial", launches=2)
    lines = (out / "launches.jsonl").read_text().splitlines(keepends=True)
    (out / "launches.jsonl").write_text(lines[0])  # as if stopped after one launch
    run_rn_host(out, "--resume", launches=2)
    records = load_campaign(out).records
    assert sorted(r.index for r in records) == [0, 1]
    assert all(r.outcome is Outcome.COMPLETED and r.target == "rn-host" for r in records)
    proc = coldstart("run", "rn-host", "--out", str(out), "--resume", "--runtime", "other")
    one_line_error(proc, "cannot resume")



# ---------------------------------------------------------------- ThreadSanitizer (--detector tsan)

def _runtime(sanitizer: str | None, root: str | None = "/r", library: str = "/r/lib/libort.so"):
    from kit.targets.host.runtime import Runtime

    return Runtime(name="baseline", kind="debian-root", root=root, include_dir="/r/include",
                   lib_dir="/r/lib", ort_library=library, xnnpack_library=None,
                   ort_lib_dir="/r/lib", sanitizer=sanitizer)


def test_the_tsan_program_is_built_apart_and_keyed_on_the_sanitizer() -> None:
    from kit.errors import UsageError
    from kit.targets.rnhost.build import program_digest, program_dir, program_flags

    plain, tsan = _runtime(None), _runtime("tsan")
    assert program_dir(plain) == Path("/r/opt/coldstart/rn-host/baseline")
    assert program_dir(tsan) == Path("/r/opt/coldstart/rn-host/baseline-tsan")
    assert "-fsanitize=thread" in program_flags(tsan)
    assert "-fsanitize=thread" not in program_flags(plain)
    assert program_flags(tsan)[:len(program_flags(plain))] == program_flags(plain)
    files = {"rn_host.cpp": b"int main() {}\n", "binding/JsiMain.cpp": b"// binding\n"}
    # the same sources and library: the sanitizer alone changes the key
    assert program_digest(plain, files) != program_digest(tsan, files)
    assert program_digest(plain, files) == program_digest(_runtime(None), dict(files))
    assert program_digest(plain, files) != program_digest(
        plain, {**files, "rn_host.cpp": b"int main() { return 1; }\n"})
    with pytest.raises(UsageError, match="Debian root"):
        program_dir(_runtime("tsan", root=None))


def _debian_binary_cache(tmp_path: Path) -> dict[str, str]:
    """A cache whose ``debian`` runtime is a plain binary (no kit build, no tsan variant)."""
    cache = tmp_path / "cache"
    folder = cache / "runtimes" / "debian"
    folder.mkdir(parents=True)
    lib = tmp_path / "libonnxruntime.so"
    lib.write_bytes(b"x")
    (folder / "runtime.json").write_text(json.dumps({
        "name": "debian", "kind": "ort-root", "root": str(tmp_path),
        "include_dir": str(tmp_path), "lib_dir": str(tmp_path), "ort_library": str(lib),
        "xnnpack_library": None}))
    return {"COLDSTART_CACHE": str(cache)}


def test_rn_host_takes_the_host_targets_tsan_path(tmp_path: Path) -> None:
    """``--detector tsan`` is no longer refused by rn-host: it goes the host target's way, which
    refuses Debian's own binary (it cannot be instrumented) in one line, before any launch."""
    env = _debian_binary_cache(tmp_path)
    proc = coldstart("run", "rn-host", "--runtime", "debian", "--detector", "tsan",
                     "--launches", "1", "--out", str(tmp_path / "out"), env=env)
    one_line_error(proc, "--detector tsan needs a runtime the kit built")
    assert "rn-host has no ThreadSanitizer" not in proc.stderr
    proc = coldstart("rn-host", "build", "--runtime", "debian", "--tsan", env=env)
    one_line_error(proc, "runtime 'debian' has no tsan variant")


def _tsan_variant(name: str):
    from kit.errors import UsageError
    from kit.targets.host import load_runtime

    try:
        return load_runtime(name, sanitizer="tsan")
    except UsageError:
        pytest.skip(f"no ThreadSanitizer variant of the kit build {name!r} on this machine "
                    f"(make it with `coldstart runtime build-ort --name {name} ... --tsan`)")


@pytest.mark.host
@pytest.mark.parametrize("name", ["baseline", "fix"])
def test_one_tsan_launch_of_the_app_per_kit_build(tmp_path: Path, built: None,
                                                  name: str) -> None:
    """The app's program built for the instrumented variant: the launch completes under
    ThreadSanitizer with the host's detector payload, the statics are located, JavaScriptCore's
    own reports (it is not instrumented) are never on target, and the fix never races on the
    statics (it makes the allocator once, in ``std::call_once``). Whether the baseline's race
    shows in one launch is not asserted (docs/race.md: a happens-before detector misses a
    race whose accesses a later lock happens to order)."""
    from kit.targets.host.detector import record_on_target

    runtime = _tsan_variant(name)
    run_rn_host(tmp_path / "c", "--runtime", name, "--detector", "tsan", launches=1)
    campaign = load_campaign(tmp_path / "c")
    assert campaign.meta.build_identity.program.endswith(f"/rn-host/{name}-tsan/coldstart-rn-host")
    assert campaign.meta.build["ort_library"] == runtime.ort_library
    assert campaign.meta.options["detector"]["tool"] == "tsan"
    assert campaign.meta.options["detector_env"] == {"JSC_useJIT": "false"}
    (record,) = campaign.records
    assert record.outcome is Outcome.COMPLETED, (record.error, record.artifacts)
    assert record.detector is not None and record.detector.extra["complete"], record.detector
    assert record.detector.extra["xml"].endswith("/tsan-report.txt")
    assert record.detector.extra["evidence"]["wrapper"]["size"] == 48
    for race in record.detector.races:
        frames = [f["module"] for f in race["stack"] if not f["module"].startswith("libtsan")]
        if race["class"] == "on_target":
            assert "GetStoredAllocator" in race["segment"], race
        if frames and frames[0].startswith("libjavascriptcoregtk"):
            assert race["class"] == "other", race
    if name == "fix":
        assert record_on_target(record) is False, record.detector
