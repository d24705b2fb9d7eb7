// Host check of the shared crash code (scripts/test-rn.sh): `crash_main KIND` must die by
// SIGSEGV for "segv", by SIGABRT for "abort", and exit 3 for anything else.
#include "../coldstart_native.h"

int main(int argc, char** argv) {
  coldstart_crash(argc > 1 ? argv[1] : nullptr);
  return 3;
}
