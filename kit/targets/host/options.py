"""The host target's plug-in (:class:`HostPlugin`): the options of ``coldstart run host``
(:class:`kit.targets.host.HostConfig`), read the same way by the command line and the
pytest plugin, and its ``prepare``."""

from __future__ import annotations

import argparse
import dataclasses
import functools
from typing import Any

from ...store.meta import CampaignMeta
from ...errors import UsageError
from ...launch import BaselineBuild, LogFn, PreparedTarget, TargetPlugin
from ...scenario import Scenario
from ...targets import host
from ...argtypes import positive_int

__all__ = ["HostPlugin", "PLUGIN", "add_arguments", "add_detector_options"]


class HostPlugin(TargetPlugin[host.HostConfig]):
    """The host target: one fresh workload process per launch on a prepared runtime."""

    name = "host"
    help = "cold-launch the native workload on this machine"
    description = "One fresh workload process per launch, on the prepared runtime."
    default_timeout_s = 30.0
    config_type = host.HostConfig

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_arguments(parser)

    def config_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                         timeout_s: float) -> host.HostConfig:
        return config_from_args(args, self._kept(kept), timeout_s)

    def baseline_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                           timeout_s: float, rule: Any
                           ) -> BaselineBuild[host.HostConfig] | None:
        return baseline_from_args(args, kept, self._kept(kept), timeout_s, rule)

    def prepare(self, config: host.HostConfig, scenario: Scenario,
                log: LogFn) -> PreparedTarget:
        return host.HostTarget().prepare(config, scenario, log)

    def _kept(self, kept: CampaignMeta | None) -> host.HostConfig | None:
        """The resumed campaign's config: stored, or read from the provenance a kit before
        the stored config wrote (:func:`_legacy_config`)."""
        config = self.kept_config(kept)
        if config is None and kept is not None:
            return _legacy_config(kept)
        return config


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def _legacy_config(meta: CampaignMeta) -> host.HostConfig:
    """The config of a host campaign written by a kit that kept none: the runtime from this
    target's own ``build``, poison, witness and detector from its setup (a witness that was
    off by choice reads as off; off for another reason, or unknown, as the default)."""
    from . import witness

    runtime = meta.build.get("runtime")  # the host target's own build key
    setup = meta.setup
    kept_witness = True if setup.witnessed else (
        False if setup.witness == f"off: {witness.OFF_REASON}" else None)
    return host.HostConfig(runtime=runtime if isinstance(runtime, str) and runtime
                           else host.DEFAULT_RUNTIME, poison=setup.poison == "glibc",
                           witness=kept_witness, detector=setup.detector,
                           timeout_s=setup.timeout_s or 30.0)


def config_from_args(args: argparse.Namespace, kept: host.HostConfig | None,
                     timeout_s: float) -> host.HostConfig:
    """``--runtime``, ``--poison``, ``--witness`` and ``--detector`` left out: with
    ``--resume``, as the campaign ran (``kept``, its config), else the defaults.

    Raises:
        UsageError: ``--runtime`` other than the resumed campaign's.
    """
    runtime = kept.runtime if kept is not None else None
    if args.runtime is not None and runtime is not None and args.runtime != runtime:
        raise UsageError(f"cannot resume {args.out} with --runtime {args.runtime}: it ran on "
                         f"runtime {runtime}", "resume without --runtime")
    poison = kept.poison if kept is not None else None
    witness = kept.witness if kept is not None else None
    tool = kept.detector if kept is not None else None
    return host.HostConfig(runtime=args.runtime or runtime or host.DEFAULT_RUNTIME,
                           models=args.models,
                           poison=bool(args.poison if args.poison is not None else poison),
                           witness=args.witness if args.witness is not None else witness,
                           timeout_s=timeout_s,
                           detector=args.detector if args.detector is not None else tool,
                           jobs=args.detector_jobs)


def baseline_from_args(args: argparse.Namespace, meta: CampaignMeta | None,
                       kept_config: host.HostConfig | None, timeout_s: float,
                       rule: Any) -> BaselineBuild[host.HostConfig] | None:
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
    candidate = config_from_args(args, kept_config, timeout_s)
    if base == candidate.runtime:
        raise UsageError(f"--baseline-runtime is this run's own runtime ({base})",
                         "give the runtime of the build to compare against, e.g. "
                         "--runtime patched --baseline-runtime debian")
    host.load_runtime(base)  # prepared, or a one-line error before any build
    return BaselineBuild(dataclasses.replace(candidate, runtime=base),
                         {"baseline_runtime": base})


#: the host target's plug-in (the registry's entry)
PLUGIN = HostPlugin()
