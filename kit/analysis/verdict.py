"""The verdict: did the candidate build stop showing the target signature? (issue #4)

One import for the verdict layer's public names; the parts live in:

* :mod:`kit.analysis.target` — what a target event is (crash classes, ``any-crash``,
  ``race-witnessed``, ``race-detected``), which launches enter its rate, and its tier
  (``mechanism`` or ``failure``);
* :mod:`kit.analysis.decide` — the verdict on counts (:func:`decide`), its settings and
  words;
* :mod:`kit.analysis.compare` — two campaigns compared (:func:`compare_campaigns`), in one
  streamed pass each;
* :mod:`kit.analysis.anytime` — the anytime-valid comparison of sequential runs.

docs/verdict.md derives every rule.
"""

from __future__ import annotations

from .compare import (ArmResult, Comparison, DeviceResult, MovedCrash, same_build,
                      cap_notes, compare_campaigns, option_differences)
from .decide import (BUILD, HEAP_ADVICE, MIN_FRACTION, NO_CHANGE, SCENARIO, Decision, Needed, Verdict,
                     VerdictSettings, clean_launches_to_fixed, decide, p_text)
from .target import (ANY_CRASH, DEFAULT_SIGNATURE, FAILURE, MECHANISM, RACE_DETECTED,
                     RACE_WITNESSED, check_signature, count_events, is_eligible, is_event,
                     tier, tier_text)

__all__ = ["MIN_FRACTION", "Verdict", "VerdictSettings", "Decision", "Needed", "ArmResult", "DeviceResult",
           "MovedCrash", "Comparison", "decide", "compare_campaigns", "is_event",
           "is_eligible", "count_events", "check_signature", "DEFAULT_SIGNATURE",
           "RACE_WITNESSED", "RACE_DETECTED", "ANY_CRASH", "MECHANISM", "FAILURE", "tier",
           "tier_text", "HEAP_ADVICE", "option_differences", "p_text", "cap_notes",
           "same_build", "clean_launches_to_fixed", "BUILD", "SCENARIO", "NO_CHANGE"]
