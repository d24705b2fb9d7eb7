"""Crash records: one normalised shape for every platform's crash report (docs/design.md).

Parsers (in this package) turn raw text into a :class:`CrashRecord`; they never raise on bad
crash text, and say in ``notes`` what they could not read. The shapes are defined with the
other launch-record payloads in :mod:`kit.payloads` (one definition for the kit).
"""

from __future__ import annotations

from ..payloads import CrashRecord, Frame

__all__ = ["Frame", "CrashRecord"]
