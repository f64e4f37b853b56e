/* Kernel faults: the modes a kernel can be compiled in, and the record a kernel writes when a
 * work-item faults, shared by the codegens (which emit the checks and the stores) and the
 * drivers (which read the record after the launch and turn it into a tsr_status_t).
 *
 * The record is made of 32-bit words only, so SPIR-V can write it as a uint array and a CPU
 * kernel as plain stores; the first faulting work-item claims it with an atomic
 * compare-exchange of `kind` from TSR_FAULT_NONE, then fills the other fields; nobody reads
 * them before the launch has completed. Plain C99, no LLVM, no HAL: every backend may include
 * it. Must never change the meaning or position of a field (append, and bump nothing else).
 */
#ifndef TESSERA_BACKENDS_KERNEL_FAULTS_H_
#define TESSERA_BACKENDS_KERNEL_FAULTS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an out-of-bounds buffer or shared-memory access does (docs/ir.md, "Faults").
 *   UNCHECKED: undefined (fastest; only for kernels known to be in bounds).
 *   ROBUST:    loads read 0, stores and atomics are dropped (an atomic returns 0), like
 *              Vulkan's robustBufferAccess2. The default of `tessera run` and the plugin.
 *   CHECKED:   as ROBUST, and the first fault of the launch (out-of-bounds access, integer
 *              division by zero or MIN / -1, a `for` step <= 0) is recorded and reported as
 *              the launch's status, like compute-sanitizer. */
typedef enum tsr_bounds_mode {
  TSR_BOUNDS_UNCHECKED = 0,
  TSR_BOUNDS_ROBUST = 1,
  TSR_BOUNDS_CHECKED = 2
} tsr_bounds_mode;

typedef enum tsr_fault_kind {
  TSR_FAULT_NONE = 0,
  TSR_FAULT_LOAD_OUT_OF_BOUNDS = 1,   /* load from a buffer */
  TSR_FAULT_STORE_OUT_OF_BOUNDS = 2,  /* store to a buffer */
  TSR_FAULT_ATOMIC_OUT_OF_BOUNDS = 3, /* atomic on a buffer */
  TSR_FAULT_SHARED_OUT_OF_BOUNDS = 4, /* load, store or atomic on a shared array */
  TSR_FAULT_DIVISION_BY_ZERO = 5,     /* integer div or rem by 0 */
  TSR_FAULT_DIVISION_OVERFLOW = 6,    /* signed integer MIN / -1 or MIN rem -1 */
  TSR_FAULT_LOOP_STEP = 7,            /* a `for` whose step is <= 0 at run time */
  TSR_FAULT_DEADLINE = 8,             /* the launch ran past its deadline and was cancelled */
  TSR_FAULT_LOOP_LIMIT = 9,           /* the device ended a loop early: an implementation limit
                                         (llvmpipe: 65535 loop iterations per work-item) */
  TSR_FAULT_OUT_OF_MEMORY = 10,       /* a workgroup could not allocate its working memory (the
                                         CPU's matrix tiles); count = the bytes asked for */
  TSR_FAULT_DIVERGENT_BARRIER = 11    /* the work-items of a workgroup went different ways
                                         around a barrier: at the if / for / while (OpenCL:
                                         index = how many found its condition true) or at the
                                         barrier (CPU: index = how many reached it); count =
                                         the workgroup size */
} tsr_fault_kind;

/* 14 words (56 bytes). */
typedef struct tsr_kernel_fault {
  uint32_t kind;                /* tsr_fault_kind; written last by nobody: claimed first */
  uint32_t line, column;        /* the faulting op in the kernel's source (0 if unknown) */
  uint32_t param;               /* buffer: kernel parameter index; shared: UINT32_MAX */
  uint32_t index_lo, index_hi;  /* the element index, as a two's-complement i64 */
  uint32_t count_lo, count_hi;  /* elements in the buffer view or shared array */
  uint32_t local_id[3];         /* the faulting work-item */
  uint32_t group_id[3];
} tsr_kernel_fault;

#define TSR_KERNEL_FAULT_WORDS 14u

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_KERNEL_FAULTS_H_ */
