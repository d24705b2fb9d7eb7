// The coldstart app's deliberate native crashes, shared by Android (JNI) and iOS (ObjC++).
// Positive controls for crash collection: the scenario key inject=segv@PHASE / abort@PHASE.
#ifndef COLDSTART_NATIVE_H
#define COLDSTART_NATIVE_H

#ifdef __cplusplus
extern "C" {
#endif

// Crash the process: kind "segv" stores through an address in the never-mapped zero page
// (SIGSEGV, SEGV_MAPERR, fault address 0x10, top frame coldstart_inject_segv); kind
// "abort" calls abort() (SIGABRT, top frames abort <- coldstart_inject_abort).
// Returns -1, without crashing, only for an unknown or null kind.
int coldstart_crash(const char* kind);

// The two crash sites, exported so their names appear in tombstones and .ips reports.
void coldstart_inject_segv(void);
void coldstart_inject_abort(void);

#ifdef __cplusplus
}
#endif

#endif  // COLDSTART_NATIVE_H
