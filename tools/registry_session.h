// The device registry as the CLI uses it: built-in drivers plus plugins from
// TESSERA_DRIVER_PATH and each `--driver PATH` (hal_plugin.h), whose compiler targets join
// defaultTargets(); released on scope exit. A plugin named by --driver that is refused (a
// version mismatch, no entry symbol, a missing file) is an error naming it and the reason.
#pragma once

#include "backends/builtin_drivers.h"
#include "backends/plugin_targets.h"
#include "tessera/hal.hpp"

#include <string>
#include <vector>

namespace tessera::cli {

inline std::string takeMessage(tsr_status_t st) { return hal::Status::fromC(st).message(); }

class RegistrySession {
public:
  RegistrySession() = default;
  RegistrySession(const RegistrySession &) = delete;
  RegistrySession &operator=(const RegistrySession &) = delete;
  ~RegistrySession() {
    if (device)
      tsr_device_release(device);
    if (registry)
      tsr_registry_release(registry);
  }

  bool open(std::string *error, const std::vector<std::string> &drivers = {}) {
    if (tsr_status_t st = tsr_registry_create(&registry)) {
      *error = takeMessage(st);
      return false;
    }
    // Unavailable drivers are recorded in the registry, not errors.
    if (tsr_status_t st = tsr_registry_register_builtin_drivers(registry)) {
      if (tsr_status_code(st) != TSR_UNAVAILABLE) {
        *error = takeMessage(st);
        return false;
      }
      tsr_status_free(st);
    }
    if (tsr_status_t st = tsr_registry_load_plugins(registry, nullptr)) {
      *error = takeMessage(st);
      return false;
    }
    for (const std::string &path : drivers)
      if (!loadExplicit(path, error))
        return false;
    return addPluginTargets(registry, defaultTargets(), error);
  }

  /// Loads the plugin `path` names; false with "driver PATH is unavailable: REASON" when the
  /// registry refused it.
  bool loadExplicit(const std::string &path, std::string *error) {
    uint32_t before = 0, after = 0;
    tsr_status_free(tsr_registry_unavailable_count(registry, &before));
    if (tsr_status_t st = tsr_registry_load_plugins(registry, path.c_str())) {
      *error = takeMessage(st);
      return false;
    }
    tsr_status_free(tsr_registry_unavailable_count(registry, &after));
    if (after == before)
      return true;
    tsr_unavailable_t u = {};
    tsr_status_free(tsr_registry_unavailable(registry, after - 1, &u));
    *error = "driver " + path + " is unavailable: " + (u.reason ? u.reason : "?");
    return false;
  }

  bool openDevice(const std::string &name, std::string *error) {
    if (tsr_status_t st = tsr_registry_open_device(registry, name.c_str(), &device)) {
      *error = takeMessage(st);
      return false;
    }
    return true;
  }

  tsr_registry_t registry = nullptr;
  tsr_device_t device = nullptr;
};

} // namespace tessera::cli
