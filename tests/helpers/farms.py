"""Shared by the farm test modules: the recorded script's campaign and its expected classes,
credentials that must never reach a file, an injected clock, and a pull run on the farm
double (tests/doubles/farm_server.py)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from kit.campaign import load_campaign
from kit.farms import FarmSettings
from kit.farms.pull import pull_campaign
from tests.doubles.farm_recordings import Launch
from tests.doubles.farm_server import FarmDouble, Reply, Request

__all__ = ["KEY", "SCRIPT", "SID", "UAF_SIG", "USER", "FakeTime", "add_aws_job",
           "assert_script_classes", "crash_classes", "farm_env", "pull"]

USER, KEY = "coldstart-ci", "Acc3ssKey-5ecret-77"
SID = "4f1e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f"

SCRIPT = [Launch("completed"), Launch("native"), Launch("native-late"), Launch("java"),
          Launch("completed"), Launch("silent")]


UAF_SIG = "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate"


class FakeTime:
    """An injected monotonic clock, sleep and epoch clock."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.t

    def wall(self) -> float:
        return 1773482400.0 + self.t

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.t += s


def farm_env(**more: str) -> dict[str, str]:
    return {"BROWSERSTACK_USERNAME": USER, "BROWSERSTACK_ACCESS_KEY": KEY,
            "SAUCE_USERNAME": USER, "SAUCE_ACCESS_KEY": KEY, "LT_USERNAME": USER,
            "LT_ACCESS_KEY": KEY, **more}


def pull(out: Path, double: FarmDouble, farm: str, fake: FakeTime, deadline: float = 300,
          **kw: Any) -> Any:
    env = farm_env(**kw.pop("env", {}))
    settings = FarmSettings(name=farm, api=double.url, deadline_s=deadline, env=env, **kw)
    report = pull_campaign(out, settings, clock=fake.clock, sleep=fake.sleep, wall=fake.wall)
    written = "\n".join(p.read_bytes().decode("utf-8", "replace")
                        for p in out.rglob("*") if p.is_file())
    b64 = base64.b64encode(f"{USER}:{KEY}".encode()).decode()
    for secret in [*env.values(), b64]:  # no credential reaches any file
        assert secret not in written, secret
    return report


def crash_classes(out: Path) -> list[tuple[str, str | None, str | None]]:
    return [(r.outcome.value, r.crash_class and str(r.crash_class), r.signature)
            for r in sorted(load_campaign(out).records, key=lambda r: r.index)]


def assert_script_classes(out: Path) -> None:
    got = crash_classes(out)
    assert [g[:2] for g in got] == [
        ("completed", None), ("crashed", "xnnpack-allocator-uaf"),
        ("crashed", "xnnpack-allocator-uaf"), ("crashed", "abort"), ("completed", None),
        ("crashed", None)]
    assert got[1][2].startswith(UAF_SIG) and got[2][2].startswith(UAF_SIG)
    assert got[3][2].startswith("java.lang.IllegalStateException")
    records = sorted(load_campaign(out).records, key=lambda r: r.index)
    farm = records[1].extra["farm"]
    assert farm["applied"] is True and farm["evidence"][0]["how"] == "pid"
    assert len(farm["evidence"][0]["sha256"]) == 64
    assert records[1].crash["pid"] == 12100 and records[2].crash["pid"] == 12200
    assert "no crash evidence for this launch" in records[5].extra["farm"]["note"]
    assert records[0].extra["farm"]["evidence"] == []


def add_aws_job(d: FarmDouble, logcat: str, job: str, status_seq: list[str]) -> None:
    statuses = iter(status_seq)

    def get_job(_r: Request) -> Reply:
        return Reply(body={"job": {"arn": job, "status": next(statuses, "COMPLETED"),
                                   "device": {"name": "Google Pixel 7"}}})

    throttled = {"n": 0}

    def list_artifacts(r: Request) -> Reply:
        if throttled["n"] == 0:
            throttled["n"] += 1
            return Reply(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
        sig = "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAFAKE%2F20260314&" \
              "X-Amz-Signature=deadbeefcafe0123456789"
        if r.body.get("type") != "LOG":
            return Reply(body={"artifacts": []})
        if not r.body.get("nextToken"):
            return Reply(body={"artifacts": [{"arn": f"{job}/a1", "name": "Video",
                                              "type": "VIDEO", "extension": "mp4",
                                              "url": f"{d.url}/s3/video{sig}"}],
                               "nextToken": "page-2"})
        return Reply(body={"artifacts": [{"arn": f"{job}/a2", "name": "Logcat",
                                          "type": "DEVICE_LOG", "extension": "txt",
                                          "url": f"{d.url}/s3/logcat{sig}"}]})

    d.add_aws("GetJob", get_job)
    d.add_aws("ListArtifacts", list_artifacts)
    d.add("/s3/logcat", Reply(body=logcat))
