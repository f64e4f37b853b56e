// The device object: one opened driver device, its description (the limits the validation
// layer checks launches against) and the registry it came from (kept alive).
//
// Must never be destroyed while an object created on it lives: every such object holds an
// internal reference to its device.
#pragma once

#include "hal/src/object.h"
#include "hal/src/registry.h"
#include "tessera/hal_driver.h"

struct tsr_device_s final : tessera::hal::Handle<tsr_device_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Device;

  tsr_registry_s *registry = nullptr; // internal reference
  const tessera::hal::DriverRecord *driver = nullptr;
  tsr_drv_device_t handle = nullptr;
  tsr_device_info_t info = {};

  const tsr_driver_v1 &table() const { return driver->table; }

  void destroy();
};
