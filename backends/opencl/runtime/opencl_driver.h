/* The OpenCL driver's entry point: the hal_driver.h table over OpenCL 1.2 devices through the
 * ICD loader (on this project's machines: PoCL's CPU device).
 *
 * The loader is opened with dlopen at driver_open ("libOpenCL.so.1", or the path in
 * $TESSERA_OPENCL_LIBRARY); without it, or without a platform, the driver reports
 * UNAVAILABLE with the reason. Executables are TSR_OPENCL_FORMAT modules
 * (backends/opencl/opencl_abi.h); their device binaries are cached on disk
 * ($TESSERA_CACHE_DIR/opencl-binaries, docs/backends.md "OpenCL").
 */
#ifndef TESSERA_BACKENDS_OPENCL_RUNTIME_OPENCL_DRIVER_H_
#define TESSERA_BACKENDS_OPENCL_RUNTIME_OPENCL_DRIVER_H_

#include "tessera/hal_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

const tsr_driver_v1 *tsr_opencl_driver(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_OPENCL_RUNTIME_OPENCL_DRIVER_H_ */
