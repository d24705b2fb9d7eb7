"""What build a campaign launched, typed: :class:`BuildIdentity` (written by the target that
prepared the campaign, :class:`kit.launch.PreparedTarget`) and, for an onnxruntime the kit
built itself (``coldstart runtime build-ort``), :class:`OrtVariant` with its
:class:`OrtPatch`.

``campaign.json`` keeps it under ``build_identity`` (docs/formats.md, "campaign.json"); the
free ``build`` provenance beside it stays the target's own. A ``campaign.json`` written
before ``build_identity`` existed has none: :meth:`BuildIdentity.from_build` reads it from
the ``build`` keys the kits of then wrote (the host's and Android's), so old campaigns
compare as they did. Compare reads only this type (:func:`kit.analysis.compare.same_build`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from .._fields import FieldReader, type_name
from ..errors import DataError

__all__ = ["BuildIdentity", "OrtVariant", "OrtPatch"]

_HINT = "restore campaign.json from a backup, or start a new campaign in another directory"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclasses.dataclass(frozen=True)
class OrtPatch:
    """The patch a kit build applied (:meth:`kit.targets.host.ortbuild.OrtPatch.describe`).

    Attributes:
        name: the patch's name (``fix``, the file's stem...).
        sha256: the patch file's sha256 (hex).
        summary, origin: one line each, as the patch describes itself.
    """

    name: str
    sha256: str | None = None
    summary: str | None = None
    origin: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> "OrtPatch":
        c = FieldReader(data, where, _HINT)
        return cls(name=c.str("name"), sha256=c.opt_str("sha256"),
                   summary=c.opt_str("summary"), origin=c.opt_str("origin"))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "summary": self.summary,
                "origin": self.origin}


@dataclasses.dataclass(frozen=True)
class OrtVariant:
    """An onnxruntime the kit built (:func:`kit.targets.host.ortbuild.provenance`).

    Attributes:
        source: the source package (``package``, ``version``, ``file``, ``sha256``...).
        packaging: Debian's packaging of it (``version``, ``file``, ``sha256``...).
        patch: the patch applied, ``None`` for the unpatched baseline.
        flags: the CMake flags.
        compiler: the compiler's version line.
        key: the variant's cache key (a digest of all of the above).
        extra: fields a newer kit wrote, kept and compared as they are.
    """

    source: dict[str, Any] = dataclasses.field(default_factory=dict)
    packaging: dict[str, Any] = dataclasses.field(default_factory=dict)
    patch: OrtPatch | None = None
    flags: tuple[str, ...] = ()
    compiler: str | None = None
    key: str | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    _KNOWN = ("source", "packaging", "patch", "flags", "compiler", "key")

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "OrtVariant":
        """Raises DataError naming ``where`` and the field when a field has the wrong type."""
        if not isinstance(data, dict):
            raise DataError(f"{where} must be an object, not {type_name(data)}", _HINT)
        c = FieldReader(data, where, _HINT)
        patch = c.opt_obj("patch")
        return cls(source=c.obj("source"), packaging=c.obj("packaging"),
                   patch=None if patch is None else OrtPatch.from_dict(patch,
                                                                        f"{where}: patch"),
                   flags=tuple(c.strs("flags")), compiler=c.opt_str("compiler"),
                   key=c.opt_str("key"),
                   extra={k: v for k, v in data.items() if k not in cls._KNOWN})

    def to_dict(self) -> dict[str, Any]:
        return {"source": dict(self.source), "packaging": dict(self.packaging),
                "patch": None if self.patch is None else self.patch.to_dict(),
                "flags": list(self.flags), "compiler": self.compiler, "key": self.key,
                **self.extra}

    def differences(self, other: "OrtVariant") -> list[str]:
        """The fields other than the patch (and the key, which follows from the rest) in
        which ``other`` differs, sorted: ``["flags", "source"]``."""
        mine, theirs = self.to_dict(), other.to_dict()
        return sorted(k for k in {*mine, *theirs} - {"patch", "key"}
                      if mine.get(k) != theirs.get(k))


@dataclasses.dataclass(frozen=True)
class BuildIdentity:
    """What a campaign launched: the artifact that was built or installed and what is known
    of it before the first launch. Two campaigns ran the same build when their artifacts
    are the same kind with the same sha256, in the same program.

    Attributes:
        artifact: the kind of thing built or installed: ``ort_library`` (the host's
            onnxruntime), ``apk``, ``app`` (iOS, Appium); ``None`` when nothing is known.
        path: where it was (a file name or path), for people.
        sha256: its bytes' sha256 (hex), ``None`` when not measured.
        program: the program around the artifact when that is not the artifact itself (the
            host's workload binary), else ``None``.
        program_sha256: that program's digest (the workload's source and flags).
        version: the onnxruntime version inside, when known before the launches.
        ort_build: the onnxruntime variant the kit built, else ``None``.
    """

    artifact: str | None = None
    path: str | None = None
    sha256: str | None = None
    program: str | None = None
    program_sha256: str | None = None
    version: str | None = None
    ort_build: OrtVariant | None = None

    _TEXT = ("artifact", "path", "sha256", "program", "program_sha256", "version")

    @property
    def known(self) -> bool:
        """Whether anything is known (an empty identity is not written)."""
        return self != BuildIdentity()

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "BuildIdentity":
        """Read ``campaign.json``'s ``build_identity``.

        Raises:
            DataError: not an object, or a field of the wrong type (naming ``where``).
        """
        if not isinstance(data, dict):
            raise DataError(f"{where} must be an object, not {type_name(data)}", _HINT)
        c = FieldReader(data, where, _HINT)
        ort = data.get("ort_build")
        return cls(**{k: c.opt_str(k) for k in cls._TEXT},
                   ort_build=None if ort is None else OrtVariant.from_dict(
                       ort, f"{where}: ort_build"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in self._TEXT}
        out["ort_build"] = None if self.ort_build is None else self.ort_build.to_dict()
        return out

    @classmethod
    def from_build(cls, build: Mapping[str, Any]) -> "BuildIdentity":
        """The identity of a ``campaign.json`` written before ``build_identity`` existed,
        read from the ``build`` keys the kits of then wrote: the host's
        ``ort_library``/``ort_library_sha256``, ``workload``/``workload_hash`` and
        ``ort_build``, Android's ``apk``/``apk_sha256``. Lenient, as that dict was free: a
        value of the wrong type reads as unknown (an ``ort_build`` that does not read is
        left out)."""
        artifact: str | None
        for artifact in ("ort_library", "apk"):
            sha = _text(build.get(f"{artifact}_sha256"))
            path = _text(build.get(artifact))
            if sha or path:
                break
        else:
            artifact = sha = path = None
        ort = build.get("ort_build")
        try:
            variant = OrtVariant.from_dict(ort, "build.ort_build") if isinstance(ort, dict) \
                else None
        except DataError:
            variant = None
        version = _text(variant.source.get("version")) if variant is not None else None
        return cls(artifact=artifact, path=path, sha256=sha,
                   program=_text(build.get("workload")),
                   program_sha256=_text(build.get("workload_hash")), version=version,
                   ort_build=variant)

    def contradiction(self, build: Mapping[str, Any]) -> str | None:
        """Where this identity says otherwise than the ``build`` provenance it was made from
        (the keys :meth:`from_build` reads; both are written together by the target, so a
        difference is a hand-edited ``campaign.json``): ``"build_identity.sha256 abab... is
        not build.ort_library_sha256 cdcd..."``, the first such field; ``None`` when every
        field both know agrees."""
        told = BuildIdentity.from_build(build)
        key = told.artifact or self.artifact or "artifact"
        names = {"artifact": "the artifact build names", "path": f"build.{key}",
                 "sha256": f"build.{key}_sha256", "program": "build.workload",
                 "program_sha256": "build.workload_hash",
                 "version": "build.ort_build's source version"}
        for field, name in names.items():
            mine, theirs = getattr(self, field), getattr(told, field)
            if field == "artifact" and not (told.sha256 or told.path):
                continue
            if mine and theirs and mine != theirs:
                return (f"build_identity.{field} {_short(mine)} is not {name} "
                        f"{_short(theirs)}")
        if self.ort_build is not None and told.ort_build is not None and \
                self.ort_build.to_dict() != told.ort_build.to_dict():
            return "build_identity.ort_build is not build.ort_build"
        return None


def _short(text: str) -> str:
    """A digest shown by its first 12 hex digits, other text up to 60 characters."""
    if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
        return f"{text[:12]}..."
    return repr(text[:60])
