// See coldstart_native.h. Plain C library calls only (no C++ runtime), so the Android
// library builds with ANDROID_STL=none and adds no second libc++ to the APK.
#include "coldstart_native.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace {
// Read through a volatile so the compiler can neither see the address nor drop the store
// (a plain null dereference is undefined behaviour and may be compiled into a trap).
volatile uintptr_t g_fault_address = 0x10;
}  // namespace

extern "C" __attribute__((noinline, visibility("default"))) void coldstart_inject_segv(void) {
  volatile int* target = reinterpret_cast<volatile int*>(g_fault_address);
  *target = 0x5eed;
  raise(SIGSEGV);  // only reached if page zero were mapped
}

extern "C" __attribute__((noinline, visibility("default"))) void coldstart_inject_abort(void) {
  abort();
}

extern "C" __attribute__((visibility("default"))) int coldstart_crash(const char* kind) {
  if (kind != nullptr && strcmp(kind, "segv") == 0) {
    coldstart_inject_segv();
  } else if (kind != nullptr && strcmp(kind, "abort") == 0) {
    coldstart_inject_abort();
  }
  return -1;
}
