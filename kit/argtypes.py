"""argparse types shared by the targets' options and the command line: whole numbers,
numbers of seconds (decimals or ratios such as ``1/150``), app ids."""

from __future__ import annotations

import argparse
import re

__all__ = ["positive_int", "positive_float", "positive_seconds", "seconds_arg", "number",
           "MAX_LAUNCHES", "MAX_TIMEOUT_S", "MAX_ATTEMPTS", "APP_ID_RE"]

#: the most launches a campaign plans (``--launches``); a record's ``index`` is below it
MAX_LAUNCHES = 1_000_000
#: the longest ``--timeout`` of a launch, seconds (one day)
MAX_TIMEOUT_S = 86400.0
#: the most tries of one launch slot (``--max-attempts``)
MAX_ATTEMPTS = 1_000_000

#: Android package names and iOS bundle ids.
APP_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_-]+)+$")


def positive_int(text: str, high: int = MAX_LAUNCHES) -> int:
    """argparse type: a whole number in ``1..high`` (``functools.partial`` for another
    ``high``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if not 1 <= value <= high:
        raise argparse.ArgumentTypeError(f"{value} is out of range 1..{high}")
    return value


def number(text: str, what: str = "a number") -> float:
    """``text`` as a float — a decimal or a ratio such as ``1/150`` (how the docs quote
    rates) — or the argparse error saying it is not ``what``."""
    try:
        if "/" in text:
            numerator, denominator = text.split("/", 1)
            return float(numerator) / float(denominator)
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def seconds_arg(text: str, low: float = 0.0, high: float = 600.0,
                low_inclusive: bool = True) -> float:
    """argparse type for a duration option: a number of seconds in ``[low, high]`` (``(low,
    high]`` without ``low_inclusive``); the default range is 0..600 s.

    Raises:
        argparse.ArgumentTypeError: not a number, or out of range (argparse prints it).
    """
    value = number(text, "a number of seconds")
    if not ((low <= value if low_inclusive else low < value) and value <= high):
        bracket = "[" if low_inclusive else "("
        raise argparse.ArgumentTypeError(f"{value} is out of range {bracket}{low:g}, "
                                         f"{high:g}] seconds")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number of seconds in (0, 86400]."""
    return seconds_arg(text, 0.0, MAX_TIMEOUT_S, low_inclusive=False)


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds in (0, 600] (a wait that must be a real wait)."""
    return seconds_arg(text, low_inclusive=False)
