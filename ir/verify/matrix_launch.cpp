// The launch rule of matrix kernels (see matrix_launch.h). Never looks at a device: callers
// pass the subgroup size they launch with.
#include "ir/verify/matrix_launch.h"

namespace tessera::ir {

std::string matrixLaunchError(const std::string &kernelName, bool usesMatrix, uint64_t workItems,
                              uint32_t subgroupSize) {
  if (!usesMatrix || subgroupSize == 0 || workItems % subgroupSize == 0)
    return {};
  return "kernel @" + kernelName + " uses matrix ops: the workgroup has " +
         std::to_string(workItems) + " work-items, not a multiple of the subgroup size " +
         std::to_string(subgroupSize);
}

std::string matrixLaunchError(const Function &kernel, uint64_t workItems, uint32_t subgroupSize) {
  if (subgroupSize == 0 || workItems % subgroupSize == 0)
    return {}; // no walk when the shape is fine anyway
  return matrixLaunchError(kernel.name, usesMatrixOps(kernel), workItems, subgroupSize);
}

} // namespace tessera::ir
