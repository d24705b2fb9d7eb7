"""Amplifier scenario keys for the host race witness (issue #8): opt-in, defaults unchanged.

``log`` (the ORT environment's log level) is the key this issue adds; it is an extension key
(kit.scenario.EXTENSION_DEFAULTS): a default scenario's URL never carries it, so apps that
predate it keep accepting every default scenario.
"""

from __future__ import annotations

import pytest

from kit.errors import UsageError
from kit.scenario import EXTENSION_DEFAULTS, Scenario, parse_scenario

PRODUCTION_URL = ("coldstart://run?mode=concurrent&sessions=3&models=melspectrogram,"
                  "embedding_model,hey_jarvis_v0.1&ep=xnnpack,cpu&threads=1&infer=1&release=1"
                  "&inject=none&load=path&warmup=none")


def test_defaults_stay_the_production_shape() -> None:
    s = parse_scenario("")
    assert (s.load, s.warmup, s.log, s.sessions, s.mode) == ("path", "none", "warning", 3,
                                                               "concurrent")
    assert s.to_url() == PRODUCTION_URL
    # host amplifiers left out of the URL at their production value: log and the hold (#39)
    assert EXTENSION_DEFAULTS == {"log": "warning", "hold": "0"}


def test_log_warning_spelled_out_is_the_same_scenario() -> None:
    assert parse_scenario("log=warning") == Scenario()
    assert parse_scenario("log=warning").to_url() == PRODUCTION_URL


def test_log_verbose_is_carried_last_and_round_trips() -> None:
    s = parse_scenario("log=verbose&models=hey_jarvis_v0.1&sessions=2&infer=0&id=b-00001")
    url = s.to_url()
    assert url.endswith("&warmup=none&log=verbose")
    assert url.startswith("coldstart://run?id=b-00001&mode=concurrent&sessions=2")
    assert parse_scenario(url) == s
    assert s.key() != Scenario().key()
    assert s.describe() == ("concurrent x2 xnnpack,cpu models=hey_jarvis_v0.1 infer=0 "
                            "log=verbose")


def test_bad_log_value_says_what_is_expected() -> None:
    with pytest.raises(UsageError) as err:
        parse_scenario("log=debug")
    assert err.value.one_line() == ("scenario key log='debug' is invalid: expected warning or "
                                    "verbose (see `coldstart run --help` for scenario keys)")
