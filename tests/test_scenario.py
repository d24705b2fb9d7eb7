"""Scenario URL: parsing, canonical form, validation (kit/scenario.py)."""

from __future__ import annotations

import json

import pytest

from kit.errors import UsageError
from kit.protocol import vectors_path
from kit.scenario import Scenario, parse_scenario

VECTORS = json.loads(open(vectors_path()).read())["scenario"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_shared_scenario_vectors(vector: dict) -> None:
    if not vector["valid"]:
        with pytest.raises(UsageError):
            parse_scenario(vector["url"])
        return
    scenario = parse_scenario(vector["url"])
    want = vector["scenario"]
    assert scenario.id == want["id"]
    assert scenario.mode == want["mode"]
    assert scenario.sessions == want["sessions"]
    assert list(scenario.models) == want["models"]
    assert list(scenario.ep) == want["ep"]
    assert (scenario.threads, scenario.infer, scenario.release) == (
        want["threads"], want["infer"], want["release"])
    inject = None if scenario.inject is None else {"kind": scenario.inject[0],
                                                    "phase": scenario.inject[1]}
    assert inject == want["inject"]
    assert (scenario.log, scenario.hold) == (want.get("log", "warning"), want.get("hold", 0))
    assert scenario.to_url() == vector["canonical"]
    assert parse_scenario(scenario.to_url()) == scenario


def test_defaults_are_the_production_shape() -> None:
    s = parse_scenario("")
    assert (s.mode, s.sessions, s.ep, s.load, s.warmup, s.inject) == (
        "concurrent", 3, ("xnnpack", "cpu"), "path", "none", None)
    assert s.models == ("melspectrogram", "embedding_model", "hey_jarvis_v0.1")


@pytest.mark.parametrize("text", [
    "mode=serial&sessions=8",
    "mode=serial,sessions=8",
    "coldstart://run?mode=serial&sessions=8",
])
def test_three_spellings_agree(text: str) -> None:
    s = parse_scenario(text)
    assert (s.mode, s.sessions) == ("serial", 8)


def test_comma_spelling_keeps_list_values() -> None:
    s = parse_scenario("mode=serial,models=melspectrogram,embedding_model,ep=cpu")
    assert s.models == ("melspectrogram", "embedding_model")
    assert s.ep == ("cpu",)


def test_key_ignores_launch_id() -> None:
    a = parse_scenario("id=a-1&mode=serial")
    b = parse_scenario("id=b-2&mode=serial")
    assert a != b and a.key() == b.key()
    assert "id=" not in a.key()


@pytest.mark.parametrize("text, fragment", [
    ("colour=red", "unknown scenario key 'colour'"),
    ("sessions=abc", "sessions='abc'"),
    ("sessions=1000", "from 1 to 64"),
    ("inject=segv", "KIND@PHASE"),
    ("inject=boom@start", "inject='boom@start'"),
    ("ep=xnnpack,xnnpack", "ep='xnnpack,xnnpack'"),
    ("http://run?mode=serial", "not a coldstart://run"),
    ("coldstart://other?mode=serial", "not a coldstart://run"),
])
def test_bad_input_is_one_clear_usage_error(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_scenario(text)
    assert fragment in info.value.one_line()
    assert "\n" not in info.value.one_line()


def test_describe_names_non_default_keys() -> None:
    s = Scenario(mode="serial", sessions=8, load="bytes")
    assert s.describe() == "serial x8 xnnpack,cpu load=bytes"


def test_url_values_are_shell_and_url_safe() -> None:
    url = parse_scenario("id=x.y_z-1&inject=segv@sessions-created").to_url()
    assert url.startswith("coldstart://run?id=x.y_z-1&mode=concurrent")
    assert all(c.isalnum() or c in ":/?=&,@._-" for c in url)


def test_hold_turns_on_verbose_logging_and_is_host_only() -> None:
    from kit.scenario import HOST_ONLY_KEYS

    s = parse_scenario("hold=20")
    assert (s.hold, s.log) == (20, "verbose")
    assert s.describe() == "concurrent x3 xnnpack,cpu log=verbose hold=20"
    assert parse_scenario("hold=0").log == "warning"
    assert HOST_ONLY_KEYS == ("hold",)
    # the mobile apps refuse it: every vector with the key says so (kit/data/protocol_vectors)
    held = [v for v in VECTORS if "hold=" in v["url"] and v["valid"]]
    assert held and all(v["app"]["valid"] is False for v in held)


@pytest.mark.parametrize("text, why", [
    ("hold=5&log=warning", "log"),
    ("hold=-1", "hold"),
    ("hold=10001", "hold"),
    ("hold=1.5", "hold"),
])
def test_bad_holds_are_refused(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=f"scenario key {why}="):
        parse_scenario(text)
