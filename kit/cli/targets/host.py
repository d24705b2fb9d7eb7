"""``coldstart runtime prepare|build|build-ort|info``: the host target's own commands (its ``run``
options are :mod:`kit.targets.host.options`)."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time

from ...targets import host
from ...argtypes import positive_int
from ...targets.host import ortbuild

__all__ = ["register", "register_commands"]


def _log(message: str) -> None:
    print(f"runtime: {message}", file=sys.stderr, flush=True)


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """:data:`kit.cli.COMMAND_MODULES`' hook."""
    register_commands(commands)


def register_commands(commands: argparse._SubParsersAction) -> None:
    """Add ``runtime`` (prepare, build, info)."""
    runtime = commands.add_parser("runtime", help="prepare the host's onnxruntime with "
                                                  "XNNPACK and build the native workload")
    sub = runtime.add_subparsers(dest="runtime_command", metavar="ACTION")
    sub.required = True
    name = argparse.ArgumentParser(add_help=False)
    name.add_argument("--runtime", "--name", dest="runtime", default=host.DEFAULT_RUNTIME,
                      metavar="NAME", help="runtime name (default: debian)")
    prepare = sub.add_parser("prepare", parents=[name],
                             help="make an ORT with the XNNPACK EP available (system package, "
                                  "a Debian 13 root, or --ort-root)")
    prepare.add_argument("--ort-root", metavar="DIR",
                         help="your own ORT build (include/ and lib/), e.g. with a fix")
    prepare.add_argument("--mirror", default=host.DEFAULT_MIRROR, type=_mirror,
                         help="Debian mirror for the root (default: %(default)s)")
    prepare.add_argument("--force", action="store_true", help="prepare again from scratch")
    prepare.add_argument("--no-build", action="store_true",
                         help="do not build the workload afterwards")
    prepare.set_defaults(func=_prepare)
    build = sub.add_parser("build", parents=[name],
                           help="compile the workload with the runtime's compiler and headers")
    build.add_argument("--force", action="store_true", help="rebuild even if up to date")
    build.set_defaults(func=_build)
    ort = sub.add_parser("build-ort", help="build onnxruntime itself from Debian's 1.21 "
                                           "source, as is or with a patch (docs/builds.md)")
    ort.add_argument("--name", dest="runtime", default=None, metavar="NAME",
                     help="runtime name (default: the patch's name, or baseline)")
    ort.add_argument("--patch", default=None, metavar="fix|half-fix|FILE",
                     help="the kit's fix or half-fix, or your own unified diff against "
                          "1.21.0 (default: none, the baseline)")
    ort.add_argument("--jobs", type=functools.partial(positive_int, high=1024), default=None, metavar="N",
                     help="parallel compile jobs (default: the cores)")
    ort.add_argument("--mirror", default=host.DEFAULT_MIRROR, type=_mirror,
                     help="Debian mirror (default: %(default)s)")
    ort.add_argument("--force", action="store_true",
                     help="replace a runtime of that name made otherwise, and build the "
                          "variant again even when it is cached")
    ort.add_argument("--tsan", action="store_true",
                     help="also build the variant with ThreadSanitizer on the racy "
                          "translation units, for `run host --detector tsan` (docs/builds.md)")
    ort.set_defaults(func=_build_ort)
    info = sub.add_parser("info", parents=[name], help="show a prepared runtime as JSON")
    info.set_defaults(func=_info)


def _mirror(value: str) -> str:
    from ...errors import UsageError

    try:
        return ortbuild.check_mirror(value)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(exc.one_line()) from None


def _prepare_detector(runtime: host.Runtime) -> None:
    from ...targets.host import detector
    from ...errors import ColdstartError

    try:
        detector.ensure_tool(runtime, log=_log)
    except ColdstartError as exc:
        _log(f"no race detector (--detector will not work): {exc.one_line()}")


def _prepare(args: argparse.Namespace) -> int:
    runtime = host.prepare_runtime(args.runtime, ort_root=args.ort_root, force=args.force,
                                   mirror=args.mirror, log=_log)
    host.fetch_debug_symbols(runtime, log=_log)  # best effort: names for crash frames
    if not args.no_build:
        runtime = host.build_workload(runtime, force=args.force, log=_log)
        _build_witness_if_supported(runtime, args.force)
        _prepare_detector(runtime)
    return 0


def _build(args: argparse.Namespace) -> int:
    runtime = host.build_workload(host.load_runtime(args.runtime), force=args.force, log=_log)
    _build_witness_if_supported(runtime, args.force)
    return 0


def _build_witness_if_supported(runtime: host.Runtime, force: bool) -> None:
    from ...targets.host import witness

    supported, reason = witness.witness_supported(runtime)
    if supported:
        witness.build_witness(runtime, force=force, log=_log)
    else:
        _log(f"no race witness: {reason}")


class _Progress:
    """Prints a compile's progress to stderr: a line every 20 s, and the last one."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, progress: "ortbuild.BuildProgress") -> None:
        now = time.monotonic()
        if now - self.last >= 20 or progress.done == progress.total:
            self.last = now
            _log(ortbuild.format_progress(progress))


def _build_ort(args: argparse.Namespace) -> int:
    runtime = ortbuild.build_ort_runtime(args.runtime, args.patch, jobs=args.jobs,
                                         force=args.force, mirror=args.mirror, log=_log,
                                         progress=_Progress(),
                                         instrument="tsan" if args.tsan else None)
    _build_witness_if_supported(runtime, False)
    _prepare_detector(runtime)
    _log(f"runtime {runtime.name!r} is ready: coldstart run host --runtime {runtime.name} ...")
    return 0


def _info(args: argparse.Namespace) -> int:
    from ...errors import UsageError

    runtime = host.load_runtime(args.runtime)
    shown = {**runtime.__dict__, "loader": runtime.loader}
    try:  # the ThreadSanitizer variant beside it (build-ort --tsan), when there is one
        tsan = host.load_runtime(args.runtime, sanitizer="tsan")
        shown["tsan"] = {"ort_library": tsan.ort_library, "workload": tsan.workload,
                         "build": tsan.build}
    except UsageError:
        pass
    print(json.dumps(shown, indent=2))
    return 0


