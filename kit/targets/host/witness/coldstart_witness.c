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
 * When the real xnn_initialize was found, the load line is followed by one line naming every
 * object loaded at that moment and its load base (dl_iterate_phdr(3): dlpi_name, dlpi_addr;
 * "" is the main program), so that addresses can be turned into offsets in an object:
 *     {"event":"images","objects":[{"name":"/usr/lib/.../libonnxruntime.so.1.21","base":"0x.."},..]}
 * It is taken in the constructor, before any thread exists: the loader lock it takes can
 * order no two threads of the workload.
 * kit/witness/race.py parses these lines; kit/detector uses the images and the wrapper's
 * address to tie a race detector's reports to onnxruntime's statics.
 *
 * Under a race detector (kit/detector sets COLDSTART_WITNESS_QUIET=1), the snapshot of the
 * wrapper's `context` is read with process_vm_readv(2) on the process itself: the kernel
 * copies it, so the detector sees no load by the witness and the witness's own read never
 * shows up as a race on the wrapper.
 *
 * struct xnn_allocator: XNNPACK include/xnnpack.h (release 2024-11-08, the one Debian 13
 * packages as libXNNPACK.so.0.20241108). No XNNPACK header is needed to build this file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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
static int g_quiet; /* COLDSTART_WITNESS_QUIET: read the wrapper through the kernel */

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

/* ------------------------------------------------------------ the loaded objects and their
 * load bases, as one line (written once, from the constructor) */
static char g_images[32768];
static size_t g_images_n;
static int g_images_full;

static void images_put(const char* s, size_t n) {
  if (g_images_full || g_images_n + n + 32 >= sizeof g_images) { /* 32: room for the end */
    g_images_full = 1;
    return;
  }
  for (size_t i = 0; i < n; ++i) g_images[g_images_n++] = s[i];
}

static void images_str(const char* s) {
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      images_put(esc, 2);
    } else if (c < 0x20) {
      images_put("?", 1);
    } else {
      images_put((const char*)&c, 1);
    }
  }
}

static int images_one(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  int* first = (int*)data;
  struct line hex;
  hex.n = 0;
  put_hex(&hex, (const void*)info->dlpi_addr);
  hex.buf[hex.n] = '\0';
  if (!*first) images_put(",", 1);
  *first = 0;
  images_put("{\"name\":\"", 9);
  images_str(info->dlpi_name != NULL ? info->dlpi_name : "");
  images_put("\",\"base\":", 9);
  images_put(hex.buf, hex.n);
  images_put("}", 1);
  return 0;
}

static void emit_images(void) {
  static const char head[] = "{\"event\":\"images\",\"objects\":[";
  int first = 1;
  g_images_n = 0;
  if (g_prefix) images_put("COLDSTART-WITNESS ", 18);
  images_put(head, sizeof head - 1);
  dl_iterate_phdr(images_one, &first);
  const int truncated = g_images_full;
  g_images_full = 0;
  if (truncated) images_put("],\"truncated\":true}\n", 20);
  else images_put("]}\n", 3);
  const char* p = g_images;
  size_t left = g_images_n;
  while (left > 0) {
    ssize_t w = write(g_fd, p, left);
    if (w <= 0) return;
    p += w;
    left -= (size_t)w;
  }
}

/* The wrapper's context: a plain load, or (under a race detector) a copy by the kernel. */
static const void* read_context(const struct xnn_allocator* allocator) {
  if (allocator == NULL) return NULL;
  if (!g_quiet) return allocator->context;
  void* value = NULL;
  struct iovec local = {&value, sizeof value};
  struct iovec remote = {(void*)&allocator->context, sizeof value};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof value) return NULL;
  return value;
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
  const char* quiet = getenv("COLDSTART_WITNESS_QUIET");
  g_quiet = quiet != NULL && quiet[0] == '1';
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
  if (g_real != NULL) emit_images();
}

__attribute__((visibility("default"))) int xnn_initialize(const struct xnn_allocator* allocator) {
  /* the snapshot: everything the race decides, taken before the real call */
  const uint64_t t_ns = now_ns();
  const void* context = read_context(allocator);
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
