"""Device-farm crash evidence: what a farm keeps behind its REST API after a session,
pulled, kept as artifacts and matched to the campaign's launches (docs/farms.md).

No farm gives a crash report per launch: evidence is per session (BrowserStack, Sauce Labs,
LambdaTest) or per job / results directory (AWS Device Farm, Firebase Test Lab), and it is
ready only some time after the session ends. The layers:

* :mod:`.http` - the one HTTP layer (:class:`FarmHTTP`: an injected ``httpx.Client``, a
  deadline, capped backoff, ``429`` / ``Retry-After``, bounded downloads);
* :mod:`.base` - :class:`Farm` (the protocol), :class:`FarmSettings`, :class:`Artifact`,
  :class:`SessionEvidence`, :class:`FetchContext`;
* one module per farm: :mod:`.saucelabs` (real devices, and ``saucelabs-vdc`` for
  emulators/simulators), :mod:`.browserstack`, :mod:`.aws_device_farm` (boto3),
  :mod:`.lambdatest`, :mod:`.firebase`, :mod:`.headspin` (in-session only);
* :mod:`.shell` - the in-session shell pass (``dumpsys dropbox``, ``exit-info``) and
  :mod:`.testspec` (the AWS Device Farm custom test spec that runs it after the tests);
* :mod:`.attribute` - cuts a session's device log into launches (the app's ``COLDSTART``
  marker lines and its pid) and gives each crash block to its launch;
* :mod:`.pull` - pulls a campaign's sessions and writes the matched evidence into its
  records (``coldstart farm pull DIR``; ``coldstart run appium --farm NAME`` at the end).
"""

from __future__ import annotations

import base64
import importlib
from typing import Any, Callable

from ..errors import UsageError
from ..redact import Redactor
from .base import Farm, FarmSettings
from .http import FarmHTTP

__all__ = ["FARMS", "open_farm", "REF_FROM_RECORDS", "check_ref"]

#: farm name -> (module, factory function)
FARMS: dict[str, tuple[str, str]] = {
    "saucelabs": ("kit.farms.saucelabs", "make"),
    "saucelabs-vdc": ("kit.farms.saucelabs", "make_vdc"),
    "browserstack": ("kit.farms.browserstack", "make"),
    "aws-device-farm": ("kit.farms.aws_device_farm", "make"),
    "lambdatest": ("kit.farms.lambdatest", "make"),
    "firebase": ("kit.farms.firebase", "make"),
    "headspin": ("kit.farms.headspin", "make"),
}
#: farms whose evidence is found from the records' Appium session ids (the others need
#: ``--farm-ref``)
REF_FROM_RECORDS = frozenset({"saucelabs", "saucelabs-vdc", "browserstack", "lambdatest",
                              "headspin"})


def open_farm(settings: FarmSettings, redactor: Redactor, *,
              client_factory: Callable[..., Any] | None = None,
              clock: Callable[[], float] | None = None,
              sleep: Callable[[float], None] | None = None,
              wall: Callable[[], float] | None = None) -> tuple[Farm, FarmHTTP]:
    """The adapter of ``settings.name`` and its :class:`FarmHTTP`: an ``httpx.Client``
    (``client_factory(**kwargs)``, default :class:`httpx.Client`) with the farm's
    credentials (HTTP Basic, or a bearer token), which the redactor learns first, sent
    only to the adapter's own API origins (its ``api_urls``;
    :func:`kit.farms.http.OriginAuth`).

    Raises:
        UsageError: an unknown farm, a ``--farm-api`` that is not an http(s) URL, a
            ``--farm-ref`` that is not one line, or credentials not in the environment.
    """
    import time

    import httpx

    from .http import OriginAuth, check_api_url, origin_of

    if settings.name not in FARMS:
        raise UsageError(f"--farm {settings.name[:40]!r} is not a known farm",
                         f"one of {', '.join(FARMS)}")
    if settings.api is not None:
        check_api_url(settings.api)
    if settings.ref is not None:
        check_ref(settings.ref)
    module, factory = FARMS[settings.name]
    mod = importlib.import_module(module)
    farm, auth = getattr(mod, factory)(settings)
    origins = {o for o in (origin_of(u) for u in getattr(farm, "api_urls", ())) if o}
    kwargs: dict[str, Any] = {"timeout": httpx.Timeout(60.0, connect=20.0),
                              "follow_redirects": True,
                              "headers": {"User-Agent": "coldstart-farm-evidence"}}
    if isinstance(auth, tuple):
        user, key = auth
        redactor.add_secrets([user, key, base64.b64encode(f"{user}:{key}".encode()).decode()])
        kwargs["auth"] = OriginAuth(httpx.BasicAuth(user, key), origins)
    elif isinstance(auth, str):
        redactor.add_secrets([auth])
        kwargs["auth"] = OriginAuth(auth, origins)
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"):
        if settings.env.get(name):
            redactor.add_secrets([settings.env[name]])
    client = (client_factory or httpx.Client)(**kwargs)
    http = FarmHTTP(client, redactor, deadline_s=settings.deadline_s,
                    clock=clock or time.monotonic, sleep=sleep or time.sleep,
                    wall=wall or time.time)
    http.origins = origins
    env = getattr(mod, "ENV", None)
    names = " and ".join(env) if isinstance(env, tuple) else env
    if names:
        http.credentials_hint = (f"export a current {names} (the farm refused them: expired "
                                 "or revoked), then pull again")
    return farm, http


def check_ref(ref: str) -> str:
    """``ref`` (``--farm-ref``, or a session id the records carry) when it is one line of
    printable characters (at most 2048).

    Raises:
        UsageError: a newline, a control character, whitespace or an empty value.
    """
    if not ref or len(ref) > 2048 or any(c.isspace() or ord(c) < 32 or ord(c) == 127
                                         for c in ref):
        raise UsageError(f"--farm-ref {ref[:80]!r} is not one farm session, job or results "
                         "reference (no whitespace or control character)",
                         "copy the session id, the job ARN or gs://BUCKET/DIR exactly")
    return ref
