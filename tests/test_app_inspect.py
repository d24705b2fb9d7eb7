"""``coldstart app inspect``: APKs and IPAs assembled from real entries.

Inputs (tests/data/app_inspect/README.md): a real binary AndroidManifest.xml (npm
``io.appium.settings@8.0.10``), PyPI's real ``libonnxruntime.so.1.32.0`` (installed with the
kit; no XNNPACK) and, for the ``host`` tests, Debian 13's ``libonnxruntime.so.1.21.0`` with
XNNPACK from the prepared host runtime. No Mach-O build of ORT exists on this Linux box, so
the IPA tests put the ELF where the framework binary goes: the scan reads bytes and ELF
sections, not Mach-O structures, and reports the format it saw.
"""

from __future__ import annotations

import hashlib
import json
import plistlib
from pathlib import Path

import onnxruntime
import pytest

from kit.app_inspect import inspect_app, scan_binary
from kit.cli import main
from kit.errors import DataError, UsageError
from tests.helpers.app_inspect import MANIFEST, ORT_CAPI, PYPI_PROVIDERS_SHARED, make_apk

ROOT = Path(__file__).resolve().parent.parent
WRAP_SH = ROOT / "android/app/src/mallocdebug/resources/lib/arm64-v8a/wrap.sh"
PYPI_ORT = next(ORT_CAPI.glob("libonnxruntime.so.*"))
def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def pypi_version() -> str:
    return onnxruntime.__version__


@pytest.fixture(scope="module")
def release_apk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_apk(tmp_path_factory.mktemp("apk") / "app-release.apk", {
        "AndroidManifest.xml": MANIFEST,
        "classes.dex": b"dex\n035\x00",
        "lib/x86_64/libonnxruntime.so": PYPI_ORT,
        "lib/x86_64/libonnxruntime_providers_shared.so": PYPI_PROVIDERS_SHARED,
        "lib/x86_64/libc++_shared.so": PYPI_PROVIDERS_SHARED,  # not ORT: not listed
        "res/raw/assets_models_melspectrogram.onnx": b"\x08\x07",
    })


def test_apk_reports_package_ort_version_sha256_and_no_xnnpack(release_apk: Path,
                                                               pypi_version: str) -> None:
    inspection = inspect_app(release_apk)
    assert inspection.kind == "apk"
    assert inspection.app_id == "io.appium.settings"
    assert inspection.version == "8.0.10"
    assert inspection.poison == {"debuggable": True, "gwp_asan_mode": None}
    assert inspection.notes == ()
    assert [lib.path for lib in inspection.libraries] == [
        "lib/x86_64/libonnxruntime.so", "lib/x86_64/libonnxruntime_providers_shared.so"]
    ort = inspection.libraries[0]
    assert ort.abi == "x86_64"
    assert ort.binary_format == "ELF"
    assert ort.size == PYPI_ORT.stat().st_size
    assert ort.sha256 == sha256(PYPI_ORT)
    assert ort.ort_version == pypi_version == "1.32.0"
    assert ort.version_source == "ELF symbol version VERS_1.32.0"
    # PyPI's build names XnnpackExecutionProvider among known providers but has no XNNPACK
    assert ort.xnnpack is False and ort.xnnpack_evidence == ()
    assert b"XnnpackExecutionProvider" in PYPI_ORT.read_bytes()
    shared = inspection.libraries[1]
    assert shared.sha256 == sha256(PYPI_PROVIDERS_SHARED)
    assert (shared.ort_core, shared.ort_version) == (False, None)  # its own VERS_1.0 is not ORT's
    assert ort.ort_core is True


def test_wrap_sh_and_poison_switches_are_reported(tmp_path: Path) -> None:
    apk = make_apk(tmp_path / "app-mallocdebug.apk", {
        "AndroidManifest.xml": MANIFEST,
        "lib/arm64-v8a/libonnxruntime.so": PYPI_ORT,
        "lib/arm64-v8a/wrap.sh": WRAP_SH,
        "lib/x86_64/wrap.sh": WRAP_SH,
    })
    inspection = inspect_app(apk)
    assert inspection.poison == {"debuggable": True, "gwp_asan_mode": None,
                                 "wrap_sh": ["arm64-v8a", "x86_64"],
                                 "wrap_sh_options": "fill_on_free"}
    assert inspection.libraries[0].abi == "arm64-v8a"


def test_apk_without_ort_or_with_a_text_manifest_says_so(tmp_path: Path) -> None:
    apk = make_apk(tmp_path / "plain.apk", {
        "AndroidManifest.xml": b'<?xml version="1.0"?><manifest package="x.y"/>',
        "lib/arm64-v8a/libother.so": PYPI_PROVIDERS_SHARED,
    })
    inspection = inspect_app(apk)
    assert inspection.app_id is None
    assert inspection.libraries == ()
    assert inspection.notes == ("AndroidManifest.xml is not binary XML (AXML)",
                                "no lib/<abi>/libonnxruntime*.so in the APK contains ONNX Runtime")


def _bundle_entries(executable: Path) -> dict[str, bytes | Path]:
    info = plistlib.dumps({"CFBundleIdentifier": "org.coldstart.app",
                           "CFBundleShortVersionString": "1.0",
                           "CFBundleExecutable": "ColdstartApp"}, fmt=plistlib.FMT_BINARY)
    return {"Info.plist": info, "ColdstartApp": executable,
            "Frameworks/onnxruntime.framework/onnxruntime": PYPI_ORT,
            "Frameworks/onnxruntime.framework/Info.plist": b"",
            "assets/assets/models/melspectrogram.onnx": b"\x08\x07"}


def test_ipa_reports_bundle_id_and_the_framework_binary(tmp_path: Path) -> None:
    entries = _bundle_entries(PYPI_PROVIDERS_SHARED)
    ipa = make_apk(tmp_path / "ColdstartApp.ipa",
                   {f"Payload/ColdstartApp.app/{k}": v for k, v in entries.items()})
    inspection = inspect_app(ipa)
    assert (inspection.kind, inspection.app_id, inspection.version) == (
        "ipa", "org.coldstart.app", "1.0")
    assert inspection.poison == {}
    assert [lib.path for lib in inspection.libraries] == [
        "Frameworks/onnxruntime.framework/onnxruntime"]
    assert inspection.libraries[0].sha256 == sha256(PYPI_ORT)
    assert inspection.libraries[0].ort_version == "1.32.0"
    assert inspection.notes == ()


def test_app_folder_finds_ort_linked_into_the_executable(tmp_path: Path) -> None:
    app = tmp_path / "ColdstartApp.app"
    entries = _bundle_entries(PYPI_ORT)  # static pod: ORT inside the main executable
    del entries["Frameworks/onnxruntime.framework/onnxruntime"]
    for name, content in entries.items():
        (app / name).parent.mkdir(parents=True, exist_ok=True)
        (app / name).write_bytes(content.read_bytes() if isinstance(content, Path) else content)
    inspection = inspect_app(app)
    assert inspection.kind == "app"
    assert inspection.app_id == "org.coldstart.app"
    assert [(lib.path, lib.ort_version) for lib in inspection.libraries] == [
        ("ColdstartApp", "1.32.0")]


def test_bad_inputs_are_usage_or_data_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        inspect_app(tmp_path / "missing.apk")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(UsageError, match="not a zip file"):
        inspect_app(text)
    other = make_apk(tmp_path / "other.zip", {"readme.txt": b"hi"})
    with pytest.raises(UsageError, match="neither an APK nor an IPA"):
        inspect_app(other)
    (tmp_path / "Empty.app").mkdir()
    with pytest.raises(UsageError, match="without Info.plist"):
        inspect_app(tmp_path / "Empty.app")
    good = make_apk(tmp_path / "good.apk", {"AndroidManifest.xml": MANIFEST,
                                            "lib/x86_64/libonnxruntime.so": PYPI_PROVIDERS_SHARED})
    raw = bytearray(good.read_bytes())
    middle = len(raw) // 2  # inside the deflated library's data
    raw[middle - 50:middle + 50] = b"\x55" * 100
    damaged = tmp_path / "damaged.apk"
    damaged.write_bytes(bytes(raw))
    with pytest.raises(DataError, match="damaged zip"):
        inspect_app(damaged)


def test_scan_binary_never_raises_on_junk() -> None:
    junk = scan_binary("lib/x86_64/libonnxruntime.so", b"\x7fELF" + b"\xff" * 60 + b"OrtGetApiBase",
                       "x86_64")
    assert (junk.binary_format, junk.ort_version, junk.xnnpack_evidence) == ("ELF", None, ())
    assert junk.version_source == "no version string found"
    text = scan_binary("x", b"OrtGetApiBase\x001.2.3\x00\x004.5.6\x00")
    assert text.ort_version is None
    assert text.version_source == "ambiguous: version strings 1.2.3, 4.5.6 and no ELF symbol version"
    single = scan_binary("x", b"\x00OrtGetApiBase\x00" + b"\x001.24.3\x00")
    assert (single.binary_format, single.ort_version) == ("unknown", "1.24.3")


@pytest.mark.host
def test_debian_ort_with_xnnpack_shows_version_and_evidence(tmp_path: Path) -> None:
    from kit.targets.host import load_runtime

    library = Path(load_runtime().ort_library).resolve()
    apk = make_apk(tmp_path / "app-patched.apk", {"AndroidManifest.xml": MANIFEST,
                                                  "lib/x86_64/libonnxruntime.so": library})
    ort = inspect_app(apk).libraries[0]
    assert ort.sha256 == sha256(library)
    assert ort.ort_version == "1.21.0"
    assert ort.version_source == "string 1.21.0 matching ELF symbol version VERS_1.21"
    assert ort.xnnpack is True
    assert any(e.startswith("needs libXNNPACK.so") for e in ort.xnnpack_evidence)
    assert any("imported xnn_* symbols" in e for e in ort.xnnpack_evidence)
    assert "string 'xnnpack_execution_provider.cc'" in ort.xnnpack_evidence


def test_cli_text_json_and_checks(release_apk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["app", "inspect", str(release_apk)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"apk  {release_apk}"
    assert out[1] == "app id   io.appium.settings  (version 8.0.10)"
    assert out[2] == "poison   debuggable=yes gwpAsanMode=unset wrap.sh=none"
    assert out[3] == "lib/x86_64/libonnxruntime.so"
    assert out[4] == f"  sha256   {sha256(PYPI_ORT)}"
    assert out[6] == "  ORT      1.32.0  (ELF symbol version VERS_1.32.0)"
    assert out[7] == "  XNNPACK  no evidence"

    assert main(["app", "inspect", "--json", str(release_apk)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["app_id"] == "io.appium.settings"
    assert data["libraries"][0]["xnnpack"] is False
    assert data["libraries"][0]["sha256"] == sha256(PYPI_ORT)

    assert main(["app", "inspect", str(release_apk), "--expect-ort-sha256", sha256(PYPI_ORT),
                 "--expect-ort-version", "1.32.0"]) == 0
    capsys.readouterr()
    assert main(["app", "inspect", str(release_apk), "--expect-ort-sha256", "0" * 64,
                 "--expect-xnnpack"]) == 1
    tail = capsys.readouterr().out.splitlines()[-2:]
    assert tail == [f"coldstart: check failed: no ORT library with sha256 {'0' * 64}",
                    "coldstart: check failed: no ORT library shows XNNPACK"]


def test_cli_errors_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    assert main(["app", "inspect", str(tmp_path / "nope.apk")]) == 2
    err = capsys.readouterr().err
    assert err == (f"coldstart: error: {tmp_path / 'nope.apk'} does not exist "
                   "(pass an .apk, an .ipa or a .app folder)\n")
    assert main(["app", "inspect", str(tmp_path), "--expect-ort-sha256", "xyz"]) == 2
    assert "is not a sha256" in capsys.readouterr().err
