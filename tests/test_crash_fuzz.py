"""Property-based tests: mutated fixtures and random input never make a parser raise.

Every parser (``parse_text`` with detection and with each hint, ``parse_host``,
``parse_exit_info``, and ``explain``) gets mutated fixtures (cut, sliced, duplicated, bytes
flipped or inserted, lines swapped, quoted, prefixed, wrapped) and random text and bytes.
The fixtures are every file of tests/data/crashes, the public pastes of every family
included (console exports, ANR summaries and traces pieces, Apple .crash and .ips pieces,
sanitizer, gdb, lldb and Xcode output). The record must come back whole: no internal error
note, classifiable, JSON-serialisable.

Examples per parser: ``COLDSTART_FUZZ_EXAMPLES`` (default 150, to keep CI fast);
``benchmarks/bench_fuzz_crash.py`` runs 10,000 per parser.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kit.crash import (CRASH_CLASSES, CrashRecord, ExitInfo, classify, explain,
                       parse_exit_info, parse_host, parse_text)

DATA = Path(__file__).parent / "data" / "crashes"
FIXTURES = sorted(p.read_bytes() for p in DATA.rglob("*")
                  if p.is_file() and p.name not in ("expected.json", "expected-release.json"))
EXAMPLES = int(os.environ.get("COLDSTART_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A fixture with one to four random mutations applied."""
    data = bytearray(draw(st.sampled_from(FIXTURES)))
    for _ in range(draw(st.integers(1, 4))):
        size = len(data)
        kind = draw(st.sampled_from(["cut", "delete", "duplicate", "flip", "insert",
                                     "swap", "crlf", "quote", "prefix", "wrap"]))
        a = draw(st.integers(0, size))
        b = draw(st.integers(a, min(size, a + 400)))
        if kind == "cut":
            del data[a:]
        elif kind == "delete":
            del data[a:b]
        elif kind == "duplicate":
            data[a:a] = data[a:b]
        elif kind == "flip" and size:
            for pos in draw(st.lists(st.integers(0, size - 1), max_size=8)):
                data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[a:a] = draw(st.binary(max_size=64))
        elif kind == "swap":
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
        elif kind == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif kind == "quote":  # pasted as an e-mail or Markdown quote
            data = bytearray(b"> " + bytes(data).replace(b"\n", b"\n> "))
        elif kind == "prefix":  # a test runner's or a logger's line prefix
            prefix = draw(st.sampled_from([b"714: ", b"\t", b"    ", b"`", b"&quot;"]))
            data = bytearray(prefix + bytes(data).replace(b"\n", b"\n" + prefix))
        elif kind == "wrap" and size:  # hard-wrapped at a random column, inside tokens
            width = draw(st.integers(20, 200))
            data = bytearray(b"\n".join(bytes(data[i:i + width])
                                        for i in range(0, size, width)))
    return bytes(data)


ANY_INPUT = st.one_of(mutated(), mutated(), mutated(), st.binary(max_size=2000),
                      st.text(max_size=2000),
                      st.text(alphabet="#pcx0123456789abcdef (){}[]:,\"'*>+\n\t.@`!_-=/",
                              max_size=2000))


def _check(record: CrashRecord) -> None:
    assert isinstance(record, CrashRecord)
    assert not any(n.startswith("internal parser error") for n in record.notes), record.notes
    result = classify(record)
    assert result.crash_class.value in CRASH_CLASSES
    json.dumps(record.to_dict())
    json.dumps(result.to_dict())



# one hint per distinct code path (tombstone/logcat/android and ips/jetsam share theirs)
_HINTS = ("android", "dropbox", "exit-info", "ips", "crash-text", "lldb", "host",
          "ips-partial", "sanitizer", "xcode", "ide-frames", "console")
PARSERS: dict[str, Callable[[bytes | str], CrashRecord]] = {
    "parse_text": lambda d: parse_text(d),
    **{f"parse_text-{h}": functools.partial(parse_text, hint=h) for h in _HINTS},
    "parse_host": lambda d: parse_host(11, d),
}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_parsers_never_raise(name: str) -> None:
    parser = PARSERS[name]

    @FUZZ
    @given(ANY_INPUT)
    def run(data: bytes | str) -> None:
        _check(parser(data))

    run()


@FUZZ
@given(ANY_INPUT)
def test_parse_exit_info_never_raises(data: bytes | str) -> None:
    entries = parse_exit_info(data)
    assert all(isinstance(e, ExitInfo) for e in entries)
    json.dumps([e.to_dict() for e in entries])


@FUZZ
@given(ANY_INPUT)
def test_explain_never_raises(data: bytes | str) -> None:
    result = explain(data)
    _check(result.record)
    assert result.lines and result.lines[-1].startswith("result: ")
