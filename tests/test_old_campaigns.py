"""Campaigns written by an earlier kit still open, resume and compare.

``tests/data/old-campaigns/main-85cfd86/`` holds two host campaigns (``campaign.json`` and
``launches.jsonl``, artifacts left out) written by the kit at commit 85cfd86, the last one
before a target's config and run setup were stored typed in ``campaign.json``: ``base``
ran 3 launches with ``--poison``, ``cand`` 3 without. Neither keeps a ``config`` or a
``setup``; what a resume and compare need of them is read from their ``build`` and
``options``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import coldstart

OLD = Path(__file__).resolve().parent / "data" / "old-campaigns" / "main-85cfd86"


@pytest.fixture()
def old(tmp_path: Path) -> Path:
    """A copy of the old campaigns (a resume writes to them)."""
    shutil.copytree(OLD, tmp_path / "old")
    return tmp_path / "old"


def test_old_campaigns_open_with_their_records_and_setup(old: Path) -> None:
    from kit.store.store import load_campaign

    base = load_campaign(old / "base")
    assert base.meta.label == "baseline" and base.meta.target == "host"
    assert [r.index for r in base.records] == [0, 1, 2]
    assert [r.outcome for r in base.records] == ["completed"] * 3
    setup = base.meta.setup
    assert (setup.witness, setup.poison, setup.detector, setup.timeout_s) == (
        "on", "glibc", None, 30.0)
    assert base.meta.build_identity.sha256 == (
        "1661477b666ea4c6a0f3bc96fad7d88f81ec5c83b94d668d0916ed3bf4e89994")
    cand = load_campaign(old / "cand")
    assert cand.meta.setup.poison is None


def test_old_campaigns_compare_and_name_the_option_that_differs(old: Path) -> None:
    proc = coldstart("compare", str(old / "base"), str(old / "cand"), "--no-reports",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    comparison = json.loads(proc.stdout)["comparison"]
    assert comparison["verdict"] == "inconclusive"
    assert comparison["kind"] == "scenario"  # the same build: the options changed
    assert comparison["change"].startswith("poison: baseline 'glibc', candidate None; env:")


def _request(target: str, argv: list[str]):
    from tests.helpers import request_from_argv
    from kit.targets.registry import get_plugin

    return request_from_argv(get_plugin(target), argv)


def test_an_old_campaign_resumes_as_it_ran(old: Path) -> None:
    """What a resume of an old campaign is given is its ``build``'s runtime, its poison and
    its witness (the request is built and nothing launched)."""
    request = _request("host", ["--resume", "--out", str(old / "base"),
                                         "--launches", "5"])
    config = request.config
    assert (config.runtime, config.poison, config.witness, config.detector,
            config.timeout_s) == ("debian", True, True, None, 30.0)
    assert (request.label, request.launches, request.resume) == ("baseline", 5, True)
    request = _request("host", ["--resume", "--out", str(old / "cand")])
    assert (request.config.poison, request.label, request.launches) == (False, "patched", 3)


def test_an_old_campaign_refuses_another_runtime_on_resume(old: Path) -> None:
    proc = coldstart("run", "host", "--resume", "--out", str(old / "base"), "--runtime",
                     "other", "--launches", "4")
    assert proc.returncode == 2
    assert "it ran on runtime debian" in proc.stderr.strip().splitlines()[-1]


class _SameRuntime:
    """The host plug-in, its ``prepare`` answered as on the runtime the old campaign ran on
    (its ``build`` and ``options`` as that kit wrote them, the setup as this kit types it),
    with a scripted launcher (tests/doubles/scripted_launcher.py): the session's resume of
    an old ``campaign.json`` without the shared runtime, which other runs rebuild."""

    def __new__(cls, old_meta: dict):
        from kit.launch import PreparedTarget
        from kit.store.meta import RunSetup
        from kit.targets.host.options import HostPlugin
        from tests.doubles.scripted_launcher import ScriptedLauncherDouble

        class Plugin(HostPlugin):
            def prepare(self, config, scenario, log):
                self.config = config
                launcher = ScriptedLauncherDouble(lambda i, a: "completed", device="host:vm")
                options = dict(old_meta["options"])
                return PreparedTarget(
                    target="host", launchers=[launcher], build=dict(old_meta["build"]),
                    options=options, devices=[{"id": "host:vm", "kind": "host"}],
                    setup=RunSetup(witness=options["witness"], timeout_s=config.timeout_s,
                                   poison="glibc" if config.poison else None,
                                   compared={k: options[k] for k in
                                             ("poison", "env", "witness", "model_set")}))

        return Plugin()


def test_an_old_campaign_resumes_and_keeps_its_config_and_setup(old: Path) -> None:
    from tests.helpers import request_from_argv
    from kit.campaign.session import run_session
    from kit.store.store import load_campaign

    class Quiet:
        def note(self, message): pass
        def started(self, title, total, records): pass
        def recorded(self, record): pass

    meta_path = old / "base" / "campaign.json"
    plugin = _SameRuntime(json.loads(meta_path.read_text()))
    request = request_from_argv(plugin, ["--resume", "--out", str(old / "base"),
                                         "--launches", "5"])
    result = run_session(plugin, request, Quiet())
    assert plugin.config.poison is True and plugin.config.runtime == "debian"
    assert (result.campaigns[0].planned, result.campaigns[0].counted) == (5, 5)
    camp = load_campaign(old / "base")
    assert [r.index for r in camp.records] == [0, 1, 2, 3, 4]
    meta = json.loads(meta_path.read_text())
    assert meta["config"]["runtime"] == "debian" and meta["config"]["poison"] is True
    assert meta["setup"]["poison"] == "glibc" and meta["setup"]["witness"] == "on"
    assert meta["setup"]["compared"]["env"] == {
        "MALLOC_PERTURB_": "85", "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}
    # resumed once more, the stored config is what is kept
    request = request_from_argv(plugin, ["--resume", "--out", str(old / "base")])
    assert (request.config.poison, request.config.runtime, request.launches) == (
        True, "debian", 5)
