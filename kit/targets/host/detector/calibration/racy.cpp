// Calibration, racy: onnxruntime 1.21's CreatePreferredAllocators as it is (no
// synchronisation); a detector must report races on both statics. See lazy_init.h.
#include "lazy_init.h"

namespace calibration {

std::vector<AllocatorPtr> create_preferred_allocators() {
  auto [stored_allocator, xnn_allocator] = GetStoredAllocator();
  if (!stored_allocator) stored_allocator = CreateAllocator();  // unsynchronised check-then-create
  xnn_allocator->context = stored_allocator.get();             // unsynchronised publication
  fake_xnn_initialize(xnn_allocator);
  return {stored_allocator};
}

}  // namespace calibration

int main() { return calibration::run("racy"); }
