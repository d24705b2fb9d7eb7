"""What build a campaign ran is typed (``campaign.json``'s ``build_identity``): compare decides
"same build" and words the change from it, knowing no target's ``build`` keys, and a
``campaign.json`` of a kit before it still loads, its identity read from ``build``."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kit.analysis.compare import build_change, compare_campaigns, same_build
from kit.campaign import load_campaign
from kit.errors import DataError
from kit.scenario import parse_scenario
from kit.store.identity import BuildIdentity, OrtPatch, OrtVariant
from kit.store.meta import CampaignMeta, read_meta
from tests.helpers import counts, prepare_store

KIT = Path(__file__).resolve().parent.parent / "kit"

FIX = OrtPatch(name="fix", sha256="abcdef0123", summary="call_once", origin="PR 32489")
VARIANT = OrtVariant(source={"package": "onnxruntime", "version": "1.21.0", "sha256": "a"},
                     packaging={"version": "1.21.0+dfsg-1"}, patch=None, flags=("-DX=1",),
                     compiler="gcc 14", key="k1")


def campaign(root: Path, label: str, records: list, identity: BuildIdentity | None,
             build: dict | None = None):
    """A campaign written with this kit's ``campaign.json`` (``identity`` typed), loaded
    back."""
    extra: dict = {"build": build or {}}
    if identity is not None:
        extra["build_identity"] = identity
    store, _ = prepare_store(root / label, label=label, target="android",
                             scenario=parse_scenario("mode=concurrent"),
                             launches=len(records), resume=False, meta_extra=extra)
    for r in records:
        store.append(r)
    return load_campaign(store.path)


def test_the_identity_round_trips_through_campaign_json(tmp_path: Path) -> None:
    identity = BuildIdentity(artifact="ort_library", path="/r/libonnxruntime.so.1.21.0",
                             sha256="ab" * 32, program="/r/coldstart-workload",
                             program_sha256="cd" * 32, version="1.21.0",
                             ort_build=OrtVariant(**{**VARIANT.__dict__, "patch": FIX}))
    made = campaign(tmp_path, "b", counts("b", 1, 2), identity, {"runtime": "fix"})
    on_disk = json.loads((made.path / "campaign.json").read_text())
    assert on_disk["build_identity"]["ort_build"]["patch"]["name"] == "fix"
    assert on_disk["build_identity"]["sha256"] == "ab" * 32
    assert on_disk["build"] == {"runtime": "fix"}  # the target's own keys, beside it
    assert read_meta(made.path).build_identity == identity


def test_an_old_campaign_json_reads_its_identity_from_build(tmp_path: Path) -> None:
    """A campaign.json written before build_identity existed (the host's keys of then)."""
    old = {"schema": 1, "label": "b", "target": "host", "scenario": "coldstart://launch?",
           "launches": 2, "build": {"runtime": "fix", "ort_library": "/r/lib.so",
                                    "ort_library_sha256": "ab" * 32,
                                    "workload": "/r/w", "workload_hash": "cd" * 32,
                                    "ort_build": {**VARIANT.to_dict(),
                                                  "patch": FIX.to_dict()}}}
    (tmp_path / "campaign.json").write_text(json.dumps(old))
    meta = read_meta(tmp_path)
    assert meta.build_identity == BuildIdentity(
        artifact="ort_library", path="/r/lib.so", sha256="ab" * 32, program="/r/w",
        program_sha256="cd" * 32, version="1.21.0",
        ort_build=OrtVariant(**{**VARIANT.__dict__, "patch": FIX}))
    # Android's keys of then; a build with neither knows nothing
    apk = CampaignMeta.from_dict({**old, "build": {"apk": "app.apk", "apk_sha256": "ef" * 32}})
    assert (apk.build_identity.artifact, apk.build_identity.sha256) == ("apk", "ef" * 32)
    bare = CampaignMeta.from_dict({**old, "build": {"app": "A.app", "ort_build": "garbled"}})
    assert bare.build_identity == BuildIdentity() and not bare.build_identity.known
    # written back, the file says it in the new form (and keeps build as it was)
    again = json.loads(json.dumps(meta.to_dict()))
    assert again["build"] == old["build"]
    assert CampaignMeta.from_dict(again).build_identity == meta.build_identity


def test_a_bad_build_identity_is_one_line(tmp_path: Path) -> None:
    old = {"schema": 1, "label": "b", "target": "host", "scenario": "coldstart://launch?",
           "launches": 2, "build_identity": {"sha256": 7}}
    with pytest.raises(DataError, match=r"build_identity.*sha256"):
        CampaignMeta.from_dict(old)
    with pytest.raises(DataError, match=r"build_identity must be an object"):
        CampaignMeta.from_dict({**old, "build_identity": []})


def test_same_build_is_decided_by_the_identity_alone(tmp_path: Path) -> None:
    one = BuildIdentity(artifact="apk", path="app.apk", sha256="ef" * 32)
    base = campaign(tmp_path, "b", counts("b", 12, 20), one, {"package": "a", "x": 1})
    cand = campaign(tmp_path, "c", counts("c", 0, 100), one, {"package": "b", "y": 2})
    assert same_build(base.meta, cand.meta) == f"apk_sha256 {'ef' * 6}..."
    assert compare_campaigns(base, cand).decision.kind == "none"
    # the same bytes as another kind of artifact, or other bytes, are another build, whatever
    # the build provenance says
    for other in (BuildIdentity(artifact="app", sha256="ef" * 32),
                  BuildIdentity(artifact="apk", sha256="01" * 32)):
        c2 = campaign(tmp_path, f"c-{other.artifact}-{other.sha256[:2]}",
                      counts("c", 0, 100), other, {"package": "a", "x": 1})
        assert same_build(base.meta, c2.meta) is None
    # the same library in another program is another build
    lib = BuildIdentity(artifact="ort_library", sha256="ab" * 32, program="/w/a")
    p_b = campaign(tmp_path, "pb", counts("b", 12, 20), lib)
    p_c = campaign(tmp_path, "pc", counts("c", 0, 100),
                   BuildIdentity(artifact="ort_library", sha256="ab" * 32, program="/w/b"))
    assert same_build(p_b.meta, p_c.meta) is None
    assert compare_campaigns(p_b, p_c).decision.kind == "build"


def test_the_build_change_is_worded_from_the_identity() -> None:
    base = BuildIdentity(ort_build=VARIANT)
    fix = BuildIdentity(ort_build=OrtVariant(**{**VARIANT.__dict__, "patch": FIX,
                                                 "key": "k2"}))
    assert build_change(base, fix) == "patch none -> fix, sha256 abcdef01..."
    flags = BuildIdentity(ort_build=OrtVariant(**{**VARIANT.__dict__, "patch": FIX,
                                                   "flags": ("-DX=2",)}))
    assert build_change(base, flags) == ("onnxruntime build: flags differ; patch none -> "
                                         "fix, sha256 abcdef01...")
    assert build_change(BuildIdentity(version="1.21.0"), BuildIdentity(version="1.22.0")) == (
        "onnxruntime 1.21.0 -> 1.22.0")
    assert build_change(BuildIdentity(version="1.21.0"), BuildIdentity()) is None
    assert build_change(base, BuildIdentity(ort_build=VARIANT)) is None


def test_no_analysis_module_names_a_targets_build_key() -> None:
    """Compare and the reports read the typed identity, never a target's ``build`` keys."""
    keys = {"ort_library_sha256", "apk_sha256", "ort_build", "workload", "workload_hash",
            "ort_versions_reported", "runtime"}
    found = [(p.name, node.value) for folder in ("analysis", "report")
             for p in (KIT / folder).rglob("*.py")
             for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Constant) and node.value in keys]
    assert found == []


def test_an_identity_edited_against_its_provenance_is_refused(tmp_path: Path) -> None:
    """A positive control and a clean candidate of one library are "one build"; editing only
    the candidate's ``build_identity.sha256`` (its ``build`` still names the baseline's
    library) must not turn that into a bare FIXED: the campaign is refused in one line."""
    lib = BuildIdentity(artifact="ort_library", path="/r/lib.so", sha256="ab" * 32,
                        program="/r/w", program_sha256="cd" * 32)
    build = {"runtime": "fix", "ort_library": "/r/lib.so", "ort_library_sha256": "ab" * 32,
             "workload": "/r/w", "workload_hash": "cd" * 32}
    base = campaign(tmp_path, "b", counts("b", 12, 20), lib, build)
    cand = campaign(tmp_path, "c", counts("c", 0, 100), lib, build)
    assert compare_campaigns(base, cand).decision.kind == "none"  # one build: no verdict
    meta = cand.path / "campaign.json"
    data = json.loads(meta.read_text())
    data["build_identity"]["sha256"] = "ef" * 32
    meta.write_text(json.dumps(data))
    with pytest.raises(DataError) as info:
        compare_campaigns(base, load_campaign(cand.path))
    said = info.value.one_line()
    assert "build_identity.sha256 efefefefefef... is not build.ort_library_sha256 " \
           "abababababab..." in said and "\n" not in said
    # every field the provenance names is checked, the program's too
    for field, value in (("program_sha256", "01" * 32), ("path", "/r/other.so"),
                         ("program", "/r/other")):
        edited = {**data, "build_identity": {**data["build_identity"], "sha256": "ab" * 32,
                                             field: value}}
        with pytest.raises(DataError, match=f"build_identity.{field} "):
            CampaignMeta.from_dict(edited)
    # an identity with no provenance beside it, or one that agrees, still reads
    assert CampaignMeta.from_dict({**data, "build": {}}).build_identity.sha256 == "ef" * 32
    assert CampaignMeta.from_dict({**data, "build": {**build, "ort_library_sha256":
                                                     "ef" * 32}}).build_identity.sha256
