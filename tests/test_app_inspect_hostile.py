"""``coldstart app inspect`` on hostile packages (issue #26, item 7): every malformed part is a
note or one line with exit 2, and what it reads is bounded in total, not only per entry.

The packages are real zips and folders built here from the real entries of
tests/test_app_inspect.py (a real binary AndroidManifest.xml, PyPI's ORT library), then
damaged the way the hostile probes did: an encrypted entry, a compression method zipfile
lacks, Info.plists truncated, of the wrong type, 50,000 deep, cyclic, a binary plist 20,000
deep, a binary-XML chunk of an unknown type, a .app 1,500 folders deep or with a 3 GiB
sparse file, entries that inflate past the total bound. A hypothesis fuzz test then mutates
packages at random, as tests/test_crash_fuzz.py does for the crash parsers.
"""

from __future__ import annotations

import os
import plistlib
import struct
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kit.app_inspect as app_inspect
from kit.app_inspect import inspect_app
from kit.errors import ColdstartError, DataError
from tests.conftest import coldstart, one_line_error
from tests.helpers.app_inspect import MANIFEST, PYPI_PROVIDERS_SHARED, make_apk

EXAMPLES = int(os.environ.get("COLDSTART_FUZZ_EXAMPLES", "150"))


def _patch_entry(path: Path, name: str, *, flag: int | None = None,
                 method: int | None = None) -> None:
    """Set the general-purpose flag bits or the compression method of ``name`` in both its
    local header and its central directory record (APPNOTE.TXT 4.3.7 and 4.3.12)."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    raw = bytearray(path.read_bytes())
    local = info.header_offset
    central = raw.rfind(b"PK\x01\x02" + raw[local + 4:local + 6])  # version needed
    central = raw.find(b"PK\x01\x02", 0)
    while central >= 0:
        n = struct.unpack_from("<H", raw, central + 28)[0]
        if raw[central + 46:central + 46 + n] == name.encode():
            break
        central = raw.find(b"PK\x01\x02", central + 4)
    assert central >= 0
    if flag is not None:
        struct.pack_into("<H", raw, local + 6, flag)
        struct.pack_into("<H", raw, central + 8, flag)
    if method is not None:
        struct.pack_into("<H", raw, local + 8, method)
        struct.pack_into("<H", raw, central + 10, method)
    path.write_bytes(bytes(raw))


def _apk(tmp_path: Path) -> Path:
    return make_apk(tmp_path / "app.apk", {"AndroidManifest.xml": MANIFEST,
                                           "lib/x86_64/libonnxruntime.so": PYPI_PROVIDERS_SHARED})


def _cli_one_line(path: Path, fragment: str) -> None:
    one_line_error(coldstart("app", "inspect", str(path), timeout=120), fragment,
                   progress=False)


def test_an_encrypted_entry_is_one_line_exit_2(tmp_path: Path) -> None:
    apk = _apk(tmp_path)
    _patch_entry(apk, "lib/x86_64/libonnxruntime.so", flag=0x1)
    with pytest.raises(DataError, match="is encrypted"):
        inspect_app(apk)
    _cli_one_line(apk, "is encrypted")


def test_an_unsupported_compression_method_is_one_line(tmp_path: Path) -> None:
    apk = _apk(tmp_path)
    _patch_entry(apk, "AndroidManifest.xml", method=98)  # PPMd: zipfile has no inflater
    with pytest.raises(DataError, match="compression method 98"):
        inspect_app(apk)


def _ipa(tmp_path: Path, info_plist: bytes) -> Path:
    return make_apk(tmp_path / "App.ipa", {"Payload/App.app/Info.plist": info_plist,
                                           "Payload/App.app/App": PYPI_PROVIDERS_SHARED})


def _binary_plist_chain(depth: int, cyclic: bool = False) -> bytes:
    """A binary plist (Apple's bplist00 format, CFBinaryPList.c) of ``depth`` one-element
    arrays, each holding the next; ``cyclic``: the last holds the first."""
    objects = []
    for i in range(depth):
        nxt = (i + 1) if i + 1 < depth else (0 if cyclic else None)
        objects.append(b"\xa1" + struct.pack(">H", nxt) if nxt is not None else b"\xa0")
    offsets, body = [], b""
    for obj in objects:
        offsets.append(8 + len(body))
        body += obj
    table = b"".join(struct.pack(">I", o) for o in offsets)
    trailer = struct.pack(">6xBBQQQ", 4, 2, len(objects), 0, 8 + len(body))
    return b"bplist00" + body + table + trailer


@pytest.mark.parametrize("plist, note", [
    (plistlib.dumps({"CFBundleIdentifier": "org.x"})[:40], "not a property list"),
    (plistlib.dumps(["not", "a", "dict"]), "holds list, not a dictionary"),
    (plistlib.dumps({"CFBundleIdentifier": 7}), "has no CFBundleIdentifier"),
    (b'<?xml version="1.0"?><plist version="1.0">' + b"<array>" * 50000
     + b"</array>" * 50000 + b"</plist>", "Info.plist"),
    (_binary_plist_chain(20000), "Info.plist"),
    (_binary_plist_chain(3, cyclic=True), "Info.plist"),
    (b"\xff" * 64, "not a property list"),
])
def test_an_info_plist_of_any_shape_is_a_note(tmp_path: Path, plist: bytes, note: str) -> None:
    inspection = inspect_app(_ipa(tmp_path, plist))
    assert inspection.app_id is None
    assert any(note in n for n in inspection.notes), inspection.notes


def test_an_unknown_binary_xml_chunk_is_a_note(tmp_path: Path) -> None:
    data = MANIFEST.read_bytes()
    # after the string pool (type 0x0001) and resource map (0x0180): a chunk of a type no
    # AXML reader knows, whose size runs past the file
    at = 8 + struct.unpack_from("<I", data, 12)[0]
    at += struct.unpack_from("<I", data, at + 4)[0]
    bad = data[:at] + struct.pack("<HHI", 0x0777, 8, 1_000_000) + b"\0" * 8 + data[at:]
    apk = make_apk(tmp_path / "app.apk", {"AndroidManifest.xml": bad})
    inspection = inspect_app(apk)
    assert inspection.app_id is None
    assert any("AndroidManifest.xml could not be decoded" in n for n in inspection.notes)


def test_a_deeply_nested_app_folder_is_read_to_a_bounded_depth(tmp_path: Path) -> None:
    app = tmp_path / "App.app"
    app.mkdir()
    (app / "Info.plist").write_bytes(plistlib.dumps({"CFBundleIdentifier": "org.x"}))
    levels = [app]
    try:
        for _ in range(1500):  # one by one: os.makedirs itself recurses once per level
            levels.append(levels[-1] / "d")
            levels[-1].mkdir()
        (levels[-1] / "lib.dylib").write_bytes(b"OrtGetApiBase")
        inspection = inspect_app(app)
        assert inspection.app_id == "org.x"
        assert any("folders deeper than" in n for n in inspection.notes), inspection.notes
    finally:  # removed here, bottom up: pytest's own clean-up of old temp dirs recurses
        (levels[-1] / "lib.dylib").unlink(missing_ok=True)
        for level in reversed(levels[1:]):
            level.rmdir()


def test_a_huge_sparse_file_in_an_app_is_refused_unread(tmp_path: Path) -> None:
    app = tmp_path / "App.app"
    app.mkdir()
    (app / "Info.plist").write_bytes(plistlib.dumps({"CFBundleIdentifier": "org.x",
                                                     "CFBundleExecutable": "App"}))
    with open(app / "App", "wb") as fh:
        fh.truncate(3 << 30)  # 3 GiB of holes: nothing on disk, all of it if read
    with pytest.raises(DataError, match="larger than 256 MiB"):
        inspect_app(app)
    _cli_one_line(app, "larger than 256 MiB")


def test_what_an_inspection_inflates_is_bounded_in_total(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # the bounds made small, so that the test inflates megabytes, not the real 512 MiB
    monkeypatch.setattr(app_inspect, "_MAX_BINARY_BYTES", 4 << 20)
    monkeypatch.setattr(app_inspect, "_MAX_TOTAL_BYTES", 8 << 20)
    zeros = b"\0" * (3 << 20)  # deflates to a few KiB each
    apk = tmp_path / "bomb.apk"
    with zipfile.ZipFile(apk, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("AndroidManifest.xml", MANIFEST.read_bytes())
        for abi in ("arm64-v8a", "armeabi-v7a", "x86", "x86_64"):
            zf.writestr(f"lib/{abi}/libonnxruntime.so", zeros)
    assert apk.stat().st_size < 200_000
    with pytest.raises(DataError, match="past 8 MiB in all"):
        inspect_app(apk)


# -- fuzz ------------------------------------------------------------------------------------
def _packages() -> list[bytes]:
    import io

    out = []
    for entries in ({"AndroidManifest.xml": MANIFEST.read_bytes(),
                     "lib/x86_64/libonnxruntime.so": PYPI_PROVIDERS_SHARED.read_bytes()[:20000],
                     "lib/x86_64/wrap.sh": b"#!/system/bin/sh\nLIBC_DEBUG_MALLOC_OPTIONS=guard\n"},
                    {"Payload/A.app/Info.plist": plistlib.dumps(
                        {"CFBundleIdentifier": "org.a", "CFBundleExecutable": "A"},
                        fmt=plistlib.FMT_BINARY),
                     "Payload/A.app/A": b"\x7fELF" + b"OrtGetApiBase\x001.2.3\x00" * 8},
                    {"Payload/B.app/Info.plist": plistlib.dumps({"CFBundleIdentifier": "org.b"}),
                     "Payload/B.app/Frameworks/x.dylib": b"onnxruntime"}):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            for name, data in entries.items():
                zf.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED
                            if len(data) < 4096 else zipfile.ZIP_STORED)
        out.append(buf.getvalue())
    return out


PACKAGES = _packages()


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(PACKAGES)))
    for _ in range(draw(st.integers(1, 4))):
        size = len(data)
        kind = draw(st.sampled_from(["cut", "flip", "insert", "delete", "duplicate"]))
        a = draw(st.integers(0, size))
        b = draw(st.integers(a, min(size, a + 200)))
        if kind == "cut":
            del data[a:]
        elif kind == "flip" and size:
            for pos in draw(st.lists(st.integers(0, size - 1), max_size=8)):
                data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[a:a] = draw(st.binary(max_size=32))
        elif kind == "delete":
            del data[a:b]
        elif kind == "duplicate":
            data[a:a] = data[a:b]
    return bytes(data)


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=mutated())
def test_fuzzed_packages_are_inspected_or_refused_in_one_line(tmp_path: Path,
                                                              data: bytes) -> None:
    path = tmp_path / "fuzzed.apk"
    path.write_bytes(data)
    try:
        inspection = inspect_app(path)
    except ColdstartError as exc:
        assert "\n" not in exc.one_line()
        return
    inspection.to_dict()  # whole and JSON-ready


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(data=st.one_of(st.binary(max_size=512), st.builds(
    lambda plist, cut: plist[:cut], st.sampled_from([
        plistlib.dumps({"CFBundleIdentifier": "a", "x": [1, {"y": b"z"}]}),
        plistlib.dumps({"CFBundleIdentifier": "a", "x": [1, {"y": b"z"}]},
                       fmt=plistlib.FMT_BINARY), _binary_plist_chain(50, cyclic=True)]),
    st.integers(0, 400))))
def test_fuzzed_info_plists_are_facts_or_a_problem(data: bytes) -> None:
    app_id, version, executable, problem = app_inspect._plist_facts(data)
    assert app_id is None or isinstance(app_id, str)
    assert (app_id is None) == (problem is not None)
