/* A fake Level Zero loader (libze_loader.so.1) for the Level Zero driver's tests on machines
 * without an Intel GPU: the driver loads it through TESSERA_LEVELZERO_LIBRARY. One driver
 * with one GPU whose memory is host memory and whose commands run at once, in the appending
 * thread (a valid schedule of an in-order list; events are signalled when appended).
 *
 * Environment:
 *   TESSERA_FAKE_ZE_MODE      init_error: zeInit fails (ZE_RESULT_ERROR_UNSUPPORTED_VERSION);
 *                             no_device: zeDeviceGet finds none; ignore_cancel: `spin` never
 *                             ends; abi_only: launches of entries the fake cannot run succeed
 *                             without running (their arguments checked); unset: one device
 *   TESSERA_FAKE_ZE_FAIL      the name of one ze* function that fails (out of device memory
 *                             for allocations, a build failure for zeModuleCreate, device
 *                             lost for everything else)
 *   TESSERA_FAKE_ZE_SUBGROUPS the device's subgroup sizes, e.g. "8,16,32,64" (default 8,16,32)
 *   TESSERA_FAKE_ZE_NO_FP64   set: the device has no fp64 (and no 64-bit atomics)
 *   TESSERA_FAKE_ZE_INTEGRATED set: an integrated device
 * Modules accept an image that starts with the SPIR-V magic word (else a build failure with a
 * log); their kernels are the names of its OpEntryPoint instructions, and where the module
 * declares the entry's OpFunction each argument's size is checked against its parameter's
 * type (as a real driver refuses a wrong index or size). These entries run on the host, with
 * the arguments of backends/levelzero/levelzero_abi.h:
 *   vadd(a, b, c: buffer<f32>, n: i32)    c[i] = a[i] + b[i] for every global id i < n (also
 *                                         as vector_add, the kernel of ir/examples/vector_add)
 *   store_params(out: buffer, scalars...) the scalars' bytes into out, each aligned to its size
 *   fault(out: buffer)                    writes an out-of-bounds store record to the control
 *   spin()                                runs until the host sets its cancel flag (then
 *                                         records TSR_FAULT_DEADLINE), as a polling loop does
 * Counters exported below let tests check what was called and that everything was released.
 * Test-only.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <stdio.h>
#include <time.h>

#include "backends/levelzero/runtime/tests/fake_libze.h"

EXPORT int fake_ze_live_objects; /* contexts, allocations, lists, pools, events, modules... */
EXPORT int fake_ze_device_allocs, fake_ze_host_allocs, fake_ze_shared_allocs;
EXPORT int fake_ze_launches;
EXPORT uint32_t fake_ze_last_group_size[3], fake_ze_last_group_count[3];
EXPORT int fake_ze_initialized;
EXPORT struct _ze_device_handle_t fake_ze_device;
struct FakeSpin fake_ze_spin;

static struct _ze_driver_handle_t theDriver;

static int modeIs(const char *m) {
  const char *v = getenv("TESSERA_FAKE_ZE_MODE");
  return v && strcmp(v, m) == 0;
}

EXPORT ze_result_t zeInit(ze_init_flags_t flags) {
  (void)flags;
  if (modeIs("init_error"))
    return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  fake_ze_initialized = 1;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDriverGet(uint32_t *count, ze_driver_handle_t *drivers) {
  REQUIRE_INIT();
  if (drivers && *count >= 1)
    drivers[0] = &theDriver;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGet(ze_driver_handle_t driver, uint32_t *count,
                               ze_device_handle_t *devices) {
  REQUIRE_INIT();
  if (driver != &theDriver)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  uint32_t n = modeIs("no_device") ? 0 : 1;
  if (devices && *count >= 1 && n)
    devices[0] = &fake_ze_device;
  *count = n;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGetProperties(ze_device_handle_t device, ze_device_properties_t *p) {
  REQUIRE_INIT();
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (device != &fake_ze_device || p->stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x0bd5;
  p->flags = getenv("TESSERA_FAKE_ZE_INTEGRATED") ? ZE_DEVICE_PROPERTY_FLAG_INTEGRATED : 0;
  p->maxMemAllocSize = (uint64_t)1 << 30;
  p->numSlices = 2;
  p->numSubslicesPerSlice = 4;
  p->numEUsPerSubslice = 8;
  snprintf(p->name, sizeof p->name, "Fake Level Zero GPU");
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t device,
                                                ze_device_compute_properties_t *p) {
  REQUIRE_INIT();
  if (device != &fake_ze_device || p->stype != ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->maxTotalGroupSize = 1024;
  p->maxGroupSizeX = 1024;
  p->maxGroupSizeY = 1024;
  p->maxGroupSizeZ = 64;
  p->maxGroupCountX = 0x7fffffff;
  p->maxGroupCountY = 65535;
  p->maxGroupCountZ = 65535;
  p->maxSharedLocalMemory = 65536;
  const char *list = getenv("TESSERA_FAKE_ZE_SUBGROUPS");
  if (!list)
    list = "8,16,32";
  p->numSubGroupSizes = 0;
  for (const char *c = list; *c && p->numSubGroupSizes < ZE_SUBGROUPSIZE_COUNT;) {
    char *end = NULL;
    p->subGroupSizes[p->numSubGroupSizes++] = (uint32_t)strtoul(c, &end, 10);
    c = *end == ',' ? end + 1 : end;
  }
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGetModuleProperties(ze_device_handle_t device,
                                               ze_device_module_properties_t *p) {
  REQUIRE_INIT();
  if (device != &fake_ze_device || p->stype != ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  p->flags = ZE_DEVICE_MODULE_FLAG_FP16;
  if (!getenv("TESSERA_FAKE_ZE_NO_FP64"))
    p->flags |= ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
  p->fp32flags = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_FMA;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t device, uint32_t *count,
                                               ze_device_memory_properties_t *p) {
  REQUIRE_INIT();
  if (device != &fake_ze_device)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (p && *count >= 1) {
    if (p->stype != ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES)
      return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    p->totalSize = (uint64_t)1 << 30;
    snprintf(p->name, sizeof p->name, "HBM");
  }
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeContextCreate(ze_driver_handle_t driver, const ze_context_desc_t *desc,
                                   ze_context_handle_t *out) {
  REQUIRE_INIT();
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (driver != &theDriver || desc->stype != ZE_STRUCTURE_TYPE_CONTEXT_DESC)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *out = track(calloc(1, sizeof(struct _ze_context_handle_t)));
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeContextDestroy(ze_context_handle_t context) {
  untrack(context);
  return ZE_RESULT_SUCCESS;
}

/* --- memory: host memory, 64-byte aligned ------------------------------------------------ */

static ze_result_t allocate(size_t size, size_t alignment, void **out, int *counter) {
  if (alignment < 64)
    alignment = 64;
  void *p = NULL;
  if (posix_memalign(&p, alignment, size ? size : 1) != 0)
    return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  memset(p, 0xcd, size); /* not zeroed, as a real allocation */
  *out = track(p);
  __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeMemAllocDevice(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *d,
                                    size_t size, size_t alignment, ze_device_handle_t device,
                                    void **out) {
  REQUIRE_INIT();
  FAIL_IF_ASKED(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
  if (!c || device != &fake_ze_device || d->stype != ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return allocate(size, alignment, out, &fake_ze_device_allocs);
}

EXPORT ze_result_t zeMemAllocHost(ze_context_handle_t c, const ze_host_mem_alloc_desc_t *d,
                                  size_t size, size_t alignment, void **out) {
  REQUIRE_INIT();
  FAIL_IF_ASKED(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
  if (!c || d->stype != ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return allocate(size, alignment, out, &fake_ze_host_allocs);
}

EXPORT ze_result_t zeMemAllocShared(ze_context_handle_t c, const ze_device_mem_alloc_desc_t *dd,
                                    const ze_host_mem_alloc_desc_t *hd, size_t size,
                                    size_t alignment, ze_device_handle_t device, void **out) {
  REQUIRE_INIT();
  FAIL_IF_ASKED(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
  if (!c || (device && device != &fake_ze_device) ||
      dd->stype != ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC ||
      hd->stype != ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return allocate(size, alignment, out, &fake_ze_shared_allocs);
}

EXPORT ze_result_t zeMemFree(ze_context_handle_t c, void *ptr) {
  (void)c;
  untrack(ptr);
  return ZE_RESULT_SUCCESS;
}

/* --- command lists: every command runs when appended --------------------------------------- */

EXPORT ze_result_t zeCommandListCreateImmediate(ze_context_handle_t c, ze_device_handle_t device,
                                                const ze_command_queue_desc_t *desc,
                                                ze_command_list_handle_t *out) {
  REQUIRE_INIT();
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (!c || device != &fake_ze_device || desc->stype != ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *out = track(calloc(1, sizeof(struct _ze_command_list_handle_t)));
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeCommandListDestroy(ze_command_list_handle_t list) {
  if (fake_ze_spin.control)
    endSpin(0); /* its work is abandoned with the list */
  untrack(list);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeCommandListAppendBarrier(ze_command_list_handle_t list,
                                              ze_event_handle_t signalEvent, uint32_t n,
                                              ze_event_handle_t *waits) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (!list)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  ze_result_t r = waitsDone(n, waits);
  if (!r)
    signalIfAny(signalEvent);
  return r;
}

EXPORT ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t list, void *dst,
                                                 const void *src, size_t size,
                                                 ze_event_handle_t signalEvent, uint32_t n,
                                                 ze_event_handle_t *waits) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (!list || !dst || !src)
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ze_result_t r = waitsDone(n, waits);
  if (r)
    return r;
  memmove(dst, src, size);
  signalIfAny(signalEvent);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeCommandListAppendMemoryFill(ze_command_list_handle_t list, void *ptr,
                                                 const void *pattern, size_t patternSize,
                                                 size_t size, ze_event_handle_t signalEvent,
                                                 uint32_t n, ze_event_handle_t *waits) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (!list || !ptr || !pattern)
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (patternSize == 0 || (patternSize & (patternSize - 1)) || size % patternSize)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  ze_result_t r = waitsDone(n, waits);
  if (r)
    return r;
  for (size_t i = 0; i < size; i += patternSize)
    memcpy((char *)ptr + i, pattern, patternSize);
  signalIfAny(signalEvent);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeCommandListAppendWaitOnEvents(ze_command_list_handle_t list, uint32_t n,
                                                   ze_event_handle_t *events) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  if (!list)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return waitsDone(n, events);
}

/* --- events ---------------------------------------------------------------------------------- */

EXPORT ze_result_t zeEventPoolCreate(ze_context_handle_t c, const ze_event_pool_desc_t *desc,
                                     uint32_t numDevices, ze_device_handle_t *devices,
                                     ze_event_pool_handle_t *out) {
  REQUIRE_INIT();
  FAIL_IF_ASKED(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
  if (!c || desc->stype != ZE_STRUCTURE_TYPE_EVENT_POOL_DESC || desc->count == 0 ||
      !(desc->flags & ZE_EVENT_POOL_FLAG_HOST_VISIBLE) ||
      (numDevices && devices[0] != &fake_ze_device))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  struct _ze_event_pool_handle_t *pool = track(calloc(1, sizeof *pool));
  pool->count = desc->count;
  *out = pool;
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t pool) {
  untrack(pool);
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeEventCreate(ze_event_pool_handle_t pool, const ze_event_desc_t *desc,
                                 ze_event_handle_t *out) {
  if (!pool || desc->stype != ZE_STRUCTURE_TYPE_EVENT_DESC || desc->index >= pool->count)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *out = track(calloc(1, sizeof(struct _ze_event_handle_t)));
  return ZE_RESULT_SUCCESS;
}

EXPORT ze_result_t zeEventDestroy(ze_event_handle_t event) {
  untrack(event);
  return ZE_RESULT_SUCCESS;
}

static uint64_t nowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Work runs when appended, so only a spinning launch leaves an event unsignalled: poll its
 * cancel flag until the timeout (at most 10 s, so a broken test cannot hang). */
EXPORT ze_result_t zeEventHostSynchronize(ze_event_handle_t event, uint64_t timeout) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  const uint64_t start = nowNs(), limit = timeout < 10000000000u ? timeout : 10000000000u;
  while (!__atomic_load_n(&event->signalled, __ATOMIC_ACQUIRE) && fake_ze_spin.control) {
    if (__atomic_load_n(&fake_ze_spin.control[0], __ATOMIC_ACQUIRE) && !modeIs("ignore_cancel"))
      endSpin(1);
    else if (nowNs() - start >= limit)
      break;
    else
      nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return __atomic_load_n(&event->signalled, __ATOMIC_ACQUIRE) ? ZE_RESULT_SUCCESS
                                                              : ZE_RESULT_NOT_READY;
}

EXPORT ze_result_t zeEventQueryStatus(ze_event_handle_t event) {
  FAIL_IF_ASKED(ZE_RESULT_ERROR_DEVICE_LOST);
  return __atomic_load_n(&event->signalled, __ATOMIC_ACQUIRE) ? ZE_RESULT_SUCCESS
                                                              : ZE_RESULT_NOT_READY;
}

EXPORT ze_result_t zeEventHostReset(ze_event_handle_t event) {
  __atomic_store_n(&event->signalled, 0, __ATOMIC_RELEASE);
  return ZE_RESULT_SUCCESS;
}
