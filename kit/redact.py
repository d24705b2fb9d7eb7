"""Credential redaction for URLs, free text, JSON-like values and log records.

Device farms take credentials in the Appium server URL (``https://USER:KEY@hub.example/wd/hub``),
in token-like query parameters (``?token=...``, ``?apiKey=...``) and in capabilities
(``"accessKey": "..."``). None of them may reach a log line, a launch record,
``campaign.json`` or a report. The API is small:

* :func:`redact_url` - one URL: userinfo becomes ``***`` (``***:***`` with a password), the
  value of every token-like query parameter becomes ``***``, and so does a ``#fragment``'s
  (``#access_token=...``); a fragment that is one opaque token is masked whole;
* :func:`redact_text` - free text: every URL in it through :func:`redact_url`, HTTP
  ``Basic``/``Bearer`` credentials, plus any known secret value given (never inside a URL's
  scheme, so a user named ``http`` leaves ``https://`` alone; a secret shorter than 4
  characters, e.g. a password ``1``, only where it stands alone, not inside a word or a
  number such as ``HTTP/1.1``);
* :func:`redact_value` - a JSON-like value (dicts, lists, strings): strings through
  :func:`redact_text`, and string values under secret-looking keys (:func:`is_secret_key`)
  replaced whole;
* :class:`Redactor` - remembers the secrets found in the URLs it was given (so a secret that
  shows up outside a URL, e.g. echoed in an error message, is still caught), with their
  encoded forms (percent-encoded, Base64, and the HTTP Basic ``user:key`` of each pair:
  :func:`encoded_forms`, :func:`basic_forms`), and applies the three functions above with
  them;
* :func:`install_log_redaction` - makes every :mod:`logging` record pass through a
  :class:`Redactor` as it is created (idempotent; adds secrets on later calls).

What counts as token-like: a query parameter or key whose name, lower-cased with ``-`` and
``_`` removed, contains ``token``, ``secret``, ``passw``, ``pwd``, ``key``, ``auth``,
``credential`` or ``signature``, or is exactly ``sig``, ``user``, ``username`` or ``userid``
(a farm's account name, half of its credential; a ``vendor:`` or ``dotted.`` prefix is
ignored). In free text a URL without a scheme counts when it reads ``//USERINFO@host`` or
``USER:PASSWORD@host``; a bare ``word@host`` (an e-mail address, ``fn@file`` in a JS stack)
only when its secret is known (:class:`Redactor`). Over-redaction is preferred to a
leak. Values are replaced, never parsed: nothing here raises on odd input.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from typing import Any, Iterable
from urllib.parse import quote, quote_plus, unquote

__all__ = ["MASK", "is_secret_key", "redact_url", "redact_text", "redact_value",
           "secrets_in_url", "Redactor", "install_log_redaction", "redact_known",
           "encoded_forms", "basic_forms"]

#: What every secret is replaced with.
MASK = "***"

_SECRET_PARTS = ("token", "secret", "passw", "pwd", "key", "auth", "credential", "signature")
#: Exact names that are secret too: a signature, and a farm's account name (LambdaTest's
#: ``user``, Sauce Labs' ``username``, BrowserStack's ``userName``), half of the credential
#: as a URL's user name is.
_SECRET_EXACT = frozenset({"sig", "user", "username", "userid"})
#: A URL in free text: a scheme, ``://`` and everything up to whitespace or a quote/bracket.
_URL_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_HTTP_AUTH_RE = re.compile(r"(?i)\b(basic|bearer)\s+[A-Za-z0-9._~+/=-]{6,}")
#: A URL's scheme (RFC 3986 section 3.1) and its ``://``.
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: A host (a name, an IPv4 address or a bracketed IPv6 address) and an optional port.
_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*)"
#: Scheme-less userinfo in free text: ``//USERINFO@host`` (a network-path reference, RFC
#: 3986 section 4.2) or ``USER:PASSWORD@host``. A bare ``word@host`` is left alone in free
#: text (an e-mail address, a JS stack's ``fn@file``, ``memcpy@GLIBC``): a user-only token
#: given as a URL is caught as a known secret instead (:class:`Redactor`).
_BARE_USERINFO_RE = re.compile(
    r"(?<![\w.%~+:/@-])(?P<slashes>//)(?P<info>[^\s/?#@'\"<>`]{1,512})@(?=" + _HOST + r")"
    r"|(?<![\w.%~+:/@-])(?P<user>[A-Za-z0-9._~%!$&*+,;=-]{1,256}):(?P<pw>[^\s/?#@:'\"<>`]"
    r"[^\s/?#@'\"<>`]{0,512})@(?=" + _HOST + r")")
#: A query-like ``?name=value`` / ``&name=value`` / ``;name=value`` in free text.
_QUERY_PARAM_RE = re.compile(r"(?P<sep>[?&;])(?P<name>[^\s=&#;?'\"<>`]{1,128})="
                             r"(?P<value>[^\s&#;'\"<>`]*)")
#: A quoted ``"name": "value"`` or ``'name': 'value'`` pair in free text (JSON, a Python
#: dict's repr in an exception's message).
_QUOTED_PAIR_RE = re.compile(
    r"(?P<q1>[\"'])(?P<name>[^\"'\s]{1,80})(?P=q1)(?P<mid>\s*[:=]\s*)(?P<q2>[\"'])"
    r"(?P<value>(?:\\.|(?!(?P=q2)).){0,4096}?)(?P=q2)")
#: Secrets at least this long are masked wherever they appear; shorter ones only as a
#: token of their own (masking every "1" inside other words and numbers would be noise).
_MIN_SECRET_CHARS = 4
#: A fragment that is one opaque token (letters and digits, 12+ characters) looks secret.
_OPAQUE_TOKEN_RE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9._~+/=-]{12,}$")


#: A token in a URL's path: HeadSpin's Appium URL ``/v0/<token>/wd/hub`` and its device APIs
#: ``/v0/<token>/adb/<serial>/...`` / ``/v0/<token>/idevice/...`` (the token is the path
#: segment after ``/v0/``; docs/farms.md), and any 32+ hex-digit segment on a
#: ``headspin.io`` host.
_PATH_TOKEN_RE = re.compile(r"(?<=/v0/)(?P<token>[^/?#]+)"
                            r"(?=/(?:wd/hub|adb|idevice)(?:[/?#]|$))")
_HEX_SEGMENT_RE = re.compile(r"(?<=/)(?P<token>[0-9A-Fa-f]{32,})(?=[/?#]|$)")


def _path_tokens(hostport: str, path: str) -> list[str]:
    """The secret segments of a URL path (:data:`_PATH_TOKEN_RE`)."""
    found = [m.group("token") for m in _PATH_TOKEN_RE.finditer(path)]
    host = hostport.rsplit("@", 1)[-1].split(":", 1)[0].lower()
    if host == "headspin.io" or host.endswith(".headspin.io"):
        found += [m.group("token") for m in _HEX_SEGMENT_RE.finditer(path)]
    return [t for t in found if t and t != MASK]


def _redact_path(hostport: str, path: str) -> str:
    for token in sorted(set(_path_tokens(hostport, path)), key=len, reverse=True):
        path = path.replace(f"/{token}", f"/{MASK}")
    return path


def is_secret_key(name: str) -> bool:
    """True when a query parameter, capability or header name looks like it holds a secret
    (see the module doc for the rule). ``appium:`` style vendor prefixes and dotted ones
    (``browserstack.user``) are ignored."""
    bare = re.split(r"[:.]", name)[-1].lower().replace("-", "").replace("_", "")
    return bare in _SECRET_EXACT or any(part in bare for part in _SECRET_PARTS)


def _split_userinfo(netloc: str) -> tuple[str | None, str]:
    if "@" not in netloc:
        return None, netloc
    userinfo, _, hostport = netloc.rpartition("@")
    return userinfo, hostport


def _redact_query(query: str) -> str:
    parts = []
    for piece in query.split("&"):
        name, sep, _value = piece.partition("=")
        if sep and is_secret_key(unquote(name)):
            parts.append(f"{name}={MASK}")
        else:
            parts.append(piece)
    return "&".join(parts)


def _redact_fragment(fragment: str) -> str:
    """A fragment's ``name=value`` pairs as a query's; one opaque token masked whole."""
    if "=" in fragment:
        return _redact_query(fragment)
    return MASK if _OPAQUE_TOKEN_RE.match(fragment) else fragment


def _split_url(url: str) -> tuple[str, str, str]:
    """``url`` as ``(prefix, netloc, tail)``: the prefix is ``scheme://``, ``//`` or empty
    (a URL written without a scheme, ``USER:KEY@host/wd/hub``); the tail starts at the first
    ``/``, ``?`` or ``#`` after the netloc."""
    match = _SCHEME_RE.match(url)
    prefix = match.group(0) if match else ("//" if url.startswith("//") else "")
    rest = url[len(prefix):]
    end = len(rest)
    for mark in "/?#":
        pos = rest.find(mark)
        if pos >= 0:
            end = min(end, pos)
    return prefix, rest[:end], rest[end:]


def redact_url(url: str) -> str:
    """``url`` with its userinfo and token-like query values masked; otherwise unchanged
    (same scheme, host, port, path, parameter order and encoding). A URL without a scheme
    (``USER:KEY@host``, ``//USER:KEY@host``, ``TOKEN@host/wd/hub``) is read the same way.

    Examples:
        ``https://alice:k3y@hub.example.com/wd/hub?token=abc&x=1`` ->
        ``https://***:***@hub.example.com/wd/hub?token=***&x=1``;
        ``alice:k3y@hub.example.com`` -> ``***:***@hub.example.com``.
    """
    if not isinstance(url, str):
        return url
    prefix, netloc, tail = _split_url(url)
    userinfo, hostport = _split_userinfo(netloc)
    if userinfo is not None:
        netloc = (f"{MASK}:{MASK}" if ":" in userinfo else MASK) + "@" + hostport
    tail, hsep, fragment = tail.partition("#")
    path, qsep, query = tail.partition("?")
    path = _redact_path(hostport, path)
    tail = path + (f"?{_redact_query(query)}" if qsep else "") + \
        (f"#{_redact_fragment(fragment)}" if hsep else "")
    return f"{prefix}{netloc}{tail}"


def secrets_in_url(url: str) -> tuple[str, ...]:
    """The secret values in ``url``: user name, password, token-like query and fragment
    values and an opaque fragment, each as written and percent-decoded (empty tuple when
    there are none). A URL without a scheme (``USER:KEY@host``, ``//TOKEN@host``) counts.
    Never raises: the URL is read by hand, so one that :func:`urllib.parse.urlsplit`
    refuses (a bad port, a broken IPv6 host) still gives its secrets."""
    if not isinstance(url, str):
        return ()
    found: list[str] = []
    _prefix, netloc, tail = _split_url(url)
    userinfo, _ = _split_userinfo(netloc)
    if userinfo:
        found.extend(p for p in userinfo.split(":", 1) if p)
    found.extend(_path_tokens(netloc, tail.partition("#")[0].partition("?")[0]))
    rest, _h, fragment = tail.partition("#")
    query = rest.partition("?")[2]
    for piece in query.split("&") + (fragment.split("&") if "=" in fragment else []):
        name, sep, value = piece.partition("=")
        if sep and value and is_secret_key(unquote(name)):
            found.append(value)
    if fragment and "=" not in fragment and _OPAQUE_TOKEN_RE.match(fragment):
        found.append(fragment)
    out: list[str] = []
    for value in found:
        for form in (value, unquote(value), quote(unquote(value), safe="")):
            if form and form != MASK and form not in out:
                out.append(form)
    return tuple(out)


#: the fewest characters of an encoded form that is masked (shorter ones are too common)
_MIN_ENCODED_CHARS = 8
#: known secrets whose pairs (``user:key``) get Basic forms: a farm has a user and a key
_MAX_PAIRED = 8


def _b64_forms(raw: bytes) -> list[str]:
    """Base64 of ``raw`` as written in an HTTP ``Authorization: Basic`` header (RFC 7617,
    RFC 4648 section 4), without its ``=`` padding (so a padded one is caught too), and
    the URL-safe alphabet's (section 5)."""
    std = base64.b64encode(raw).decode("ascii").rstrip("=")
    safe = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return [f for f in dict.fromkeys((std, safe)) if len(f) >= _MIN_ENCODED_CHARS]


def encoded_forms(secret: str) -> list[str]:
    """The forms in which ``secret`` may be echoed besides as written: percent-encoded
    (``quote`` and ``quote_plus``, RFC 3986 section 2.1, and as form data) and Base64 (a
    key sent alone as a Basic or token header); only forms that differ from it and have
    at least 8 characters."""
    if not isinstance(secret, str) or not secret:
        return []
    forms = [quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret)]
    if len(secret) >= _MIN_SECRET_CHARS:
        forms += _b64_forms(secret.encode("utf-8"))
    return [f for f in dict.fromkeys(forms) if f != secret and len(f) >= _MIN_ENCODED_CHARS]


def basic_forms(user: str, key: str) -> list[str]:
    """The HTTP Basic credential of ``user`` and ``key``: Base64 of ``user:key`` (RFC 7617
    section 2), unpadded, standard and URL-safe alphabets, and its percent-encoding."""
    if not user and not key:
        return []
    forms = _b64_forms(f"{user}:{key}".encode("utf-8"))
    return list(dict.fromkeys(forms + [quote(f, safe="") for f in forms]))


def _mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret masked: a long one anywhere, a short one (under
    :data:`_MIN_SECRET_CHARS`) where no letter, digit, ``_`` or ``.`` touches it."""
    for secret in sorted({s for s in secrets if s and s.strip("*")}, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_CHARS:
            text = text.replace(secret, MASK)
        else:
            text = re.sub(rf"(?<![\w.]){re.escape(secret)}(?![\w.])", MASK, text)
    return text


def _bare_userinfo(match: re.Match[str]) -> str:
    if match.group("slashes"):
        return "//" + (f"{MASK}:{MASK}" if ":" in match.group("info") else MASK) + "@"
    return f"{MASK}:{MASK}@"


def _query_param(match: re.Match[str]) -> str:
    if match.group("value") and is_secret_key(unquote(match.group("name"))):
        return f"{match.group('sep')}{match.group('name')}={MASK}"
    return match.group(0)


def _quoted_pair(match: re.Match[str]) -> str:
    if match.group("value") and is_secret_key(match.group("name")):
        q1, q2 = match.group("q1"), match.group("q2")
        return f"{q1}{match.group('name')}{q1}{match.group('mid')}{q2}{MASK}{q2}"
    return match.group(0)


#: HeadSpin's path token in free text without a scheme (``host:7016/v0/<token>/wd/hub``,
#: ``host/v0/<token>/adb/<serial>/shell``).
_PLAIN_PATH_TOKEN_RE = re.compile(r"(?<=/v0/)[^/\s?#'\"<>`]+"
                                  r"(?=/(?:wd/hub|adb/|idevice/))")


def _redact_plain(text: str, known: tuple[str, ...]) -> str:
    """Text outside any ``scheme://`` URL: HTTP auth, scheme-less userinfo, query-like
    secret parameters, quoted secret pairs, HeadSpin path tokens, then the known
    secrets."""
    text = _HTTP_AUTH_RE.sub(lambda m: f"{m.group(1)} {MASK}", text)
    text = _PLAIN_PATH_TOKEN_RE.sub(MASK, text)
    text = _BARE_USERINFO_RE.sub(_bare_userinfo, text)
    text = _QUERY_PARAM_RE.sub(_query_param, text)
    text = _QUOTED_PAIR_RE.sub(_quoted_pair, text)
    return _mask_secrets(text, known)


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every URL redacted (:func:`redact_url`), scheme-less userinfo
    (``USER:KEY@host``, ``//TOKEN@host``), token-like ``?name=value`` parameters, quoted
    secret pairs (``"accessKey": "..."``) and HTTP ``Basic``/``Bearer`` credentials
    masked, and the given secret values replaced by :data:`MASK` (longest first; never
    inside a URL's ``scheme://``; one shorter than 4 characters only where it stands
    alone, see the module doc)."""
    if not isinstance(text, str) or not text:
        return text
    known = tuple(s for s in secrets if isinstance(s, str))
    pieces: list[str] = []
    last = 0
    for match in _URL_RE.finditer(text):
        pieces.append(_redact_plain(text[last:match.start()], known))
        scheme, sep, rest = redact_url(match.group(0)).partition("://")
        pieces.append(scheme + sep + _mask_secrets(rest, known))
        last = match.end()
    pieces.append(_redact_plain(text[last:], known))
    return "".join(pieces)


def redact_value(value: Any, secrets: Iterable[str] = (), *, by_key: bool = True) -> Any:
    """A copy of a JSON-like value (dict, list, tuple, str, numbers...) with every string
    passed through :func:`redact_text` and, with ``by_key`` (for values that come from
    outside, such as a farm's session record), every string value under a secret-looking
    key (:func:`is_secret_key`) replaced by :data:`MASK`. Without ``by_key`` (values the
    kit made itself, whose keys name no secret: a crash ``signature``) only what is secret
    is masked: known secrets, URL credentials and tokens, ``Basic``/``Bearer`` values.
    Non-string leaves are kept."""
    known = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, known)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if by_key and isinstance(key, str) and is_secret_key(key) and \
                    isinstance(item, str):
                out[key] = MASK
            else:
                out[key] = redact_value(item, known, by_key=by_key)
        return out
    if isinstance(value, list):
        return [redact_value(item, known, by_key=by_key) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_value(item, known, by_key=by_key) for item in value)
    return value


class Redactor:
    """Redacts text and values with the secrets of the URLs (and values) it was given.

    Args:
        urls: URLs whose credentials are secrets (e.g. the Appium server URL).
        secrets: more secret values (e.g. an access key from a capabilities file).

    Thread-safe: secrets can be added while other threads redact.
    """

    def __init__(self, urls: Iterable[str] = (), secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: tuple[str, ...] = ()
        self._given: list[str] = []  # as given, without the derived encodings
        for url in urls:
            self.add_url(url)
        self.add_secrets(secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret values known so far (never print these)."""
        return self._secrets

    def add_url(self, url: str) -> None:
        """Remember the secrets in ``url`` (:func:`secrets_in_url`)."""
        self.add_secrets(secrets_in_url(url))

    def add_secrets(self, values: Iterable[str]) -> None:
        """Remember more secret values (of any length; see :func:`redact_text` for how a
        short one is masked)."""
        with self._lock:
            merged = list(self._secrets)
            for value in values:
                if isinstance(value, str) and value.strip("*") and value not in merged:
                    merged.append(value)
                    self._given.append(value)
                    # its encodings: a server echoes a Basic header or a form field as sent
                    merged.extend(f for f in encoded_forms(value) if f not in merged)
            paired = self._given[:_MAX_PAIRED]
            for user in paired:  # every known pair as a Basic credential (user:key)
                for key in paired:
                    if user != key:
                        merged.extend(f for f in basic_forms(user, key) if f not in merged)
            self._secrets = tuple(merged)

    def add_secrets_from(self, value: Any) -> None:
        """Remember the string values under secret-looking keys of a JSON-like value (e.g.
        ``{"bstack:options": {"accessKey": "..."}}``), at any depth."""
        found: list[str] = []

        def walk(item: Any) -> None:
            if isinstance(item, dict):
                for key, sub in item.items():
                    if isinstance(key, str) and is_secret_key(key) and isinstance(sub, str):
                        found.append(sub)
                    else:
                        walk(sub)
            elif isinstance(item, (list, tuple)):
                for sub in item:
                    walk(sub)
            elif isinstance(item, str) and ("://" in item or "@" in item):
                found.extend(secrets_in_url(item))

        walk(value)
        self.add_secrets(found)

    def url(self, url: str) -> str:
        """:func:`redact_url`, then the known secrets."""
        return redact_text(redact_url(url), self._secrets)

    def text(self, text: str) -> str:
        """:func:`redact_text` with the known secrets."""
        return redact_text(text, self._secrets)

    def value(self, value: Any, *, by_key: bool = True) -> Any:
        """:func:`redact_value` with the known secrets (``by_key``: see there)."""
        return redact_value(value, self._secrets, by_key=by_key)


_LOG_REDACTOR: Redactor | None = None
_LOG_LOCK = threading.Lock()


def install_log_redaction(urls: Iterable[str] = (), secrets: Iterable[str] = ()) -> Redactor:
    """Make every :mod:`logging` record redacted when it is created (selenium, urllib3 and
    the kit's own loggers alike): its message is formatted and passed through the returned
    :class:`Redactor`. Idempotent: later calls add their URLs' secrets to the same redactor.
    """
    global _LOG_REDACTOR
    with _LOG_LOCK:
        if _LOG_REDACTOR is None:
            redactor = Redactor()
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                try:
                    message = record.getMessage()
                except Exception:  # a broken format string: leave it to logging's handler
                    return record
                redacted = redactor.text(message)
                if redacted != message or record.args:
                    record.msg, record.args = redacted, None
                return record

            logging.setLogRecordFactory(factory)
            _LOG_REDACTOR = redactor
        redactor = _LOG_REDACTOR
    for url in urls:
        redactor.add_url(url)
    redactor.add_secrets(secrets)
    return redactor


def redact_known(text: str) -> str:
    """``text`` through :func:`redact_text` with every secret the log redaction knows so far
    (:func:`install_log_redaction`), e.g. for a ``--debug`` traceback."""
    redactor = _LOG_REDACTOR
    return redactor.text(text) if redactor is not None else redact_text(text)
