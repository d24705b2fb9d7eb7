"""The model set: manifest, fetch from the real wheel, verify, reference pipeline."""

from __future__ import annotations

import shutil
import wave
from pathlib import Path

import pytest

from kit import modelset
from kit.errors import DataError, UsageError

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def models_copy(tmp_path: Path) -> Path:
    """The committed files of models/ (manifest, clip, expected), without the .onnx files."""
    dest = tmp_path / "models"
    dest.mkdir()
    for name in ("manifest.json", "clip.wav", "expected.json"):
        shutil.copy(ROOT / "models" / name, dest / name)
    return dest


def test_checkout_models_verify() -> None:
    ms = modelset.load_modelset()
    assert modelset.verify(ms) == []
    assert [m.role for m in ms.models] == ["mel", "embedding", "keyword"]
    assert ms.source["version"] == "0.4.0"


def test_fetch_extracts_the_pinned_models_from_the_wheel(models_copy: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    ms = modelset.load_modelset(models_copy)
    assert [p[0] for p in modelset.verify(ms)] == [f"{m.path} is missing" for m in ms.models]
    log: list[str] = []
    paths = modelset.fetch(ms, log=log.append)
    assert [p.name for p in paths] == ["melspectrogram.onnx", "embedding_model.onnx",
                                       "hey_jarvis_v0.1.onnx"]
    assert modelset.verify(ms) == []
    assert sum("sha256 ok" in line for line in log) == 3
    log.clear()
    modelset.fetch(ms, log=log.append)  # second time: nothing to do
    assert log == ["all models present and verified"]


def test_tampered_model_is_reported_and_refetched(models_copy: Path) -> None:
    ms = modelset.load_modelset(models_copy)
    modelset.fetch(ms)
    target = ms.by_name("hey_jarvis_v0.1").path
    target.write_bytes(b"not a model")
    problems = modelset.verify(ms)
    assert len(problems) == 1 and "does not match its pinned sha256" in problems[0][0]
    assert problems[0][1] == f"run `coldstart models fetch --models {models_copy} --force`"
    with pytest.raises(DataError, match="hey_jarvis_v0.1.onnx does not match"):
        modelset.require_verified(ms)
    modelset.fetch(ms)
    assert modelset.verify(ms) == []


def test_reference_pipeline_reproduces_expected_json() -> None:
    ms = modelset.load_modelset()
    fresh = modelset.compute_expected(ms)
    committed = ms.expected()
    assert fresh["mel_frames"] == committed["mel_frames"] == 241
    assert fresh["embeddings"] == committed["embeddings"] == 21
    assert (fresh["samples"], fresh["clip_sha256"]) == (committed["samples"],
                                                        committed["clip_sha256"])
    # The scores are floats from fp32 kernels that differ between CPUs (vector width, fused
    # multiply-add): another machine's reference lands about 1e-6 away. The bound is the
    # product's own tolerance, the one every launch is judged by (models/expected.json,
    # written from modelset.SCORE_TOLERANCE), never a tighter literal.
    assert fresh["tolerance"] == committed["tolerance"] == {"abs": modelset.SCORE_TOLERANCE}
    ok, diff = modelset.scores_match(committed, fresh["scores"])
    assert ok, f"scores {diff:.3g} from expected.json, over its tolerance.abs"
    assert abs(fresh["score"] - committed["score"]) <= committed["tolerance"]["abs"]
    # the clip says "hey jarvis": the keyword head fires on the last window
    assert committed["score"] > 0.99 and committed["scores"][0] < 0.1


def test_scores_match_rules() -> None:
    expected = {"scores": [0.1, 0.9], "tolerance": {"abs": 1e-3}}
    assert modelset.scores_match(expected, [0.1005, 0.8995]) == (True, pytest.approx(5e-4))
    assert modelset.scores_match(expected, [0.1, 0.95])[0] is False
    assert modelset.scores_match(expected, [0.1]) == (False, float("inf"))


def test_clip_must_be_16k_mono_pcm(tmp_path: Path) -> None:
    path = tmp_path / "x.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(44100)
        wav.writeframes(b"\0\0\0\0" * 10)
    with pytest.raises(DataError, match="not 16 kHz mono 16-bit PCM"):
        modelset.read_clip(path)
    path.write_bytes(b"RIFFxxxx")
    with pytest.raises(DataError, match="not a readable WAV"):
        modelset.read_clip(path)


def test_missing_manifest_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no model set manifest"):
        modelset.load_modelset(tmp_path)


@pytest.mark.parametrize("text", ["[" * 100_000, '{"models": 3}', '{"models": [[]]}', "{"])
def test_a_corrupt_manifest_is_a_data_error(models_copy: Path, text: str) -> None:
    (models_copy / "manifest.json").write_text(text)
    with pytest.raises(DataError, match="is not a valid manifest") as info:
        modelset.load_modelset(models_copy)
    assert len(info.value.one_line()) < 400


def test_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as info:
        modelset.load_modelset().by_name("alexa")
    assert "melspectrogram, embedding_model, hey_jarvis_v0.1" in info.value.one_line()
