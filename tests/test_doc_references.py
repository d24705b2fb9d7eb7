"""Every document the kit's docstrings and comments cite is in the repository: a path such as
``docs/formats.md`` exists, a section it names ("docs/formats.md section D2", "sections 1-3")
is a heading there, and nothing points at files a clone does not have (the project's design
notes outside the repository)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: file names the kit and its benchmarks write (a report's own files), not documents cited
OUTPUTS = {"summary.md", "table.md"}
DOC = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
SECTIONS = re.compile(r"docs/formats\.md[,\s(]+(?:\(drivers\)\s*)?sections?\s+"
                      r"(D?\d(?:\s*(?:-|and)\s*D?\d)?)")
OUTSIDE = re.compile(r"DESIGN\.md|BACKGROUND\.md|STYLE\.md|\bnotes/[\w-]+\.md|\.\./shared")


def sources() -> list[Path]:
    return sorted([*ROOT.glob("kit/**/*.py"), *ROOT.glob("kit/data/rules/*.toml"),
                   *ROOT.glob("benchmarks/*.py"), *ROOT.glob("tests/**/*.py")])


def headings(doc: Path) -> set[str]:
    """Section numbers of ``### N. title`` headings (``1``, ``D2``...)."""
    return set(re.findall(r"^### (D?\d+)\.", doc.read_text(), re.M))


def test_the_patterns_find_what_they_check() -> None:
    text = "see docs/formats.md sections 1-3 and docs/formats.md section D2 (summary.md)"
    assert DOC.findall(text) == ["docs/formats.md", "docs/formats.md", "summary.md"]
    assert SECTIONS.findall(text) == ["1-3", "D2"]
    assert OUTSIDE.search("(DESIGN.md, vocabulary)") and OUTSIDE.search("notes/drivers.md")


def test_no_source_names_a_document_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in sources() if p != this
             for m in OUTSIDE.finditer(p.read_text())]
    assert not found, found


def test_every_cited_document_and_section_exists() -> None:
    numbers = headings(ROOT / "docs" / "formats.md")
    assert {"1", "8", "D2", "D6"} <= numbers
    missing = []
    for path in sources():
        if path == Path(__file__).resolve():
            continue
        text = path.read_text()
        for name in DOC.findall(text):
            if name not in OUTPUTS and not any((base / name).exists() for base in (
                    ROOT, ROOT / "docs", path.parent)):
                missing.append(f"{path.relative_to(ROOT)}: {name}")
        for span in SECTIONS.findall(" ".join(text.split())):
            ends = re.findall(r"D?\d", span)
            prefix = "D" if ends[0].startswith("D") else ""
            low, high = (int(e.lstrip("D")) for e in (ends[0], ends[-1]))
            for n in range(low, high + 1):
                if f"{prefix}{n}" not in numbers:
                    missing.append(f"{path.relative_to(ROOT)}: docs/formats.md section "
                                   f"{prefix}{n}")
    assert not missing, missing
