"""What many test files share: the ``coldstart`` command run as a user runs it, the check
that bad input gets one line and the right exit code, with no traceback, and the fixtures of
more than one test module (their helpers are in tests/helpers/; the doubles they start are
imported when a test asks for them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
# piped output is read whole by the tests; a CI's own COLUMNS would wrap it (tests that
# are about COLUMNS set it themselves)
os.environ.pop("COLUMNS", None)


def coldstart(*args: str, env: dict[str, str] | None = None, timeout: float = 300,
              cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m kit.cli ARGS`` from the checkout (text output captured)."""
    return subprocess.run([sys.executable, "-m", "kit.cli", *args], cwd=cwd or ROOT,
                          text=True, capture_output=True, env={**os.environ, **(env or {})},
                          timeout=timeout)


def assert_one_line_error(stderr: str, fragment: str = "", code: int | None = None,
                          returncode: int | None = None, progress: bool = True) -> str:
    """Check a refusal: exit ``code`` (when given), exactly one ``coldstart: error:`` line
    holding ``fragment``, last on stderr, and no traceback; with ``progress`` off, nothing
    else on stderr. Returns the error line."""
    if code is not None:
        assert returncode == code, (returncode, stderr)
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("coldstart: error: ")]
    assert errors and errors == lines[-1:], stderr
    if not progress:
        assert len(lines) == 1, stderr
    assert fragment in errors[0], (fragment, errors[0])
    assert "Traceback" not in stderr
    return errors[0]


def one_line_error(proc: subprocess.CompletedProcess, fragment: str = "", code: int = 2,
                   progress: bool = True) -> str:
    """:func:`assert_one_line_error` on a finished :func:`coldstart` process."""
    return assert_one_line_error(proc.stderr, fragment, code, proc.returncode, progress)


# -- Android: scripted devices on a private adb server (tests/helpers/android.py) ----------
@pytest.fixture(scope="module")
def adb_server() -> Iterator[Any]:
    """A private adb server (the real binary on a free port), one per test module."""
    from tests.doubles.android_adb_server import PrivateAdbServer

    server = PrivateAdbServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def apk(tmp_path: Path) -> tuple[Path, str]:
    """``(path, sha256)`` of the APK double."""
    from tests.doubles.android_apk_double import build_apk_double

    return build_apk_double(tmp_path / "coldstart.apk")


@pytest.fixture
def rigs(adb_server: Any) -> Iterator[Any]:
    """A :class:`tests.helpers.android.Rigs` on the module's adb server, stopped (and its
    scripts checked used up) at teardown."""
    from tests.helpers.android import Rigs

    made = Rigs(adb_server)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture(scope="module")
def adbkey(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """One adb key for the direct transport: ``(private key path, public key PEM)``."""
    from adb_shell.auth.keygen import keygen
    from cryptography.hazmat.primitives import serialization

    key = tmp_path_factory.mktemp("adbkey") / "adbkey"
    keygen(str(key))
    public = serialization.load_pem_private_key(key.read_bytes(), None).public_key()
    return key, public.public_bytes(serialization.Encoding.PEM,
                                    serialization.PublicFormat.SubjectPublicKeyInfo)


# -- iOS: the xcrun double (tests/helpers/ios.py) -----------------------------------------
@pytest.fixture
def double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The xcrun double with one simulator (:data:`tests.helpers.ios.UDID`) on ``PATH``;
    every launch a test scripted must have been made."""
    from kit.targets import ios
    from tests.doubles.xcrun_double import XcrunDouble
    from tests.helpers.ios import UDID

    xd = XcrunDouble(tmp_path)
    xd.add_simulator(UDID, "iPhone 16")
    for key, value in xd.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv(ios.DIAGNOSTIC_REPORTS_ENV, raising=False)
    yield xd
    xd.kill_apps()
    assert xd.unused_script() == [], "the test scripted launches that were never made"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A simulator ``.app`` made by the xcrun double."""
    from tests.doubles.xcrun_double import XcrunDouble

    return XcrunDouble.make_app(tmp_path / "build" / "ColdstartApp.app")


# -- build-ort: a small source package (tests/helpers/ortbuild.py) -------------------------
@pytest.fixture
def mini(tmp_path: Path) -> tuple[Any, Any]:
    """(OrtSource, HostRootExecutor) for a small package of onnxruntime's layout."""
    from kit.targets.host.ortbuild import OrtSource
    from tests.doubles.ort_build_root import HostRootExecutor
    from tests.helpers.ortbuild import (DEPS, DEPS_TEXT, EP, ONE_PATCH, PORT, TWO_PATCH,
                                        make_file, make_tar)

    archive = tmp_path / "archive"
    archive.mkdir()
    orig = archive / "mini_1.0.orig.tar.xz"
    make_tar(orig, "mini-1.0", {
        "cmake/CMakeLists.txt": "project(mini)\n", DEPS: DEPS_TEXT,
        "include/onnxruntime/core/session/onnxruntime_cxx_api.h": "// api\n",
        "include/onnxruntime/core/session/onnxruntime_c_api.h": "// c api\n",
        "include/onnxruntime/core/providers/cpu/cpu_provider_factory.h": "// cpu\n",
        EP: "// the EP\nracy();\n", "onnxruntime/core/session.cc": "// session\n"})
    packaging = archive / "mini_1.0-1.debian.tar.xz"
    make_tar(packaging, "debian", {"patches/one.patch": ONE_PATCH,
                                   "patches/two.patch": TWO_PATCH,
                                   "patches/series": "one.patch\ntwo.patch\n"})
    series = tmp_path / "series.txt"
    series.write_text("# the kit's selection\none.patch hunks=2\ntwo.patch\n")
    port = tmp_path / "port.patch"
    port.write_text(PORT)
    source = OrtSource(package="mini", version="1.0-1",
                       upstream=make_file(orig, "mini=1.0-1"),
                       packaging=make_file(packaging, "mini-packaging=2.0-1"),
                       series=str(series), port=str(port), tree="1.0",
                       build_dep="mini=1.0-1")
    root = tmp_path / "root"
    root.mkdir()
    executor = HostRootExecutor(root, {"mini=1.0-1": [orig],
                                       "mini-packaging=2.0-1": [packaging]})
    return source, executor
