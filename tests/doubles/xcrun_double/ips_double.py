"""ips_double: writes crash reports in the real ``.ips`` v2 layout (docs/formats.md section 4).

Line 1 is the one-line metadata object (``bug_type`` "309"), the rest is the pretty-printed
JSON body, as macOS ReportCrash writes for a simulator app (``parentProc`` ``launchd_sim``,
``coalitionName`` ``com.apple.CoreSimulator.SimDevice.<UDID>``, ``procPath`` under
``CoreSimulator/Devices/<UDID>``). The crashing thread's frames follow where onnxruntime#32461
surfaces (docs/design.md): session creation, inference, release; ``js-fatal`` is React Native's
``RCTFatal`` abort on an unhandled JS exception; ``abort`` a plain ``abort()``.
"""

from __future__ import annotations

import json
import uuid

ORT = "onnxruntime"
APP = "ColdstartApp"
_IMAGES = [
    {"source": "P", "arch": "arm64", "base": 4304437248, "size": 65536, "name": APP},
    {"source": "P", "arch": "arm64", "base": 4311744512, "size": 23592960, "name": ORT},
    {"source": "P", "arch": "arm64e", "base": 6980853760, "size": 241664,
     "name": "libsystem_kernel.dylib"},
    {"source": "P", "arch": "arm64e", "base": 6979510272, "size": 528384,
     "name": "libsystem_c.dylib"},
    {"source": "P", "arch": "arm64e", "base": 6983000064, "size": 12451840, "name": "React"},
    {"source": "P", "arch": "arm64e", "base": 6978000000, "size": 200000,
     "name": "libsystem_pthread.dylib"},
]

#: Crashing-thread frames per kind: (image index, symbol or None, symbol location).
FRAMES: dict[str, list[tuple[int, str | None, int]]] = {
    "uaf-create": [
        (1, "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*, "
            "unsigned long, unsigned long)", 28),
        (1, "xnn_create_fully_connected_nc_f32", 412),
        (1, "onnxruntime::xnnpack::Gemm::PrePack(onnxruntime::Tensor const&, int, "
            "std::__1::shared_ptr<onnxruntime::IAllocator>, bool&, "
            "onnxruntime::PrePackedWeights*)", 640),
        (1, "onnxruntime::SessionState::PrepackConstantInitializedTensors()", 1320),
        (1, "onnxruntime::InferenceSession::Initialize()", 5012),
        (5, "_pthread_start", 136),
    ],
    "uaf-infer": [
        (1, "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_allocate(void*, "
            "unsigned long, unsigned long)", 28),
        (1, "reshape_fully_connected_nc", 388),
        (1, "xnn_reshape_fully_connected_nc_f32", 76),
        (1, "onnxruntime::xnnpack::Gemm::Compute(onnxruntime::OpKernelContext*) const", 300),
        (1, "onnxruntime::InferenceSession::Run()", 2200),
        (5, "_pthread_start", 136),
    ],
    "uaf-release": [
        (1, "onnxruntime::xnnpack::(anonymous namespace)::xnn_aligned_deallocate(void*, "
            "void*)", 20),
        (1, "xnn_deallocate", 36),
        (1, "xnn_delete_operator", 92),
        (1, "onnxruntime::xnnpack::Gemm::~Gemm()", 48),
        (1, "onnxruntime::InferenceSession::~InferenceSession()", 980),
        (5, "_pthread_start", 136),
    ],
    "abort": [
        (2, "__pthread_kill", 8),
        (5, "pthread_kill", 268),
        (3, "abort", 128),
        (0, None, 0),
        (5, "_pthread_start", 136),
    ],
    "js-fatal": [
        (2, "__pthread_kill", 8),
        (5, "pthread_kill", 268),
        (3, "abort", 128),
        (4, "RCTFatal", 412),
        (4, "-[RCTExceptionsManager reportFatal:stack:exceptionId:extraDataAsJSON:]", 440),
        (5, "_pthread_start", 136),
    ],
}


def _exception(kind: str) -> tuple[dict, dict]:
    if kind.startswith("uaf"):
        return ({"codes": "0x0000000000000001, 0x5555555555555555",
                 "rawCodes": [1, 6148914691236517205], "type": "EXC_BAD_ACCESS",
                 "signal": "SIGSEGV",
                 "subtype": "KERN_INVALID_ADDRESS at 0x5555555555555555"},
                {"flags": 0, "code": 11, "namespace": "SIGNAL",
                 "indicator": "Segmentation fault: 11", "byProc": "exc handler"})
    return ({"codes": "0x0000000000000000, 0x0000000000000000", "rawCodes": [0, 0],
             "type": "EXC_CRASH", "signal": "SIGABRT"},
            {"flags": 0, "code": 6, "namespace": "SIGNAL", "indicator": "Abort trap: 6",
             "byProc": APP})


def make_ips(kind: str, *, udid: str, pid: int, bundle_id: str, executable: str = APP,
             when: str = "2025-05-01 12:00:00.00 +0000", simulator: bool = True) -> str:
    """An ``.ips`` report of ``kind`` (a key of :data:`FRAMES`) for process ``pid``."""
    incident = str(uuid.uuid4()).upper()
    root = (f"/Users/dev/Library/Developer/CoreSimulator/Devices/{udid}/data/Containers/"
            f"Bundle/Application/{uuid.uuid4()}".upper() if simulator else
            f"/private/var/containers/Bundle/Application/{uuid.uuid4()}".upper())
    app_dir = f"{root}/{executable}.app"
    images = []
    for image in _IMAGES:
        path = {APP: f"{app_dir}/{executable}",
                ORT: f"{app_dir}/Frameworks/onnxruntime.framework/onnxruntime",
                "React": f"{app_dir}/Frameworks/React.framework/React"}.get(
            image["name"], f"/usr/lib/system/{image['name']}")
        images.append({**image, "name": executable if image["name"] == APP else image["name"],
                       "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, image["name"])),
                       "path": path})
    frames = [{"imageOffset": 4096 + 64 * i + loc, "imageIndex": img,
               **({"symbol": sym, "symbolLocation": loc} if sym else {})}
              for i, (img, sym, loc) in enumerate(FRAMES[kind])]
    exception, termination = _exception(kind)
    header = {"app_name": executable, "timestamp": when, "app_version": "1.0",
              "slice_uuid": images[0]["uuid"], "build_version": "1",
              "platform": 7 if simulator else 2, "bundleID": bundle_id,
              "share_with_app_devs": 0, "is_first_party": 0, "bug_type": "309",
              "os_version": "macOS 15.2 (24C101)" if simulator else "iPhone OS 18.2 (22C152)",
              "roots_installed": 0, "name": executable, "incident_id": incident}
    crashed = {"id": 91011, "triggered": True, "frames": frames,
               "threadState": {"flavor": "ARM_THREAD_STATE64",
                               "far": {"value": 6148914691236517205},
                               "pc": {"value": images[1]["base"] + 4124},
                               "esr": {"value": 2449473542,
                                       "description": "(Data Abort) byte read Translation "
                                                      "fault"}}}
    body = {"uptime": 86000, "procRole": "Foreground", "version": 2, "userID": 501,
            "deployVersion": 210, "modelCode": "MacBookPro18,3" if simulator else "iPhone16,1",
            "osVersion": {"train": header["os_version"].rsplit(" (", 1)[0], "build": "24C101",
                          "releaseType": "User"},
            "captureTime": when.replace(".00 ", ".1234 "), "incident": incident, "pid": pid,
            "cpuType": "ARM-64", "bug_type": "309", "procLaunch": when, "procName": executable,
            "procPath": f"{app_dir}/{executable}",
            "bundleInfo": {"CFBundleShortVersionString": "1.0", "CFBundleVersion": "1",
                           "CFBundleIdentifier": bundle_id},
            "parentProc": "launchd_sim" if simulator else "launchd", "parentPid": 4242,
            "coalitionName": (f"com.apple.CoreSimulator.SimDevice.{udid}" if simulator
                              else bundle_id),
            "responsibleProc": "SimulatorTrampoline" if simulator else executable,
            "exception": exception, "termination": {**termination, "byPid": pid},
            "faultingThread": 1,
            "threads": [{"id": 91001, "queue": "com.apple.main-thread",
                         "frames": [{"imageOffset": 9000, "symbol": "mach_msg2_trap",
                                     "symbolLocation": 8, "imageIndex": 2}]},
                        crashed],
            "usedImages": images,
            "sharedCache": {"base": 6978000000, "size": 4000000000,
                            "uuid": "3b7f2d8e-0000-4000-8000-000000000000"},
            "vmSummary": "ReadOnly portion of Libraries: Total=1.2G"}
    if kind.startswith("uaf"):
        body["vmRegionInfo"] = "0x5555555555555555 is not in any region."
    if kind == "abort":
        body["asi"] = {"libsystem_c.dylib": ["abort() called"]}
    if kind == "js-fatal":
        body["asi"] = {"CoreFoundation": [
            "*** Terminating app due to uncaught exception 'RCTFatalException: Unhandled JS "
            "Exception: TypeError: undefined is not a function', reason: 'Unhandled JS "
            "Exception: TypeError: undefined is not a function, stack:\nrunLaunch@1:2345\n'"]}
        body["lastExceptionBacktrace"] = [
            {"imageOffset": 1200, "symbol": "__exceptionPreprocess", "symbolLocation": 164,
             "imageIndex": 3},
            {"imageOffset": 2200, "symbol": "RCTFatal", "symbolLocation": 412, "imageIndex": 4}]
    return json.dumps(header, separators=(",", ":")) + "\n" + json.dumps(body, indent=2) + "\n"
