"""The host target: the native desktop workload on onnxruntime with the XNNPACK EP.

* :mod:`.runtime`: the runtimes (a Debian 13 root, the system's ORT, a user's ORT build),
  prepared once, and the workload built on each;
* :mod:`.launcher`: one cold launch per call, a fresh workload process;
* here: :class:`HostConfig` and :class:`HostTarget`, what a campaign session prepares.

The launcher module is imported on first use (``HostLauncher`` below), so that the race
witness's build code can use the runtimes without an import cycle.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from ...errors import UsageError
from ...scenario import Scenario
from ...launch import LogFn, PreparedTarget
from ...store.identity import BuildIdentity, OrtVariant
from ...store.meta import RunSetup
from .runtime import (DEBIAN_SUITE, DEFAULT_MIRROR, DEFAULT_RUNTIME, POISON_ENV, Runtime,
                      build_workload, check_scenario, load_runtime, prepare_runtime,
                      own_workload, workload_needs_build, fetch_debug_symbols,
                      run_compiler, runtime_dir)

__all__ = ["HostConfig", "HostTarget", "TARGETS", "HostLauncher", "Runtime", "tsan_runtime", "check_hold",
           "prepare_runtime", "load_runtime", "build_workload", "check_scenario",
           "run_compiler", "runtime_dir", "POISON_ENV", "DEFAULT_RUNTIME", "DEFAULT_MIRROR",
           "DEBIAN_SUITE"]


def __getattr__(name: str) -> Any:
    if name == "HostLauncher":
        from .launcher import HostLauncher

        return HostLauncher
    raise AttributeError(name)


@dataclasses.dataclass(frozen=True)
class HostConfig:
    """A host campaign's settings.

    Attributes:
        runtime: the prepared runtime's name (``coldstart runtime prepare --name``).
        models: the model set folder (``None``: the checkout's ``models/``).
        poison: glibc heap poisoning (:data:`POISON_ENV`).
        witness: preload the race witness; ``None``: on where onnxruntime links XNNPACK as
            a shared library, else off.
        timeout_s: a launch's timeout (kept in the campaign's options).
        detector: run every launch under a happens-before race detector, ``drd`` or
            ``helgrind`` (:mod:`kit.targets.host.detector`), ``tsan`` (the runtime's
            ThreadSanitizer variant, :func:`tsan_runtime`), or ``None``.
        jobs: launches in parallel (``None``: one, or with a detector one per core; a
            detector's evidence does not depend on timing, so its launches may share the
            machine).
    """

    runtime: str = DEFAULT_RUNTIME
    models: str | None = None
    poison: bool = False
    witness: bool | None = None
    timeout_s: float = 30.0
    detector: str | None = None
    jobs: int | None = None


def _witness_for(runtime: Runtime, wanted: bool | None, log: LogFn) -> tuple[str | None, str]:
    """The witness library to preload (or ``None``) and the campaign's note about it.

    Raises:
        UsageError: ``witness=True`` on a runtime with static XNNPACK, or the witness
            cannot be built (see :func:`kit.targets.host.witness.build_witness`).
    """
    from . import witness

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


def _detector_for(config: HostConfig, runtime: Runtime) -> Any:
    """The :class:`kit.targets.host.detector.Detector` of ``config.detector``, its library analysed (once
    per library, about 10 s, then cached), or ``None``.

    Raises:
        UsageError: an unknown tool, no valgrind for the runtime, or the witness turned off
            (its wrapper address and load bases tie races to onnxruntime's statics).
    """
    if not config.detector:
        return None
    from . import detector

    found = detector.make_detector(config.detector, runtime)  # no tool: one line
    if config.witness is False:
        raise UsageError("--detector needs the race witness: its wrapper address and load "
                         "bases tie races to onnxruntime's statics", "drop --no-witness")
    found.analyze()
    return found


def tsan_runtime(name: str, log: LogFn) -> Runtime:
    """The ThreadSanitizer variant of the kit build ``name`` (``build-ort --tsan``); built
    here on first use, with progress, when this process may (root).

    Raises:
        UsageError: ``name`` is not a kit build (Debian's binary cannot be instrumented),
            or its variant is missing and cannot be built here (the hint says how).
        InfraError: the build failed.
    """
    plain = load_runtime(name)
    try:
        return load_runtime(name, sanitizer="tsan")
    except UsageError:
        pass
    if plain.build is None:
        raise UsageError(f"--detector tsan needs a runtime the kit built; {name!r} is "
                         f"{'Debian' if plain.kind == 'debian-root' else 'a'} {plain.kind} "
                         f"binary", "use --detector drd for it, or build one: `sudo coldstart "
                         "runtime build-ort --name baseline --tsan`")
    patch = plain.build.get("patch") or None
    spec = None if patch is None else (patch.get("name") if patch.get("origin") == "kit"
                                       else patch.get("origin"))
    command = (f"coldstart runtime build-ort --name {name}"
               + (f" --patch {spec}" if spec else "") + " --tsan")
    if os.geteuid() != 0:
        raise UsageError(f"runtime {name!r} has no ThreadSanitizer variant yet",
                         f"build it once (about 3 minutes): `sudo {command}`")
    from .ortbuild import build_ort_runtime, format_progress

    log(f"host: building the ThreadSanitizer variant of runtime {name!r} (first use; "
        f"`{command}`)")
    last = [0.0]

    def progress(p: Any) -> None:
        import time

        if time.monotonic() - last[0] >= 20 or p.done == p.total:
            last[0] = time.monotonic()
            log(f"host: {format_progress(p)}")

    return build_ort_runtime(name, spec, instrument="tsan", log=lambda m: log(f"host: {m}"),
                             progress=progress)


def check_hold(config: HostConfig, scenario: Scenario) -> None:
    """Refuse a hold (``hold=MS``, docs/race.md "The hold") that cannot give what it is for.

    Raises:
        UsageError: a hold under a race detector (the held threads leave the window one at
            a time through the workload's own lock, which a happens-before detector reads as
            synchronisation between the racing accesses, and the crash it then makes is
            unwound through the tool's signal handler: the mechanism tier runs without the
            hold, the failure tier without a detector); or a hold whose threads, leaving
            ``MS`` apart, would be held past the launch's timeout.
    """
    if scenario.hold <= 0:
        return
    if config.detector is not None:
        raise UsageError(f"hold={scenario.hold} cannot run under --detector {config.detector}: "
                         "the hold orders the creating threads through the workload's own "
                         "lock, which the detector reads as synchronisation",
                         "run the failure tier with the hold and no detector, and the "
                         "mechanism tier with a detector and no hold (docs/race.md)")
    held_s = scenario.hold * scenario.sessions / 1000
    if held_s >= config.timeout_s:
        raise UsageError(f"hold={scenario.hold} with {scenario.sessions} sessions holds the "
                         f"creating threads for about {held_s:g} s (they leave one at a time), "
                         f"past --timeout {config.timeout_s:g} s",
                         f"raise --timeout above {held_s + 30:g} or lower the hold")


class HostTarget:
    """:class:`kit.launch.Target` for the host: one launcher, this machine."""

    name = "host"

    def prepare(self, config: HostConfig, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """Check the models, the scenario and the runtime, and build the launcher.

        Raises:
            UsageError, DataError: bad scenario, missing or tampered models, runtime not
                ready.
        """
        from ... import modelset
        from ...observe import RESOURCE_LIMIT_SIGNALS, signal_name
        from .launcher import HostLauncher, resource_limit_text

        limits = {}
        for number, (limit, what, lift) in RESOURCE_LIMIT_SIGNALS.items():
            value = resource_limit_text(limit)
            if value is not None:  # inherited by every launch: say so before the first
                limits[limit] = value
                log(f"host: the {what} limit {limit} is {value}; a launch past it dies of "
                    f"{signal_name(number)}, an infra error that stops the campaign "
                    f"(`{lift}` lifts it)")
        check_hold(config, scenario)
        ms = modelset.load_modelset(config.models)
        modelset.require_verified(ms)
        check_scenario(scenario, ms)
        runtime = (tsan_runtime(config.runtime, log) if config.detector == "tsan"
                   else load_runtime(config.runtime))
        # checkouts that share the cache: this one's own build, when it made one; a workload
        # built from another source (an older checkout) is rebuilt from this one's, never
        # launched in its place
        runtime = own_workload(runtime)
        if workload_needs_build(runtime):
            if runtime.workload_hash is not None:
                log("host: the workload was built from another source than this checkout's: "
                    "building this one's")
            runtime = build_workload(runtime, log=log)
        runtime.command()  # a workload binary that is gone: one line now, not infra errors
        found = _detector_for(config, runtime)
        witness_lib, witness_note = _witness_for(runtime, config.witness, log)
        jobs = config.jobs or (len(os.sched_getaffinity(0)) if found else 1)
        launchers = [HostLauncher(runtime, ms, poison=config.poison, witness=witness_lib,
                                  detector=found) for _ in range(jobs)]
        launcher = launchers[0]
        library_sha256 = modelset.sha256_file(Path(runtime.ort_library))
        ort_build = OrtVariant.from_dict(runtime.build, f"runtime {runtime.name!r}'s build") \
            if runtime.build is not None else None
        identity = BuildIdentity(
            artifact="ort_library", path=runtime.ort_library, sha256=library_sha256,
            program=runtime.workload, program_sha256=runtime.workload_hash,
            version=ort_build.source.get("version") if ort_build is not None else None,
            ort_build=ort_build)
        build: dict[str, Any] = {"runtime": runtime.name, "kind": runtime.kind,
                 "ort_library": runtime.ort_library, "ort_library_sha256": library_sha256,
                 "xnnpack_library": runtime.xnnpack_library, "workload": runtime.workload,
                 "workload_hash": runtime.workload_hash, "witness_library": witness_lib}
        if runtime.build is not None:  # built by `coldstart runtime build-ort`
            build["ort_build"] = runtime.build
        poison = "glibc" if config.poison else None
        options: dict[str, Any] = {"poison": poison, "timeout_s": config.timeout_s,
                                   "env": dict(POISON_ENV) if config.poison else {},
                                   "witness": witness_note, "model_set": ms.fingerprint()}
        if limits:
            options["resource_limits"] = limits
        if found is not None:
            options["detector"] = found.describe()
        setup = RunSetup(witness=witness_note, detector=config.detector if found else None,
                         timeout_s=config.timeout_s, poison=poison,
                         compared={k: options[k] for k in ("poison", "env", "witness",
                                                           "model_set")})
        return PreparedTarget(target=self.name, launchers=list(launchers), build=build,
                              options=options, setup=setup,
                              devices=[{"id": launcher.device, "kind": "host"}],
                              identity=identity)


TARGETS = (HostTarget(),)
