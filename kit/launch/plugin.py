"""A target plug-in: everything the kit knows of one kind of target, in one object (the
registry, :mod:`kit.targets.registry`, holds one per target name; pytest-xdist's
``Scheduling`` protocol is the model).

A plug-in owns its command-line options, its typed config (to and from JSON: what
``campaign.json`` keeps under ``config``, so that a resume is the stored config plus what
was given) and ``prepare``, which returns a :class:`~kit.launch.PreparedTarget` with its
typed :class:`~kit.store.meta.RunSetup`. Its ``build`` and ``options`` are provenance
that only the plug-in reads back. The front ends (the CLI and the pytest plugin) build a
request through one library function, :func:`kit.campaign.build.build_request`, and never
test a target's name.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import types
import typing
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..errors import DataError
from ..scenario import Scenario
from ..store.meta import CampaignMeta
from .target import LogFn, PreparedTarget

__all__ = ["TargetPlugin", "BaselineBuild", "config_to_json", "config_from_json"]

C = TypeVar("C")


@dataclasses.dataclass(frozen=True)
class BaselineBuild(Generic[C]):
    """The baseline build of an interleaved run: its config, and what ``campaign.json``
    keeps of it in the rule (e.g. ``{"baseline_runtime": "debian"}``) so that a resume
    goes on interleaved."""

    config: C
    kept: dict[str, Any]


class TargetPlugin(Generic[C]):
    """One kind of target (subclass it; one instance per target name in the registry).

    Attributes:
        name: the name on the command line and in records (``host``...).
        help: one line for ``coldstart run --help``.
        description: the paragraph of ``coldstart run <name> --help``.
        default_timeout_s: a launch's default timeout in seconds.
        config_type: the frozen dataclass of the target's config (:func:`config_to_json`
            and :func:`config_from_json` map it to and from ``campaign.json``'s ``config``).
    """

    name: str = ""
    help: str = ""
    description: str = ""
    default_timeout_s: float = 60.0
    config_type: type[C]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the target's own options to ``coldstart run <name>``'s parser (the pytest
        plugin parses a ``--coldstart-target`` with the same parser)."""

    def config_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                         timeout_s: float) -> C:
        """The target's config from parsed arguments; ``kept``: the campaign being resumed
        (its stored config, :meth:`kept_config`, gives what was left out).

        Raises:
            UsageError: bad options, or ones that contradict the resumed campaign.
        """
        raise NotImplementedError

    def baseline_from_args(self, args: argparse.Namespace, kept: CampaignMeta | None,
                           timeout_s: float, rule: Any) -> BaselineBuild[C] | None:
        """The baseline build of an interleaved run, or ``None`` (the default: the target
        runs only against a finished baseline)."""
        return None

    def prepare(self, config: C, scenario: Scenario, log: LogFn) -> PreparedTarget:
        """Check ``config`` (and that ``scenario`` can run here) and make the target ready;
        ``log`` takes progress lines for the user.

        Raises:
            UsageError: a bad configuration; InfraError: the infrastructure failed.
        """
        raise NotImplementedError

    def after_run(self, args: argparse.Namespace, out: Path, console: Any) -> int:
        """Called by ``coldstart run`` after the session (e.g. a farm's evidence pull);
        returns an exit code (0: nothing to add)."""
        return 0

    def config_to_json(self, config: C) -> dict[str, Any]:
        """``config`` as ``campaign.json`` keeps it (no secrets: override to redact)."""
        data = config_to_json(config)
        assert isinstance(data, dict)
        return data

    def config_from_json(self, data: Any) -> C:
        """The config ``campaign.json`` keeps.

        Raises:
            DataError: it is not this target's config.
        """
        return config_from_json(self.config_type, data, f"campaign.json: config ({self.name})")

    def kept_config(self, kept: CampaignMeta | None) -> C | None:
        """The config of the resumed campaign ``kept`` (``None``: none, or a campaign of an
        older kit that kept none)."""
        if kept is None or kept.config is None:
            return None
        return self.config_from_json(kept.config)


def config_to_json(value: Any) -> Any:
    """A config dataclass (nested dataclasses, enums, tuples, paths) as JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: config_to_json(getattr(value, f.name))
                for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [config_to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): config_to_json(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def config_from_json(cls: type[C], data: Any, where: str) -> C:
    """The dataclass ``cls`` from :func:`config_to_json`'s JSON (fields by their annotated
    type; a key this kit does not know is left out, a missing one takes the default).

    Raises:
        DataError: not an object, or a field of the wrong type.
    """
    hint = "resume with the target's options given, or restore campaign.json"
    if not isinstance(data, dict):
        raise DataError(f"{where} must be an object", hint)
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            values[f.name] = _from_json(hints[f.name], data[f.name], f"{where}.{f.name}", hint)
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{where}: {str(exc)[:120]}", hint) from None


def _from_json(tp: Any, value: Any, where: str, hint: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arm in (a for a in args if a is not type(None)):
            try:
                return _from_json(arm, value, where, hint)
            except DataError as exc:
                errors.append(exc)
        raise errors[0] if errors else DataError(f"{where}: unexpected null", hint)
    if origin is tuple:
        if not isinstance(value, list):
            raise DataError(f"{where} must be a list", hint)
        item = args[0] if args else Any
        return tuple(_from_json(item, v, where, hint) for v in value)
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise DataError(f"{where} must be an object", hint)
        return dict(value)
    if tp is Any:
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return config_from_json(tp, value, where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise DataError(f"{where}: {str(value)[:40]!r} is not one of "
                            f"{', '.join(str(m.value) for m in tp)}", hint) from None
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp in (str, int, bool) and type(value) is tp:
        return value
    if tp is Path and isinstance(value, str):
        return Path(value)
    raise DataError(f"{where}: {type(value).__name__} where {getattr(tp, '__name__', tp)} "
                    f"is wanted", hint)
