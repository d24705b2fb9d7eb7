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
    from kit.cli import build_parser
    from kit.cli.run import build_request

    return build_request(target, build_parser().parse_args(["run", target, *argv]))


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


@pytest.mark.host
def test_an_old_campaign_resumes_for_real(old: Path) -> None:
    proc = coldstart("run", "host", "--resume", "--out", str(old / "base"), "--launches",
                     "4", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in (old / "base" / "launches.jsonl").read_text().splitlines()]
    assert [x["index"] for x in lines] == [0, 1, 2, 3]
    meta = json.loads((old / "base" / "campaign.json").read_text())
    assert meta["launches"] == 4 and meta["options"]["poison"] == "glibc"
    assert meta["build"]["runtime"] == "debian"
