"""The options of ``coldstart run host`` (:class:`kit.targets.host.HostConfig`), read the
same way by the command line and the pytest plugin."""

from __future__ import annotations

import argparse
import dataclasses
import functools
from typing import Any

from ...store.meta import CampaignMeta
from ...errors import UsageError
from ...targets import host
from ...argtypes import positive_int

__all__ = ["add_arguments", "add_detector_options", "config_from_args", "baseline_from_args",
           "description", "default_timeout_s"]


def description(name: str) -> str:
    return "One fresh workload process per launch, on the prepared runtime."


def default_timeout_s(name: str) -> float:
    return 30.0


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """The options of ``run host``."""
    # its own --runtime, not the `runtime` commands' parent: parents share their actions
    parser.add_argument("--runtime", "--name", dest="runtime", default=None, metavar="NAME",
                        help=f"runtime name (default: {host.DEFAULT_RUNTIME}; with --resume: "
                             f"the campaign's)")
    parser.add_argument("--poison", action="store_true", default=None,
                        help="glibc heap poisoning: MALLOC_PERTURB_=85 with the tcache off "
                             "(with --resume: as the campaign ran)")
    parser.add_argument("--witness", action=argparse.BooleanOptionalAction, default=None,
                        help="preload the race witness, which logs every xnn_initialize call "
                             "and marks launches where two allocators reached XNNPACK "
                             "(default: on when onnxruntime links XNNPACK as a shared library; "
                             "with --resume: as the campaign ran)")
    parser.add_argument("--models", metavar="DIR", default=None,
                        help="model set folder (default: the checkout's models/)")
    add_detector_options(parser)
    parser.add_argument("--baseline-runtime", metavar="NAME", default=None,
                        help="with --until-verdict DIR: make the baseline's launches too, on "
                             "this runtime, alternating with this run's (DIR is made, or "
                             "continued); each build makes at most --launches, and both stop "
                             "as soon as the verdict is settled")


def add_detector_options(parser: argparse.ArgumentParser, target: str = "host") -> None:
    """``--detector TOOL`` (and, on the host, ``--detector-jobs N``); on another target
    ``--detector`` is refused with a one-line error."""
    from . import detector

    def tool(value: str) -> str:
        try:
            return detector.check_tool_name(value, target)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(exc.one_line()) from None

    parser.add_argument("--detector", type=tool, default=None, metavar="TOOL",
                        help="run every launch under a happens-before race detector: drd "
                             "or helgrind (valgrind), or tsan (ThreadSanitizer, on a kit build's "
                             "instrumented variant, `runtime build-ort --tsan`; docs/race.md): "
                             "each record says whether a "
                             "data race hit the XNNPACK allocator statics (host only; with "
                             "--resume: as the campaign ran)")
    if target == "host":
        parser.add_argument("--detector-jobs", type=functools.partial(positive_int, high=256),
                            default=None, metavar="N",
                            help="with --detector: launches in parallel (default: the number "
                                 "of cores)")


def _kept(meta: CampaignMeta | None) -> tuple[str | None, bool | None, bool | None,
                                              str | None]:
    """The runtime, poison, witness and detector a campaign ran with (``None`` each:
    unknown)."""
    if meta is None:
        return None, None, None, None
    from . import witness

    runtime = meta.build.get("runtime")  # the host target's own build key
    setup = meta.setup
    kept_witness = True if setup.witness == "on" else (
        False if setup.witness == f"off: {witness.OFF_REASON}" else None)
    return (runtime if isinstance(runtime, str) and runtime else None,
            setup.poison == "glibc", kept_witness, setup.detector)


def config_from_args(name: str, args: argparse.Namespace, meta: CampaignMeta | None,
                     timeout_s: float) -> host.HostConfig:
    """``--runtime``, ``--poison`` and ``--witness`` left out: with ``--resume``, as the
    campaign ran (``campaign.json``'s build and options), else the defaults.

    Raises:
        UsageError: ``--runtime`` other than the resumed campaign's.
    """
    runtime, poison, witness, tool = _kept(meta)
    if args.runtime is not None and runtime is not None and args.runtime != runtime:
        raise UsageError(f"cannot resume {args.out} with --runtime {args.runtime}: it ran on "
                         f"runtime {runtime}", "resume without --runtime")
    return host.HostConfig(runtime=args.runtime or runtime or host.DEFAULT_RUNTIME,
                           models=args.models,
                           poison=bool(args.poison if args.poison is not None else poison),
                           witness=args.witness if args.witness is not None else witness,
                           timeout_s=timeout_s,
                           detector=args.detector if args.detector is not None else tool,
                           jobs=args.detector_jobs)


def baseline_from_args(name: str, args: argparse.Namespace, meta: CampaignMeta | None,
                       timeout_s: float, rule: Any) -> tuple[host.HostConfig,
                                                             dict[str, Any]] | None:
    """The baseline build of an interleaved run (``--baseline-runtime``, or the resumed
    campaign's), as a config and what ``campaign.json`` keeps of it; ``None`` for a run
    against a finished baseline (or without a rule).

    Raises:
        UsageError: ``--baseline-runtime`` without ``--until-verdict``, the run's own
            runtime, an unprepared one, or one given on resuming a run against a finished
            baseline.
    """
    kept = meta.until_verdict if meta is not None else None
    base = args.baseline_runtime
    if kept is not None:
        kept_runtime = kept.extra.get("baseline_runtime")
        if not kept.interleaved:
            if base is not None:
                raise UsageError(f"cannot resume {args.out} with --baseline-runtime: it was "
                                 f"started against a finished baseline",
                                 "resume without --baseline-runtime")
            return None
        if base is not None and base != kept_runtime:
            raise UsageError(f"cannot resume {args.out} with --baseline-runtime {base}: its "
                             f"baseline ran on runtime {kept_runtime}",
                             "resume without --baseline-runtime")
        base = kept_runtime if isinstance(kept_runtime, str) else None
    if base is None:
        return None
    if rule is None:
        raise UsageError("--baseline-runtime needs --until-verdict DIR, the directory for the "
                         "baseline's campaign", "add --until-verdict runs/baseline")
    candidate = config_from_args(name, args, meta, timeout_s)
    if base == candidate.runtime:
        raise UsageError(f"--baseline-runtime is this run's own runtime ({base})",
                         "give the runtime of the build to compare against, e.g. "
                         "--runtime patched --baseline-runtime debian")
    host.load_runtime(base)  # prepared, or a one-line error before any build
    return (dataclasses.replace(candidate, runtime=base),
            {"baseline_runtime": base})
