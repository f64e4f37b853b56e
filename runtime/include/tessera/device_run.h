// Running a kernel by its launch spec on a HAL device. Checking the results against the fp64
// reference interpreter is output_check.h (`tessera run --check`).
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

} // namespace tessera
