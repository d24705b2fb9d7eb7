"""The rn-host target (docs/rn-host.md): the app's own JS (rn-app/, bundled with
rn-app/host/) and onnxruntime-react-native's own C++ threads, cold-launched in the kit's
Debian root on any host runtime.

It is the host target with another program: :meth:`RnHostTarget.prepare` lets
:class:`kit.targets.host.HostTarget` check the models, the scenario, the runtime, the
witness and the detector, then builds the rn-host program for that runtime
(:mod:`.build`) and hands the launches to :class:`RnHostLauncher`, the host's launcher with
the program's command line. Its config is the host's (:class:`kit.targets.host.HostConfig`).
With ``--detector tsan`` the runtime is the host's ThreadSanitizer variant
(:func:`kit.targets.host.tsan_runtime`) and the program is built for it with
``-fsanitize=thread``; the host launcher's detector path (``TSAN_OPTIONS``, the reports, the
attribution to the allocator statics) is used as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...launch import LogFn, PreparedTarget
from ...modelset import ModelSet
from ...scenario import Scenario
from ..host import HostConfig, HostTarget, Runtime
from ..host.launcher import HostLauncher
from .build import RnHostProgram, build_program

__all__ = ["RnHostTarget", "RnHostLauncher", "TARGETS", "DETECTOR_ENV", "HOLD_ENV"]

#: JavaScriptCore's options under a race detector: its JIT off (JSC reads ``JSC_<option>``
#: from the environment), so valgrind runs the interpreter instead of translating JIT code;
#: kept under ThreadSanitizer too (JIT code is never instrumented, and the campaigns of
#: both detectors then run the same JS engine).
DETECTOR_ENV = {"JSC_useJIT": "false"}

#: JavaScriptCore's options under a hold (``hold=MS``, docs/race.md "The hold on the app"):
#: a collection every 10 slow-path allocations (JSC's ``slowPathAllocsBetweenGCs``), so the
#: output tensors the app's JS dropped are finalized before it disposes its sessions, as a
#: phone's collector does at some point. Without it, JSC never collects in a launch this
#: short, those tensors keep their session's allocator alive past ``dispose``, and the
#: release the hold sets up never frees the allocator XNNPACK kept (0 of 20 launches
#: crashed; with it 8 of 8, issue #40's note).
HOLD_ENV = {"JSC_slowPathAllocsBetweenGCs": "10"}


class RnHostLauncher(HostLauncher):
    """:class:`kit.targets.host.launcher.HostLauncher` running the rn-host program: the same
    process handling, witness, detector, crash evidence and outcome table; only the argv
    differs (the bundle, the scenario URL as the app's deep link, the model set's files as
    the app's bundled assets)."""

    target = "rn-host"

    def __init__(self, runtime: Runtime, modelset: ModelSet, program: RnHostProgram,
                 **options: Any) -> None:
        super().__init__(runtime, modelset, **options)
        self.program = program
        if self.detector is not None:
            self._env = {**self._env, **DETECTOR_ENV}
        assets = {m.path.name: m.path for m in modelset.models}
        assets.update({"clip.wav": modelset.clip, "expected.json": modelset.expected_path,
                       "manifest.json": modelset.root / "manifest.json"})
        self._asset_args = [a for name, path in sorted(assets.items())
                            for a in ("--asset", f"{name}={path}")]

    def scenario_env(self, scenario: Scenario) -> dict[str, str]:
        """The host launcher's environment, with :data:`HOLD_ENV` under a hold."""
        env = super().scenario_env(scenario)
        return {**env, **HOLD_ENV} if scenario.hold > 0 else env

    def argv(self, scenario: Scenario) -> list[str]:
        """The program's argv for one launch of ``scenario``. The hold (``hold=MS``, a host
        key the app refuses) goes to the program as ``--hold-ms``, out of the app's URL; the
        program writes the host workload's ``COLDSTART-HOLD`` lines, so the record's ``hold``
        field comes from the host launcher's :func:`kit.targets.host.launcher.hold_payload`."""
        hold = ["--hold-ms", str(scenario.hold)] if scenario.hold > 0 else []
        return self.program.command(self.runtime, "--scenario",
                                    scenario.with_changes(hold=0).to_url(), *hold,
                                    *self._asset_args)


class RnHostTarget:
    """:class:`kit.launch.Target` for the app on the host: one launcher, this machine."""

    name = "rn-host"

    def prepare(self, config: HostConfig, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """The host target's checks and setup, then the rn-host program for its runtime.

        Raises:
            UsageError, DataError, InfraError: as :meth:`kit.targets.host.HostTarget.prepare`
                and :func:`.build.build_program`.
        """
        prepared = HostTarget().prepare(config, scenario, log)
        hosts = [h for h in prepared.launchers if isinstance(h, HostLauncher)]
        program = build_program(hosts[0].runtime, log=log)
        launchers = [RnHostLauncher(h.runtime, h.modelset, program, poison=h.poison,
                                    witness=h.witness, detector=h.detector) for h in hosts]
        build = {k: v for k, v in prepared.build.items() if k not in ("workload", "workload_hash")}
        build.update({"program": program.binary, "program_hash": program.digest,
                      "bundle_sha256": program.bundle_sha256, "packages": program.packages,
                      "js_engine": "JavaScriptCore (Debian's libjavascriptcoregtk-4.1)"})
        options = dict(prepared.options)
        if "detector" in options:
            options["detector_env"] = dict(DETECTOR_ENV)
        if scenario.hold > 0:
            options["hold_env"] = dict(HOLD_ENV)
        return dataclasses.replace(
            prepared, target=self.name, launchers=launchers, build=build, options=options,
            identity=dataclasses.replace(prepared.identity, program=program.binary,
                                         program_sha256=program.digest))


TARGETS = (RnHostTarget(),)
