// The plugin face of the porting skeleton: the one symbol libtessera_null_driver.so exports,
// bringing the null driver and the null target (hal_plugin.h). The HAL checks the versions
// recorded here against its own before it calls anything else.
//
// Every plugin has exactly this file; it must never do work at load time (no static
// constructors): the HAL calls tsr_plugin_entry, then driver(), then driver_open; the
// compiler layer calls create_target.
#include "backends/null/null_driver.h"
#include "backends/null/null_target.h"
#include "tessera/hal_plugin.h"

namespace {

const tsr_driver_v1 *driver(const tsr_plugin_host_v1 *) { return tsr_null_driver(); }

void *createTarget(void *) { return tessera::null::makeTarget().release(); }

const tsr_plugin_v1 kPlugin = {
    sizeof(tsr_plugin_v1), TSR_PLUGIN_ABI_VERSION, TSR_TARGET_INTERFACE_VERSION, "null", driver,
    createTarget,
};

} // namespace

extern "C" TSR_DRIVER_EXPORT const tsr_plugin_v1 *tsr_plugin_entry(void) { return &kPlugin; }
