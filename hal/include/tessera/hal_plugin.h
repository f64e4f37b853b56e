/* The Tessera plugin contract: one .so brings a backend's two halves, a HAL driver
 * (hal_driver.h) and, optionally, a compiler Target (backends/target.h), through one entry
 * symbol, `tsr_plugin_entry`. The HAL loads plugins (tsr_registry_load_plugins: the
 * TESSERA_DRIVER_PATH variable or a `--driver PATH`), checks both versions, registers the
 * driver and keeps the plugin; the compiler layer then asks the registry for the plugins it
 * accepted (tsr_registry_plugin) and adds their targets (tessera::addPluginTargets).
 *
 * Versions checked at load, each refusal an unavailable record naming both versions:
 * - the plugin record itself (TSR_PLUGIN_ABI_VERSION, struct_size: fields only appended);
 * - the driver table: TSR_DRIVER_ABI_MAJOR must match (hal_driver.h);
 * - the Target: a C++ interface, so TSR_TARGET_INTERFACE_VERSION must be equal. It is kept
 *   here, not in backends/target.h, so the HAL can refuse the whole plugin before any of its
 *   code runs; backends/target.h says to bump it with every change to the Target class or
 *   to the ir/ types its methods take. A Target plugin must also be built with the same C++
 *   compiler family and standard library as the Tessera it loads into.
 *
 * Older plugins that export only `tsr_driver_entry` (hal_driver.h) still load, driver only.
 * This header must compile as C99 and as C++; it never includes a C++ header.
 */
#ifndef TESSERA_HAL_PLUGIN_H_
#define TESSERA_HAL_PLUGIN_H_

#include "tessera/hal_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The plugin record's own version: bumped when a field's meaning changes (never so far). */
#define TSR_PLUGIN_ABI_VERSION 1
/* The version of the C++ Target interface (backends/target.h) this HAL's compiler layer
 * implements. 1: name ... externGemmLibrary, deviceOptions, cacheKey, compile, rawOutput,
 * summary, over ir::Module as of Tessera 0.1. 2: TargetOptions::workgroupSize and
 * Target::workgroupSizeOption. */
#define TSR_TARGET_INTERFACE_VERSION 2

/* Name of the function a plugin exports: `const tsr_plugin_v1 *tsr_plugin_entry(void)`. */
#define TSR_PLUGIN_ENTRY_SYMBOL "tsr_plugin_entry"

/* What the HAL offers a plugin while it builds its driver table. */
typedef struct tsr_plugin_host_v1 {
  uint32_t struct_size;
  /* The table of a driver already registered in the loading registry (built-in drivers are
   * registered before plugins load), or NULL. For layering drivers (a plugin that wraps or
   * instruments another backend); a vendor driver never needs it. */
  const tsr_driver_v1 *(*find_driver)(void *context, const char *backend);
  void *context;
} tsr_plugin_host_v1;

typedef struct tsr_plugin_v1 {
  uint32_t struct_size;      /* sizeof(tsr_plugin_v1) as compiled by the plugin */
  uint32_t plugin_abi;       /* TSR_PLUGIN_ABI_VERSION as compiled by the plugin */
  uint32_t target_interface; /* TSR_TARGET_INTERFACE_VERSION as compiled; 0: no Target */
  const char *name;          /* the backend name, for messages ("mydev") */
  /* The driver table (hal_driver.h), or NULL with no driver. Called once per load, after
   * the versions were checked; may return NULL when the device cannot be driven here. */
  const tsr_driver_v1 *(*driver)(const tsr_plugin_host_v1 *host);
  /* A new `tessera::Target *` (ownership passes to the caller, which deletes it through
   * its virtual destructor), or NULL. `targets` is the caller's `tessera::TargetRegistry *`
   * (a wrapping target may look up another there). NULL when target_interface is 0. */
  void *(*create_target)(void *targets);
} tsr_plugin_v1;

typedef const tsr_plugin_v1 *(*tsr_plugin_entry_fn)(void);

/* A plugin the registry accepted (its versions matched; its driver, if any, registered). */
typedef struct tsr_plugin_record_t {
  const char *path;            /* as loaded */
  const tsr_plugin_v1 *plugin; /* the plugin's record; valid for the life of the process */
} tsr_plugin_record_t;

/* The accepted plugins of `registry`, in load order. Strings stay valid while it lives. */
tsr_status_t tsr_registry_plugin_count(tsr_registry_t registry, uint32_t *out_count);
tsr_status_t tsr_registry_plugin(tsr_registry_t registry, uint32_t index,
                                 tsr_plugin_record_t *out_record);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_HAL_PLUGIN_H_ */
