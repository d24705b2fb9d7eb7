"""``summary.json``: the report dict (:func:`kit.report.report_dict`) as indented JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .._bounded import write_atomic

__all__ = ["write", "dumps"]


def _finite(value: Any) -> Any:
    """JSON has no NaN/Infinity: non-finite floats become ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def dumps(data: dict[str, Any]) -> str:
    """Strict JSON text (non-finite floats as ``null``), two-space indent, trailing newline."""
    return json.dumps(_finite(data), indent=2, allow_nan=False) + "\n"


def write(data: dict[str, Any], path: Path) -> None:
    """Write :func:`dumps` of ``data`` to ``path`` (:func:`kit._bounded.write_atomic`)."""
    write_atomic(path, dumps(data).encode("utf-8"))
