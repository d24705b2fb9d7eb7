"""The host race witness (issue #8): see onnxruntime#32461 happen, not only its crashes.

A small C library preloaded into the host workload interposes XNNPACK's ``xnn_initialize``
and logs, for every call, the thread, the monotonic arrival time and the allocator context
onnxruntime passes. Two different contexts in one process mean two threads both created the
"shared" allocator: the race happened, crash or not. Works only where onnxruntime links
XNNPACK as a shared library (Debian's packages); the mobile builds link it statically, and
their records say the witness was unavailable instead of claiming no race.

* :mod:`kit.targets.host.witness.build`: compile the witness with the runtime's own compiler;
* :mod:`kit.targets.host.witness.race`: parse its output into ``LaunchRecord.race``.
"""

from __future__ import annotations

from .build import LIBRARY_NAME, build_witness, witness_library, witness_supported
from .race import (ENV_FILE, OFF_REASON, STATIC_REASON, STDERR_PREFIX, RaceObservation,
                   WitnessCall, parse_witness, read_witness_file, unavailable)

__all__ = ["build_witness", "witness_library", "witness_supported", "LIBRARY_NAME",
           "RaceObservation", "WitnessCall", "parse_witness", "read_witness_file",
           "unavailable", "ENV_FILE", "STDERR_PREFIX", "STATIC_REASON", "OFF_REASON"]
