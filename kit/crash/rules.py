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
    causes = ['use-after-free']        # so do these causes (GWP-ASan, MTE, a sanitizer)
    absent_signal = "accept"           # a report with no signal at all: the chain decides
                                       # ("reject": the rule needs a signal)
    race_frames = ['CreatePreferredAllocators']     # a data-race report touching these is
                                       # this defect's mechanism (said in the trail)
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
:class:`~kit.errors.DataError` naming the file, the line and the rule. The user's patterns
run with a time bound (:mod:`kit.crash._patterns`): one that times out is reported in the
trail and its rule does not match.

A report with no signal and no exception (a crash console's export, a paste cut above its
signal line) is not a report with the wrong signal: unless the top frames show an abort,
``signals`` is then waived (``absent_signal = "accept"``, the default) and said so in the
trail, and the frame chain decides.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import DataError
from ._io import MAX_RULE_FILE_BYTES, read_limited
from ._patterns import Pattern, PatternError, PatternTimeout, UserPattern, compile_pattern
from ._text import clip
from .record import CrashRecord
from .signature import NormalFrame, abort_frames

if sys.version_info >= (3, 11):
    import re._constants as _sre_constants
    import re._parser as _sre_parse
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import sre_constants as _sre_constants
    import sre_parse as _sre_parse
    import tomli as tomllib

__all__ = ["CRASH_CLASSES", "ChainStep", "Rule", "RuleSet", "RuleMatch", "load_rules",
           "SHIPPED_RULES_DIR"]

#: The closed set of crash classes (issue #3); rules may only name these.
CRASH_CLASSES = ("xnnpack-allocator-uaf", "other-native-crash", "abort", "js-error", "anr",
                 "oom", "unparsed")
KINDS = ("native", "java", "js", "anr", "oom", "unknown")
SHIPPED_RULES_DIR = Path(__file__).resolve().parent.parent / "data" / "rules"

_RULE_KEYS = {"id", "crash_class", "title", "issue", "description", "kinds", "signals",
              "abort_messages", "reject_abort_messages", "reject_frames", "window", "chain",
              "causes", "absent_signal", "race_frames"}
_STEP_KEYS = {"name", "frames", "within"}
_FILE_KEYS = {"frames", "rule"}


@dataclasses.dataclass(frozen=True)
class ChainStep:
    """One link of a rule's frame chain: any of ``patterns`` within ``within`` frames."""

    name: str
    patterns: tuple[Pattern, ...]
    within: int

    def find(self, frames: Sequence[NormalFrame], start: int) -> int | None:
        """Index into ``frames`` of the first match in ``[start, start + within)``."""
        hits = _name_cache(self, "_hits", self.patterns)
        for i in range(start, min(len(frames), start + self.within)):
            name = frames[i].name
            hit = hits.get(name) if hits is not None else None
            if hit is None:
                hit = any(p.search(name) for p in self.patterns)
                if hits is not None:
                    _remember(hits, name, hit)
            if hit:
                return i
        return None


#: Most frame names whose outcome a shipped pattern set keeps (as the normaliser's cache:
#: a campaign sees the same few names again and again); the cache starts over past it.
NAME_CACHE_SIZE = 65536


def _name_cache(owner: object, key: str, patterns: Sequence[Pattern]) -> dict[str, bool] | None:
    """``owner``'s cache of name -> searched-and-found for ``patterns``, or ``None`` when one
    is a user's pattern (its search can time out, so its outcome is not kept)."""
    cache: dict[str, bool] | bool | None = owner.__dict__.get(key)
    if cache is None:
        cache = {} if all(isinstance(p, re.Pattern) for p in patterns) else False
        object.__setattr__(owner, key, cache)
    return cache if isinstance(cache, dict) else None


def _remember(cache: dict[str, bool], name: str, hit: bool) -> None:
    if len(cache) >= NAME_CACHE_SIZE:
        cache.clear()
    cache[name] = hit


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
    abort_messages: tuple[Pattern, ...]
    reject_abort_messages: tuple[Pattern, ...]
    reject_frames: tuple[Pattern, ...]
    window: int
    chain: tuple[ChainStep, ...]
    origin: str
    causes: tuple[Pattern, ...] = ()
    absent_signal: str = "accept"
    race_frames: tuple[Pattern, ...] = ()

    def _checks(self, record: CrashRecord, frames: Sequence[NormalFrame]
                ) -> Iterator[tuple[bool, str | None, str]]:
        """Each check in order: ``(passed, trail line or None, explanation)``."""
        kind_ok = not self.kinds or record.kind in self.kinds
        text = None if kind_ok else f"kind {record.kind} is not {'/'.join(self.kinds)}"
        yield kind_ok, text, text or (f"kind {record.kind}" + (
            f" is one of {'/'.join(self.kinds)}" if self.kinds else " (any kind)"))
        abort = record.abort_message or ""
        veto = next((p.pattern for p in self.reject_abort_messages
                     if abort and p.search(abort)), None)
        text = f"abort message matches reject pattern {veto!r}" if veto else None
        yield veto is None, text, text or "no abort message the rule rejects"
        if self.signals:
            yield self._signal_check(record, abort)
        window = list(frames[:self.window])
        hit = None
        joined = self._joined_rejects()
        if joined is None or any(self._rejected(joined, f.name) for f in window):
            for pattern in self.reject_frames:
                found = next((f for f in window if pattern.search(f.name)), None)
                if found is not None:
                    hit = (found, pattern.pattern)
                    break
        text = (f"frame #{hit[0].frame.index} {hit[0].name} matches reject pattern {hit[1]!r}"
                if hit else None)
        yield hit is None, text, text or f"no frame the rule rejects in the top {self.window}"
        start = 0
        for step in self.chain:
            if start < 0:
                yield False, None, f"{step.name}: not looked for (an earlier step failed)"
                continue
            found_at = step.find(window, start)
            if found_at is None:
                where = "top" if start == 0 else f"next after #{window[start - 1].frame.index}"
                text = f"no {step.name} frame in the {where} {step.within} meaningful frames"
                start = -1
                yield False, text, text
                continue
            step_hit = window[found_at]
            text = f"{step.name}: #{step_hit.frame.index} {step_hit.name}"
            start = found_at + 1
            yield True, text, text

    def _joined_rejects(self) -> re.Pattern[str] | None:
        """The shipped reject patterns as one ``re`` alternation (a quick test before the
        one-by-one search that names the pattern); ``None`` for a user's rule."""
        cached = self.__dict__.get("_rejects", False)
        if cached is False:
            shipped = all(isinstance(p, re.Pattern) for p in self.reject_frames)
            cached = re.compile("|".join(f"(?:{p.pattern})" for p in self.reject_frames)
                                or r"(?!)") if shipped else None
            object.__setattr__(self, "_rejects", cached)
        return cached

    def _rejected(self, joined: re.Pattern[str], name: str) -> bool:
        """``joined.search(name)`` found something (kept per name: shipped patterns only)."""
        cache = _name_cache(self, "_rejected_names", self.reject_frames)
        hit = cache.get(name) if cache is not None else None
        if hit is None:
            hit = joined.search(name) is not None
            if cache is not None:
                _remember(cache, name, hit)
        return hit

    def _signal_check(self, record: CrashRecord, abort: str) -> tuple[bool, str | None, str]:
        got = {g for g in (record.signal_name, record.exception) if g}
        if got & set(self.signals):
            text = f"signal {'/'.join(sorted(got & set(self.signals)))} accepted"
            return True, text, text
        by_abort = next((p.pattern for p in self.abort_messages if abort and p.search(abort)),
                        None)
        if by_abort is not None:
            text = f"abort message matches {by_abort!r} (allocator error)"
            return True, text, text
        said = " ".join(g for g in (record.cause, record.exception) if g)
        by_cause = next((p.pattern for p in self.causes if said and p.search(said)), None)
        if by_cause is not None:
            text = f"cause matches {by_cause!r} (a memory tool saw the error)"
            return True, text, text
        if not got and record.kind == "native":
            plumbing = abort_frames(record)
            if plumbing:
                text = ("no signal in the report, and the top frames abort ("
                        + ", ".join(dict.fromkeys(plumbing)) + "): not one of "
                        + ", ".join(self.signals))
                return False, text, text
            if self.absent_signal == "accept":
                text = ("no signal in the report (absent, not wrong): the frame chain "
                        "decides")
                return True, text, text
            text = "no signal in the report, and this rule needs one"
            return False, text, text
        shown = "/".join(sorted(str(g) for g in got)) or "none"
        text = f"signal {shown} is not one of {', '.join(self.signals)}"
        return False, text, text

    def evaluate(self, record: CrashRecord, frames: Sequence[NormalFrame]) -> RuleMatch:
        """Check ``record`` (with its meaningful ``frames``) against this rule; the first
        check that fails ends it. A user pattern that times out fails the rule."""
        trail: list[str] = []
        try:
            for passed, line, _ in self._checks(record, frames):
                if not passed:
                    trail.append(f"no: {line}")
                    return RuleMatch(False, tuple(trail))
                if line:
                    trail.append(line)
        except PatternTimeout as exc:
            trail.append(f"no: {exc}; the rule is skipped (simplify the pattern)")
            return RuleMatch(False, tuple(trail))
        return RuleMatch(True, tuple(trail))

    def explain(self, record: CrashRecord, frames: Sequence[NormalFrame]
                ) -> tuple[bool, list[str]]:
        """Every check, passed (``ok``) or not (``NO``), without stopping at the first
        failure: ``(matched, lines)``."""
        lines: list[str] = []
        matched = True
        try:
            for passed, _, text in self._checks(record, frames):
                matched = matched and passed
                lines.append(f"{'ok' if passed else 'NO'}: {text}")
        except PatternTimeout as exc:
            lines.append(f"NO: {exc}; the rule is skipped")
            matched = False
        return matched, lines

    def race_hit(self, names: Sequence[str]) -> str | None:
        """The first ``race_frames`` pattern found in ``names`` (frame names and the other
        stacks of a data-race report), or ``None``."""
        for pattern in self.race_frames:
            for name in names:
                try:
                    if pattern.search(name):
                        return pattern.pattern
                except PatternTimeout:
                    return None
        return None


@dataclasses.dataclass(frozen=True)
class RuleSet:
    """Rules in evaluation order, the frame skip list, and the files they came from."""

    rules: tuple[Rule, ...]
    skip: tuple[Pattern, ...]
    sources: tuple[str, ...]
    _skip_re: re.Pattern[str] = dataclasses.field(init=False, repr=False, compare=False)
    _user_skip: tuple[UserPattern, ...] = dataclasses.field(init=False, repr=False,
                                                            compare=False)

    def __post_init__(self) -> None:
        shipped = [p for p in self.skip if not isinstance(p, UserPattern)]
        joined = "|".join(f"(?:{p.pattern})" for p in shipped) or r"(?!)"
        object.__setattr__(self, "_skip_re", re.compile(joined))
        object.__setattr__(self, "_user_skip",
                           tuple(p for p in self.skip if isinstance(p, UserPattern)))

    def is_skipped(self, name: str) -> bool:
        """True if a normalised frame name is on the skip list (a user skip pattern that
        timed out skips nothing; :meth:`timed_out` names it)."""
        cache = self.__dict__.get("_skipped")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_skipped", cache)
        hit = cache.get(name)
        if hit is None:
            hit = self._skip_re.search(name) is not None
            _remember(cache, name, hit)
        if hit:
            return True
        for pattern in self._user_skip:
            try:
                if pattern.search(name):
                    return True
            except PatternTimeout:
                continue
        return False

    def timed_out(self) -> list[str]:
        """The user skip patterns that timed out so far in this process."""
        return [p.pattern for p in self._user_skip if p.timed_out]

    def get(self, rule_id: str) -> Rule | None:
        """The rule with this id, or ``None``."""
        return next((r for r in self.rules if r.id == rule_id), None)


#: The most a user pattern may grow to when its counted repeats are written out: the
#: ``regex`` package expands ``x{n}`` at compile time, so ``((a{1000}){1000}){1000}``
#: takes gigabytes before the first search (the search's time bound cannot help).
MAX_PATTERN_EXPANSION = 100_000
#: how deeply a user pattern's groups and repeats may nest
MAX_PATTERN_DEPTH = 200


def check_pattern_size(pattern: str) -> None:
    """Refuse a user pattern whose counted repeats multiply past
    :data:`MAX_PATTERN_EXPANSION` (each repeat counts ``max(min, max)`` times its body, an
    open-ended one its ``min``), or that nests deeper than :data:`MAX_PATTERN_DEPTH`. Parsed
    with the standard library's own ``re`` parser, which builds a tree, never the
    expansion.

    Raises:
        re.error: too large or too deep (the message says which and how much).
    """
    if len(pattern) > 4096:
        raise re.error(f"longer than 4096 characters ({len(pattern)})")
    try:
        tree = _sre_parse.parse(pattern)
    except RecursionError:
        raise re.error(f"nested deeper than {MAX_PATTERN_DEPTH}") from None
    size = _expanded(tree, 0)
    if size > MAX_PATTERN_EXPANSION:
        raise re.error(f"its counted repeats multiply to about {size:.3g} items (more than "
                       f"{MAX_PATTERN_EXPANSION}): it would take the machine's memory to "
                       f"compile; use fewer or smaller {{n}} counts")


def _expanded(items: Any, depth: int) -> float:
    """How many items ``items`` (a parsed pattern or sub-pattern) stands for written out."""
    if depth > MAX_PATTERN_DEPTH:
        raise re.error(f"nested deeper than {MAX_PATTERN_DEPTH}")
    total = 0.0
    for op, arg in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = arg
            count = low if high == _sre_constants.MAXREPEAT else max(low, high)
            total += max(count, 1) * _expanded(body, depth + 1)
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            total += _expanded(arg[-1], depth + 1)
        elif name == "BRANCH":
            total += sum(_expanded(b, depth + 1) for b in arg[1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            total += _expanded(arg[1], depth + 1)
        elif name == "GROUPREF_EXISTS":
            total += sum(_expanded(b, depth + 1) for b in arg[1:] if b is not None)
        else:
            total += 1
        if total > MAX_PATTERN_EXPANSION * 1000:
            return total  # enough to refuse it; never overflows to inf
    return total


def _line_of(text: str, needle: str) -> int | None:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return None


class _Loader:
    def __init__(self, path: Path, user: bool) -> None:
        self.path = path
        self.user = user
        data = read_limited(path, MAX_RULE_FILE_BYTES, "rule file")
        try:
            self.text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"cannot read rule file {clip(path)}: {exc}",
                            "pass a readable UTF-8 TOML file") from None

    def error(self, problem: str, rule_id: str | None = None, needle: str | None = None
              ) -> DataError:
        line = None
        if needle:
            line = (_line_of(self.text, f"'{needle}'") or _line_of(self.text, f'"{needle}"')
                    or _line_of(self.text, needle))
        if line is None and rule_id:
            line = _line_of(self.text, f'"{rule_id}"') or _line_of(self.text, f"'{rule_id}'")
        where = f"{clip(self.path)}:{line}" if line else clip(self.path)
        what = f" rule {clip(rule_id, 80)!r}:" if rule_id else ""
        return DataError(f"{where}:{what} {problem}",
                         "fix the rule file (format: docs/crash.md, 'Rule files')")

    def patterns(self, value: Any, key: str, rule_id: str | None) -> tuple[Pattern, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(f"{key} must be a list of regular expressions", rule_id, key)
        out = []
        for pattern in value:
            try:
                if self.user:  # before regex.compile, which expands counted repeats
                    check_pattern_size(pattern)
                out.append(compile_pattern(pattern, self.user))
            except RecursionError:
                raise self.error(f"regular expression {clip(pattern, 80)!r} in {key} is "
                                 f"nested too deeply", rule_id, pattern) from None
            except PatternError as exc:
                raise self.error(f"bad regular expression {clip(pattern, 80)!r} in {key}: "
                                 f"{clip(exc, 120)}", rule_id, pattern) from None
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

    def load(self) -> tuple[list[Rule], list[Pattern]]:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            raise DataError(f"{clip(self.path)}: not valid TOML: {clip(exc, 160)}",
                            "fix the rule file (format: docs/crash.md, 'Rule files')") from None
        except RecursionError:  # tomllib recurses once per nested array or inline table
            raise DataError(f"{clip(self.path)}: its arrays or tables are nested too deeply "
                            f"to be a rule file", "fix the rule file (format: docs/crash.md, "
                                                  "'Rule files')") from None
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
        absent = raw.get("absent_signal", "accept")
        if absent not in ("accept", "reject"):
            raise self.error("absent_signal must be \"accept\" or \"reject\"", rule_id,
                             "absent_signal")
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
            chain=tuple(chain), origin=f"{self.path}:{line}" if line else str(self.path),
            causes=self.patterns(raw.get("causes", []), "causes", rule_id),
            absent_signal=absent,
            race_frames=self.patterns(raw.get("race_frames", []), "race_frames", rule_id))


def _rule_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*.toml"))[:200]
    if path.exists():
        return [path]  # read_limited refuses devices and FIFOs with one line
    raise DataError(f"rule file or directory {clip(path)} does not exist",
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
    files = [(f, False) for f in _rule_files(SHIPPED_RULES_DIR)]
    if path is not None:
        files += [(f, True) for f in _rule_files(Path(path))]
    rules: dict[str, Rule] = {}
    skip: list[Pattern] = []
    for file, user in files:
        loader = _Loader(file, user)
        loaded, file_skip = loader.load()
        seen: set[str] = set()
        for rule in loaded:
            if rule.id in seen:
                raise loader.error("duplicate rule id in one file", rule.id)
            seen.add(rule.id)
            rules.pop(rule.id, None)
            rules[rule.id] = rule
        skip.extend(file_skip)
    return RuleSet(rules=tuple(rules.values()), skip=tuple(skip),
                   sources=tuple(str(f) for f, _ in files))
