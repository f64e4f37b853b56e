/* A fake libamdhip64.so for the ROCm driver's tests (no AMD GPU exists on the project's
 * machines): the driver loads it through TESSERA_HIP_LIBRARY. TESSERA_FAKE_HIP_MODE picks
 * what it does:
 *   init_error  devices are counted, then hipInit fails with hipErrorInsufficientDriver
 *   no_device   hipGetDeviceCount succeeds and finds 0 devices
 *   (unset)     two devices whose memory is host memory and whose work runs at once:
 *               0 = gfx90a (wavefront 64), 1 = gfx1100 (wavefront 32; its gcnArchName sits
 *               at another offset of the properties, as a differently laid out runtime's).
 * A code object is text starting with "FAKE-HSACO" that lists PTX-style entries
 * (".entry vector_add(.param .u64 a, ...)"); anything else is hipErrorInvalidImage. Kernels
 * run by name: vector_add(a, b, c, n) adds floats.
 *
 * Like HIP, each thread has a current device (0 at first). The fake checks that memory,
 * modules and launches are used on the device that is current, and that launches and copies
 * go to streams of that device, so the tests prove the driver sets its device on every
 * entry. Counters exported below let tests check that everything was released. Test-only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int hipError_t;

enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  INSUFFICIENT_DRIVER = 35,
  INVALID_DEVICE = 101,
  INVALID_IMAGE = 200,
  NO_DEVICE = 100,
  NOT_FOUND = 500,
  WRONG_DEVICE = 999, /* reported as hipErrorUnknown, as a confused runtime would */
};

static const struct {
  hipError_t code;
  const char *name, *text;
} kErrors[] = {
    {OK, "hipSuccess", "no error"},
    {INVALID_VALUE, "hipErrorInvalidValue", "invalid argument"},
    {OUT_OF_MEMORY, "hipErrorOutOfMemory", "out of memory"},
    {INSUFFICIENT_DRIVER, "hipErrorInsufficientDriver", "driver version is insufficient"},
    {NO_DEVICE, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {INVALID_DEVICE, "hipErrorInvalidDevice", "invalid device ordinal"},
    {INVALID_IMAGE, "hipErrorInvalidImage", "device kernel image is invalid"},
    {NOT_FOUND, "hipErrorNotFound", "named symbol not found"},
    {WRONG_DEVICE, "hipErrorUnknown", "object used on a device that is not current"},
};

/* What tests read through dlsym (updated atomically: the tests call from several threads). */
EXPORT int fake_hip_live_objects;      /* allocations, streams, events, modules */
EXPORT int fake_hip_live_on_device[2]; /* the same, per device they were made on */
EXPORT int fake_hip_launches;
EXPORT __thread int fake_hip_current_device;

#define DEVICES 2

static const char *mode(void) {
  const char *m = getenv("TESSERA_FAKE_HIP_MODE");
  return m ? m : "";
}

static int deviceCount(void) { return strcmp(mode(), "no_device") == 0 ? 0 : DEVICES; }

/* Every object remembers the device it was made on. */
typedef struct {
  int device;
} Object;

static void *make(size_t size) {
  Object *object = calloc(1, size < sizeof(Object) ? sizeof(Object) : size);
  if (!object)
    return NULL;
  object->device = fake_hip_current_device;
  __atomic_add_fetch(&fake_hip_live_objects, 1, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&fake_hip_live_on_device[object->device], 1, __ATOMIC_SEQ_CST);
  return object;
}

static void destroy(void *object) {
  if (!object)
    return;
  __atomic_sub_fetch(&fake_hip_live_objects, 1, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&fake_hip_live_on_device[((Object *)object)->device], 1, __ATOMIC_SEQ_CST);
  free(object);
}

static int onCurrentDevice(const void *object) {
  return object && ((const Object *)object)->device == fake_hip_current_device;
}

/* Memory blocks carry a header with their device, in front of the address handed out. */
#define HEADER 256
static void *allocate(size_t size) {
  char *block = make(HEADER + size);
  return block ? block + HEADER : NULL;
}
static void release(void *address) {
  if (address)
    destroy((char *)address - HEADER);
}

EXPORT const char *hipGetErrorName(hipError_t error) {
  for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; ++i)
    if (kErrors[i].code == error)
      return kErrors[i].name;
  return "hipErrorUnknown";
}

EXPORT const char *hipGetErrorString(hipError_t error) {
  for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; ++i)
    if (kErrors[i].code == error)
      return kErrors[i].text;
  return "unknown error";
}

EXPORT hipError_t hipInit(unsigned flags) {
  if (flags != 0)
    return INVALID_VALUE;
  return strcmp(mode(), "init_error") == 0 ? INSUFFICIENT_DRIVER : OK;
}

EXPORT hipError_t hipGetDeviceCount(int *count) {
  *count = deviceCount();
  return OK;
}

EXPORT hipError_t hipGetDevice(int *device) {
  *device = fake_hip_current_device;
  return OK;
}

EXPORT hipError_t hipSetDevice(int device) {
  if (device < 0 || device >= deviceCount())
    return INVALID_DEVICE;
  fake_hip_current_device = device;
  return OK;
}

EXPORT hipError_t hipDeviceGetAttribute(int *value, int attribute, int device) {
  if (device < 0 || device >= deviceCount())
    return INVALID_DEVICE;
  switch (attribute) {
  case 26:
  case 27:
  case 28:
    *value = 1024;
    return OK; /* block dims */
  case 29:
    *value = 2147483647;
    return OK; /* grid dims */
  case 30:
  case 31:
    *value = 65535;
    return OK;
  case 56:
    *value = 1024;
    return OK; /* threads per block */
  case 63:
    *value = device == 0 ? 104 : 48;
    return OK; /* compute units */
  case 74:
    *value = 65536;
    return OK; /* shared memory per block */
  case 87:
    *value = device == 0 ? 64 : 32;
    return OK; /* wavefront */
  default:
    return INVALID_VALUE;
  }
}

EXPORT hipError_t hipDeviceTotalMem(size_t *bytes, int device) {
  if (device < 0 || device >= deviceCount())
    return INVALID_DEVICE;
  *bytes = (size_t)64 << 30;
  return OK;
}

EXPORT hipError_t hipGetDeviceProperties(void *properties, int device) {
  if (device < 0 || device >= deviceCount())
    return INVALID_DEVICE;
  char *p = properties;
  memset(p, 0, 792); /* sizeof(hipDeviceProp_t) in ROCm 5.2 */
  strcpy(p, device == 0 ? "AMD Instinct MI210" : "Radeon RX 7900 XTX");
  if (device == 0)
    strcpy(p + 396, "gfx90a:sramecc+:xnack-");
  else
    strcpy(p + 700, "gfx1100"); /* not where ROCm 5 puts it: the driver must find it */
  return OK;
}

/* Allocations above this fail, so tests see the out-of-memory mapping. */
#define FAKE_ALLOCATION_LIMIT ((size_t)256 << 20)

EXPORT hipError_t hipMalloc(void **pointer, size_t size) {
  *pointer = size > FAKE_ALLOCATION_LIMIT ? NULL : allocate(size);
  return *pointer ? OK : OUT_OF_MEMORY;
}

EXPORT hipError_t hipFree(void *pointer) {
  if (pointer && !onCurrentDevice((char *)pointer - HEADER))
    return WRONG_DEVICE;
  release(pointer);
  return OK;
}

EXPORT hipError_t hipHostMalloc(void **pointer, size_t size, unsigned flags) {
  (void)flags;
  *pointer = allocate(size);
  return *pointer ? OK : OUT_OF_MEMORY;
}

EXPORT hipError_t hipHostGetDevicePointer(void **device, void *host, unsigned flags) {
  if (flags != 0)
    return INVALID_VALUE;
  *device = host; /* unified addressing: the same address */
  return OK;
}

EXPORT hipError_t hipHostFree(void *pointer) {
  release(pointer);
  return OK;
}

EXPORT hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, void *stream) {
  if (kind != 4 || !onCurrentDevice(stream))
    return kind != 4 ? INVALID_VALUE : WRONG_DEVICE;
  memcpy(dst, src, bytes);
  return OK;
}

EXPORT hipError_t hipMemsetD8Async(void *dst, unsigned char value, size_t n, void *stream) {
  if (!onCurrentDevice(stream))
    return WRONG_DEVICE;
  memset(dst, value, n);
  return OK;
}

EXPORT hipError_t hipMemsetD16Async(void *dst, unsigned short value, size_t n, void *stream) {
  if (!onCurrentDevice(stream))
    return WRONG_DEVICE;
  for (size_t i = 0; i < n; ++i)
    ((unsigned short *)dst)[i] = value;
  return OK;
}

EXPORT hipError_t hipMemsetD32Async(void *dst, int value, size_t n, void *stream) {
  if (!onCurrentDevice(stream))
    return WRONG_DEVICE;
  for (size_t i = 0; i < n; ++i)
    ((int *)dst)[i] = value;
  return OK;
}

EXPORT hipError_t hipStreamCreateWithFlags(void **stream, unsigned flags) {
  (void)flags;
  *stream = make(sizeof(Object));
  return OK;
}

EXPORT hipError_t hipStreamDestroy(void *stream) {
  destroy(stream);
  return OK;
}

EXPORT hipError_t hipStreamSynchronize(void *stream) { return stream ? OK : INVALID_VALUE; }
EXPORT hipError_t hipStreamQuery(void *stream) { return stream ? OK : INVALID_VALUE; }

EXPORT hipError_t hipStreamWaitEvent(void *stream, void *event, unsigned flags) {
  return stream && event && flags == 0 ? OK : INVALID_VALUE;
}

EXPORT hipError_t hipStreamAddCallback(void *stream, void (*callback)(void *, hipError_t, void *),
                                       void *data, unsigned flags) {
  if (!stream || flags != 0)
    return INVALID_VALUE;
  callback(stream, OK, data);
  return OK;
}

EXPORT hipError_t hipEventCreateWithFlags(void **event, unsigned flags) {
  (void)flags;
  *event = make(sizeof(Object));
  return OK;
}

EXPORT hipError_t hipEventRecord(void *event, void *stream) {
  return event && stream ? OK : INVALID_VALUE;
}
EXPORT hipError_t hipEventSynchronize(void *event) { return event ? OK : INVALID_VALUE; }
EXPORT hipError_t hipEventQuery(void *event) { return event ? OK : INVALID_VALUE; }

EXPORT hipError_t hipEventDestroy(void *event) {
  destroy(event);
  return OK;
}

/* ---- modules -------------------------------------------------------------------------- */

typedef struct {
  Object base;
  char *text;
} FakeModule;

typedef struct {
  int device;
  char name[64];
} FakeFunction;

#define FAKE_MAX_FUNCTIONS 64
static FakeFunction functions[FAKE_MAX_FUNCTIONS]; /* handles stay valid for the process */
static int functionCount;

EXPORT hipError_t hipModuleLoadData(void **module, const void *image) {
  if (strncmp(image, "FAKE-HSACO", 10) != 0)
    return INVALID_IMAGE;
  FakeModule *m = make(sizeof *m);
  m->text = strdup(image);
  *module = m;
  return OK;
}

EXPORT hipError_t hipModuleUnload(void *module) {
  FakeModule *m = module;
  if (!onCurrentDevice(m))
    return WRONG_DEVICE;
  free(m->text);
  destroy(m);
  return OK;
}

EXPORT hipError_t hipModuleGetFunction(void **function, void *module, const char *name) {
  const FakeModule *m = module;
  char pattern[96];
  snprintf(pattern, sizeof pattern, ".entry %s(", name);
  if (!strstr(m->text, pattern) || functionCount == FAKE_MAX_FUNCTIONS)
    return NOT_FOUND;
  FakeFunction *f = &functions[functionCount++];
  f->device = m->base.device;
  snprintf(f->name, sizeof f->name, "%s", name);
  *function = f;
  return OK;
}

EXPORT hipError_t hipModuleLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                        void *stream, void **params, void **extra) {
  const FakeFunction *f = function;
  if (!f || extra || shared != 0 || !gx || !gy || !gz || !bx || !by || !bz)
    return INVALID_VALUE;
  if (f->device != fake_hip_current_device || !onCurrentDevice(stream))
    return WRONG_DEVICE;
  __atomic_add_fetch(&fake_hip_launches, 1, __ATOMIC_SEQ_CST);
  if (strcmp(f->name, "vector_add") != 0)
    return OK;
  const float *a = *(float **)params[0], *b = *(float **)params[1];
  float *c = *(float **)params[2];
  int n = *(int *)params[3];
  for (unsigned i = 0; i < gx * bx && (int)i < n; ++i)
    c[i] = a[i] + b[i];
  return OK;
}
