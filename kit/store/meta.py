"""``campaign.json`` as typed values: :class:`CampaignMeta`, with the ``--until-verdict``
rule it ran under (:class:`RuleMeta`).

The file is read once per command (:func:`read_meta`), checked field by field, and written
whole and atomically (:func:`write_meta`). Keys this kit does not know are kept in ``extra``
and written back, so a newer kit's campaign survives an older kit's resume. Schema
(version :data:`SCHEMA_VERSION`)::

    {"schema": 1, "label": str, "target": str, "scenario": str (canonical URL, no id),
     "scenario_description": str, "launches": int, "created_at": str (ISO 8601 UTC),
     "devices": [{...}], "build": {...}, "tools": {...}, "options": {...},
     "build_identity": BuildIdentity | absent,   # absent: read from "build" (older kits)
     "extended_from": [int] | absent,   # the planned launches before each --resume that
                                        # raised them after launches were made
     "stage": {"launches": int, "events": int, "event": str} | absent,   # a baseline
                                        # staged by design (--stage N:R): it stops at N
                                        # counted launches with at least R of the event
     "until_verdict": RuleMeta | absent,   # a run under --until-verdict
     "interleaved": {"candidate": str, **RuleMeta} | absent}   # the baseline of such a run
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

from .._bounded import describe_path, path_kind, read_bytes_bounded, write_atomic
from .._fields import FieldReader, type_name
from ..argtypes import MAX_LAUNCHES, MAX_TIMEOUT_S
from ..errors import DataError
from .identity import BuildIdentity

#: a build label: the name of a campaign's build (``--label``), also part of its launch ids
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")

__all__ = ["SCHEMA_VERSION", "CampaignMeta", "RuleMeta", "PairMeta", "StageMeta", "RunSetup",
           "BuildIdentity", "read_meta", "write_meta", "merged_meta", "META_MAX_BYTES"]

SCHEMA_VERSION = 1
#: campaign.json is a few KiB; anything this large is not one
META_MAX_BYTES = 4 * 1024 * 1024
_HINT = "restore campaign.json from a backup, or start a new campaign in another directory"


@dataclasses.dataclass(frozen=True)
class RuleMeta:
    """The ``--until-verdict`` rule a campaign ran under, as ``campaign.json`` keeps it.

    Attributes:
        baseline: the baseline campaign's directory (absolute for interleaved runs).
        signature, alpha, ceiling: the verdict settings (``compare`` takes them when left
            out).
        beta, design_rate, max_launches: the sequential design.
        stopped: ``None`` while the run goes on, then whether it stopped settled.
        why: how it ended (or ``not finished``).
        interleaved: the run made both builds' launches, alternating.
        baseline_events, baseline_n: the finished baseline's target counts (``None`` for an
            interleaved run, whose baseline grows).
        extra: the design's own numbers (thresholds...) and options such as
            ``baseline_runtime``, kept as they are.
    """

    baseline: str
    signature: str
    alpha: float
    ceiling: float
    beta: float
    design_rate: float
    max_launches: int | None
    stopped: bool | None
    why: str
    interleaved: bool = False
    baseline_events: int | None = None
    baseline_n: int | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    _KNOWN = ("baseline", "signature", "alpha", "ceiling", "beta", "design_rate",
              "max_launches", "stopped", "why", "interleaved", "baseline_events", "baseline_n")

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "RuleMeta":
        """Raises DataError naming ``where`` and the field when a field has the wrong type."""
        if not isinstance(data, dict):
            raise DataError(f"{where} must be an object, not {type_name(data)}", _HINT)
        c = FieldReader(data, where, _HINT)
        # the bounds of the command line's options (fractions in (0, 1), launches up to
        # MAX_LAUNCHES): a value read back is held to them as a value typed in is
        ceiling = c.num("ceiling", 0.05, 0.0, 1.0, False)  # defaults: compare's
        return cls(baseline=c.str("baseline", ""),
                   signature=c.str("signature", "xnnpack-allocator-uaf"),
                   alpha=c.num("alpha", 0.05, 0.0, 1.0, False), ceiling=ceiling,
                   beta=c.num("beta", 0.2, 0.0, 1.0, False),
                   design_rate=c.num("design_rate", ceiling / 4, 0.0, 1.0, False),
                   max_launches=c.opt_int("max_launches", 1, MAX_LAUNCHES),
                   stopped=c.opt_bool("stopped"), why=c.str("why", ""),
                   interleaved=bool(c.opt_bool("interleaved")),
                   baseline_events=c.opt_int("baseline_events", 0, MAX_LAUNCHES),
                   baseline_n=c.opt_int("baseline_n", 0, MAX_LAUNCHES),
                   extra={k: v for k, v in data.items() if k not in cls._KNOWN})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"baseline": self.baseline, "signature": self.signature,
                               "alpha": self.alpha, "beta": self.beta, "ceiling": self.ceiling,
                               "design_rate": self.design_rate,
                               "max_launches": self.max_launches, **self.extra,
                               "stopped": self.stopped, "why": self.why}
        if self.interleaved:
            out["interleaved"] = True
        if self.baseline_events is not None:
            out["baseline_events"] = self.baseline_events
            out["baseline_n"] = self.baseline_n
        return out

    @property
    def stop_at_first_below(self) -> bool:
        """Whether the finished-baseline rule stops at its first "below the ceiling"
        (:attr:`kit.analysis.sprt.SprtDesign.stop_at_first_below`): the stored field, else,
        for a campaign kept before it, what its ``comparison`` says (the rule's first
        version kept "..., at the first stop below the ceiling").

        Raises:
            DataError: the stored field is not true or false.
        """
        value = self.extra.get("stop_at_first_below")
        if value is None:
            return str(self.extra.get("comparison", "")).endswith(
                "at the first stop below the ceiling")
        if not isinstance(value, bool):
            raise DataError(f"until_verdict.stop_at_first_below must be true or false, not "
                            f"{type_name(value)}", _HINT)
        return value

    def ended(self, stopped: bool | None, why: str) -> "RuleMeta":
        """The same rule with how the run ended."""
        return dataclasses.replace(self, stopped=stopped, why=why)


@dataclasses.dataclass(frozen=True)
class PairMeta:
    """What the baseline of an interleaved run keeps under ``interleaved``: the candidate
    campaign that drives it, how the run ended, and the run's rule as written there.

    Attributes:
        candidate: the candidate campaign's directory (absolute).
        stopped, why: as :class:`RuleMeta`'s (``None``/``not finished`` while it runs).
        rule: every other key, as it is.
    """

    candidate: str
    stopped: bool | None = None
    why: str = ""
    rule: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "PairMeta":
        """Raises DataError naming ``where`` and the field when a field has the wrong type."""
        if not isinstance(data, dict):
            raise DataError(f"{where} must be an object, not {type_name(data)}", _HINT)
        c = FieldReader(data, where, _HINT)
        return cls(candidate=c.str("candidate"), stopped=c.opt_bool("stopped"),
                   why=c.str("why", ""),
                   rule={k: v for k, v in data.items()
                         if k not in ("candidate", "stopped", "why")})

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, **self.rule, "stopped": self.stopped,
                "why": self.why}


@dataclasses.dataclass(frozen=True)
class RunSetup:
    """What a target prepared for a campaign, typed: the target writes it
    (:attr:`kit.launch.PreparedTarget.setup`) and ``campaign.json`` keeps it under
    ``setup``. Everything outside the target reads these fields, never the keys of the
    target's ``build`` or ``options`` (its own provenance).

    Attributes:
        witness: the race witness: ``"on"``, ``"off: <why>"``, or ``None`` (the target has
            none).
        detector: the race detector's tool (``drd``, ``helgrind``), or ``None``.
        timeout_s: seconds before a launch counts as hung, or ``None`` when not kept.
        poison: the heap poisoning (``glibc``...), or ``None``.
        compared: the launch options that change what a launch does, by name (JSON
            values): two compared campaigns that differ in one are told so
            (:func:`kit.analysis.compare.option_differences`).
        learned: the ``build`` keys the target's ``finish`` fills in after the launches
            (a resume may see them change).
        per_device: the ``options`` keys that map a device id to its value (a resume on
            other devices adds to them).
        app_id: the package or bundle id the launches ran, when the target knows it (a
            farm's evidence pull matches the app's log lines by it).
        farm: the device farm the launches ran on and its settings that are no secret
            (``name``, ``api``, ``region``, ``ref``, ``steps``), or ``None``.
    """

    witness: str | None = None
    detector: str | None = None
    timeout_s: float | None = None
    poison: str | None = None
    compared: dict[str, Any] = dataclasses.field(default_factory=dict)
    learned: tuple[str, ...] = ()
    per_device: tuple[str, ...] = ()
    app_id: str | None = None
    farm: dict[str, Any] | None = None

    #: what a kit before the typed setup kept in ``options`` that changes a launch
    LEGACY_COMPARED = ("poison", "env", "witness", "delivery", "model_set")

    @property
    def witnessed(self) -> bool:
        """The race witness watched the launches."""
        return self.witness == "on"

    @classmethod
    def from_options(cls, options: dict[str, Any],
                     build: dict[str, Any] | None = None) -> "RunSetup":
        """Read from the ``options`` (and ``build``) of a ``campaign.json`` written by a kit
        before the typed setup, in the keys that kit's targets wrote (a value of the wrong
        type reads as unknown)."""
        build = build or {}
        app_id = build.get("app_id")  # the Appium target's
        farm = options.get("farm")  # run appium --farm's
        witness = options.get("witness")
        tool = options.get("detector")
        tool = tool.get("tool") if isinstance(tool, dict) else None
        timeout = options.get("timeout_s")
        poison = options.get("poison")
        return cls(witness=witness if isinstance(witness, str) else None,
                   detector=tool if isinstance(tool, str) and tool else None,
                   timeout_s=float(timeout) if isinstance(timeout, (int, float))
                   and not isinstance(timeout, bool) else None,
                   poison=poison if isinstance(poison, str) and poison else None,
                   compared={k: options[k] for k in cls.LEGACY_COMPARED if k in options},
                   app_id=app_id if isinstance(app_id, str) and app_id else None,
                   farm=farm if isinstance(farm, dict) else None)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "RunSetup":
        """Raises DataError naming ``where`` and the field of the wrong type."""
        if not isinstance(data, dict):
            raise DataError(f"{where} must be an object, not {type_name(data)}", _HINT)
        c = FieldReader(data, where, _HINT)
        timeout = data.get("timeout_s")
        return cls(witness=c.opt_str("witness"), detector=c.opt_str("detector"),
                   timeout_s=None if timeout is None else c.num(
                       "timeout_s", None, 0.0, MAX_TIMEOUT_S, low_inclusive=False),
                   poison=c.opt_str("poison"), compared=c.obj("compared"),
                   learned=tuple(c.strs("learned")), per_device=tuple(c.strs("per_device")),
                   app_id=c.opt_str("app_id"), farm=c.opt_obj("farm"))

    def to_dict(self) -> dict[str, Any]:
        return {"witness": self.witness, "detector": self.detector,
                "timeout_s": self.timeout_s, "poison": self.poison,
                "compared": dict(self.compared), "learned": list(self.learned),
                "per_device": list(self.per_device), "app_id": self.app_id,
                "farm": None if self.farm is None else dict(self.farm)}


@dataclasses.dataclass(frozen=True)
class StageMeta:
    """A baseline staged by design (``coldstart run ... --stage N:R``), as ``campaign.json``
    keeps it: the campaign stops after ``launches`` counted launches when they show at
    least ``events`` of ``event``, and else goes on to its planned ``launches``
    (:mod:`kit.analysis.stage`)."""

    launches: int
    events: int
    event: str

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "StageMeta":
        """Raises DataError naming ``where`` and the field when a field has the wrong type
        or the events exceed the launches."""
        if not isinstance(data, dict):
            raise DataError(f"{where} must be an object, not {type_name(data)}", _HINT)
        c = FieldReader(data, where, _HINT)
        stage = cls(launches=c.int("launches", low=1, high=MAX_LAUNCHES),
                    events=c.int("events", low=1, high=MAX_LAUNCHES), event=c.str("event"))
        if stage.events > stage.launches:
            raise DataError(f"{where}: events ({stage.events}) is more than launches "
                            f"({stage.launches})", _HINT)
        return stage

    def to_dict(self) -> dict[str, Any]:
        return {"launches": self.launches, "events": self.events, "event": self.event}


@dataclasses.dataclass(frozen=True)
class CampaignMeta:
    """A campaign's ``campaign.json`` (module doc). Frozen: change it with
    :func:`dataclasses.replace` and :func:`write_meta`. ``until_verdict`` is the rule of a
    run under ``--until-verdict``; ``interleaved`` marks the baseline of an interleaved
    run. ``build_identity`` is what the target built or installed, typed; given as ``None``
    (a ``campaign.json`` of a kit before it), it is read from ``build``
    (:meth:`BuildIdentity.from_build`), so it is never ``None`` once made.
    ``extended_from`` lists the planned launches before each ``--resume`` that raised them
    once launches had been made: the campaign's size then depended on what it had shown,
    which an exact comparison against it as a finished baseline does not allow
    (:func:`kit.analysis.summary.size_not_fixed`). ``stage`` is a baseline staged by design
    (:class:`StageMeta`), whose size follows its results only as declared before it ran."""

    label: str
    target: str
    scenario: str
    launches: int
    schema: int = SCHEMA_VERSION
    scenario_description: str = ""
    created_at: str = ""
    devices: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    build: dict[str, Any] = dataclasses.field(default_factory=dict)
    tools: dict[str, Any] = dataclasses.field(default_factory=dict)
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    until_verdict: RuleMeta | None = None
    interleaved: PairMeta | None = None
    build_identity: BuildIdentity | None = None
    extended_from: list[int] = dataclasses.field(default_factory=list)
    stage: StageMeta | None = None
    config: dict[str, Any] | None = None
    run_setup: RunSetup | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    _KNOWN = ("schema", "label", "target", "scenario", "scenario_description", "launches",
              "created_at", "devices", "build", "tools", "options", "until_verdict",
              "interleaved", "build_identity", "extended_from", "stage", "config", "setup")

    def __post_init__(self) -> None:
        if self.build_identity is None:
            object.__setattr__(self, "build_identity", BuildIdentity.from_build(self.build))

    @classmethod
    def from_dict(cls, data: Any, where: str = "campaign.json") -> "CampaignMeta":
        """Check and type a parsed ``campaign.json``.

        Raises:
            DataError: not an object, or a field of the wrong type (one line naming it).
        """
        if not isinstance(data, dict):
            raise DataError(f"{where} must hold a JSON object, not {type_name(data)}", _HINT)
        c = FieldReader(data, where, _HINT)
        schema = c.int("schema", SCHEMA_VERSION, low=1)
        if schema > SCHEMA_VERSION:
            raise DataError(f"{where} has schema {schema}, newer than this kit's "
                            f"{SCHEMA_VERSION}", "upgrade coldstart to read it")
        rule = data.get("until_verdict")
        pair = data.get("interleaved")
        identity = data.get("build_identity")
        stage = data.get("stage")
        config = data.get("config")
        setup = data.get("setup")
        label = c.str("label")
        if not LABEL_RE.match(label):
            raise DataError(f"{where}: label {label[:60]!r} is not a build label (1-40 of "
                            "A-Z a-z 0-9 . _ -, starting with a letter or digit)", _HINT)
        build = c.obj("build")
        typed = None if identity is None else BuildIdentity.from_dict(
            identity, f"{where}: build_identity")
        wrong = None if typed is None else typed.contradiction(build)
        if wrong is not None:  # compare decides "same build" by the identity: never a
            # hand-edited one that the provenance beside it contradicts
            raise DataError(f"{where}: {wrong}, the provenance it was made from", _HINT)
        return cls(label=label, target=c.str("target"), scenario=c.str("scenario"),
                   launches=c.int("launches", low=1, high=MAX_LAUNCHES), schema=schema,
                   scenario_description=c.str("scenario_description", ""),
                   created_at=c.str("created_at", ""), devices=c.objs("devices"),
                   build=build, tools=c.obj("tools"), options=c.obj("options"),
                   until_verdict=None if rule is None else RuleMeta.from_dict(
                       rule, f"{where}: until_verdict"),
                   interleaved=None if pair is None else PairMeta.from_dict(
                       pair, f"{where}: interleaved"),
                   build_identity=typed,
                   extended_from=c.ints("extended_from", low=1, high=MAX_LAUNCHES),
                   stage=None if stage is None else StageMeta.from_dict(
                       stage, f"{where}: stage"),
                   config=None if config is None else c.obj("config"),
                   run_setup=None if setup is None else RunSetup.from_dict(
                       setup, f"{where}: setup"),
                   extra={k: v for k, v in data.items() if k not in cls._KNOWN})

    @property
    def setup(self) -> RunSetup:
        """What the target prepared, typed (:class:`RunSetup`): ``campaign.json``'s
        ``setup``, or for a campaign of a kit before it, read from its ``options``."""
        if self.run_setup is not None:
            return self.run_setup
        return RunSetup.from_options(self.options, self.build)

    @property
    def timeout_s(self) -> float | None:
        """Seconds before a launch counted as hung in this campaign, or ``None``."""
        return self.setup.timeout_s

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``campaign.json`` (known keys first, then ``extra``)."""
        out: dict[str, Any] = {"schema": self.schema, "label": self.label,
                               "target": self.target, "scenario": self.scenario,
                               "scenario_description": self.scenario_description,
                               "launches": self.launches, "created_at": self.created_at,
                               "devices": list(self.devices), "build": dict(self.build),
                               "tools": dict(self.tools), "options": dict(self.options)}
        if self.until_verdict is not None:
            out["until_verdict"] = self.until_verdict.to_dict()
        if self.interleaved is not None:
            out["interleaved"] = self.interleaved.to_dict()
        if self.build_identity is not None and self.build_identity.known:
            out["build_identity"] = self.build_identity.to_dict()
        if self.extended_from:
            out["extended_from"] = list(self.extended_from)
        if self.stage is not None:
            out["stage"] = self.stage.to_dict()
        if self.config is not None:
            out["config"] = dict(self.config)
        if self.run_setup is not None:
            out["setup"] = self.run_setup.to_dict()
        out.update(self.extra)
        return out


def read_meta(path: str | os.PathLike[str]) -> CampaignMeta:
    """Read ``<path>/campaign.json`` (bounded: :data:`META_MAX_BYTES`).

    Raises:
        UsageError: the directory or the file is missing, or not a regular file.
        DataError: not JSON, or a field of the wrong type.
    """
    directory = Path(path)
    meta_path = directory / "campaign.json"
    data = read_bytes_bounded(meta_path, META_MAX_BYTES, what="campaign.json",
                              missing_hint="point at a directory made by `coldstart run`",
                              missing=_missing(directory))
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{meta_path} is not valid JSON ({str(exc)[:80]})", _HINT) from None
    return CampaignMeta.from_dict(parsed, str(meta_path))


def _missing(directory: Path) -> str:
    if path_kind(directory) != "a directory":
        return f"{directory} {describe_path(directory)}, not a campaign directory" \
            if path_kind(directory) != "missing" else f"{directory} does not exist"
    return f"{directory} is not a campaign (no campaign.json)"


def write_meta(path: str | os.PathLike[str], meta: CampaignMeta) -> None:
    """Write ``<path>/campaign.json`` atomically (a temporary file, fsynced, then renamed)."""
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "campaign.json"
    write_atomic(target, (json.dumps(meta.to_dict(), indent=2) + "\n").encode("utf-8"))


def merged_meta(meta: CampaignMeta, changes: dict[str, Any]) -> CampaignMeta:
    """``meta`` with ``changes``: field name -> value; ``build``, ``options`` and ``tools``
    dicts are merged one level deep; ``until_verdict``, ``interleaved`` and ``stage`` take their typed
    value or a dict merged into the old one, ``build_identity`` its typed value; unknown
    names go to ``extra``."""
    updates: dict[str, Any] = {}
    extra = dict(meta.extra)
    typed: dict[str, Any] = {"until_verdict": RuleMeta, "interleaved": PairMeta,
                             "stage": StageMeta}
    for key, value in changes.items():
        if key in ("build", "options", "tools") and isinstance(value, dict):
            updates[key] = {**getattr(meta, key), **value}
        elif key in typed and isinstance(value, dict):
            old = getattr(meta, key)
            updates[key] = typed[key].from_dict({**(old.to_dict() if old else {}), **value},
                                                f"{meta.label}'s {key}")
        elif key in {f.name for f in dataclasses.fields(CampaignMeta)}:
            updates[key] = value
        else:
            extra[key] = value
    return dataclasses.replace(meta, extra=extra, **updates)
