"""The one outcome table (kit/observe.py), case by case: what every target's launcher hands
over, and the outcome, last phase and crash fields that follow."""

from __future__ import annotations

import pytest

from kit.observe import (CrashEvidence, Observation, ProcessEnd, fold_events, observe,
                         signal_name)
from kit.protocol import ProtocolEvent
from kit.records import Outcome

ID = "b-00000"
EXPECTED = [0.25, 0.998]


def ev(phase: str, t_ms: float = 1.0, **fields) -> ProtocolEvent:
    return ProtocolEvent(id=ID, phase=phase, t_ms=t_ms, fields=fields)


def run(*phases: str, error: str | None = None, scores=EXPECTED, ok=None) -> tuple:
    events = []
    for i, phase in enumerate(phases):
        fields = {}
        if phase == "inference-done":
            fields = {"scores": scores} if scores is not None else {}
            if ok is not None:
                fields["ok"] = ok
        events.append(ev(phase, float(i), **fields))
    if error is not None:
        events.append(ev("error", 99.0, message=error))
    return tuple(events)


ALL = ("start", "models-ready", "sessions-created", "inference-done", "sessions-released",
       "done")
UAF = CrashEvidence(crash={"signal": 11}, crash_class="xnnpack-allocator-uaf",
                    signature="xnn_aligned_allocate | xnn_create_fully_connected_nc_f32",
                    signal=11)
JS = CrashEvidence(crash={"signal": 6}, crash_class="js-error", signature="JS | TypeError",
                   signal=6)


def check(scores) -> tuple[bool, float]:
    diff = max(abs(a - b) for a, b in zip(scores, EXPECTED)) if len(scores) == 2 else \
        float("inf")
    return diff <= 1e-3, diff


CASES = [
    # (name, observation, outcome, last phase, crash class, error)
    ("infra first, whatever else", Observation(run(*ALL), ProcessEnd.DIED, 10, True, crash=UAF,
                                               infra="device offline"),
     Outcome.INFRA_ERROR, "done", None, "device offline"),
    ("error then death is a crash", Observation(run("start", "models-ready", error="boom"),
                                                ProcessEnd.DIED, 10, True, crash=JS),
     Outcome.CRASHED, "models-ready", "js-error", "boom"),
    ("error then a signal on the host", Observation(run("start", error="boom"),
                                                    ProcessEnd.SIGNALED, 10, True, signal=6),
     Outcome.CRASHED, "start", None, "boom"),
    ("done then a crash in teardown", Observation(run(*ALL), ProcessEnd.SIGNALED, 10, True,
                                                  signal=11, crash=UAF),
     Outcome.CRASHED, "done", "xnnpack-allocator-uaf", None),
    ("death without a report says so", Observation(
        run("start", "models-ready", "sessions-created"), ProcessEnd.DIED, 10, True,
        crash=CrashEvidence(note="no crash report for pid 42 within 8 s")),
     Outcome.CRASHED, "sessions-created", None, "no crash report for pid 42 within 8 s"),
    ("exit before done without an error", Observation(run("start"), ProcessEnd.EXITED, 10,
                                                      True, exit_code=1),
     Outcome.CRASHED, "start", None, "exited with status 1 before done"),
    ("error and a clean exit is an app error", Observation(run("start", error="create failed"),
                                                           ProcessEnd.EXITED, 10, True,
                                                           exit_code=1),
     Outcome.APP_ERROR, "start", None, "create failed"),
    ("error, the app alive", Observation(run("start", error="create failed"),
                                         ProcessEnd.ALIVE, 10, True),
     Outcome.APP_ERROR, "start", None, "create failed"),
    ("no done by the timeout", Observation(run("start", "models-ready"), ProcessEnd.TIMED_OUT,
                                           12, True, killed_note="force-stopped"),
     Outcome.HUNG, "models-ready", None, "no done within 12 s; force-stopped"),
    ("done with scores in tolerance", Observation(run(*ALL), ProcessEnd.EXITED, 10, True,
                                                  exit_code=0, check_scores=check),
     Outcome.COMPLETED, "done", None, None),
    ("done, scores out of tolerance", Observation(run(*ALL, scores=[0.25, 0.5]),
                                                  ProcessEnd.ALIVE, 10, True,
                                                  check_scores=check),
     Outcome.WRONG_OUTPUT, "done", None, "the scores are not within the model set's tolerance"),
    ("done, inference ran, nothing to check", Observation(run(*ALL, scores=None),
                                                          ProcessEnd.ALIVE, 10, True),
     Outcome.WRONG_OUTPUT, "done", None, "inference ran but its outputs cannot be checked "
                                         "(no scores the kit can check, and no ok from the app)"),
    ("done, the app's own check", Observation(run(*ALL, scores=None, ok=True),
                                              ProcessEnd.ALIVE, 10, True),
     Outcome.COMPLETED, "done", None, None),
    ("done without inference-done", Observation(run("start", "sessions-created", "done"),
                                                ProcessEnd.ALIVE, 10, True),
     Outcome.WRONG_OUTPUT, "done", None, "done without inference-done: the outputs were never "
                                         "reported"),
    ("done, no inference asked", Observation(run("start", "sessions-created", "done"),
                                             ProcessEnd.ALIVE, 10, False),
     Outcome.COMPLETED, "done", None, None),
    ("lost before its fate was known", Observation(run("start"), ProcessEnd.LOST, 10, True),
     Outcome.INFRA_ERROR, "start", None, "the target lost sight of the app before its fate "
                                         "was known"),
    ("an observation that ended too early", Observation(run("start"), ProcessEnd.ALIVE, 10,
                                                        True),
     Outcome.INFRA_ERROR, "start", None, "the launch ended without done, error, death or "
                                         "timeout"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_outcome_table(case) -> None:
    _name, observation, outcome, last_phase, crash_class, error = case
    observed = observe(observation)
    assert (observed.outcome, observed.fold.last_phase, observed.crash_class,
            observed.error) == (outcome, last_phase, crash_class, error)
    fields = observed.record_fields()
    if outcome is Outcome.CRASHED:
        assert fields["signal"] == (observation.signal or
                                    (observation.crash.signal if observation.crash else None))
        assert fields["signal_name"] == signal_name(fields["signal"])
    else:  # crash fields only on a crash
        assert (fields["crash"], fields["crash_class"], fields["signal"]) == (None, None, None)


def test_the_last_phase_is_the_furthest_reached_whatever_the_arrival_order() -> None:
    late_screen = (ev("start", 0), ev("sessions-created", 30), ev("models-ready", 10),
                   ev("sessions-created", 30), ev("start", 0))
    assert fold_events(late_screen).last_phase == "sessions-created"
    assert fold_events(()).last_phase is None


def test_odd_field_values_are_skipped_not_raised() -> None:
    fold = fold_events((ev("sessions-created", 1, sessions=[{"i": "x"}, 5, {"i": 0,
                                                                          "model": "m",
                                                                          "start_ms": 1,
                                                                          "end_ms": 2}],
                           eps="xnnpack", ort_version=3),
                        ev("inference-done", 2, scores=[0.1, "x", float("nan"), True],
                           ok="yes")))
    assert [s.model for s in fold.sessions] == ["m"]
    assert (fold.eps, fold.ort_version, fold.scores, fold.ok) == ([], None, [0.1], None)


@pytest.mark.parametrize("number, limit, lift", [
    (25, "RLIMIT_FSIZE", "ulimit -f unlimited"), (24, "RLIMIT_CPU", "ulimit -t unlimited")])
@pytest.mark.parametrize("end, how", [(ProcessEnd.SIGNALED, "signal"),
                                      (ProcessEnd.DIED, "evidence")])
def test_a_resource_limit_signal_is_a_persistent_infra_error_not_a_crash(
        number: int, limit: str, lift: str, end: ProcessEnd, how: str) -> None:
    evidence = CrashEvidence(crash={"signal": number}, crash_class="unparsed", signal=number)
    obs = Observation(run("start", "models-ready"), end, 10, True,
                      signal=number if how == "signal" else None,
                      crash=evidence if how == "evidence" else None)
    observed = observe(obs)
    assert observed.outcome is Outcome.INFRA_ERROR and observed.persistent is True
    assert (observed.signal, observed.crash_class, observed.crash) == (None, None, None)
    assert f"killed by {signal_name(number)}" in observed.error
    assert limit in observed.error and f"`{lift}`" in observed.error


def test_other_signals_are_still_crashes_and_never_persistent() -> None:
    observed = observe(Observation(run("start"), ProcessEnd.SIGNALED, 10, True, signal=11))
    assert observed.outcome is Outcome.CRASHED and observed.persistent is False
