"""The AWS Device Farm custom test spec that runs the shell pass after the tests
(``coldstart farm testspec --app-id PKG``).

Device Farm's custom environment runs a test spec's phases (``install``, ``pre_test``,
``test``, ``post_test``) on a host with ``adb`` to the device and zips everything written to
``$DEVICEFARM_LOG_DIR`` into the job's customer artifacts (``CUSTOMER_ARTIFACT``; AWS
Device Farm developer guide: custom-test-environments, custom-test-environment-variables,
using-artifacts-custom). The spec's ``post_test`` writes ``dumpsys dropbox --print TAG``
for each crash tag and ``dumpsys activity exit-info PKG`` to
``$DEVICEFARM_LOG_DIR/coldstart-shell/<dump>.txt`` (:data:`kit.farms.shell.DUMP_NAMES`),
which ``coldstart farm pull DIR --farm aws-device-farm`` reads back and matches to the
launches (DropBox keeps entries for days and up to 1000 of them, so one dump after the tests
holds every launch's). ``$DEVICEFARM_DEVICE_UDID`` names the device. Not checked against a
live Device Farm (none is reachable from the kit's CI).
"""

from __future__ import annotations

import shlex

from ..errors import UsageError
from .shell import shell_commands

__all__ = ["render_testspec", "DUMP_DIR"]

#: the folder under ``$DEVICEFARM_LOG_DIR`` the dumps go to
DUMP_DIR = "coldstart-shell"


def _yaml_quoted(text: str) -> str:
    """A YAML single-quoted scalar (``'`` doubled; YAML 1.2 section 7.3.2)."""
    return "'" + text.replace("'", "''") + "'"


def post_test_commands(package: str) -> list[str]:
    """The ``post_test`` shell lines: each dump to its file, a failure never failing the
    phase (a device without exit-info, Android < 11, still gives its DropBox)."""
    out = [f'mkdir -p "$DEVICEFARM_LOG_DIR/{DUMP_DIR}"']
    for name, argv in shell_commands(package):
        out.append(f'adb -s "$DEVICEFARM_DEVICE_UDID" shell {shlex.join(argv)} > '
                   f'"$DEVICEFARM_LOG_DIR/{DUMP_DIR}/{name}.txt" 2>&1 || true')
    return out


def render_testspec(package: str, test_commands: list[str] | None = None) -> str:
    """The test spec YAML for ``package`` (checked against
    :data:`kit.argtypes.APP_ID_RE`); ``test_commands`` are the ``test`` phase's lines
    (default: one that says to put the campaign's command there).

    Raises:
        UsageError: ``package`` is not a package name, or a test command is blank or holds
            a line break or another control character (a YAML single-quoted scalar folds a
            line break into a space, YAML 1.2 section 7.3.2, so the line run would not be
            the one given).
    """
    from ..argtypes import APP_ID_RE

    if not APP_ID_RE.match(package):
        raise UsageError(f"--app-id {package[:80]!r} is not a package name",
                         "e.g. org.coldstart.app")
    for command in test_commands or ():
        if not command.strip():
            raise UsageError("--test-command is empty", "give the line the test phase runs")
        if any((ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F for ch in command):
            raise UsageError(f"--test-command {command[:80]!r} holds a line break or another "
                             "control character",
                             "give each line of the test phase as its own --test-command")
    tests = test_commands or [
        'echo "put your test command here, e.g. coldstart run appium --server '
        'http://127.0.0.1:4723 --platform android --out $DEVICEFARM_LOG_DIR/coldstart-run"']
    lines = ["# coldstart: AWS Device Farm custom test spec (`coldstart farm testspec`).",
             "# post_test dumps DropBox crash entries and exit-info into the customer",
             "# artifacts; `coldstart farm pull DIR --farm aws-device-farm` matches them to",
             "# the launches (docs/farms.md). Not checked against a live Device Farm.",
             "version: 0.1", "phases:", "  test:", "    commands:"]
    lines += [f"      - {_yaml_quoted(c)}" for c in tests]
    lines += ["  post_test:", "    commands:"]
    lines += [f"      - {_yaml_quoted(c)}" for c in post_test_commands(package)]
    lines += ["artifacts:", "  - $DEVICEFARM_LOG_DIR"]
    return "\n".join(lines) + "\n"
