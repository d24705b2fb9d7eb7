/* Test driver for the race witness (tests/test_witness_host.py): calls the real XNNPACK's
 * xnn_initialize twice through one allocator wrapper, as onnxruntime 1.21 does, from two
 * threads, with the wrapper's context changed in between, which is what a lost race leaves
 * behind. The witness, preloaded, must report both calls, both contexts and the real status.
 * Prints "STATUS <first> <second>". struct xnn_allocator: XNNPACK include/xnnpack.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct xnn_allocator {
  void* context;
  void* (*allocate)(void* context, size_t size);
  void* (*reallocate)(void* context, void* pointer, size_t size);
  void (*deallocate)(void* context, void* pointer);
  void* (*aligned_allocate)(void* context, size_t alignment, size_t size);
  void (*aligned_deallocate)(void* context, void* pointer);
};
int xnn_initialize(const struct xnn_allocator* allocator);

static void* allocate(void* c, size_t n) { (void)c; return malloc(n); }
static void* reallocate(void* c, void* p, size_t n) { (void)c; return realloc(p, n); }
static void deallocate(void* c, void* p) { (void)c; free(p); }
static void* aligned_allocate(void* c, size_t a, size_t n) {
  (void)c;
  void* p = NULL;
  return posix_memalign(&p, a < sizeof(void*) ? sizeof(void*) : a, n) == 0 ? p : NULL;
}
static void aligned_deallocate(void* c, void* p) { (void)c; free(p); }

static char first_allocator, second_allocator; /* two distinct "allocators" */
static struct xnn_allocator wrapper = {&first_allocator, allocate, reallocate, deallocate,
                                       aligned_allocate, aligned_deallocate};
static int second_status;

static void* second(void* unused) {
  (void)unused;
  wrapper.context = &second_allocator;
  second_status = xnn_initialize(&wrapper);
  return NULL;
}

int main(void) {
  int first_status = xnn_initialize(&wrapper);
  pthread_t t;
  if (pthread_create(&t, NULL, second, NULL) != 0) return 3;
  pthread_join(t, NULL);
  printf("STATUS %d %d\nCONTEXTS %p %p\n", first_status, second_status,
         (void*)&first_allocator, (void*)&second_allocator);
  return 0;
}
