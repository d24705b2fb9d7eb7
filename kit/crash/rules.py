"""Known signatures as data: rule files in TOML (``kit/data/rules/*.toml`` plus the user's).

A rule file holds any of (see docs/crash.md for the full reference)::

    [frames]
    skip = ['^abort$', '^__kernel_rt_sigreturn$']   # frames that never identify a crash

    [[rule]]
    id = "onnxruntime-32461-xnnpack-allocator-uaf"  # unique; a user rule with a shipped
    crash_class = "xnnpack-allocator-uaf"           # rule's id replaces it
    title = "..."
    issue = "https://github.com/microsoft/onnxruntime/issues/32461"
    kinds = ["native"]                 # record kinds the rule applies to
    signals = ["SIGSEGV", "EXC_BAD_ACCESS"]         # signal name or exception type, any of
    abort_messages = ['Scudo ERROR']   # these abort messages satisfy ``signals`` too
    reject_abort_messages = ['terminating']         # any of these vetoes the rule
    reject_frames = ['XNNWeightsCache']             # a meaningful frame like this vetoes it
    window = 16                        # meaningful frames looked at

    [[rule.chain]]                     # innermost first: each step must match a meaningful
    name = "allocator callback"        # frame within ``within`` frames of the previous
    frames = ['^onnxruntime::xnnpack::...$']        # step's (of the top, for the first)
    within = 4

Patterns are Python regular expressions, searched (``re.search``) in normalised frame
names (:mod:`kit.crash.signature`: arguments and template arguments dropped), so they match
symbols, never library names. Every pattern is compiled at load; a bad file raises
:class:`~kit.errors.DataError` naming the file, the line and the rule.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from ..errors import DataError
from .record import CrashRecord
from .signature import NormalFrame

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["CRASH_CLASSES", "ChainStep", "Rule", "RuleSet", "RuleMatch", "load_rules",
           "SHIPPED_RULES_DIR"]

#: The closed set of crash classes (issue #3); rules may only name these.
CRASH_CLASSES = ("xnnpack-allocator-uaf", "other-native-crash", "abort", "js-error", "anr",
                 "oom", "unparsed")
KINDS = ("native", "java", "js", "anr", "oom", "unknown")
SHIPPED_RULES_DIR = Path(__file__).resolve().parent.parent / "data" / "rules"

_RULE_KEYS = {"id", "crash_class", "title", "issue", "description", "kinds", "signals",
              "abort_messages", "reject_abort_messages", "reject_frames", "window", "chain"}
_STEP_KEYS = {"name", "frames", "within"}
_FILE_KEYS = {"frames", "rule"}


@dataclasses.dataclass(frozen=True)
class ChainStep:
    """One link of a rule's frame chain: any of ``patterns`` within ``within`` frames."""

    name: str
    patterns: tuple[re.Pattern[str], ...]
    within: int

    def find(self, frames: Sequence[NormalFrame], start: int) -> int | None:
        """Index into ``frames`` of the first match in ``[start, start + within)``."""
        for i in range(start, min(len(frames), start + self.within)):
            if any(p.search(frames[i].name) for p in self.patterns):
                return i
        return None


@dataclasses.dataclass(frozen=True)
class RuleMatch:
    """Outcome of one rule on one record: ``matched`` and the steps that explain it."""

    matched: bool
    trail: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Rule:
    """A known signature (see the module docs for each field's meaning).

    ``origin`` is ``<file>:<line>`` of the rule's ``id``.
    """

    id: str
    crash_class: str
    title: str
    issue: str | None
    kinds: tuple[str, ...]
    signals: tuple[str, ...]
    abort_messages: tuple[re.Pattern[str], ...]
    reject_abort_messages: tuple[re.Pattern[str], ...]
    reject_frames: tuple[re.Pattern[str], ...]
    window: int
    chain: tuple[ChainStep, ...]
    origin: str

    def evaluate(self, record: CrashRecord, frames: Sequence[NormalFrame]) -> RuleMatch:
        """Check ``record`` (with its meaningful ``frames``) against this rule."""
        trail: list[str] = []

        def fail(reason: str) -> RuleMatch:
            trail.append(f"no: {reason}")
            return RuleMatch(False, tuple(trail))

        if self.kinds and record.kind not in self.kinds:
            return fail(f"kind {record.kind} is not {'/'.join(self.kinds)}")
        abort = record.abort_message or ""
        for pattern in self.reject_abort_messages:
            if abort and pattern.search(abort):
                return fail(f"abort message matches reject pattern {pattern.pattern!r}")
        if self.signals:
            got = {g for g in (record.signal_name, record.exception) if g}
            by_abort = next((p.pattern for p in self.abort_messages if abort and p.search(abort)),
                            None)
            if got & set(self.signals):
                trail.append(f"signal {'/'.join(sorted(got & set(self.signals)))} accepted")
            elif by_abort is not None:
                trail.append(f"abort message matches {by_abort!r} (allocator error)")
            else:
                shown = "/".join(sorted(str(g) for g in got)) or "none"
                return fail(f"signal {shown} is not one of {', '.join(self.signals)}")
        window = list(frames[:self.window])
        for pattern in self.reject_frames:
            hit = next((f for f in window if pattern.search(f.name)), None)
            if hit is not None:
                return fail(f"frame #{hit.frame.index} {hit.name} matches reject pattern "
                            f"{pattern.pattern!r}")
        start = 0
        for step in self.chain:
            found = step.find(window, start)
            if found is None:
                where = "top" if start == 0 else f"next after #{window[start - 1].frame.index}"
                return fail(f"no {step.name} frame in the {where} {step.within} "
                            "meaningful frames")
            hit = window[found]
            trail.append(f"{step.name}: #{hit.frame.index} {hit.name}")
            start = found + 1
        return RuleMatch(True, tuple(trail))


@dataclasses.dataclass(frozen=True)
class RuleSet:
    """Rules in evaluation order, the frame skip list, and the files they came from."""

    rules: tuple[Rule, ...]
    skip: tuple[re.Pattern[str], ...]
    sources: tuple[str, ...]
    _skip_re: re.Pattern[str] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        joined = "|".join(f"(?:{p.pattern})" for p in self.skip) or r"(?!)"
        object.__setattr__(self, "_skip_re", re.compile(joined))

    def is_skipped(self, name: str) -> bool:
        """True if a normalised frame name is on the skip list."""
        return self._skip_re.search(name) is not None

    def get(self, rule_id: str) -> Rule | None:
        """The rule with this id, or ``None``."""
        return next((r for r in self.rules if r.id == rule_id), None)


def _line_of(text: str, needle: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return None


class _Loader:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read rule file {path}: {exc}",
                            "pass a readable UTF-8 TOML file") from None

    def error(self, problem: str, rule_id: str | None = None, needle: str | None = None
              ) -> DataError:
        line = None
        if needle:
            line = (_line_of(self.text, f"'{needle}'") or _line_of(self.text, f'"{needle}"')
                    or _line_of(self.text, needle))
        if line is None and rule_id:
            line = _line_of(self.text, f'"{rule_id}"') or _line_of(self.text, f"'{rule_id}'")
        where = f"{self.path}:{line}" if line else str(self.path)
        what = f" rule {rule_id!r}:" if rule_id else ""
        return DataError(f"{where}:{what} {problem}",
                         "fix the rule file (format: docs/crash.md, 'Rule files')")

    def patterns(self, value: Any, key: str, rule_id: str | None) -> tuple[re.Pattern[str], ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(f"{key} must be a list of regular expressions", rule_id, key)
        out = []
        for pattern in value:
            try:
                out.append(re.compile(pattern))
            except re.error as exc:
                raise self.error(f"bad regular expression {pattern!r} in {key}: {exc}",
                                 rule_id, pattern) from None
        return tuple(out)

    def strings(self, value: Any, key: str, rule_id: str) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(f"{key} must be a list of strings", rule_id, key)
        return tuple(value)

    def positive(self, value: Any, key: str, rule_id: str, default: int) -> int:
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 64:
            raise self.error(f"{key} must be a whole number from 1 to 64", rule_id, key)
        return value

    def load(self) -> tuple[list[Rule], list[re.Pattern[str]]]:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            raise DataError(f"{self.path}: not valid TOML: {exc}",
                            "fix the rule file (format: docs/crash.md, 'Rule files')") from None
        unknown = set(data) - _FILE_KEYS
        if unknown:
            key = sorted(unknown)[0]
            raise self.error(f"unknown top-level key {key!r} (expected [frames] or [[rule]])",
                             needle=key)
        frames = data.get("frames", {})
        if not isinstance(frames, dict) or set(frames) - {"skip"}:
            raise self.error("[frames] may only hold skip = [...]", needle="[frames]")
        skip = list(self.patterns(frames.get("skip", []), "skip", None))
        raw_rules = data.get("rule", [])
        if not isinstance(raw_rules, list):
            raise self.error("rules must be written as [[rule]] tables", needle="rule")
        rules = [self.rule(raw, n) for n, raw in enumerate(raw_rules, start=1)]
        return rules, skip

    def rule(self, raw: Any, number: int) -> Rule:
        if not isinstance(raw, dict):
            raise self.error(f"rule #{number} is not a table")
        rule_id = raw.get("id")
        if not isinstance(rule_id, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,79}",
                                                              rule_id):
            raise self.error(f"rule #{number} needs an id of lower-case letters, digits, "
                             "'.', '_' or '-'", needle="id")
        unknown = set(raw) - _RULE_KEYS
        if unknown:
            key = sorted(unknown)[0]
            raise self.error(f"unknown key {key!r} (allowed: {', '.join(sorted(_RULE_KEYS))})",
                             rule_id, key)
        crash_class = raw.get("crash_class")
        if crash_class not in CRASH_CLASSES:
            raise self.error(f"crash_class {crash_class!r} is not one of "
                             f"{', '.join(CRASH_CLASSES)}", rule_id, "crash_class")
        kinds = self.strings(raw.get("kinds", []), "kinds", rule_id)
        bad = [k for k in kinds if k not in KINDS]
        if bad:
            raise self.error(f"kind {bad[0]!r} is not one of {', '.join(KINDS)}", rule_id,
                             "kinds")
        chain_raw = raw.get("chain", [])
        if not isinstance(chain_raw, list) or not chain_raw:
            raise self.error("needs at least one [[rule.chain]] step", rule_id)
        chain = []
        for i, step in enumerate(chain_raw, start=1):
            if not isinstance(step, dict) or set(step) - _STEP_KEYS or "frames" not in step:
                raise self.error(f"chain step {i} must hold name, frames and within only",
                                 rule_id, "[[rule.chain]]")
            name = step.get("name", f"step {i}")
            if not isinstance(name, str):
                raise self.error(f"chain step {i}: name must be a string", rule_id)
            chain.append(ChainStep(name=name, patterns=self.patterns(step["frames"], "frames",
                                                                     rule_id),
                                   within=self.positive(step.get("within"), "within", rule_id,
                                                        8)))
        for key in ("title", "issue", "description"):
            if key in raw and not isinstance(raw[key], str):
                raise self.error(f"{key} must be a string", rule_id, key)
        line = _line_of(self.text, f'"{rule_id}"') or _line_of(self.text, f"'{rule_id}'")
        return Rule(
            id=rule_id, crash_class=crash_class, title=raw.get("title", rule_id),
            issue=raw.get("issue"), kinds=kinds,
            signals=self.strings(raw.get("signals", []), "signals", rule_id),
            abort_messages=self.patterns(raw.get("abort_messages", []), "abort_messages",
                                         rule_id),
            reject_abort_messages=self.patterns(raw.get("reject_abort_messages", []),
                                                "reject_abort_messages", rule_id),
            reject_frames=self.patterns(raw.get("reject_frames", []), "reject_frames",
                                        rule_id),
            window=self.positive(raw.get("window"), "window", rule_id, 16),
            chain=tuple(chain), origin=f"{self.path}:{line}" if line else str(self.path))


def _rule_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.glob("*.toml") if p.is_file())
    if path.is_file():
        return [path]
    raise DataError(f"rule file or directory {path} does not exist",
                    "pass an existing .toml file or a directory of them")


def load_rules(path: str | Path | None = None) -> RuleSet:
    """The shipped rules (``kit/data/rules/*.toml``), plus the user's file or directory.

    Args:
        path: a ``.toml`` rule file, or a directory of them, or ``None`` for the shipped
            rules only. A user rule whose ``id`` equals a shipped rule's replaces it; user
            skip patterns are added to the shipped ones.

    Returns:
        A :class:`RuleSet` (rules in file order, shipped first).

    Raises:
        DataError: a file is unreadable, not TOML, or a rule is malformed (the message
            names the file, the line and the rule).
    """
    files = _rule_files(SHIPPED_RULES_DIR)
    if path is not None:
        files += _rule_files(Path(path))
    rules: dict[str, Rule] = {}
    skip: list[re.Pattern[str]] = []
    for file in files:
        loaded, file_skip = _Loader(file).load()
        seen: set[str] = set()
        for rule in loaded:
            if rule.id in seen:
                raise _Loader(file).error("duplicate rule id in one file", rule.id)
            seen.add(rule.id)
            rules.pop(rule.id, None)
            rules[rule.id] = rule
        skip.extend(file_skip)
    return RuleSet(rules=tuple(rules.values()), skip=tuple(skip),
                   sources=tuple(str(f) for f in files))
