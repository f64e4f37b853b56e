/* The Tessera HAL C ABI: the stable surface that frameworks, tools and tests link against.
 *
 * Every object is an opaque, reference-counted handle (tsr_X_retain / tsr_X_release; both
 * accept NULL). Every call returns a tsr_status_t: NULL means OK, anything else is owned by
 * the caller and must be freed with tsr_status_free. `out_` parameters are zeroed on entry,
 * so they are NULL/0 whenever a call fails. Every call is checked by the validation layer
 * (hal/src/validation.*) before any driver sees it; an error message always starts with
 * the name of the call and names the bad argument.
 *
 * This header must compile as C99 and as C++, must never include a C++ header, and must
 * never change the layout of an existing struct (append fields; struct_size says which a
 * caller knows). The driver side of the contract is hal_driver.h; docs/hal.md is the guide.
 */
#ifndef TESSERA_HAL_H_
#define TESSERA_HAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enums that cross the ABI get a fixed 32-bit underlying type in C++, the size C gives
 * them, so any value a C caller passes (even an invalid one) is representable and can be
 * checked instead of being undefined behaviour. */
#ifdef __cplusplus
#define TSR_ENUM_BASE : int32_t
#else
#define TSR_ENUM_BASE
#endif

/* ---------------------------------------------------------------------------------------
 * Status
 * ------------------------------------------------------------------------------------- */

/* Codes share their numbers with absl::StatusCode / IREE, so they map one to one. */
typedef enum tsr_status_code_t TSR_ENUM_BASE {
  TSR_OK = 0,
  TSR_ABORTED = 10,            /* work was abandoned (e.g. a stream was torn down) */
  TSR_DEADLINE_EXCEEDED = 4,   /* a timed wait ran out */
  TSR_FAILED_PRECONDITION = 9, /* the object is in the wrong state (e.g. map of device-local) */
  TSR_INTERNAL = 13,           /* a bug in Tessera or a driver */
  TSR_INVALID_ARGUMENT = 3,    /* NULL/released handles, wrong types, bad sizes, mismatches */
  TSR_NOT_FOUND = 5,           /* no device / kernel of that name */
  TSR_OUT_OF_RANGE = 11,       /* a range exceeds a buffer, a size exceeds a device limit */
  TSR_RESOURCE_EXHAUSTED = 8,  /* out of memory (device or host) */
  TSR_UNAVAILABLE = 14,        /* not present on this system: no driver, no device */
  TSR_UNIMPLEMENTED = 12       /* this driver cannot do that (absent entry point, format) */
} tsr_status_code_t;

/* NULL is OK. A non-NULL status carries a code and a message and is owned by the caller. */
typedef struct tsr_status_s *tsr_status_t;

/* TSR_OK for NULL. */
tsr_status_code_t tsr_status_code(tsr_status_t status);
/* "OK" for NULL; otherwise valid until tsr_status_free(status). */
const char *tsr_status_message(tsr_status_t status);
/* Frees a status; NULL is a no-op. */
void tsr_status_free(tsr_status_t status);
/* "INVALID_ARGUMENT", ... ("UNKNOWN" for a number that is not a code). */
const char *tsr_status_code_name(tsr_status_code_t code);
/* Creates a status with a printf-style message; TSR_OK returns NULL. Drivers use this too. */
tsr_status_t tsr_status_make(tsr_status_code_t code, const char *format, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---------------------------------------------------------------------------------------
 * Handles
 * ------------------------------------------------------------------------------------- */

typedef struct tsr_registry_s *tsr_registry_t;
typedef struct tsr_device_s *tsr_device_t;
typedef struct tsr_buffer_s *tsr_buffer_t;
typedef struct tsr_stream_s *tsr_stream_t;
typedef struct tsr_event_s *tsr_event_t;
typedef struct tsr_executable_s *tsr_executable_t;
typedef struct tsr_kernel_s *tsr_kernel_t;
typedef struct tsr_comm_s *tsr_comm_t;

/* The driver table (defined in hal_driver.h). */
typedef struct tsr_driver_v1 tsr_driver_v1;
/* A cross-process transport's table (defined in hal_transport.h). */
typedef struct tsr_comm_transport_v1 tsr_comm_transport_v1;

/* ---------------------------------------------------------------------------------------
 * Value types shared by kernels, arguments and device descriptions
 * ------------------------------------------------------------------------------------- */

/* Kind of a kernel parameter / launch argument. 0 is deliberately not a kind, so a
 * zero-initialised argument is rejected instead of silently launched. */
typedef enum tsr_type_t TSR_ENUM_BASE {
  TSR_TYPE_BUFFER = 1,
  TSR_TYPE_I8 = 2,
  TSR_TYPE_I16 = 3,
  TSR_TYPE_I32 = 4,
  TSR_TYPE_I64 = 5,
  TSR_TYPE_F16 = 6,  /* IEEE binary16, passed as its bits */
  TSR_TYPE_BF16 = 7, /* bfloat16, passed as its bits */
  TSR_TYPE_F32 = 8,
  TSR_TYPE_F64 = 9
} tsr_type_t;

/* "buffer", "i8", ... ("invalid" otherwise). */
const char *tsr_type_name(tsr_type_t type);
/* Bytes of one element of an element type (i8 1 ... f64 8); 0 for TSR_TYPE_BUFFER and for a
 * value that is not a type. */
size_t tsr_type_size(tsr_type_t type);

/* Memory kinds (a bitmask): DEVICE_LOCAL is fast for kernels, HOST_VISIBLE can be mapped.
 * Both bits together ask for memory that is both (unified memory). */
typedef uint32_t tsr_memory_kind_t;
enum { TSR_MEMORY_DEVICE_LOCAL = 1u << 0, TSR_MEMORY_HOST_VISIBLE = 1u << 1 };

/* Device features (a bitmask in tsr_device_info_t.features). */
enum {
  TSR_FEATURE_FP16 = 1u << 0,
  TSR_FEATURE_BF16 = 1u << 1,
  TSR_FEATURE_FP64 = 1u << 2,
  TSR_FEATURE_INT8 = 1u << 3,
  TSR_FEATURE_INT16 = 1u << 4,
  TSR_FEATURE_INT64 = 1u << 5,
  TSR_FEATURE_SUBGROUPS = 1u << 6,
  TSR_FEATURE_FLOAT_ATOMICS = 1u << 7,
  TSR_FEATURE_UNIFIED_MEMORY = 1u << 8, /* device-local memory is host-visible too */
  /* Kernels can ask that float math keep NaN, infinities and the sign of zero (Vulkan's
   * shaderSignedZeroInfNanPreserve for every float type the device has). Without it a Vulkan
   * compiler may fold x * 0.0 to 0. Always true where IEEE semantics are the default. */
  TSR_FEATURE_FLOAT_PRESERVE = 1u << 9,
  /* Kernels can ask that subnormal inputs and results be kept, not flushed to zero (Vulkan's
   * shaderDenormPreserve for every float type the device has; the CPU driver's threads clear
   * MXCSR FTZ/DAZ). Without it strict results may differ from other backends' in subnormals. */
  TSR_FEATURE_DENORM_PRESERVE = 1u << 10
};

#define TSR_NAME_MAX 64

/* What a device says about itself. The caller sets struct_size = sizeof(tsr_device_info_t);
 * the callee fills the fields it knows within that size and writes back the size it
 * filled, so a caller built against an older or newer header stays correct. */
typedef struct tsr_device_info_t {
  uint32_t struct_size;
  char name[TSR_NAME_MAX];          /* "cpu:0": backend:index, what open_device takes */
  char backend[TSR_NAME_MAX];       /* "cpu" */
  char vendor[TSR_NAME_MAX];        /* "GenuineIntel", "NVIDIA", ... */
  char architecture[TSR_NAME_MAX];  /* "x86_64", "sm_90", "gfx90a", ... */
  uint64_t total_memory;            /* bytes; live buffers past it fail RESOURCE_EXHAUSTED */
  uint32_t compute_units;           /* cores / SMs / CUs */
  uint32_t max_workgroup_size[3];   /* per dimension */
  uint32_t max_workgroup_total;     /* product of the three */
  uint32_t max_grid_size[3];        /* workgroups per dimension */
  uint64_t max_shared_memory;       /* bytes of workgroup-shared memory per workgroup */
  uint32_t subgroup_size;           /* 1 when the device has no subgroups */
  uint32_t buffer_offset_alignment; /* required alignment of a buffer argument's offset */
  uint64_t features;                /* TSR_FEATURE_* */
} tsr_device_info_t;

/* A backend that is known but cannot be used here, and why. */
typedef struct tsr_unavailable_t {
  const char *backend; /* "cuda", or the plugin path when its name is unknown */
  const char *reason;  /* "dlopen(libcuda.so.1) failed: ..." */
} tsr_unavailable_t;

/* One kernel parameter. */
typedef struct tsr_kernel_param_t {
  tsr_type_t kind;
  const char *name; /* may be NULL */
} tsr_kernel_param_t;

/* What a kernel takes. Pointers stay valid while the kernel handle lives. The caller sets
 * struct_size as for tsr_device_info_t. */
typedef struct tsr_kernel_info_t {
  uint32_t struct_size;
  const char *name;
  uint32_t param_count;
  const tsr_kernel_param_t *params;
  uint32_t required_workgroup_size[3]; /* all 0: any workgroup size */
  uint32_t shared_memory_bytes;        /* static workgroup-shared memory */
} tsr_kernel_info_t;

/* A typed launch argument; `kind` must equal the parameter's kind. Integers are signless
 * (as in the kernel IR): u64 is the same bits as i64. The union is named because C99 has
 * no anonymous unions. */
typedef struct tsr_arg_t {
  tsr_type_t kind;
  union {
    struct {
      tsr_buffer_t buf;
      uint64_t offset; /* bytes from the start of `buf` */
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
} tsr_arg_t;

/* Argument constructors (C99 compound-literal free, so they also work in C++). */
static inline tsr_arg_t tsr_arg_buffer(tsr_buffer_t buffer, uint64_t offset) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_BUFFER;
  a.value.buffer.buf = buffer;
  a.value.buffer.offset = offset;
  return a;
}
static inline tsr_arg_t tsr_arg_i8(int8_t v) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_I8;
  a.value.i64 = 0;
  a.value.i8 = v;
  return a;
}
static inline tsr_arg_t tsr_arg_i16(int16_t v) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_I16;
  a.value.i64 = 0;
  a.value.i16 = v;
  return a;
}
static inline tsr_arg_t tsr_arg_i32(int32_t v) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_I32;
  a.value.i64 = 0;
  a.value.i32 = v;
  return a;
}
static inline tsr_arg_t tsr_arg_i64(int64_t v) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_I64;
  a.value.i64 = v;
  return a;
}
static inline tsr_arg_t tsr_arg_f16_bits(uint16_t bits) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_F16;
  a.value.i64 = 0;
  a.value.f16_bits = bits;
  return a;
}
static inline tsr_arg_t tsr_arg_bf16_bits(uint16_t bits) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_BF16;
  a.value.i64 = 0;
  a.value.bf16_bits = bits;
  return a;
}
static inline tsr_arg_t tsr_arg_f32(float v) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_F32;
  a.value.i64 = 0;
  a.value.f32 = v;
  return a;
}
static inline tsr_arg_t tsr_arg_f64(double v) {
  tsr_arg_t a;
  a.kind = TSR_TYPE_F64;
  a.value.f64 = v;
  return a;
}

/* ---------------------------------------------------------------------------------------
 * Registry: which drivers exist, which devices they expose, and which backends are absent
 * ------------------------------------------------------------------------------------- */

/* An empty registry. Built-in drivers are added by the caller (see
 * backends/builtin_drivers.h); plugins by tsr_registry_load_plugins. */
tsr_status_t tsr_registry_create(tsr_registry_t *out_registry);
void tsr_registry_retain(tsr_registry_t registry);
void tsr_registry_release(tsr_registry_t registry);

/* Adds a driver and enumerates its devices (like cuInit + cuDeviceGetCount). The table is
 * copied. A driver whose major ABI differs, or whose driver_open reports UNAVAILABLE, is
 * listed as unavailable and the call returns UNAVAILABLE; a malformed table or a duplicate
 * backend name is INVALID_ARGUMENT. */
tsr_status_t tsr_registry_register_driver(tsr_registry_t registry, const tsr_driver_v1 *driver);

/* Loads plugin drivers from a colon-separated list of directories (every *.so inside, in
 * name order) and .so files. NULL means the TESSERA_DRIVER_PATH environment variable (unset:
 * nothing to do). A plugin that fails to load becomes an unavailable record, never an
 * error; the call only fails for invalid arguments. */
tsr_status_t tsr_registry_load_plugins(tsr_registry_t registry, const char *search_path);

/* Devices, in registration order, then index order. */
tsr_status_t tsr_registry_device_count(tsr_registry_t registry, uint32_t *out_count);
tsr_status_t tsr_registry_device_info(tsr_registry_t registry, uint32_t index,
                                      tsr_device_info_t *out_info);

/* Unavailable backends. The strings stay valid while the registry lives. */
tsr_status_t tsr_registry_unavailable_count(tsr_registry_t registry, uint32_t *out_count);
tsr_status_t tsr_registry_unavailable(tsr_registry_t registry, uint32_t index,
                                      tsr_unavailable_t *out_record);

/* Opens "backend:index" (like cuCtxCreate / vkCreateDevice). Each call opens a new,
 * independent device object; objects of one cannot be used with another. NOT_FOUND lists
 * the known names. */
tsr_status_t tsr_registry_open_device(tsr_registry_t registry, const char *name,
                                      tsr_device_t *out_device);

/* ---------------------------------------------------------------------------------------
 * Device
 * ------------------------------------------------------------------------------------- */

void tsr_device_retain(tsr_device_t device);
void tsr_device_release(tsr_device_t device);
tsr_status_t tsr_device_info(tsr_device_t device, tsr_device_info_t *out_info);

/* The device's exact capability record for its compiler target (docs/hal.md): text,
 * `version=1` then one `<backend>.<name>=<value>` line per capability (`vulkan.float16=1`,
 * `vulkan.maxComputeSharedMemorySize=32768`, `cuda.arch=sm_90`): what the compiler reads
 * instead of guessing from the features bits. *out_len receives the record's
 * length in bytes (no NUL is written or counted); up to `capacity` bytes are copied into
 * `buffer` (NULL with capacity 0 asks for the length only). UNIMPLEMENTED when the driver
 * has no record (ABI before 1.3, or nothing beyond tsr_device_info_t to tell). */
tsr_status_t tsr_device_compiler_caps(tsr_device_t device, char *buffer, size_t capacity,
                                      size_t *out_len);

/* ---------------------------------------------------------------------------------------
 * Buffers (cuMemAlloc / vkAllocateMemory+vkCreateBuffer). Sizes are bytes. A buffer can
 * never be empty: size 0 is INVALID_ARGUMENT. Transfers of 0 bytes are valid no-ops.
 * ------------------------------------------------------------------------------------- */

tsr_status_t tsr_buffer_allocate(tsr_device_t device, uint64_t size, tsr_memory_kind_t kind,
                                 tsr_buffer_t *out_buffer);
/* A view of [offset, offset+length) of `parent`, which it keeps alive. Views of views are
 * views of the same storage. */
tsr_status_t tsr_buffer_create_view(tsr_buffer_t parent, uint64_t offset, uint64_t length,
                                    tsr_buffer_t *out_view);
/* A buffer over caller-owned host memory [ptr, ptr+size), without a copy (as
 * cuMemHostRegister + cuMemHostGetDevicePointer, Vulkan VK_EXT_external_memory_host, OpenCL
 * CL_MEM_USE_HOST_PTR). Kernels and copies on the buffer read and write those very bytes, and
 * tsr_buffer_map returns `ptr` (the buffer is TSR_MEMORY_HOST_VISIBLE).
 * The contract: the caller keeps the memory alive, and does not let anyone but the device
 * touch it, until every stream has finished the work enqueued on the buffer (synchronize)
 * and, for the memory's lifetime, until the last handle (views included) was released.
 * Imports do not count against total_memory. INVALID_ARGUMENT: ptr is NULL, size is 0, or
 * ptr is not a multiple of the device's buffer_offset_alignment (the message says which
 * alignment). UNIMPLEMENTED, naming the driver, where the device cannot use host memory in
 * place (its driver has no buffer_import_host entry, ABI before 1.5, or refuses). */
tsr_status_t tsr_buffer_import_host(tsr_device_t device, void *ptr, uint64_t size,
                                    tsr_buffer_t *out_buffer);
/* As tsr_buffer_import_host, and the HAL tells the caller when the memory is free again (as
 * IREE's iree_hal_buffer_release_callback_t): release(user_data) runs exactly once, after the
 * last reference (views' and in-flight work's included) is gone and the driver let go of the
 * memory, on whichever thread dropped that reference; it must not call the HAL. Not called
 * when the import fails (the caller still owns everything). release may be NULL. */
typedef void (*tsr_buffer_release_fn)(void *user_data);
tsr_status_t tsr_buffer_import_host_with_release(tsr_device_t device, void *ptr, uint64_t size,
                                                 tsr_buffer_release_fn release, void *user_data,
                                                 tsr_buffer_t *out_buffer);
void tsr_buffer_retain(tsr_buffer_t buffer);
void tsr_buffer_release(tsr_buffer_t buffer);
tsr_status_t tsr_buffer_size(tsr_buffer_t buffer, uint64_t *out_size);

/* Host access to HOST_VISIBLE memory (vkMapMemory); FAILED_PRECONDITION for other memory or
 * when this handle is already mapped. The host must order its accesses with the streams
 * itself (synchronize first), as with Vulkan. */
tsr_status_t tsr_buffer_map(tsr_buffer_t buffer, uint64_t offset, uint64_t length, void **out_ptr);
tsr_status_t tsr_buffer_unmap(tsr_buffer_t buffer);

/* ---------------------------------------------------------------------------------------
 * Streams: in-order queues (CUstream / a VkQueue with a timeline). Every enqueue returns
 * before the work runs; host memory passed to a copy must stay valid until it completes.
 * A stream keeps everything it uses alive until that work is done.
 * ------------------------------------------------------------------------------------- */

tsr_status_t tsr_stream_create(tsr_device_t device, tsr_stream_t *out_stream);
void tsr_stream_retain(tsr_stream_t stream);
/* The last release waits for the stream's work to finish. */
void tsr_stream_release(tsr_stream_t stream);

/* Fills [offset, offset+length) with a 1, 2 or 4 byte pattern (cuMemsetD8/16/32Async);
 * offset and length must be multiples of pattern_size. */
tsr_status_t tsr_stream_fill(tsr_stream_t stream, tsr_buffer_t buffer, uint64_t offset,
                             uint64_t length, const void *pattern, uint32_t pattern_size);
/* cuMemcpyHtoDAsync / cuMemcpyDtoHAsync / cuMemcpyDtoDAsync. Ranges of a device-to-device
 * copy must not overlap within the same storage. No alignment is required. */
tsr_status_t tsr_stream_copy_h2d(tsr_stream_t stream, const void *src, tsr_buffer_t dst,
                                 uint64_t dst_offset, uint64_t length);
tsr_status_t tsr_stream_copy_d2h(tsr_stream_t stream, tsr_buffer_t src, uint64_t src_offset,
                                 void *dst, uint64_t length);
tsr_status_t tsr_stream_copy_d2d(tsr_stream_t stream, tsr_buffer_t src, uint64_t src_offset,
                                 tsr_buffer_t dst, uint64_t dst_offset, uint64_t length);

/* cuLaunchKernel: grid counts workgroups, workgroup counts work-items, per dimension. The
 * arguments are copied before the call returns. */
tsr_status_t tsr_stream_launch(tsr_stream_t stream, tsr_kernel_t kernel, const uint32_t grid[3],
                               const uint32_t workgroup[3], const tsr_arg_t *args,
                               uint32_t arg_count);

/* cuEventRecord / cuStreamWaitEvent: a wait orders later work on `stream` after the work
 * that preceded the event's most recent record (a never-recorded event is complete). */
tsr_status_t tsr_stream_record_event(tsr_stream_t stream, tsr_event_t event);
tsr_status_t tsr_stream_wait_event(tsr_stream_t stream, tsr_event_t event);

/* cuStreamSynchronize: blocks until all enqueued work is done; reports a deferred error,
 * including a kernel fault (checked mode: OUT_OF_RANGE / INVALID_ARGUMENT; a deadline:
 * DEADLINE_EXCEEDED; docs/ir.md "Faults") once. The stream stays usable after it. */
tsr_status_t tsr_stream_synchronize(tsr_stream_t stream);
/* cuStreamQuery: *out_idle = all enqueued work is done. (Driver ABI 1.1.) */
tsr_status_t tsr_stream_query(tsr_stream_t stream, bool *out_idle);
/* A deadline for every launch enqueued on `stream` after the call: a kernel that runs
 * longer than timeout_ns is cancelled and the next tsr_stream_synchronize reports
 * DEADLINE_EXCEEDED ("kernel @name ran past its deadline of N ms and was cancelled"); the
 * device stays usable. 0 = no deadline. A new stream starts with TESSERA_KERNEL_TIMEOUT_MS
 * (milliseconds, 0 = none) or else TSR_DEFAULT_KERNEL_TIMEOUT_MS. (Driver ABI 1.2; a driver
 * that cannot cancel a running kernel answers UNIMPLEMENTED.) */
tsr_status_t tsr_stream_set_timeout(tsr_stream_t stream, uint64_t timeout_ns);
#define TSR_DEFAULT_KERNEL_TIMEOUT_MS 60000
/* A hint from a caller about to synchronize `stream` right after its next enqueues (a
 * synchronous graph run): with deferred = true, a device whose streams run on a host worker
 * thread (cpu) may leave the work enqueued from now on for that synchronize to run on the
 * calling thread, saving a thread wake-up and a hand-back per run; false ends the span and
 * hands what is still queued to the worker. Inside a span, work may not start before this
 * thread's tsr_stream_synchronize or the span's end: nothing may wait for it otherwise
 * (tsr_stream_query, tsr_event_synchronize, another stream's wait) until then. Order and
 * results are unchanged. Devices without it (driver ABI < 1.6, or no entry) ignore it: OK. */
tsr_status_t tsr_stream_set_deferred(tsr_stream_t stream, bool deferred);

/* ---------------------------------------------------------------------------------------
 * Events (CUevent / a VkSemaphore value)
 * ------------------------------------------------------------------------------------- */

tsr_status_t tsr_event_create(tsr_device_t device, tsr_event_t *out_event);
void tsr_event_retain(tsr_event_t event);
void tsr_event_release(tsr_event_t event);
/* cuEventSynchronize: blocks the host until the most recent record has completed; reports a
 * kernel fault of the recording stream's earlier work (see tsr_stream_set_timeout). */
tsr_status_t tsr_event_synchronize(tsr_event_t event);
/* cuEventQuery: *out_ready = the most recent record has completed (or there was none). */
tsr_status_t tsr_event_query(tsr_event_t event, bool *out_ready);

/* ---------------------------------------------------------------------------------------
 * Executables and kernels (cuModuleLoadData / cuModuleGetFunction)
 * ------------------------------------------------------------------------------------- */

/* `format` names what `data` holds ("cpu-native", "ptx", "spirv-vulkan", ...); a driver that
 * does not accept it answers UNIMPLEMENTED. `data` may be freed after the call. */
tsr_status_t tsr_executable_create(tsr_device_t device, const char *format, const void *data,
                                   size_t size, tsr_executable_t *out_executable);
void tsr_executable_retain(tsr_executable_t executable);
void tsr_executable_release(tsr_executable_t executable);
tsr_status_t tsr_executable_kernel_count(tsr_executable_t executable, uint32_t *out_count);
/* A kernel by name (NOT_FOUND lists the names) or by index. A kernel keeps its executable
 * alive. */
tsr_status_t tsr_executable_kernel(tsr_executable_t executable, const char *name,
                                   tsr_kernel_t *out_kernel);
tsr_status_t tsr_executable_kernel_at(tsr_executable_t executable, uint32_t index,
                                      tsr_kernel_t *out_kernel);

void tsr_kernel_retain(tsr_kernel_t kernel);
void tsr_kernel_release(tsr_kernel_t kernel);
tsr_status_t tsr_kernel_info(tsr_kernel_t kernel, tsr_kernel_info_t *out_info);

/* ---------------------------------------------------------------------------------------
 * Collectives (ncclComm_t / iree_hal_channel_t). docs/hal.md "Collectives" is the guide.
 *
 * A communicator is one rank of a group. Operations are enqueued on a HAL stream of the
 * rank's device, ordered with the kernels and copies on that stream, and complete through
 * the stream (tsr_stream_synchronize, events), like NCCL's. Every enqueue returns at once:
 * enqueueing the ranks of an in-process group one after another from one thread never
 * blocks. An error found after the enqueue returned (a mismatch between ranks, a peer that
 * died or never arrived, an abort) is reported by the stream's next synchronize.
 *
 * Determinism: element i of a reduction is folded in rank order, ((x0 op x1) op x2) ...,
 * in f32 for f16/bf16/f32 (rounded once at the end), f64 for f64, and in the integer type
 * itself (wrapping) for integers; AVG is the SUM divided by the rank count (integers:
 * truncated toward zero). So for a given rank count every path (in-process, shared memory,
 * MPI) gives bitwise identical results, run after run.
 *
 * Buffers are (buffer, byte offset) pairs on the communicator's device; counts are
 * elements of `type` (any tsr_type_t but TSR_TYPE_BUFFER). In place means the same
 * storage and offset for send and recv (all_gather: send is recv's own slot, at
 * recv_offset + rank * count * size); any other overlap is INVALID_ARGUMENT.
 * ------------------------------------------------------------------------------------- */

/* MIN/MAX read integers as signed, UMIN/UMAX as unsigned (integers are signless, as in the
 * kernel IR); for floats UMIN/UMAX are INVALID_ARGUMENT. MIN/MAX of a NaN is NaN. */
typedef enum tsr_reduce_op_t TSR_ENUM_BASE {
  TSR_REDUCE_SUM = 1,
  TSR_REDUCE_PROD = 2,
  TSR_REDUCE_MIN = 3,
  TSR_REDUCE_MAX = 4,
  TSR_REDUCE_AVG = 5,
  TSR_REDUCE_UMIN = 6,
  TSR_REDUCE_UMAX = 7
} tsr_reduce_op_t;

/* "sum", "prod", ... ("invalid" otherwise). */
const char *tsr_reduce_op_name(tsr_reduce_op_t op);

/* An opaque rendezvous token (ncclUniqueId): made by one process, passed by the caller's
 * own means (a launcher, a store, MPI_Bcast) to every rank. */
#define TSR_COMM_UNIQUE_ID_BYTES 128
typedef struct tsr_comm_unique_id_t {
  char internal[TSR_COMM_UNIQUE_ID_BYTES];
} tsr_comm_unique_id_t;

/* How long a rank waits for its peers before the operation (and the stream's next
 * synchronize) fails with DEADLINE_EXCEEDED. A new communicator starts with
 * TESSERA_COMM_TIMEOUT_MS (milliseconds, 0 = wait forever) or else this default. */
#define TSR_COMM_DEFAULT_TIMEOUT_MS 300000

/* ncclCommInitAll: one communicator per device, all in this process, rank i on
 * devices[i]. The devices may belong to different backends (cpu:0 with vulkan:0); memory
 * that is not host-visible is staged through host memory. A device may appear only once.
 * out_comms receives `count` handles. */
tsr_status_t tsr_comm_create_local(uint32_t count, const tsr_device_t *devices,
                                   tsr_comm_t *out_comms);

/* ncclGetUniqueId: a fresh id for tsr_comm_create_rank. */
tsr_status_t tsr_comm_unique_id(tsr_comm_unique_id_t *out_id);

/* ncclCommInitRank: this process's rank of `size`, on `device`, meeting the others through
 * `id` over shared memory (all ranks on this node). Blocks until every rank has joined, or
 * DEADLINE_EXCEEDED after the default timeout. */
tsr_status_t tsr_comm_create_rank(tsr_device_t device, const tsr_comm_unique_id_t *id,
                                  uint32_t size, uint32_t rank, tsr_comm_t *out_comm);

/* A rank whose bytes move through a caller-supplied transport (hal_transport.h; Tessera's
 * MPI transport is runtime/include/tessera/comm_mpi.h). The communicator takes ownership
 * of `transport_ctx` (the table's destroy releases it), also when the call fails. */
tsr_status_t tsr_comm_create_with_transport(tsr_device_t device,
                                            const tsr_comm_transport_v1 *transport,
                                            void *transport_ctx, tsr_comm_t *out_comm);

/* ncclCommSplit: collective over `comm`; ranks with the same colour form a new
 * communicator, ordered by (key, old rank). colour TSR_COMM_SPLIT_NOCOLOR gives NULL. */
#define TSR_COMM_SPLIT_NOCOLOR (-1)
tsr_status_t tsr_comm_split(tsr_comm_t comm, int32_t color, int32_t key, tsr_comm_t *out_comm);

void tsr_comm_retain(tsr_comm_t comm);
/* Never blocks: each enqueued operation holds the communicator until it completes (a wait
 * here would deadlock a thread that drives every rank of an in-process group). */
void tsr_comm_release(tsr_comm_t comm);
tsr_status_t tsr_comm_rank(tsr_comm_t comm, uint32_t *out_rank);
tsr_status_t tsr_comm_size(tsr_comm_t comm, uint32_t *out_size);
/* The device of this rank (a new public reference: release it). */
tsr_status_t tsr_comm_device(tsr_comm_t comm, tsr_device_t *out_device);
/* "local", "shm", "mpi", "nccl", ...: how this rank's bytes move. Static string. */
tsr_status_t tsr_comm_transport_name(tsr_comm_t comm, const char **out_name);
/* See TSR_COMM_DEFAULT_TIMEOUT_MS; applies to operations enqueued after the call. */
tsr_status_t tsr_comm_set_timeout(tsr_comm_t comm, uint64_t timeout_ns);
/* ncclCommAbort: every pending and later operation of this rank fails with ABORTED and
 * its peers' fail too (they stop waiting for it); streams stay usable. */
tsr_status_t tsr_comm_abort(tsr_comm_t comm);

/* ncclAllReduce: recv = op over ranks of send; count elements each. */
tsr_status_t tsr_comm_all_reduce(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                 uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                 uint64_t count, tsr_type_t type, tsr_reduce_op_t op);
/* ncclAllGather: recv[r * count ...] = send of rank r (recv holds size * count). */
tsr_status_t tsr_comm_all_gather(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                 uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                 uint64_t count, tsr_type_t type);
/* ncclReduceScatter: recv = op over ranks of send[rank * count ...] (send holds
 * size * count). */
tsr_status_t tsr_comm_reduce_scatter(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                     uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                     uint64_t count, tsr_type_t type, tsr_reduce_op_t op);
/* ncclBroadcast: recv = send of `root`; send is only read on the root (NULL elsewhere). */
tsr_status_t tsr_comm_broadcast(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                uint64_t count, tsr_type_t type, uint32_t root);
/* ncclReduce: recv on `root` = op over ranks of send; recv is NULL elsewhere. */
tsr_status_t tsr_comm_reduce(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                             uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                             uint64_t count, tsr_type_t type, tsr_reduce_op_t op, uint32_t root);
/* ncclAlltoAll: recv[r * count ...] = send[rank * count ...] of rank r (both hold
 * size * count). Never in place. */
tsr_status_t tsr_comm_all_to_all(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t send,
                                 uint64_t send_offset, tsr_buffer_t recv, uint64_t recv_offset,
                                 uint64_t count, tsr_type_t type);
/* ncclSend / ncclRecv: point to point; the n-th send from a to b matches the n-th recv on b
 * from a, and both must agree on count and type. */
tsr_status_t tsr_comm_send(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t buffer,
                           uint64_t offset, uint64_t count, tsr_type_t type, uint32_t peer);
tsr_status_t tsr_comm_recv(tsr_comm_t comm, tsr_stream_t stream, tsr_buffer_t buffer,
                           uint64_t offset, uint64_t count, tsr_type_t type, uint32_t peer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_HAL_H_ */
