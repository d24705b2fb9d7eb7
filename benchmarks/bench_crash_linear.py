"""Benchmark: the crash readers take time linear in a line's length on hostile pastes.

``crash classify`` reads files of up to 64 MiB; a pattern that backtracks over a long run
of spaces (a lazy ``.*?`` before ``\\s+``, a token that may start anywhere inside another)
turns one such line into hours. Each shape below was quadratic once (issue #24's review:
40,000 characters took 6 to 20 CPU seconds); each is read at two sizes, and the larger, 4
times longer, may take at most 12 times the CPU time of the smaller (quadratic would be
16), with a floor of 0.05 s for the timer's grain. The shapes that once held memory many
times their size (a long ``.ips`` header, a long sanitizer headline in ``crash
classify``'s table; issue #46) also have their peak traced memory per input character
bounded. Exit 1 when a shape is over.

Usage: ``nice .venv/bin/python benchmarks/bench_crash_linear.py [--size 200000]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kit.cli.crash import _render  # noqa: E402
from kit.crash import classify  # noqa: E402
from kit.crash.parse import parse_text  # noqa: E402

#: the smallest run, for the suite's smoke test (tests/test_benchmarks.py)
SMOKE = {"args": ["--size", "4000"], "prints": r"ubsan-after-parens +\d", "marks": []}

IPS_BODY = ('{"procName":"w","exception":{"type":"EXC_BAD_ACCESS","signal":"SIGSEGV"},'
            '"threads":[{"triggered":true,"frames":[{"imageOffset":1,"imageIndex":0}]}]}\n')

SHAPES = {
    "ubsan-after-parens": lambda n: "a(" * (n // 2) + " runtime error: x",
    "ubsan-message-spaces": lambda n: "f.c:1:2: runtime error: a" + " " * n + "b\n",
    "ubsan-judge-spaces": lambda n: "Line 3: Char 4: runtime error: a" + " " * n + "b (s.cpp)\n",
    # the joined-part cut (issue #24 family 9): runs of spaces and ": " before no part
    "ubsan-joined-spaces": lambda n: ("f.c:1:2: runtime error: a" + " " * n
                                      + "0xb SUMMARY #0 0x\n"),
    "ubsan-joined-colons": lambda n: ("f.c:1:2: runtime error: a" + ": " * (n // 2)
                                      + "0x1: note #1 0x SUMMARY: \n"),
    "frame-rows-spaces": lambda n: "0  libx.so  a" + " " * n + "b\n1  liby.so  c\n",
    "ide-frame-spaces": lambda n: "a" + " " * n + "x\n",
    "crash-text-frame-mark": lambda n: "0 x" + " " * n + "0x1234 \n",
    "faulthandler-spaces": lambda n: "Fatal Python error: a" + " " * n + "b\n",
    "asan-error-spaces": lambda n: "==1==ERROR: AddressSanitizer: a" + " " * n + "b\n",
    "mono-assertion-spaces": lambda n: "  * Assertion at a" + " " * n + "b\n",
    "java-frame-spaces": lambda n: "java.lang.Error: x\n\tat a" + " " * n + "b\n",
    # issue #46 family 5: one long sanitizer headline, read and shown as `crash classify`'s
    # table (rich folded the whole headline: 1 MB 2.4 s, 10 MB 92 s)
    "sanitizer-headline-table": lambda n: "==1==ERROR: AddressSanitizer: " + "a" * n + "\n",
    # issue #46 family 4: an .ips whose header line is one long string (a pattern for JSON
    # strings held a backtracking mark per character: 5 MB took 652 MB)
    "ips-long-header": lambda n: ('{"bug_type":"309","x":"' + "a" * n + '"}\n'
                                  + IPS_BODY),
    "ips-header-objects": lambda n: ('{"bug_type":"309","x":[' + "{}," * (n // 3) + '{}]}\n'
                                     + IPS_BODY),
    # issue #45's new readers: minidump_stackwalk frames, Sentry's rows, a Rust panic line
    "minidump-frame-spaces": lambda n: ("Crash reason:  SIGSEGV" + " " * n + "x\n"
                                        "Thread 0 (crashed)\n 0  a" + " " * n + "b + 0x1\n"),
    "sentry-row-spaces": lambda n: ("EXC_BAD_ACCESS: Exception 1, Code 1, Subcode 6 >\n"
                                    "  h  0x1  a" + " " * n + "b (f.c:1)\n"),
    "rust-panic-path": lambda n: ("thread 'm' panicked at /" + "a/" * (n // 2) + "\nx\n"),
    "json-string-lines": lambda n: '"a\\"' * (n // 4) + '",\n"b",\n"c",\n',
    # an .ips piece's object read to its closing brace or the end (issue #45 family 2)
    "ips-object-braces": lambda n: ('"procName" : "w",\n"termination" : {'
                                    + '{"a":"\\"",' * (n // 12) + "\n"),
    "elision-lines": lambda n: ("backtrace:\n  #00 pc 0011  /l/libx.so\n" + "...\n" * (n // 4)
                                + "  #01 pc 0022  /l/libx.so\n"),
    "install-path-cut": lambda n: ("backtrace:\n  #00 pc 0011  /data/app/~~" + "a/" * (n // 2)
                                   + "\n"),
    "table-row-spaces": lambda n: ("Thread 0 Crashed:\n0  a b" + " b" * (n // 4) + "  x"
                                   + " " * (n // 2) + "y + 1\n"),
    "minidump-records": lambda n: "Crash|SIGSEGV|0x0|0\n" + "0|1|m|f|||0x1\n" * (n // 16),
}
#: shapes timed through `crash classify`'s table, not the reader alone
TABLE = {"sanitizer-headline-table"}
#: most bytes traced at once per input character (tracemalloc's peak; the input's own
#: copies are a few bytes a character), for the shapes that once held far more
MEMORY = {"ips-long-header": 40, "ips-header-objects": 40, "sanitizer-headline-table": 40}


def _read(name: str, text: str) -> None:
    record = parse_text(text)
    if name in TABLE:
        with contextlib.redirect_stdout(io.StringIO()):
            _render([("f", record, classify(record))], as_json=False)


def _cpu(name: str, text: str) -> float:
    start = time.process_time()
    _read(name, text)
    return time.process_time() - start


def _peak(name: str, text: str) -> int:
    tracemalloc.start()
    try:
        _read(name, text)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=200_000,
                        help="characters of the larger input (default 200000)")
    args = parser.parse_args()
    over = []
    print(f"{'shape':24s} {'CPU s at n/4':>12s} {'CPU s at n':>10s} {'ratio':>6s}")
    for name, make in SHAPES.items():
        small = min(_cpu(name, make(args.size // 4)) for _ in range(2))
        large = _cpu(name, make(args.size))
        ratio = large / max(small, 0.05)
        line = f"{name:24s} {small:12.3f} {large:10.3f} {ratio:6.1f}"
        if ratio > 12:
            over.append(name)
        if name in MEMORY:
            text = make(args.size)
            per_char = _peak(name, text) / len(text)
            line += f"  peak {per_char:.1f} B/char"
            if per_char > MEMORY[name]:
                over.append(f"{name} (memory)")
        print(line, flush=True)
    if over:
        print(f"superlinear or over its memory bound: {', '.join(over)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
