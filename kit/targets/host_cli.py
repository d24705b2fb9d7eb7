"""``coldstart runtime prepare|build|info`` and ``coldstart run host``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable

from .. import detector as race_detector
from .. import modelset, witness
from ..cli_common import (TargetSetup, add_campaign_options, execute_interleaved, kept_rule,
                          run_setup, scenario_from_args)
from ..campaign import CampaignStore
from ..errors import ColdstartError, UsageError
from . import host

__all__ = ["register"]


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``runtime`` (prepare, build, info) and ``run host``."""
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
    prepare.add_argument("--mirror", default=host.DEFAULT_MIRROR,
                         help="Debian mirror for the root (default: %(default)s)")
    prepare.add_argument("--force", action="store_true", help="prepare again from scratch")
    prepare.add_argument("--no-build", action="store_true",
                         help="do not build the workload afterwards")
    prepare.set_defaults(func=_prepare)
    build = sub.add_parser("build", parents=[name],
                           help="compile the workload with the runtime's compiler and headers")
    build.add_argument("--force", action="store_true", help="rebuild even if up to date")
    build.set_defaults(func=_build)
    info = sub.add_parser("info", parents=[name], help="show a prepared runtime as JSON")
    info.set_defaults(func=_info)

    run = run_targets.add_parser("host",
                                 help="cold-launch the native workload on this machine",
                                 description="One fresh workload process per launch, on the "
                                             "prepared runtime.")
    # its own --runtime, not the `name` parent's: parents share their actions, so another
    # default here would change the one of `runtime prepare|build|info`
    run.add_argument("--runtime", "--name", dest="runtime", default=None, metavar="NAME",
                     help=f"runtime name (default: {host.DEFAULT_RUNTIME}; with --resume: the "
                          f"campaign's)")
    run.add_argument("--poison", action="store_true", default=None,
                     help="glibc heap poisoning: MALLOC_PERTURB_=85 with the tcache off (with "
                          "--resume: as the campaign ran)")
    run.add_argument("--witness", action=argparse.BooleanOptionalAction, default=None,
                     help="preload the race witness, which logs every xnn_initialize call "
                          "and marks launches where two allocators reached XNNPACK (default: "
                          "on when onnxruntime links XNNPACK as a shared library; with "
                          "--resume: as the campaign ran)")
    run.add_argument("--models", metavar="DIR", default=None,
                     help="model set folder (default: the checkout's models/)")
    add_detector_options(run)
    add_campaign_options(run, default_timeout_s=30.0)
    run.add_argument("--baseline-runtime", metavar="NAME", default=None,
                     help="with --until-verdict DIR: make the baseline's launches too, on this "
                          "runtime, alternating with this run's (DIR is made, or continued); "
                          "each build makes at most --launches, and both stop as soon as the "
                          "verdict is settled")
    run.set_defaults(func=_run, setup=_setup)


# ---------------------------------------------------------------- detector mode (kit.detector)
def add_detector_options(parser: argparse.ArgumentParser, target: str = "host") -> None:
    """``--detector TOOL`` (and, on the host, ``--detector-jobs N``); on another target
    ``--detector`` is refused with a one-line error."""
    host = target == "host"

    def tool(value: str) -> str:
        try:
            return race_detector.check_tool_name(value, target)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(exc.one_line()) from None
    parser.add_argument("--detector", type=tool, default=None, metavar="TOOL",
                        help="run every launch under a happens-before race detector, "
                             "helgrind or drd (valgrind; issue #12): each record says whether "
                             "a data race hit the XNNPACK allocator statics (host only)")
    if host:
        parser.add_argument("--detector-jobs", type=int, default=None, metavar="N",
                            help="with --detector: launches in parallel (default: the number "
                                 "of cores)")


def _detector_for(args: argparse.Namespace, runtime: host.Runtime,
                  log: Callable[[str], None]) -> race_detector.Detector | None:
    """The :class:`kit.detector.Detector` of ``--detector``, analysed, or ``None``."""
    if not getattr(args, "detector", None):
        return None
    found = race_detector.Detector(args.detector, runtime)  # valgrind missing: one line
    if args.witness is False:
        raise UsageError("--detector needs the race witness: its wrapper address and load bases "
                         "tie races to onnxruntime's statics", "drop --no-witness")
    found.analyze()  # once per library (about 10 s), then cached
    return found


def _detector_jobs(args: argparse.Namespace) -> int:
    jobs = getattr(args, "detector_jobs", None)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--detector-jobs {jobs} is not a positive number", "give 1 or more")
    return jobs or len(os.sched_getaffinity(0))


def _prepare_detector(runtime: host.Runtime) -> None:
    try:
        race_detector.ensure_tool(runtime, log=_log)
    except ColdstartError as exc:
        _log(f"no race detector (--detector will not work): {exc.one_line()}")


# ---------------------------------------------------------------- end of detector mode
def _log(message: str) -> None:
    print(f"runtime: {message}", file=sys.stderr, flush=True)


def _prepare(args: argparse.Namespace) -> int:
    runtime = host.prepare_runtime(args.runtime, ort_root=args.ort_root, force=args.force,
                                   mirror=args.mirror, log=_log)
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
    supported, reason = witness.witness_supported(runtime)
    if supported:
        witness.build_witness(runtime, force=force, log=_log)
    else:
        _log(f"no race witness: {reason}")


def _witness_for(runtime: host.Runtime, wanted: bool | None,
                 log: Callable[[str], None] = _log) -> tuple[str | None, str]:
    """The witness library to preload (or ``None``) and the campaign's note about it.

    Raises:
        UsageError: ``--witness`` on a runtime with static XNNPACK, or the witness cannot
            be built (see :func:`kit.witness.build_witness`).
    """
    supported, reason = witness.witness_supported(runtime)
    if wanted and not supported:
        raise UsageError(f"--witness cannot work on runtime {runtime.name!r}: {reason}",
                         "drop --witness")
    if wanted is False:
        return None, f"off: {witness.OFF_REASON}"
    if not supported:
        return None, f"off: {reason}"
    # quiet when the library is current: errors after this must stay the only line
    return witness.witness_library(runtime) or witness.build_witness(runtime, log=log), "on"


def _info(args: argparse.Namespace) -> int:
    runtime = host.load_runtime(args.runtime)
    print(json.dumps({**runtime.__dict__, "loader": runtime.loader}, indent=2))
    return 0


def _setup(args: argparse.Namespace, log: Callable[[str], None] = _log) -> TargetSetup:
    """Check the models, scenario and runtime of ``run host`` and build its launcher (what the
    CLI and the pytest plugin both call).

    Raises:
        UsageError, DataError: bad scenario, missing or tampered models, runtime not ready.
    """
    scenario = scenario_from_args(args)
    _resume_options(args)
    ms = modelset.load_modelset(args.models)
    modelset.require_verified(ms)
    host.check_scenario(scenario, ms)
    runtime = host.load_runtime(args.runtime)
    if runtime.workload_hash is None:
        runtime = host.build_workload(runtime, log=log)
    runtime.command()  # a workload binary that is gone: one line now, not infra errors later
    witness_lib, witness_note = _witness_for(runtime, args.witness, log)
    found = _detector_for(args, runtime, log)
    launchers = [host.HostLauncher(runtime, ms, poison=args.poison, witness=witness_lib,
                                   detector=found)
                 for _ in range(_detector_jobs(args) if found else 1)]
    launcher = launchers[0]
    build = {"runtime": runtime.name, "kind": runtime.kind, "ort_library": runtime.ort_library,
             "ort_library_sha256": modelset.sha256_file(Path(runtime.ort_library)),
             "xnnpack_library": runtime.xnnpack_library, "workload": runtime.workload,
             "workload_hash": runtime.workload_hash, "witness_library": witness_lib}
    options = {"poison": "glibc" if args.poison else None, "timeout_s": args.timeout,
               "env": dict(host.POISON_ENV) if args.poison else {},
               "witness": witness_note, "model_set": ms.fingerprint()}
    if found:
        options["detector"] = found.describe()
    return TargetSetup(target="host", launchers=launchers, build=build, options=options,
                       devices=[{"id": launcher.device, "kind": "host"}])


def _resume_options(args: argparse.Namespace) -> None:
    """``--runtime``, ``--poison`` and ``--witness`` left out: with ``--resume``, as the
    campaign ran (``campaign.json``'s build and options), so that a bare ``--resume --out
    DIR`` goes on as it ran; else the defaults."""
    meta: dict = {}
    if getattr(args, "resume", False) and args.out and CampaignStore(args.out).exists():
        meta = CampaignStore(args.out).read_meta()
    options, build = meta.get("options"), meta.get("build")
    options = options if isinstance(options, dict) else {}
    build = build if isinstance(build, dict) else {}
    kept = build.get("runtime")
    if args.runtime is None:
        args.runtime = kept if isinstance(kept, str) and kept else host.DEFAULT_RUNTIME
    elif isinstance(kept, str) and kept and args.runtime != kept:
        raise UsageError(f"cannot resume {args.out} with --runtime {args.runtime}: it ran on "
                         f"runtime {kept}", "resume without --runtime")
    if args.poison is None:
        args.poison = options.get("poison") == "glibc"
    kept_detector = options.get("detector")
    if getattr(args, "detector", None) is None and isinstance(kept_detector, dict):
        args.detector = kept_detector.get("tool")
    if args.witness is None:
        note = options.get("witness")
        args.witness = True if note == "on" else (
            False if note == f"off: {witness.OFF_REASON}" else None)


def _run(args: argparse.Namespace) -> int:
    _resume_options(args)
    kept = kept_rule(args)
    if kept is not None and args.baseline_runtime is None:
        args.baseline_runtime = kept.get("baseline_runtime")  # a resumed interleaved run
    if args.baseline_runtime is None:
        return run_setup(args, _setup(args))
    if kept is not None and not kept.get("interleaved"):
        raise UsageError(f"cannot resume {args.out} with --baseline-runtime: it was started "
                         f"against a finished baseline", "resume without --baseline-runtime")
    if args.until_verdict is None and kept is None:
        raise UsageError("--baseline-runtime needs --until-verdict DIR, the directory for the "
                         "baseline's campaign", "add --until-verdict runs/baseline")
    if args.baseline_runtime == args.runtime:
        raise UsageError(f"--baseline-runtime is this run's own runtime ({args.runtime})",
                         "give the runtime of the build to compare against, e.g. "
                         "--runtime patched --baseline-runtime debian")
    host.load_runtime(args.baseline_runtime)  # prepared, or a one-line error before any build
    candidate = _setup(args)
    scenario = scenario_from_args(args)
    base_args = argparse.Namespace(**{**vars(args), "runtime": args.baseline_runtime,
                                      "resume": False})
    baseline = _setup(base_args)
    return execute_interleaved(args, baseline, candidate, scenario=scenario,
                               baseline_build={"baseline_runtime": args.baseline_runtime})
