#!/usr/bin/env python3
"""Test double: an old build of onnxruntime that crashes at release, as #32461 does.

It stands in for the workload of a second host runtime (``kind: ort-root`` in its
``runtime.json``, so the kit runs it directly): it runs the real workload on the real
runtime, whose argv it takes from ``COLDSTART_CRASHING_WORKLOAD_REAL`` (a JSON list), with
``inject=segv@inference-done`` added to the scenario. The real workload then dies of a real
SIGSEGV once it has reached ``inference-done``, the phase after which #32461's release-time
crash strikes (``xnn_delete_operator``, see docs/race.md), and prints the same backtrace it
prints for any signal. Only the target's signature differs from the real defect's: this
crash is classed ``other-native-crash``.
"""

import json
import os
import sys

REAL = json.loads(os.environ["COLDSTART_CRASHING_WORKLOAD_REAL"])
argv = sys.argv[1:]
at = argv.index("--scenario") + 1
argv[at] = argv[at].replace("inject=none", "inject=segv@inference-done")
os.execv(REAL[0], [*REAL, *argv])
