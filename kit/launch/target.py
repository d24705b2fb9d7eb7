"""The ``Target`` protocol: what every target gives a campaign (the contract between
``kit/targets/`` and the campaign session, :mod:`kit.campaign.session`).

A target turns a typed configuration into a :class:`PreparedTarget`: the launchers (one per
device, each a :class:`kit.launch.Launcher`), the build identity and launch options that
``campaign.json`` keeps, and ``open``/``close``/``finish`` hooks around the campaign.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol, Sequence

from ..records import LaunchRecord
from ..scenario import Scenario
from ..store.identity import BuildIdentity
from ..store.meta import RunSetup
from .launcher import Launcher

__all__ = ["LogFn", "Target", "PreparedTarget"]

#: One line of progress for the user (the CLI prints it on stderr).
LogFn = Callable[[str], None]


def _nothing() -> None:
    return None


@dataclasses.dataclass
class PreparedTarget:
    """A target ready to launch: what a campaign needs from it.

    Attributes:
        target: the target name (``host``, ``android``, ``ios-sim``...).
        launchers: one :class:`kit.launch.Launcher` per device; they run in parallel.
        build: build provenance for ``campaign.json`` (library and APK hashes, runtime...),
            the target's own keys.
        identity: what was built or installed, typed
            (:class:`~kit.store.identity.BuildIdentity`): what compare reads to tell
            whether two campaigns ran one build.
        options: the options that shape launches (poison, timeouts, delivery...); a resumed
            campaign must have the same.
        devices: one dict per device for ``campaign.json``.
        open: called once before the first launch (sessions, environment).
        close: called once after the campaign, whatever happened.
        finish: called after the launches with every record of the campaign; returns
            provenance known only then (e.g. the ORT version the app reported), merged into
            ``build``.
        setup: the run setup, typed (:class:`kit.store.meta.RunSetup`: witness, detector,
            timeout, poison, the launch options two compared campaigns must share, the
            ``build`` keys ``finish`` learns, the per-device ``options`` keys); everything
            outside the target reads it, never ``build`` or ``options`` by key.
    """

    target: str
    launchers: Sequence[Launcher]
    build: dict[str, Any]
    options: dict[str, Any]
    devices: list[dict[str, Any]]
    setup: RunSetup
    open: Callable[[], None] = _nothing
    close: Callable[[], None] = _nothing
    finish: Callable[[Sequence[LaunchRecord]], dict[str, Any]] = lambda _records: {}
    identity: BuildIdentity = BuildIdentity()

    @property
    def learned(self) -> tuple[str, ...]:
        """The ``build`` keys ``finish`` returns: a resumed campaign may learn other values
        for them (they are not part of the setup a resume must match)."""
        return self.setup.learned

    @property
    def per_device(self) -> tuple[str, ...]:
        """The ``options`` keys whose value maps a device id to that device's value
        (Android's ``poison_methods``): a campaign may be resumed on other devices; it
        keeps each device's value, and only a device it ran on before must have the same."""
        return self.setup.per_device


class Target(Protocol):
    """One kind of target.

    Attributes:
        name: the name on the command line and in records (``host``...).
    """

    name: str

    def prepare(self, config: Any, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """Check ``config`` (and that ``scenario`` can run here) and make the target ready
        (devices found, app installed...); ``log`` takes progress lines for the user.

        Raises:
            UsageError: a bad configuration; InfraError: the infrastructure failed.
        """
        ...
