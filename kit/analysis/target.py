"""Counted events: what a comparison counts in a launch (its ``--event``), which launches
enter its rate, and the tier of evidence it is (docs/verdict.md, "The target"; the word
*target* alone names where launches run, docs/design.md "Vocabulary").

A counted event is a crash class (``xnnpack-allocator-uaf``, ``other-native-crash``, ``abort``...,
a record's ``crash_class``), ``any-crash`` (outcome ``crashed``), ``race-witnessed`` (the
host race witness of issue #8 saw two allocator contexts) or ``race-detected`` (a race
detector, e.g. ThreadSanitizer or Helgrind, reported a data race on the allocator statics:
the record's ``detector`` payload with ``on_target`` true).

Two tiers: ``mechanism`` (``race-witnessed``, ``race-detected``: the data race on the
allocator statics itself, crash or not) and ``failure`` (crash classes, ``any-crash``: the
crash it causes). A verdict names its tier, so that "the race is gone" and "the crash is
gone" are never confused.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..errors import UsageError
from ..payloads import DetectorPayload
from ..records import LaunchRecord, Outcome
from ..scenario import PHASES

__all__ = ["DEFAULT_SIGNATURE", "RACE_WITNESSED", "RACE_DETECTED", "ANY_CRASH", "MECHANISM",
           "FAILURE", "tier", "tier_text", "detector_of", "detector_on_target",
           "check_signature", "is_eligible", "is_event", "count_events", "left_out_text",
           "none_eligible_text", "hold_never_engaged", "HOLD_LEFT_OUT", "TIER_SCOPE"]

DEFAULT_SIGNATURE = "xnnpack-allocator-uaf"
RACE_WITNESSED = "race-witnessed"
RACE_DETECTED = "race-detected"
ANY_CRASH = "any-crash"
MECHANISM = "mechanism"
FAILURE = "failure"
_TIER_TEXT = {MECHANISM: "a data race on the allocator statics", FAILURE: "a crash"}
#: What each tier can and cannot see, in plain words; every verdict carries its tier's
#: (docs/verdict.md, "The target"; docs/race.md, "The hold").
TIER_SCOPE = {
    FAILURE: ("this tier counts crashes: it sees the race only when the race breaks "
              "something. It cannot see a race that leaves no crash, such as a fix that "
              "guards only the allocator's creation, after which two threads still write the "
              "same allocator into XNNPACK's wrapper at once; only the mechanism tier "
              "(race-detected) sees that"),
    MECHANISM: ("this tier sees the data race on the allocator statics itself, crash or "
                "not. It cannot say whether the race crashes a process; only the failure "
                "tier (crash counts, on a device too) says that"),
}
_SIGNATURE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def tier(signature: str) -> str:
    """``mechanism`` for ``race-witnessed`` and ``race-detected``, else ``failure``."""
    return MECHANISM if signature in (RACE_WITNESSED, RACE_DETECTED) else FAILURE


def tier_text(signature: str) -> str:
    """``"mechanism tier: a data race on the allocator statics"`` or ``"failure tier: a
    crash"``."""
    t = tier(signature)
    return f"{t} tier: {_TIER_TEXT[t]}"


def detector_of(record: LaunchRecord) -> DetectorPayload | None:
    """The record's race-detector payload (:class:`kit.payloads.DetectorPayload`), or
    ``None`` when the launch did not run under the detector."""
    return record.detector


def detector_on_target(record: LaunchRecord) -> bool | None:
    """The detector's judgement: ``True`` (a race on the allocator statics), ``False`` (the
    detector ran and reported none there), ``None`` (no detector, or it could not tell)."""
    payload = record.detector
    return payload.on_target if payload is not None else None


def check_signature(text: str) -> str:
    """Validate a target: a crash class (:data:`kit.crash.rules.CRASH_CLASSES`, the closed set
    every rule file maps to), ``race-witnessed``, ``race-detected`` or ``any-crash``.

    Raises:
        UsageError: the name is not one of them.
    """
    from ..crash.rules import CRASH_CLASSES

    known = (*CRASH_CLASSES, RACE_WITNESSED, RACE_DETECTED, ANY_CRASH)
    if not isinstance(text, str) or not _SIGNATURE_RE.match(text) or text not in known:
        shown = repr(text[:60]) if isinstance(text, str) else repr(text)
        raise UsageError(f"signature {shown} is not a crash class name",
                         f"use one of {', '.join(known)}")
    return text


#: why a launch whose hold never engaged is left out of a failure-tier rate, for notes
HOLD_LEFT_OUT = ("asked for a hold that never engaged (onnxruntime never logged the XNNPACK "
                 "allocator's creation line: another build, a CPU-only scenario, or a log "
                 "level that drops it)")


def hold_never_engaged(record: LaunchRecord) -> bool:
    """Whether ``record``'s launch asked for ``hold=MS`` (host amplifier) and no creating
    thread was ever held (:class:`kit.payloads.HoldPayload` ``engaged`` 0)."""
    hold = record.hold
    return hold is not None and hold.ms > 0 and hold.engaged == 0


def is_eligible(record: LaunchRecord, signature: str) -> bool:
    """Whether ``record`` enters the target rate's denominator: counted (not an infra
    error) and, for ``race-witnessed``, carrying an available race witness; for
    ``race-detected``, a detector that judged the launch (``on_target`` true or false: an
    unknown is left out, like a launch without a witness); for a crash class, showing it
    or having reached session creation (``models-ready`` or a later phase). A launch that
    ended before creating sessions — a build that aborts at start every time — cannot show
    a crash of creation, inference or release, so it is left out: counted as a clean
    launch it would make a broken build look fixed. A launch that asked for a hold that
    never engaged (:func:`hold_never_engaged`) is left out of the failure tier the same
    way: it is not the amplified launch its scenario names (as a launch without a race
    witness is left out of ``race-witnessed``)."""
    if not record.counted:
        return False
    if signature == RACE_WITNESSED:
        return record.race is not None and record.race.available
    if signature == RACE_DETECTED:
        return detector_on_target(record) is not None
    if hold_never_engaged(record):
        return False
    if signature == ANY_CRASH or is_event(record, signature):
        return True
    return record.last_phase in PHASES[1:]


def is_event(record: LaunchRecord, signature: str) -> bool:
    """Whether ``record`` shows the counted event ``signature`` (see the module doc)."""
    if signature == RACE_WITNESSED:
        return record.race is not None and record.race.witnessed
    if signature == RACE_DETECTED:
        return detector_on_target(record) is True
    if signature == ANY_CRASH:
        return record.outcome is Outcome.CRASHED
    return record.crash_class == signature


def count_events(records: Iterable[LaunchRecord], signature: str) -> tuple[int, int]:
    """``(events, eligible launches)`` of the counted event ``signature`` among ``records``
    (streamed once)."""
    events = eligible = 0
    for record in records:
        if is_eligible(record, signature):
            eligible += 1
            events += is_event(record, signature)
    return events, eligible


def left_out_text(signature: str) -> str:
    """Why counted launches are left out of ``signature``'s rate, for a note."""
    if signature == RACE_WITNESSED:
        return "had no race witness"
    if signature == RACE_DETECTED:
        return "had no race detector verdict (on_target unknown)"
    return "ended before creating sessions (they cannot show it)"


def none_eligible_text(signature: str, which: str) -> tuple[str, str]:
    """``(what, advice)`` for a campaign with no eligible launch of ``signature``."""
    if signature == RACE_WITNESSED:
        return ("launches with a race witness",
                f"run the {which} campaign with the race witness on (the host's default; a "
                f"runtime with static XNNPACK has none: compare crash classes there)")
    if signature == RACE_DETECTED:
        return ("launches a race detector judged",
                f"run the {which} campaign under the race detector, or compare crash "
                f"classes")
    return ("counted launches that reached session creation",
            f"run the {which} campaign, and look at why its launches end before creating "
            f"sessions")
