// Calibration, mutex: onnxruntime 1.21's CreatePreferredAllocators with one std::mutex held
// around all of it (creation, publication, xnn_initialize and the read that returns the
// allocator). A detector must report no race
// on the statics. See lazy_init.h.
#include <mutex>

#include "lazy_init.h"

namespace calibration {

std::vector<AllocatorPtr> create_preferred_allocators() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto [stored_allocator, xnn_allocator] = GetStoredAllocator();
  if (!stored_allocator) stored_allocator = CreateAllocator();
  xnn_allocator->context = stored_allocator.get();
  fake_xnn_initialize(xnn_allocator);
  return {stored_allocator};
}

}  // namespace calibration

int main() { return calibration::run("mutex"); }
