"""Benchmark: the Android launcher's adb round trips and overhead per launch, and how two
devices scale.

The devices are the test double (tests/doubles: FakeAdbd + FakeAndroidDevice) in a process
of their own, adopted by a real adb server on a private port; every adb call (every stream
``OPEN``) waits a fixed latency before the device answers, as over a network or a farm. The
app's own time is what it reports: ``t_ms`` of ``done`` (from its process start); the kit's
overhead per launch is the launch's wall time minus that.

Figures printed:

* round trips per launch (``OPEN``\\ s the device saw, and the launcher's own count);
* overhead per launch (median, p90, max) at the given latency;
* throughput with one device and with two devices in one campaign, and their ratio;
* time from a dropped connection to the launcher's infra error, over the adb server and
  over adbd directly (issue #16: a drop must surface within seconds): a launch waits on an
  app that hangs, the device's adbd closes every connection, and the clock runs from that
  moment to the ``InfraError`` (``--drops`` times per transport, in this process).

Usage: ``.venv/bin/python benchmarks/bench_android.py [--latency-ms 20] [--launches 30]
[--drops 5]``
Goals (issue #6): overhead at most 250 ms per launch at 20 ms per round trip, and two
devices giving at least 1.8x one device's throughput. ``--check`` exits 1 when a goal is
missed.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PKG = "org.coldstart.app"


def _serve_devices(count: int, sha: str, server_port: int, latency_s: float,
                   gap_ms: int, first_frame_ms: int, conn: Any) -> None:
    """In a child process: run ``count`` scripted devices until told to stop."""
    from tests.doubles.android_adb_server import DeviceRig
    from tests.doubles.fake_adb_device import AppBehaviour, FakeAndroidDevice, FakeApp, \
        LaunchScript

    class _Server:
        port = server_port

        @staticmethod
        def wait_for(serial: str) -> None:
            time.sleep(0.3)

    script = LaunchScript(default=AppBehaviour.completed(phase_gap_ms=gap_ms,
                                                        first_frame_ms=first_frame_ms))
    rigs = [DeviceRig(FakeAndroidDevice(f"bench{i}", (FakeApp(PKG, sha),), script), _Server(),
                      latency_s=latency_s).start() for i in range(count)]
    conn.send([r.serial for r in rigs])
    while conn.recv() == "opens?":
        conn.send([len(r.adbd.opens) for r in rigs])
    for rig in rigs:
        rig.stop()


def _campaign(server_port: int, serials: list[str], apk: Path, launches: int, out: Path,
              before: Any) -> tuple[list[Any], float]:
    from kit.campaign import open_to_write, run_campaign
    from kit.scenario import parse_scenario
    from kit.targets.android import AndroidLauncher, AndroidTimeouts, ServerTransport, \
        inspect_apk, prepare_device

    info = inspect_apk(apk)
    transports = [ServerTransport(s, "127.0.0.1", server_port) for s in serials]
    setups = [prepare_device(t, package=info.package, apk=info) for t in transports]
    launchers = [AndroidLauncher(t, s, AndroidTimeouts(report_wait_s=3.0))
                 for t, s in zip(transports, setups)]
    for launcher in launchers:  # open each log follower outside the timing
        launcher.open()
    scenario = parse_scenario("")
    camp = open_to_write(out, mode="new")
    camp.create(label="bench", target="android", scenario=scenario, launches=launches)
    before()  # setup (install, checks, followers) is not part of a launch
    t0 = time.perf_counter()
    try:
        records = run_campaign(camp.store, camp.records, launchers, label="bench",
                               scenario=scenario, launches=launches, timeout_s=20.0)
        elapsed = time.perf_counter() - t0
    finally:
        camp.close()
    for launcher in launchers:
        launcher.close()
    return records, elapsed


def _drop_to_infra_s(transport: str, server: Any, apk: Path, sha: str, drops: int,
                     tmp: Path) -> list[float]:
    """Seconds from each drop to the launcher's InfraError (see the module doc)."""
    from adb_shell.auth.keygen import keygen
    from cryptography.hazmat.primitives import serialization

    from kit.launch import LaunchContext
    from kit.errors import InfraError
    from kit.scenario import parse_scenario
    from kit.targets.android import (AndroidLauncher, AndroidTimeouts, DirectTransport,
                                     ServerTransport, inspect_apk, prepare_device)
    from tests.doubles.android_adb_server import DeviceRig
    from tests.doubles.fake_adb_device import AppBehaviour, FakeAndroidDevice, FakeApp, \
        LaunchScript

    key = tmp / f"adbkey-{transport}"
    keygen(str(key))
    pem = serialization.load_pem_private_key(key.read_bytes(), None).public_key() \
        .public_bytes(serialization.Encoding.PEM,
                      serialization.PublicFormat.SubjectPublicKeyInfo)
    script = LaunchScript(default=AppBehaviour.hang(after="models-ready"))
    rig = DeviceRig(FakeAndroidDevice(f"drop-{transport}", (FakeApp(PKG, sha),), script),
                    server if transport == "server" else None,
                    auth_keys=() if transport == "server" else (pem,)).start()
    link = (ServerTransport(rig.serial, "127.0.0.1", server.port) if transport == "server"
            else DirectTransport(rig.address, key_path=key))
    launcher = AndroidLauncher(link, prepare_device(link, package=PKG, apk=inspect_apk(apk)),
                               AndroidTimeouts(reconnect_s=20.0, poll_s=5.0))
    scenario = parse_scenario("")
    took: list[float] = []
    try:
        for n in range(drops):
            launcher.open()
            art = tmp / f"drop-{transport}-{n}"
            art.mkdir()
            ctx = LaunchContext(scenario=scenario.with_id(f"drop-{n:05d}"), index=n, attempt=1,
                                label="drop", artifacts_dir=art, artifacts_rel=f"a/{n}",
                                timeout_s=30.0)
            at: list[float] = []

            def drop() -> None:
                time.sleep(1.0)  # the app is up and quiet; the launch waits on the log
                at.append(time.monotonic())
                rig.adbd.drop(0.5)

            threading.Thread(target=drop, daemon=True).start()
            try:
                launcher.launch(ctx)
                print(f"warning: {transport} drop {n}: the launch ended without an error")
            except InfraError:
                took.append(time.monotonic() - at[0])
            time.sleep(1.0)  # the device is back
    finally:
        launcher.close()
        rig.stop()
    return took


#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py): its arguments
#: ({tmp}: an empty scratch directory), a regex its output matches, the suite's markers
SMOKE = {"args": ["--launches", "2", "--drops", "1", "--latency-ms", "1", "--gap-ms", "10"],
         "prints": r"kit overhead per launch: median \d+ ms", "marks": ["slow"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=float, default=20.0,
                        help="delay before the device answers each adb call (default 20)")
    parser.add_argument("--launches", type=int, default=30, help="launches per campaign")
    parser.add_argument("--gap-ms", type=int, default=150,
                        help="the app's time between two phases (default 150: done at 900 ms)")
    parser.add_argument("--drops", type=int, default=5,
                        help="drops measured per transport (0: skip; default 5)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()

    from tests.doubles.android_adb_server import PrivateAdbServer
    from tests.doubles.android_apk_double import build_apk_double

    server = PrivateAdbServer().start()
    results: dict[int, tuple[list[Any], float, list[int]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp_text:
            tmp = Path(tmp_text)
            apk, sha = build_apk_double(tmp / "app.apk")
            for count in (1, 2):
                ctx = mp.get_context("spawn")
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_serve_devices, args=(
                    count, sha, server.port, args.latency_ms / 1000.0, args.gap_ms, 300, child),
                    daemon=True)
                proc.start()
                child.close()
                serials = parent.recv()
                for serial in serials:
                    server.wait_for(serial)
                opens_before: list[int] = []

                def snapshot() -> None:
                    parent.send("opens?")
                    opens_before.extend(parent.recv())

                records, elapsed = _campaign(server.port, serials, apk, args.launches,
                                             tmp / f"c{count}", snapshot)
                parent.send("opens?")
                opens_after = parent.recv()
                parent.send("stop")
                proc.join(10)
                opens = [b - a for a, b in zip(opens_before, opens_after)]
                results[count] = (records, elapsed, opens)
            drops = {kind: _drop_to_infra_s(kind, server, apk, sha, args.drops, tmp)
                     for kind in ("server", "direct") if args.drops > 0}
    finally:
        server.stop()

    one_records, one_s, one_opens = results[1]
    completed = [r for r in one_records if r.outcome.value == "completed"]
    if len(completed) != len(one_records):
        print(f"warning: {len(one_records) - len(completed)} launches did not complete")
    overhead = sorted(r.wall_ms - r.phases["done"] for r in completed)
    trips = [r.extra["android"]["round_trips"] for r in completed]
    print(f"latency per adb call: {args.latency_ms:g} ms; app time per launch (done t_ms): "
          f"{statistics.median(r.phases['done'] for r in completed):.0f} ms; "
          f"{len(one_records)} launches")
    print(f"round trips per launch: {sum(one_opens) / len(one_records):.2f} opens seen by the "
          f"device, {statistics.mean(trips):.2f} counted by the launcher "
          f"(min {min(trips)}, max {max(trips)})")
    p90 = overhead[int(0.9 * (len(overhead) - 1))]
    print(f"kit overhead per launch: median {statistics.median(overhead):.0f} ms, "
          f"p90 {p90:.0f} ms, max {max(overhead):.0f} ms (goal <= 250 ms)")
    two_records, two_s, _ = results[2]
    one_rate = len(one_records) / one_s
    two_rate = len(two_records) / two_s
    ratio = two_rate / one_rate
    print(f"throughput: 1 device {one_rate:.2f} launches/s, 2 devices {two_rate:.2f} "
          f"launches/s, ratio {ratio:.2f}x (goal >= 1.8x)")
    for kind, took in drops.items():
        if took:
            print(f"drop -> infra error over the {kind} transport: median "
                  f"{statistics.median(took):.3f} s, max {max(took):.3f} s "
                  f"({len(took)} drops)")
    ok = statistics.median(overhead) <= 250 and ratio >= 1.8
    print("goals met" if ok else "goals MISSED")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
