"""Building the app's native shell for the host (docs/rn-host.md), from registry packages only.

* the app's JS dependencies, react-test-renderer and esbuild: ``npm ci`` of
  ``rn-app/host/package-lock.json`` (the versions rn-app/package-lock.json pins, a test
  checks) into ``<cache>/rn-host/npm-<lock digest>``;
* React Native's C++ (``ReactCommon/jsi``, ``ReactCommon/jsc/JSCRuntime``, the
  ``CallInvoker`` headers): ``npm pack react-native@<rn-app's pin>``, checked against
  rn-app/package-lock.json's sha512 ``integrity``;
* onnxruntime-react-native's ``cpp/`` from that ``npm ci``, with one edit for onnxruntime
  headers older than its own (:data:`SYMBOLIC_DIMENSIONS_EDIT`);
* JavaScriptCore and ``pkg-config`` from Debian 13 (``libjavascriptcoregtk-4.1-dev``),
  installed into the kit's Debian root with ``apt-get`` inside it, as the detector installs
  valgrind there.

The program is compiled inside the root (``chroot``, the root's g++) against the runtime's
own onnxruntime headers and library, into ``/opt/coldstart/rn-host/<runtime>/`` (for a
runtime's ThreadSanitizer variant ``<runtime>-tsan/``, compiled and linked with
``-fsanitize=thread``: :data:`SANITIZER_FLAGS`), and kept
while the digest of its sources, flags and runtime is the same (as the workload is:
:func:`kit.targets.host.runtime.build_workload`). The JS bundle is made on the host with
``node`` and esbuild, keyed by the digest of the app's files, under
``<cache>/rn-host/bundles/``.
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from importlib.resources import files as package_files
from pathlib import Path
from typing import Callable

from ..._bounded import read_bytes_bounded, write_atomic
from ...errors import InfraError, UsageError
from ...modelset import cache_dir
from ..host.runtime import Runtime, run_compiler

__all__ = ["RnHostProgram", "build_program", "app_dir", "npm_pins", "SYMBOLIC_DIMENSIONS_EDIT",
           "ROOT_PACKAGES", "SANITIZER_FLAGS", "program_flags", "program_dir",
           "program_digest"]

ROOT_PACKAGES = ("libjavascriptcoregtk-4.1-dev", "pkg-config")
_JSC_PC = "javascriptcoregtk-4.1"
_CXXFLAGS = ("-std=c++20", "-O2", "-g", "-DNDEBUG", "-pthread")
#: what a runtime's ``sanitizer`` adds to the program's compile and link lines: the
#: ThreadSanitizer variant of a kit build (``build-ort --tsan``) gets a program compiled and
#: linked with it, as the host workload is (:func:`kit.targets.host.runtime.build_workload`),
#: so libtsan is loaded first and intercepts every thread, lock and ``pthread_once`` of the
#: process. JavaScriptCore (Debian's library) stays uninstrumented.
SANITIZER_FLAGS = {"tsan": ("-fsanitize=thread",)}
#: onnxruntime-react-native 1.24.3's InferenceSessionHostObject.cpp calls the no-argument
#: ``GetSymbolicDimensions()`` of ORT >= 1.22's C++ API twice; ORT 1.21's headers (Debian's
#: and the kit's builds) have only ``GetSymbolicDimensions(const char**, size_t)``. The
#: edit, applied at build time when the runtime's header lacks the overload, asks for the
#: same names through the older call. The binding's behaviour is otherwise as it ships.
SYMBOLIC_DIMENSIONS_EDIT = (
    "auto symbolicDimensions = tensorInfo.GetSymbolicDimensions();",
    "std::vector<const char*> symbolicDimensions(tensorInfo.GetDimensionsCount());\n"
    "        tensorInfo.GetSymbolicDimensions(symbolicDimensions.data(), "
    "symbolicDimensions.size());")
_LOCK_MAX = 16 * 1024 * 1024
_REACT_NATIVE_FILES = ("ReactCommon/jsi/jsi/", "ReactCommon/jsc/JSCRuntime.",
                       "ReactCommon/callinvoker/ReactCommon/")


def app_dir() -> Path:
    """The checkout's ``rn-app/`` (the app whose JS the target runs)."""
    return Path(__file__).resolve().parents[3] / "rn-app"


@dataclasses.dataclass(frozen=True)
class RnHostProgram:
    """The built program and bundle.

    Attributes:
        binary: the program inside the Debian root (absolute host path).
        digest: sha256 of its sources, flags and runtime (the build key).
        bundle: the JS bundle's path; ``bundle_sha256`` its digest.
        packages: name -> version of the registry packages it was made from.
    """

    binary: str
    digest: str
    bundle: str
    bundle_sha256: str
    packages: dict[str, str]

    def command(self, runtime: Runtime, *args: str) -> list[str]:
        """argv that runs the program with ``args`` through the root's loader."""
        assert runtime.loader is not None
        return [runtime.loader, "--library-path", runtime.library_path, self.binary,
                "--bundle", self.bundle, *args]


def program_flags(runtime: Runtime) -> tuple[str, ...]:
    """The compile flags of the program for ``runtime``: :data:`_CXXFLAGS`, plus
    :data:`SANITIZER_FLAGS` of its ``sanitizer`` (also given to the link)."""
    return _CXXFLAGS + SANITIZER_FLAGS.get(runtime.sanitizer or "", ())


def program_dir(runtime: Runtime) -> Path:
    """Where the program for ``runtime`` is built, inside its Debian root:
    ``/opt/coldstart/rn-host/<runtime>`` (``<runtime>-<sanitizer>`` for an instrumented
    variant, so the plain program and the instrumented one are kept apart).

    Raises:
        UsageError: the runtime has no Debian root.
    """
    if runtime.root is None:
        raise UsageError(f"rn-host runs in the kit's Debian root; runtime {runtime.name!r} "
                         "has none", "use --runtime debian (or a `runtime build-ort` runtime)")
    folder = runtime.name + (f"-{runtime.sanitizer}" if runtime.sanitizer else "")
    return Path(runtime.root) / "opt/coldstart/rn-host" / folder


def program_digest(runtime: Runtime, files: dict[str, bytes]) -> str:
    """The program's build key (sha256, hex) from its build-tree ``files`` (path ->
    content), its flags (:func:`program_flags`: the sanitizer's among them) and the
    runtime's kind and onnxruntime library."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    digest.update(repr((program_flags(runtime), runtime.kind, runtime.ort_library)).encode())
    return digest.hexdigest()


def _lock(path: Path) -> dict:
    return json.loads(read_bytes_bounded(path, _LOCK_MAX, what="package-lock.json"))


def npm_pins() -> dict[str, dict[str, str]]:
    """rn-app/package-lock.json's ``{name: {version, integrity}}`` of its top-level
    packages."""
    packages = _lock(app_dir() / "package-lock.json")["packages"]
    return {key[len("node_modules/"):]: {"version": value["version"],
                                         "integrity": value.get("integrity", "")}
            for key, value in packages.items()
            if key.startswith("node_modules/") and "/node_modules/" not in key[13:]
            and "version" in value}


def _npm(args: list[str], cwd: Path, what: str, log_path: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise UsageError("rn-host needs node and npm on this host",
                         "install them (Debian: apt-get install nodejs npm)")
    env = {**os.environ, "npm_config_cache": str(cache_dir() / "npm"),
           "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false"}
    with open(log_path, "ab") as log:
        proc = subprocess.run([npm, *args], cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                              env=env)
    if proc.returncode != 0:
        raise InfraError(f"{what} failed (exit {proc.returncode}; log: {log_path})",
                         "check that the npm registry is reachable")


def _node_modules(work: Path, log: Callable[[str], None]) -> Path:
    host = app_dir() / "host"
    lock = (host / "package-lock.json").read_bytes()
    folder = work / f"npm-{hashlib.sha256(lock).hexdigest()[:16]}"
    if (folder / ".complete").exists():
        return folder / "node_modules"
    log(f"npm ci of rn-app/host/package-lock.json into {folder}")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in ("package.json", "package-lock.json", ".npmrc"):
        shutil.copyfile(host / name, folder / name)
    _npm(["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], folder,
         "npm ci (rn-host)", work / "npm.log")
    (folder / ".complete").write_text("")
    return folder / "node_modules"


def _react_native(work: Path, pin: dict[str, str], log: Callable[[str], None]) -> dict[str, bytes]:
    """React Native's C++ files the program needs, from its registry tarball."""
    tarball = work / f"react-native-{pin['version']}.tgz"
    if not tarball.exists():
        log(f"npm pack react-native@{pin['version']}")
        _npm(["pack", f"react-native@{pin['version']}", "--pack-destination", str(work),
              "--silent"], work, "npm pack react-native", work / "npm.log")
    algorithm, _, expected = pin["integrity"].partition("-")
    data = tarball.read_bytes()
    if base64.b64encode(hashlib.new(algorithm, data).digest()).decode() != expected:
        tarball.unlink()
        raise InfraError(f"{tarball.name} does not match rn-app/package-lock.json's integrity",
                         "run again (the tarball was removed)")
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            if member.isfile() and name.startswith(_REACT_NATIVE_FILES) and "/test" not in name \
                    and name.endswith((".h", "jsi.cpp", "JSCRuntime.cpp")):
                extracted = tar.extractfile(member)
                assert extracted is not None
                short = name.removeprefix("ReactCommon/").removeprefix("callinvoker/")
                files[short.replace("jsi/jsi/", "jsi/")] = extracted.read()
    return files


def _sources(runtime: Runtime, modules: Path, react_native: dict[str, bytes]) -> dict[str, bytes]:
    """Build-tree path -> content of every file the program is compiled from."""
    files = dict(react_native)
    header = (Path(runtime.include_dir) / "onnxruntime_cxx_api.h").read_text(errors="replace")
    old_api = "GetSymbolicDimensions() const" not in header
    for path in sorted((modules / "onnxruntime-react-native" / "cpp").iterdir()):
        text = path.read_bytes()
        if old_api and path.name == "InferenceSessionHostObject.cpp":
            old, new = (s.encode() for s in SYMBOLIC_DIMENSIONS_EDIT)
            if text.count(old) != 2:
                raise UsageError("onnxruntime-react-native's InferenceSessionHostObject.cpp "
                                 "is not the one the kit's edit is for",
                                 "pin onnxruntime-react-native 1.24.3 in rn-app")
            text = text.replace(old, new)
        files[f"binding/{path.name}"] = text
    native = app_dir() / "modules" / "coldstart-native" / "cpp"
    for name in ("coldstart_native.h", "coldstart_native.cpp"):
        files[f"native/{name}"] = (native / name).read_bytes()
    files["rn_host.cpp"] = (app_dir() / "host" / "rn_host.cpp").read_bytes()
    files["workload_crash.inc"] = _workload_crash_section()
    return files


def _workload_crash_section() -> bytes:
    """The host workload's "crash reporting" section (its fatal-signal handler and the
    ``COLDSTART-CRASH`` evidence format), which rn_host.cpp compiles in as it is."""
    text = (package_files("kit") / "workload" / "coldstart_workload.cpp").read_text()
    start, end = (f"// {'-' * 64} {name}\n" for name in ("crash reporting", "scenario"))
    if start not in text or end not in text:
        raise UsageError("the host workload has no crash reporting section for rn-host",
                         "keep its `crash reporting` and `scenario` section markers")
    return text[text.index(start):text.index(end)].encode()


def _root_packages(root: Path, log: Callable[[str], None]) -> None:
    if list(root.glob(f"usr/lib/*/pkgconfig/{_JSC_PC}.pc")) and (root / "usr/bin/pkg-config").exists():
        return
    if os.geteuid() != 0:
        raise UsageError("installing JavaScriptCore into the Debian root needs root (chroot)",
                         "run `sudo coldstart rn-host build`")
    log(f"installing {' '.join(ROOT_PACKAGES)} into the Debian root (apt-get, about 30 s)")
    install = ["chroot", str(root), "apt-get", "install", "-y", "-q", "--no-install-recommends",
               *ROOT_PACKAGES]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(install, capture_output=True, env=env).returncode != 0:
        # package lists older than the archive: refresh them (a deb-src line of another
        # suite may be past its Valid-Until; that does not matter for these packages)
        subprocess.run(["chroot", str(root), "apt-get", "-o", "Acquire::Check-Valid-Until=false",
                        "update", "-q"], capture_output=True, env=env)
        proc = subprocess.run(install, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
            raise InfraError(f"apt-get inside the Debian root failed: {' '.join(tail)[:200]}",
                             f"run `chroot {root} apt-get install {' '.join(ROOT_PACKAGES)}`")
    subprocess.run(["chroot", str(root), "apt-get", "clean"], capture_output=True)


def _compile(runtime: Runtime, files: dict[str, bytes], digest: str, out: Path,
             log: Callable[[str], None]) -> None:
    root = Path(runtime.root or "/")
    inner = Path("/") / out.relative_to(root)
    shutil.rmtree(out / "src", ignore_errors=True)
    for name, data in files.items():
        (out / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (out / "src" / name).write_bytes(data)
    (out / "obj").mkdir(exist_ok=True)
    pc = subprocess.run(["chroot", str(root), "pkg-config", "--cflags", "--libs", _JSC_PC],
                        capture_output=True, text=True)
    flags = pc.stdout.split()
    include = "/" + str(Path(runtime.include_dir).relative_to(root))
    link = ([f"-L/{Path(runtime.ort_lib_dir).relative_to(root)}"]
            if runtime.ort_lib_dir is not None else [])
    includes = [f"-I{inner}/src/{d}" for d in ("", "jsc", "binding", "native")] + [f"-I{include}"]
    units = sorted(n for n in files if n.endswith(".cpp"))
    log(f"compiling the rn-host program: {len(units)} translation units")

    def unit(name: str) -> None:
        obj = f"{inner}/obj/{Path(name).stem}.o"
        run_compiler(["chroot", str(root), "g++", *program_flags(runtime), *includes,
                      *[f for f in flags if not f.startswith("-l")], "-c",
                      f"{inner}/src/{name}", "-o", obj],
                     f"rn-host's {name}", out / "obj" / f"{Path(name).stem}.log")

    with concurrent.futures.ThreadPoolExecutor(max(1, len(os.sched_getaffinity(0)))) as pool:
        for done in [pool.submit(unit, n) for n in units]:
            done.result()
    run_compiler(["chroot", str(root), "g++", "-rdynamic", "-pthread",
                  *SANITIZER_FLAGS.get(runtime.sanitizer or "", ()),
                  *[f"{inner}/obj/{Path(n).stem}.o" for n in units], "-o",
                  f"{inner}/coldstart-rn-host", *link, "-lonnxruntime",
                  *[f for f in flags if f.startswith("-l")]],
                 "the rn-host program", out / "link.log")
    write_atomic(out / "build.json", json.dumps({"digest": digest}).encode())


def _bundle(modules: Path, work: Path, log: Callable[[str], None]) -> tuple[Path, str]:
    app = app_dir()
    digest = hashlib.sha256()
    inputs = [app / "index.js", app / "App.tsx", app / "app.json", *sorted(app.glob("src/*")),
              *sorted(p for p in (app / "host").iterdir() if p.suffix in (".js", ".mjs", ".cjs")),
              modules.parent / "package-lock.json"]
    for path in inputs:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    bundle = work / "bundles" / f"app-{digest.hexdigest()[:16]}.js"
    if not bundle.exists():
        node = shutil.which("node")
        if node is None:
            raise UsageError("rn-host needs node on this host",
                             "install it (Debian: apt-get install nodejs)")
        bundle.parent.mkdir(parents=True, exist_ok=True)
        partial = bundle.with_suffix(".partial.js")
        log(f"bundling the app with esbuild ({bundle.name})")
        proc = subprocess.run([node, str(app / "host" / "build.cjs"), str(modules), str(partial)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise UsageError(f"the app does not bundle: {proc.stderr.strip()[:300]}",
                             "fix the app's JS (rn-app/) or rn-app/host/")
        partial.replace(bundle)
    return bundle, hashlib.sha256(bundle.read_bytes()).hexdigest()


def build_program(runtime: Runtime, force: bool = False,
                  log: Callable[[str], None] = lambda _m: None) -> RnHostProgram:
    """The rn-host program for ``runtime`` and the app's bundle, built when missing or out
    of date (see the module doc; about 45 s of compiling on 2 cores, once per runtime).

    Raises:
        UsageError: the runtime is not a Debian root, no node/npm, no root privileges, a
            compile error (first line; the log's path as the hint), or a JS bundle error.
        InfraError: npm or apt-get failed (registry, mirror), or a tarball does not match
            rn-app's lock file.
    """
    if runtime.kind != "debian-root" or runtime.root is None:
        raise UsageError(f"rn-host runs in the kit's Debian root; runtime {runtime.name!r} is "
                         f"{runtime.kind}", "use --runtime debian (or a `runtime build-ort` "
                         "runtime)")
    work = cache_dir() / "rn-host"
    work.mkdir(parents=True, exist_ok=True)
    with open(work / "build.lock", "w") as lock:  # one builder at a time (pytest -n 2)
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build_locked(runtime, work, force, log)


def _build_locked(runtime: Runtime, work: Path, force: bool,
                  log: Callable[[str], None]) -> RnHostProgram:
    assert runtime.root is not None
    pins = npm_pins()
    modules = _node_modules(work, log)
    files = _sources(runtime, modules, _react_native(work, pins["react-native"], log))
    key = program_digest(runtime, files)
    out = program_dir(runtime)
    binary = out / "coldstart-rn-host"
    stamp = out / "build.json"
    built = stamp.exists() and json.loads(stamp.read_text()).get("digest") == key
    if force or not built or not binary.exists():
        if os.geteuid() != 0:
            raise UsageError("building inside the Debian root needs root (chroot)",
                             "run `sudo coldstart rn-host build`")
        _root_packages(Path(runtime.root), log)
        out.mkdir(parents=True, exist_ok=True)
        _compile(runtime, files, key, out, log)
        log(f"built {binary}")
    bundle, bundle_sha256 = _bundle(modules, work, log)
    names = ("react-native", "onnxruntime-react-native", "onnxruntime-common", "react")
    return RnHostProgram(binary=str(binary), digest=key, bundle=str(bundle),
                         bundle_sha256=bundle_sha256,
                         packages={n: pins[n]["version"] for n in names if n in pins})
