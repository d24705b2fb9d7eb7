"""Issue #45 (crash pastes, round 4) and issue #46's crash-reader items: bounded reads of
hostile shapes and the readers added for new formats (each public report's every field is
checked in tests/data/crashes/expected.json by test_crash_fixtures.py)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from kit.cli.crash import _CELL_CHARS, _cell, _render
from kit.crash import classify, parse_text
from kit.crash._text import json_string_end
from kit.crash.apple import json_depth_over

IPS_BODY = ('{"procName":"w","exception":{"type":"EXC_BAD_ACCESS","signal":"SIGSEGV"},'
            '"threads":[{"triggered":true,"frames":[{"imageOffset":16,"imageIndex":0,'
            '"symbol":"f"}]}]}\n')


def test_json_string_end_counts_the_backslashes_before_a_quote() -> None:
    assert json_string_end('abc"', 0) == 4
    assert json_string_end('a\\"b"x', 0) == 5      # \" is escaped
    assert json_string_end('a\\\\"b', 0) == 4      # \\ then a closing quote
    assert json_string_end('a\\\\\\"', 0) == -1    # \\ \" : never closed
    assert json_string_end('"', 0) == 1


def test_brackets_inside_strings_do_not_count_toward_the_depth() -> None:
    assert not json_depth_over('{"a":"[[[[[[\\"[[[["}', limit=2)
    assert json_depth_over('{"a":[[["x"]]]}', limit=3)


def test_a_long_ips_header_line_is_not_loaded_and_the_body_is_read() -> None:
    header = '{"bug_type":"309","x":"' + "a" * 100_000 + '"}\n'
    record = parse_text(header + IPS_BODY)
    assert record.format == "ips"
    assert record.process == "w"
    assert record.signal_name == "SIGSEGV"
    assert [f.symbol for f in record.frames] == ["f"]
    assert record.notes[0] == ("ips header line is 100025 characters long (Apple's is under "
                               "1 KB): not read")


def test_a_short_header_is_still_read() -> None:
    record = parse_text('{"bug_type":"309","app_name":"h"}\n' + IPS_BODY)
    assert record.notes == ()
    assert record.process == "w"


def test_a_long_sanitizer_headline_keeps_a_bounded_kind_and_a_bounded_table_cell() -> None:
    record = parse_text("==1==ERROR: AddressSanitizer: " + "a" * 50_000 + "\n")
    assert record.code == "a" * 200
    assert "the headline's kind is 50000 characters long: its first 200 kept" in record.notes
    out = io.StringIO()
    with redirect_stdout(out):
        _render([("f.txt", record, classify(record))], as_json=False)
    # the signal cell (exception and code, 418 characters) is cut at the cell's bound
    assert "".join(out.getvalue().split()).count("a") < 2 * _CELL_CHARS
    assert _cell("x" * (_CELL_CHARS + 5)) == ("x" * _CELL_CHARS
                                              + "... (5 more characters; see --json)")
    assert _cell("short") == "short"
