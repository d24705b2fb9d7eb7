"""Credential redaction (kit/redact.py): URLs, free text, JSON-like values, log records."""

from __future__ import annotations

import json
import logging

import pytest

from kit.redact import (MASK, Redactor, install_log_redaction, is_secret_key, redact_text,
                        redact_url, redact_value, secrets_in_url)


@pytest.mark.parametrize("url, expected", [
    ("https://alice:k3yZ@hub.example.com/wd/hub?token=abc123&x=1",
     "https://***:***@hub.example.com/wd/hub?token=***&x=1"),
    ("http://bob@127.0.0.1:4723/", "http://***@127.0.0.1:4723/"),
    ("http://127.0.0.1:4723/wd/hub", "http://127.0.0.1:4723/wd/hub"),
    ("https://h.example/x?accessKey=zzzz&api_key=q&sig=s&Signature=t&page=2#frag",
     "https://h.example/x?accessKey=***&api_key=***&sig=***&Signature=***&page=2#frag"),
    ("https://u:p%40ss@h.example:443", "https://***:***@h.example:443"),
    ("not a url", "not a url"),
])
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


@pytest.mark.parametrize("name, secret", [
    ("token", True), ("accessKey", True), ("appium:keystorePassword", True), ("X-Api-Key", True),
    ("sig", True), ("authorization", True), ("appium:appPackage", False), ("platformName", False),
    ("appium:autoGrantPermissions", False), ("signal", False),
])
def test_is_secret_key(name: str, secret: bool) -> None:
    assert is_secret_key(name) is secret


def test_secrets_in_url_gives_raw_and_decoded_forms() -> None:
    found = secrets_in_url("https://alice:p%40ssw0rd@hub.example.com/?apikey=tok-123456")
    assert found == ("alice", "p%40ssw0rd", "p@ssw0rd", "tok-123456")


def test_redact_text_catches_urls_auth_headers_and_known_secrets() -> None:
    text = ("POST https://alice:k3yZ@hub.example.com/wd/hub/session failed; "
            "Authorization: Basic YWxpY2U6azN5Wg== ; key k3yZ echoed")
    out = redact_text(text, secrets=("k3yZ",))
    assert out == ("POST https://***:***@hub.example.com/wd/hub/session failed; "
                   "Authorization: Basic *** ; key *** echoed")


def test_redact_value_masks_secret_keys_and_nested_urls() -> None:
    caps = {"platformName": "Android", "appium:options": {"accessKey": "s3cr3t-key",
                                                         "newCommandTimeout": 120},
            "bstack:options": {"userName": "alice", "local": False},
            "urls": ["https://alice:pw12@farm.example/wd/hub"]}
    out = redact_value(caps)
    assert out == {"platformName": "Android",
                   "appium:options": {"accessKey": MASK, "newCommandTimeout": 120},
                   "bstack:options": {"userName": MASK, "local": False},
                   "urls": ["https://***:***@farm.example/wd/hub"]}
    assert caps["appium:options"]["accessKey"] == "s3cr3t-key"  # input untouched


def test_redactor_remembers_secrets_from_urls_and_caps() -> None:
    redactor = Redactor(urls=["https://alice:k3yZZ@hub.example.com/wd/hub"])
    redactor.add_secrets_from({"lt:options": {"accessKey": "LT-0123456789"}})
    message = "session for alice with k3yZZ and LT-0123456789 refused"
    assert redactor.text(message) == "session for *** with *** and *** refused"
    assert "k3yZZ" not in json.dumps(redactor.value({"error": message}))


def test_log_records_are_redacted_when_created(caplog: pytest.LogCaptureFixture) -> None:
    install_log_redaction(urls=["https://carol:zz-secret-9@farm.example/wd/hub"])
    with caplog.at_level(logging.DEBUG, logger="selenium.test"):
        logging.getLogger("selenium.test").debug(
            "POST %s %s", "https://carol:zz-secret-9@farm.example/wd/hub/session",
            '{"note": "zz-secret-9"}')
    assert caplog.messages == ['POST https://***:***@farm.example/wd/hub/session '
                               '{"note": "***"}']


def test_a_user_named_http_leaves_the_scheme_alone() -> None:
    url = "https://http:pw12345@hub.example/wd/hub"
    redactor = Redactor(urls=[url])
    assert redact_url(url) == "https://***:***@hub.example/wd/hub"
    assert redactor.url(url) == "https://***:***@hub.example/wd/hub"
    assert redactor.text(f"POST {url}/session and http://127.0.0.1:4723/status; user http") \
        == ("POST https://***:***@hub.example/wd/hub/session and http://127.0.0.1:4723/"
            "status; user ***")


def test_a_one_character_password_is_masked_where_it_stands_alone() -> None:
    redactor = Redactor(urls=["https://alice:1@hub.example/wd/hub"])
    assert "1" in redactor.secrets
    assert redactor.text("password 1 refused for alice (HTTP/1.1 from 10.0.0.1:4723)") == \
        "password *** refused for *** (HTTP/1.1 from 10.0.0.1:4723)"
    assert redactor.value({"note": "key=1"}) == {"note": "key=***"}
    assert redactor.url("https://alice:1@hub.example/wd/hub") == \
        "https://***:***@hub.example/wd/hub"


@pytest.mark.parametrize("url, expected, secret", [
    ("https://h.example/wd/hub#access_token=tok-98765", "https://h.example/wd/hub#access_token=***",
     "tok-98765"),
    ("https://h.example/wd/hub#A1b2C3d4E5f6G7h8", "https://h.example/wd/hub#***",
     "A1b2C3d4E5f6G7h8"),
    ("https://h.example/wd/hub?x=1#token=q1w2e3r4", "https://h.example/wd/hub?x=1#token=***",
     "q1w2e3r4"),
])
def test_secret_looking_fragments_are_masked(url: str, expected: str, secret: str) -> None:
    assert redact_url(url) == expected
    assert secret in secrets_in_url(url)
    assert Redactor(urls=[url]).text(f"echoed: {secret}") == "echoed: ***"


def test_secrets_of_urls_the_parser_refuses_are_still_found() -> None:
    assert secrets_in_url("http://bob:s3cr3t-pw@[::1:4723/wd/hub") == ("bob", "s3cr3t-pw")
    assert secrets_in_url("http://bob:s3cr3t-pw@127.0.0.1:99999") == ("bob", "s3cr3t-pw")


@pytest.mark.parametrize("url, expected, secrets", [
    ("alice:SECRETPW@127.0.0.1", "***:***@127.0.0.1", ("alice", "SECRETPW")),
    ("alice:SECRETPW@hub.example.com/wd/hub", "***:***@hub.example.com/wd/hub",
     ("alice", "SECRETPW")),
    ("//alice:SECRETPW@127.0.0.1:1/wd/hub", "//***:***@127.0.0.1:1/wd/hub",
     ("alice", "SECRETPW")),
    ("SECRETTOK@127.0.0.1:1", "***@127.0.0.1:1", ("SECRETTOK",)),
    ("hub.example.com/wd/hub?access_key=SECRETPW", "hub.example.com/wd/hub?access_key=***",
     ("SECRETPW",)),
    ("https://alice:SECRET%40PW@h.example/wd/hub", "https://***:***@h.example/wd/hub",
     ("SECRET%40PW", "SECRET@PW")),
    ("127.0.0.1:4723", "127.0.0.1:4723", ()),
])
def test_urls_without_a_scheme_are_redacted(url: str, expected: str,
                                            secrets: tuple[str, ...]) -> None:
    assert redact_url(url) == expected
    assert all(s in secrets_in_url(url) for s in secrets)
    assert Redactor(urls=[url]).text(f"--server {url!r}: echoed {url}") == \
        f"--server {expected!r}: echoed {expected}"


@pytest.mark.parametrize("text, expected", [
    ("--server 'alice:SECRETPW@127.0.0.1' is bad", "--server '***:***@127.0.0.1' is bad"),
    ("POST //SECRETTOK@hub.example.com/wd/hub", "POST //***@hub.example.com/wd/hub"),
    ("GET /wd/hub?access_key=SECRETPW&x=2&token=SECRETTOK&password=PW123",
     "GET /wd/hub?access_key=***&x=2&token=***&password=***"),
    ("caps {'accessKey': 'SECRETPW', 'sauce:options': {'accessKey': 'SECRETTOK'}}",
     "caps {'accessKey': '***', 'sauce:options': {'accessKey': '***'}}"),
    ('{"LT:Options": {"user": "bob", "accessKey": "SECRETPW"}, "platformName": "Android"}',
     '{"LT:Options": {"user": "***", "accessKey": "***"}, "platformName": "Android"}'),
    # what is not a credential stays: e-mail, JS stack frames, versioned and C++ symbols
    ("alice@example.com onPress@index.bundle:12:34 memcpy@GLIBC_2.14 std::foo@plt",
     "alice@example.com onPress@index.bundle:12:34 memcpy@GLIBC_2.14 std::foo@plt"),
])
def test_free_text_credentials_without_a_known_secret(text: str, expected: str) -> None:
    assert redact_text(text) == expected


@pytest.mark.parametrize("name", ["user", "userName", "username", "browserstack.user",
                                  "browserstack.key"])
def test_farm_account_names_are_secret_keys(name: str) -> None:
    assert is_secret_key(name)
    assert Redactor().value({"LT:Options": {name: "acct-1234"}}) == {"LT:Options": {name: MASK}}
