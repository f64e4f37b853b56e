// Running a kernel by its launch spec on a HAL device, and checking the results against the
// fp64 reference interpreter under the op table's precision budgets (`tessera run --check`).
#pragma once

#include "ir/interp/launch.h"
#include "tessera/hal.h"
#include "tessera/program.h"

#include <optional>
#include <string>
#include <vector>

namespace tessera {

/// Uploads `data`'s buffers, launches `kernel` on a new stream of `device`, waits, and
/// downloads every buffer into `outputs` (same order as data.buffers). `timeoutNs`: the
/// launch's deadline (tsr_stream_set_timeout); unset: the stream's default. A kernel fault
/// or deadline fails the run with the status message.
bool runOnDevice(tsr_device_t device, const ProgramKernel &kernel, const ir::LaunchData &data,
                 std::vector<ir::HostBuffer> &outputs, double *launchMs, std::string *error,
                 std::optional<uint64_t> timeoutNs = std::nullopt);

/// The ULP budget a kernel's float outputs are judged by: 1 (the final rounding) plus the
/// full-profile budget of every distinct float op kind the kernel (and the functions it
/// calls) uses. An element passes when its ULP error is within the budget, or when its
/// absolute error is within the budget measured in ULPs of the buffer's largest reference
/// magnitude (cancellation, e.g. 1 + erf(x) near -1, makes elementwise ULPs meaningless).
/// A float subgroup_add adds subgroupSize - 1 ULPs: devices sum the lanes in any order.
double kernelUlpBudget(const ir::Module &m, const ir::Function &kernel, uint32_t subgroupSize);

struct BufferCheck {
  std::string param;
  bool passed = true;
  double maxUlp = 0;  // worst elementwise ULP error (floats)
  double maxAbs = 0;  // worst absolute error
  int64_t firstBad = -1;
  std::string detail; // for the first failing element: index, got, want
};

/// Compares every writable buffer; integers must match exactly, NaN matches NaN.
std::vector<BufferCheck> checkOutputs(const ir::Function &kernel, const ir::LaunchData &reference,
                                      const std::vector<ir::HostBuffer> &got, double ulpBudget);

} // namespace tessera
