"""Argument types and option groups shared by the ``coldstart`` commands: numbers with units,
rates, and the campaign and ``--until-verdict`` option families of ``coldstart run``.

Each type raises :class:`argparse.ArgumentTypeError`, which argparse prints as one line with
exit code 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..analysis.sequential import InterleavedRule, StopRule
from ..analysis.verdict import DEFAULT_SIGNATURE, MIN_FRACTION, VerdictSettings
from ..campaign.meta import RuleMeta
from ..campaign.session import RuleRequest
from ..errors import UsageError
from ..targets.argtypes import number as _number
from ..targets.argtypes import positive_float as _positive_float
from ..targets.argtypes import positive_int as _positive_int


def fraction_arg(text: str, zero_allowed: bool = False) -> float:
    """argparse type for a rate or an error rate: a number in ``[MIN_FRACTION, 1)`` (or 0
    with ``zero_allowed``, for a true rate).

    Raises:
        argparse.ArgumentTypeError: not a number, or out of range (argparse prints it).
    """
    value = _number(text)
    if zero_allowed and not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a rate in [0, 1), e.g. 0 or 0.01")
    if not zero_allowed and not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction in (0, 1), e.g. 0.05")
    if 0.0 < value < MIN_FRACTION:  # no launch count could show it: the plans overflow
        raise argparse.ArgumentTypeError(f"{text} is below {MIN_FRACTION:g}, the smallest "
                                         f"rate any number of launches can show")
    return value


def add_campaign_options(parser: argparse.ArgumentParser, default_timeout_s: float,
                         default_launches: int = 20) -> None:
    """Add ``--launches --scenario --label --out --timeout --resume --max-attempts --json``
    and the ``--until-verdict`` family (:mod:`kit.analysis.sequential`)."""
    from ..scenario import KEYS_HELP

    parser.epilog = KEYS_HELP
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    group = parser.add_argument_group("campaign")
    group.add_argument("--launches", type=_positive_int, default=None, metavar="N",
                       help=f"cold launches to make (default {default_launches}; with --resume, "
                            f"the campaign's own)")
    parser.set_defaults(default_launches=default_launches)
    group.add_argument("--scenario", default="", metavar="Q",
                       help="scenario as coldstart://run?..., k=v&k=v or k=v,k=v (default: "
                            "the production shape, concurrent x3 xnnpack,cpu)")
    group.add_argument("--label", default=None, metavar="L",
                       help="build label, e.g. baseline or patched (default: the mode)")
    group.add_argument("--out", default=None, metavar="DIR",
                       help="campaign directory (default: runs/<label>)")
    group.add_argument("--timeout", type=_positive_float, default=None,
                       metavar="S", help=f"seconds before a launch counts as hung "
                                         f"(default {default_timeout_s:g}; with --resume, the "
                                         f"campaign's)")
    parser.set_defaults(default_timeout_s=default_timeout_s)
    group.add_argument("--resume", action="store_true",
                       help="finish an interrupted campaign in --out")
    group.add_argument("--max-attempts", type=_positive_int, default=3, metavar="K",
                       help="tries per launch slot when the infrastructure fails (default 3)")
    group.add_argument("--infra-budget", type=_positive_int, default=None, metavar="N",
                       help="infra errors this run may have in all before it stops (default: "
                            "half the planned launches plus 10); each retry waits first, "
                            "1 s doubling up to 30 s")
    group.add_argument("--json", action="store_true",
                       help="print the records of this run as JSON lines on stdout")
    add_until_verdict_options(parser)


#: Defaults of the rule's options on ``coldstart run`` (``None`` there means "not given").
RULE_DEFAULTS: dict[str, Any] = {"signature": DEFAULT_SIGNATURE, "alpha": 0.05,
                                 "ceiling": 0.05, "beta": 0.2, "design_rate": None}


def add_until_verdict_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--until-verdict BASELINE_DIR`` and its settings to a ``coldstart run`` parser
    (the same ``--signature``/``--alpha``/``--ceiling`` as ``coldstart compare``). They
    default to ``None`` so that :func:`settle_rule_args` can tell a given option from a
    default one."""
    group = parser.add_argument_group(
        "sequential stopping", "stop as soon as `coldstart compare BASELINE_DIR <this run>` "
        "is settled; the run's --launches is the most it will make, and the rule's thresholds "
        "are computed for it (`coldstart plan` suggests a number; docs/verdict.md)")
    group.add_argument("--until-verdict", metavar="BASELINE_DIR", default=None,
                       help="the finished baseline campaign to compare against")
    group.add_argument("--signature", default=None,
                       help="target crash class, race-witnessed or any-crash "
                            f"(default {DEFAULT_SIGNATURE})")
    group.add_argument("--alpha", type=fraction_arg, default=None,
                       help="false-fixed bound and test level (default 0.05)")
    group.add_argument("--ceiling", type=fraction_arg, default=None,
                       help="rate the candidate must be shown below (default 0.05)")
    add_design_options(group, default_beta=None)


def add_design_options(parser: argparse.ArgumentParser | Any, prefix: str = "",
                       default_beta: float | None = 0.2) -> None:
    """Add the sequential rule's own settings, ``--beta`` and ``--design-rate``, to a parser
    or argument group (``coldstart run``'s and ``coldstart plan``'s); ``prefix`` starts
    their help texts."""
    parser.add_argument("--beta", type=fraction_arg, default=default_beta,
                        help=f"{prefix}chance of missing fixed when the candidate is at the "
                             f"design rate (default 0.2)")
    parser.add_argument("--design-rate", type=fraction_arg, default=None,
                        help=f"{prefix}candidate rate the rule is tuned for (default "
                             f"ceiling/4)")


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def rule_from_args(args: argparse.Namespace, kept: RuleMeta | None, out: Any,
                   launches: int | None = None) -> RuleRequest | None:
    """The ``--until-verdict`` rule of parsed ``coldstart run`` arguments.

    On resume (``kept``: the campaign's rule, or ``None`` for a campaign without one) the
    settings left out are the campaign's, and a setting given must match it; without
    ``--until-verdict`` and without a kept rule, a rule setting is refused (it would be
    unused). The baseline build of an interleaved run is the target CLI's business
    (``baseline_config_from_args``), added by the caller.

    Raises:
        UsageError: a rule setting without a rule, another rule than the campaign's, or
            other ``--launches`` than the kept rule's thresholds were computed for.
    """
    given = {key: getattr(args, key, None) for key in RULE_DEFAULTS}
    baseline = getattr(args, "until_verdict", None)
    if kept is None:
        if baseline is None:
            named = [key for key, value in given.items() if value is not None]
            if named:
                raise UsageError(f"{_flag(named[0])} only applies with --until-verdict",
                                 f"add --until-verdict BASELINE_DIR, or give "
                                 f"{_flag(named[0])} to `coldstart compare` after the run")
            return None
        if getattr(args, "resume", False):
            raise UsageError(f"cannot resume {out} under --until-verdict: it was started "
                             f"without a rule", "resume without it, or start a new campaign")
        if not str(baseline).strip():
            raise UsageError("--until-verdict is empty", "give the baseline campaign's "
                                                         "directory")
        values = {k: (v if v is not None else RULE_DEFAULTS[k]) for k, v in given.items()}
        from ..analysis.verdict import check_signature

        check_signature(values["signature"])
        return RuleRequest(baseline=Path(baseline),
                           settings=VerdictSettings(signature=values["signature"],
                                                    alpha=values["alpha"],
                                                    ceiling=values["ceiling"]),
                           beta=values["beta"], design_rate=values["design_rate"])
    before = {"until_verdict": str(Path(kept.baseline).resolve()), "signature": kept.signature,
              "alpha": kept.alpha, "ceiling": kept.ceiling, "beta": kept.beta,
              "design_rate": kept.design_rate}
    for key, value in {"until_verdict": baseline, **given}.items():
        if value is None:
            continue
        now = str(Path(value).resolve()) if key == "until_verdict" else value
        if now != before[key]:
            raise UsageError(f"cannot resume {out} under another rule: its {_flag(key)} was "
                             f"{before[key]!r}, now {now!r}", "resume without the "
                             "--until-verdict options, or start a new campaign")
    if launches is not None and kept.max_launches is not None and launches != kept.max_launches:
        raise UsageError(f"cannot resume {out} with --launches {launches}: its rule's "
                         f"thresholds are for {kept.max_launches}", "resume without --launches")
    return RuleRequest(baseline=Path(kept.baseline),
                       settings=VerdictSettings(signature=kept.signature, alpha=kept.alpha,
                                                ceiling=kept.ceiling),
                       beta=kept.beta, design_rate=kept.design_rate)


def stop_rule_from_args(args: argparse.Namespace, target: str | None = None
                        ) -> StopRule | None:
    """The :class:`~kit.analysis.sequential.StopRule` for ``--until-verdict BASELINE_DIR``
    (``None`` without it) against a finished baseline, for a run on ``target``.

    Raises:
        UsageError: bad settings, a missing baseline, one of another target, or one without
            a positive control.
    """
    from ..campaign.session import stop_rule_for

    rule = rule_from_args(args, None, getattr(args, "out", None))
    if rule is None:
        return None
    return stop_rule_for(rule, target, args.launches)


def interleaved_rule_from_args(args: argparse.Namespace) -> InterleavedRule | None:
    """The :class:`~kit.analysis.sequential.InterleavedRule` for a run that makes both
    builds (``None`` without ``--until-verdict``), with exact thresholds for
    ``args.launches`` per build. Raises UsageError for bad settings."""
    rule = rule_from_args(args, None, getattr(args, "out", None))
    if rule is None:
        return None
    return InterleavedRule(rule.design(args.launches), rule.settings)
