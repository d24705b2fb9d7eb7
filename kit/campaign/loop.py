"""The campaign loop: one worker per launcher takes the next launch slot, makes the launch
and appends its record at once (DESIGN.md, "campaign").

Resume: indices ``0..launches-1`` each need one *counted* record (any outcome but
``infra-error``). Infra errors are retried up to ``max_attempts`` per index; a resumed
campaign runs exactly the indices that have no counted record yet.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from ..records import PERSISTENT_INFRA_KEY, LaunchRecord, Outcome
from ..scenario import Scenario
from .store import CampaignStore, launch_id_for, utc_now

__all__ = ["LaunchContext", "Launcher", "CampaignObserver", "RetryPolicy", "run_campaign",
           "abandoned_slots"]


@dataclasses.dataclass(frozen=True)
class LaunchContext:
    """Everything a launcher needs for one launch.

    Attributes:
        scenario: the campaign's scenario bound to this launch's id.
        index, attempt, label: see :class:`~kit.records.LaunchRecord`.
        artifacts_dir: absolute path of ``artifacts/<launch-id>/`` (created, empty).
        artifacts_rel: the same path relative to the campaign dir (for records).
        timeout_s: seconds the launch may take before it counts as ``hung``.
    """

    scenario: Scenario
    index: int
    attempt: int
    label: str
    artifacts_dir: Path
    artifacts_rel: str
    timeout_s: float

    @property
    def launch_id(self) -> str:
        assert self.scenario.id is not None
        return self.scenario.id


class Launcher(Protocol):
    """One target device that can cold-launch the app (one worker thread drives each).

    ``target`` is the target name (``host``, ``android``...), ``device`` the device id.
    """

    target: str
    device: str

    def launch(self, ctx: LaunchContext) -> LaunchRecord:
        """Make one cold launch and return its record. Must not raise for anything the app
        does; raise :class:`~kit.errors.InfraError` (or return an ``infra-error`` record)
        when the launch could not be made or observed."""
        ...

    def abort(self) -> None:
        """Stop a launch in flight (called from another thread on Ctrl-C)."""
        ...


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
    """Run the launches the campaign still needs, one worker per launcher.

    Each worker takes the next ``(index, attempt)``, makes the launch and appends the record
    at once. An ``infra-error`` (returned, or a :class:`~kit.errors.ColdstartError` raised)
    is recorded with its evidence and its slot is tried again first, up to
    ``retry.max_attempts`` attempts in all, after the launcher's backoff; it never counts.
    Past the retry budget the campaign stops (see :class:`RetryPolicy`), and so it does at
    once after a persistent infra error (:data:`kit.records.PERSISTENT_INFRA_KEY`: a
    resource limit every retry would meet); the rest is abandoned (exit 3, resume hint).

    Args:
        store: from :func:`kit.campaign.prepare_store`.
        records: records already in the store (for resume).
        launchers: one per device; all run in parallel.
        max_attempts: overrides ``retry.max_attempts`` (kept for callers of old).
        should_stop: called before the first launch and after each record with all records
            so far; True stops the campaign early (sequential stopping rules).

    Returns:
        All records of the campaign, old and new.

    Raises:
        KeyboardInterrupt: after aborting the launches in flight; finished records are kept.
        InfraError: a record could not be written (:meth:`CampaignStore.append`).
    """
    from ..errors import ColdstartError

    retry = retry or RetryPolicy()
    if max_attempts is not None:
        retry = dataclasses.replace(retry, max_attempts=max_attempts)
    all_records = list(records)
    todo = collections.deque(_plan(all_records, launches, retry.max_attempts))
    if observer is not None:
        observer.started(launches, len({r.index for r in all_records if r.counted}))
    stop = threading.Event()
    if should_stop is not None and should_stop(list(all_records)):
        stop.set()  # a resumed campaign that is already settled makes no launch
    lock = threading.Lock()
    failures: list[BaseException] = []
    budget = [retry.budget_for(launches)]

    def work(launcher: Launcher) -> None:
        in_a_row = 0
        while not stop.is_set():
            with lock:
                if not todo:
                    return
                index, attempt = todo.popleft()
            launch_id = launch_id_for(label, index, attempt)
            art_abs, art_rel = store.artifacts_dir(launch_id)
            ctx = LaunchContext(scenario=scenario.with_id(launch_id), index=index,
                                attempt=attempt, label=label, artifacts_dir=art_abs,
                                artifacts_rel=art_rel, timeout_s=timeout_s)
            started = utc_now()
            t0 = time.monotonic()
            try:
                record = launcher.launch(ctx)
            except ColdstartError as exc:
                record = _infra_record(ctx, launcher, exc, started,
                                       (time.monotonic() - t0) * 1000.0)
            if stop.is_set() and record.outcome is Outcome.INFRA_ERROR:
                return  # aborted by Ctrl-C: not a real infra error, leave it to --resume
            store.append(record)
            with lock:
                all_records.append(record)
                if observer is not None:
                    observer.recorded(record)
                if record.outcome is Outcome.INFRA_ERROR:
                    budget[0] -= 1
                    if budget[0] < 0 or record.extra.get(PERSISTENT_INFRA_KEY):
                        stop.set()  # the budget is spent, or every retry would fail alike
                    elif attempt < retry.max_attempts:
                        todo.appendleft((index, attempt + 1))
                if should_stop is not None and should_stop(list(all_records)):
                    stop.set()
            if record.outcome is Outcome.INFRA_ERROR:
                in_a_row += 1
                stop.wait(retry.delay_s(in_a_row))
            else:
                in_a_row = 0

    def guarded(launcher: Launcher) -> None:
        try:
            work(launcher)
        except BaseException as exc:  # surfaced in the main thread
            failures.append(exc)
            stop.set()

    if len(launchers) == 1:
        try:
            work(launchers[0])
        except KeyboardInterrupt:
            stop.set()
            launchers[0].abort()
            raise
        return all_records
    threads = [threading.Thread(target=guarded, args=(lr,), daemon=True,
                                name=f"launcher-{lr.device}") for lr in launchers]
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
    return all_records
