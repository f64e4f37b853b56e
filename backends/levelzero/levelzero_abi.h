/* The Level Zero executable format and kernel ABI: the contract between the SPIR-V Kernel
 * flavour codegen (the shared SPIR-V lowering, target `levelzero`, alias `spirv-kernel`) and
 * the Level Zero driver (backends/levelzero/runtime). Plain C99; no vendor header, no LLVM.
 *
 * Format TSR_LEVELZERO_FORMAT "levelzero": a tsr_gpu_module (backends/gpu_module.h) whose
 * image is SPIR-V words (Kernel flavour: Addresses, Kernel, Int64; Physical64 / OpenCL
 * memory model; SPIR-V 1.2, valid for `spirv-val --target-env opencl2.2`), fallback NULL,
 * param_offsets NULL. The driver hands it to zeModuleCreate (ZE_MODULE_FORMAT_IL_SPIRV).
 *
 * Kernel k is the Kernel entry point named as the IR kernel without '@'. Its parameters
 * (OpFunctionParameter), in order:
 *   - for each IR parameter i, in IR order:
 *       buffer<T>: three: a CrossWorkgroup pointer to bytes (the allocation's base), a 64-bit
 *                  byte offset of the view, a 64-bit byte size of the view (as OpenCL's,
 *                  backends/opencl/opencl_abi.h);
 *       scalar:    one by value: i1 as an 8-bit integer (0 or 1), i8/i16/i32/i64 as integers
 *                  of their width, f16 and bf16 as 16-bit integers (their bits), f32, f64.
 *   - then three 32-bit integers: the IR workgroup size x, y, z. The driver dispatches a 1-D
 *     workgroup of x*y*z work-items (zeKernelSetGroupSize(x*y*z, 1, 1)) and the kernel
 *     rebuilds the 3-D local ids from the linear one, so that subgroups are runs of
 *     consecutive linear local ids whatever the workgroup's shape (docs/ir.md); the grid
 *     stays 3-D (group ids are native).
 *   - last: a CrossWorkgroup pointer to TSR_LEVELZERO_CONTROL_WORDS 32-bit words: word 0 the
 *     cancel flag, words 1..14 the tsr_kernel_fault record, word 15 unused (as OpenCL's).
 */
#ifndef TESSERA_BACKENDS_LEVELZERO_LEVELZERO_ABI_H_
#define TESSERA_BACKENDS_LEVELZERO_LEVELZERO_ABI_H_

#define TSR_LEVELZERO_FORMAT "levelzero"
#define TSR_LEVELZERO_CONTROL_WORDS 16u
#define TSR_LEVELZERO_BUFFER_ARGS 3u
#define TSR_LEVELZERO_WORKGROUP_ARGS 3u

#endif /* TESSERA_BACKENDS_LEVELZERO_LEVELZERO_ABI_H_ */
