// The executable and kernel objects. The HAL keeps its own copy of every kernel's
// signature (taken when the executable is created), so launches are validated against
// what the HAL read, never re-asked of the driver.
//
// A kernel holds an internal reference to its executable; the executable's kernel table
// never changes after creation (kernels point into it).
#pragma once

#include "hal/src/device.h"
#include "hal/src/object.h"

#include <string>
#include <vector>

namespace tessera::hal {

struct KernelEntry {
  std::string name;
  std::vector<std::string> paramNames; // "" when the driver gave none
  std::vector<tsr_kernel_param_t> params;
  tsr_kernel_info_t info = {}; // points into the members above
  tsr_drv_kernel_t handle = nullptr;
};

} // namespace tessera::hal

struct tsr_executable_s final : tessera::hal::Handle<tsr_executable_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Executable;

  tsr_device_s *device = nullptr; // internal reference
  tsr_drv_executable_t handle = nullptr;
  std::vector<tessera::hal::KernelEntry> kernels;

  void destroy();
};

struct tsr_kernel_s final : tessera::hal::Handle<tsr_kernel_s> {
  static constexpr tessera::hal::ObjectKind kKind = tessera::hal::ObjectKind::Kernel;

  tsr_executable_s *executable = nullptr; // internal reference
  const tessera::hal::KernelEntry *entry = nullptr;

  tsr_device_s *device() const { return executable->device; }

  void destroy();
};
