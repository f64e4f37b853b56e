/* A test plugin with the `tsr_plugin_entry` face (hal_plugin.h), compiled several times with
 * different versions to prove the loader's checks (plugin_version_test.cpp):
 *   PLUGIN_NAME               the backend name ("vplug")
 *   PLUGIN_DRIVER_MAJOR       the driver ABI major it claims (default: the header's)
 *   PLUGIN_TARGET_INTERFACE   the Target interface version it claims (default 0: no Target)
 *   PLUGIN_WRAPS              a backend whose registered table it re-registers under its own
 *                             name (through the host's find_driver), instead of the ABI 1.0
 *                             driver of old_minor_plugin.c
 * Written in C99: the plugin contract serves C plugins. Its create_target returns NULL (a C
 * plugin cannot build a C++ Target); the loader never calls it.
 */
#include "tessera/hal_plugin.h"

#include <string.h>

#ifndef PLUGIN_DRIVER_MAJOR
#define PLUGIN_DRIVER_MAJOR TSR_DRIVER_ABI_MAJOR
#endif
#ifndef PLUGIN_TARGET_INTERFACE
#define PLUGIN_TARGET_INTERFACE 0
#endif

/* Without PLUGIN_WRAPS the driver is old_minor_plugin.c's (linked in, ABI 1.0 size), renamed:
 * the library then exports both entry symbols, and the loader must prefer tsr_plugin_entry. */
const tsr_driver_v1 *tsr_driver_entry(void);

static tsr_driver_v1 table;

static const tsr_driver_v1 *make_driver(const tsr_plugin_host_v1 *host) {
  memset(&table, 0, sizeof(table));
#ifdef PLUGIN_WRAPS
  {
    const tsr_driver_v1 *wrapped = host->find_driver(host->context, PLUGIN_WRAPS);
    if (!wrapped)
      return NULL;
    memcpy(&table, wrapped,
           wrapped->struct_size < sizeof(table) ? wrapped->struct_size : sizeof(table));
  }
  table.struct_size = (uint32_t)sizeof(table);
#else
  (void)host;
  memcpy(&table, tsr_driver_entry(), TSR_DRIVER_V1_0_SIZE);
#endif
  table.abi_major = PLUGIN_DRIVER_MAJOR;
  table.abi_minor = TSR_DRIVER_ABI_MINOR;
  table.name = PLUGIN_NAME;
  return &table;
}

#if PLUGIN_TARGET_INTERFACE
static void *create_target(void *targets) {
  (void)targets;
  return NULL;
}
#endif

static tsr_plugin_v1 plugin;

TSR_DRIVER_EXPORT const tsr_plugin_v1 *tsr_plugin_entry(void) {
  memset(&plugin, 0, sizeof(plugin));
  plugin.struct_size = (uint32_t)sizeof(plugin);
  plugin.plugin_abi = TSR_PLUGIN_ABI_VERSION;
  plugin.target_interface = PLUGIN_TARGET_INTERFACE;
  plugin.name = PLUGIN_NAME;
  plugin.driver = make_driver;
#if PLUGIN_TARGET_INTERFACE
  plugin.create_target = create_target;
#endif
  return &plugin;
}
