"""Itanium C++ demangling: the ``cxxfilt`` library (``abi::__cxa_demangle`` of the C++
runtime, through ctypes), else the ``c++filt`` binary, else names stay mangled (noted)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from typing import Iterable

__all__ = ["demangle_all"]

#: Longer names are left alone: no real frame symbol comes close, and a demangler's
#: recursion on a hostile name is not worth the risk.
MAX_MANGLED_CHARS = 2048


@functools.lru_cache(maxsize=1)
def _library() -> object | None:
    try:
        import cxxfilt
    except ImportError:
        return None
    demangler = cxxfilt.default_demangler
    try:
        demangler.demangle("_Z1fv")
    except cxxfilt.Error:
        return None
    return demangler


@functools.lru_cache(maxsize=8192)
def _one(name: str) -> str | None:
    demangler = _library()
    if demangler is None:
        return None
    import cxxfilt
    try:
        return demangler.demangle(name)  # type: ignore[attr-defined]
    except (cxxfilt.Error, UnicodeError, ValueError):
        return name


def demangle_all(names: Iterable[str]) -> tuple[dict[str, str], str | None]:
    """Demangle every ``_Z...`` name; returns ``(mapping, note)``.

    ``mapping`` holds each input name that could be demangled; names that are not valid
    manglings map to themselves. ``note`` says why nothing was demangled, or is ``None``.
    """
    wanted = sorted({n for n in names if n.startswith("_Z") and len(n) <= MAX_MANGLED_CHARS
                     and n.isascii() and n.isprintable() and " " not in n})
    if not wanted:
        return {}, None
    if _library() is not None:
        return {n: _one(n) or n for n in wanted}, None
    tool = shutil.which("c++filt")
    if tool is None:
        return {}, "C++ names left mangled: neither the cxxfilt library nor c++filt works here"
    try:
        done = subprocess.run([tool], input="\n".join(wanted) + "\n", capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return {}, f"C++ names left mangled: c++filt failed ({exc})"
    out = done.stdout.split("\n")
    if done.returncode != 0 or len(out) < len(wanted):
        return {}, f"C++ names left mangled: c++filt exited {done.returncode}"
    return dict(zip(wanted, out, strict=False)), None
