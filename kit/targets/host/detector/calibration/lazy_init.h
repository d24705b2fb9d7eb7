// coldstart detector calibration: the lazy-init pattern of onnxruntime's XNNPACK EP
// (onnxruntime 1.21, core/providers/xnnpack/xnnpack_init.cc GetStoredAllocator and
// xnnpack_execution_provider.cc CreatePreferredAllocators; issue #32461), cut down to what a
// race detector sees, shared by racy.cpp, call_once.cpp, mutex.cpp and half_fix.cpp.
//
// Each program runs kThreads threads released together by a pthread barrier (a barrier the
// tools understand, so the harness adds no race of its own). Every thread calls the
// variant's create_preferred_allocators(), then allocates and frees once through the
// allocator "XNNPACK" copied, as an XNNPACK kernel would. The main thread joins them and
// prints one line on stdout:
//   COLDSTART-CALIBRATION {"variant":"racy","wrapper":"0x..","wrapper_size":48,
//                          "allocator_ptr":"0x..","allocator_ptr_size":16,"allocators":N}
// naming the two statics a detector must (racy, half_fix) or must not (call_once, mutex)
// report, so that kit/detector attributes the calibration's races with the same code as
// a launch's.
// `allocators` is how many allocators were created (more than 1: the race happened for real).
//
// xnn_allocator: XNNPACK include/xnnpack.h (release 2024-11-08). fake_xnn_initialize
// copies the allocator once, under pthread_once, as XNNPACK's xnn_initialize does (init.c).
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace calibration {

constexpr int kThreads = 3;

struct xnn_allocator {
  void* context;
  void* (*allocate)(void* context, size_t size);
  void* (*reallocate)(void* context, void* pointer, size_t size);
  void (*deallocate)(void* context, void* pointer);
  void* (*aligned_allocate)(void* context, size_t alignment, size_t size);
  void (*aligned_deallocate)(void* context, void* pointer);
};

// onnxruntime's IAllocator, reduced to malloc/free.
struct IAllocator {
  virtual ~IAllocator() = default;
  virtual void* Alloc(size_t size) { return std::malloc(size); }
  virtual void Free(void* p) { std::free(p); }
};
using AllocatorPtr = std::shared_ptr<IAllocator>;

std::atomic<int> g_created{0};

__attribute__((noinline)) AllocatorPtr CreateAllocator() {
  g_created.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<IAllocator>();
}

void* xnn_allocate(void* context, size_t size) {
  return static_cast<IAllocator*>(context)->Alloc(size);
}
void* xnn_reallocate(void* context, void* pointer, size_t size) {
  (void)context;
  return std::realloc(pointer, size);
}
void xnn_deallocate(void* context, void* pointer) {
  if (pointer != nullptr) static_cast<IAllocator*>(context)->Free(pointer);
}
void* xnn_aligned_allocate(void* context, size_t alignment, size_t size) {
  (void)context;
  void* p = nullptr;
  return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}
void xnn_aligned_deallocate(void* context, void* pointer) {
  (void)context;
  std::free(pointer);
}

// xnnpack_init.cc: the two statics of onnxruntime#32461.
__attribute__((noinline)) std::pair<AllocatorPtr&, xnn_allocator*> GetStoredAllocator() {
  static AllocatorPtr ort_allocator;
  static xnn_allocator xnn_allocator_wrapper_ = {
      ort_allocator.get(), xnn_allocate, xnn_reallocate, xnn_deallocate,
      xnn_aligned_allocate, xnn_aligned_deallocate};
  return {ort_allocator, &xnn_allocator_wrapper_};
}

// XNNPACK's process-wide copy of the allocator (xnn_params.allocator), taken once.
xnn_allocator g_xnn_params_allocator;
const xnn_allocator* g_init_allocator = nullptr;
pthread_once_t g_init_guard = PTHREAD_ONCE_INIT;

void xnn_init_once() { g_xnn_params_allocator = *g_init_allocator; }

__attribute__((noinline)) int fake_xnn_initialize(const xnn_allocator* allocator) {
  __sync_bool_compare_and_swap(&g_init_allocator, nullptr, allocator);
  pthread_once(&g_init_guard, &xnn_init_once);
  return 0;
}

// An XNNPACK kernel allocating through the copied allocator.
__attribute__((noinline)) void use_xnnpack() {
  void* p = g_xnn_params_allocator.allocate(g_xnn_params_allocator.context, 64);
  g_xnn_params_allocator.deallocate(g_xnn_params_allocator.context, p);
}

std::vector<AllocatorPtr> create_preferred_allocators();  // the variant's

inline void print_hex(const char* key, const void* p) {
  std::printf("\"%s\":\"0x%llx\"", key, static_cast<unsigned long long>(
                                            reinterpret_cast<std::uintptr_t>(p)));
}

inline int run(const char* variant) {
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, nullptr, kThreads);
  std::vector<std::vector<AllocatorPtr>> held(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      pthread_barrier_wait(&barrier);
      held[i] = create_preferred_allocators();
      use_xnnpack();
    });
  }
  for (auto& t : threads) t.join();
  pthread_barrier_destroy(&barrier);
  auto stored = GetStoredAllocator();
  std::printf("COLDSTART-CALIBRATION {\"variant\":\"%s\",", variant);
  print_hex("wrapper", stored.second);
  std::printf(",\"wrapper_size\":%zu,", sizeof(xnn_allocator));
  print_hex("allocator_ptr", &stored.first);
  std::printf(",\"allocator_ptr_size\":%zu,\"allocators\":%d}\n", sizeof(AllocatorPtr),
              g_created.load());
  return 0;
}

}  // namespace calibration
