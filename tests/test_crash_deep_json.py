"""A small ``.ips`` nested far deeper than any real report (which nests under 20 levels) is
refused by the .ips parser with a note and classifies as ``unparsed`` (it once took a
minute: the truncated-JSON repair joined the open-bracket stack at every closing bracket).
No timing is asserted here."""

from __future__ import annotations

import pytest

from kit.crash import parse_text
from kit.crash.apple import MAX_JSON_DEPTH, close_truncated_json, json_depth_over
from kit.crash.classify import classify

N = 100_000
HEADER = '{"bug_type":"309"}\n'
FRAMES = '{"exception":{"type":"EXC_BAD_ACCESS"},"threads":[{"triggered":true,"frames":'


@pytest.mark.parametrize("text", [
    HEADER + FRAMES + "[" * N + "]" * N + "}]}\n",     # deep arrays in a body
    HEADER + FRAMES + "[" * N,                         # the same, cut short
    HEADER + '{"a":' * N + "1" + "}" * N + "\n",       # deep objects in a body
    '{"a":' * N + "1" + "}" * N,                       # a header-less body
], ids=["arrays", "cut", "objects", "no-header"])
def test_a_report_nested_100k_deep_is_refused_and_unparsed(text: str) -> None:
    record = parse_text(text)
    assert record.format == "ips"
    assert f"ips: nested deeper than {MAX_JSON_DEPTH} levels (a real report nests under " \
           f"20): not read" in record.notes
    assert record.frames == () or list(record.frames) == []
    assert classify(record).crash_class.value == "unparsed"


def test_depth_is_counted_outside_strings_only() -> None:
    assert not json_depth_over('{"a": "' + "[" * 500 + '"}')
    assert json_depth_over("[" * 65) and not json_depth_over("[" * 64 + "]" * 64)
    assert not json_depth_over('{"a":"\\"[[[[[[[[[[[["}', limit=1)


def test_the_truncated_json_repair_is_linear_and_still_right() -> None:
    assert close_truncated_json('{"a":[1,[2,3],[4') == '{"a":[1,[2,3]]}'
    deep = "[" * N + "]" * (N // 2)
    assert close_truncated_json(deep) == deep + "]" * (N - N // 2)
