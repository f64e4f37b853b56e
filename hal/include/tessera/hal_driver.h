/* The Tessera driver contract: the versioned C function table a backend implements.
 *
 * A driver fills one `tsr_driver_v1` and hands it to tsr_registry_register_driver (built
 * in) or returns it from `tsr_driver_entry` (a plugin .so found via TESSERA_DRIVER_PATH).
 * The HAL's validation layer sits in front of every entry point: handles are live and of
 * the right device, ranges are inside buffers, sizes are non-zero, kinds match the kernel's
 * signature, launch dimensions are within the device's limits. Each entry below says what
 * has already been guaranteed, so a driver never re-checks it.
 *
 * Versioning (as the PJRT C API): `struct_size` is sizeof(tsr_driver_v1) as the driver was
 * compiled; fields are only ever appended, and each append bumps TSR_DRIVER_ABI_MINOR. A
 * driver built against an older minor has a smaller struct_size: the HAL treats every field
 * beyond it as absent, and an absent (or NULL) entry answers UNIMPLEMENTED. A different
 * TSR_DRIVER_ABI_MAJOR is refused (listed unavailable with the reason).
 *
 * Threading: entry points may be called from any thread and concurrently. The HAL never
 * runs two enqueue entries (stream_fill ... stream_wait_event) on the same stream at once;
 * stream_synchronize and stream_query may overlap them (as cuStreamSynchronize may).
 * Enqueue entries must return without waiting for the device.
 *
 * Errors: return a status made with tsr_status_make (link tessera_hal_base); the HAL
 * prefixes the public call's name. UNAVAILABLE = not on this system, UNIMPLEMENTED = this
 * driver can't. Never call back into the public HAL from a driver.
 *
 * This header must compile as C99 and as C++ and must never change an existing field.
 */
#ifndef TESSERA_HAL_DRIVER_H_
#define TESSERA_HAL_DRIVER_H_

#include "tessera/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_DRIVER_ABI_MAJOR 1
/* 1.0: the initial table, up to and including executable_kernel.
 * 1.1: appended stream_query.
 * 1.2: appended stream_set_timeout (kernel deadlines).
 * 1.3: appended device_compiler_caps (the capability record of tsr_device_compiler_caps).
 * 1.4: appended the native collective channel (channel_unique_id ... stream_collective).
 * 1.5: appended buffer_import_host (tsr_buffer_import_host: caller-owned host memory).
 * 1.6: appended stream_set_deferred (tsr_stream_set_deferred: a synchronous caller's hint). */
#define TSR_DRIVER_ABI_MINOR 6

/* Name of the function a plugin .so exports: `const tsr_driver_v1* tsr_driver_entry(void)`. */
#define TSR_DRIVER_ENTRY_SYMBOL "tsr_driver_entry"
typedef const tsr_driver_v1 *(*tsr_driver_entry_fn)(void);

#if defined(__GNUC__) || defined(__clang__)
#define TSR_DRIVER_EXPORT __attribute__((visibility("default")))
#else
#define TSR_DRIVER_EXPORT
#endif

/* Driver-side objects. Each driver casts its own types to and from these; the HAL never
 * looks inside and never passes a handle of one driver to another. */
typedef struct tsr_drv_driver_s *tsr_drv_driver_t;
typedef struct tsr_drv_device_s *tsr_drv_device_t;
typedef struct tsr_drv_buffer_s *tsr_drv_buffer_t;
typedef struct tsr_drv_stream_s *tsr_drv_stream_t;
typedef struct tsr_drv_event_s *tsr_drv_event_t;
typedef struct tsr_drv_executable_s *tsr_drv_executable_t;
typedef struct tsr_drv_kernel_s *tsr_drv_kernel_t;
typedef struct tsr_drv_channel_s *tsr_drv_channel_t;

/* One collective as a native channel (NCCL, RCCL) sees it. `kind` numbers as in
 * docs/hal.md "Collectives": 1 all_reduce, 2 all_gather, 3 reduce_scatter, 4 broadcast,
 * 5 reduce, 6 all_to_all, 7 send, 8 recv. Buffers are allocations of this device with
 * absolute offsets (as tsr_drv_arg_t); send or recv is NULL where hal.h says it is unused.
 * Counts and layouts are those of the public call of the same name. */
typedef struct tsr_drv_collective_t {
  uint32_t kind;
  tsr_type_t type;
  tsr_reduce_op_t op;    /* reductions only */
  uint32_t root_or_peer; /* broadcast / reduce: root; send / recv: peer */
  uint64_t count;
  tsr_drv_buffer_t send;
  uint64_t send_offset;
  tsr_drv_buffer_t recv;
  uint64_t recv_offset;
} tsr_drv_collective_t;

/* A launch argument as the driver sees it: buffer views are already resolved to the
 * allocation (the driver never sees a view) and a byte range inside it. */
typedef struct tsr_drv_arg_t {
  tsr_type_t kind;
  union {
    struct {
      tsr_drv_buffer_t buf;
      uint64_t offset; /* from the start of the allocation; aligned to
                          buffer_offset_alignment */
      uint64_t length; /* bytes from offset to the end of the view */
    } buffer;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint64_t u64;
    uint16_t f16_bits;
    uint16_t bf16_bits;
    float f32;
    double f64;
  } value;
} tsr_drv_arg_t;

struct tsr_driver_v1 {
  /* ---- header: required, never absent ---------------------------------------------- */
  uint32_t struct_size; /* sizeof(tsr_driver_v1) as compiled by the driver */
  uint16_t abi_major;   /* TSR_DRIVER_ABI_MAJOR as compiled by the driver */
  uint16_t abi_minor;   /* TSR_DRIVER_ABI_MINOR as compiled by the driver */
  const char *name;     /* backend name, [a-z0-9_]+, e.g. "cpu"; devices are name:index */

  /* ---- driver (required) -------------------------------------------------------------- */
  /* cuInit / vkCreateInstance / dlopen of the vendor library. Return UNAVAILABLE with a
   * reason ("libcuda.so.1: cannot open shared object file") when absent on this system. */
  tsr_status_t (*driver_open)(tsr_drv_driver_t *out_driver);
  /* After every device of this driver was closed. */
  void (*driver_close)(tsr_drv_driver_t driver);
  /* cuDeviceGetCount / vkEnumeratePhysicalDevices. 0 devices is fine. */
  tsr_status_t (*device_count)(tsr_drv_driver_t driver, uint32_t *out_count);
  /* cuDeviceGetAttribute... Fill everything but struct_size, name and backend (the HAL sets
   * those). `out_info` is a full current-size struct, zeroed; index < device_count. */
  tsr_status_t (*device_info)(tsr_drv_driver_t driver, uint32_t index, tsr_device_info_t *out_info);
  /* cuCtxCreate / vkCreateDevice. index < device_count. Called once per
   * tsr_registry_open_device. */
  tsr_status_t (*device_open)(tsr_drv_driver_t driver, uint32_t index,
                              tsr_drv_device_t *out_device);
  /* After every object created on the device was destroyed. */
  void (*device_close)(tsr_drv_device_t device);

  /* ---- memory --------------------------------------------------------------------------- */
  /* cuMemAlloc / vkAllocateMemory. Guaranteed: 0 < size <= total_memory; kind is a non-empty
   * subset of the TSR_MEMORY_* bits. Return RESOURCE_EXHAUSTED when out of memory, and when
   * the live buffers plus size would exceed the total_memory the device reports (account
   * before allocating: backends/memory_budget.h). */
  tsr_status_t (*buffer_allocate)(tsr_drv_device_t device, uint64_t size, tsr_memory_kind_t kind,
                                  tsr_drv_buffer_t *out_buffer);
  /* cuMemFree / vkFreeMemory. Guaranteed: no enqueued work uses it any more, it is unmapped. */
  void (*buffer_free)(tsr_drv_device_t device, tsr_drv_buffer_t buffer);
  /* vkMapMemory of the whole allocation. Guaranteed: HOST_VISIBLE, not currently mapped
   * (the HAL reference-counts maps and views). */
  tsr_status_t (*buffer_map)(tsr_drv_device_t device, tsr_drv_buffer_t buffer, void **out_ptr);
  /* vkUnmapMemory. Guaranteed: currently mapped. */
  void (*buffer_unmap)(tsr_drv_device_t device, tsr_drv_buffer_t buffer);

  /* ---- streams -------------------------------------------------------------------------- */
  /* cuStreamCreate / a queue + timeline semaphore. */
  tsr_status_t (*stream_create)(tsr_drv_device_t device, tsr_drv_stream_t *out_stream);
  /* cuStreamDestroy. Guaranteed: synchronized, nothing enqueued since. */
  void (*stream_destroy)(tsr_drv_device_t device, tsr_drv_stream_t stream);
  /* cuMemsetD8/16/32Async / vkCmdFillBuffer. Guaranteed: pattern_size is 1, 2 or 4; the
   * pattern is in the low pattern_size bytes of `pattern` (host byte order, as memcpy'd);
   * offset and length are multiples of pattern_size; length > 0; the range is in bounds. */
  tsr_status_t (*stream_fill)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                              tsr_drv_buffer_t buffer, uint64_t offset, uint64_t length,
                              uint32_t pattern, uint32_t pattern_size);
  /* cuMemcpyHtoDAsync. Guaranteed: src != NULL, length > 0, in bounds. `src` stays valid
   * until the copy completes (the caller's promise). */
  tsr_status_t (*stream_copy_h2d)(tsr_drv_device_t device, tsr_drv_stream_t stream, const void *src,
                                  tsr_drv_buffer_t dst, uint64_t dst_offset, uint64_t length);
  /* cuMemcpyDtoHAsync. Guaranteed as for copy_h2d. */
  tsr_status_t (*stream_copy_d2h)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                  tsr_drv_buffer_t src, uint64_t src_offset, void *dst,
                                  uint64_t length);
  /* cuMemcpyDtoDAsync / vkCmdCopyBuffer. Guaranteed: length > 0, both in bounds, the ranges
   * do not overlap when src == dst. */
  tsr_status_t (*stream_copy_d2d)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                  tsr_drv_buffer_t src, uint64_t src_offset, tsr_drv_buffer_t dst,
                                  uint64_t dst_offset, uint64_t length);
  /* cuLaunchKernel / vkCmdDispatch. Guaranteed: the kernel belongs to this device; every
   * grid and workgroup dimension is >= 1 and within the device limits; the workgroup matches
   * the kernel's required size; arg_count equals the parameter count and every kind
   * matches; buffer offsets are aligned and inside their buffers. Copy what you keep:
   * `args` is only valid during the call. */
  tsr_status_t (*stream_launch)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                tsr_drv_kernel_t kernel, const uint32_t grid[3],
                                const uint32_t workgroup[3], const tsr_drv_arg_t *args,
                                uint32_t arg_count);
  /* cuEventRecord: the event completes when all work enqueued before it has. Re-recording
   * replaces the record that waits and queries observe. */
  tsr_status_t (*stream_record_event)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                      tsr_drv_event_t event);
  /* cuStreamWaitEvent: later work on `stream` waits for the event's most recent record at
   * the time of this call (none: no wait). The event may have been recorded on another
   * stream of the same device. */
  tsr_status_t (*stream_wait_event)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                    tsr_drv_event_t event);
  /* cuStreamSynchronize. Report errors of work that failed asynchronously here. A kernel
   * fault (backends/kernel_faults.h: OUT_OF_RANGE for an out-of-bounds access in checked
   * mode, INVALID_ARGUMENT for a division or `for` step fault, DEADLINE_EXCEEDED for a
   * cancelled launch) is reported once, by the first synchronize after it, and only when
   * all the stream's work has completed: the HAL then retires the work's references as on
   * success, and later work on the stream runs normally. */
  tsr_status_t (*stream_synchronize)(tsr_drv_device_t device, tsr_drv_stream_t stream);

  /* ---- events --------------------------------------------------------------------------- */
  tsr_status_t (*event_create)(tsr_drv_device_t device, tsr_drv_event_t *out_event);
  /* Guaranteed: no enqueued work refers to it any more. */
  void (*event_destroy)(tsr_drv_device_t device, tsr_drv_event_t event);
  /* cuEventSynchronize (never recorded: return at once). Reports a kernel fault of the
   * recording stream's work before the record that no stream_synchronize had reported. */
  tsr_status_t (*event_synchronize)(tsr_drv_device_t device, tsr_drv_event_t event);
  /* cuEventQuery (never recorded: ready). */
  tsr_status_t (*event_query)(tsr_drv_device_t device, tsr_drv_event_t event, bool *out_ready);

  /* ---- executables ---------------------------------------------------------------------- */
  /* cuModuleLoadData / vkCreateShaderModule+pipelines. Guaranteed: format is a non-empty
   * string, data != NULL, size > 0. Unknown format: UNIMPLEMENTED naming the accepted ones;
   * malformed data: INVALID_ARGUMENT. `data` may be freed after the call returns. */
  tsr_status_t (*executable_create)(tsr_drv_device_t device, const char *format, const void *data,
                                    size_t size, tsr_drv_executable_t *out_executable);
  /* Guaranteed: no kernel handle of it is alive, no enqueued work uses it. */
  void (*executable_destroy)(tsr_drv_device_t device, tsr_drv_executable_t executable);
  tsr_status_t (*executable_kernel_count)(tsr_drv_device_t device, tsr_drv_executable_t executable,
                                          uint32_t *out_count);
  /* cuModuleGetFunction by index (index < count). Fill out_info (a zeroed current-size
   * struct); its pointers must stay valid until executable_destroy. The kernel handle is
   * owned by the executable. Kernel names must be unique within an executable. */
  tsr_status_t (*executable_kernel)(tsr_drv_device_t device, tsr_drv_executable_t executable,
                                    uint32_t index, tsr_kernel_info_t *out_info,
                                    tsr_drv_kernel_t *out_kernel);

  /* ---- ABI 1.1 -------------------------------------------------------------------------- */
  /* cuStreamQuery: *out_idle = all enqueued work has completed. */
  tsr_status_t (*stream_query)(tsr_drv_device_t device, tsr_drv_stream_t stream, bool *out_idle);

  /* ---- ABI 1.2 -------------------------------------------------------------------------- */
  /* Every launch enqueued on `stream` after this call is cancelled once it has run for
   * longer than timeout_ns (0: no deadline), and the stream's next synchronize reports
   * DEADLINE_EXCEEDED; the device stays usable. The HAL calls it once after stream_create
   * with the default (TESSERA_KERNEL_TIMEOUT_MS); a driver that cannot cancel a running
   * kernel answers UNIMPLEMENTED for a non-zero timeout. */
  tsr_status_t (*stream_set_timeout)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                     uint64_t timeout_ns);

  /* ---- ABI 1.3 -------------------------------------------------------------------------- */
  /* The device's capability record (hal.h, tsr_device_compiler_caps; docs/hal.md): the
   * exact features its compiler target needs, as `version=1` then `<backend>.<name>=<value>`
   * lines. Set *out_len to the record's length and copy min(capacity, length) bytes into
   * `buffer`. Guaranteed: out_len is non-NULL; buffer is non-NULL when capacity > 0. NULL
   * (or absent) answers UNIMPLEMENTED: targets then use tsr_device_info_t alone. */
  tsr_status_t (*device_compiler_caps)(tsr_drv_device_t device, char *buffer, size_t capacity,
                                       size_t *out_len);

  /* ---- ABI 1.4: a native collective channel (NCCL for cuda, RCCL for rocm) ------------
   * Optional: when absent (NULL, an older ABI, or UNAVAILABLE because the library is not
   * installed) the HAL runs collectives itself through host memory. The HAL uses a channel
   * only when every rank of a communicator is a device of this driver. */
  /* ncclGetUniqueId. UNAVAILABLE naming the library and the dlopen error when absent. */
  tsr_status_t (*channel_unique_id)(tsr_drv_driver_t driver, tsr_comm_unique_id_t *out_id);
  /* ncclCommInitRank: blocks until all `size` ranks joined (the HAL calls the ranks of an
   * in-process group from one thread each). Guaranteed: rank < size. */
  tsr_status_t (*channel_create)(tsr_drv_device_t device, const tsr_comm_unique_id_t *id,
                                 uint32_t size, uint32_t rank, tsr_drv_channel_t *out_channel);
  /* ncclCommAbort: pending and later work of the channel fails; never blocks for peers. */
  void (*channel_abort)(tsr_drv_device_t device, tsr_drv_channel_t channel);
  /* ncclCommDestroy. Guaranteed: no enqueued work uses it any more. */
  void (*channel_destroy)(tsr_drv_device_t device, tsr_drv_channel_t channel);
  /* ncclAllReduce ... on the stream (asynchronous, like every enqueue). Guaranteed: the
   * collective was validated (types, ranges, root, peer); the channel is of this device. */
  tsr_status_t (*stream_collective)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                    tsr_drv_channel_t channel, const tsr_drv_collective_t *op);

  /* ---- ABI 1.5 -------------------------------------------------------------------------- */
  /* cuMemHostRegister / vkAllocateMemory with VkImportMemoryHostPointerInfoEXT / OpenCL
   * CL_MEM_USE_HOST_PTR: a buffer that aliases `ptr` instead of owning memory. Guaranteed:
   * ptr != NULL, size > 0, ptr is a multiple of the device's buffer_offset_alignment. The
   * caller keeps [ptr, ptr+size) alive until buffer_free, which must then release only the
   * driver's bookkeeping, never the memory. buffer_map returns `ptr`; launches and copies
   * read and write the caller's bytes (no staging copy: a driver that would need one answers
   * UNIMPLEMENTED). Imports do not count against total_memory. NULL (or absent) answers
   * UNIMPLEMENTED. */
  tsr_status_t (*buffer_import_host)(tsr_drv_device_t device, void *ptr, uint64_t size,
                                     tsr_drv_buffer_t *out_buffer);

  /* ---- ABI 1.6 -------------------------------------------------------------------------- */
  /* tsr_stream_set_deferred: deferred = true, the caller will synchronize `stream` right after
   * its next enqueues, so a driver whose streams run on a host worker thread may leave work
   * enqueued from now on for that synchronize to run on the caller's thread instead of waking
   * the worker; false ends it, and work still queued must then be handed to the worker (it
   * must run without a synchronize from then on). Must never reorder or drop work. The HAL
   * serialises it with the stream's other calls. NULL (or absent): the hint is ignored. */
  tsr_status_t (*stream_set_deferred)(tsr_drv_device_t device, tsr_drv_stream_t stream,
                                      bool deferred);
};

/* The smallest table the HAL accepts: the header and the driver section. */
#define TSR_DRIVER_V1_MIN_SIZE (offsetof(tsr_driver_v1, buffer_allocate))
/* struct_size of a driver built against ABI 1.0. */
#define TSR_DRIVER_V1_0_SIZE (offsetof(tsr_driver_v1, stream_query))
/* struct_size of a driver built against ABI 1.1. */
#define TSR_DRIVER_V1_1_SIZE (offsetof(tsr_driver_v1, stream_set_timeout))
/* struct_size of a driver built against ABI 1.2. */
#define TSR_DRIVER_V1_2_SIZE (offsetof(tsr_driver_v1, device_compiler_caps))
/* struct_size of a driver built against ABI 1.3. */
#define TSR_DRIVER_V1_3_SIZE (offsetof(tsr_driver_v1, channel_unique_id))
/* struct_size of a driver built against ABI 1.4. */
#define TSR_DRIVER_V1_4_SIZE (offsetof(tsr_driver_v1, buffer_import_host))
/* struct_size of a driver built against ABI 1.5. */
#define TSR_DRIVER_V1_5_SIZE (offsetof(tsr_driver_v1, stream_set_deferred))

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_HAL_DRIVER_H_ */
