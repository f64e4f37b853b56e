/* The Level Zero driver's entry point: the hal_driver.h table for Level Zero GPUs (Intel),
 * running SPIR-V Kernel modules (backends/levelzero/levelzero_abi.h).
 *
 * The loader is opened with dlopen at driver_open ("libze_loader.so.1", or the path in
 * $TESSERA_LEVELZERO_LIBRARY); without it, when zeInit fails (a loader with no Level Zero
 * driver installed), or without a GPU, the driver reports UNAVAILABLE with the reason.
 */
#ifndef TESSERA_BACKENDS_LEVELZERO_RUNTIME_LEVELZERO_DRIVER_H_
#define TESSERA_BACKENDS_LEVELZERO_RUNTIME_LEVELZERO_DRIVER_H_

#include "tessera/hal_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

const tsr_driver_v1 *tsr_levelzero_driver(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_LEVELZERO_RUNTIME_LEVELZERO_DRIVER_H_ */
