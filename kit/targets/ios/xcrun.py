"""The transport of the iOS targets: ``xcrun <tool> ...`` run with argv lists, never a shell.

"No Xcode tools" is a usage error (exit 2); a tool that fails is an :class:`XcrunError`, an
:class:`~kit.errors.InfraError` that keeps the command and its whole output as evidence
(``infra-error.txt`` of the launch). CoreSimulator errors (``An error was encountered
processing the command (domain=..., code=N):``, Apple's ``simctl`` output) give the error's
domain and code.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from typing import Any, Callable, Sequence

from ...errors import InfraError, UsageError

__all__ = ["Xcrun", "XcrunError", "kill_group", "wait_until", "infra_error"]

_SIM_ERROR_RE = re.compile(r"\(domain=(?P<domain>[^,]+), code=(?P<code>-?\d+)\)")
#: The most characters of a tool's output an error keeps as evidence.
_EVIDENCE_CHARS = 64 * 1024


class XcrunError(InfraError):
    """An ``xcrun`` tool failed.

    Attributes:
        output: the command line and the tool's stdout and stderr (the launch's evidence).
        domain, code: from a CoreSimulator error line, when there is one.
        returncode: the tool's exit status (``None``: it did not answer in time).
    """

    def __init__(self, message: str, hint: str | None, output: str,
                 domain: str | None = None, code: int | None = None,
                 returncode: int | None = None) -> None:
        super().__init__(message, hint)
        self.output = output[-_EVIDENCE_CHARS:]
        self.domain = domain
        self.code = code
        self.returncode = returncode


def infra_error(message: str, hint: str | None, evidence: str) -> InfraError:
    """An :class:`~kit.errors.InfraError` whose ``evidence`` (what the launcher saw: log
    lines, tool output) the campaign loop keeps in ``infra-error.txt``."""
    error = InfraError(message, hint)
    error.evidence = evidence[-_EVIDENCE_CHARS:]  # type: ignore[attr-defined]
    return error


def _command(argv: Sequence[str]) -> str:
    return "$ xcrun " + " ".join(shlex.quote(a) for a in argv[1:])


class Xcrun:
    """Runs ``xcrun`` tools with argv lists.

    Args:
        executable: the ``xcrun`` to use (default: the one on ``PATH``).
        timeout_s: default time limit of one command, in seconds.

    Attributes:
        calls: how many commands were started (a benchmark counts them per launch).

    Raises:
        UsageError: no ``xcrun`` on ``PATH`` (Xcode's command line tools are missing).
    """

    def __init__(self, executable: str | None = None, timeout_s: float = 120.0) -> None:
        found = executable or shutil.which("xcrun")
        if found is None:
            raise UsageError("xcrun was not found on PATH: the Xcode tools are missing",
                             "install Xcode and run `xcode-select --install` (iOS targets "
                             "need a Mac)")
        self.executable = found
        self.timeout_s = timeout_s
        self.calls = 0

    def argv(self, tool: str, *args: str) -> list[str]:
        """The argv of ``xcrun <tool> <args...>``."""
        return [self.executable, tool, *args]

    def run(self, tool: str, *args: str, env: dict[str, str] | None = None,
            timeout_s: float | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        """Run a tool to completion and capture its output.

        Raises:
            UsageError: xcrun cannot find the tool (Xcode missing or too old).
            XcrunError: the tool exited non-zero (with ``check``) or timed out.
        """
        argv = self.argv(tool, *args)
        limit = self.timeout_s if timeout_s is None else timeout_s
        self.calls += 1
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                  env={**os.environ, **(env or {})}, timeout=limit,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            partial = "".join(p.decode(errors="replace") if isinstance(p, bytes) else p or ""
                              for p in (exc.stdout, exc.stderr))
            raise XcrunError(f"`xcrun {tool} {args[0] if args else ''}` did not answer "
                             f"within {limit:g} s", "check that the simulator or device "
                             "responds (restart it)",
                             output=f"{_command(argv)}\n{partial}") from None
        except OSError as exc:
            raise UsageError(f"cannot run {self.executable}: {exc}",
                             "install Xcode's command line tools") from None
        if proc.returncode != 0 and "unable to find utility" in proc.stderr:
            raise UsageError(f"xcrun cannot find {tool!r}: {proc.stderr.strip()}",
                             "install Xcode (15 or later for devicectl) and select it with "
                             "`xcode-select -s`")
        if check and proc.returncode != 0:
            raise error_of(tool, args, proc)
        return proc

    def popen(self, tool: str, *args: str, env: dict[str, str] | None = None,
              stdout: Any = subprocess.PIPE, stderr: Any = subprocess.STDOUT
              ) -> "subprocess.Popen[str]":
        """Start a long-running tool (``log stream``, ``--console``) in its own session."""
        self.calls += 1
        try:
            return subprocess.Popen(self.argv(tool, *args), stdout=stdout, stderr=stderr,
                                    stdin=subprocess.DEVNULL, text=True, bufsize=1,
                                    errors="replace", env={**os.environ, **(env or {})},
                                    start_new_session=True)
        except OSError as exc:
            raise UsageError(f"cannot run {self.executable}: {exc}",
                             "install Xcode's command line tools") from None


def error_of(tool: str, args: Sequence[str], proc: subprocess.CompletedProcess[str]
             ) -> XcrunError:
    """The :class:`XcrunError` of a tool that exited non-zero: its last output line as the
    message, CoreSimulator's domain and code when it printed them."""
    output = (proc.stdout + proc.stderr).strip()
    match = _SIM_ERROR_RE.search(output)
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    detail = lines[-1] if lines else f"exit {proc.returncode}"
    what = " ".join([tool, *args[:1]])
    return XcrunError(f"`xcrun {what}` failed: {detail}", "see the simulator/device state "
                      "with `xcrun simctl list devices` or `xcrun devicectl list devices`",
                      output=f"{_command(['xcrun', tool, *args])}\n{output}",
                      domain=match.group("domain") if match else None,
                      code=int(match.group("code")) if match else None,
                      returncode=proc.returncode)


def kill_group(proc: "subprocess.Popen[Any]") -> None:
    """Stop a tool started by :meth:`Xcrun.popen` and its process group (SIGTERM, then
    SIGKILL after 2 s)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 15)
            proc.wait(2)
        except (ProcessLookupError, PermissionError):
            pass
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait(2)


def wait_until(check: Callable[[], bool], timeout_s: float, *, first_delay_s: float = 0.25,
               max_delay_s: float = 4.0, abort: Callable[[], bool] = lambda: False,
               sleep: Callable[[float], Any] = time.sleep) -> bool:
    """Call ``check()`` until it returns True, waiting 0.25, 0.5, 1, 2, 4, 4... s between
    tries (capped exponential backoff), for at most ``timeout_s`` seconds.

    Returns:
        True once ``check()`` did, False when ``timeout_s`` passed or ``abort()`` is true.
        An :class:`~kit.errors.InfraError` from ``check`` counts as "not yet".
    """
    deadline = time.monotonic() + timeout_s
    delay = first_delay_s
    while True:
        try:
            if check():
                return True
        except InfraError:
            pass
        left = deadline - time.monotonic()
        if left <= 0 or abort():
            return False
        sleep(min(delay, left))
        delay = min(max_delay_s, delay * 2)
