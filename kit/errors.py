"""The kit's exceptions: one base class carrying an exit code and a hint.

The CLI boundary (:mod:`kit.cli`) catches :class:`ColdstartError`, prints one line
``coldstart: error: <message> (<hint>)`` and exits with :attr:`ColdstartError.exit_code`;
``--debug`` shows the traceback instead. Exit codes are named in :class:`ExitCode`.
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode", "ColdstartError", "UsageError", "DataError", "InfraError"]


class ExitCode(enum.IntEnum):
    """Every exit status of the ``coldstart`` command."""

    OK = 0  #: the command ran (a campaign that saw crashes still exits 0)
    FAILED = 1  #: a check the user asked for failed (e.g. ``compare --fail-on not-fixed``)
    USAGE = 2  #: bad input: arguments, files, models, scenario keys, missing runtime
    INFRA = 3  #: the infrastructure failed: device, server, transport, chroot


class ColdstartError(Exception):
    """Base error of the kit.

    Args:
        message: one sentence saying what is wrong (no trailing period needed).
        hint: what the user should do about it, or ``None``.
    """

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message and hint on one line, newlines folded, each cut to a bounded length
        (:data:`MESSAGE_CHARS`, :data:`HINT_CHARS`): echoed input can be huge."""
        message = _cut(self.message, MESSAGE_CHARS)
        return message if not self.hint else f"{message} ({_cut(self.hint, HINT_CHARS)})"


#: the most characters of a message and of a hint that :meth:`ColdstartError.one_line` keeps
MESSAGE_CHARS = 300
HINT_CHARS = 200


def _cut(text: str, limit: int) -> str:
    from ._terminal import printable  # a message echoes data: no escape sequence gets out

    text = printable(" ".join(str(text).split()))
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more " \
                                           f"characters)"


class UsageError(ColdstartError):
    """The caller's own mistake: a bad argument, file, scenario or setup step. Exit 2."""

    exit_code = ExitCode.USAGE


class DataError(ColdstartError):
    """Input data is wrong: a tampered model, a corrupt campaign, a bad rule file. Exit 2."""

    exit_code = ExitCode.USAGE


class InfraError(ColdstartError):
    """The infrastructure failed (device lost, server gone, chroot broken). Exit 3."""

    exit_code = ExitCode.INFRA
