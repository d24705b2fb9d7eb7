"""Java HotSpot fatal error logs: ``hs_err_pid<N>.log`` and the console copy of its header.

Layout (OpenJDK ``src/hotspot/share/utilities/vmError.cpp``, ``VMError::report``; the same
from JDK 8 to 21, on Linux, macOS and Windows)::

    #
    # A fatal error has been detected by the Java Runtime Environment:
    #
    #  SIGSEGV (0xb) at pc=0x00007f81a8dc4e79, pid=21253, tid=0x00007f8192ffd700
    #
    # JRE version: OpenJDK Runtime Environment (17.0.9+9) (build 17.0.9+9)
    # Java VM: OpenJDK 64-Bit Server VM (17.0.9+9, mixed mode, ..., linux-amd64)
    # Problematic frame:
    # C  [libonnxruntime.so+0x862cf]  OrtApis::ReleaseValue(OrtValue*)+0x1f
    ...
    ---------------  T H R E A D  ---------------
    Current thread (0x00007fac42080800):  JavaThread "main" [_thread_in_native, id=21763, ...]
    siginfo: si_signo: 11 (SIGSEGV), si_code: 1 (SEGV_MAPERR), si_addr: 0x0000000000000000
    ...
    Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)
    C  [libonnxruntime.so+0x862cf]  OrtApis::ReleaseValue(OrtValue*)+0x1f
    j  ai.onnxruntime.OnnxValue.close()V+0
    v  ~StubRoutines::call_stub

A frame line is ``<kind>  [<module>+0x<offset>]  <symbol>+0x<offset>`` for native (``C``)
and VM (``V``) code; ``j``/``J`` lines are Java methods (their JVM descriptor is dropped),
``v`` VM stubs. The crash frames are the first ``Native frames`` block (the ``Java frames``
block after it repeats the Java part); without one, the ``Problematic frame`` stands alone
(noted). ``# Internal Error (file:line)`` (the message) with a ``guarantee(...)`` /
``assert(...)`` line is the VM's own abort (that line is the abort message); ``There is
insufficient memory`` is an out-of-memory death.
"""

from __future__ import annotations

import re
from typing import Sequence

from ._draft import Draft
from ._text import basename, parse_int, signal_number
from .record import Frame

__all__ = ["looks_like_hotspot", "read_hotspot"]

_BANNER = "A fatal error has been detected by the Java Runtime Environment"
# "#  SIGSEGV (0xb) at pc=0x00007fff799b2712, pid=93271, tid=0x0000000000005503";
# Windows: "#  EXCEPTION_ACCESS_VIOLATION (0xc0000005) at pc=0x..., pid=1, tid=2"
_SIGNAL = re.compile(r"^#\s+(?P<name>SIG[A-Z]+|EXCEPTION_\w+) \((?P<num>0x[0-9a-fA-F]+)\) at "
                     r"pc=(?P<pc>0x[0-9a-fA-F]+)(?:, pid=(?P<pid>\d+))?"
                     r"(?:, tid=(?P<tid>0x[0-9a-fA-F]+|\d+))?")
_INTERNAL = re.compile(r"^#\s+Internal Error \((?P<where>[^)]*)\)(?:, pid=(?P<pid>\d+))?"
                       r"(?:, tid=(?P<tid>0x[0-9a-fA-F]+|\d+))?")
_CHECK = re.compile(r"^#\s+(?P<msg>(?:guarantee|assert|fatal|Error: |ShouldNotReachHere|"
                    r"Out of Memory Error)\b(?:.*\S)?)\s*$")
_OOM = re.compile(r"^#\s+(?P<msg>(?:There is insufficient memory for the Java Runtime "
                  r"Environment to continue\.|Native memory allocation \(\w+\) failed.*?))\s*$")
_VM = re.compile(r"^#\s+Java VM: .*?\b(?P<os>linux|bsd|windows|solaris|aix)-(?P<arch>\w+)")
_THREAD = re.compile(r'^Current thread \(0x[0-9a-fA-F]+\):\s+(?P<type>\w+) "(?P<name>[^"]*)"'
                     r"(?: daemon)? \[(?P<state>_thread_\w+)(?:, id=(?P<id>\d+))?")
_SIGINFO = re.compile(r"^siginfo: si_signo: (?P<num>\d+) \((?P<name>\w+)\), si_code: "
                      r"(?P<code>-?\d+) \((?P<code_name>\w+)\)"
                      r"(?:, si_addr: (?P<addr>0x[0-9a-fA-F]+))?")
_FRAME = re.compile(r"^#?\s*(?P<kind>[CVjJv])\s+(?:\[(?P<mod>[^\]+]+)\+(?P<moff>0x[0-9a-fA-F]+)\]"
                    r"\s*(?P<sym>.*?)(?:\+(?P<off>0x[0-9a-fA-F]+))?|(?P<pc>0x[0-9a-fA-F]+)|"
                    r"(?P<java>\d*\s*(?:c[12]\s+)?[\w$.<>/~]+[\w$>].*?))\s*$")
_JAVA = re.compile(r"^(?:\d+\s+)?(?:c[12]\s+)?(?P<sym>[\w$./<>]+?)(?:\(|\s|$)")
_NATIVE_FRAMES = "Native frames: (J=compiled Java code"
_JAVA_FRAMES = "Java frames: (J=compiled Java code"


def looks_like_hotspot(text: str) -> str | None:
    """Why ``text`` is a HotSpot fatal error log (or its console copy), or ``None``."""
    if _BANNER in text:
        return "'# A fatal error has been detected by the Java Runtime Environment'"
    if "# Problematic frame:" in text or _NATIVE_FRAMES in text:
        return "a HotSpot error log's 'Problematic frame' or 'Native frames' section"
    native = 0
    for line in text.split("\n", 400)[:400] if "  [" in text else ():
        if line[:1] in "CV" and "  [" in line[:4] and _FRAME.match(line):
            native += 1
            if native >= 2:
                return "HotSpot frame lines ('C  [lib+0x..]  symbol+0x..')"
    return None


def _frame(index: int, line: str) -> Frame | None:
    m = _FRAME.match(line)
    if m is None:
        return None
    if m.group("mod"):
        sym = (m.group("sym") or "").strip() or None
        off = m.group("off")
        return Frame(index=index, module=basename(m.group("mod")), symbol=sym,
                     offset=parse_int(off, 16) if off and sym else None,
                     pc=m.group("moff").lower(),
                     path=m.group("mod") if "/" in m.group("mod") else None)
    if m.group("pc"):
        return Frame(index=index, pc=m.group("pc").lower())
    java = m.group("java") or ""
    if m.group("kind") in "CV":
        return None
    if m.group("kind") == "v":
        return Frame(index=index, symbol=java.split(" 0x")[0].strip() or None)
    jm = _JAVA.match(java)
    return Frame(index=index, symbol=jm.group("sym").replace("/", ".")) if jm else None


def read_hotspot(draft: Draft, lines: Sequence[str]) -> None:
    """Read a HotSpot fatal error log (or a piece of it) into ``draft``. Never raises."""
    problematic: Frame | None = None
    in_frames = done = False
    banner = internal = False
    for i, raw in enumerate(lines):
        line = raw.strip()
        if _BANNER in line:
            banner = True
            continue
        m = _SIGNAL.match(line)
        if m is not None:
            name = m.group("name")
            draft.kind = "native"
            if name.startswith("SIG"):
                draft.set("signal_name", name)
                draft.set("signal", parse_int(m.group("num"), 16) or signal_number(name))
            else:
                draft.set("exception", name)
            draft.set("pid", parse_int(m.group("pid")))
            draft.set("tid", _tid(m.group("tid")))
            continue
        m = _INTERNAL.match(line)
        if m is not None:
            draft.kind = "native"
            internal = True
            draft.set("message", f"Internal Error ({m.group('where')})")
            draft.set("pid", parse_int(m.group("pid")))
            draft.set("tid", _tid(m.group("tid")))
            continue
        m = _OOM.match(line)
        if m is not None:
            draft.kind = "oom"
            draft.set("message", m.group("msg"))
            continue
        m = _CHECK.match(line)
        if m is not None and internal:
            draft.set("abort_message", m.group("msg"))
            continue
        m = _VM.match(line)
        if m is not None:
            draft.platform = {"linux": "linux", "bsd": "macos"}.get(m.group("os"), "unknown")
            draft.set("abi", {"amd64": "x86_64"}.get(m.group("arch"), m.group("arch")))
            continue
        if line == "# Problematic frame:" and i + 1 < len(lines):
            problematic = _frame(0, lines[i + 1].strip())
            continue
        m = _THREAD.match(line)
        if m is not None:
            draft.set("thread_name", m.group("name"))
            draft.set("tid", parse_int(m.group("id")))
            if m.group("state") == "_thread_in_native":
                draft.note("the crashing Java thread was in native code (_thread_in_native)")
            continue
        m = _SIGINFO.match(line)
        if m is not None:
            draft.kind = "native"
            draft.set("signal", parse_int(m.group("num")))
            draft.set("signal_name", m.group("name"))
            draft.set("code", m.group("code_name"))
            draft.set("fault_address", m.group("addr"))
            continue
        if line.startswith(_NATIVE_FRAMES):
            in_frames = not done
            continue
        if line.startswith(_JAVA_FRAMES) or (in_frames and not line):
            in_frames, done = False, done or bool(draft.frames)
            continue
        if not done and not line.startswith("#") and (in_frames or not banner):
            frame = _frame(len(draft.frames), line) if line[:1] in "CVjJv" else None
            if frame is not None:
                draft.add_frame(frame)
                in_frames = True
    if not draft.frames and problematic is not None:
        draft.add_frame(problematic)
        draft.note("no 'Native frames' section: the 'Problematic frame' alone")
    if draft.kind == "unknown" and draft.frames:
        draft.kind = "native"
        draft.note("HotSpot frames without the error header: no signal")
    if draft.platform == "unknown" and draft.frames:
        modules = [f.module or "" for f in draft.frames]
        if any(m.endswith(".dylib") for m in modules):
            draft.platform = "macos"
        elif any(".so" in m for m in modules):
            draft.platform = "linux"


def _tid(text: str | None) -> int | None:
    # JDK 8 on Linux prints the pthread_t (an address), not the kernel's thread id
    value = parse_int(text[2:], 16) if text and text.startswith("0x") else parse_int(text)
    return value if value is not None and value < 1 << 32 else None
