"""The real Appium 3 server (not a double) with @appium/fake-driver, for the Appium tests.

``scripts/setup-appium.sh`` installs both into ``${XDG_CACHE_HOME:-~/.cache}/coldstart/appium``
(also the ``APPIUM_HOME``). :class:`AppiumServer` starts it on a free loopback port and stops
it by its process group id. When the server is not installed the fixtures FAIL (never
skip) with the command to run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "coldstart"
PREFIX = CACHE / "appium"
MAIN_JS = PREFIX / "node_modules" / "appium" / "build" / "lib" / "main.js"
NOT_INSTALLED = (f"Appium 3 with @appium/fake-driver is not installed in {PREFIX}: run "
                 "scripts/setup-appium.sh (CI runs it before the tests)")
#: The fake driver's app (its npm package ships none): the status element is an input field,
#: whose text can be set, as React Native's Text shows the last protocol line.
FAKE_APP_XML = ('<app width="400" height="852"><MockInputField id="coldstart-status"/>'
                '<MockTextField id="coldstart-summary"/></app>')


def free_port() -> int:
    """A loopback port that was free a moment ago: another process may take it before it is
    bound again, so whoever binds it must retry on ``EADDRINUSE`` (:meth:`AppiumServer.start`
    does)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections while the block runs: bound, never
    listening (Linux answers a connect with RST, ``ECONNREFUSED``), so no other process can
    start listening on it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


class AppiumServer:
    """One ``node main.js --address 127.0.0.1 --port P`` process, log in ``log_path``."""

    #: how many free ports :meth:`start` tries when another process took the one it picked
    PORT_ATTEMPTS = 5

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> "AppiumServer":
        """Start the server and wait until ``/status`` says it is ready (at most
        ``timeout_s``: Node starts Appium in about a second, several on a loaded machine).
        FAILS the test (never skips) when Appium is missing or does not come up."""
        if not MAIN_JS.exists():
            pytest.fail(NOT_INSTALLED, pytrace=False)
        for _ in range(self.PORT_ATTEMPTS):
            if self._start_on_port(timeout_s):
                return self
            self.port = free_port()  # the picked port was taken meanwhile: another one
        pytest.fail(f"Appium found no free port in {self.PORT_ATTEMPTS} tries; log: "
                    f"{self.log_path}", pytrace=False)
        raise AssertionError

    def _start_on_port(self, timeout_s: float) -> bool:
        """True once the server answers; False when its port was in use (EADDRINUSE)."""
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                ["node", str(MAIN_JS), "--address", "127.0.0.1", "--port", str(self.port),
                 "--log-no-colors", "--log-level", "info"],
                env={**os.environ, "APPIUM_HOME": str(PREFIX)}, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if "EADDRINUSE" in self.log_since(offset):
                    return False
                pytest.fail(f"Appium exited with {self.proc.returncode}; log: "
                            f"{self.log_path}", pytrace=False)
            try:
                with urllib.request.urlopen(self.url + "/status", timeout=5) as response:
                    if json.loads(response.read())["value"].get("ready", True):
                        return True
            except OSError:
                time.sleep(0.1)
        self.stop()
        pytest.fail(f"Appium did not answer within {timeout_s:g} s; log: {self.log_path}",
                    pytrace=False)
        raise AssertionError

    def log_since(self, offset: int = 0) -> str:
        """The server's log from byte ``offset`` on (its output goes to the file at once)."""
        with open(self.log_path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", "replace")

    def wait_logged(self, text: str, count: int, timeout_s: float = 60.0) -> bool:
        """Wait until ``text`` is in the log ``count`` times (True), or ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.log_since().count(text) < count:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        """Stop the server (its own process group only)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crashed grid node would die."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def fake_caps(tmp_path: Path, **extra: object) -> dict[str, object]:
    """Capabilities for the fake driver, with its app XML written under ``tmp_path``."""
    app = tmp_path / "fake-app.xml"
    app.write_text(FAKE_APP_XML)
    return {"platformName": "Fake", "appium:automationName": "Fake",
            "appium:app": str(app), **extra}


@pytest.fixture(scope="module")
def appium_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppiumServer]:
    """A real Appium server for one test module (import this fixture into the module)."""
    server = AppiumServer(tmp_path_factory.mktemp("appium") / "appium.log").start()
    yield server
    server.stop()
