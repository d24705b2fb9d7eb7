"""Timeouts the tests give the kit when it drives test doubles, sized for a loaded CI box.

A scripted launch of a double (tests/doubles/: the xcrun stand-in, the scripted adb device,
the Appium lifecycle proxy) takes well under a second on an idle 2-core machine. Under
``stress-ng --cpu 6`` on 2 cores an iOS simulator launch that crashes after
``sessions-created`` was still running at a 3 s timeout and came out ``hung`` (issue #13).
These values are bounds that only a scripted hang (or a real defect) reaches, never speeds:
no test asserts how fast a launch was. A scripted hang costs ``LAUNCH_S`` of wall time, so
hangs are few.
"""

from __future__ import annotations

#: ``--timeout``: what a scripted launch that completes, errs or crashes may take.
LAUNCH_S = 10.0

#: ``--report-wait``: how long the kit waits for a crash report that a double writes (the
#: doubles write theirs 0.3-0.4 s after the death; the kit stops waiting once it is there).
REPORT_WAIT_S = 10.0
