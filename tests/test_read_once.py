"""A command opens each campaign once (lock, campaign.json, launches.jsonl) and passes it on:
``run --resume`` parses the campaign's ``campaign.json`` once and streams its records once,
and ``run --until-verdict`` loads the baseline once (kit/store/opened.py, session.py).

Runs real host launches (needs the prepared host runtime, scripts/setup.sh)."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pytest

from kit.campaign import load_campaign
from kit.store.meta import CampaignMeta
from kit.store.store import CampaignStore
from kit.cli import main
from tests.helpers import counts, make_campaign

pytestmark = [pytest.mark.host]


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Counts, per campaign directory, the parses of its campaign.json (``meta:DIR``) and
    the streams of its launches.jsonl (``records:DIR``)."""
    seen: Counter = Counter()
    parse = CampaignMeta.from_dict.__func__  # type: ignore[attr-defined]
    stream = CampaignStore.iter_records

    def counted_parse(cls: type, data: Any, where: str = "campaign.json") -> CampaignMeta:
        if where.endswith("campaign.json"):
            seen[f"meta:{Path(where).parent.resolve()}"] += 1
        return parse(cls, data, where)

    def counted_stream(self: CampaignStore, **kw: Any) -> Iterator[Any]:
        seen[f"records:{self.path.resolve()}"] += 1
        return stream(self, **kw)

    monkeypatch.setattr(CampaignMeta, "from_dict", classmethod(counted_parse))
    monkeypatch.setattr(CampaignStore, "iter_records", counted_stream)
    return seen


def test_run_resume_parses_campaign_json_once(tmp_path: Path, reads: Counter) -> None:
    out = tmp_path / "c"
    assert main(["run", "host", "--launches", "1", "--scenario", "mode=serial", "--out",
                 str(out)]) == 0
    reads.clear()
    assert main(["run", "host", "--resume", "--launches", "2", "--out", str(out)]) == 0
    assert reads[f"meta:{out.resolve()}"] == 1
    assert reads[f"records:{out.resolve()}"] == 1
    campaign = load_campaign(out)
    assert campaign.meta.launches == 2 and len(campaign.counted) == 2


def test_run_until_verdict_loads_the_baseline_once(tmp_path: Path, reads: Counter) -> None:
    base = make_campaign(tmp_path, "baseline",
                         counts("baseline", 3, 3, crash_class="other-native-crash",
                                device=f"host:{socket.gethostname()}")).path
    out = tmp_path / "cand"
    reads.clear()
    assert main(["run", "host", "--launches", "20", "--scenario", "mode=serial", "--label",
                 "candidate", "--out", str(out), "--until-verdict", str(base),
                 "--event", "other-native-crash", "--ceiling", "0.5"]) == 0
    assert reads[f"meta:{base.resolve()}"] == 1
    assert reads[f"records:{base.resolve()}"] == 1
    assert reads[f"meta:{out.resolve()}"] == 0  # made here, never read back
    assert len(load_campaign(out).counted) == 5  # the rule stopped it, as before
