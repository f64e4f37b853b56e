/* The null driver: the porting skeleton. It enumerates one device, "null:0", that can be
 * opened and described; every other entry point answers UNIMPLEMENTED
 * ("null driver: <entry> not implemented").
 *
 * Built twice: into the static library tessera_null (call tsr_null_driver()) and into the
 * plugin libtessera_null_driver.so (found through TESSERA_DRIVER_PATH). Never put real
 * behaviour here: a port copies this folder and replaces the stubs (README.md).
 */
#ifndef TESSERA_BACKENDS_NULL_NULL_DRIVER_H_
#define TESSERA_BACKENDS_NULL_NULL_DRIVER_H_

#include "tessera/hal_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

const tsr_driver_v1 *tsr_null_driver(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_BACKENDS_NULL_NULL_DRIVER_H_ */
