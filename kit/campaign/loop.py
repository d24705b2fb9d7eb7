"""The campaign loop, one for every arm of a run: a :class:`Schedule` picks the next step
(all slots of one campaign, or alternating rounds of baseline and candidate,
:mod:`kit.campaign.interleave`); in a step one worker per launcher takes the next launch
slot, makes the launch and appends its record at once. The loop owns retry, backoff, the
infra-error budget and the stop on a persistent infra error, per :class:`Arm` for the whole
run (docs/design.md, "Campaign").

Resume: indices ``0..launches-1`` each need one *counted* record (any outcome but
``infra-error``). Infra errors are retried up to ``max_attempts`` per index; a resumed
campaign runs exactly the indices that have no counted record yet.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from typing import Any, Callable, Protocol, Sequence

from ..launch import LaunchContext, Launcher
from ..records import PERSISTENT_INFRA_KEY, LaunchRecord, Outcome
from ..scenario import Scenario
from ..store.store import CampaignStore, launch_id_for, utc_now

__all__ = ["CampaignObserver", "RetryPolicy", "Arm", "Step",
           "Schedule", "CampaignSchedule", "StagedSchedule", "run_arms", "run_campaign",
           "abandoned_slots"]


class CampaignObserver(Protocol):
    """Receives progress: ``started(total, done)`` once, ``recorded(record)`` per record."""

    def started(self, total: int, done: int) -> None: ...

    def recorded(self, record: LaunchRecord) -> None: ...


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How infra errors are retried (never a counted launch: those are never retried).

    Attributes:
        max_attempts: tries per launch slot.
        backoff_s: the pause before a launcher's next launch after its first infra error
            in a row; it doubles with each further one in a row, up to ``backoff_cap_s``
            (a device that rebooted or dropped off gets time to come back).
        budget: infra errors a campaign may have in all (this run); past it the campaign
            stops and its remaining slots are abandoned. ``None``: half the planned launches
            plus 10.
    """

    max_attempts: int = 3
    backoff_s: float = 1.0
    backoff_cap_s: float = 30.0
    budget: int | None = None

    def delay_s(self, in_a_row: int) -> float:
        """The pause after ``in_a_row`` (>= 1) infra errors in a row on one launcher."""
        return min(self.backoff_cap_s, self.backoff_s * 2 ** max(0, in_a_row - 1))

    def budget_for(self, launches: int) -> int:
        return self.budget if self.budget is not None else launches // 2 + 10


@dataclasses.dataclass
class Arm:
    """One campaign as the loop drives it for the whole run (a single campaign is one arm;
    an interleaved run has two, baseline and candidate).

    The loop keeps here what must hold across every step of the run: the records
    (``records``, the caller's list, grows as launches are recorded), the infra-error budget left
    (``budget_left``), each launcher's infra errors in a row (for the backoff), and
    ``halted``: why the loop stopped the arm (its budget spent, or a persistent infra error),
    ``None`` while it may go on. ``launches`` is the arm's planned (or most) slots.
    """

    store: CampaignStore
    records: list[LaunchRecord]
    launchers: Sequence[Launcher]
    label: str
    scenario: Scenario
    launches: int
    timeout_s: float
    retry: RetryPolicy = RetryPolicy()
    budget_left: int = dataclasses.field(init=False)
    halted: str | None = dataclasses.field(default=None, init=False)
    in_a_row: dict[int, int] = dataclasses.field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.budget_left = self.retry.budget_for(self.launches)

    @property
    def slots(self) -> int:
        """Launch slots started so far (1 + the highest index with a record)."""
        return 1 + max((r.index for r in self.records), default=-1)

    def counted_slots(self) -> int:
        return len({r.index for r in self.records if r.counted})


@dataclasses.dataclass(frozen=True)
class Step:
    """What a :class:`Schedule` asks of the loop next: run ``arm``'s slots below ``upto``
    that still need a counted record (retries first), one worker per launcher."""

    arm: Arm
    upto: int


class Schedule(Protocol):
    """Picks the next step of a run (the shape of pytest-xdist's ``Scheduling``: the loop
    owns the workers and the per-arm policies, the schedule only chooses what runs next)."""

    def next_step(self, arms: Sequence[Arm]) -> Step | str:
        """The next step, or why the run ends (a halted arm included)."""
        ...

    def settled(self, arm: Arm) -> bool:
        """Checked before the first launch of a step and after each record: True ends the
        step at once (a sequential stopping rule)."""
        ...


class CampaignSchedule:
    """All planned slots of one campaign, in one step, under an optional ``should_stop``
    (called with all the records so far)."""

    def __init__(self, should_stop: Callable[[list[LaunchRecord]], bool] | None = None
                 ) -> None:
        self.should_stop = should_stop
        self._stepped = False

    def next_step(self, arms: Sequence[Arm]) -> Step | str:
        (arm,) = arms
        if arm.halted is not None:
            return f"{arm.label} stopped: {arm.halted}"
        if self._stepped:
            return f"{arm.label} reached its launches"
        self._stepped = True
        return Step(arm, arm.launches)

    def settled(self, arm: Arm) -> bool:
        return self.should_stop is not None and self.should_stop(list(arm.records))


class StagedSchedule:
    """A baseline staged by design (:mod:`kit.analysis.stage`): first the slots that can
    complete its first stage (no more: launchers in parallel must not make launches past
    it), one more slot at a time while some of them were not eligible for its event; then,
    when the stage is missed, the rest up to the campaign's launches. ``rule``: a
    :class:`kit.analysis.stage.StageRule`."""

    def __init__(self, rule: Any) -> None:
        self.rule = rule
        self._upto = 0
        self._rest = False

    def next_step(self, arms: Sequence[Arm]) -> Step | str:
        (arm,) = arms
        if arm.halted is not None:
            return f"{arm.label} stopped: {arm.halted}"
        if self.rule.met(arm.records):
            return f"{arm.label} met its stage"
        if self._rest:
            return f"{arm.label} reached its launches"
        from ..analysis.stage import first_stage

        _events, n = first_stage(arm.records, self.rule.stage)
        want = self.rule.stage.launches
        upto = max(self._upto, want) if self._upto == 0 else self._upto + (want - n)
        if n >= want or upto >= arm.launches or upto <= self._upto:
            self._rest = True  # missed (or no room to complete it): every planned slot
            return Step(arm, arm.launches)
        self._upto = upto
        return Step(arm, upto)

    def settled(self, arm: Arm) -> bool:
        return bool(self.rule.met(arm.records))


def _plan(records: Sequence[LaunchRecord], launches: int, max_attempts: int) -> list[tuple[
        int, int]]:
    """``(index, attempt)`` pairs still to run."""
    counted = {r.index for r in records if r.counted}
    attempts: dict[int, int] = {}
    for record in records:
        attempts[record.index] = max(attempts.get(record.index, 0), record.attempt)
    todo = []
    for index in range(launches):
        if index in counted:
            continue
        attempt = attempts.get(index, 0) + 1
        if attempt <= max_attempts:
            todo.append((index, attempt))
    return todo


def abandoned_slots(records: Sequence[LaunchRecord], launches: int) -> list[int]:
    """Planned launch slots with no counted record (every attempt an infra error, or never
    made)."""
    counted = {r.index for r in records if r.counted}
    return [i for i in range(launches) if i not in counted]


def _infra_record(ctx: LaunchContext, launcher: Any, exc: BaseException, started: str,
                  wall_ms: float) -> LaunchRecord:
    """The record of a launch that could not be made or observed, with its evidence: the
    error, the hint, any output the failing tool gave (``exc.output``/``exc.evidence``) in
    ``infra-error.txt``, and every file the launcher had already written. Both pass through
    :func:`kit.redact.redact_known`."""
    from ..redact import redact_known  # a last net: a target's exception may echo a URL

    message = redact_known(exc.one_line() if hasattr(exc, "one_line") else str(exc))
    lines = [f"launch {ctx.launch_id}: infra error after {wall_ms / 1000:.3f} s", message]
    for name in ("evidence", "output"):
        extra = getattr(exc, name, None)
        if extra:
            lines += ["", f"-- {name} --", redact_known(str(extra)[-65536:])]
    try:
        (ctx.artifacts_dir / "infra-error.txt").write_text("\n".join(lines) + "\n")
        names = sorted(p.name for p in ctx.artifacts_dir.iterdir() if p.is_file())
    except OSError:
        names = []
    return LaunchRecord(launch_id=ctx.launch_id, index=ctx.index, attempt=ctx.attempt,
                        label=ctx.label, target=launcher.target, device=launcher.device,
                        scenario=ctx.scenario.to_url(), outcome=Outcome.INFRA_ERROR,
                        started_at=started, wall_ms=wall_ms, error=message,
                        artifacts=[f"{ctx.artifacts_rel}/{n}" for n in names])


def run_campaign(store: CampaignStore, records: list[LaunchRecord],
                 launchers: Sequence[Launcher], *, label: str, scenario: Scenario,
                 launches: int, timeout_s: float, max_attempts: int | None = None,
                 observer: CampaignObserver | None = None,
                 should_stop: Callable[[list[LaunchRecord]], bool] | None = None,
                 retry: RetryPolicy | None = None) -> list[LaunchRecord]:
    """Run the launches one campaign still needs: :func:`run_arms` with one :class:`Arm`
    under a :class:`CampaignSchedule`.

    Args:
        store: the campaign's, locked (:attr:`kit.store.opened.OpenCampaign.store`, from
            :func:`kit.store.opened.open_to_write`).
        records: records already in the store (for resume; ``OpenCampaign.records``).
        launchers: one per device; all run in parallel.
        max_attempts: overrides ``retry.max_attempts``.
        should_stop: called before the first launch and after each record with all records
            so far; True stops the campaign early (sequential stopping rules).

    Returns:
        All records of the campaign, old and new.

    Raises:
        As :func:`run_arms`.
    """
    retry = retry or RetryPolicy()
    if max_attempts is not None:
        retry = dataclasses.replace(retry, max_attempts=max_attempts)
    arm = Arm(store, list(records), launchers, label, scenario, launches, timeout_s, retry)
    run_arms([arm], CampaignSchedule(should_stop), observer=observer)
    return arm.records


def run_arms(arms: Sequence[Arm], schedule: Schedule, *,
             observer: CampaignObserver | None = None) -> str:
    """Run ``schedule``'s steps over ``arms`` until it says the run ends; return why.

    In a step, each of the arm's launchers takes the next ``(index, attempt)``, makes the
    launch and appends the record at once. An ``infra-error`` (returned, or a
    :class:`~kit.errors.ColdstartError` raised) is recorded with its evidence and its slot is
    tried again first, up to ``retry.max_attempts`` attempts in all, after the launcher's
    backoff; it never counts. Each infra error spends one of the arm's budget for the whole
    run (:class:`RetryPolicy`); past it, or at once after a persistent infra error
    (:data:`kit.records.PERSISTENT_INFRA_KEY`: a resource limit every retry would meet), the
    arm is halted (:attr:`Arm.halted`) and the schedule ends the run; the rest is abandoned
    (exit 3, resume hint).

    ``observer.started(total, done)`` is called once, with every arm's planned and counted
    slots; ``observer.recorded`` once per record.

    Raises:
        KeyboardInterrupt: after aborting the launches in flight; finished records are kept.
        InfraError: a record could not be written (:meth:`CampaignStore.append`).
    """
    if observer is not None:
        observer.started(sum(a.launches for a in arms), sum(a.counted_slots() for a in arms))
    while True:
        step = schedule.next_step(arms)
        if isinstance(step, str):
            return step
        _run_step(step, schedule, observer)


def _run_step(step: Step, schedule: Schedule, observer: CampaignObserver | None) -> None:
    """One step: the arm's launchers in parallel over its slots below ``step.upto``."""
    from ..errors import ColdstartError

    arm = step.arm
    retry = arm.retry
    todo = collections.deque(_plan(arm.records, step.upto, retry.max_attempts))
    stop = threading.Event()
    if schedule.settled(arm):
        return  # a resumed campaign that is already settled makes no launch
    lock = threading.Lock()
    failures: list[BaseException] = []

    def work(slot: int, launcher: Launcher) -> None:
        while not stop.is_set():
            with lock:
                if not todo:
                    return
                index, attempt = todo.popleft()
            launch_id = launch_id_for(arm.label, index, attempt)
            art_abs, art_rel = arm.store.artifacts_dir(launch_id)
            ctx = LaunchContext(scenario=arm.scenario.with_id(launch_id), index=index,
                                attempt=attempt, label=arm.label, artifacts_dir=art_abs,
                                artifacts_rel=art_rel, timeout_s=arm.timeout_s)
            started = utc_now()
            t0 = time.monotonic()
            try:
                record = launcher.launch(ctx)
            except ColdstartError as exc:
                record = _infra_record(ctx, launcher, exc, started,
                                       (time.monotonic() - t0) * 1000.0)
            if stop.is_set() and record.outcome is Outcome.INFRA_ERROR:
                return  # aborted by Ctrl-C: not a real infra error, leave it to --resume
            arm.store.append(record)
            with lock:
                arm.records.append(record)
                if observer is not None:
                    observer.recorded(record)
                if record.outcome is Outcome.INFRA_ERROR:
                    arm.budget_left -= 1
                    if record.extra.get(PERSISTENT_INFRA_KEY):
                        arm.halted = arm.halted or (
                            f"a persistent infra error (every retry would meet it): "
                            f"{record.error or 'see ' + art_rel}")
                    elif arm.budget_left < 0:
                        arm.halted = arm.halted or (
                            f"its infra-error budget ({retry.budget_for(arm.launches)}, "
                            f"--infra-budget) is spent")
                    elif attempt < retry.max_attempts:
                        todo.appendleft((index, attempt + 1))
                    if arm.halted is not None:
                        stop.set()
                if schedule.settled(arm):
                    stop.set()
            if record.outcome is Outcome.INFRA_ERROR:
                arm.in_a_row[slot] = arm.in_a_row.get(slot, 0) + 1
                stop.wait(retry.delay_s(arm.in_a_row[slot]))
            else:
                arm.in_a_row[slot] = 0

    def guarded(slot: int, launcher: Launcher) -> None:
        try:
            work(slot, launcher)
        except BaseException as exc:  # surfaced in the main thread
            failures.append(exc)
            stop.set()

    launchers = list(arm.launchers)
    if len(launchers) == 1:
        try:
            work(0, launchers[0])
        except KeyboardInterrupt:
            stop.set()
            launchers[0].abort()
            raise
        return
    threads = [threading.Thread(target=guarded, args=(i, lr), daemon=True,
                                name=f"launcher-{lr.device}") for i, lr in enumerate(launchers)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    except KeyboardInterrupt:
        stop.set()
        for launcher in launchers:
            launcher.abort()
        for thread in threads:
            thread.join(10)
        raise
    if failures:
        raise failures[0]
