"""Bugsnag's GitHub issue body: the error Bugsnag's GitHub integration files as an issue.

Shape (as the integration writes it; the frames are the top of the stack only, the rest
is behind the "View full stacktrace" link)::

    ## Error in Frost for Facebook

    **java.lang.RuntimeException** in **StartActivity**
    Unable to start activity ComponentInfo{...}: java.lang.RuntimeException: ...

    [View on Bugsnag](https://app.bugsnag.com/...)

    ## Stacktrace

        ActivityThread.java:2684 - android.app.ActivityThread.performLaunchActivity

Source: the issues Bugsnag's GitHub integration opened (docs.bugsnag.com, "GitHub
integration": an issue per error with its class, context, message and top frames).
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import parse_int
from .record import Frame

__all__ = ["looks_like_bugsnag", "read_bugsnag"]

_HEAD = re.compile(r"^\s*\*\*(?P<exc>[A-Za-z_$][\w$.:]*)\*\* in \*\*(?P<context>[^*]+)\*\*\s*$")
_FRAME = re.compile(r"^\s*(?P<file>[^\s:]+):(?P<line>\d+) - (?P<sym>\S+)\s*$")
_STACK = re.compile(r"^#{1,3} Stacktrace\s*$")


def looks_like_bugsnag(lines: Sequence[str]) -> int | None:
    """Index of the ``**Class** in **Context**`` line when a ``## Stacktrace`` heading or a
    Bugsnag link follows, else ``None``."""
    for i, line in enumerate(lines[:200]):
        if _HEAD.match(line):
            after = lines[i + 1:i + 40]
            if any(_STACK.match(ln) for ln in after) or any("bugsnag.com/" in ln for ln in after):
                return i
    return None


def read_bugsnag(draft: Draft, lines: Sequence[str], start: int) -> None:
    """Read the issue body whose headline is ``lines[start]`` into ``draft``."""
    head = _HEAD.match(lines[start])
    assert head is not None
    exc = head.group("exc")
    draft.format = "bugsnag-issue"
    draft.source = "crash-reporter"
    draft.set("exception", exc)
    message = next((ln.strip() for ln in lines[start + 1:start + 4]
                    if ln.strip() and not ln.lstrip().startswith(("[", "#"))), None)
    draft.set("message", message)
    draft.note(f"Bugsnag's GitHub issue (context {head.group('context').strip()[:80]}): only "
               "the top frames are in the issue")
    java = "." in exc and not exc.startswith(("EXC_", "SIG"))
    draft.kind = "java" if java else "native"
    draft.platform = "android" if java else "unknown"
    in_stack = False
    for line in lines[start + 1:]:
        if _STACK.match(line):
            in_stack = True
            continue
        m = _FRAME.match(line) if in_stack else None
        if m is not None:
            draft.add_frame(Frame(index=len(draft.frames), module=m.group("file"),
                                  symbol=m.group("sym"), file=m.group("file"),
                                  line=parse_int(m.group("line"))))
        elif in_stack and line.strip().startswith("#"):
            break
    if not draft.frames:
        draft.note("no frames under '## Stacktrace'")
