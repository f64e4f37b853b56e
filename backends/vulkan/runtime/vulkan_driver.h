/* The Vulkan driver's entry point: the hal_driver.h table for Vulkan 1.2+ compute devices
 * (on this project's machines: Mesa lavapipe, a CPU implementation).
 *
 * The loader is opened with dlopen at driver_open ("libvulkan.so.1", or the path in
 * $TESSERA_VULKAN_LIBRARY); without it, or without a device, the driver reports UNAVAILABLE
 * with the reason. $TESSERA_VULKAN_VALIDATION=1 enables the Khronos validation layer; every
 * message it emits is printed to stderr and counted.
 */
#ifndef TESSERA_BACKENDS_VULKAN_RUNTIME_VULKAN_DRIVER_H_
#define TESSERA_BACKENDS_VULKAN_RUNTIME_VULKAN_DRIVER_H_

#include "tessera/hal_driver.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const tsr_driver_v1 *tsr_vulkan_driver(void);

/* Validation-layer messages (warnings and errors) seen in this process so far; tests assert
 * it stays 0. Also 0 when validation is off. */
uint64_t tsr_vulkan_validation_message_count(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_VULKAN_RUNTIME_VULKAN_DRIVER_H_ */
