/* The executable formats of the compiled backends: what a target (backends/target.h) hands
 * to its driver through tsr_executable_create(device, format, &module, sizeof(module), &exe),
 * with a tsr_gpu_module (the name is historical: the CPU's object travels in it too). Each
 * format is named as its backend; the drivers still accept the older names.
 *
 *   TSR_CPU_FORMAT "cpu": image = a relocatable x86-64 ELF object defining
 *       tsr_wg_<kernel> per kernel (backends/cpu/cpu_abi.h); the CPU driver JIT-links it.
 *   TSR_VULKAN_FORMAT "vulkan" (was "vulkan-spirv"): image = SPIR-V words (Shader flavour,
 *       one GLCompute entry point per kernel, named as the kernel without '@').
 *   TSR_CUDA_FORMAT "cuda": image = cubin (may be absent), fallback = NUL-terminated PTX
 *       text (always present; the driver JIT-compiles it when the cubin is absent or does
 *       not load).
 *   TSR_ROCM_FORMAT "rocm" (was "rocm-hsaco"): image = AMD code object (ELF, code object v4).
 *
 * The driver copies everything it keeps; `data` may be freed after the call. This header
 * is C99 and is shared by codegen and runtime halves; it never names a vendor API.
 *
 * Kernel ABI, Vulkan (see docs/backends.md):
 *   - buffer parameter i: descriptor set 0, binding i (a storage buffer; the driver binds
 *     the argument's view with offset and range, through push descriptors);
 *   - scalar parameters: one push-constant block; param_offsets[i] is the byte offset of
 *     scalar parameter i in it. i1/i8/i16/f16/bf16/i32/f32 occupy a 32-bit slot (the value's
 *     bits in the low bits, zero-extended), i64/f64 an 8-byte slot aligned to 8;
 *     push_constant_bytes is the block's size;
 *   - workgroup size: specialization constants 0, 1, 2 (x, y, z); the module dispatches
 *     them as a 1-D workgroup of x*y*z work-items (so x*y*z <= maxComputeWorkGroupSize[0]);
 *   - control buffer: when control_bindings[k] != TSR_GPU_NO_CONTROL, kernel k reads a
 *     storage buffer at that binding (set 0, after the parameters): word 0 is a cancel flag
 *     the driver sets when the launch passes its deadline, words 1..14 the tsr_kernel_fault
 *     record (backends/kernel_faults.h) the kernel writes; the driver gives every launch a
 *     zeroed one and reads the record when the launch has completed.
 * Kernel ABI, CPU: backends/cpu/cpu_abi.h; param_offsets is NULL, image_size > 0.
 * Kernel ABI, CUDA and ROCm: the kernel's parameters in order, buffers as global pointers
 * to the first byte of the view, scalars by value (i1 as i8, f16/bf16 as their 16 bits);
 * param_offsets is NULL.
 */
#ifndef TESSERA_BACKENDS_GPU_MODULE_H_
#define TESSERA_BACKENDS_GPU_MODULE_H_

#include "tessera/hal.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_CPU_FORMAT "cpu"
#define TSR_VULKAN_FORMAT "vulkan"
#define TSR_CUDA_FORMAT "cuda"
#define TSR_ROCM_FORMAT "rocm"
/* The older names of the same formats (accepted by the drivers, never produced). */
#define TSR_VULKAN_FORMAT_OLD "vulkan-spirv"
#define TSR_ROCM_FORMAT_OLD "rocm-hsaco"
/* Compatibility spelling of TSR_VULKAN_FORMAT. */
#define TSR_VULKAN_SPIRV_FORMAT TSR_VULKAN_FORMAT
#define TSR_GPU_MODULE_VERSION 1

typedef struct tsr_gpu_kernel {
  const char *name;                 /* unique within the module; the entry point / symbol */
  const tsr_kernel_param_t *params; /* param_count entries */
  uint32_t param_count;
  const uint32_t *param_offsets;    /* Vulkan: push-constant offset per parameter (buffers:
                                       unused, 0); NULL elsewhere */
  uint32_t push_constant_bytes;     /* Vulkan: size of the push-constant block; else 0 */
  uint32_t shared_memory_bytes;     /* static workgroup-shared memory */
} tsr_gpu_kernel;

typedef struct tsr_gpu_module {
  uint32_t struct_size; /* sizeof(tsr_gpu_module) */
  uint32_t version;     /* TSR_GPU_MODULE_VERSION */
  const void *image;    /* format-specific, see above; may be NULL only for "cuda" */
  size_t image_size;
  const void *fallback; /* "cuda": PTX text (NUL-terminated); else NULL */
  size_t fallback_size; /* bytes including the NUL */
  const tsr_gpu_kernel *kernels;
  uint32_t kernel_count;
  /* Appended (a module whose struct_size ends before it has none): per kernel, the binding
   * of its control buffer or TSR_GPU_NO_CONTROL; NULL: no kernel has one. Vulkan only. */
  const uint32_t *control_bindings;
} tsr_gpu_module;

#define TSR_GPU_NO_CONTROL 0xffffffffu

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_GPU_MODULE_H_ */
