"""Crash signatures: normalised top frames of the crashing thread.

How (the ClusterFuzz and Socorro way, docs/crash.md "Signatures"):

1. **Normalise** each frame. C/C++/Rust symbols go through Socorro's own normaliser,
   ``siggen.rules.CSignatureTool.normalize_frame`` (mozilla-services/socorro, packaged as
   ``siggen``): it drops return types, argument lists, cv/ref qualifiers, lambda numbers and
   ``[clone .cold]`` labels, collapses template arguments to ``<T>`` and spells the anonymous
   namespace one way (``(anonymous namespace)``). Java and JS frames are kept as printed. A
   frame without a symbol stands for its module (``libonnxruntime.so``), or for ``@<pc>``.
   Addresses and offsets never enter a signature.
2. **Skip** frames that carry no meaning: the ``skip`` patterns of the rule files (signal
   trampolines, abort and allocator plumbing, unknown mappings), like Socorro's irrelevant
   list and ClusterFuzz's ignore lists; consecutive frames with the same name (one
   unsymbolized module, or a reporter's junk symbol) count once.
3. **Take the top** :data:`SIGNATURE_FRAMES` (3, ClusterFuzz's ``MAX_CRASH_STATE_FRAMES``)
   meaningful frames, joined with `` | `` (Socorro's delimiter), cut at 255 characters
   (Socorro's limit). If every frame was skipped, the first frame stands alone (Socorro).
   Aborts with a message are prefixed ``abort | <message>`` (Socorro's AbortSignature);
   Java, JS, ANR and OOM deaths are prefixed with the exception or reason.

Why not siggen's whole generator: its rule pipeline and signature lists are Firefox's
(``mozalloc_abort``, IPC and shutdown-hang rules, Windows DLL lists), its input is
minidump-stackwalk JSON, and its walk stops at the first frame that is not on a "prefix"
list, so an XNNPACK crash would be named by one frame. The normaliser is the part that fits.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import TYPE_CHECKING, Sequence

from .record import CrashRecord, Frame

if TYPE_CHECKING:
    from .rules import RuleSet

__all__ = ["SIGNATURE_FRAMES", "SIGNATURE_MAX_CHARS", "NormalFrame", "normalize_symbol",
           "normalize_frame", "meaningful_frames", "make_signature", "mask_message",
           "abort_frames", "ABORT_FRAMES_LOOKED_AT"]

SIGNATURE_FRAMES = 3
SIGNATURE_MAX_CHARS = 255
#: Frames of a record looked at for the signature and by the rules (Socorro reads 40).
MAX_FRAMES_CONSIDERED = 40


@dataclasses.dataclass(frozen=True)
class NormalFrame:
    """A frame with its normalised name; ``position`` is its index in ``record.frames``."""

    position: int
    name: str
    frame: Frame


@functools.lru_cache(maxsize=1)
def _tool() -> object:
    from siggen.rules import CSignatureTool
    # built once (it compiles siggen's bundled lists, ~0.1 s); only normalize_frame is used
    return CSignatureTool()


_PLAIN = re.compile(r"^[\w:.$~]+$")
# a source location a parser left on a symbol: " /path/file.cc:30:12", " (file.cc:30)",
# " at file.cc:30"
#: a compiler's clone label (``[clone .cold]``, ``[clone .llvm.2620325170]``: ThinLTO's hash
#: differs in every build), which names no other function
_CLONE = re.compile(r"\s*\[clone \.[^\]]*\]")
_SOURCE_TAIL = re.compile(r"(?:\s+(?:at\s+)?/?[\w./+~-]*\.\w{1,5}:\d+(?::\d+)?|"
                          r"\s+\([\w./+~-]+\.\w{1,5}:\d+(?::\d+)?\))\s*$")
# siggen keeps the arguments of a call operator (``X::operator()(int)``); drop them too
_CALL_OPERATOR_ARGS = re.compile(r"^(.*::operator\(\))\(.*\)(?: const)?$")
# spellings of the anonymous namespace: gdb/GCC, MSVC/Socorro, clang's mangled name
_ANON = re.compile(r"\{anonymous\}|`anonymous namespace'|\(anonymous_namespace\)|"
                   r"\b_GLOBAL__N_\d+\b|\(anon\)")


@functools.lru_cache(maxsize=65536)
def normalize_symbol(symbol: str, rust: bool = False) -> str:
    """A C/C++/Rust symbol as it appears in a signature (see module docs, step 1).

    ``xnn_create_fully_connected_nc_f32`` stays as it is;
    ``onnxruntime::xnnpack::MatMul::PrePack(onnxruntime::Tensor const&, int, ...)`` becomes
    ``onnxruntime::xnnpack::MatMul::PrePack``. Never raises (a symbol the normaliser cannot
    read is returned stripped).
    """
    symbol = _CLONE.sub("", _SOURCE_TAIL.sub("", symbol.strip()))
    if symbol.startswith("__GI_") and len(symbol) > 5:
        # glibc's internal alias of a public function (include/libc-symbols.h hidden_def):
        # gdb prints __GI_raise, __GI_abort, __GI___libc_free for raise, abort, __libc_free
        symbol = symbol[5:]
    if symbol.startswith("::"):  # the global namespace spelled out (IDE frame views)
        symbol = symbol[2:]
    if symbol.startswith("[inlined] "):
        symbol = symbol[len("[inlined] "):]
    if not symbol or (_PLAIN.match(symbol) and not rust and "_GLOBAL__N_" not in symbol):
        return symbol
    symbol = _ANON.sub("(anonymous namespace)", symbol)
    if symbol.startswith("operator ") and not rust:
        # a free operator (``operator new(unsigned long)``): siggen would take ``operator``
        # for a return type and keep only ``new``
        return symbol.split("(", 1)[0].strip()
    try:
        out = _tool().normalize_frame(  # type: ignore[attr-defined]
            function=symbol, file="lib.rs" if rust else None, line=None)
    except Exception:  # noqa: BLE001 - a symbol siggen cannot read is kept as printed
        return symbol
    out = _CALL_OPERATOR_ARGS.sub(r"\1", out.strip())
    return out or symbol


#: Symbol texts that name no function (Apple's redacted system symbols, unknowns): the frame
#: stands for its module, as a frame without a symbol does.
_NO_SYMBOL = frozenset({"<redacted>", "???", "??", "<unknown>", "(Missing)"})


def normalize_frame(frame: Frame, managed: bool = False) -> str:
    """The name a frame contributes: normalised symbol, else module, else ``@pc``.

    ``managed`` (Java/Kotlin/JS frames) keeps the symbol as printed.
    """
    if frame.symbol and frame.symbol not in _NO_SYMBOL:
        if managed or (frame.file or "").endswith((".java", ".kt", ".js")):
            return frame.symbol.strip()
        return normalize_symbol(frame.symbol, rust=(frame.file or "").endswith(".rs"))
    if frame.module:
        return frame.module.strip("[]") if frame.module.startswith("[") else frame.module
    return f"@{frame.pc}" if frame.pc else ""


def meaningful_frames(record: CrashRecord, rules: "RuleSet") -> tuple[list[NormalFrame],
                                                                      list[str]]:
    """Frames left after the skip list, with a trail of what was skipped and why."""
    managed = record.kind in ("java", "js")
    out: list[NormalFrame] = []
    trail: list[str] = []
    skipped: list[str] = []
    for position, frame in enumerate(record.frames[:MAX_FRAMES_CONSIDERED]):
        name = normalize_frame(frame, managed=managed)
        if not name:
            skipped.append(f"#{frame.index} (empty)")
            continue
        if rules.is_skipped(name):
            skipped.append(f"#{frame.index} {name}")
            continue
        if out and out[-1].name == name:
            skipped.append(f"#{frame.index} {name} (same as the frame above)")
            continue
        out.append(NormalFrame(position=position, name=name, frame=frame))
    if skipped:
        trail.append("skip: " + ", ".join(skipped[:12]) + (
            f" and {len(skipped) - 12} more" if len(skipped) > 12 else ""))
    for pattern in rules.timed_out():
        trail.append(f"skip: user pattern {pattern[:80]!r} timed out; it skips nothing")
    return out, trail


#: How many of a record's top frames :func:`abort_frames` looks at.
ABORT_FRAMES_LOOKED_AT = 8
# what a process calls when it ends itself: abort, the C++ and ObjC exception machinery,
# assertions, allocator reports (bionic, glibc, Darwin, libc++abi, libstdc++, ART)
_ABORT_PLUMBING = re.compile(
    r"^(?:abort|raise|gsignal|tgkill|__?pthread_kill|__abort_with_payload|abort_with_payload|"
    r"std::(?:__1::|__ndk1::)?(?:__)?terminate|std::__terminate|__cxa_(?:re)?throw|"
    r"__cxxabiv1::failed_throw|demangling_terminate_handler|abort_message|__abort_message|"
    r"__gnu_cxx::__verbose_terminate_handler|_objc_terminate|objc_exception_(?:re)?throw|"
    r"-\[NSException raise\]|__assert2?|__assert_fail(?:_base)?|__assert_rtn|"
    r"art::Runtime::Abort|__fortify_fatal|malloc_v?report|malloc_error_break)$")


def abort_frames(record: CrashRecord) -> list[str]:
    """Names of the abort plumbing among the top :data:`ABORT_FRAMES_LOOKED_AT` frames
    (``abort``, ``__cxa_throw``, ``objc_exception_throw``, ``__assert2`` ...): when a report
    has no signal, these say the process aborted itself."""
    out = []
    for frame in record.frames[:ABORT_FRAMES_LOOKED_AT]:
        name = normalize_frame(frame).lstrip(":")
        if name and _ABORT_PLUMBING.match(name):
            out.append(name)
    return out


_VARIABLE = re.compile(r"0x[0-9a-fA-F]+|\d+")


def mask_message(text: str, limit: int = 120) -> str:
    """First line of a message with addresses and numbers masked (``0x?``, ``N``)."""
    line = text.strip().split("\n")[0]
    line = _VARIABLE.sub(lambda m: "0x?" if m.group(0).startswith("0x") else "N", line)
    return line[:limit].rstrip()


def make_signature(record: CrashRecord, frames: Sequence[NormalFrame]) -> tuple[str, str]:
    """``(signature, how)`` for a record whose meaningful frames are ``frames``."""
    top = [f.name for f in frames[:SIGNATURE_FRAMES]]
    how = f"top {len(top)} meaningful frames"
    if not top and record.frames:
        first = normalize_frame(record.frames[0], managed=record.kind in ("java", "js"))
        if first:
            top = [first]
            how = "every frame was skipped: the first frame stands alone"
    prefix: list[str] = []
    if record.kind == "java":
        prefix = [record.exception or "java exception"]
    elif record.kind == "js":
        prefix = [mask_message(record.message or record.exception or "JS error")]
    elif record.kind == "anr":
        reason = (record.message or "").split("(")[0]
        prefix = ["ANR"] + ([mask_message(reason, 80)] if reason.strip() else [])
    elif record.kind == "oom":
        prefix = ["OOM", record.exception or "out of memory"]
        if not top and record.message:
            prefix.append(mask_message(record.message, 80))
    elif record.kind == "native" and record.abort_message and (
            record.signal_name in ("SIGABRT", None) or record.exception == "EXC_CRASH"):
        prefix = ["abort", mask_message(record.abort_message)]
    parts = prefix + top
    if not parts:
        return "EMPTY: no frame data available", "no frames and no message"
    signature = " | ".join(parts)
    if len(signature) > SIGNATURE_MAX_CHARS:
        signature = signature[:SIGNATURE_MAX_CHARS - 3] + "..."
        how += f", cut at {SIGNATURE_MAX_CHARS} characters"
    return signature, how
