"""Shared by the ``build-ort`` test modules: a small source package of onnxruntime's layout
(the fixture ``mini`` in tests/conftest.py makes it) and a test fix for it."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from kit.targets.host.ortbuild import SourceFile

__all__ = ["DEPS", "DEPS_TEXT", "EP", "FIX", "ONE_PATCH", "PORT", "TWO_PATCH", "make_file",
           "make_tar"]

EP = "onnxruntime/core/providers/xnnpack/xnnpack_execution_provider.cc"
DEPS = "cmake/deps.cmake"

DEPS_TEXT = "".join(f"line {i}\n" for i in range(1, 31))
ONE_PATCH = f"""Description: two hunks; the series takes only the second
--- a/{DEPS}
+++ b/{DEPS}
@@ -2,3 +2,3 @@
 line 2
-line 3
+line 3 (hunk one)
 line 4
@@ -20,3 +20,3 @@
 line 20
-line 21
+line 21 (hunk two)
 line 22
"""

TWO_PATCH = """Description: adds a file
--- /dev/null
+++ b/onnxruntime/core/added.cc
@@ -0,0 +1 @@
+// added by two.patch
"""

PORT = f"""the kit's port for the mini source
--- a/{DEPS}
+++ b/{DEPS}
@@ -29,2 +29,2 @@
 line 29
-line 30
+line 30 (port)
"""

FIX = f"""coldstart patch: a test fix
--- a/{EP}
+++ b/{EP}
@@ -1,2 +1,2 @@
 // the EP
-racy();
+std::call_once(once, init);
"""


def make_tar(path: Path, top: str, files: dict[str, str]) -> None:
    with tarfile.open(path, "w:xz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def make_file(path: Path, request: str) -> SourceFile:
    data = path.read_bytes()
    return SourceFile(path.name, hashlib.sha256(data).hexdigest(), len(data), request)
