"""build_apk_double: a small APK for tests, shaped like the coldstart app's release build.

An APK is a zip whose ``AndroidManifest.xml`` is Android's binary XML (AXML, AOSP
``frameworks/base/libs/androidfw/include/androidfw/ResourceTypes.h``): a ``RES_XML_TYPE``
chunk holding a UTF-16 string pool, then ``START_NAMESPACE`` / ``START_ELEMENT`` /
``END_ELEMENT`` / ``END_NAMESPACE`` chunks whose attributes are typed ``Res_value``s. This
module writes exactly that (what ``aapt2 link`` emits, minus the resource map, which readers
only need for obfuscated attribute names), plus ``lib/<abi>/libonnxruntime.so`` files and an
optional ``wrap.sh``, so the kit reads it with the same APK library it uses on real builds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
import zipfile
from pathlib import Path

__all__ = ["ApkSpec", "build_apk_double", "axml_manifest"]

_ANDROID_NS = "http://schemas.android.com/apk/res/android"
_TYPE_STRING = 0x03
_TYPE_INT_DEC = 0x10
_TYPE_INT_BOOLEAN = 0x12


@dataclasses.dataclass(frozen=True)
class ApkSpec:
    """What the APK holds.

    Attributes:
        package: manifest ``package``.
        activity: the launcher activity (``.MainActivity``); ``None`` for no activity.
        scheme: the VIEW intent filter's ``android:scheme`` (``None``: no deep link).
        debuggable: ``android:debuggable`` on ``<application>``.
        gwp_asan: ``android:gwpAsanMode="always"`` on ``<application>``.
        abis: ABIs with native libraries under ``lib/<abi>/``.
        wrap_sh: ``lib/<abi>/wrap.sh`` content (malloc debug), or ``None``.
        ort_library_bytes: bytes of each ``libonnxruntime.so`` (its hash identifies the build).
    """

    package: str = "org.coldstart.app"
    activity: str | None = ".MainActivity"
    scheme: str | None = "coldstart"
    debuggable: bool = False
    gwp_asan: bool = False
    abis: tuple[str, ...] = ("arm64-v8a", "x86_64")
    wrap_sh: str | None = None
    # an ELF header, the C API entry point's name and the ORT_VERSION literal: what
    # kit.app_inspect looks for in a real libonnxruntime.so (here without sections)
    ort_library_bytes: bytes = (b"\x7fELF\x02\x01\x01" + b"\x00" * 57 + b"OrtGetApiBase\x00"
                                + b"\x001.24.1\x00" + b"\x00" * 900)


class _Strings:
    def __init__(self) -> None:
        self.items: list[str] = []

    def idx(self, text: str) -> int:
        if text not in self.items:
            self.items.append(text)
        return self.items.index(text)

    def chunk(self) -> bytes:
        offsets = []
        data = bytearray()
        for text in self.items:
            offsets.append(len(data))
            encoded = text.encode("utf-16-le")
            data += struct.pack("<H", len(text)) + encoded + b"\x00\x00"
        while len(data) % 4:
            data += b"\x00"
        header_size = 28
        strings_start = header_size + 4 * len(offsets)
        size = strings_start + len(data)
        return (struct.pack("<HHIIIIII", 0x0001, header_size, size, len(self.items), 0, 0,
                            strings_start, 0) + b"".join(struct.pack("<I", o) for o in offsets)
                + bytes(data))


def axml_manifest(spec: ApkSpec) -> bytes:
    """The binary ``AndroidManifest.xml`` for ``spec``."""
    strings = _Strings()
    nodes: list[bytes] = []
    ns_uri = strings.idx(_ANDROID_NS)
    ns_prefix = strings.idx("android")
    none = 0xFFFFFFFF

    def start(name: str, attrs: list[tuple[bool, str, int, object]]) -> None:
        body = bytearray()
        for android, attr, kind, value in attrs:
            if kind == _TYPE_STRING:
                raw = strings.idx(str(value))
                data = raw
            else:
                raw = none
                data = int(value) & 0xFFFFFFFF  # type: ignore[call-overload]
            body += struct.pack("<IIIHBBI", ns_uri if android else none, strings.idx(attr),
                                raw, 8, 0, kind, data)
        head = struct.pack("<HHIII", 0x0102, 16, 36 + len(body), 1, none)
        nodes.append(head + struct.pack("<IIHHHHHH", none, strings.idx(name), 20, 20,
                                        len(attrs), 0, 0, 0) + bytes(body))

    def end(name: str) -> None:
        nodes.append(struct.pack("<HHIIIII", 0x0103, 16, 24, 1, none, none, strings.idx(name)))

    start("manifest", [(True, "versionCode", _TYPE_INT_DEC, 1),
                       (True, "versionName", _TYPE_STRING, "1.0"),
                       (False, "package", _TYPE_STRING, spec.package)])
    start("uses-sdk", [(True, "minSdkVersion", _TYPE_INT_DEC, 24),
                       (True, "targetSdkVersion", _TYPE_INT_DEC, 35)])
    end("uses-sdk")
    app_attrs: list[tuple[bool, str, int, object]] = [
        (True, "label", _TYPE_STRING, "coldstart"),
        (True, "name", _TYPE_STRING, spec.package + ".MainApplication")]
    if spec.debuggable:
        app_attrs.append((True, "debuggable", _TYPE_INT_BOOLEAN, 0xFFFFFFFF))
    if spec.gwp_asan:
        app_attrs.append((True, "gwpAsanMode", _TYPE_INT_DEC, 1))  # enum: always = 1
    if spec.wrap_sh is not None:
        app_attrs.append((True, "extractNativeLibs", _TYPE_INT_BOOLEAN, 0xFFFFFFFF))
    start("application", app_attrs)
    if spec.activity is not None:
        start("activity", [(True, "name", _TYPE_STRING, spec.activity),
                           (True, "exported", _TYPE_INT_BOOLEAN, 0xFFFFFFFF)])
        start("intent-filter", [])
        start("action", [(True, "name", _TYPE_STRING, "android.intent.action.MAIN")])
        end("action")
        start("category", [(True, "name", _TYPE_STRING, "android.intent.category.LAUNCHER")])
        end("category")
        end("intent-filter")
        if spec.scheme is not None:
            start("intent-filter", [])
            start("action", [(True, "name", _TYPE_STRING, "android.intent.action.VIEW")])
            end("action")
            for cat in ("android.intent.category.DEFAULT", "android.intent.category.BROWSABLE"):
                start("category", [(True, "name", _TYPE_STRING, cat)])
                end("category")
            start("data", [(True, "scheme", _TYPE_STRING, spec.scheme),
                           (True, "host", _TYPE_STRING, "run")])
            end("data")
            end("intent-filter")
        end("activity")
    end("application")
    end("manifest")
    ns_start = struct.pack("<HHIIIII", 0x0100, 16, 24, 1, none, ns_prefix, ns_uri)
    ns_end = struct.pack("<HHIIIII", 0x0101, 16, 24, 1, none, ns_prefix, ns_uri)
    body = strings.chunk() + ns_start + b"".join(nodes) + ns_end
    return struct.pack("<HHI", 0x0003, 8, 8 + len(body)) + body


def build_apk_double(path: Path, spec: ApkSpec | None = None) -> tuple[Path, str]:
    """Write the APK to ``path``; return ``(path, sha256 hex)``."""
    spec = spec or ApkSpec()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("AndroidManifest.xml", axml_manifest(spec))
        zf.writestr("classes.dex", b"dex\n035\x00" + b"\x00" * 100)
        zf.writestr("assets/index.android.bundle", b"/* hermes bytecode */")
        for abi in spec.abis:
            zf.writestr(f"lib/{abi}/libonnxruntime.so", spec.ort_library_bytes + abi.encode())
            zf.writestr(f"lib/{abi}/libonnxruntime4j_jni.so", b"\x7fELF jni " + abi.encode())
            zf.writestr(f"lib/{abi}/libreactnative.so", b"\x7fELF rn " + abi.encode())
            if spec.wrap_sh is not None:
                zf.writestr(f"lib/{abi}/wrap.sh", spec.wrap_sh)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()
