// The registry object: the drivers it holds, the devices they enumerate and the backends
// that are unavailable here, plus the one helper through which the HAL calls a driver.
//
// A DriverRecord is owned by its registry and never moves; devices point into it. Nothing
// here may call a driver entry point except through callDriver().
#pragma once

#include "hal/src/object.h"
#include "hal/src/validation.h"
#include "tessera/hal_driver.h"
#include "tessera/hal_plugin.h"

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct tsr_registry_s;

namespace tessera::hal {

/// One registered driver. `table` is a full current-size copy of the driver's table in
/// which every field beyond the driver's struct_size is zero, so "absent" is simply NULL.
struct DriverRecord {
  tsr_driver_v1 table = {};
  uint32_t declaredSize = 0;
  std::string name;
  std::string origin; // "built-in" or the plugin path
  tsr_drv_driver_t handle = nullptr;
};

struct DeviceRecord {
  DriverRecord *driver;
  uint32_t index;
  tsr_device_info_t info;
};

struct UnavailableRecord {
  std::string backend;
  std::string reason;
};

/// A plugin the loader accepted (hal_plugin.h): its path and the record it exported.
struct PluginRecord {
  std::string path;
  const tsr_plugin_v1 *plugin;
};

/// UNIMPLEMENTED for an entry point the driver does not provide.
tsr_status_t absentEntry(const char *call, const DriverRecord &driver, const char *entry);

/// Calls `fn(args...)` of `driver`, or reports it absent; errors are prefixed with `call`.
template <typename Fn, typename... Args>
tsr_status_t callDriverEntry(const char *call, const DriverRecord &driver, const char *entry, Fn fn,
                             Args... args) {
  if (!fn)
    return absentEntry(call, driver, entry);
  return annotate(call, fn(args...));
}

#define TSR_CALL_DRIVER(call, record, entry, ...)                                                  \
  ::tessera::hal::callDriverEntry(call, record, #entry, (record).table.entry, __VA_ARGS__)

/// Validates and registers `table`; on failure returns the reason and registers nothing.
/// `reason_out` receives the message without the call prefix (for unavailable records).
tsr_status_t registerDriver(tsr_registry_s *registry, const tsr_driver_v1 *table,
                            const std::string &origin, const char *call, std::string *backend_out,
                            std::string *reason_out);

void addUnavailable(tsr_registry_s *registry, std::string backend, std::string reason);

} // namespace tessera::hal

struct tsr_registry_s final : tessera::hal::Handle<tsr_registry_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Registry;

  std::mutex mutex; // guards the four lists
  std::vector<std::unique_ptr<tessera::hal::DriverRecord>> drivers;
  std::vector<tessera::hal::DeviceRecord> devices;
  std::deque<tessera::hal::UnavailableRecord> unavailable; // stable addresses
  std::deque<tessera::hal::PluginRecord> plugins;          // stable addresses

  void destroy();
};
