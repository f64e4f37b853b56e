/* The CUDA driver's entry point: the hal_driver.h table of NVIDIA GPUs, through the CUDA
 * driver API loaded at run time with dlopen("libcuda.so.1") (no CUDA header or library is
 * needed to build). TESSERA_CUDA_LIBRARY, when set, names another library to load instead
 * (the tests point it at a fake libcuda).
 *
 * Register it with tsr_registry_register_driver(registry, tsr_cuda_driver()): without the
 * library, a working cuInit or a device, that is UNAVAILABLE with the reason. Executables
 * use the "cuda" format of backends/gpu_module.h. The table is static and immutable; this
 * header must never expose the driver's internals.
 */
#ifndef TESSERA_BACKENDS_CUDA_RUNTIME_CUDA_DRIVER_H_
#define TESSERA_BACKENDS_CUDA_RUNTIME_CUDA_DRIVER_H_

#include "tessera/hal_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

const tsr_driver_v1 *tsr_cuda_driver(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_CUDA_RUNTIME_CUDA_DRIVER_H_ */
