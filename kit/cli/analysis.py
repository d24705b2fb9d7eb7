"""``coldstart compare``, ``coldstart plan`` and ``coldstart report``: the verdict, launch
planning and reports (issue #4; see docs/verdict.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..campaign import iter_campaign_dirs
from ..campaign.options import add_event_option, fraction_arg
from .run import check_directory_arg, stderr_console
from .._bounded import check_writable_entries, describe_path
from ..errors import ExitCode, UsageError
from ..analysis.scan import scan_campaign
from ..store.store import load_campaign
from ..analysis.verdict import DEFAULT_SIGNATURE, Comparison, Verdict

__all__ = ["register", "fail_verdicts"]

_COLOURS = {Verdict.FIXED: "green", Verdict.REMOVED: "green", Verdict.NOT_FIXED: "red",
            Verdict.NOT_REMOVED: "red", Verdict.INCONCLUSIVE: "yellow"}


def _rate_or_zero(text: str) -> float:
    """argparse type for a true rate that may be 0: a number in ``[0, 1)``."""
    return fraction_arg(text, zero_allowed=True)


def _settings_options(parser: argparse.ArgumentParser, *, signature: bool = True,
                      from_rule: bool = False) -> None:
    """Add ``--event --alpha --ceiling --power``; with ``from_rule`` the first three
    default to ``None`` (resolved by :func:`kit.analysis.pair.resolve_settings`)."""
    also = ", or the candidate's --until-verdict rule" if from_rule else ""
    if signature:
        add_event_option(parser, None if from_rule else DEFAULT_SIGNATURE,
                         "the counted event: a crash class, any-crash, race-witnessed or "
                         f"race-detected (default {DEFAULT_SIGNATURE}{also})")
    parser.add_argument("--alpha", type=fraction_arg, default=None if from_rule else 0.05,
                        help="test level; the candidate's bound is one-sided at 1-alpha "
                             f"(default 0.05{also})")
    parser.add_argument("--ceiling", type=fraction_arg, default=None if from_rule else 0.05,
                        help=f"rate the candidate must be shown below (default 0.05{also})")
    parser.add_argument("--power", type=fraction_arg, default=0.8,
                        help="power for launch planning (default 0.8)")


def register(commands: argparse._SubParsersAction, run_targets: argparse._SubParsersAction
             ) -> None:
    """Add ``compare``, ``plan`` and ``report``."""
    compare = commands.add_parser(
        "compare", help="baseline vs candidate: fixed, not-fixed or inconclusive",
        description="Compare two campaigns of the same target and state a verdict with "
                    "exact tests, a positive control and a ceiling (docs/verdict.md). Writes "
                    "summary.json, junit.xml, report.html and summary.md.")
    compare.add_argument("baseline", metavar="BASELINE", help="baseline campaign directory")
    compare.add_argument("candidate", metavar="CANDIDATE", help="candidate campaign directory")
    _settings_options(compare, from_rule=True)
    compare.add_argument("--fail-on", choices=("not-fixed", "inconclusive"), default=None,
                         help="exit 1 on this verdict or a worse one (inconclusive: anything "
                              "but fixed); default: exit 0 whatever the verdict")
    compare.add_argument("--out", metavar="DIR", default=None,
                         help="where the reports go (default: CANDIDATE/comparison)")
    compare.add_argument("--no-reports", action="store_true", help="print only")
    compare.add_argument("--json", action="store_true",
                         help="print summary.json's content instead of tables")
    compare.set_defaults(func=_compare)

    plan = commands.add_parser(
        "plan", help="launches needed for a verdict, and the sequential stopping rule",
        description="Launches per build for a fixed-size campaign pair, and what `coldstart "
                    "run ... --until-verdict` would need at several true candidate rates.")
    source = plan.add_mutually_exclusive_group(required=True)
    source.add_argument("--baseline-rate", type=fraction_arg, metavar="RATE",
                        help="the baseline's expected target rate, e.g. 0.5")
    source.add_argument("--baseline", metavar="DIR",
                        help="take the baseline's rate from this campaign")
    add_event_option(plan, None, "the counted event when --baseline is given (default "
                                 f"{DEFAULT_SIGNATURE})")
    _settings_options(plan, signature=False)
    plan.add_argument("--candidate-rate", type=_rate_or_zero, default=0.0,
                      help="the candidate's assumed true rate (default 0: the fix works)")
    from ..campaign.options import add_design_options

    add_design_options(plan, prefix="sequential rule: ")
    plan.add_argument("--json", action="store_true", help="print JSON")
    plan.set_defaults(func=_plan)

    report = commands.add_parser(
        "report", help="write summary.json, junit.xml, report.html and summary.md",
        description="Reports for one or more campaigns (a directory holding campaigns is "
                    "searched one level down). For a verdict use `coldstart compare`.")
    report.add_argument("dirs", metavar="DIR", nargs="+", help="campaign directories")
    report.add_argument("--out", metavar="DIR", default=None,
                        help="where the reports go (default: DIR/report for one campaign, "
                             "else ./coldstart-report)")
    add_event_option(report, None, "a counted event to plot per build (e.g. "
                                   "xnnpack-allocator-uaf)")
    report.add_argument("--quiet", action="store_true", help="do not print the summaries")
    report.set_defaults(func=_report)


def fail_verdicts(fail_on: str | None) -> tuple[Verdict, ...]:
    """The verdicts that make ``compare`` exit 1: ``not-fixed`` -> (not-fixed,
    not-removed), ``inconclusive`` -> those and inconclusive (anything but fixed or
    removed), ``None`` -> ()."""
    if fail_on == "not-fixed":
        return (Verdict.NOT_FIXED, Verdict.NOT_REMOVED)
    if fail_on == "inconclusive":
        return (Verdict.INCONCLUSIVE, Verdict.NOT_FIXED, Verdict.NOT_REMOVED)
    return ()


def _console() -> Any:
    from .progress import stdout_console

    return stdout_console()


def print_comparison(comparison: Comparison, console: Any) -> None:
    """The verdict, its reason and the figures behind it, as rich output (crash text is
    printed as plain text, never as markup)."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    dec = comparison.decision
    s = comparison.settings
    colour = _COLOURS[dec.verdict]
    body = Text()
    body.append(f"{dec.verdict.value.upper()}", style=f"bold {colour}")
    body.append(f"  target {s.signature} ({dec.tier} tier)")
    if dec.kind != "build":
        body.append(f"  one build: {dec.change}" if dec.change else "  one build, no change")
    elif dec.change:
        body.append(f"  two builds: {dec.change}")
    body.append("\n")
    body.append(dec.reason[0].upper() + dec.reason[1:] + ".")
    if dec.scope:
        body.append(f"\nWhat the {dec.tier} tier sees: ", style="bold")
        body.append(dec.scope + ".")
    if dec.advice:
        body.append("\nNext: ", style="bold")
        body.append(dec.advice + ".")
    # a box wraps its text at the console's width, piped too (soft wrap would crop it)
    console.print(Panel(body, title="coldstart compare", border_style=colour), soft_wrap=False)
    b, c = comparison.baseline, comparison.candidate
    table = Table(show_header=True)
    table.add_column("")
    table.add_column(Text(f"baseline: {b.label}"))
    table.add_column(Text(f"candidate: {c.label}"))
    table.add_row("scenario", Text(b.scenario_description or b.scenario),
                  Text(c.scenario_description or c.scenario))
    table.add_row("counted launches", str(b.counted), str(c.counted))
    table.add_row("infra errors (not counted)", str(b.infra_errors), str(c.infra_errors))
    table.add_row(Text(s.signature), b.rate.text(), c.rate.text())
    table.add_row(f"upper bound ({1 - s.alpha:.0%}, one-sided)", f"{b.upper:.2%}",
                  f"{c.upper:.2%}")
    console.print(table)
    from ..analysis.verdict import p_text

    if dec.test is not None:
        assert dec.p is not None  # a decision with a test has its p
        line = (f"one-sided p = {p_text(dec.p, s.alpha)} (Fisher "
                f"{p_text(dec.test.fisher_p, s.alpha)}")
        if dec.test.boschloo_p is not None:
            line += f", Boschloo {p_text(dec.test.boschloo_p, s.alpha)}"
        line += ")"
        if comparison.stratified_p is not None:
            line += f"; stratified over devices p = {p_text(comparison.stratified_p)}"
        if dec.e_value is not None:
            line += f"; anytime-valid e-value {dec.e_value:.3g} (sequential rule)"
        console.print(Text(line + f"; alpha {s.alpha:g}, ceiling {s.ceiling:.2%}"))
    if comparison.devices:
        dev = Table(title="Per device", title_justify="left")
        for col in ("device", "baseline", "candidate", "Fisher p"):
            dev.add_column(col)
        for d in comparison.devices:
            dev.add_row(Text(d.device), d.baseline.text(), d.candidate.text(),
                        "-" if d.fisher_p is None else p_text(d.fisher_p))
        console.print(dev)
    for m in comparison.moved:
        flag = "rose significantly" if m.significant else "rose (not significant)"
        console.print(Text(f"moved: {m.key} {flag}: {m.baseline.text()} -> "
                           f"{m.candidate.text()} (Holm p = {p_text(m.p_holm)})",
                           style="red" if m.significant else ""))
    for note in comparison.notes:
        console.print(Text(f"note: {note}", style="yellow"))


def _compare(args: argparse.Namespace) -> int:
    from ..analysis.pair import compare_pair
    from ..report import report_dict, write_reports

    for path in (args.baseline, args.candidate):
        if not Path(path).is_dir():
            raise UsageError(f"campaign directory {path} {describe_path(path)}",
                             "give the --out directories of two `coldstart run` campaigns")
    from ..report import check_report_dir

    if args.out:
        check_directory_arg(Path(args.out), "--out")
    # campaign.json only: the records are streamed, once per campaign
    baseline = load_campaign(args.baseline, stream=True)
    candidate = load_campaign(args.candidate, stream=True)
    out = Path(args.out) if args.out else candidate.path / "comparison"
    if not args.no_reports:
        check_report_dir(out)  # before the verdict: a refused --out changes nothing
    pair = compare_pair(baseline, candidate, signature=args.signature, alpha=args.alpha,
                        ceiling=args.ceiling, power=args.power)
    comparison = pair.comparison
    failing = fail_verdicts(args.fail_on)
    if args.json:
        data = report_dict(pair.summaries(), comparison, fail_on=failing)
        from ..report.json_report import dumps

        print(dumps(data), end="")
    else:
        print_comparison(comparison, _console())
    if not args.no_reports:
        paths = write_reports(out, [baseline, candidate], comparison, fail_on=failing,
                              scans=pair.scans)
        if not args.json:
            print(f"reports: {', '.join(str(p) for p in paths.values())}")
    return int(ExitCode.FAILED) if comparison.verdict in failing else int(ExitCode.OK)


#: seconds plan's rule search runs before it gives the best rule found (issue #46: a 2%
#: baseline ran for more than 900 s)
PLAN_BUDGET_S = 180.0


def _plan(args: argparse.Namespace) -> int:
    from ..analysis.plan import beta_option
    from ..analysis.planning import plan_run

    planned = plan_run(baseline=args.baseline, baseline_rate=args.baseline_rate,
                       event=args.signature, ceiling=args.ceiling, alpha=args.alpha,
                       power=args.power, candidate_rate=args.candidate_rate, beta=args.beta,
                       design_rate=args.design_rate, log=stderr_console().print,
                       budget_s=PLAN_BUDGET_S)
    result, p_b = planned.plan, planned.baseline_rate
    plan, clean_plan, cap, design = result.fixed, result.clean_fixed, result.cap, result.design
    operating, see = result.operating, result.baseline_launches_to_see
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    from rich.table import Table

    console = _console()
    console.print(f"Baseline rate {p_b:.6g}, ceiling {args.ceiling:.3g}, alpha "
                  f"{args.alpha:g}, power {args.power:.0%}, candidate's true rate "
                  f"{args.candidate_rate:g}")
    console.print(f"Fixed-size design: [bold]{plan.baseline_launches}[/bold] baseline and "
                  f"[bold]{plan.candidate_launches}[/bold] candidate launches (power "
                  f"{plan.achieved_power:.1%}; the baseline reproduces the target at least "
                  f"once with {plan.positive_control_probability:.1%}).")
    console.print(f"{plan.clean_bound_launches} clean candidate launches bound its rate "
                  f"below {args.ceiling:.3g} at {1 - args.alpha:.0%}; {see} baseline "
                  f"{'launch sees' if see == 1 else 'launches see'} the target at least once "
                  f"with {1 - args.alpha:.0%} probability.")
    beta = beta_option(design.beta, args.beta)
    variant = " --stop-at-first-below" if design.stop_at_first_below else ""
    console.print(f"\nSequential rule (`coldstart run ... --launches {cap}{beta}{variant} "
                  f"--until-verdict BASELINE_DIR`): {design.describe()}.")
    if result.baseline_launches is not None and result.power is not None and \
            result.expected_launches is not None:
        ref = result.reference
        assert ref is not None  # planned with the power: its fixed-size reference too
        staged = ""
        if result.baseline_stage is not None:
            n1, r = result.baseline_stage
            staged = (f" staged by design (`coldstart run ... --launches "
                      f"{result.baseline_launches} --stage {n1}:{r} --event EVENT`: it stops "
                      f"after {n1} launch{'' if n1 == 1 else 'es'} with at least {r} "
                      f"event{'' if r == 1 else 's'})")
        console.print(f"Designed for a finished baseline of {'at most ' if staged else ''}"
                      f"{result.baseline_launches} launches{staged}: with a candidate at {design.design_rate:g} it ends fixed "
                      f"with {result.power:.1%} (exact; the fixed-size design "
                      f"{ref.baseline_launches} + {ref.candidate_launches} at that rate: "
                      f"{result.reference_power:.1%}) after {result.expected_launches:.0f} "
                      f"launches on average ({result.expected_launches / ref.total_launches:.1%}"
                      f" of its {ref.total_launches}), at most "
                      f"{result.baseline_launches + cap}.")
    table = Table(title=f"candidate side (its rate against the ceiling), at most {cap} "
                        f"launches, exact", title_justify="left")
    for col in ("true rate", "mean launches", "P(stop: below)", "P(stop: not below)",
                "P(no stop)", "P(shown below)"):
        table.add_column(col, justify="right")
    for o in operating:
        table.add_row(f"{o.true_rate:.4g}", f"{o.expected_launches:.1f}", f"{o.p_below:.3f}",
                      f"{o.p_not_below:.3f}", f"{o.p_undecided:.3f}", f"{o.p_fixed:.3f}")
    console.print(table)
    if design.finished:
        how = ("stops at its first 'below the ceiling' and says fixed there"
               if design.stop_at_first_below else
               "goes on while it is below the ceiling and says fixed at the first launch")
        console.print(f"The run {how} where Fisher's test against the baseline is within the "
                      "rule's exact level (plan chose this variant of the rule for its fewer "
                      "launches): that keeps the false-fixed rate at 0.95 alpha whatever the "
                      "baseline's rate (docs/verdict.md). Interleaved runs compare by the "
                      f"anytime-valid e-value (>= {1 / args.alpha:g}) instead.")
    else:
        console.print("The run stops with fixed only when compare's exact test against the "
                      "baseline is significant and the rule's anytime-valid comparison "
                      f"(e-value >= {1 / args.alpha:g}) holds too: that keeps the false-fixed "
                      f"rate at {args.alpha:g} whatever the baseline's rate (docs/verdict.md).")
    if clean_plan.candidate_launches > design.clean_launches():
        console.print(f"Against this baseline that test needs about "
                      f"{clean_plan.candidate_launches} clean candidate launches (the "
                      f"fixed-size design for a clean candidate), more than the "
                      f"{design.clean_launches()} the candidate side needs: expect a clean "
                      f"candidate to stop near there.")
    if p_b <= args.ceiling:
        console.print(f"The baseline's rate {p_b:.3g} is not above the ceiling: an unchanged "
                      f"candidate is below the ceiling too (see the table), and only the exact "
                      f"test keeps it from fixed.")
    return 0


def _report(args: argparse.Namespace) -> int:
    from ..report import write_reports
    from ..analysis.summary import render_summary, summarize
    from ..analysis.verdict import check_signature

    if args.signature:
        check_signature(args.signature)
    missing = [d for d in args.dirs if not Path(d).is_dir()]
    if missing:
        raise UsageError(f"{missing[0]} {describe_path(missing[0])}",
                         "give campaign directories")
    from ..report import check_report_dir

    if args.out:
        check_directory_arg(Path(args.out), "--out")
    dirs = iter_campaign_dirs(args.dirs)
    if not dirs:
        raise UsageError(f"no campaign found in {', '.join(args.dirs)}",
                         "give directories made by `coldstart run` (with campaign.json)")
    campaigns = [load_campaign(d, stream=True) for d in dirs]
    if args.out:
        out = Path(args.out)
    elif len(campaigns) == 1:
        out = campaigns[0].path / "report"
        check_writable_entries(campaigns[0].path, ["report/"])  # never through a link
    else:
        out = Path("coldstart-report")
    check_report_dir(out)
    scans = [scan_campaign(c, args.signature) for c in campaigns]
    if not args.quiet:
        console = _console()
        for campaign, scan in zip(campaigns, scans):
            render_summary(summarize(campaign, scan=scan), console)
    paths = write_reports(out, campaigns, signature=args.signature, scans=scans)
    print(f"reports: {', '.join(str(p) for p in paths.values())}")
    return 0
