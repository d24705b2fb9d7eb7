// Calibration, half_fix: the shape of the kit's negative-control patch (kit/data/ort/patches/
// half-fix.patch): only the allocator's creation is one std::call_once; every caller still
// writes the wrapper's context and calls xnn_initialize unsynchronised. A detector must
// report a race on the wrapper. See lazy_init.h.
#include <mutex>

#include "lazy_init.h"

namespace calibration {

std::vector<AllocatorPtr> create_preferred_allocators() {
  auto [stored_allocator, xnn_allocator] = GetStoredAllocator();
  static std::once_flag once;
  std::call_once(once, [&] {
    if (!stored_allocator) stored_allocator = CreateAllocator();
  });
  xnn_allocator->context = stored_allocator.get();  // unsynchronised publication: the race left
  fake_xnn_initialize(xnn_allocator);
  return {stored_allocator};
}

}  // namespace calibration

int main() { return calibration::run("half_fix"); }
