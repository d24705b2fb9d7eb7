"""Build provenance of an app: which native ONNX Runtime is inside an APK, IPA or .app.

``coldstart app inspect`` answers "does the build I am about to test contain the ORT I think
it does?": a campaign labelled ``patched`` proves nothing if the APK still carries the
released ``libonnxruntime.so``. It reports:

* the app id: the APK's ``package`` (from the binary ``AndroidManifest.xml``, decoded with
  pyaxmlparser), or the bundle's ``CFBundleIdentifier`` (``Info.plist``, with plistlib);
* the heap-poisoning switches built in (Android): ``android:debuggable``,
  ``android:gwpAsanMode`` and ``lib/<abi>/wrap.sh`` (docs/app.md, "Heap poisoning");
* every ORT library: Android ``lib/<abi>/libonnxruntime*.so``; iOS the binaries of the
  ``.app`` (main executable, ``Frameworks/*.framework/*``, ``*.dylib``) that contain ORT,
  since the onnxruntime-c pod may be linked statically into the executable. For each: size,
  sha256, ORT version and XNNPACK evidence.

How the ORT version is found (``NativeLibrary.version_source``):

1. ELF: onnxruntime's linker version script (``tools/ci_build/gen_def.py``) names the symbol
   version of its exported C API ``VERS_<ORT_VERSION>``; it is read from the
   ``.gnu.version_d`` section with pyelftools (Debian's build shortens it to
   ``VERS_1.21``, so the full version then comes from step 2);
2. the version string itself: ``OrtGetApiBase()->GetVersionString()`` returns the
   ``ORT_VERSION`` literal, stored as a NUL-terminated ``X.Y.Z`` string. Other libraries
   linked in leave such strings too (PyPI's build carries ``3.53.1``, ``8.23.0``, ``1.3.2``
   from sqlite, curl, zlib), so a candidate is taken only when it matches the ``VERS_``
   prefix, or when it is the only candidate. Otherwise the version is reported unknown with
   the candidates listed.

How XNNPACK is detected (``NativeLibrary.xnnpack_evidence``): dynamic symbols named
``xnn_*`` (defined: XNNPACK linked in and exported; undefined: imported from a shared
``libXNNPACK``), a ``DT_NEEDED`` entry for ``libXNNPACK``, and strings that only the XNNPACK
EP's own source puts in the binary (its source file name ``xnnpack_execution_provider.cc``
and its log messages). The provider name ``XnnpackExecutionProvider`` alone is *not*
evidence: every ORT build lists it among the known providers (PyPI's CPU-only build does).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import logging
import os
import plistlib
import re
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Iterator

from ._bounded import describe_path, open_regular, path_kind
from .errors import DataError, UsageError

__all__ = ["AppInspection", "NativeLibrary", "inspect_app", "scan_binary"]

# pyaxmlparser logs a warning for a file that is not AXML; the inspection reports it itself.
logging.getLogger("pyaxmlparser").addHandler(logging.NullHandler())

_ANDROID_NS = "{http://schemas.android.com/apk/res/android}"
#: android:gwpAsanMode values in binary XML (ApplicationInfo.GWP_ASAN_*).
_GWP_ASAN_MODES = {"-1": "default", "0": "never", "1": "always"}
_ORT_LIB_RE = re.compile(r"^lib/(?P<abi>[^/]+)/(?P<name>libonnxruntime[^/]*\.so)$")
_WRAP_SH_RE = re.compile(r"^lib/(?P<abi>[^/]+)/wrap\.sh$")
_VERSION_STRING_RE = re.compile(rb"\x00(\d{1,3}\.\d{1,3}\.\d{1,3})\x00")
_XNNPACK_STRINGS = (
    b"xnnpack_execution_provider.cc",
    b"The XNNPACK EP utilizes an internal pthread-based thread pool",
    b"XNNPACK initialization failed",
)
#: Present in every ORT core binary: the C API entry point's name (kept in the dynamic symbol
#: table) and the source path ORT_ENFORCE/LOGS embed (kept even in stripped static builds).
_ORT_CORE_MARKERS = (b"OrtGetApiBase", b"core/session/inference_session.cc")
#: the most one entry or file may hold when read (ORT's library is tens of MiB)
_MAX_BINARY_BYTES = 256 * 1024 * 1024
#: the most one inspection reads in all, entries inflated and files together: a zip's
#: sizes are the zip's word, and a small APK can inflate to gigabytes across entries
_MAX_TOTAL_BYTES = 512 * 1024 * 1024
#: Info.plist and AndroidManifest.xml are a few KiB
_MAX_MANIFEST_BYTES = 4 * 1024 * 1024
#: a .app's folders are read this deep (its binaries sit at most three down)
_MAX_APP_DEPTH = 32
#: and this many entries of it at most
_MAX_APP_ENTRIES = 200_000
#: zip compression methods Python's zipfile inflates (stored, deflate, bzip2, lzma)
_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                zipfile.ZIP_LZMA}
_REBUILD = "rebuild or download the package again"


class _Budget:
    """What one inspection has read so far, against :data:`_MAX_TOTAL_BYTES`."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.used = 0

    def take(self, n: int, what: str) -> None:
        self.used += n
        if self.used > _MAX_TOTAL_BYTES:
            raise DataError(f"{self.source}: reading {what} takes the inspection past "
                            f"{_MAX_TOTAL_BYTES >> 20} MiB in all: not an app package this "
                            f"tool reads", "is it the right file? a real app's ORT "
                            "libraries are tens of MiB")

    def read(self, stream: Any, limit: int, what: str) -> bytes:
        """Up to ``limit`` bytes of ``stream``, in blocks, each counted; more is refused."""
        chunks: list[bytes] = []
        got = 0
        while True:
            block = stream.read(min(1 << 20, limit + 1 - got))
            if not block:
                return b"".join(chunks)
            got += len(block)
            if got > limit:
                raise DataError(f"{what} in {self.source} is larger than {limit >> 20} MiB",
                                "that is not an app package this tool can read")
            self.take(len(block), what)
            chunks.append(block)


@dataclasses.dataclass(frozen=True)
class NativeLibrary:
    """One binary inside the app that is (or carries) ONNX Runtime.

    Attributes:
        path: path inside the package, e.g. ``lib/arm64-v8a/libonnxruntime.so`` or
            ``Frameworks/onnxruntime.framework/onnxruntime``.
        abi: Android ABI folder (``arm64-v8a``...), ``None`` on iOS.
        size: bytes.
        sha256: hex digest of the file.
        binary_format: ``ELF``, ``Mach-O`` or ``unknown``.
        ort_core: whether the binary contains ORT itself (``OrtGetApiBase`` or ORT's
            ``core/session/inference_session.cc`` path), not only a binding linking it.
        ort_version: the ORT version found, or ``None`` (see the module doc).
        version_source: how the version was found, or why it was not.
        xnnpack_evidence: what shows XNNPACK is in this binary (empty: none found).
        needed: ELF ``DT_NEEDED`` entries (e.g. ``libonnxruntime.so`` for the JSI binding).
    """

    path: str
    abi: str | None
    size: int
    sha256: str
    binary_format: str
    ort_core: bool
    ort_version: str | None
    version_source: str
    xnnpack_evidence: tuple[str, ...]
    needed: tuple[str, ...] = ()

    @property
    def xnnpack(self) -> bool:
        """Whether any XNNPACK evidence was found."""
        return bool(self.xnnpack_evidence)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``xnnpack`` included)."""
        return {**dataclasses.asdict(self), "xnnpack": self.xnnpack,
                "xnnpack_evidence": list(self.xnnpack_evidence), "needed": list(self.needed)}


@dataclasses.dataclass(frozen=True)
class AppInspection:
    """What :func:`inspect_app` found.

    Attributes:
        source: the inspected path.
        kind: ``apk``, ``ipa`` or ``app``.
        app_id: Android package name or iOS bundle id; ``None`` when unreadable (see notes).
        version: ``versionName`` / ``CFBundleShortVersionString``, if present.
        poison: Android heap-poisoning switches found: ``debuggable`` (bool),
            ``gwp_asan_mode`` (``default``/``never``/``always``/``None``), ``wrap_sh``
            (ABIs holding ``lib/<abi>/wrap.sh``) and ``wrap_sh_options`` (the
            ``LIBC_DEBUG_MALLOC_OPTIONS`` it sets); empty on iOS, where MallocScribble is
            set at launch, not at build time.
        libraries: ORT binaries found (see :class:`NativeLibrary`).
        notes: problems found, one line each (empty when all is well).
    """

    source: str
    kind: str
    app_id: str | None
    version: str | None
    poison: dict[str, Any]
    libraries: tuple[NativeLibrary, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"source": self.source, "kind": self.kind, "app_id": self.app_id,
                "version": self.version, "poison": self.poison,
                "libraries": [lib.to_dict() for lib in self.libraries],
                "notes": list(self.notes)}


# -- binaries ---------------------------------------------------------------------------
def _elf_facts(data: bytes) -> tuple[list[str], list[tuple[str, bool]], list[str]]:
    """``(version definitions, dynamic symbols as (name, defined), DT_NEEDED)`` of an ELF;
    empty lists when a part is missing or unreadable (never raises)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerDefSection
    from elftools.elf.sections import SymbolTableSection

    verdefs: list[str] = []
    symbols: list[tuple[str, bool]] = []
    needed: list[str] = []
    try:
        elf = ELFFile(io.BytesIO(data))
        for section in elf.iter_sections():
            if isinstance(section, GNUVerDefSection):
                for _verdef, auxiliaries in section.iter_versions():
                    verdefs.extend(aux.name for aux in auxiliaries)
            elif section.name == ".dynsym" and isinstance(section, SymbolTableSection):
                symbols.extend((sym.name, sym["st_shndx"] != "SHN_UNDEF")
                               for sym in section.iter_symbols() if sym.name)
            elif isinstance(section, DynamicSection):
                # pyelftools sets ``needed`` on a DT_NEEDED tag (dynamic.py: DynamicTag)
                needed.extend(getattr(tag, "needed") for tag in section.iter_tags()
                              if tag.entry.d_tag == "DT_NEEDED")
    except (ELFError, ValueError, KeyError, IndexError, AssertionError):
        pass
    return verdefs, symbols, needed


def _binary_format(data: bytes) -> str:
    if data[:4] == b"\x7fELF":
        return "ELF"
    if data[:4] in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe",
                    b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce"):
        return "Mach-O"
    return "unknown"


def _find_version(data: bytes, verdefs: Iterable[str]) -> tuple[str | None, str]:
    candidates = sorted({m.group(1).decode() for m in _VERSION_STRING_RE.finditer(data)})
    vers = [v[len("VERS_"):] for v in verdefs if v.startswith("VERS_")]
    if vers:
        prefix = vers[0]
        if re.fullmatch(r"\d+\.\d+\.\d+", prefix):
            return prefix, f"ELF symbol version VERS_{prefix}"
        matching = [c for c in candidates if c == prefix or c.startswith(prefix + ".")]
        if len(matching) == 1:
            return matching[0], f"string {matching[0]} matching ELF symbol version VERS_{prefix}"
        return prefix, f"ELF symbol version VERS_{prefix} (no single matching version string)"
    if len(candidates) == 1:
        return candidates[0], f"the only version string in the binary ({candidates[0]})"
    if not candidates:
        return None, "no version string found"
    return None, f"ambiguous: version strings {', '.join(candidates)} and no ELF symbol version"


def scan_binary(path: str, data: bytes, abi: str | None = None) -> NativeLibrary:
    """Describe one binary: hash, format, ORT version and XNNPACK evidence (module doc).

    Args:
        path: its path inside the package (reported as is).
        data: the whole file.
        abi: the Android ABI folder, if any.

    Returns:
        A :class:`NativeLibrary`; never raises on malformed bytes (fields stay empty).
    """
    fmt = _binary_format(data)
    verdefs: list[str] = []
    symbols: list[tuple[str, bool]] = []
    needed: list[str] = []
    if fmt == "ELF":
        verdefs, symbols, needed = _elf_facts(data)
    core = any(marker in data for marker in _ORT_CORE_MARKERS)
    if core:
        version, source = _find_version(data, verdefs)
    else:
        version, source = None, "not the ORT core (no OrtGetApiBase, no inference_session.cc)"
    evidence: list[str] = []
    defined = sorted(name for name, is_defined in symbols if name.startswith("xnn_") and is_defined)
    imported = sorted(name for name, is_defined in symbols
                      if name.startswith("xnn_") and not is_defined)
    if defined:
        evidence.append(f"{len(defined)} exported xnn_* symbols (e.g. {defined[0]})")
    if imported:
        evidence.append(f"{len(imported)} imported xnn_* symbols (e.g. {imported[0]})")
    evidence.extend(f"needs {lib}" for lib in needed if lib.lower().startswith("libxnnpack"))
    evidence.extend(f"string {marker.decode()!r}" for marker in _XNNPACK_STRINGS
                    if marker in data)
    return NativeLibrary(path=path, abi=abi, size=len(data),
                         sha256=hashlib.sha256(data).hexdigest(), binary_format=fmt,
                         ort_core=core, ort_version=version, version_source=source,
                         xnnpack_evidence=tuple(evidence), needed=tuple(needed))


# -- Android ----------------------------------------------------------------------------
def _read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget,
                limit: int = _MAX_BINARY_BYTES) -> bytes:
    """One entry, inflated in blocks within ``limit`` and the inspection's ``budget``
    (whatever its header says its size is).

    Raises:
        DataError: encrypted, compressed with a method zipfile lacks, damaged, or too large.
    """
    name = _clip(info.filename)
    if info.flag_bits & 0x1:
        raise DataError(f"{name} in {budget.source} is encrypted",
                        "inspect the unencrypted build (an app store package is not)")
    if info.compress_type not in _ZIP_METHODS:
        raise DataError(f"{name} in {budget.source} uses zip compression method "
                        f"{info.compress_type}, which this tool cannot inflate", _REBUILD)
    if info.file_size > limit:
        raise DataError(f"{name} in {budget.source} is {info.file_size} bytes (more than "
                        f"{limit >> 20} MiB)", "that is not an app package this tool can read")
    try:
        with zf.open(info) as stream:
            return budget.read(stream, limit, name)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
            NotImplementedError, ValueError) as exc:
        raise DataError(f"{budget.source} is a damaged zip file: {name} cannot be read: "
                        f"{_clip(exc, 120)}", _REBUILD) from None


def _clip(value: Any, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else f"{text[:limit]}..."


def _plist_facts(data: bytes) -> tuple[str | None, str | None, str | None, str | None]:
    """``(CFBundleIdentifier, CFBundleShortVersionString, CFBundleExecutable, problem)`` of
    an ``Info.plist``, XML or binary (plistlib); a value that is not a string counts as
    absent, and a file that does not parse (truncated, cyclic, nested too deep, not a
    dict) is the problem, never an exception."""
    try:
        info = plistlib.loads(data)
    except RecursionError:
        return None, None, None, "Info.plist is nested too deeply to be an app's"
    except Exception as exc:  # plistlib raises assorted errors (expat, struct, key) on junk
        return None, None, None, f"Info.plist is not a property list: {_clip(exc, 120)}"
    if not isinstance(info, dict):
        return None, None, None, (f"Info.plist holds {type(info).__name__}, not a "
                                  f"dictionary")

    def text(key: str) -> str | None:
        value = info.get(key)
        return value if isinstance(value, str) else None

    app_id = text("CFBundleIdentifier")
    return (app_id, text("CFBundleShortVersionString"), text("CFBundleExecutable"),
            None if app_id else "Info.plist has no CFBundleIdentifier")


def _manifest_facts(data: bytes) -> tuple[str | None, str | None, dict[str, Any], str | None]:
    """``(package, versionName, poison switches, problem)`` from a binary manifest."""
    from pyaxmlparser.axmlprinter import AXMLPrinter

    try:
        printer = AXMLPrinter(data)
        if not printer.is_valid():
            return None, None, {}, "AndroidManifest.xml is not binary XML (AXML)"
        root = printer.get_xml_obj()
    except RecursionError:
        return None, None, {}, "AndroidManifest.xml is nested too deeply to be an app's"
    except Exception as exc:  # pyaxmlparser raises assorted errors on corrupt input
        return None, None, {}, f"AndroidManifest.xml could not be decoded: {_clip(exc, 120)}"
    if root is None or not hasattr(root, "get"):  # a chunk it skipped took the elements
        return None, None, {}, "AndroidManifest.xml could not be decoded: no root element"
    package = root.get("package")
    version = root.get(f"{_ANDROID_NS}versionName")
    poison: dict[str, Any] = {}
    app = root.find("application")
    if app is not None:
        debuggable = app.get(f"{_ANDROID_NS}debuggable")
        poison["debuggable"] = debuggable in ("true", "1", "-1")
        gwp = app.get(f"{_ANDROID_NS}gwpAsanMode")
        poison["gwp_asan_mode"] = _GWP_ASAN_MODES.get(gwp or "", gwp)
    problem = None if package else "AndroidManifest.xml has no package attribute"
    return package, version, poison, problem


def _inspect_apk(path: Path, zf: zipfile.ZipFile) -> AppInspection:
    notes: list[str] = []
    budget = _Budget(path)
    names = {info.filename: info for info in zf.infolist()}
    package = version = None
    poison: dict[str, Any] = {}
    if "AndroidManifest.xml" in names:
        package, version, poison, problem = _manifest_facts(
            _read_entry(zf, names["AndroidManifest.xml"], budget, _MAX_MANIFEST_BYTES))
        if problem:
            notes.append(problem)
    else:
        notes.append("no AndroidManifest.xml")
    wrap_abis = sorted(m.group("abi") for n in names if (m := _WRAP_SH_RE.match(n)))
    if wrap_abis:
        poison["wrap_sh"] = wrap_abis
        text = _read_entry(zf, names[f"lib/{wrap_abis[0]}/wrap.sh"], budget,
                           _MAX_MANIFEST_BYTES).decode("utf-8", "replace")
        found = re.search(r"LIBC_DEBUG_MALLOC_OPTIONS=(\S+)", text)
        poison["wrap_sh_options"] = found.group(1) if found else None
    libraries = []
    for name in sorted(names):
        match = _ORT_LIB_RE.match(name)
        if match:
            libraries.append(scan_binary(name, _read_entry(zf, names[name], budget),
                                         match.group("abi")))
    if not any(lib.ort_core for lib in libraries):
        notes.append("no lib/<abi>/libonnxruntime*.so in the APK contains ONNX Runtime")
    return AppInspection(source=str(path), kind="apk", app_id=package, version=version,
                         poison=poison, libraries=tuple(libraries), notes=tuple(notes))


# -- iOS --------------------------------------------------------------------------------
def _app_binaries(files: dict[str, Any], executable: str | None) -> Iterator[str]:
    """Paths (relative to the .app) of the binaries worth scanning."""
    for rel in sorted(files):
        parts = PurePosixPath(rel).parts
        if executable and rel == executable:
            yield rel
        elif (len(parts) == 3 and parts[0] == "Frameworks" and parts[1].endswith(".framework")
              and parts[2] == parts[1][: -len(".framework")]):
            yield rel
        elif rel.endswith(".dylib"):
            yield rel


def _inspect_bundle(source: Path, kind: str, read: Any, files: dict[str, Any]) -> AppInspection:
    """Common part of IPA and .app: ``files`` maps paths relative to the .app to handles
    that ``read(handle, limit) -> bytes`` reads (bounded, counted against one budget)."""
    notes: list[str] = []
    app_id = version = executable = None
    if "Info.plist" in files:
        app_id, version, executable, problem = _plist_facts(
            read(files["Info.plist"], _MAX_MANIFEST_BYTES))
        if problem:
            notes.append(problem)
    else:
        notes.append("no Info.plist")
    libraries = []
    for rel in _app_binaries(files, executable):
        data = read(files[rel], _MAX_BINARY_BYTES)
        if any(marker in data for marker in _ORT_CORE_MARKERS) or "onnxruntime" in rel.lower():
            libraries.append(scan_binary(rel, data))
    if not libraries:
        notes.append("no binary in the app contains ONNX Runtime")
    return AppInspection(source=str(source), kind=kind, app_id=app_id, version=version,
                         poison={}, libraries=tuple(libraries), notes=tuple(notes))


def _inspect_ipa(path: Path, zf: zipfile.ZipFile) -> AppInspection:
    apps = sorted({PurePosixPath(n).parts[1] for n in zf.namelist()
                   if n.startswith("Payload/") and len(PurePosixPath(n).parts) > 2
                   and PurePosixPath(n).parts[1].endswith(".app")})
    if not apps:
        raise UsageError(f"{path} has no Payload/<name>.app", "is it an IPA?")
    prefix = f"Payload/{apps[0]}/"
    files = {info.filename[len(prefix):]: info for info in zf.infolist()
             if info.filename.startswith(prefix) and not info.is_dir()}
    budget = _Budget(path)
    inspection = _inspect_bundle(path, "ipa", lambda info, limit: _read_entry(
        zf, info, budget, limit), files)
    if len(apps) > 1:
        inspection = dataclasses.replace(
            inspection, notes=inspection.notes + (f"several apps in Payload/; read {apps[0]}",))
    return inspection


def _app_files(path: Path) -> tuple[dict[str, Path], list[str]]:
    """The regular files of a ``.app`` folder by relative path (links are not followed),
    walked without recursion, at most :data:`_MAX_APP_DEPTH` folders deep and
    :data:`_MAX_APP_ENTRIES` entries; and notes on what was left unread."""
    files: dict[str, Path] = {}
    notes: list[str] = []
    stack: list[tuple[Path, int]] = [(path, 0)]
    seen = 0
    while stack:
        folder, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            notes.append(f"cannot list {_clip(folder.relative_to(path))}: "
                         f"{exc.strerror or exc}")
            continue
        for entry in entries:
            seen += 1
            if seen > _MAX_APP_ENTRIES:
                notes.append(f"read only the first {_MAX_APP_ENTRIES} entries of the folder")
                return files, notes
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 >= _MAX_APP_DEPTH:
                    if not any(n.startswith("folders deeper") for n in notes):
                        notes.append(f"folders deeper than {_MAX_APP_DEPTH} levels were not "
                                     f"read")
                    continue
                stack.append((Path(entry.path), depth + 1))
            elif entry.is_file(follow_symlinks=False):
                files[Path(entry.path).relative_to(path).as_posix()] = Path(entry.path)
    return files, notes


def _inspect_app_dir(path: Path) -> AppInspection:
    files, walk_notes = _app_files(path)
    budget = _Budget(path)

    def read(file: Path, limit: int) -> bytes:
        try:
            fd = open_regular(file, "file")  # a FIFO or a device put there is never read
        except UsageError as exc:
            raise DataError(exc.message, "a .app holds regular files") from None
        with os.fdopen(fd, "rb") as fh:
            return budget.read(fh, limit, _clip(file.relative_to(path)))

    inspection = _inspect_bundle(path, "app", read, files)
    if walk_notes:
        inspection = dataclasses.replace(inspection, notes=inspection.notes
                                         + tuple(walk_notes))
    return inspection


def inspect_app(path: str | os.PathLike[str]) -> AppInspection:
    """Inspect an Android APK, an iOS IPA or an iOS ``.app`` folder.

    Args:
        path: the package. An APK is a zip with ``AndroidManifest.xml``; an IPA a zip with
            ``Payload/<name>.app/``; a ``.app`` a folder with ``Info.plist``.

    Returns:
        An :class:`AppInspection`; unreadable parts become ``notes``.

    Raises:
        UsageError: the path does not exist or is none of the three kinds.
        DataError: the zip itself is corrupt.
    """
    target = Path(path)
    if target.is_dir():
        if not (target / "Info.plist").is_file():
            raise UsageError(f"{target} is a folder without Info.plist",
                             "pass an .apk, an .ipa or a built .app folder")
        return _inspect_app_dir(target)
    if path_kind(target) != "a regular file":
        raise UsageError(f"{target} {describe_path(target)}",
                         "pass an .apk, an .ipa or a .app folder")
    if not zipfile.is_zipfile(target):
        raise UsageError(f"{target} is not an APK or IPA (not a zip file)",
                         "pass an .apk, an .ipa or a .app folder")
    try:
        with zipfile.ZipFile(target) as zf:
            names = zf.namelist()
            if "AndroidManifest.xml" in names or any(n.startswith("lib/") for n in names):
                return _inspect_apk(target, zf)
            if any(n.startswith("Payload/") for n in names):
                return _inspect_ipa(target, zf)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError,
            ValueError, NotImplementedError, RuntimeError) as exc:
        raise DataError(f"{target} is a damaged zip file: {_clip(exc, 120)}",
                        "rebuild or download the package again") from None
    raise UsageError(f"{target} is a zip but neither an APK nor an IPA",
                     "an APK holds AndroidManifest.xml, an IPA holds Payload/<name>.app")
