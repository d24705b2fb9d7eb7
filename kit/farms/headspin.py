"""HeadSpin: the in-session shell pass only (:class:`kit.farms.shell.HeadSpinShell`, its adb
API ``POST {api}/v0/adb/{serial}/shell``).

HeadSpin exposes raw adb over REST while the session runs, so the kit reads ``dumpsys
dropbox`` and ``exit-info`` per launch through it (``coldstart run appium --farm headspin``)
and the evidence is in the launch records when the campaign ends. Its session-data download
(``/v0/sessions/{id}``...) is not read: a pull of a HeadSpin campaign fetches nothing and
says so. Auth: ``HEADSPIN_API_TOKEN`` as ``Authorization: Bearer``; the token is also the
path segment of HeadSpin's Appium URL (``/v0/<token>/wd/hub``), which :mod:`kit.redact`
masks.
"""

from __future__ import annotations

from ..errors import UsageError
from .base import FarmSettings, FetchContext, SessionEvidence
from .shell import HEADSPIN_TOKEN_ENV

__all__ = ["HeadSpin", "make"]


class HeadSpin:
    """:class:`kit.farms.base.Farm` for HeadSpin (nothing to fetch after the session)."""

    name = "headspin"

    def fetch(self, ref: str, ctx: FetchContext) -> SessionEvidence:
        ev = SessionEvidence(farm=self.name, session=ref)
        ev.notes.append("HeadSpin: the evidence is read in the session (adb shell pass, "
                        "extra.shell of each launch); nothing is fetched after it")
        return ev


def make(settings: FarmSettings) -> tuple[HeadSpin, str]:
    """The adapter and its bearer token. Raises UsageError (no token)."""
    token = settings.env.get(HEADSPIN_TOKEN_ENV)
    if not token:
        raise UsageError(f"--farm headspin needs {HEADSPIN_TOKEN_ENV} in the environment",
                         "export it (it is never written to a file)")
    return HeadSpin(), token
