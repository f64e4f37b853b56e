/* The CPU per-workgroup kernel ABI, shared by the two halves of the CPU backend: codegen
 * (backends/cpu/codegen) produces functions of this type, and the driver
 * (backends/cpu/runtime, format "cpu-native") calls them. Plain C, no LLVM, no HAL.
 *
 * Each kernel `@name` compiles to `void tsr_wg_<name>(const TsrCpuWgCtx *ctx, void **args)`,
 * called once per workgroup (possibly concurrently on several threads for different
 * groups). The function loops over the work-items of its group itself. args[i] points to
 * parameter i's storage: for a buffer, a `void*` holding the (already offset) base pointer;
 * for a scalar, its bytes (i1 as one byte, f16/bf16 as their 16-bit patterns).
 *
 * The subgroup size is fixed at compile time
 * (CpuCompileOptions::subgroupSize, reported in the kernel metadata), not read from here.
 * This header must compile as C99 and never change a field (append only: hand-written
 * cpu-native kernels may ignore the appended ones; the driver always fills them).
 */
#ifndef TESSERA_BACKENDS_CPU_CPU_ABI_H_
#define TESSERA_BACKENDS_CPU_CPU_ABI_H_

#include "backends/kernel_faults.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TsrCpuWgCtx {
  uint32_t group_id[3];   /* this workgroup */
  uint32_t num_groups[3]; /* the grid */
  uint32_t group_size[3]; /* work-items per workgroup, per dimension */
  void *shared_memory;    /* the kernel's shared_memory_bytes, 64-byte aligned, not zeroed */
  /* ---- kernel faults (docs/ir.md, "Faults"); appended, the driver fills them per launch */
  const uint64_t *arg_bytes; /* bytes of each parameter's buffer view, 0 for scalars (robust
                                and checked modes bound every access by it) */
  tsr_kernel_fault *fault;   /* the launch's record: checked-mode faults, and the deadline */
  /* Non-zero: the launch is past its deadline. A kernel reads it on loop back-edges, then
   * claims `fault` with TSR_FAULT_DEADLINE (if still free) and returns at once. */
  const volatile uint32_t *cancel;
} TsrCpuWgCtx;

typedef void (*TsrCpuWgFn)(const TsrCpuWgCtx *ctx, void **args);

#define TSR_CPU_WG_SYMBOL_PREFIX "tsr_wg_"

/* The subgroup width codegen emulates unless told otherwise (f32 lanes of AVX-512); the
 * driver reports it as the device's subgroup size. */
#define TSR_CPU_DEFAULT_SUBGROUP_SIZE 16

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_CPU_CPU_ABI_H_ */
