"""Regular expressions from rule files, with a time bound for the user's (issue #13).

The shipped rules are compiled with :mod:`re` (they are reviewed, and ``re`` is the
fastest). A pattern from the user's ``--rules`` file is compiled with the ``regex`` package
(https://pypi.org/project/regex/, ``re``-compatible syntax in its default ``V0`` mode),
whose searches take a ``timeout``: a catastrophic pattern such as ``(a+)+$`` stops after
:data:`USER_PATTERN_TIMEOUT_S` instead of hanging ``classify``. A pattern that timed out
once is disabled for the rest of the process (every later search raises at once), so one
bad rule costs one timeout, not one per frame.
"""

from __future__ import annotations

import re
from typing import Protocol

import regex

from ._text import clip

__all__ = ["Pattern", "PatternTimeout", "UserPattern", "compile_pattern",
           "USER_PATTERN_TIMEOUT_S", "PatternError"]

#: Longest one search of a user pattern may take, in seconds.
USER_PATTERN_TIMEOUT_S = 0.25

PatternError = (re.error, regex.error)


class PatternTimeout(Exception):
    """A user pattern's search ran past :data:`USER_PATTERN_TIMEOUT_S` (or did before)."""

    def __init__(self, pattern: str) -> None:
        super().__init__(f"pattern {clip(pattern, 80)!r} timed out after "
                         f"{USER_PATTERN_TIMEOUT_S} s")
        self.pattern = pattern


class Pattern(Protocol):
    """What a rule needs of a compiled pattern (``re.Pattern`` and :class:`UserPattern`)."""

    @property
    def pattern(self) -> str: ...

    def search(self, string: str) -> object | None: ...


class UserPattern:
    """A user's pattern: ``search`` with a time bound (see the module docs).

    Raises:
        PatternTimeout: from :meth:`search` when the search ran too long, or ran too long
            before.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled = regex.compile(pattern)
        self.timed_out = False

    def search(self, string: str) -> object | None:
        if self.timed_out:
            raise PatternTimeout(self.pattern)
        try:
            return self._compiled.search(string, timeout=USER_PATTERN_TIMEOUT_S)
        except TimeoutError:
            self.timed_out = True
            raise PatternTimeout(self.pattern) from None

    def __repr__(self) -> str:
        return f"UserPattern({self.pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UserPattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)


def compile_pattern(pattern: str, user: bool) -> Pattern:
    """A shipped pattern as ``re.Pattern``, a user's as :class:`UserPattern`.

    Raises:
        re.error, regex.error: the pattern does not compile (see :data:`PatternError`).
    """
    if user:
        re.compile(pattern)  # the same syntax errors, worded as re words them
        return UserPattern(pattern)
    return re.compile(pattern)
