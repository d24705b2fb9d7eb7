"""``coldstart crash classify|symbolize|rules`` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.cli import main

DATA = Path(__file__).parent / "data" / "crashes"


def test_classify_table(capsys: pytest.CaptureFixture[str]) -> None:
    files = [DATA / "android" / "tombstone-full-xnnpack-create.txt",
             DATA / "android" / "logcat-js-fatal.txt", DATA / "unknown" / "plain-text.txt"]
    assert main(["crash", "classify", *map(str, files)]) == 0
    out = capsys.readouterr().out
    for column in ("file", "format", "signal", "top frames", "class", "signature"):
        assert column in out
    assert "xnnpack-allocator-uaf" in out and "js-error" in out and "unparsed" in out
    assert "SIGSEGV SEGV_MAPERR" in out
    assert "xnn_create_fully_connected_nc_f32" in out


def test_classify_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "host" / "backtrace-demangled-release.txt"
    assert main(["crash", "classify", "--json", "--signal", "11", str(path)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["file"] == str(path)
    assert row["record"]["source"] == "host-signal"
    assert row["classification"]["crash_class"] == "xnnpack-allocator-uaf"
    assert row["classification"]["rule_id"] == "onnxruntime-32461-xnnpack-allocator-uaf"
    assert row["classification"]["trail"][-1].endswith("-> xnnpack-allocator-uaf")


def test_classify_missing_file_is_a_usage_error(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    assert main(["crash", "classify", str(tmp_path / "nope.txt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("coldstart: error: cannot read ") and err.count("\n") == 1


def test_bad_user_rules_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = tmp_path / "mine.toml"
    rules.write_text("[[rule]]\nid = 'x'\ncrash_class = 'segv'\n")
    code = main(["crash", "classify", "--rules", str(rules),
                 str(DATA / "android" / "logcat-lmkd.txt")])
    assert code == 2
    assert f"{rules}:3: rule 'x': crash_class 'segv' is not one of" in capsys.readouterr().err


def test_rules_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crash", "rules", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in data["rules"]] == ["onnxruntime-32461-xnnpack-allocator-uaf"]
    assert data["skip"] > 50
    assert data["rules"][0]["origin"].endswith("xnnpack-allocator-uaf.toml:20")


def test_symbolize_needs_a_source(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "android" / "tombstone-full-xnnpack-create.txt"
    assert main(["crash", "symbolize", str(path)]) == 2
    assert "--symbols DIR" in capsys.readouterr().err


def test_symbolize_without_matching_files(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    path = DATA / "android" / "tombstone-full-xnnpack-create.txt"
    code = main(["crash", "symbolize", "--symbols", str(tmp_path), str(path)])
    out = capsys.readouterr()
    if code == 2:  # no llvm-symbolizer on this machine: said in one line
        assert "llvm-symbolizer is not installed" in out.err
        return
    assert code == 0
    assert "note: symbolized 0 of 5 frames" in out.out
    assert "note: no symbol file for: libc.so, libonnxruntime.so" in out.out
