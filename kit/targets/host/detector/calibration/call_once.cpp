// Calibration, call_once: the shape of the fix (onnxruntime PR #32489): allocator creation,
// publication of the wrapper's context and xnn_initialize are one std::call_once; every
// caller then reads the stored allocator. A detector must report no race on the statics.
// See lazy_init.h.
#include <mutex>

#include "lazy_init.h"

namespace calibration {

std::vector<AllocatorPtr> create_preferred_allocators() {
  auto [stored_allocator, xnn_allocator] = GetStoredAllocator();
  static std::once_flag once;
  std::call_once(once, [&] {
    if (!stored_allocator) stored_allocator = CreateAllocator();
    xnn_allocator->context = stored_allocator.get();
    fake_xnn_initialize(xnn_allocator);
  });
  return {stored_allocator};
}

}  // namespace calibration

int main() { return calibration::run("call_once"); }
