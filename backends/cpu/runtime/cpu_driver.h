/* The CPU driver's entry point: the hal_driver.h table of the in-process CPU device.
 *
 * Register it with tsr_registry_register_driver(registry, tsr_cpu_driver()). The table is
 * static and immutable; this header must never expose the driver's internals.
 */
#ifndef TESSERA_BACKENDS_CPU_RUNTIME_CPU_DRIVER_H_
#define TESSERA_BACKENDS_CPU_RUNTIME_CPU_DRIVER_H_

#include "tessera/hal_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

const tsr_driver_v1 *tsr_cpu_driver(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_CPU_RUNTIME_CPU_DRIVER_H_ */
