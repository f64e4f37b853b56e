/* The drivers compiled into this build, registered by one explicit call (no static
 * constructors). Front ends (tools/, runtime/) call this after tsr_registry_create and then
 * tsr_registry_load_plugins for the rest.
 *
 * This is the one file allowed to name several backends; it must never contain driver
 * code. The null driver is not built in (it would list "null:0" on every machine): load
 * libtessera_null_driver.so or register tsr_null_driver() explicitly.
 */
#ifndef TESSERA_BACKENDS_BUILTIN_DRIVERS_H_
#define TESSERA_BACKENDS_BUILTIN_DRIVERS_H_

#include "tessera/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers every built-in driver. A driver that is unavailable here is recorded in the
 * registry's unavailable list and is not an error; anything else is returned. */
tsr_status_t tsr_registry_register_builtin_drivers(tsr_registry_t registry);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_BUILTIN_DRIVERS_H_ */
