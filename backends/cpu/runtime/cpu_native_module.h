/* The "cpu-native" executable format: an in-process table of C kernel functions and their
 * metadata. Tests write these by hand; the CPU codegen (LLVM ORC JIT) fills the same struct
 * with the functions it compiled, so both run through one driver path.
 *
 * Pass it as tsr_executable_create(device, TSR_CPU_NATIVE_FORMAT, &module, sizeof(module),
 * &exe). The driver copies names and parameter tables; the functions must stay callable
 * while the executable lives. This header must compile as C99 and never change a field.
 *
 * Execution model: `fn` is called once per workgroup, possibly concurrently on several
 * threads, with the workgroup's id. The function loops over the work-items of its group
 * itself (local id 0 .. group_size-1 per dimension; global id = group_id * group_size +
 * local id). A barrier inside the kernel is the function's business (codegen splits loops
 * at barriers). `args[i]` points to the value of parameter i, as with cuLaunchKernel: a
 * buffer parameter's value is a `void*` to the first byte of the argument's view.
 */
#ifndef TESSERA_BACKENDS_CPU_RUNTIME_CPU_NATIVE_MODULE_H_
#define TESSERA_BACKENDS_CPU_RUNTIME_CPU_NATIVE_MODULE_H_

#include "backends/cpu/cpu_abi.h"
#include "tessera/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_CPU_NATIVE_FORMAT "cpu-native"
#define TSR_CPU_NATIVE_VERSION 1
/* Kernels built into the driver that call a vendor library; `data` is their names, separated
 * by spaces, commas or newlines, e.g. "blas.gemm.f32" (docs/hal.md, "Extern kernels"). */
#define TSR_CPU_EXTERN_FORMAT "extern"

/* What a kernel function learns about the workgroup it runs: one definition, in
 * backends/cpu/cpu_abi.h, shared with the codegen that produces these functions. */
typedef TsrCpuWgCtx tsr_cpu_launch_ctx;
typedef TsrCpuWgFn tsr_cpu_kernel_fn;

typedef struct tsr_cpu_native_kernel {
  const char *name;                 /* unique within the module */
  const tsr_kernel_param_t *params; /* param_count entries */
  uint32_t param_count;
  uint32_t required_workgroup_size[3]; /* all 0: any */
  uint32_t shared_memory_bytes;
  tsr_cpu_kernel_fn fn;
} tsr_cpu_native_kernel;

typedef struct tsr_cpu_native_module {
  uint32_t struct_size; /* sizeof(tsr_cpu_native_module) */
  uint32_t version;     /* TSR_CPU_NATIVE_VERSION */
  const tsr_cpu_native_kernel *kernels;
  uint32_t kernel_count;
} tsr_cpu_native_module;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_CPU_RUNTIME_CPU_NATIVE_MODULE_H_ */
