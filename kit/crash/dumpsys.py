"""Android's ``dumpsys`` crash evidence as text: ``dumpsys dropbox --print TAG`` split into
entries, one entry of ``dumpsys activity exit-info PACKAGE``, and which DropBox tags and
exit reasons are a crash. Read by the adb target (:mod:`kit.targets.android.evidence`) and
by a farm's in-session shell pass (:mod:`kit.farms.shell`) alike; the formats are
``DropBoxManagerService.dump()`` and ``ApplicationExitInfo.dump()`` (docs/formats.md).
"""

from __future__ import annotations

import re

from .exitinfo import ExitReason

__all__ = ["dropbox_entries", "exit_info_block", "CRASH_REASONS", "DROPBOX_TAGS"]

#: exit reasons that are a crash (their entry may stand as the crash report)
CRASH_REASONS = frozenset({ExitReason.CRASH, ExitReason.CRASH_NATIVE, ExitReason.SIGNALED,
                           ExitReason.ANR, ExitReason.LOW_MEMORY})
#: DropBox tags of crash reports, best first (a tombstone has every thread)
DROPBOX_TAGS = ("SYSTEM_TOMBSTONE", "data_app_native_crash", "data_app_crash")


def dropbox_entries(text: str) -> list[tuple[str, str, str]]:
    """``dumpsys dropbox --print`` split into ``(time, tag, entry text)``; the entry text
    keeps its ``=`` line and header so :func:`kit.crash.parse_text` reads it as DropBox."""
    entries: list[tuple[str, str, str]] = []
    lines = text.splitlines()
    starts = [i for i in range(len(lines) - 1) if re.match(r"^={20,}\s*$", lines[i]) and
              re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \(", lines[i + 1])]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        head = lines[start + 1].split(" ")
        entries.append((f"{head[0]} {head[1]}", head[2], "\n".join(lines[start:end]) + "\n"))
    return entries


_EXIT_HEAD = re.compile(r"^\s*ApplicationExitInfo #(\d+):?\s*$", re.M)


def exit_info_block(text: str, index: int) -> str:
    """The text of entry ``#index`` of a ``dumpsys activity exit-info <pkg>`` dump, under its
    ``package:`` header (so that :func:`kit.crash.parse_text` reads that entry, not the
    newest one); ``""`` when there is no such entry."""
    heads = list(_EXIT_HEAD.finditer(text))
    for n, head in enumerate(heads):
        if int(head.group(1)) != index:
            continue
        end = heads[n + 1].start() if n + 1 < len(heads) else len(text)
        before = text[:head.start()]
        package = [ln for ln in before.splitlines()
                   if ln.strip().startswith(("package:", "Historical Process Exit"))][-2:]
        return "\n".join(package + [text[head.start():end].strip("\n")]) + "\n"
    return ""

