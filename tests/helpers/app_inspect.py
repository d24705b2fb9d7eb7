"""Shared by the ``app inspect`` test modules: real entries (tests/data/app_inspect/README.md)
and APKs assembled from them."""

from __future__ import annotations

import zipfile
from pathlib import Path

import onnxruntime

__all__ = ["DATA", "MANIFEST", "ORT_CAPI", "PYPI_PROVIDERS_SHARED", "make_apk"]

DATA = Path(__file__).resolve().parent.parent / "data" / "app_inspect"
MANIFEST = DATA / "io.appium.settings-8.0.10.AndroidManifest.xml"

ORT_CAPI = Path(onnxruntime.__file__).resolve().parent / "capi"
PYPI_PROVIDERS_SHARED = ORT_CAPI / "libonnxruntime_providers_shared.so"


def make_apk(path: Path, entries: dict[str, bytes | Path]) -> Path:
    """A zip laid out like an APK: ``entries`` maps entry names to bytes or source files."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, content in entries.items():
            data = content.read_bytes() if isinstance(content, Path) else content
            # binaries are stored (native libraries are, in real APKs); small files deflated
            kind = zipfile.ZIP_STORED if len(data) > 65536 else zipfile.ZIP_DEFLATED
            zf.writestr(name, data, compress_type=kind)
    return path
