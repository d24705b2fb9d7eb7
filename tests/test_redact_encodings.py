"""Redaction knows the encoded forms of every credential it knows (issue #26, item 5): a
server that echoes the HTTP Basic header it got (``Basic <base64 of user:key>``, RFC 7617),
only its Base64, the key alone in Base64, or a percent-encoded form field must not print
the secret."""

from __future__ import annotations

import base64
from urllib.parse import quote, quote_plus

import pytest

from kit.redact import Redactor, basic_forms, encoded_forms

USER, KEY = "leaky-user", "k3y/With+Odd=chars&more"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("echo", [
    f"401 from hub: got Authorization: Basic {b64(f'{USER}:{KEY}')}",
    f"bad credentials {b64(f'{USER}:{KEY}')} (check them)",           # the base64 alone
    f"token {b64(KEY)} rejected",                                      # the key alone
    f"token={base64.urlsafe_b64encode(KEY.encode()).decode()}",        # URL-safe alphabet
    f"form: accessKey%3D{quote(KEY, safe='')}",                        # percent-encoded
    f"body user={quote_plus(USER)}&key={quote_plus(KEY)}",             # form encoding
    f"header {b64(f'{USER}:{KEY}').rstrip('=')} unpadded",
])
def test_a_secret_echoed_in_any_encoding_is_masked(echo: str) -> None:
    redactor = Redactor(urls=[f"https://{USER}:{quote(KEY, safe='')}@hub.example/wd/hub"])
    out = redactor.text(echo)
    for form in (KEY, b64(KEY).rstrip("="), b64(f"{USER}:{KEY}").rstrip("="),
                 quote(KEY, safe=""), quote_plus(KEY)):
        assert form not in out, (echo, out)
    assert "***" in out


def test_secrets_given_alone_pair_up_as_a_basic_credential() -> None:
    # a capabilities file gives the user name and the key separately (BrowserStack's
    # userName/accessKey): their Basic form is known too
    redactor = Redactor(secrets=[USER, KEY])
    text = f"echo: Basic{'%20'}{b64(f'{USER}:{KEY}')}"
    assert b64(f"{USER}:{KEY}").rstrip("=") not in redactor.text(text)


def test_encoded_forms_are_the_rfc_encodings_and_skip_short_ones() -> None:
    assert b64(KEY).rstrip("=") in encoded_forms(KEY)
    assert quote(KEY, safe="") in encoded_forms(KEY)
    assert encoded_forms("abc") == []  # too short to mask anywhere without noise
    assert basic_forms(USER, KEY)[0] == b64(f"{USER}:{KEY}").rstrip("=")


def test_plain_text_is_left_alone() -> None:
    redactor = Redactor(secrets=[USER, KEY])
    text = "launch base-00001 completed in 812 ms on emulator-5554"
    assert redactor.text(text) == text
