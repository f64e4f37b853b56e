/* A fake libcuda.so.1 for the CUDA driver's tests on machines without an NVIDIA GPU: the
 * driver loads it through TESSERA_CUDA_LIBRARY. TESSERA_FAKE_CUDA_MODE picks what it does:
 *   init_error  cuInit fails with CUDA_ERROR_INSUFFICIENT_DRIVER
 *   no_device   cuInit succeeds, cuDeviceGetCount finds 0 devices
 *   (unset)     one "sm_90" device whose memory is host memory and whose work runs at once,
 *               in the enqueueing thread (a valid schedule of an in-order stream).
 *   deferred    the same device, but copies, fills and host functions wait in one queue (all
 *               streams, in enqueue order: a valid schedule of in-order streams and events)
 *               until a synchronize, an event query, a launch or a free runs them, as a GPU
 *               runs them later. As the real driver does, a copy from pageable host memory
 *               (neither cuMemAlloc'd nor cuMemHostAlloc'd) reads its source at the call, and
 *               one into pageable memory runs the queue first and returns when done.
 *               cuStreamQuery answers CUDA_ERROR_NOT_READY while work waits (then runs it).
 * Kernels are "run" by name: vector_add(a, b, c, n) adds float arrays; store_params(out, ...)
 * stores every later parameter at its natural alignment, sized by the PTX .param type, as
 * the real PTX kernel of the tests does. A cubin (an ELF image) never loads
 * (CUDA_ERROR_NO_BINARY_FOR_GPU) and PTX containing "bad_ptx" fails with a JIT log.
 *
 * Like the real driver it refuses calls before cuInit and, where CUDA needs one, without a
 * current context (per thread), so the tests prove the driver pushes its context on every
 * entry. Counters exported below let tests check that everything was released. Test-only.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*CUhostFn)(void *);

enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  NOT_INITIALIZED = 3,
  INSUFFICIENT_DRIVER = 35,
  INVALID_DEVICE = 101,
  NO_BINARY_FOR_GPU = 209,
  INVALID_CONTEXT = 201,
  INVALID_PTX = 218,
  NOT_FOUND = 500,
  NOT_READY = 600,
};

static const struct {
  CUresult code;
  const char *name, *text;
} kErrors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {INSUFFICIENT_DRIVER, "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available"},
    {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
};

/* What tests read through dlsym (updated atomically: the tests call from several threads). */
EXPORT int fake_cuda_live_objects; /* allocations, streams, events, modules */
EXPORT int fake_cuda_primary_retains;
EXPORT int fake_cuda_launches;
EXPORT __thread int fake_cuda_context_depth; /* contexts pushed on the calling thread */

static int initialized;
static char primaryContext; /* its address is the one context */

static const char *mode(void) {
  const char *m = getenv("TESSERA_FAKE_CUDA_MODE");
  return m ? m : "";
}

#define REQUIRE_INIT()                                                                             \
  if (!initialized)                                                                                \
  return NOT_INITIALIZED
#define REQUIRE_CONTEXT()                                                                          \
  REQUIRE_INIT();                                                                                  \
  if (fake_cuda_context_depth == 0)                                                                \
  return INVALID_CONTEXT

/* ---- deferred mode: the queue of work and the ranges that are not pageable -------------- */

static int deferred; /* TESSERA_FAKE_CUDA_MODE=deferred at cuInit */
static pthread_mutex_t queueLock = PTHREAD_MUTEX_INITIALIZER;

typedef struct Work {
  enum { COPY, FILL, HOST_FUNCTION } kind;
  void *dst;
  const void *src;
  void *snapshot; /* a pageable source read at the call (freed after the copy) */
  size_t bytes, count;
  unsigned value, width;
  CUhostFn fn;
  void *data;
  struct Work *next;
} Work;
static Work *queueHead, *queueTail;

typedef struct {
  uintptr_t begin, end;
} Range;
static Range *ranges; /* device and pinned allocations */
static size_t rangeCount, rangeCapacity;

static void addRange(void *pointer, size_t size) {
  pthread_mutex_lock(&queueLock);
  if (rangeCount == rangeCapacity) {
    rangeCapacity = rangeCapacity ? 2 * rangeCapacity : 64;
    ranges = realloc(ranges, rangeCapacity * sizeof *ranges);
  }
  ranges[rangeCount++] = (Range){(uintptr_t)pointer, (uintptr_t)pointer + size};
  pthread_mutex_unlock(&queueLock);
}

static void removeRange(void *pointer) {
  pthread_mutex_lock(&queueLock);
  for (size_t i = 0; i < rangeCount; ++i)
    if (ranges[i].begin == (uintptr_t)pointer) {
      ranges[i] = ranges[--rangeCount];
      break;
    }
  pthread_mutex_unlock(&queueLock);
}

static int pageable(const void *pointer) { /* call with queueLock held */
  for (size_t i = 0; i < rangeCount; ++i)
    if ((uintptr_t)pointer >= ranges[i].begin && (uintptr_t)pointer < ranges[i].end)
      return 0;
  return 1;
}

static void fill(void *dst, unsigned value, size_t count, unsigned width) {
  for (size_t i = 0; i < count; ++i) {
    if (width == 1)
      ((unsigned char *)dst)[i] = (unsigned char)value;
    else if (width == 2)
      ((unsigned short *)dst)[i] = (unsigned short)value;
    else
      ((unsigned *)dst)[i] = value;
  }
}

/* Host functions run without a context: CUDA calls fail there. */
static void runHostFunction(CUhostFn fn, void *data) {
  int depth = fake_cuda_context_depth;
  fake_cuda_context_depth = 0;
  fn(data);
  fake_cuda_context_depth = depth;
}

static void runWork(Work *w) {
  switch (w->kind) {
  case COPY:
    memcpy(w->dst, w->snapshot ? w->snapshot : w->src, w->bytes);
    break;
  case FILL:
    fill(w->dst, w->value, w->count, w->width);
    break;
  case HOST_FUNCTION:
    runHostFunction(w->fn, w->data);
    break;
  }
}

/* Runs everything queued, in order (the GPU catching up). */
static void drain(void) {
  pthread_mutex_lock(&queueLock);
  while (queueHead) {
    Work *w = queueHead;
    queueHead = w->next;
    runWork(w);
    free(w->snapshot);
    free(w);
  }
  queueTail = NULL;
  pthread_mutex_unlock(&queueLock);
}

/* Runs `w` now (the default mode) or queues a copy of it (deferred mode). */
static CUresult submit(Work w) {
  if (!deferred) {
    runWork(&w);
    return OK;
  }
  pthread_mutex_lock(&queueLock);
  if (w.kind == COPY && pageable(w.dst)) { /* into pageable memory: synchronous */
    pthread_mutex_unlock(&queueLock);
    drain();
    runWork(&w);
    return OK;
  }
  Work *queued = malloc(sizeof *queued);
  *queued = w;
  queued->next = NULL;
  if (w.kind == COPY && pageable(w.src)) { /* from pageable memory: read now */
    queued->snapshot = malloc(w.bytes ? w.bytes : 1);
    memcpy(queued->snapshot, w.src, w.bytes);
  }
  if (queueTail)
    queueTail->next = queued;
  else
    queueHead = queued;
  queueTail = queued;
  pthread_mutex_unlock(&queueLock);
  return OK;
}

static int queueEmpty(void) {
  pthread_mutex_lock(&queueLock);
  int empty = queueHead == NULL;
  pthread_mutex_unlock(&queueLock);
  return empty;
}

static void *track(void *object) {
  if (object)
    __atomic_add_fetch(&fake_cuda_live_objects, 1, __ATOMIC_SEQ_CST);
  return object;
}
static void untrack(void *object) {
  if (!object)
    return;
  __atomic_sub_fetch(&fake_cuda_live_objects, 1, __ATOMIC_SEQ_CST);
  free(object);
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **out) {
  for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; ++i)
    if (kErrors[i].code == error) {
      *out = kErrors[i].name;
      return OK;
    }
  *out = NULL;
  return INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **out) {
  for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; ++i)
    if (kErrors[i].code == error) {
      *out = kErrors[i].text;
      return OK;
    }
  *out = NULL;
  return INVALID_VALUE;
}

EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0)
    return INVALID_VALUE;
  if (strcmp(mode(), "init_error") == 0)
    return INSUFFICIENT_DRIVER;
  deferred = strcmp(mode(), "deferred") == 0;
  initialized = 1;
  return OK;
}

static int deviceCount(void) { return strcmp(mode(), "no_device") == 0 ? 0 : 1; }

EXPORT CUresult cuDeviceGetCount(int *count) {
  REQUIRE_INIT();
  *count = deviceCount();
  return OK;
}

EXPORT CUresult cuDeviceGet(int *device, int ordinal) {
  REQUIRE_INIT();
  if (ordinal < 0 || ordinal >= deviceCount())
    return INVALID_DEVICE;
  *device = ordinal;
  return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  REQUIRE_INIT();
  if (device != 0)
    return INVALID_DEVICE;
  switch (attribute) {
  case 1:
    *value = 1024;
    return OK; /* max threads per block */
  case 2:
  case 3:
    *value = 1024;
    return OK; /* block dims x, y */
  case 4:
    *value = 64;
    return OK; /* block dim z */
  case 5:
    *value = 2147483647;
    return OK; /* grid dims */
  case 6:
  case 7:
    *value = 65535;
    return OK;
  case 8:
    *value = 49152;
    return OK; /* shared memory per block */
  case 10:
    *value = 32;
    return OK; /* warp size */
  case 16:
    *value = 132;
    return OK; /* SMs */
  case 75:
    *value = 9;
    return OK; /* compute capability 9.0 */
  case 76:
    *value = 0;
    return OK;
  default:
    return INVALID_VALUE;
  }
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, int device) {
  REQUIRE_INIT();
  if (device != 0)
    return INVALID_DEVICE;
  *bytes = (size_t)1 << 30;
  return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  REQUIRE_INIT();
  if (device != 0)
    return INVALID_DEVICE;
  ++fake_cuda_primary_retains;
  *context = &primaryContext;
  return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  REQUIRE_INIT();
  if (device != 0 || fake_cuda_primary_retains == 0)
    return INVALID_DEVICE;
  --fake_cuda_primary_retains;
  return OK;
}

EXPORT CUresult cuCtxPushCurrent_v2(void *context) {
  REQUIRE_INIT();
  if (context != &primaryContext || fake_cuda_primary_retains == 0)
    return INVALID_CONTEXT;
  ++fake_cuda_context_depth;
  return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(void **context) {
  REQUIRE_CONTEXT();
  --fake_cuda_context_depth;
  if (context)
    *context = &primaryContext;
  return OK;
}

/* Allocations above this fail, so tests see the out-of-memory mapping below total memory. */
#define FAKE_ALLOCATION_LIMIT ((size_t)256 << 20)

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *address, size_t size) {
  REQUIRE_CONTEXT();
  if (size == 0)
    return INVALID_VALUE;
  void *memory = size > FAKE_ALLOCATION_LIMIT ? NULL : track(malloc(size));
  if (!memory)
    return OUT_OF_MEMORY;
  addRange(memory, size);
  *address = (CUdeviceptr)(uintptr_t)memory;
  return OK;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr address) {
  REQUIRE_CONTEXT();
  drain(); /* like cuMemFree, waits for the work that may use it */
  removeRange((void *)(uintptr_t)address);
  untrack((void *)(uintptr_t)address);
  return OK;
}

EXPORT CUresult cuMemHostAlloc(void **pointer, size_t size, unsigned flags) {
  REQUIRE_CONTEXT();
  (void)flags;
  *pointer = track(malloc(size));
  if (*pointer)
    addRange(*pointer, size);
  return *pointer ? OK : OUT_OF_MEMORY;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *address, void *pointer, unsigned flags) {
  REQUIRE_CONTEXT();
  if (flags != 0)
    return INVALID_VALUE;
  *address = (CUdeviceptr)(uintptr_t)pointer; /* unified addressing: the same address */
  return OK;
}

EXPORT CUresult cuMemFreeHost(void *pointer) {
  REQUIRE_CONTEXT();
  drain();
  removeRange(pointer);
  untrack(pointer);
  return OK;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *stream) {
  REQUIRE_CONTEXT();
  if (!stream)
    return INVALID_VALUE; /* the driver always names its own stream */
  return submit((Work){.kind = COPY,
                       .dst = (void *)(uintptr_t)dst,
                       .src = (const void *)(uintptr_t)src,
                       .bytes = bytes});
}

static CUresult memsetAsync(CUdeviceptr dst, unsigned value, size_t n, unsigned width) {
  if (dst % width)
    return INVALID_VALUE;
  return submit((Work){
      .kind = FILL, .dst = (void *)(uintptr_t)dst, .count = n, .value = value, .width = width});
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, void *stream) {
  REQUIRE_CONTEXT();
  (void)stream;
  return memsetAsync(dst, value, n, 1);
}

EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n, void *stream) {
  REQUIRE_CONTEXT();
  (void)stream;
  return memsetAsync(dst, value, n, 2);
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t n, void *stream) {
  REQUIRE_CONTEXT();
  (void)stream;
  return memsetAsync(dst, value, n, 4);
}

EXPORT CUresult cuStreamCreate(void **stream, unsigned flags) {
  REQUIRE_CONTEXT();
  (void)flags;
  *stream = track(malloc(1));
  return OK;
}

EXPORT CUresult cuStreamDestroy_v2(void *stream) {
  REQUIRE_CONTEXT();
  untrack(stream);
  return OK;
}

EXPORT CUresult cuStreamSynchronize(void *stream) {
  REQUIRE_CONTEXT();
  if (!stream)
    return INVALID_VALUE;
  drain();
  return OK;
}

/* Deferred mode: "not ready" while work waits, which then runs (so that polling ends). */
EXPORT CUresult cuStreamQuery(void *stream) {
  REQUIRE_CONTEXT();
  if (!stream)
    return INVALID_VALUE;
  if (queueEmpty())
    return OK;
  drain();
  return NOT_READY;
}

EXPORT CUresult cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  REQUIRE_CONTEXT();
  return stream && event && flags == 0 ? OK : INVALID_VALUE;
}

EXPORT CUresult cuLaunchHostFunc(void *stream, CUhostFn fn, void *data) {
  REQUIRE_CONTEXT();
  (void)stream;
  return submit((Work){.kind = HOST_FUNCTION, .fn = fn, .data = data});
}

EXPORT CUresult cuEventCreate(void **event, unsigned flags) {
  REQUIRE_CONTEXT();
  (void)flags;
  *event = track(malloc(1));
  return OK;
}

EXPORT CUresult cuEventRecord(void *event, void *stream) {
  REQUIRE_CONTEXT();
  return event && stream ? OK : INVALID_VALUE;
}

EXPORT CUresult cuEventSynchronize(void *event) {
  REQUIRE_CONTEXT();
  if (!event)
    return INVALID_VALUE;
  drain();
  return OK;
}

EXPORT CUresult cuEventQuery(void *event) {
  REQUIRE_CONTEXT();
  if (!event)
    return INVALID_VALUE;
  drain();
  return OK;
}

EXPORT CUresult cuEventDestroy_v2(void *event) {
  REQUIRE_CONTEXT();
  untrack(event);
  return OK;
}

/* ---- modules: the PTX text is kept and read for entry names and parameter sizes -------- */

typedef struct {
  char *ptx;
} FakeModule;

#define FAKE_MAX_PARAMS 16
typedef struct {
  char name[64];
  int paramCount;
  int paramSizes[FAKE_MAX_PARAMS];
} FakeFunction;

#define FAKE_MAX_FUNCTIONS 64
static FakeFunction functions[FAKE_MAX_FUNCTIONS]; /* handles stay valid for the process */
static int functionCount;

EXPORT CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count, int *options,
                                   void **values) {
  REQUIRE_CONTEXT();
  const char *text = image;
  if (memcmp(text,
             "\x7f"
             "ELF",
             4) == 0)
    return NO_BINARY_FOR_GPU;
  if (strstr(text, "bad_ptx")) {
    char *log = NULL;
    size_t size = 0;
    for (unsigned i = 0; i < count; ++i) {
      if (options[i] == 5)
        log = values[i];
      if (options[i] == 6)
        size = (size_t)(uintptr_t)values[i];
    }
    if (log && size)
      snprintf(log, size, "ptxas application ptx input, line 3; fatal   : fake syntax error");
    return INVALID_PTX;
  }
  FakeModule *m = track(malloc(sizeof *m));
  m->ptx = strdup(text);
  *module = m;
  return OK;
}

EXPORT CUresult cuModuleUnload(void *module) {
  REQUIRE_CONTEXT();
  FakeModule *m = module;
  free(m->ptx);
  untrack(m);
  return OK;
}

/* ".param .u64 x" -> 8, ".param .b16 y" -> 2, ... */
static int paramSize(const char *type) {
  while (*type && (*type < '0' || *type > '9'))
    ++type;
  return atoi(type) / 8;
}

EXPORT CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  REQUIRE_CONTEXT();
  const FakeModule *m = module;
  char pattern[96];
  snprintf(pattern, sizeof pattern, ".entry %s(", name);
  const char *entry = strstr(m->ptx, pattern);
  if (!entry || functionCount == FAKE_MAX_FUNCTIONS)
    return NOT_FOUND;
  FakeFunction *f = &functions[functionCount++];
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  const char *end = strchr(entry, ')');
  for (const char *p = strstr(entry, ".param"); p && p < end && f->paramCount < FAKE_MAX_PARAMS;
       p = strstr(p + 1, ".param"))
    f->paramSizes[f->paramCount++] = paramSize(p + 6);
  *function = f;
  return OK;
}

static void vectorAdd(unsigned threads, void **params) {
  const float *a = *(float **)params[0], *b = *(float **)params[1];
  float *c = *(float **)params[2];
  int n = *(int *)params[3];
  for (unsigned i = 0; i < threads && (int)i < n; ++i)
    c[i] = a[i] + b[i];
}

static void storeParams(const FakeFunction *f, void **params) {
  char *out = *(char **)params[0];
  size_t offset = 0;
  for (int i = 1; i < f->paramCount; ++i) {
    size_t size = (size_t)f->paramSizes[i];
    offset = (offset + size - 1) / size * size;
    memcpy(out + offset, params[i], size);
    offset += size;
  }
}

EXPORT CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, void *stream,
                               void **params, void **extra) {
  REQUIRE_CONTEXT();
  const FakeFunction *f = function;
  if (!f || !stream || extra || shared != 0 || !gx || !gy || !gz || !bx || !by || !bz)
    return INVALID_VALUE;
  __atomic_add_fetch(&fake_cuda_launches, 1, __ATOMIC_SEQ_CST);
  drain(); /* the kernel runs now: what was enqueued before it runs first */
  if (strcmp(f->name, "vector_add") == 0)
    vectorAdd(gx * bx, params);
  else if (strcmp(f->name, "store_params") == 0)
    storeParams(f, params);
  return OK;
}
