"""`coldstart run host --baseline-runtime NAME --until-verdict DIR`: both builds' launches,
alternating, on the real host workload, until the verdict is settled.

The candidate is Debian's onnxruntime (the real runtime); the baseline is the test double
``tests/doubles/crashing_workload.py``, the same real workload on the same runtime made to
die of a real SIGSEGV after inference, as an unpatched build dies at release. Serial creates,
so that the real race cannot crash the candidate.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.campaign import load_campaign
from kit.modelset import cache_dir
from kit.records import Outcome
from kit.scenario import parse_scenario
from tests.conftest import coldstart
from tests.helpers import prepare_store, record, update_meta

ROOT = Path(__file__).resolve().parent.parent
DOUBLE = ROOT / "tests" / "doubles" / "crashing_workload.py"
pytestmark = pytest.mark.host
RULE = ["--event", "other-native-crash", "--ceiling", "0.3", "--launches", "40",
        "--no-witness", "--scenario", "mode=serial"]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A cache with the real runtime as ``debian`` and as ``patched``, and the crashing
    double as ``old``."""
    proc = subprocess.run([sys.executable, "-m", "kit.cli", "runtime", "info"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, ("host runtime not prepared: run scripts/setup.sh "
                                  f"(or `coldstart runtime prepare`): {proc.stderr}")
    real = json.loads(proc.stdout)
    loader = real.pop("loader")
    cache = tmp_path_factory.mktemp("cache")
    runtimes = {"debian": real, "patched": {**real, "name": "patched"},  # the same, renamed
                "old": {**real, "name": "old", "kind": "ort-root", "workload": str(DOUBLE)}}
    for name, runtime in runtimes.items():
        (cache / "runtimes" / name).mkdir(parents=True)
        (cache / "runtimes" / name / "runtime.json").write_text(json.dumps(runtime))
    # the real runtime's witness stamp, so that the witness is not rebuilt into the real root
    stamp = cache_dir() / "runtimes" / "debian" / "witness.json"
    if stamp.exists():
        shutil.copy(stamp, cache / "runtimes" / "debian" / "witness.json")
    argv = [loader, "--library-path", real["lib_dir"], real["workload"]] if loader \
        else [real["workload"]]
    return {"COLDSTART_CACHE": str(cache), "COLDSTART_CRASHING_WORKLOAD_REAL": json.dumps(argv)}


def counts(path: Path) -> tuple[int, int]:
    records = [r for r in load_campaign(path).records if r.counted]
    return sum(r.outcome is Outcome.CRASHED for r in records), len(records)


def test_both_builds_alternate_until_fixed(env: dict[str, str], tmp_path: Path) -> None:
    base, cand = tmp_path / "base", tmp_path / "cand"
    proc = coldstart("run", "host", "--runtime", "debian", "--baseline-runtime", "old",
                     "--until-verdict", str(base), "--out", str(cand), "--label", "patched",
                     *RULE, env=env)
    assert proc.returncode == 0, proc.stderr
    # The double crashes every launch, the candidate never. The rule's exact threshold for 40
    # launches is LR 16.23, which a clean candidate passes at its 11th launch (LR
    # (0.925/0.7)^11 = 21.5; 0/11 bounds the rate below 23.8%): its earliest fixed stop. The
    # baseline pauses at 2/2, whose Fisher p against 0/11 is 0.013 (1/1 gives 0.083).
    assert counts(base) == (2, 2)
    assert counts(cand) == (0, 11)
    base_records = load_campaign(base).records
    assert all(r.signal_name == "SIGSEGV" and r.last_phase == "inference-done"
               and r.crash_class == "other-native-crash" for r in base_records)
    assert "until-verdict: stopped: fixed: baseline 2/2, candidate 0/11" in proc.stderr
    # alternating, until the baseline has what it needs
    starts = sorted([(r.started_at, "b") for r in base_records]
                    + [(r.started_at, "c") for r in load_campaign(cand).records])
    assert "".join(who for _, who in starts) == "bcbc" + "c" * 9
    meta = json.loads((cand / "campaign.json").read_text())
    kept = meta["until_verdict"]
    assert (kept["interleaved"], kept["baseline_runtime"], kept["stopped"]) == (True, "old", True)
    assert meta["build"]["runtime"] == "debian"
    base_meta = json.loads((base / "campaign.json").read_text())
    assert base_meta["build"]["runtime"] == "old" and base_meta["label"] == "baseline"
    assert base_meta["interleaved"]["candidate"] == str(cand)
    compare = coldstart("compare", str(base), str(cand), "--event", "other-native-crash",
                        "--ceiling", "0.3", "--no-reports", env=env)
    assert compare.returncode == 0, compare.stderr
    assert "FIXED" in compare.stdout
    report = coldstart("report", str(base), str(cand), "--out", str(tmp_path / "r"), "--quiet",
                       env=env)
    assert report.returncode == 0, report.stderr
    md = (tmp_path / "r" / "summary.md").read_text()  # a rule's stop, not a killed run
    notes = [line for line in md.splitlines() if line.startswith(">")]
    assert [n.split(":")[0] for n in notes] == ["> baseline", "> patched"]
    assert "baseline of a run interleaved with" in notes[0]
    assert "run under --until-verdict against" in notes[1] and "interleaved" in notes[1]
    assert all(n.endswith("stopped by the rule: fixed: baseline 2/2, candidate 0/11")
               for n in notes)
    # the baseline of the pair is resumed through the pair, not alone
    alone = coldstart("run", "host", "--resume", "--out", str(base), env=env)
    assert alone.returncode == 2 and alone.stderr.strip().splitlines() == [
        f"coldstart: error: {base} is the baseline of the interleaved run {cand}: resuming it "
        f"alone would ignore the run's rule (resume that run: coldstart run host --resume "
        f"--out {cand})"]
    # a resume of a settled run makes no launch
    again = coldstart("run", "host", "--resume", "--out", str(cand), env=env)
    assert again.returncode == 0, again.stderr
    assert (counts(base), counts(cand)) == ((2, 2), (0, 11))


def test_kill_9_then_resume_goes_on_interleaved(env: dict[str, str], tmp_path: Path) -> None:
    base, cand = tmp_path / "base", tmp_path / "cand"
    cmd = [sys.executable, "-m", "kit.cli", "run", "host", "--runtime", "patched",
           "--baseline-runtime", "old",
           "--until-verdict", str(base), "--out", str(cand), "--label", "patched", *RULE]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = cand / "launches.jsonl"
    deadline = time.monotonic() + 300  # 6 launches: seconds idle, a minute or more loaded
    while time.monotonic() < deadline and not (log.exists() and log.read_text().count("\n") >= 4):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 4 <= counts(cand)[1] < 11
    again = coldstart("run", "host", "--resume", "--out", str(cand), env=env)
    assert again.returncode == 0, again.stderr
    assert "interleaved" in again.stderr
    assert (counts(base), counts(cand)) == ((2, 2), (0, 11))
    again = coldstart("run", "host", "--resume", "--out", str(cand), "--runtime", "old", env=env)
    assert again.returncode == 2 and (f"cannot resume {cand} with --runtime old: it ran on "
                                      f"runtime patched") in again.stderr
    # the bare --resume took both runtimes from the campaigns
    assert {r.launch_id for r in load_campaign(cand).records} == {
        f"patched-{i:05d}" for i in range(11)}
    assert json.loads((cand / "campaign.json").read_text())["build"]["runtime"] == "patched"


def test_refusals_are_one_line(env: dict[str, str], tmp_path: Path) -> None:
    def refused(fragment: str, *args: str) -> None:
        proc = coldstart("run", "host", *args, env=env)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert fragment in lines[0] and lines[0].startswith("coldstart: error: ")

    out = ["--out", str(tmp_path / "c")]
    finished_file = tmp_path / "file"
    finished_file.write_text("not a campaign\n")
    refused("--baseline-runtime needs --until-verdict DIR", "--baseline-runtime", "old", *out)
    refused("--baseline-runtime is this run's own runtime (debian)", "--baseline-runtime",
            "debian", "--until-verdict", str(tmp_path / "b"), *out)
    refused("runtime name 'a b' is invalid", "--baseline-runtime", "a b", "--until-verdict",
            str(tmp_path / "b"), *out)
    refused("host runtime 'nope' is not prepared", "--baseline-runtime", "nope",
            "--until-verdict", str(tmp_path / "b"), *out)
    other = tmp_path / "other"  # a baseline directory holding a campaign of another scenario
    prepare_store(other, label="baseline", target="host", scenario=parse_scenario(""),
                  launches=40, resume=False)
    refused(f"--until-verdict {other} holds a campaign of another scenario", "--runtime",
            "patched", "--baseline-runtime", "old", "--until-verdict", str(other), *out, *RULE)
    refused(f"--out {finished_file} is a file", "--resume", "--out", str(finished_file))
    serial = parse_scenario("mode=serial")
    big = tmp_path / "big"
    prepare_store(big, label="baseline", target="host", scenario=serial, launches=100,
                  resume=False)
    pair = ["--runtime", "patched", "--baseline-runtime", "old", *out, *RULE]
    refused(f"--until-verdict {big} plans 100 launches, more than this run's --launches 40",
            "--until-verdict", str(big), *pair)
    taken = tmp_path / "taken"
    store, _ = prepare_store(taken, label="baseline", target="host", scenario=serial,
                             launches=40, resume=False)
    update_meta(store, interleaved={"candidate": str(tmp_path / "elsewhere")})
    refused(f"--until-verdict {taken} is the baseline of the interleaved run "
            f"{tmp_path / 'elsewhere'}", "--until-verdict", str(taken), *pair)
    done = tmp_path / "done"
    store, _ = prepare_store(done, label="baseline", target="host", scenario=serial,
                             launches=1, resume=False)
    store.append(record("baseline", 0, "crashed", crash_class="other-native-crash"))
    refused(f"--until-verdict {done} is a finished campaign (1 of 1 launches)", "--until-verdict",
            str(done), "--launches", "40", *pair)
    assert not (tmp_path / "c").exists()
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()
    finished = tmp_path / "finished"  # a run started against a finished baseline
    store, _ = prepare_store(finished, label="patched", target="host",
                             scenario=parse_scenario("mode=serial"), launches=40, resume=False)
    update_meta(store, until_verdict={"baseline": str(tmp_path / "b"), "stopped": None})
    refused(f"{finished} already holds a campaign", "--baseline-runtime", "old",
            "--until-verdict", str(tmp_path / "b"), "--out", str(finished), *RULE)
    assert not (tmp_path / "b").exists()  # the baseline's directory is not made either
    refused(f"cannot resume {finished} with --baseline-runtime: it was started against a "
            f"finished baseline", "--resume", "--out", str(finished), "--baseline-runtime", "old")


def test_campaign_json_is_whole_from_its_first_moment(env: dict[str, str],
                                                      tmp_path: Path) -> None:
    # a kill -9 right after the candidate's campaign.json appears must leave what --resume
    # needs: its runtime, and the rule with the baseline's runtime
    cand = tmp_path / "cand"
    cmd = [sys.executable, "-m", "kit.cli", "run", "host", "--runtime", "patched",
           "--baseline-runtime", "old", "--until-verdict", str(tmp_path / "base"), "--out",
           str(cand), "--label", "patched", *RULE]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (cand / "campaign.json").exists():
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    meta = json.loads((cand / "campaign.json").read_text())
    assert meta["build"]["runtime"] == "patched"
    assert (meta["until_verdict"]["baseline_runtime"], meta["until_verdict"]["stopped"]) == (
        "old", None)
