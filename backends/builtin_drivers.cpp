// Registration of the built-in drivers (see builtin_drivers.h).
//
// Must never hold driver code or register anything implicitly at load time.
#include "backends/builtin_drivers.h"

#include "backends/cpu/runtime/cpu_driver.h"
#include "backends/cuda/runtime/cuda_driver.h"
#include "backends/levelzero/runtime/levelzero_driver.h"
#include "backends/opencl/runtime/opencl_driver.h"
#include "backends/rocm/runtime/rocm_driver.h"
#include "backends/vulkan/runtime/vulkan_driver.h"

extern "C" tsr_status_t tsr_registry_register_builtin_drivers(tsr_registry_t registry) {
  const tsr_driver_v1 *builtins[] = {tsr_cpu_driver(), tsr_vulkan_driver(), tsr_cuda_driver(),
                                     tsr_rocm_driver(), tsr_opencl_driver(),
                                     tsr_levelzero_driver()};
  for (const tsr_driver_v1 *driver : builtins) {
    tsr_status_t status = tsr_registry_register_driver(registry, driver);
    if (tsr_status_code(status) == TSR_UNAVAILABLE) {
      tsr_status_free(status); // recorded as unavailable by the registry
      continue;
    }
    if (status)
      return status;
  }
  return nullptr;
}
