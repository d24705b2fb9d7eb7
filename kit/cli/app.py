"""``coldstart app inspect``: build provenance of an APK, IPA or .app (:mod:`kit.app_inspect`)."""

from __future__ import annotations

import argparse
import json
import re

from .._terminal import printable
from ..app_inspect import AppInspection, inspect_app
from ..errors import ExitCode, UsageError

__all__ = ["register", "render"]

_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``app`` and its subcommand ``inspect``."""
    app = commands.add_parser("app", help="inspect a built app (APK, IPA, .app)")
    sub = app.add_subparsers(dest="app_command", metavar="ACTION")
    sub.required = True
    inspect = sub.add_parser(
        "inspect", help="print the app id, the ONNX Runtime libraries inside with sha256, "
                        "version and XNNPACK evidence, and the heap-poisoning switches")
    inspect.add_argument("package", metavar="APK|IPA|APP", help="the built app to inspect")
    inspect.add_argument("--json", action="store_true", help="print JSON instead of text")
    inspect.add_argument("--expect-ort-sha256", metavar="HEX", default=None,
                         help="exit 1 unless an ORT library inside has this sha256 (e.g. the "
                              "libonnxruntime.so of your patched AAR)")
    inspect.add_argument("--expect-ort-version", metavar="X.Y.Z", default=None,
                         help="exit 1 unless an ORT library inside reports this version")
    inspect.add_argument("--expect-xnnpack", action="store_true",
                         help="exit 1 unless an ORT library inside has XNNPACK")
    inspect.set_defaults(func=_inspect)


def render(inspection: AppInspection) -> str:
    """The text report: one fact per line, libraries indented under their path."""
    lines = [f"{inspection.kind}  {inspection.source}",
             f"app id   {inspection.app_id or '(unknown)'}"
             + (f"  (version {inspection.version})" if inspection.version else "")]
    if inspection.poison:
        p = inspection.poison
        parts = [f"debuggable={'yes' if p.get('debuggable') else 'no'}",
                 f"gwpAsanMode={p.get('gwp_asan_mode') or 'unset'}"]
        if p.get("wrap_sh"):
            parts.append(f"wrap.sh={','.join(p['wrap_sh'])} "
                         f"(LIBC_DEBUG_MALLOC_OPTIONS={p.get('wrap_sh_options') or '?'})")
        else:
            parts.append("wrap.sh=none")
        lines.append("poison   " + " ".join(parts))
    for lib in inspection.libraries:
        lines.append(lib.path)
        lines.append(f"  sha256   {lib.sha256}")
        lines.append(f"  size     {lib.size} bytes ({lib.binary_format})")
        lines.append(f"  ORT      {lib.ort_version or 'unknown'}  ({lib.version_source})")
        lines.append("  XNNPACK  " + ("yes: " + "; ".join(lib.xnnpack_evidence)
                                       if lib.xnnpack else "no evidence"))
        if lib.needed:
            lines.append(f"  needs    {', '.join(lib.needed)}")
    lines.extend(f"note: {note}" for note in inspection.notes)
    return "\n".join(printable(line) for line in lines)  # names and ids are the app's data


def _inspect(args: argparse.Namespace) -> int:
    if args.expect_ort_sha256 is not None and not _SHA256_RE.match(args.expect_ort_sha256):
        raise UsageError(f"--expect-ort-sha256 {args.expect_ort_sha256!r} is not a sha256",
                         "give 64 hex digits, e.g. from `sha256sum libonnxruntime.so`")
    inspection = inspect_app(args.package)
    print(json.dumps(inspection.to_dict(), indent=2) if args.json else render(inspection))
    failures = []
    if args.expect_ort_sha256 is not None and not any(
            lib.sha256 == args.expect_ort_sha256.lower() for lib in inspection.libraries):
        failures.append(f"no ORT library with sha256 {args.expect_ort_sha256.lower()}")
    if args.expect_ort_version is not None and not any(
            lib.ort_version == args.expect_ort_version for lib in inspection.libraries):
        failures.append(f"no ORT library reports version {args.expect_ort_version}")
    if args.expect_xnnpack and not any(lib.xnnpack for lib in inspection.libraries):
        failures.append("no ORT library shows XNNPACK")
    for failure in failures:
        print(f"coldstart: check failed: {failure}")
    return int(ExitCode.FAILED) if failures else 0
