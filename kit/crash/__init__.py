"""Crash records, signatures and classes for every platform's crash report.

Public API (what the rest of the kit and users call):

* :func:`parse_text` - any supported report (Android tombstone in all its shapes, logcat
  Java/JS fatal errors, ANRs, lmkd kills, DropBox, exit-info, Apple ``.ips`` / ``.crash`` /
  JetsamEvent / lldb, host backtraces) to a :class:`CrashRecord`; never raises;
* :func:`parse_host` - a host workload's exit signal plus its printed backtrace;
* :func:`parse_exit_info` - ``dumpsys activity exit-info`` entries as :class:`ExitInfo`;
* :func:`classify` - :class:`Classification` (crash class, signature, rule id, trail);
* :func:`load_rules` - the shipped known-signature rules plus the user's;
* :func:`explain` - which family a text was taken for and why, and every rule's checks;
* :func:`detect_family` - the format family of a text, and the marks that picked it;
* :func:`symbolize_android`, :func:`symbolize_apple` - frames through llvm-symbolizer / atos.

Formats and sources: docs/formats.md and docs/crash.md.
"""

from __future__ import annotations

from .classify import Classification, CrashClass, classify, default_rules
from .exitinfo import ExitInfo, ExitReason, parse_exit_info
from .explain import Explanation, explain
from .host import parse_host
from .parse import HINTS, detect_family, parse_text
from .record import CrashRecord, Frame
from .rules import CRASH_CLASSES, Rule, RuleSet, load_rules
from .symbolize import SymbolizeResult, symbolize_android, symbolize_apple, symbolize_host

__all__ = [
    "parse_text", "parse_host", "parse_exit_info", "classify", "load_rules", "default_rules",
    "symbolize_android", "symbolize_apple", "symbolize_host", "SymbolizeResult",
    "CrashRecord", "Frame", "ExitInfo", "ExitReason", "Classification", "CrashClass",
    "Rule", "RuleSet", "CRASH_CLASSES", "HINTS", "explain", "Explanation", "detect_family",
]
