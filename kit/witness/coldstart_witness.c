/*
 * coldstart race witness (issue #8): an LD_PRELOAD interposer for XNNPACK's xnn_initialize.
 *
 * onnxruntime's XNNPACK EP (1.21, xnnpack_execution_provider.cc, CreatePreferredAllocators)
 * does, on every session create and without a lock:
 *     if (!stored_allocator) stored_allocator = CreateAllocator(...);
 *     xnn_allocator->context = stored_allocator.get();
 *     xnn_initialize(xnn_allocator);
 * `xnn_allocator` is one static wrapper, so its `context` only ever changes when a second
 * allocator was created: two different contexts reaching xnn_initialize in one process
 * means the check-then-create race of onnxruntime#32461 happened, crash or not.
 *
 * For every call this library records the thread id, CLOCK_MONOTONIC time in ns, the
 * wrapper's address and its `context` *at entry*, calls the real xnn_initialize (found with
 * dlsym(RTLD_NEXT) when the library is loaded) and only then writes one line. Taking the
 * snapshot costs a vDSO clock read; formatting and write(2) happen after the real call, so
 * the witness does not widen or narrow the race it watches.
 *
 * Output: one JSON object per line, each written with a single write(2) (O_APPEND: lines
 * from several threads never interleave), to the file named by COLDSTART_WITNESS_FILE, or
 * to stderr with the prefix "COLDSTART-WITNESS " when that variable is unset:
 *     {"event":"loaded","pid":P,"t_ns":T,"resolved":true}
 *     {"event":"xnn_initialize","seq":0,"tid":N,"t_ns":T,"allocator":"0x..","context":"0x..","status":0}
 * `seq` is the order of arrival (an atomic counter taken with the snapshot), `status` the
 * real call's xnn_status (0 = success; -1 when the real function was not found).
 * kit/witness/race.py parses these lines.
 *
 * struct xnn_allocator: XNNPACK include/xnnpack.h (release 2024-11-08, the one Debian 13
 * packages as libXNNPACK.so.0.20241108). No XNNPACK header is needed to build this file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct xnn_allocator {
  void* context;
  void* (*allocate)(void* context, size_t size);
  void* (*reallocate)(void* context, void* pointer, size_t size);
  void (*deallocate)(void* context, void* pointer);
  void* (*aligned_allocate)(void* context, size_t alignment, size_t size);
  void (*aligned_deallocate)(void* context, void* pointer);
};

typedef int (*xnn_initialize_fn)(const struct xnn_allocator* allocator);

static xnn_initialize_fn g_real;
static int g_fd = 2;
static int g_prefix = 1; /* stderr: prefix each line so it can be told from other output */
static unsigned long g_seq;

/* ------------------------------------------------------------ line formatting (no libc
 * stdio: no locks, no allocation) */
struct line {
  char buf[320];
  size_t n;
};

static void put_str(struct line* l, const char* s) {
  while (*s && l->n < sizeof l->buf - 1) l->buf[l->n++] = *s++;
}

static void put_dec(struct line* l, uint64_t v) {
  char tmp[24];
  int k = 0;
  do {
    tmp[k++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && k < 24);
  while (k && l->n < sizeof l->buf - 1) l->buf[l->n++] = tmp[--k];
}

static void put_int(struct line* l, int64_t v) {
  if (v < 0) {
    put_str(l, "-");
    put_dec(l, (uint64_t)(-(v + 1)) + 1);
  } else {
    put_dec(l, (uint64_t)v);
  }
}

static void put_hex(struct line* l, const void* p) {
  static const char digits[] = "0123456789abcdef";
  uintptr_t v = (uintptr_t)p;
  char tmp[2 * sizeof v];
  int k = 0;
  do {
    tmp[k++] = digits[v & 0xf];
    v >>= 4;
  } while (v && k < (int)sizeof tmp);
  put_str(l, "\"0x");
  while (k && l->n < sizeof l->buf - 1) l->buf[l->n++] = tmp[--k];
  put_str(l, "\"");
}

static void emit(struct line* l) {
  put_str(l, "\n");
  const char* p = l->buf;
  size_t left = l->n;
  while (left > 0) {
    ssize_t w = write(g_fd, p, left);
    if (w <= 0) return; /* nothing sensible to do; never disturb the workload */
    p += w;
    left -= (size_t)w;
  }
}

static void start_line(struct line* l) {
  l->n = 0;
  if (g_prefix) put_str(l, "COLDSTART-WITNESS ");
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ load: open the output, find
 * the real function once, before any thread can race (dlsym takes the loader's lock) */
__attribute__((constructor)) static void witness_load(void) {
  const char* path = getenv("COLDSTART_WITNESS_FILE");
  if (path != NULL && path[0] != '\0') {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      g_fd = fd;
      g_prefix = 0;
    }
  }
  g_real = (xnn_initialize_fn)dlsym(RTLD_NEXT, "xnn_initialize");
  struct line l;
  start_line(&l);
  put_str(&l, "{\"event\":\"loaded\",\"pid\":");
  put_dec(&l, (uint64_t)getpid());
  put_str(&l, ",\"t_ns\":");
  put_dec(&l, now_ns());
  put_str(&l, ",\"resolved\":");
  put_str(&l, g_real != NULL ? "true}" : "false}");
  emit(&l);
}

__attribute__((visibility("default"))) int xnn_initialize(const struct xnn_allocator* allocator) {
  /* the snapshot: everything the race decides, taken before the real call */
  const uint64_t t_ns = now_ns();
  const void* context = allocator != NULL ? allocator->context : NULL;
  const unsigned long seq = __atomic_fetch_add(&g_seq, 1, __ATOMIC_RELAXED);

  xnn_initialize_fn real = g_real;
  if (real == NULL) real = (xnn_initialize_fn)dlsym(RTLD_NEXT, "xnn_initialize");
  const int status = real != NULL ? real(allocator) : -1;

  struct line l;
  start_line(&l);
  put_str(&l, "{\"event\":\"xnn_initialize\",\"seq\":");
  put_dec(&l, seq);
  put_str(&l, ",\"tid\":");
  put_dec(&l, (uint64_t)syscall(SYS_gettid));
  put_str(&l, ",\"t_ns\":");
  put_dec(&l, t_ns);
  put_str(&l, ",\"allocator\":");
  put_hex(&l, allocator);
  put_str(&l, ",\"context\":");
  put_hex(&l, context);
  put_str(&l, ",\"status\":");
  put_int(&l, status);
  put_str(&l, "}");
  emit(&l);
  /* xnn_status_uninitialized (1) when XNNPACK is not in the process at all */
  return real != NULL ? status : 1;
}
