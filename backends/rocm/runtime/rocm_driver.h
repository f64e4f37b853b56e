/* The ROCm driver's entry point: the hal_driver.h table of AMD GPUs, through the HIP
 * module API loaded at run time with dlopen("libamdhip64.so", then .so.5 and .so.6; no HIP
 * header or library is needed to build). TESSERA_HIP_LIBRARY, when set, names another
 * library to load instead (the tests point it at a fake one).
 *
 * Register it with tsr_registry_register_driver(registry, tsr_rocm_driver()): without the
 * library or a device, that is UNAVAILABLE with the reason. Executables use the
 * "rocm" format of backends/gpu_module.h. The table is static and immutable; this
 * header must never expose the driver's internals.
 */
#ifndef TESSERA_BACKENDS_ROCM_RUNTIME_ROCM_DRIVER_H_
#define TESSERA_BACKENDS_ROCM_RUNTIME_ROCM_DRIVER_H_

#include "tessera/hal_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

const tsr_driver_v1 *tsr_rocm_driver(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_ROCM_RUNTIME_ROCM_DRIVER_H_ */
