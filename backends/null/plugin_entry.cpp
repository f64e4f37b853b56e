// The plugin face of the null driver: the one symbol libtessera_null_driver.so exports.
//
// Every plugin has exactly this file; it must never do work at load time (no static
// constructors): the HAL calls tsr_driver_entry, then driver_open.
#include "backends/null/null_driver.h"

extern "C" TSR_DRIVER_EXPORT const tsr_driver_v1 *tsr_driver_entry(void) {
  return tsr_null_driver();
}
