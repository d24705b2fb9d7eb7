"""Text an Android device prints, for the FakeAndroidDevice double: logcat lines, tombstones,
``am start -W`` output, ``dumpsys activity exit-info`` and ``dumpsys dropbox --print``.

Formats follow docs/formats.md sections 1-3 and docs/formats.md section D2 (AOSP
``liblog`` threadtime, debuggerd tombstones, ``ActivityManagerShellCommand``,
``ApplicationExitInfo.dump()``, ``DropBoxManagerService.dump()``). Stacks for onnxruntime
issue #32461 are the crashing-thread shapes docs/design.md describes: creation
(``Gemm::PrePack`` -> ``xnn_create_fully_connected_nc_f32`` -> ``xnn_aligned_allocate``),
inference (``reshape_fully_connected_nc``) and release (``xnn_destroy_operator`` ->
``xnn_aligned_deallocate``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt

__all__ = ["threadtime", "Tombstone", "ort_stack", "other_native_stack", "am_start_ok",
           "am_start_error", "exit_info_entry", "exit_info_dump", "dropbox_dump",
           "javascript_exception", "STAR_LINE"]

STAR_LINE = "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***"


def threadtime(when: _dt.datetime, pid: int, tid: int, level: str, tag: str, msg: str) -> str:
    """One ``logcat -v threadtime`` line (liblog ``"%s.%03d %5d %5d %c %-8s: %s"``)."""
    stamp = when.strftime("%m-%d %H:%M:%S") + f".{when.microsecond // 1000:03d}"
    return f"{stamp} {pid:5d} {tid:5d} {level} {tag:<8s}: {msg}"


_LIB_DIR = {"arm64": "/data/app/~~Qm9vdA2L3WqJ5Zt1cX0Aw==/org.coldstart.app-8sd2HfGm1bVkTQ4Lx0p3yA==/lib/arm64",
            "x86_64": "/data/app/~~Ym9vdB3M4XrK6Au2dY1Bx==/org.coldstart.app-9te3IgHn2cWlUR5My1q4zB==/lib/x86_64"}
_ORT_BUILD_ID = "5d1f0c2e8a7b4c3d9e6f1a2b3c4d5e6f7a8b9c0d"
_JNI_BUILD_ID = "a0b1c2d3e4f5061728394a5b6c7d8e9f00112233"


def _frame(i: int, pc: int, path: str, symbol: str | None, offset: int, build_id: str | None,
           abi: str) -> str:
    width = 16 if abi in ("arm64", "x86_64") else 8
    text = f"      #{i:02d} pc {pc:0{width}x}  {path}"
    if symbol is not None:
        text += f" ({symbol}+{offset})"
    if build_id is not None:
        text += f" (BuildId: {build_id})"
    return text


def ort_stack(where: str, abi: str = "arm64") -> list[str]:
    """Backtrace lines of the #32461 crash at ``where`` (``creation``, ``inference``,
    ``release``), as a tombstone prints them for a ``libonnxruntime.so`` with symbols."""
    ort = f"{_LIB_DIR.get(abi, _LIB_DIR['arm64'])}/libonnxruntime.so"
    jni = f"{_LIB_DIR.get(abi, _LIB_DIR['arm64'])}/libonnxruntime4j_jni.so"
    libart = "/apex/com.android.art/lib64/libart.so"
    alloc = ("onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*, "
             "unsigned long, unsigned long)")
    dealloc = "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_deallocate(void*, void*)"
    frames: list[tuple[int, str, str | None, int, str | None]]
    if where == "creation":
        frames = [
            (0x00a3c5f4, ort, alloc, 20, _ORT_BUILD_ID),
            (0x00d1e2a8, ort, "xnn_create_fully_connected_nc_f32", 452, _ORT_BUILD_ID),
            (0x00a41b1c, ort, "onnxruntime::xnnpack::Gemm::PrePack(onnxruntime::Tensor const&, "
             "int, std::__ndk1::shared_ptr<onnxruntime::IAllocator>, bool&, "
             "onnxruntime::PrePackedWeights*)", 1288, _ORT_BUILD_ID),
            (0x005b7e30, ort, "onnxruntime::SessionState::PrepackConstantInitializedTensors("
             "onnxruntime::InlinedHashMap<std::__ndk1::basic_string<char, std::__ndk1::"
             "char_traits<char>, std::__ndk1::allocator<char> >, unsigned long>&, "
             "std::__ndk1::unordered_map<std::__ndk1::basic_string<char, std::__ndk1::"
             "char_traits<char>, std::__ndk1::allocator<char> >, onnxruntime::OrtValue const*"
             ">&)", 1764, _ORT_BUILD_ID),
            (0x005c2a10, ort, "onnxruntime::SessionState::FinalizeSessionState(std::__ndk1::"
             "basic_string<char, std::__ndk1::char_traits<char>, std::__ndk1::allocator<char> >"
             " const&, onnxruntime::KernelRegistryManager const&, bool)", 896, _ORT_BUILD_ID),
            (0x004a9d54, ort, "onnxruntime::InferenceSession::Initialize()", 5208,
             _ORT_BUILD_ID),
            (0x0001c6e8, jni, "Java_ai_onnxruntime_OrtSession_createSession__JJLjava_lang_"
             "String_2J", 120, _JNI_BUILD_ID),
            (0x00222248, libart, "art_quick_generic_jni_trampoline", 216, None),
        ]
    elif where == "inference":
        frames = [
            (0x00a3c5f4, ort, alloc, 20, _ORT_BUILD_ID),
            (0x00d1f3c0, ort, "reshape_fully_connected_nc", 1100, _ORT_BUILD_ID),
            (0x00d1f9e8, ort, "xnn_reshape_fully_connected_nc_f32", 88, _ORT_BUILD_ID),
            (0x00a42c70, ort, "onnxruntime::xnnpack::Gemm::Compute(onnxruntime::OpKernelContext*)"
             " const", 540, _ORT_BUILD_ID),
            (0x0060a1d8, ort, "onnxruntime::ExecuteKernel(onnxruntime::StreamExecutionContext&, "
             "unsigned long, unsigned long, bool const&, onnxruntime::SessionScope&)", 712,
             _ORT_BUILD_ID),
            (0x004b1e64, ort, "onnxruntime::InferenceSession::Run(onnxruntime::RunOptions const&,"
             " gsl::span<std::__ndk1::basic_string<char, std::__ndk1::char_traits<char>, "
             "std::__ndk1::allocator<char> > const, 18446744073709551615ul>, "
             "gsl::span<OrtValue const, 18446744073709551615ul>, gsl::span<std::__ndk1::"
             "basic_string<char, std::__ndk1::char_traits<char>, std::__ndk1::allocator<char> > "
             "const, 18446744073709551615ul>, std::__ndk1::vector<OrtValue, std::__ndk1::"
             "allocator<OrtValue> >*, std::__ndk1::vector<OrtDevice, std::__ndk1::allocator<"
             "OrtDevice> > const*)", 2940, _ORT_BUILD_ID),
            (0x0001d2a4, jni, "Java_ai_onnxruntime_OrtSession_run", 1412, _JNI_BUILD_ID),
            (0x00222248, libart, "art_quick_generic_jni_trampoline", 216, None),
        ]
    elif where == "release":
        frames = [
            (0x00a3c63c, ort, dealloc, 12, _ORT_BUILD_ID),
            (0x00d0a7b4, ort, "xnn_destroy_operator", 164, _ORT_BUILD_ID),
            (0x00a40f18, ort, "onnxruntime::xnnpack::Gemm::~Gemm()", 60, _ORT_BUILD_ID),
            (0x005b1c44, ort, "onnxruntime::SessionState::~SessionState()", 188, _ORT_BUILD_ID),
            (0x004a2e90, ort, "onnxruntime::InferenceSession::~InferenceSession()", 412,
             _ORT_BUILD_ID),
            (0x0001c9a0, jni, "Java_ai_onnxruntime_OrtSession_closeSession", 36,
             _JNI_BUILD_ID),
            (0x00222248, libart, "art_quick_generic_jni_trampoline", 216, None),
        ]
    else:
        raise ValueError(f"unknown #32461 crash site {where!r}")
    return [_frame(i, pc, path, sym, off, bid, abi) for i, (pc, path, sym, off, bid)
            in enumerate(frames)]


def other_native_stack(abi: str = "arm64") -> list[str]:
    """A native crash that is *not* #32461: an abort from libc++abi in app code."""
    libc = "/apex/com.android.runtime/lib64/bionic/libc.so"
    app = f"{_LIB_DIR.get(abi, _LIB_DIR['arm64'])}/libappmodules.so"
    frames = [(0x0005c0fc, libc, "abort", 164, "e7a3b5f0c1d2e3f4a5b6c7d8e9f0a1b2"),
              (0x000a1b2c, app, "std::__ndk1::__throw_out_of_range(char const*)", 40, None),
              (0x000a3c4d, app, "facebook::react::AudioClip::frame(unsigned long)", 96, None)]
    return [_frame(i, pc, path, sym, off, bid, abi) for i, (pc, path, sym, off, bid)
            in enumerate(frames)]


@dataclasses.dataclass(frozen=True)
class Tombstone:
    """What debuggerd writes for one native crash (crashing thread; ``full`` adds the rest of
    the file the way ``/data/tombstones/tombstone_NN`` and DropBox ``SYSTEM_TOMBSTONE`` have
    it)."""

    pid: int
    tid: int
    thread: str
    process: str
    uid: int
    abi: str
    fingerprint: str
    when: _dt.datetime
    signal: int
    signal_name: str
    code: int
    code_name: str
    fault_addr: str
    backtrace: tuple[str, ...]
    cause: str | None = None
    abort_message: str | None = None

    def lines(self, full: bool = False) -> list[str]:
        """The tombstone's lines (no logcat prefix)."""
        stamp = self.when.strftime("%Y-%m-%d %H:%M:%S.%f") + "000+0000"
        out = [STAR_LINE, f"Build fingerprint: '{self.fingerprint}'", "Revision: '0'",
               f"ABI: '{self.abi}'", f"Timestamp: {stamp}", "Process uptime: 2s",
               f"Cmdline: {self.process}",
               f"pid: {self.pid}, tid: {self.tid}, name: {self.thread}  >>> {self.process} <<<",
               f"uid: {self.uid}"]
        if self.abi == "arm64":
            out += ["tagged_addr_ctrl: 0000000000000001 (PR_TAGGED_ADDR_ENABLE)",
                    "pac_enabled_keys: 000000000000000f (PR_PAC_APIAKEY, PR_PAC_APIBKEY, "
                    "PR_PAC_APDAKEY, PR_PAC_APDBKEY)"]
        out.append(f"signal {self.signal} ({self.signal_name}), code {self.code} "
                   f"({self.code_name}), fault addr {self.fault_addr}")
        if self.cause:
            out.append(f"Cause: {self.cause}")
        if self.abort_message:
            out.append(f"Abort message: '{self.abort_message}'")
        if self.abi == "arm64":
            out += ["    x0  0000007a1c2f3e40  x1  0000000000000040  x2  0000000000000040  "
                    "x3  0000000000000000",
                    "    x29 0000007a0e9fd2f0",
                    "    lr  0000007a2b63d1e4  sp  0000007a0e9fd2a0  pc  0000007a2b63c5f4  "
                    "pst 0000000060001000"]
        else:
            out += ["    rax 0000000000000000  rbx 00007a1c2f3e4000  rcx 0000000000000040  "
                    "rdx 0000000000000040",
                    "    rip 00007a2b63c5f4a0  rbp 00007a0e9fd2f000  rsp 00007a0e9fd2a000"]
        out += ["", f"{len(self.backtrace)} total frames", "backtrace:", *self.backtrace]
        if full:
            out += ["", "memory near x0 ([anon:scudo:primary]):",
                    "    0000007a1c2f3e40 efefefefefefefef efefefefefefefef  ................",
                    "", "--- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---",
                    f"pid: {self.pid}, tid: {self.pid}, name: {self.process[-15:]}  >>> "
                    f"{self.process} <<<",
                    "uid: " + str(self.uid),
                    "signal 0 (UNKNOWN), code 0 (SI_USER), fault addr --------", "",
                    "backtrace:",
                    "      #00 pc 00000000000a5e48  /apex/com.android.runtime/lib64/bionic/"
                    "libc.so (__epoll_pwait+8) (BuildId: e7a3b5f0c1d2e3f4a5b6c7d8e9f0a1b2)",
                    "", "memory map (3 entries):",
                    "    00000000'5a9b1000-00000000'5a9b3fff r--        0      3000  "
                    "/system/bin/app_process64",
                    "", "open files:", "    fd 0: /dev/null (unowned)"]
        return out


def am_start_ok(component: str, data: str | None, launch_state: str, total_ms: int,
                wait_ms: int) -> str:
    """``am start -W`` output for a launch that reached its first frame."""
    dat = ""
    if data is not None:
        scheme = data.split(":", 1)[0]
        dat = f" dat={scheme}://run/..."
    return (f"Starting: Intent {{ act=android.intent.action.VIEW{dat} cmp={component} }}\n"
            f"Status: ok\nLaunchState: {launch_state}\nActivity: {component}\n"
            f"TotalTime: {total_ms}\nWaitTime: {wait_ms}\nComplete\n")


def am_start_error(component: str, data: str | None, error: str) -> str:
    """``am start -W`` output when the intent cannot be started (it still exits 0)."""
    dat = "" if data is None else f" dat={data.split(':', 1)[0]}://run/..."
    return (f"Starting: Intent {{ act=android.intent.action.VIEW{dat} cmp={component} }}\n"
            f"Error type 3\nError: {error}\n")


def exit_info_entry(index: int, when: _dt.datetime, pid: int, uid: int, process: str,
                    reason: int, reason_text: str, subreason: int, subreason_text: str,
                    status: int, importance: int, description: str | None) -> str:
    """One ``ApplicationExitInfo #N`` block as ``ApplicationExitInfo.dump()`` prints it."""
    stamp = when.strftime("%Y-%m-%d %H:%M:%S") + f".{when.microsecond // 1000:03d}"
    desc = description if description is not None else "null"
    return (f"        ApplicationExitInfo #{index}:\n"
            f"          timestamp={stamp} pid={pid} realUid={uid} packageUid={uid} "
            f"definingUid={uid} user=0\n"
            f"          process={process} reason={reason} ({reason_text}) "
            f"subreason={subreason} ({subreason_text}) status={status}\n"
            f"          importance={importance} pss=48MB rss=131MB description={desc} "
            f"state=empty trace=null\n")


def exit_info_dump(package: str, uid: int, entries: list[str]) -> str:
    """``dumpsys activity exit-info <pkg>`` around the entries (newest first)."""
    text = "ACTIVITY MANAGER PROCESS EXIT INFO (dumpsys activity exit-info)\n"
    if entries:
        text += f"  package: {package}\n    Historical Process Exit for uid={uid}\n"
        text += "".join(entries)
    return text


def dropbox_dump(tag: str, entries: list[tuple[_dt.datetime, str, str]], total: int) -> str:
    """``dumpsys dropbox --print <tag>``: header, then each entry as a ``=`` line, a
    ``YYYY-MM-DD HH:MM:SS <tag> (text, N bytes)`` line and the text."""
    out = [f"Drop box contents: {total} entries", "Max entries: 1000", f"Searching for: {tag}",
           ""]
    if not entries:
        out.append("(No entries found.)")
    for when, entry_tag, text in entries:
        out += ["========================================",
                f"{when.strftime('%Y-%m-%d %H:%M:%S')} {entry_tag} (text, "
                f"{len(text.encode())} bytes)", text.rstrip("\n"), ""]
    return "\n".join(out) + "\n"


def application_init_exception(pid: int, package: str) -> list[str]:
    """The ``FATAL EXCEPTION`` of an app whose ``Application.onCreate`` threw (here: the
    native library failed to load): ``ActivityThread.handleBindApplication`` wraps it in
    ``RuntimeException("Unable to create application " + class + ": " + e)`` (AOSP
    frameworks/base core/java/android/app/ActivityThread.java)."""
    cause = ('java.lang.UnsatisfiedLinkError: dlopen failed: library "libonnxruntime.so" '
             'not found')
    return ["FATAL EXCEPTION: main",
            f"Process: {package}, PID: {pid}",
            f"java.lang.RuntimeException: Unable to create application "
            f"{package}.MainApplication: {cause}",
            "\tat android.app.ActivityThread.handleBindApplication(ActivityThread.java:7003)",
            "\tat android.app.ActivityThread.-$$Nest$mhandleBindApplication(Unknown Source:0)",
            "\tat android.os.Looper.loop(Looper.java:294)",
            "\tat android.app.ActivityThread.main(ActivityThread.java:8177)",
            f"Caused by: {cause}",
            "\tat java.lang.Runtime.loadLibrary0(Runtime.java:1082)",
            "\tat java.lang.System.loadLibrary(System.java:1661)",
            f"\tat {package}.MainApplication.onCreate(MainApplication.kt:31)"]


def am_start_cancelled(component: str, data: str | None, wait_ms: int) -> str:
    """``am start -W`` when the process died before the activity's first frame: the
    launch is cleaned up with no launch time (AOSP ``ActivityTaskSupervisor.
    stopWaitingForActivityVisible``: ``reportActivityLaunched(false, r, INVALID_DELAY,
    LAUNCH_STATE_UNKNOWN)``), so ``Status: ok``, ``LaunchState: UNKNOWN (0)`` and no
    ``TotalTime`` (ActivityManagerShellCommand prints it only when it is >= 0)."""
    dat = "" if data is None else f" dat={data.split(':', 1)[0]}://run/..."
    return (f"Starting: Intent {{ act=android.intent.action.VIEW{dat} cmp={component} }}\n"
            f"Status: ok\nLaunchState: UNKNOWN (0)\nActivity: {component}\n"
            f"WaitTime: {wait_ms}\nComplete\n")


def javascript_exception(pid: int, package: str, message: str) -> list[str]:
    """An uncaught JS error's ``FATAL EXCEPTION`` block (React Native 0.7x+ names the class
    ``com.facebook.react.common.JavascriptException``)."""
    return ["FATAL EXCEPTION: mqt_v_native",
            f"Process: {package}, PID: {pid}",
            f"com.facebook.react.common.JavascriptException: Error: {message}, "
            "js engine: hermes, stack:",
            "runPipeline@1:349979",
            "loadModels@1:402117",
            "anonymous@1:401877",
            "",
            "\tat com.facebook.react.modules.core.ExceptionsManagerModule.reportException("
            "ExceptionsManagerModule.kt:52)",
            "\tat com.facebook.jni.NativeRunnable.run(Native Method)",
            "\tat android.os.Handler.handleCallback(Handler.java:958)",
            "\tat android.os.Looper.loop(Looper.java:294)",
            "\tat java.lang.Thread.run(Thread.java:1012)"]
