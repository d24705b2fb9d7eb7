"""The tests' adb servers see only the tests' own devices (issue #26, item 9).

A real adb server scans the local emulator ports (5555-5585) when it starts and adopts
whatever answers: a maintainer's running emulator, or any program listening there. Here a
scripted device stands in for that emulator on an emulator port, a plain listener sits on
5555 and 5556, and the tests' :class:`~tests.doubles.android_adb_server.PrivateAdbServer`
must list only the device a test announced. The check runs in a network namespace of its
own where the machine allows one (root and ``unshare``), so that the stand-in emulator is
never seen by other programs on this machine; elsewhere on the machine's loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

from tests.conftest import ROOT

_PROBE = textwrap.dedent("""
    import json, socket, subprocess, sys, time
    sys.path.insert(0, {root!r})
    if {netns!r}:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    from tests.doubles.android_adb_server import DeviceRig, PrivateAdbServer
    from tests.doubles.fake_adb_device import FakeAndroidDevice, LaunchScript
    from tests.doubles.fake_adbd import FakeAdbd

    listeners = []
    for port in (5555, 5556):  # a program on the emulator ports (python -m http.server)
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
            listeners.append(port)
        except OSError:
            sock.close()
    emulator = None
    for port in range(5585, 5556, -2):  # the maintainer's emulator: a real adbd protocol
        try:
            emulator = FakeAdbd(FakeAndroidDevice("maint", (), LaunchScript()), port=port)
            emulator.start()
            break
        except OSError:
            emulator = None
    server = PrivateAdbServer().start()
    try:
        rig = DeviceRig(FakeAndroidDevice("own", (), LaunchScript()), server).start()
        time.sleep(4.0)  # the scanner tries every emulator port once a second
        states = server.states()
    finally:
        server.stop()
    print(json.dumps({{"states": states, "own": rig.serial, "listeners": listeners,
                      "emulator": emulator.serial if emulator else None}}))
""")


def test_a_private_adb_server_adopts_no_emulator_or_program_of_the_machine() -> None:
    netns = os.geteuid() == 0 and shutil.which("unshare") is not None \
        and shutil.which("ip") is not None
    code = _PROBE.format(root=str(ROOT), netns=netns)
    argv = [sys.executable, "-c", code]
    if netns:
        argv = ["unshare", "--net", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    if netns:  # the namespace is empty: both stand-ins are there for certain
        assert found["listeners"] == [5555, 5556] and found["emulator"], found
    assert found["states"] == {found["own"]: "device"}, found
