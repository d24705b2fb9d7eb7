"""Argument types and option groups shared by the ``coldstart`` commands: numbers with units,
rates, and the campaign and ``--until-verdict`` option families of ``coldstart run``.

Each type raises :class:`argparse.ArgumentTypeError`, which argparse prints as one line with
exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..analysis.verdict import DEFAULT_SIGNATURE, MIN_FRACTION
from ..store.meta import RuleMeta
from .request import RULE_DEFAULTS as _RULE_DEFAULTS
from .request import Given, resolve_rule
from .request import RuleRequest
from ..argtypes import number as _number
from ..argtypes import positive_float as _positive_float
from ..argtypes import positive_int as _positive_int


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
    group.add_argument("--stage", type=stage_arg, default=None, metavar="N:R",
                       help="a baseline staged by design: stop after N launches when they "
                            "show at least R of --event, else go on to --launches (`coldstart "
                            "plan` prints the stage; docs/verdict.md)")
    add_until_verdict_options(parser)


def stage_arg(text: str) -> tuple[int, int]:
    """argparse type for ``--stage N:R`` (:func:`kit.analysis.stage.parse_stage`).

    Raises:
        argparse.ArgumentTypeError: not ``N:R`` with ``1 <= R <= N`` (argparse prints it).
    """
    from ..analysis.stage import parse_stage
    from ..argtypes import MAX_LAUNCHES

    try:
        n, r = parse_stage(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if n > MAX_LAUNCHES:
        raise argparse.ArgumentTypeError(f"--stage {n}:{r}: at most {MAX_LAUNCHES} launches")
    return n, r


#: Defaults of the rule's options on ``coldstart run`` (``None`` there means "not given").
RULE_DEFAULTS = _RULE_DEFAULTS


class _DeprecatedAlias(argparse.Action):
    """An old spelling of an option: stores as the new one does, after a one-line notice on
    stderr."""

    def __init__(self, *args: Any, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stderr.write(f"coldstart: {option_string} is deprecated, use {self.new} "
                         f"(the same counted event)\n")
        setattr(namespace, self.dest, values)


def add_event_option(parser: argparse.ArgumentParser | Any, default: str | None,
                     help: str) -> None:
    """Add ``--event`` (the counted event, docs/design.md: a crash class, ``any-crash``,
    ``race-witnessed``, ``race-detected``) to a parser or argument group, and its old
    spelling ``--signature``, hidden, which still works and says it is deprecated. Both
    store to ``args.signature``, the field of
    :class:`~kit.analysis.decide.VerdictSettings` that holds the counted event."""
    parser.add_argument("--event", dest="signature", default=default, help=help)
    parser.add_argument("--signature", dest="signature", default=default,
                        action=_DeprecatedAlias, new="--event", help=argparse.SUPPRESS)


def add_until_verdict_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--until-verdict BASELINE_DIR`` and its settings to a ``coldstart run`` parser
    (the same ``--event``/``--alpha``/``--ceiling`` as ``coldstart compare``). They
    default to ``None`` so that :func:`settle_rule_args` can tell a given option from a
    default one."""
    group = parser.add_argument_group(
        "sequential stopping", "stop as soon as `coldstart compare BASELINE_DIR <this run>` "
        "is settled; the run's --launches is the most it will make, and the rule's thresholds "
        "are computed for it (`coldstart plan` suggests a number; docs/verdict.md)")
    group.add_argument("--until-verdict", metavar="BASELINE_DIR", default=None,
                       help="the finished baseline campaign to compare against")
    add_event_option(group, None, "the counted event: a crash class, any-crash, "
                                  "race-witnessed or race-detected "
                                  f"(default {DEFAULT_SIGNATURE})")
    group.add_argument("--alpha", type=fraction_arg, default=None,
                       help="false-fixed bound and test level (default 0.05)")
    group.add_argument("--ceiling", type=fraction_arg, default=None,
                       help="rate the candidate must be shown below (default 0.05)")
    add_design_options(group, default_beta=None)
    group.add_argument("--stop-at-first-below", action="store_true", default=None,
                       help="against a finished baseline with --launches: stop at the first "
                            "launch below the ceiling, fixed or inconclusive, instead of going "
                            "on until the comparison holds (`coldstart plan` says which "
                            "variant needs fewer launches)")


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


def given_from_args(args: argparse.Namespace) -> Given:
    """What parsed ``coldstart run`` arguments give of a campaign's own values (``None``:
    left out), for :func:`kit.campaign.request.resolve_request`."""
    return Given(scenario=getattr(args, "scenario", "") or "", label=getattr(args, "label", None),
                 launches=getattr(args, "launches", None),
                 timeout_s=getattr(args, "timeout", None),
                 until_verdict=getattr(args, "until_verdict", None),
                 rule={key: getattr(args, key, None) for key in RULE_DEFAULTS},
                 stage=getattr(args, "stage", None))


def rule_from_args(args: argparse.Namespace, kept: RuleMeta | None, out: Any,
                   launches: int | None = None) -> RuleRequest | None:
    """The ``--until-verdict`` rule of parsed ``coldstart run`` arguments
    (:func:`kit.campaign.request.resolve_rule`; ``kept``: the resumed campaign's rule)."""
    return resolve_rule(given_from_args(args), kept, out,
                        resume=kept is not None or bool(getattr(args, "resume", False)),
                        launches=launches)
