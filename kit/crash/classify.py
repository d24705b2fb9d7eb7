"""Classification: a pipeline of small rules that turns a crash record into a crash class.

Like Socorro's signature generator (siggen), the pipeline is an ordered list of small steps;
each looks at the record, writes one line to the trail (``<step>: <what it saw>``) and either
decides a class or passes, so a report can show why a crash got its class. The first step
that decides ends the pipeline:

1. ``unparsed``: nothing was read (unknown format, or no signal, exception nor frame); a
   record whose kind the parser read (an ANR traces dump, a jetsam entry) is read;
   ``race``: a data-race report (ThreadSanitizer) touching a rule's ``race_frames`` is
   that defect's *mechanism*: noted (and :attr:`Classification.mechanism` set), not decided;
2. ``known-signatures``: the rules of the :class:`~kit.crash.rules.RuleSet` in order (the
   shipped #32461 rule first), each with its own sub-trail;
3. ``managed-death``: JS errors, ANRs, out-of-memory kills, uncaught Java exceptions
   (``abort``: the runtime ended the process on an error it detected);
4. ``native-abort``: SIGABRT / EXC_CRASH (with SIGABRT or no signal) / an abort message ->
   ``abort``;
5. ``native-crash``: any other native signal or exception -> ``other-native-crash`` (also
   for a native report with no frames);
6. ``fallback``: ``unparsed``, with the reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..payloads import CrashClass
from .record import CrashRecord
from .rules import RuleSet, load_rules
from .signature import NormalFrame, abort_frames, make_signature, meaningful_frames

__all__ = ["CrashClass", "Classification", "classify", "default_rules"]


@dataclasses.dataclass(frozen=True)
class Classification:
    """What :func:`classify` decided.

    Attributes:
        crash_class: one of :class:`CrashClass`.
        signature: normalised top frames (see :mod:`kit.crash.signature`), or
            ``EMPTY: <reason>``.
        rule_id: id of the known-signature rule that matched, or ``None``.
        trail: one line per pipeline step, in order (``<step>: <what it saw>``).
        mechanism: id of the rule whose defect's mechanism a data-race report shows (its
            ``race_frames``), or ``None``. A race is evidence of the mechanism tier, never
            a crash of the rule's class.
    """

    crash_class: CrashClass
    signature: str
    rule_id: str | None
    trail: tuple[str, ...]
    mechanism: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``crash_class`` as its string)."""
        return {"crash_class": self.crash_class.value, "signature": self.signature,
                "rule_id": self.rule_id, "trail": list(self.trail),
                "mechanism": self.mechanism}


@dataclasses.dataclass
class _Context:
    record: CrashRecord
    rules: RuleSet
    frames: list[NormalFrame]
    trail: list[str]
    rule_id: str | None = None
    unparsed_reason: str | None = None
    mechanism: str | None = None


_NATIVE_ABORTS = {"SIGABRT", "EXC_CRASH"}
_Step = tuple[str, Callable[[_Context], "CrashClass | None"]]


#: Kinds that a parser only sets when it recognised the death itself (an ANR traces dump,
#: a jetsam entry, a JS error): such a record is read even with no frame or message.
_DEATH_KINDS = ("anr", "oom", "js", "java")


def _unparsed(ctx: _Context) -> CrashClass | None:
    r = ctx.record
    if r.format == "unknown" and not (r.frames or r.signal_name or r.exception):
        why = r.notes[-1] if r.notes else "no known format"
        ctx.unparsed_reason = f"format unknown ({why})"
    elif r.kind in _DEATH_KINDS:
        pass  # the parser read the kind of death: the managed-death step decides
    elif not (r.frames or r.signal_name or r.exception or r.message or r.abort_message):
        ctx.unparsed_reason = "no signal, exception, message or frame was read"
    if ctx.unparsed_reason is not None:
        ctx.trail.append(f"unparsed: {ctx.unparsed_reason} -> unparsed")
        return CrashClass.UNPARSED
    ctx.trail.append(f"unparsed: no ({r.format}, kind {r.kind}, {len(r.frames)} frames)")
    return None


def _race(ctx: _Context) -> CrashClass | None:
    r = ctx.record
    said = " ".join(g for g in (r.exception, r.cause) if g)
    if "data race" not in said:
        return None
    names = [f.name for f in ctx.frames] + [
        n for n in r.notes if n.startswith(("other stack", "race location"))]
    for rule in ctx.rules.rules:
        hit = rule.race_hit(names)
        if hit is not None:
            ctx.mechanism = rule.id
            ctx.trail.append(f"race: the data race touches {hit!r}: the mechanism of "
                             f"{rule.issue or rule.id} (a race report is not a crash)")
            return None
    ctx.trail.append("race: a data race, on nothing a rule's race_frames name")
    return None


def _known_signatures(ctx: _Context) -> CrashClass | None:
    for rule in ctx.rules.rules:
        result = rule.evaluate(ctx.record, ctx.frames)
        for line in result.trail:
            ctx.trail.append(f"rule {rule.id}: {line}")
        if result.matched:
            ctx.rule_id = rule.id
            ctx.trail.append(f"rule {rule.id}: matched -> {rule.crash_class}")
            return CrashClass(rule.crash_class)
    if not ctx.rules.rules:
        ctx.trail.append("known-signatures: no rules loaded")
    return None


def _managed_death(ctx: _Context) -> CrashClass | None:
    kind = ctx.record.kind
    decided = {"js": CrashClass.JS_ERROR, "anr": CrashClass.ANR, "oom": CrashClass.OOM,
               "java": CrashClass.ABORT}.get(kind)
    if decided is not None:
        what = {"java": f"uncaught {ctx.record.exception or 'Java exception'} ended the "
                        "process"}.get(kind, f"kind {kind}")
        ctx.trail.append(f"managed-death: {what} -> {decided.value}")
    return decided


def _native_abort(ctx: _Context) -> CrashClass | None:
    r = ctx.record
    if r.kind != "native":
        return None
    sig = {g for g in (r.signal_name, r.exception) if g} & _NATIVE_ABORTS
    if r.source == "tombstone" and "Sanitizer: " in (r.exception or "") and r.code != "ABRT":
        # a sanitizer aborts the process after its report (Android's tombstone then says
        # SIGABRT): the report's error is the crash, not the abort
        sig.discard("SIGABRT")
    if r.signal_name not in (None, "SIGABRT"):
        # EXC_CRASH is Apple's "ended by a signal"; (SIGSEGV), (SIGKILL) ... is no abort
        sig.discard("EXC_CRASH")
    unsignalled = r.signal_name is None and r.exception is None
    plumbing = abort_frames(r) if unsignalled else []
    uncaught = (r.signal_name is None and (r.abort_message or "").startswith(
        "uncaught exception"))
    if sig or (r.abort_message and (unsignalled or uncaught)) or plumbing:
        why = (f"signal {'/'.join(sorted(sig))}" if sig else "abort message without a signal"
               if r.abort_message else "no signal in the report, but the top frames abort ("
               + ", ".join(dict.fromkeys(plumbing)) + ")")
        ctx.trail.append(f"native-abort: {why} -> abort")
        return CrashClass.ABORT
    return None


def _native_crash(ctx: _Context) -> CrashClass | None:
    r = ctx.record
    if r.kind != "native":
        return None
    what = r.exception or r.signal_name or "a native crash"
    if not r.frames:
        what += " with no frames"
    ctx.trail.append(f"native-crash: {what} -> other-native-crash")
    return CrashClass.OTHER_NATIVE_CRASH


def _fallback(ctx: _Context) -> CrashClass:
    why = ctx.record.notes[-1] if ctx.record.notes else f"kind {ctx.record.kind}"
    ctx.unparsed_reason = f"not a crash the kit can class ({why})"
    ctx.trail.append(f"fallback: {ctx.unparsed_reason} -> unparsed")
    return CrashClass.UNPARSED


_PIPELINE: tuple[_Step, ...] = (
    ("unparsed", _unparsed), ("race", _race), ("known-signatures", _known_signatures),
    ("managed-death", _managed_death), ("native-abort", _native_abort),
    ("native-crash", _native_crash))

_DEFAULT_RULES: RuleSet | None = None


def default_rules() -> RuleSet:
    """The shipped rules, loaded once per process."""
    global _DEFAULT_RULES
    if _DEFAULT_RULES is None:
        _DEFAULT_RULES = load_rules()
    return _DEFAULT_RULES


#: What a Java death's signature is built from: the outer exception (the default, as every
#: signature before issue #24) or its root cause (the last ``Caused by:``).
SIGN_BY = ("exception", "root-cause")


def classify(record: CrashRecord, rules: RuleSet | None = None,
             sign_by: str = "exception") -> Classification:
    """Class, signature and trail for one crash record.

    Args:
        record: any parser's output.
        rules: rules to use; ``None`` means the shipped ones (:func:`default_rules`).
        sign_by: one of :data:`SIGN_BY`. ``root-cause`` signs a Java death that has a root
            cause by that cause's type and frames (``CrashRecord.root_cause`` and
            ``cause_frames``); the class is decided by the record as read either way.

    Returns:
        A :class:`Classification`. Never raises for a record (a step that fails is noted
        in the trail and skipped, as siggen does).

    Raises:
        DataError: only when ``rules`` is ``None`` and the shipped rule files are broken.
    """
    rules = rules if rules is not None else default_rules()
    frames, trail = meaningful_frames(record, rules)
    signature, how = make_signature(record, frames)
    if sign_by == "root-cause" and record.root_cause and record.kind in ("java", "oom"):
        cause = dataclasses.replace(record, exception=record.root_cause.split(": ")[0],
                                    frames=record.cause_frames)
        cause_frames, _ = meaningful_frames(cause, rules)
        signature, how = make_signature(cause, cause_frames)
        how = f"the root cause {cause.exception}'s {how}"
    trail.append(f"signature: {how}")
    ctx = _Context(record=record, rules=rules, frames=frames, trail=trail)
    decided: CrashClass | None = None
    for name, step in _PIPELINE:
        try:
            decided = step(ctx)
        except Exception as exc:  # noqa: BLE001 - a broken step must not lose the record
            ctx.trail.append(f"{name}: step failed ({type(exc).__name__}: {exc}); skipped")
            continue
        if decided is not None:
            break
    if decided is None:
        decided = _fallback(ctx)
    if decided is CrashClass.UNPARSED and signature.startswith("EMPTY"):
        signature = f"EMPTY: {ctx.unparsed_reason}"
    return Classification(crash_class=decided, signature=signature, rule_id=ctx.rule_id,
                          trail=tuple(ctx.trail), mechanism=ctx.mechanism)
