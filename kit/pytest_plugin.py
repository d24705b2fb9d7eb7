"""pytest plugin ``coldstart`` (entry point ``pytest11``): run campaigns from a test module and
assert on their verdict, on a local target or a device farm.

Options (also ``coldstart_*`` ini keys, see :func:`pytest_addoption`):

* ``--coldstart-target "TARGET OPTIONS"`` - a ``coldstart run`` target with its options,
  exactly as on the command line (``"appium --server URL --platform android --caps
  caps.json"``, ``"ios-sim --udid U --app App.app"``); repeat it for several targets. Every
  test using the :func:`coldstart` fixture runs once per target, so pytest-xdist
  (``-n N --dist loadgroup``) shards the targets over workers, one device per worker group;
* ``--coldstart-launches N`` (default: the target's own), ``--coldstart-out DIR``
  (campaign directories; default: pytest's temporary directory), ``--coldstart-report-dir
  DIR`` (``summary.json``, ``junit.xml``, ``report.html``, ``summary.md`` of every campaign
  and comparison, from :mod:`kit.report`).

An ``appium`` target with ``--farm NAME`` (and its ``--farm-*`` settings) pulls the farm's
crash evidence at the end of each campaign, as ``coldstart run appium --farm`` does
(docs/farms.md); :attr:`CampaignResult.farm` is the pull's report.

Fixtures: :func:`coldstart` (a :class:`Coldstart` bound to the test's target) and
:func:`coldstart_target` (the :class:`TargetSpec`). Assertions use :mod:`kit.analysis.summary` and
:mod:`kit.analysis.verdict`; their failure messages give the rates, intervals and the verdict's
reason. Credentials in target options are redacted from test ids, messages and reports.

Targets are those of the registry (:mod:`kit.targets.registry`). A campaign is a
:class:`kit.campaign.session.CampaignRequest` built here: the spec's target options are read
by the target's own options module (``kit/targets/<t>/options.py``, the one the CLI uses),
everything else is set directly; heavy modules are imported when a campaign runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from .argtypes import MAX_LAUNCHES, positive_int

if TYPE_CHECKING:  # pragma: no cover
    from .campaign import Campaign
    from .analysis.summary import CampaignSummary
    from .analysis.verdict import Comparison

__all__ = ["TargetSpec", "Coldstart", "CampaignResult", "parse_target_spec"]

_ID_SAFE = re.compile(r"[^A-Za-z0-9._@-]+")
_ID_OPTIONS = ("--udid", "--device-name", "--platform")


@dataclasses.dataclass(frozen=True)
class TargetSpec:
    """One ``--coldstart-target``: ``argv`` (target name first) and a test ``id`` made of
    the target name and the ``--udid`` / ``--device-name`` / ``--platform`` values (never a
    URL, so never a credential)."""

    argv: tuple[str, ...]
    id: str

    @property
    def name(self) -> str:
        return self.argv[0]


def _plugin_targets() -> tuple[str, ...]:
    from .targets.registry import target_names

    return target_names()


def parse_target_spec(text: str, index: int = 0) -> TargetSpec:
    """Split a ``--coldstart-target`` value with shell rules (no shell runs).

    Raises:
        pytest.UsageError: empty, or not one of the targets the plugin can drive.
    """
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise pytest.UsageError(f"--coldstart-target {text!r}: {exc}") from None
    if not argv or argv[0] not in _plugin_targets():
        raise pytest.UsageError(f"--coldstart-target must start with one of "
                                f"{', '.join(_plugin_targets())}, not "
                                f"{argv[0] if argv else 'nothing'!r}")
    parts = [argv[0]]
    for opt in _ID_OPTIONS:
        if opt in argv[:-1]:
            parts.append(argv[argv.index(opt) + 1])
    ident = _ID_SAFE.sub("_", "-".join(parts))
    return TargetSpec(argv=argv, id=f"{ident}" if index == 0 else f"{ident}#{index}")


@dataclasses.dataclass
class CampaignResult:
    """A finished campaign: ``campaign`` (:class:`kit.campaign.Campaign`) and ``summary``
    (:class:`kit.analysis.summary.CampaignSummary`), with assertions."""

    campaign: "Campaign"
    summary: "CampaignSummary"
    reports: dict[str, Path]
    #: the farm evidence pull at the campaign's end (``--farm`` in the target's options:
    #: :class:`kit.farms.pull.PullReport`), else ``None``
    farm: Any = None

    @property
    def path(self) -> Path:
        return self.campaign.path

    def count(self, crash_class: str | None = None) -> tuple[int, int]:
        """``(crashes, counted launches)``: crashes of ``crash_class`` (any crash when
        ``None``) over launches that count (infra errors left out)."""
        counted = self.campaign.counted
        crashed = [r for r in counted if r.outcome.value == "crashed" and
                   (crash_class is None or r.crash_class == crash_class)]
        return len(crashed), len(counted)

    def assert_launched(self, minimum: int | None = None) -> None:
        """Fail unless at least ``minimum`` launches counted (default: all planned); infra
        errors are listed in the message."""
        want = self.summary.planned_launches if minimum is None else minimum
        if self.summary.counted < (want or 0):
            errors = "; ".join(sorted({str(r.error) for r in self.campaign.infra_errors}))
            pytest.fail(f"{self.summary.counted} of {want} launches could be made on "
                        f"{self.summary.target} ({errors or 'no infra error recorded'})",
                        pytrace=False)

    def assert_no_crash(self, crash_class: str | None = None) -> None:
        """Fail when any counted launch crashed (with ``crash_class`` when given), naming the
        signatures and artifacts."""
        from .analysis.stats import rate

        x, n = self.count(crash_class)
        if x:
            r = rate(x, n)
            examples = [f"{rec.launch_id}: {rec.crash_class} at {rec.last_phase} "
                        f"({rec.signature})" for rec in self.campaign.counted
                        if rec.outcome.value == "crashed" and
                        (crash_class is None or rec.crash_class == crash_class)][:3]
            pytest.fail(f"{x}/{n} launches crashed{f' with {crash_class}' if crash_class else ''}"
                        f" ({100 * (r.value or 0.0):.1f}% [{100 * r.low:.1f}%, {100 * r.high:.1f}%]); "
                        f"{'; '.join(examples)}; campaign: {self.path}", pytrace=False)

    def assert_rate_below(self, ceiling: float, crash_class: str | None = None,
                          confidence: float = 0.95) -> None:
        """Fail unless the one-sided Clopper-Pearson upper bound of the crash rate at
        ``confidence`` is below ``ceiling`` (0/100 bounds it at 2.95% at 95%)."""
        from .analysis.stats import upper_bound

        x, n = self.count(crash_class)
        bound = upper_bound(x, n, confidence)
        if not bound < ceiling:
            pytest.fail(f"crash rate {x}/{n}{f' ({crash_class})' if crash_class else ''} is "
                        f"not shown below {100 * ceiling:g}%: its {100 * confidence:g}% upper "
                        f"bound is {100 * bound:.2f}%; campaign: {self.path}", pytrace=False)


class Coldstart:
    """Runs campaigns on one target for one test (the :func:`coldstart` fixture).

    Args:
        spec: the target.
        out_root: folder for this test's campaigns.
        report_root: folder for reports, or ``None``.
        launches: default launches per campaign, or ``None`` for the target's default.
        record_property: pytest's ``record_testsuite_property`` (crash counts and verdicts go
            to pytest's JUnit XML as properties of the test suite: valid in every
            ``junit_family``, where per-test properties are not in xunit2's schema).
    """

    def __init__(self, spec: TargetSpec, out_root: Path, report_root: Path | None,
                 launches: int | None, record_property: Any) -> None:
        self.spec = spec
        self.out_root = out_root
        self.report_root = report_root
        self.launches = launches
        self.record_property = record_property

    def run(self, label: str, *, launches: int | None = None, scenario: str = "",
            timeout_s: float | None = None, extra: tuple[str, ...] = (),
            stage: str | tuple[int, int] | None = None,
            event: str | None = None) -> CampaignResult:
        """Run one campaign of build ``label`` on the target (a new directory under the out
        folder) and return it summarised. ``extra`` adds the target's ``coldstart run``
        options. ``stage`` (``"N1:R"`` or ``(N1, R)``, with ``event``, default
        ``xnnpack-allocator-uaf``) makes a baseline staged by design, as ``coldstart run
        --stage N1:R --event E`` does (:mod:`kit.analysis.stage`, docs/verdict.md): ``N1``
        launches, and on to ``launches`` only when they showed fewer than ``R`` events;
        ``coldstart plan`` prints the three numbers.

        Raises:
            pytest.fail: bad target options or input (the CLI's one-line message).
        """
        from .campaign.build import build_request, parse_run_args
        from .campaign.session import run_session
        from .targets.registry import get_plugin
        from .errors import ColdstartError
        from .redact import redact_text
        from .analysis.summary import summarize

        out = self.out_root / label
        try:
            _check_launches(launches)
            staged = _stage_value(stage)
            plugin = get_plugin(self.spec.name)
            launches = launches if launches is not None else self.launches
            argv = [*self.spec.argv[1:], *extra, f"--label={label}", f"--out={out}"]
            argv += [f"--launches={launches}"] if launches is not None else []
            argv += [f"--scenario={scenario}"] if scenario else []
            argv += [f"--timeout={timeout_s!r}"] if timeout_s is not None else []
            argv += [f"--stage={staged[0]}:{staged[1]}"] if staged is not None else []
            argv += [f"--event={event}"] if event is not None else []
            args = parse_run_args(plugin, argv, prog=f"--coldstart-target {plugin.name}")
            request = build_request(plugin, args)
            result = run_session(plugin, request, _Quiet())
            farm = _pull_farm(args, out)
        except ColdstartError as exc:
            pytest.fail(f"coldstart: {redact_text(exc.one_line())}", pytrace=False)
        campaign = result.campaigns[0].campaign
        assert campaign is not None
        if farm is not None:  # the pull rewrote the records: read them again
            from .campaign import load_campaign

            campaign = load_campaign(out)
            self.record_property(f"coldstart_{label}_farm_evidence",
                                 "complete" if farm.exit_code == 0 else "incomplete")
        reports: dict[str, Path] = {}
        if self.report_root is not None:
            from .report import write_reports

            reports = write_reports(self.report_root / self.spec.id / label, [campaign])
        summary = summarize(campaign)
        self.record_property(f"coldstart_{label}_crashed",
                             f"{summary.crashed.count}/{summary.crashed.n}")
        return CampaignResult(campaign=campaign, summary=summary, reports=reports, farm=farm)

    def compare(self, baseline: CampaignResult, candidate: CampaignResult, *,
                event: str | None = None, alpha: float | None = None,
                ceiling: float | None = None, signature: str | None = None) -> "Comparison":
        """The verdict of ``candidate`` against ``baseline`` (:func:`kit.analysis.pair.
        compare_pair`, as ``coldstart compare``: ``event`` is the counted event, and
        settings left out are the candidate's rule's, else ``xnnpack-allocator-uaf``, 0.05,
        0.05); writes the comparison's reports when a report dir is set. ``signature`` is
        ``event``'s old name (deprecated: it warns)."""
        from .analysis.pair import compare_pair

        if signature is not None:
            import warnings

            warnings.warn("coldstart.compare(signature=...) is deprecated, use event=",
                          DeprecationWarning, stacklevel=2)
            event = event if event is not None else signature
        pair = compare_pair(baseline.campaign, candidate.campaign, signature=event,
                            alpha=alpha, ceiling=ceiling)
        comparison = pair.comparison
        if self.report_root is not None:
            from .report import write_reports

            write_reports(self.report_root / self.spec.id /
                          f"{baseline.campaign.label}-vs-{candidate.campaign.label}",
                          [baseline.campaign, candidate.campaign], comparison,
                          scans=pair.scans)
        self.record_property("coldstart_verdict", comparison.verdict.value)
        return comparison

    def plan(self, baseline: CampaignResult | None = None, *,
             baseline_rate: float | None = None, event: str | None = None,
             ceiling: float = 0.05, alpha: float = 0.05, power: float = 0.8,
             candidate_rate: float = 0.0, beta: float = 0.2,
             design_rate: float | None = None) -> Any:
        """What ``coldstart plan`` prints, as :class:`kit.analysis.planning.PlannedRun`
        (:func:`kit.analysis.planning.plan_run`): the launches a verdict needs, from a
        baseline this test ran (its rate of ``event``) or a given ``baseline_rate``.

        Raises:
            pytest.fail: bad settings (the CLI's one-line message).
        """
        from .analysis.planning import plan_run
        from .errors import ColdstartError

        try:
            return plan_run(baseline=baseline.campaign if baseline is not None else None,
                            baseline_rate=baseline_rate, event=event, ceiling=ceiling,
                            alpha=alpha, power=power, candidate_rate=candidate_rate,
                            beta=beta, design_rate=design_rate)
        except ColdstartError as exc:
            pytest.fail(f"coldstart: {exc.one_line()}", pytrace=False)

    def assert_fixed(self, baseline: CampaignResult, candidate: CampaignResult,
                     **settings: Any) -> "Comparison":
        """Fail unless the verdict is ``fixed`` (a candidate build without the baseline's
        defect); the message is the verdict's reason."""
        return self._assert_verdict("fixed", baseline, candidate, settings)

    def assert_removed(self, baseline: CampaignResult, candidate: CampaignResult,
                       **settings: Any) -> "Comparison":
        """Fail unless the verdict is ``removed``: one build, and the candidate's change of
        scenario or options (e.g. ``mode=serial``, the known workaround) removes what the
        baseline's showed."""
        return self._assert_verdict("removed", baseline, candidate, settings)

    def _assert_verdict(self, want: str, baseline: CampaignResult, candidate: CampaignResult,
                        settings: dict[str, Any]) -> "Comparison":
        comparison = self.compare(baseline, candidate, **settings)
        if comparison.verdict.value != want:
            pytest.fail(f"verdict {comparison.verdict.value}: "
                        f"{comparison.decision.to_dict().get('reason')}", pytrace=False)
        return comparison


def _check_launches(launches: Any) -> None:
    """``Coldstart.run``'s ``launches``: ``None`` or a whole number in
    ``1..``:data:`~kit.argtypes.MAX_LAUNCHES`, as ``--launches`` takes.

    Raises:
        UsageError: anything else.
    """
    from .errors import UsageError

    if launches is None:
        return
    if type(launches) is not int or not 1 <= launches <= MAX_LAUNCHES:
        raise UsageError(f"launches={str(launches)[:40]} is not a whole number in "
                         f"1..{MAX_LAUNCHES}", "give the campaign's launches, e.g. launches=20")


def _stage_value(stage: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """``Coldstart.run``'s ``stage`` as ``(N1, R)`` (:func:`kit.analysis.stage.parse_stage`,
    the CLI's check), or ``None``.

    Raises:
        UsageError: not ``"N1:R"`` or a pair of such counts.
    """
    from .analysis.stage import parse_stage
    from .errors import UsageError

    hint = "give stage=\"12:2\" or stage=(12, 2), as `coldstart plan` prints it"
    if stage is None:
        return None
    if isinstance(stage, tuple) and len(stage) == 2 and all(type(v) is int for v in stage):
        stage = f"{stage[0]}:{stage[1]}"
    if not isinstance(stage, str):
        raise UsageError(f"stage {str(stage)[:60]!r} is not N1:R", hint)
    try:
        return parse_stage(stage[:100])
    except ValueError as exc:
        raise UsageError(str(exc), hint) from None


class _Quiet:
    """A session observer that keeps quiet (pytest shows the assertions)."""

    def note(self, message: str) -> None:
        pass

    def started(self, title: str, total: int, records: Any) -> None:
        pass

    def recorded(self, record: Any) -> None:
        pass


def _pull_farm(args: argparse.Namespace, out: Path) -> Any:
    """``--farm NAME`` in an appium target's options: pull the campaign's farm evidence
    as ``coldstart run appium --farm`` does (:func:`kit.farms.pull.pull_campaign`); its
    :class:`~kit.farms.pull.PullReport`, or ``None`` without ``--farm``. Evidence not
    ready in time is the report's ``exit_code`` 3, the records kept (never a test
    failure by itself)."""
    if not getattr(args, "farm", None):
        return None
    from .farms.options import settings_from_args
    from .farms.pull import pull_campaign
    from .redact import install_log_redaction

    return pull_campaign(out, settings_from_args(args), redactor=install_log_redaction())


# ------------------------------------------------------------------------------- hooks
def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--coldstart-*`` options and their ini keys."""
    group = parser.getgroup("coldstart", "cold-launch campaigns (coldstart)")
    group.addoption("--coldstart-target", action="append", default=[], metavar="ARGS",
                    help="a `coldstart run` target with its options, e.g. \"appium --server "
                         "URL --platform android --caps caps.json\"; repeat for several "
                         "targets (tests run once per target; shard with pytest-xdist)")
    group.addoption("--coldstart-launches", type=positive_int, default=None, metavar="N",
                    help="launches per campaign (default: each test's or the target's)")
    group.addoption("--coldstart-out", default=None, metavar="DIR",
                    help="where campaign directories go (default: pytest's tmp dir)")
    group.addoption("--coldstart-report-dir", default=None, metavar="DIR",
                    help="write summary.json, junit.xml, report.html and summary.md of every "
                         "campaign and comparison under DIR/<target>/<label>")
    parser.addini("coldstart_targets", "targets, one per line (like --coldstart-target)",
                  type="linelist", default=[])


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``coldstart`` marker; refuse an ``--coldstart-out`` or
    ``--coldstart-report-dir`` that cannot be a directory (empty, a file, /dev/null), as
    ``coldstart run --out`` does, before any test runs.

    Raises:
        pytest.UsageError: such an option (one line).
    """
    config.addinivalue_line("markers", "coldstart: runs cold-launch campaigns on the "
                                       "--coldstart-target targets")
    from ._bounded import check_directory_arg
    from .errors import ColdstartError

    for flag, key in (("--coldstart-out", "coldstart_out"),
                      ("--coldstart-report-dir", "coldstart_report_dir")):
        value = config.getoption(key, None)
        if value is None:
            continue
        if not str(value).strip():
            raise pytest.UsageError(f"{flag} is empty (give a directory)")
        try:
            check_directory_arg(Path(value), flag)
        except ColdstartError as exc:
            raise pytest.UsageError(exc.one_line()) from None
    _specs(config)  # a bad --coldstart-target is a usage error here, not at collection


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse, in one line, tests that need a target when none is given.

    Raises:
        pytest.UsageError: a test uses ``coldstart_target`` and there is no target.
    """
    if _specs(config):
        return
    for item in items:
        if "coldstart_target" in getattr(item, "fixturenames", ()):
            raise pytest.UsageError(f"{item.nodeid} needs a target: pass --coldstart-target "
                                    "\"TARGET OPTIONS\" (or the coldstart_targets ini key)")


def _specs(config: pytest.Config) -> list[TargetSpec]:
    texts = list(config.getoption("coldstart_target") or []) or \
        list(config.getini("coldstart_targets") or [])
    specs: list[TargetSpec] = []
    for text in texts:
        spec = parse_target_spec(text)
        same = sum(1 for s in specs if s.id.split("#")[0] == spec.id)
        specs.append(spec if not same else parse_target_spec(text, same))
    return specs


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each test that uses ``coldstart`` once per target (xdist shards these)."""
    if "coldstart_target" not in metafunc.fixturenames:
        return
    specs = _specs(metafunc.config)
    if not specs:  # refused after collection (pytest_collection_modifyitems), in one line
        return
    metafunc.parametrize("coldstart_target", [
        pytest.param(s, id=s.id, marks=[pytest.mark.xdist_group(s.id),
                                        pytest.mark.coldstart]) for s in specs],
        indirect=True)


@pytest.fixture
def coldstart_target(request: pytest.FixtureRequest) -> TargetSpec:
    """The target this test runs on (one of the ``--coldstart-target`` values)."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def coldstart(request: pytest.FixtureRequest, coldstart_target: TargetSpec,
              tmp_path: Path, record_testsuite_property: Any) -> Iterator[Coldstart]:
    """A :class:`Coldstart` for this test's target: ``coldstart.run(label)`` runs a
    campaign, ``coldstart.compare``/``assert_fixed`` give the verdict."""
    config = request.config
    out_opt = config.getoption("coldstart_out")
    node = _ID_SAFE.sub("_", request.node.name)
    out_root = Path(out_opt) / node if out_opt else tmp_path / "campaigns"
    report_opt = config.getoption("coldstart_report_dir")
    yield Coldstart(coldstart_target, out_root, Path(report_opt) if report_opt else None,
                    config.getoption("coldstart_launches"), record_testsuite_property)
