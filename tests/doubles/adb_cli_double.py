"""An ``adb`` command for the AWS Device Farm test spec's ``post_test`` lines: ``adb -s SERIAL
shell dumpsys ...`` prints what a device prints for that command (texts given by the test,
built with tests/doubles/fake_adb_reports.py), as the Device Farm host's adb would; an
unknown command prints an error and exits 1, a wrong serial exits 1 like adb's
``device 'X' not found``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

_SCRIPT = '''#!{python}
import json, sys
table = json.load(open({table!r}))
args = sys.argv[1:]
if args[:2] != ["-s", table["serial"]]:
    sys.stderr.write("adb: device '%s' not found\\n" % (args[1:2] or [""])[0]); sys.exit(1)
key = " ".join(args[3:]) if args[2:3] == ["shell"] else ""
if key not in table["out"]:
    sys.stderr.write("/system/bin/sh: unknown: %s\\n" % key); sys.exit(1)
sys.stdout.write(table["out"][key])
'''


def write_adb(folder: Path, serial: str, outputs: dict[str, str]) -> Path:
    """Write an executable ``folder/adb`` answering ``adb -s serial shell <key>`` with
    ``outputs[key]`` (``key``: the shell words joined by spaces). Returns the folder (put
    it first on ``PATH``)."""
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "adb-table.json"
    table.write_text(json.dumps({"serial": serial, "out": outputs}))
    adb = folder / "adb"
    adb.write_text(_SCRIPT.format(python=sys.executable, table=str(table)))
    adb.chmod(0o755)
    return folder
