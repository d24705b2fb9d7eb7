"""Why a report got its class: the family detected and why, what was read, and every
rule's checks (``coldstart crash classify --explain``).

A maintainer who sees a paste come out ``unparsed`` or ``other-native-crash`` reads here
which family the text was taken for (and the marks that decided it), which fields the
parser read and what it noted, then, rule by rule, each check with ``ok`` or ``NO`` (not
only the first that failed, as the trail has it), and the pipeline's own trail.
"""

from __future__ import annotations

import dataclasses

from ._paste import tidy_paste
from ._text import clip, decode
from .classify import Classification, classify, default_rules
from .host import parse_host
from .parse import HINTS, detect_family, parse_text, reader_name
from .record import CrashRecord
from .rules import RuleSet
from .signature import meaningful_frames

__all__ = ["Explanation", "explain"]


@dataclasses.dataclass(frozen=True)
class Explanation:
    """One report explained.

    Attributes:
        family: the format family detection picked (one of :data:`~kit.crash.parse.HINTS`,
            ``android``, or ``host`` for ``--signal``).
        why: the marks that picked it (or that a hint or a signal skipped detection).
        record: the parsed record.
        classification: its classification.
        lines: the whole explanation as text lines (what the CLI prints).
    """

    family: str
    why: str
    record: CrashRecord
    classification: Classification
    lines: tuple[str, ...]


def _fields(record: CrashRecord) -> list[str]:
    signal = " ".join(dict.fromkeys(
        x for x in (record.exception, record.signal_name, record.code) if x)) or "none"
    out = [f"format: {record.format} (platform {record.platform}, source {record.source}, "
           f"kind {record.kind})",
           f"signal: {signal}" + (f", fault address {record.fault_address}"
                                  if record.fault_address else "")]
    for name in ("process", "pid", "tid", "thread_name", "abort_message", "message", "cause",
                 "root_cause"):
        value = getattr(record, name)
        if value is not None:
            out.append(f"{name}: {clip(str(value).splitlines()[0] if str(value) else value, 160)}")
    return out


def explain(data: str | bytes, rules: RuleSet | None = None, hint: str | None = None,
            signal: int | None = None, sign_by: str = "exception") -> Explanation:
    """Detect, parse and classify ``data`` and say why at each step.

    Args:
        data: the report (text or bytes), as given to :func:`~kit.crash.parse_text`.
        rules: the rules (``None``: the shipped ones).
        hint: a format family, as for :func:`~kit.crash.parse_text`.
        signal: read ``data`` as host workload output that died by this signal
            (:func:`~kit.crash.parse_host`) instead.
        sign_by: as for :func:`~kit.crash.classify`.

    Returns:
        An :class:`Explanation`. Never raises for bad report data.
    """
    rules = rules if rules is not None else default_rules()
    text, _ = decode(data)
    text, _ = tidy_paste(text)
    if signal is not None:
        family, why = "host", f"read as host workload output (died by signal {signal})"
        record = parse_host(signal, data)
    elif hint is not None and hint in HINTS:
        family, why = hint, f"hint {hint!r}: detection skipped"
        record = parse_text(data, hint=hint)
    else:
        family, why = detect_family(text) if text.strip() else ("unknown", "empty input")
        record = parse_text(data, hint=hint)
    result = classify(record, rules, sign_by=sign_by)
    lines = [f"detected: {family}: {why}", f"reader: {reader_name(family, record)}"]
    lines += _fields(record)
    frames, _ = meaningful_frames(record, rules)
    lines.append(f"frames: {len(record.frames)} read, {len(frames)} meaningful"
                 + (": " + " | ".join(clip(f.name, 60) for f in frames[:5]) if frames else ""))
    lines += [f"note: {n}" for n in record.notes]
    for rule in rules.rules:
        matched, checks = rule.explain(record, frames)
        fired = "fired" if rule.id == result.rule_id else (
            "would match, but an earlier rule decided" if matched else "did not fire")
        lines.append(f"rule {rule.id} ({rule.crash_class}): {fired}")
        lines += [f"  {line}" for line in checks]
    lines += [f"trail: {line}" for line in result.trail]
    lines.append(f"result: {result.crash_class.value}"
                 + (f" (rule {result.rule_id})" if result.rule_id else "")
                 + (f", mechanism of {result.mechanism}" if result.mechanism else "")
                 + f"; signature {result.signature}")
    return Explanation(family=family, why=why, record=record, classification=result,
                       lines=tuple(lines))
