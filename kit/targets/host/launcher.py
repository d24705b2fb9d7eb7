"""Cold-launches of the host workload: one fresh process per launch, its protocol lines read
from stdout, its stderr (thousands of "Schema error" lines from Debian's libraries, and any
crash backtrace) written straight to ``artifacts/<id>/stderr.txt``; what was observed goes
through the one outcome table (:mod:`kit.observe`)."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import time
from typing import Any

from ..._bounded import read_tail_bounded
from ...launch import LaunchContext
from ...store.store import utc_now
from ...errors import InfraError
from ...modelset import ModelSet, scores_match
from ...observe import (RESOURCE_LIMIT_SIGNALS, Observation, ProcessEnd, crash_evidence,
                        make_record, resource_limit_reason)
from ...protocol import iter_events
from ...records import LaunchRecord
from ...scenario import Scenario
from .witness import race as witness_race
from .runtime import POISON_ENV, Runtime

__all__ = ["HostLauncher", "resource_limit_text", "hold_payload", "HOLD_PREFIX"]

#: The line the workload writes to stderr each time ``hold=MS`` holds a creating thread
#: (kit/workload/coldstart_workload.cpp, ``hold_here``): ``COLDSTART-HOLD n=N ms=MS t_ms=T``.
HOLD_PREFIX = "COLDSTART-HOLD "

#: RLIMIT_* per resource-limit signal, with the unit ``ulimit`` shows it in (bash(1)).
_LIMITS = {"RLIMIT_FSIZE": (resource.RLIMIT_FSIZE, 1024, "blocks of 1024 bytes"),
           "RLIMIT_CPU": (resource.RLIMIT_CPU, 1, "s")}


def resource_limit_text(limit: str) -> str | None:
    """This process's soft ``limit`` (``RLIMIT_FSIZE`` or ``RLIMIT_CPU``) as ``ulimit``
    shows it (``30 blocks of 1024 bytes``, ``5 s``), or ``None`` when unlimited. The
    workload inherits it (getrlimit(2))."""
    number, unit, name = _LIMITS[limit]
    soft, _hard = resource.getrlimit(number)
    if soft == resource.RLIM_INFINITY:
        return None
    return f"{soft // unit} {name}"


#: how much of a launch's stderr is read back: its end (the crash block the handler writes
#: last), however many library warnings came before
STDERR_TAIL_BYTES = 8 * 1024 * 1024


def _stderr_tail(path: Any) -> str:
    """The end of a launch's stderr artifact (bounded, regular files only)."""
    return read_tail_bounded(path, STDERR_TAIL_BYTES, what="launch stderr").decode(
        "utf-8", "replace")


def _crash_block(stderr_text: str) -> str:
    start = stderr_text.find("COLDSTART-CRASH signal=")
    if start < 0:
        return ""
    end = stderr_text.find("COLDSTART-CRASH end", start)
    return stderr_text[start:] if end < 0 else stderr_text[start:end + len("COLDSTART-CRASH end")]


def hold_payload(ms: int, events: Any, stderr_text: str) -> dict[str, Any] | None:
    """``LaunchRecord.hold`` for a launch that asked for ``hold=ms`` (``None`` when ``ms`` is
    0): how many times a creating thread was held, from the workload's ``COLDSTART-HOLD``
    lines in ``stderr_text`` (written as each hold begins, so a crash that follows keeps
    them) and the ``hold`` field of its ``sessions-created`` event, whichever counts more.
    Never raises: a malformed field counts as absent."""
    if ms <= 0:
        return None
    from_stderr = sum(1 for line in stderr_text.splitlines() if line.startswith(HOLD_PREFIX))
    from_protocol = 0
    for event in events:
        field = event.fields.get("hold") if event.phase == "sessions-created" else None
        count = field.get("engaged") if isinstance(field, dict) else None
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            from_protocol = max(from_protocol, count)
    engaged = max(from_stderr, from_protocol)
    source = ("none" if engaged == 0 else "stderr" if from_stderr >= from_protocol
              else "protocol")
    return {"ms": ms, "engaged": engaged, "source": source}


class HostLauncher:
    """Cold-launches the host workload: one fresh process per :meth:`launch`.

    Args:
        runtime: a built :class:`Runtime`.
        modelset: the verified model set (paths, clip, expected scores).
        poison: turn on glibc heap poisoning (:data:`POISON_ENV`).
        preload: other shared libraries to preload, or ``()``.
        witness: the built race witness (:func:`kit.targets.host.witness.build_witness`) to preload, or
            ``None``. With it, each launch's witness output goes to
            ``artifacts/<id>/witness.jsonl`` and becomes ``LaunchRecord.race``; without it,
            ``race`` says the witness was unavailable and why (XNNPACK linked statically,
            or turned off), never that no race happened.
        detector: a :class:`kit.targets.host.detector.Detector` to run every launch under, or ``None``
            (its slowdown scales the time-out; see :meth:`kit.targets.host.detector.Detector.finish`).
    """

    target = "host"

    def __init__(self, runtime: Runtime, modelset: ModelSet, poison: bool = False,
                 preload: tuple[str, ...] = (), witness: str | None = None,
                 detector: Any = None) -> None:
        self.runtime = runtime
        self.detector = detector
        self.modelset = modelset
        self.poison = poison
        self.witness = witness
        if witness is not None:
            preload = (*preload, witness)
        self.preload = preload
        self._race_off_reason = (witness_race.STATIC_REASON if runtime.xnnpack_library is None
                                 else witness_race.OFF_REASON)
        self.device = f"host:{socket.gethostname()}"
        self._expected = modelset.expected()
        self._proc: subprocess.Popen[bytes] | None = None
        self._model_args: list[str] = []
        for model in modelset.models:
            self._model_args += ["--model", f"{model.role}:{model.name}:{model.path}"]
        self._env = dict(os.environ)
        if poison:
            self._env.update(POISON_ENV)
        if preload:
            self._env["LD_PRELOAD"] = " ".join(preload)

    def _symbolize(self, record: Any) -> Any:
        """The crash record with its unnamed frames symbolized from the libraries' own
        symbols (:func:`kit.crash.symbolize_host`: the kit's builds keep ``-g``; Debian's
        ``*-dbgsym`` files under the root's ``/usr/lib/debug`` when ``runtime prepare``
        could fetch them), else as it is."""
        from ...crash import symbolize_host

        debug = [os.path.join(self.runtime.root, "usr/lib/debug")] if self.runtime.root else []
        done = symbolize_host(record, debug_dirs=debug)
        return record if done is None else done.record

    def argv(self, scenario: Scenario) -> list[str]:
        """The workload's argv for one launch of ``scenario``."""
        expected = ",".join(repr(float(s)) for s in self._expected["scores"])
        return self.runtime.command(
            "--scenario", scenario.to_url(), *self._model_args,
            "--clip", str(self.modelset.clip), "--expected", expected,
            "--tolerance", repr(float(self._expected["tolerance"]["abs"])))

    def scenario_env(self, scenario: Scenario) -> dict[str, str]:
        """The environment of one launch of ``scenario``: this launcher's (the kit's own,
        poisoning, the witness's preload); a target whose program needs more for a scenario
        adds it here."""
        return self._env

    def abort(self) -> None:
        """Kill the launch in flight, if any (Ctrl-C)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """One cold launch; see the module doc. Never raises for what the workload does.

        Raises:
            InfraError: the workload could not be started, or it rejected its arguments.
        """
        started_at = utc_now()
        t0 = time.monotonic()
        stderr_path = ctx.artifacts_dir / "stderr.txt"
        witness_path = ctx.artifacts_dir / "witness.jsonl"
        env = self.scenario_env(ctx.scenario)
        if self.witness is not None:
            env = {**env, witness_race.ENV_FILE: str(witness_path)}
        argv, timeout_s = self.argv(ctx.scenario), ctx.timeout_s
        if self.detector is not None:  # detector mode (kit.targets.host.detector)
            argv, tool_env = self.detector.wrap(argv, ctx.artifacts_dir)
            env, timeout_s = {**env, **tool_env}, ctx.timeout_s * self.detector.slowdown
        hung = False
        with open(stderr_path, "wb") as err:
            try:
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                        stderr=err, stdin=subprocess.DEVNULL, env=env,
                                        start_new_session=True)
            except OSError as exc:
                raise InfraError(f"cannot start the workload: {exc}",
                                 "run `coldstart runtime build`") from None
            self._proc = proc
            try:
                out, _ = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                hung = True
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
            finally:
                self._proc = None
        wall_ms = (time.monotonic() - t0) * 1000.0
        stdout = out.decode("utf-8", "replace")
        (ctx.artifacts_dir / "stdout.txt").write_text(stdout)
        artifacts = [f"{ctx.artifacts_rel}/stdout.txt", f"{ctx.artifacts_rel}/stderr.txt"]
        witnessed = None
        if self.witness is None:
            race = witness_race.unavailable(self._race_off_reason)
        else:
            witnessed = witness_race.read_witness_file(witness_path)
            race = witnessed.to_dict()
            if witness_path.exists():
                artifacts.append(f"{ctx.artifacts_rel}/witness.jsonl")
        detected = None
        payloads: dict[str, Any] = {}
        if self.detector is not None:
            detected = self.detector.finish(ctx, witnessed, stderr_path, hung,
                                            returncode=proc.returncode)
            artifacts += detected.artifacts
            payloads["detector"] = detected.payload
        events = tuple(iter_events(stdout.splitlines(), ctx.launch_id))
        rc = proc.returncode
        if rc == 2 and not events and not hung and detected is None:
            tail = _stderr_tail(stderr_path).strip().splitlines()[-1:]
            raise InfraError(f"the workload rejected its arguments: {' '.join(tail)[:200]}",
                             "rebuild it with `coldstart runtime build --force`")
        if hung:
            end, signal_no = ProcessEnd.TIMED_OUT, None
        elif rc < 0:
            end, signal_no = ProcessEnd.SIGNALED, -rc
        else:
            end, signal_no = ProcessEnd.EXITED, None
        evidence = None
        infra, persistent = (detected.tool_error if detected else None), False
        if signal_no in RESOURCE_LIMIT_SIGNALS and infra is None:
            # the kernel's signal for a limit the kit's environment set: no crash to parse
            limit = RESOURCE_LIMIT_SIGNALS[signal_no][0]
            infra = resource_limit_reason(signal_no, resource_limit_text(limit))
            persistent = True
            (ctx.artifacts_dir / "infra-error.txt").write_text(
                f"launch {ctx.launch_id}: {infra}\n")
            artifacts.append(f"{ctx.artifacts_rel}/infra-error.txt")
        elif signal_no is not None:
            block = _crash_block(_stderr_tail(stderr_path))
            evidence, rel = crash_evidence(block, ctx.artifacts_dir, ctx.artifacts_rel,
                                           "crash.txt", host_signal=signal_no,
                                           refine=self._symbolize)
            artifacts.append(rel)
        if ctx.scenario.hold > 0:
            payloads["hold"] = hold_payload(ctx.scenario.hold, events,
                                            _stderr_tail(stderr_path))
        observation = Observation(events=events, end=end, timeout_s=timeout_s,
                                  infer=ctx.scenario.infer, exit_code=rc if rc >= 0 else None,
                                  signal=signal_no, crash=evidence,
                                  infra=infra, persistent=persistent,
                                  check_scores=lambda s: scores_match(self._expected, s))
        return make_record(ctx, target=self.target, device=self.device,
                           observation=observation, started_at=started_at, wall_ms=wall_ms,
                           artifacts=artifacts, race=race, **payloads)
