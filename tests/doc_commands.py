"""The command lines the README and docs/*.md show, found automatically (issue #28).

A documented command is a ``coldstart ...`` (or ``.venv/bin/coldstart ...``) line in a fenced
block, with its ``\\`` continuations, or an inline code span that starts with one; and a
``python benchmarks/NAME.py ...`` line the same way. Shell comments and anything after a shell
operator (``|``, ``&&``, ``;``, ``>``) are cut. What the docs write as a stand-in is kept as a
:data:`PLACEHOLDER` token, for the tests to fill with a value the option accepts:

* upper-case words (``DIR``, ``N``, ``FILE...``, ``BASELINE_DIR``), ``<target>``, ``$VAR``;
* ``...`` (more options: the line is a *fragment*, and at a command's place it stands for one);
* ``a\\|b`` in a table cell: the first alternative;
* ``[--opt VALUE]``: optional; kept for parsing, left out of a minimal run
  (:attr:`DocCommand.minimal`).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: a token a test fills in: a stand-in word, ``<...>``, ``$VAR`` or ``...``
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*|\.\.\.|\$\{?\w+\}?|<[^>]*>)$")
_FENCE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
_INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "2>", "(", ")"}


@dataclasses.dataclass(frozen=True)
class DocCommand:
    """One documented command line.

    Attributes:
        where: ``FILE:LINE`` of its first line (relative to the checkout).
        program: ``coldstart`` or a benchmark's path (``benchmarks/bench_race.py``).
        tokens: the arguments after the program, placeholders kept.
        optional: for each token, whether it sits inside ``[...]``.
        inline: from an inline code span (prose naming a command, maybe in part).
        text: the line as the doc writes it (one line).
    """

    where: str
    program: str
    tokens: tuple[str, ...]
    optional: tuple[bool, ...]
    inline: bool
    text: str

    @property
    def fragment(self) -> bool:
        """The doc says "and more" (``...``) or names a command in prose: required options
        may be missing."""
        return self.inline or "..." in self.tokens

    def minimal(self) -> list[str]:
        """The tokens without the optional ``[...]`` parts and without ``...``."""
        return [t for t, opt in zip(self.tokens, self.optional) if not opt and t != "..."]


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every docs/*.md, sorted."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _words(text: str) -> list[str] | None:
    """Shell words of one line up to the first operator (``None``: not shell-splittable)."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:
        return None
    for i, word in enumerate(words):
        if word in _OPERATORS:
            return words[:i]
    return words


def _command(text: str, where: str, inline: bool) -> DocCommand | None:
    text = re.sub(r"\\\|[^\s`]*", "", text)  # `a\|b` in a table: the first one
    # <target>, <this run> would read as redirections: one word each, put back below
    words = _words(re.sub(r"<([^<>]+)>", lambda m: "@@" + m.group(1).replace(" ", "_") + "@@",
                          text))
    if not words:
        return None
    words = [re.sub(r"@@([^@]+)@@", r"<\1>", w) for w in words]
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):  # VAR=value prefixes
        words = words[1:]
    if not words:
        return None
    if (words[0] == "coldstart" or words[0].endswith("/coldstart")) and len(words) > 1:
        program, rest = "coldstart", words[1:]  # (the bare program name is no command)
    elif (len(words) > 1 and re.fullmatch(r"(\S*/)?python3?", words[0])
          and re.fullmatch(r"benchmarks/[\w-]+\.py", words[1])):
        program, rest = words[1], words[2:]
    else:
        return None
    tokens, optional, depth = [], [], 0
    for word in rest:
        opened = len(word) - len(word.lstrip("["))
        closed = len(word) - len(word.rstrip("]"))
        core = word.strip("[]") if (opened or closed) and not word.startswith("[[") else word
        depth += opened
        if core.endswith("...") and core != "...":
            core = core[:-3]  # FILE... -> FILE
        if core:
            tokens.append(core)
            optional.append(depth > 0)
        depth = max(0, depth - closed)
    return DocCommand(where, program, tuple(tokens), tuple(optional), inline,
                      " ".join(text.split()))


def doc_commands(root: Path = ROOT) -> list[DocCommand]:
    """Every documented command line of :func:`doc_files`, in file and line order."""
    found: list[DocCommand] = []
    for path in doc_files(root):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(root).as_posix()
        for block in _FENCE.finditer(text):
            first = text.count("\n", 0, block.start(2)) + 1
            lines = block.group(2).split("\n")
            i = 0
            while i < len(lines):
                start, line = i, lines[i]
                while line.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line.rstrip()[:-1] + " " + lines[i]
                i += 1
                command = _command(re.sub(r"^\s*\$ ", "", line), f"{name}:{first + start}",
                                   inline=False)
                if command is not None:
                    found.append(command)
        # inline spans outside the fenced blocks (blanked, keeping the line numbers)
        prose = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for span in _INLINE.finditer(prose):
            command = _command(span.group(1).replace("\n", " "),
                               f"{name}:{prose.count(chr(10), 0, span.start()) + 1}",
                               inline=True)
            if command is not None:
                found.append(command)
    found.sort(key=lambda c: (c.where.split(":")[0], int(c.where.split(":")[1])))
    return found
