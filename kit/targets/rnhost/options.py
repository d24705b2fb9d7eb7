"""The options of ``coldstart run rn-host``: the host target's (:mod:`kit.targets.host.options`),
read into the same :class:`kit.targets.host.HostConfig`; only ``prepare`` differs."""

from __future__ import annotations

from ...launch import LogFn, PreparedTarget
from ...scenario import Scenario
from ..host import HostConfig
from ..host.options import HostPlugin

__all__ = ["RnHostPlugin", "PLUGIN"]


class RnHostPlugin(HostPlugin):
    """The app's own JS with onnxruntime-react-native's C++ on the host (docs/rn-host.md)."""

    name = "rn-host"
    help = ("cold-launch the app's own JS with onnxruntime-react-native's C++ on this machine "
            "(JavaScriptCore, the Debian root)")
    description = ("One fresh process per launch running the app's own JS (rn-app/, on "
                   "JavaScriptCore) with onnxruntime-react-native's C++, on the prepared "
                   "runtime (docs/rn-host.md).")

    def prepare(self, config: HostConfig, scenario: Scenario, log: LogFn) -> PreparedTarget:
        from . import RnHostTarget

        return RnHostTarget().prepare(config, scenario, log)


PLUGIN = RnHostPlugin()
