"""Typed reads of parsed JSON objects (campaign.json, launch records): every field is checked
for its type, and a wrong one is a one-line :class:`~kit.errors.DataError` naming the file
and the field, never a traceback from deep inside the kit."""

from __future__ import annotations

import math
from typing import Any, Mapping

from .errors import DataError

__all__ = ["FieldReader", "type_name"]


def type_name(value: Any) -> str:
    """``a string``, ``a number``, ``null``... for messages."""
    return "null" if value is None else {bool: "a boolean", int: "a number", float: "a number",
                                         str: "a string", list: "a list",
                                         dict: "an object"}.get(type(value), type(value).__name__)


#: the builtins, for annotations inside :class:`FieldReader` (whose methods are named
#: ``str`` and ``int``)
_str = str
_int = int


class FieldReader:
    """Reads typed fields from one JSON object.

    Args:
        data: the object.
        where: what it is, for messages (``runs/x/campaign.json``, ``... line 7``).
        hint: what the user should do about a bad field.
    """

    def __init__(self, data: Mapping[str, Any], where: str, hint: str | None = None) -> None:
        self.data = data
        self.where = where
        self.hint = hint

    def fail(self, key: str, want: str) -> DataError:
        """The error for ``key`` not being ``want``."""
        return DataError(f"{self.where}: {key} must be {want}, not "
                         f"{type_name(self.data.get(key))}", self.hint)

    def out_of_range(self, key: str, want: str) -> DataError:
        """The error for a number ``key`` outside its bounds (shown, cut to 40
        characters)."""
        text = repr(self.data.get(key))
        shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
        return DataError(f"{self.where}: {key} must be {want}, not {shown}", self.hint)

    def str(self, key: _str, default: _str | None = None) -> _str:
        value = self.data.get(key, default)
        if not isinstance(value, str):
            raise self.fail(key, "a string")
        return value

    def opt_str(self, key: _str) -> _str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(key, "a string or null")
        return value

    def int(self, key: _str, default: _int | None = None, low: _int = 0,
            high: _int | None = None) -> _int:
        value = self.data.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise self.fail(key, f"a whole number >= {low}")
        if high is not None and value > high:
            raise self.out_of_range(key, f"a whole number in {low}..{high}")
        return value

    def opt_int(self, key: _str, low: _int | None = None, high: _int | None = None) -> _int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or (
                low is not None and value < low and high is None):
            raise self.fail(key, "a whole number or null")
        if high is not None and not (low or 0) <= value <= high:
            raise self.out_of_range(key, f"a whole number in {low or 0}..{high} or null")
        return value

    def num(self, key: _str, default: float | None = None, low: float | None = None,
            high: float | None = None, low_inclusive: bool = True) -> float:
        """A finite number; with ``low``/``high``, inside them (``low`` excluded unless
        ``low_inclusive``)."""
        value = self.data.get(key, default)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(
                value):
            raise self.fail(key, "a number")
        if (low is not None and (value < low or (value == low and not low_inclusive))) or (
                high is not None and value > high):
            raise self.out_of_range(key, f"a number in {'[' if low_inclusive else '('}"
                                         f"{low if low is not None else '-inf'}, "
                                         f"{high if high is not None else 'inf'}]")
        return float(value)

    def opt_num(self, key: _str) -> float | None:
        return None if self.data.get(key) is None else self.num(key)

    def opt_bool(self, key: _str) -> bool | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, "true, false or null")
        return value

    def obj(self, key: _str) -> dict[_str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(key, "an object")
        return dict(value)

    def opt_obj(self, key: _str) -> dict[_str, Any] | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.fail(key, "an object or null")
        return value

    def objs(self, key: _str) -> list[dict[_str, Any]]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(key, "a list of objects")
        return [dict(v) for v in value]

    def strs(self, key: _str) -> list[_str]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of strings")
        return list(value)

    def ints(self, key: _str, low: _int = 0, high: _int | None = None) -> list[_int]:
        """A list of whole numbers, each in ``[low, high]`` (default: empty)."""
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= low
                and (high is None or v <= high) for v in value):
            span = f"{low}..{high}" if high is not None else f"at least {low}"
            raise self.fail(key, f"a list of whole numbers ({span})")
        return list(value)

    def nums(self, key: _str) -> list[float]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                for v in value):
            raise self.fail(key, "a list of numbers")
        return [float(v) for v in value]
