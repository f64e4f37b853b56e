/* The OpenCL executable format and kernel ABI: the contract between the OpenCL C codegen
 * (backends/opencl/codegen) and the OpenCL driver (backends/opencl/runtime). Plain C99 plus
 * one inline C++ helper; no vendor header, no LLVM.
 *
 * Format TSR_OPENCL_FORMAT "opencl": a tsr_gpu_module (backends/gpu_module.h) whose image is
 * OpenCL C 1.2 source text (UTF-8, no NUL), fallback NULL, param_offsets NULL. The driver
 * builds it with TSR_OPENCL_BUILD_OPTIONS (and may cache the device binary).
 *
 * Kernel k of the module is the OpenCL C function named tsr_opencl_symbol(k.name) (the IR
 * name without '@', mangled so that it is a valid identifier that no OpenCL C keyword or
 * builtin can take). Its OpenCL C parameters, in order, are:
 *   - for each IR parameter i, in IR order:
 *       buffer<T>: three arguments: `__global uchar *base` (the whole cl_mem of the view's
 *                  buffer), `ulong offset` (the view's first byte within it) and `ulong bytes`
 *                  (the view's size in bytes). The kernel addresses element j at
 *                  base + offset + j * sizeof(T) and bounds-checks j against bytes / sizeof(T)
 *                  (robust and checked modes).
 *       scalar:    one argument by value: i1 as uchar (0 or 1), i8 char, i16 short, i32 int,
 *                  i64 long, f16 and bf16 as ushort (their 16 bits), f32 float, f64 double.
 *   - last: `__global uint *control`, TSR_OPENCL_CONTROL_WORDS words: word 0 the cancel flag
 *     (the host sets it non-zero to ask the kernel to stop at its next poll), words 1..14 the
 *     tsr_kernel_fault record (backends/kernel_faults.h), word 15 unused. The driver passes a
 *     zeroed one to every launch and reads the record after the launch has completed. Every
 *     kernel takes it, whatever its bounds mode (deadlines apply in every mode).
 *
 * Launch: global work size = grid * workgroup per dimension, local work size = workgroup, no
 * offset (so get_group_id / get_local_id are the IR's group_id / local_id).
 * Per-size programs: the generic source reads the work-group size through the macros
 * TSR_OPENCL_LOCAL_SIZE_0/1/2 and marks each kernel TSR_OPENCL_REQD_WORKGROUP, which its own
 * prelude defines as get_local_size(d) and nothing. A driver may build the same source once per
 * launch workgroup size X,Y,Z with TSR_OPENCL_BUILD_OPTIONS plus
 * `-D TSR_OPENCL_WORKGROUP_X=X -D TSR_OPENCL_WORKGROUP_Y=Y -D TSR_OPENCL_WORKGROUP_Z=Z`
 * (tessera::opencl::workgroupBuildOptions); the prelude then makes the sizes constants and every
 * kernel
 * __attribute__((reqd_work_group_size(X, Y, Z))), so that the index tests that depend on the
 * size (backends/opencl/codegen/oc_range.cpp) fold in the front end. Such a program may only
 * run launches of that workgroup size.
 * Private bytes: after a kernel that holds matrix tiles, the line
 * `// tsr_private_bytes SYMBOL N` gives the bytes of its private arrays per work-item. PoCL
 * keeps every work-item's private arrays of a workgroup on one thread's stack (a 32 KiB tile
 * in a workgroup of 256 overflowed it: SIGSEGV), so the driver refuses a launch whose
 * workgroup needs more than TSR_OPENCL_PRIVATE_BUDGET bytes of them.
 * Subgroups: OpenCL 1.2 has none, so the codegen gives each work-item a subgroup of its own
 * (subgroup size 1: docs/ir.md lets the target choose it); the device info says 1.
 */
#ifndef TESSERA_BACKENDS_OPENCL_OPENCL_ABI_H_
#define TESSERA_BACKENDS_OPENCL_OPENCL_ABI_H_

#define TSR_OPENCL_FORMAT "opencl"
/* The options of every clBuildProgram: OpenCL C 1.2, no fast-math, no contraction beyond
 * what the source's `#pragma OPENCL FP_CONTRACT OFF` allows, denormals kept; no warnings
 * (-w: PoCL's front end prints "N warnings generated." on the process's stderr for generated
 * code, e.g. under `tessera fuzz`; errors still reach the build log). */
#define TSR_OPENCL_BUILD_OPTIONS "-cl-std=CL1.2 -w"
#define TSR_OPENCL_CONTROL_WORDS 16u
/* Private-array bytes a workgroup may hold (see "Private bytes"). */
#define TSR_OPENCL_PRIVATE_BUDGET (4u << 20)
/* Arguments a buffer parameter takes (base, offset, bytes). */
#define TSR_OPENCL_BUFFER_ARGS 3u

#ifdef __cplusplus
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::opencl {

/// The clBuildProgram options of the per-size program for `workgroup` (see above).
inline std::string workgroupBuildOptions(const uint32_t workgroup[3]) {
  return std::string(TSR_OPENCL_BUILD_OPTIONS) +
         " -D TSR_OPENCL_WORKGROUP_X=" + std::to_string(workgroup[0]) +
         " -D TSR_OPENCL_WORKGROUP_Y=" + std::to_string(workgroup[1]) +
         " -D TSR_OPENCL_WORKGROUP_Z=" + std::to_string(workgroup[2]);
}

/// The OpenCL C name of kernel (or device function) `irName` (without '@'): "tsr_" + name
/// when it has no '.', else "tsrx_" + name with '.' as "_0" and '_' as "_1". Injective, and
/// never an OpenCL C keyword or builtin (those never start with "tsr").
inline std::string symbol(std::string_view irName) {
  if (irName.find('.') == std::string_view::npos)
    return "tsr_" + std::string(irName);
  std::string s = "tsrx_";
  for (char c : irName) {
    if (c == '.')
      s += "_0";
    else if (c == '_')
      s += "_1";
    else
      s += c;
  }
  return s;
}

} // namespace tessera::opencl
#endif

#endif /* TESSERA_BACKENDS_OPENCL_OPENCL_ABI_H_ */
