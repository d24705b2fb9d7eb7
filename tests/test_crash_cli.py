"""``coldstart crash classify|symbolize|rules`` through the real CLI entry point."""

from __future__ import annotations

import json
import os
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
    assert [r["id"] for r in data["rules"]] == [
        "onnxruntime-32461-xnnpack-allocator-uaf",
        "onnxruntime-32461-xnnpack-allocator-uaf-release-stripped",
        "onnxruntime-32461-xnnpack-allocator-uaf-callback-stripped"]
    assert data["skip"] > 50
    rule_file = Path(data["rules"][0]["origin"].rsplit(":", 1)[0])
    id_line = next(n for n, line in enumerate(rule_file.read_text().splitlines(), start=1)
                   if line.startswith("id = "))
    assert data["rules"][0]["origin"].endswith(f"xnnpack-allocator-uaf.toml:{id_line}")


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


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "directory", "link-to-zero"])
def test_devices_fifos_and_directories_are_refused_in_one_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str) -> None:
    # issue #13: `crash classify /dev/zero` grew to 9.1 GB
    path = Path(target)
    if target == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)  # opening it would block: it must be refused before
    elif target == "directory":
        path = tmp_path
    elif target == "link-to-zero":
        path = tmp_path / "report.txt"
        path.symlink_to("/dev/zero")
    assert main(["crash", "classify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err
    if target != "directory":  # a folder of rule files is a valid --rules
        assert main(["crash", "classify", "--rules", str(path),
                     str(DATA / "android" / "logcat-lmkd.txt")]) == 2
        assert "rule file" in capsys.readouterr().err


def test_a_crash_file_over_64_mib_is_refused(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:
        handle.truncate(64 * 1024 * 1024 + 1)  # sparse: no 64 MiB written
    assert main(["crash", "classify", str(big)]) == 2
    assert "is larger than 64 MiB" in capsys.readouterr().err


def test_error_lines_cut_echoed_input(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    name = "x" * 5000
    assert main(["crash", "classify", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400 and "..." in err
    rules = tmp_path / "r.toml"
    rules.write_text(f"[[rule]]\nid = 'x'\ncrash_class = 'abort'\n[[rule.chain]]\n"
                     f"frames = ['({'a' * 3000}']\n")
    assert main(["crash", "rules", "--rules", str(rules)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 600


def test_a_catastrophic_rule_pattern_does_not_hang_classify(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = tmp_path / "slow.toml"
    rules.write_text("[[rule]]\nid = 'slow'\ncrash_class = 'abort'\n[[rule.chain]]\n"
                     "frames = ['(a|aa)+$']\n")
    report = tmp_path / "t.txt"
    report.write_text("#00 pc 0001 /x/libfoo.so (" + "a" * 60 + "b+1)\n"
                      "#01 pc 0002 /x/libfoo.so (" + "a" * 60 + "c+2)\n")
    assert main(["crash", "classify", "--json", "--rules", str(rules), str(report)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert any("timed out" in line for line in row["classification"]["trail"])


def test_explain_says_family_fields_and_every_rule_check(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "public" / "android" / "xnnpack-8946-reporter-softmax.txt"
    assert main(["crash", "classify", "--explain", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"== {path}"
    assert out[1].startswith("detected: android: ")
    assert "format: tombstone-reporter (platform android, source crash-reporter, kind native)" \
        in out
    assert "rule onnxruntime-32461-xnnpack-allocator-uaf (xnnpack-allocator-uaf): fired" in out
    assert "  ok: no signal in the report (absent, not wrong): the frame chain decides" in out
    assert out[-1].startswith("result: xnnpack-allocator-uaf (rule ")
    near = DATA / "public" / "android" / "executorch-5264-xnnexecutor.txt"
    assert main(["crash", "classify", "--explain", "--json", str(near)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["family"] == "android"
    assert "  NO: no ORT allocator callback frame in the top 4 meaningful frames" in \
        row["explain"]


def test_a_signal_out_of_range_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "host" / "backtrace-demangled-release.txt"
    with pytest.raises(SystemExit) as stop:
        main(["crash", "classify", "--signal", "999", str(path)])
    assert stop.value.code == 2
    assert "'999' is not a signal number (1 to 64)" in capsys.readouterr().err
