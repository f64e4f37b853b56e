// The device registry as the CLI uses it: built-in drivers plus plugins from
// TESSERA_DRIVER_PATH, released on scope exit.
#pragma once

#include "backends/builtin_drivers.h"
#include "tessera/hal.hpp"

#include <string>

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

  bool open(std::string *error) {
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
    return true;
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
