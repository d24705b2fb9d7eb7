"""Undo what pasting does to a crash report before any parser reads it.

People paste reports into issues, chats and mail, and the paste leaves marks that no
crash format has:

* a quote marker on every line (``> `` from e-mail and Markdown replies);
* Markdown code fences (`````` ``` ``````) and a back-quote stuck to the first or last line;
* HTML entities (``&quot;main&quot;``) from trackers that were imported as HTML;
* a log prefix of the test runner around the report (ctest's ``714: ``), or a log tag
  (an Android wrap script's ``wrap.sh: ``, ``[worker]: ``), the same on every line;
* the time stamp a CI service writes before every line of a job's log (GitHub Actions'
  ``2021-04-13T11:54:23.5999584Z ``, an ISO 8601 UTC time and a space);
* a Markdown table around frames (``| # | image | address | symbol |`` as crash dashboards
  export them, or ``0 | libc.so | abort`` under a ``-- | --`` row, the form GitHub's editor
  writes for an HTML table pasted into it): its rows become the lines they came from;
* Markdown bold (``**key:** value``), whole lines or inside one (not Bugsnag's
  ``**Class** in **Context**`` headline, which is its format);
* every line quoted as a JSON string (``"Crash reason:  SIGABRT",``), as a report arrives
  when it is copied out of a JSON log or a JSON array of lines: the strings are decoded;
* the indentation of a Markdown indented code block (four spaces or a tab before every
  line, https://spec.commonmark.org/0.31.2/#indented-code-blocks), which hides logcat's
  line prefixes from their anchored patterns.

:func:`tidy_paste` removes these and says what it removed, so a note can tell the reader.
It never touches a report that has none of them.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections import Counter

from ._draft import BOLD_SPAN, unmark
from ._text import json_string_end

__all__ = ["tidy_paste"]

_QUOTE = re.compile(r"^[ \t]{0,3}>(?: |$)")
_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_CTEST = re.compile(r"^(\d{1,5}): ")
# a log tag on every line: an Android wrap script's "wrap.sh: ", a service's "[worker]: "
_TAG_PREFIX = re.compile(r"^([\w-]{1,32}\.sh|\[[\w.-]{1,32}\]): ")
# a whole line in Markdown bold ("**java.lang.RuntimeException:** "): a rendered copy
_BOLD_LINE = re.compile(r"^[ \t]*\*\*(?P<inner>[^*\n]+?)\*\*[ \t]*$", re.M)
# a Markdown table's delimiter row, https://github.github.com/gfm/#tables-extension-: cells
# of hyphens (one or more, an optional colon each side) between pipes, the outer pipes
# optional ("|---|:---:|", and "-- | --" as GitHub's editor writes a pasted HTML table)
_TABLE_DELIM = re.compile(r"^[ \t]*(?:\|[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?"
                          r"|:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?)[ \t]*$", re.M)
# Bugsnag's and consoles' headline "**Class** in **Context**": its marks are its format
_HEADLINE = re.compile(r"^\s*\*\*[^*\n]+\*\* in \*\*[^*\n]+\*\*\s*$")
_ENTITY = re.compile(r"&(?:quot|lt|gt|amp|#39|#x27);")
_QUOTE_ANY = re.compile(r"^[ \t]{0,3}>(?: |$)", re.M)
# GitHub Actions' raw log: "2021-04-13T11:54:23.5999584Z " before every line
_CI_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?")
_CTEST_ANY = re.compile(r"\A\s*(?:\d{1,5}|[\w-]{1,32}\.sh|\[[\w.-]{1,32}\]): ")


def _quote_marker(text: str) -> bool:
    """``_QUOTE_ANY.search(text) is not None``, looked for from each ``>`` (a regex search
    for a line start tries every position of the text): the line of a ``>`` within its first
    four characters, matched by :data:`_QUOTE`."""
    at = text.find(">")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if at - start <= 3 and _QUOTE.match(text[start:end]) is not None:
            return True
        at = text.find(">", end)
    return False


def _strip_quotes(lines: list[str]) -> tuple[list[str], bool]:
    body = [ln for ln in lines if ln.strip()]
    if not body or sum(1 for ln in body if _QUOTE.match(ln)) * 10 < len(body) * 8:
        return lines, False
    return [_QUOTE.sub("", ln, count=1) if _QUOTE.match(ln) else ln for ln in lines], True


def _strip_runner_prefix(lines: list[str]) -> tuple[list[str], str | None]:
    body = [ln for ln in lines if ln.strip()]
    pattern = _CTEST if any(_CTEST.match(ln) for ln in body[:3]) else _TAG_PREFIX
    if len(body) < 3 or not any(pattern.match(ln) for ln in body[:3]):
        return lines, None
    counts = Counter(m.group(1) for ln in body if (m := pattern.match(ln)))
    if not counts:
        return lines, None
    token, count = counts.most_common(1)[0]
    if count * 10 < len(body) * 6:
        return lines, None
    prefix = f"{token}: "
    return [ln[len(prefix):] if ln.startswith(prefix) else ln for ln in lines], prefix


def _strip_ci_time(lines: list[str]) -> tuple[list[str], bool]:
    """Lines without a CI log's time stamp, when at least 60 % of the non-empty lines start
    with one (an empty log line is the stamp alone)."""
    body = [ln for ln in lines if ln.strip()]
    if len(body) < 2 or sum(1 for ln in body if _CI_TIME.match(ln)) * 10 < len(body) * 6:
        return lines, False
    return [_CI_TIME.sub("", ln, count=1) for ln in lines], True


def _json_string(line: str) -> str | None:
    """The text of a line that is one JSON string (an optional comma after it), or
    ``None``."""
    s = line.strip()
    if not s.startswith('"'):
        return None
    end = json_string_end(s, 1)
    if end < 0 or s[end:].strip() not in ("", ","):
        return None
    try:
        value = json.loads(s[:end])
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _first_line(text: str) -> str:
    """The first line of ``text`` that is neither blank nor a Markdown fence, stripped (from
    its first 50 lines)."""
    for line in text.split("\n", 50)[:50]:
        stripped = line.strip()
        if stripped and not _FENCE.match(stripped):
            return stripped
    return ""


def _unquote_json_lines(lines: list[str]) -> tuple[list[str], bool]:
    """Each line that is a JSON string as its text, when at least 80 % of the non-empty
    lines (and at least three) are one (a JSON array's own brackets dropped); a string's
    own ``\n`` escapes become lines."""
    out: list[str] = []
    strings = body = 0
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped in ("[", "]", "],"):
            continue
        if _FENCE.match(stripped):
            out.append(line)
            continue
        body += 1
        value = _json_string(stripped)
        if value is None:
            out.append(line)
            continue
        strings += 1
        out.extend(value.split("\n"))
    if strings < 3 or strings * 10 < body * 8:
        return lines, False
    return out, True


def _table_cells(line: str) -> list[str]:
    """A table row's cells, stripped (the outer pipes optional; ``\\|`` is a pipe in a cell)."""
    row = line.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", row)]


def _strip_table(lines: list[str]) -> tuple[list[str], int]:
    """A Markdown table's rows as plain lines (cells two spaces apart, in their order: a
    dashboard's frame columns read as the frame line they came from; a cell's own code span
    or bold marks dropped), its delimiter row and the header above it dropped;
    ``(lines, rows)``. A table is a header row with as many cells
    as the delimiter row under it, and the rows that follow up to a blank line or a line
    without a pipe (GFM's tables, whose outer pipes are optional)."""
    out: list[str] = []
    rows = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if (i + 1 < len(lines) and "|" in line and "-" in lines[i + 1]
                and _TABLE_DELIM.match(lines[i + 1])
                and len(_table_cells(line)) == len(_table_cells(lines[i + 1]))):
            if _table_cells(line)[0].isdecimal():
                # a frame's index in the header cell: GitHub's editor makes a pasted HTML
                # table's first row (frame 0) the header; it is a row like the others
                out.append("  ".join(unmark(c) for c in _table_cells(line) if c))
                rows += 1
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                # a cell people format by hand may be a code span or bold ("`libc.so`")
                out.append("  ".join(unmark(c) for c in _table_cells(lines[i]) if c))
                rows += 1
                i += 1
            continue
        out.append(line)
        i += 1
    return (out, rows) if rows else (lines, 0)


def _strip_indent(lines: list[str]) -> tuple[list[str], str]:
    """Remove the leading whitespace every non-empty line shares, when it is at least four
    spaces or a tab (a Markdown indented code block); ``(lines, "")`` otherwise."""
    common: str | None = None
    for ln in lines:
        if not ln.strip():
            continue
        lead = ln[:len(ln) - len(ln.lstrip(" \t"))]
        common = lead if common is None else os.path.commonprefix([common, lead])
        if not common:
            return lines, ""
    if not common or not (common.startswith("\t") or len(common) >= 4):
        return lines, ""
    return [ln[len(common):] if ln.startswith(common) else ln.lstrip(" \t") for ln in lines], \
        common


def tidy_paste(text: str) -> tuple[str, list[str]]:
    """``text`` without paste marks, and one note per kind of mark removed.

    Quote markers are removed only when at least 80 % of the non-empty lines carry one; a
    test runner's ``N: `` prefix only when at least 60 % carry the same one; HTML entities
    only when the text holds an entity and no plain double quote; an indentation only when
    every non-empty line has it. Never raises.
    """
    notes: list[str] = []
    if "Z " in text[:40] and _CI_TIME.match(text.lstrip()) is not None:
        lines, timed = _strip_ci_time(text.split("\n"))
        if timed:
            text = "\n".join(lines)
            notes.append("a CI log's time stamps ('2021-04-13T11:54:23.5999584Z ') removed")
    if _first_line(text)[:1] in ('"', "["):
        lines, unquoted = _unquote_json_lines(text.split("\n"))
        if unquoted:
            text = "\n".join(lines)
            notes.append("every line a JSON string (a copy from a JSON log): decoded")
    quotes = ">" in text and _quote_marker(text)
    runner = ": " in text and _CTEST_ANY.match(text) is not None
    indented = text[:1] in (" ", "\t") and text.lstrip()[:1] != "{"  # JSON: indent is free
    bold = "**" in text and _BOLD_LINE.search(text) is not None
    table = "|" in text and "-" in text and _TABLE_DELIM.search(text) is not None
    marks = table or "**" in text
    if not (quotes or runner or indented or bold or marks or "```" in text or "~~~" in text
            or "`" in text[:4] or "`" in text[-4:] or "&" in text):
        return text, notes
    if not (quotes or runner or indented or bold or table) and "`" not in text \
            and "~~~" not in text and ("**" not in text or BOLD_SPAN.search(text) is None):
        # only an HTML entity can be there (a tombstone's star line holds "**", C++ frames
        # "&"): the line by line work below would give the text back as it is
        if "&" in text and '"' not in text and _ENTITY.search(text):
            text = html.unescape(text)
            notes.append("HTML entities (&quot; ...) decoded")
        return text, notes
    lines = text.split("\n")
    lines, quoted = _strip_quotes(lines) if quotes else (lines, False)
    if quoted:
        notes.append("pasted as a quote: '> ' markers removed")
    if "```" in text or "~~~" in text:
        lines = [ln for ln in lines if not _FENCE.match(ln)]
    if lines and lines[0].startswith("`") and not lines[0].startswith("``"):
        lines[0] = lines[0][1:]
    if lines and lines[-1].rstrip().endswith("`") and not lines[-1].rstrip().endswith("``"):
        lines[-1] = lines[-1].rstrip()[:-1]
    if indented:
        lines, indent = _strip_indent(lines)
        if indent:
            notes.append(f"pasted as an indented code block: {len(indent)} leading "
                         "whitespace characters removed from every line")
    if bold:
        # Markdown bold lines, and '> ' that opens a lazy block quote (only its first line
        # carries the marker): both from a rendered copy (Play Console's, pasted in bold)
        lines = [_BOLD_LINE.sub(r"\g<inner>", ln) for ln in lines]
        lines = [ln[2:] if ln.startswith("> ") else ln for ln in lines]
        notes.append("Markdown bold ('**') and block-quote ('> ') marks removed")
    if "**" in text:
        # bold inside a line ("**Abort message:** '**Scudo ERROR**'"): never the report's
        unbold = [ln if "**" not in ln or _HEADLINE.match(ln) else unmark(ln) for ln in lines]
        if unbold != lines:
            lines = unbold
            if not bold:
                notes.append("Markdown bold ('**') marks removed")
    if table:
        lines, rows = _strip_table(lines)
        if rows:
            plural = "s" if rows != 1 else ""
            notes.append(f"a Markdown table's markup removed ({rows} row{plural})")
    lines, prefix = _strip_runner_prefix(lines) if runner else (lines, None)
    if prefix is not None:
        who = "a test runner's" if prefix[0].isdigit() else "a log tag's"
        notes.append(f"{who} '{prefix}' line prefix removed")
    text = "\n".join(lines)
    if "&" in text and '"' not in text and _ENTITY.search(text):
        text = html.unescape(text)
        notes.append("HTML entities (&quot; ...) decoded")
    return text, notes
