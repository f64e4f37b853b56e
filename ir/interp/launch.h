// Materialises a kernel's launch spec: deterministic inputs for every argument, and a
// digest of the outputs for tools (`tessera interp`, later `tessera run`).
#pragma once

#include "ir/core/ir.h"
#include "ir/interp/interpreter.h"

#include <string>
#include <vector>

namespace tessera::ir {

struct LaunchData {
  LaunchDims dims;
  std::vector<HostBuffer> buffers; // one per buffer parameter, in parameter order
  std::vector<KernelArg> args;     // one per parameter; buffer args point into `buffers`

  LaunchData() = default;
  /// A copy owns its buffers: its buffer arguments point into its own `buffers` (in order),
  /// never into the original's. Moves keep the buffers' storage, so pointers stay valid.
  LaunchData(const LaunchData &other) : dims(other.dims), buffers(other.buffers), args(other.args) {
    rebindBuffers();
  }
  LaunchData &operator=(const LaunchData &other) {
    dims = other.dims;
    buffers = other.buffers;
    args = other.args;
    rebindBuffers();
    return *this;
  }
  LaunchData(LaunchData &&) = default;
  LaunchData &operator=(LaunchData &&) = default;

private:
  void rebindBuffers() {
    size_t b = 0;
    for (KernelArg &a : args)
      if (a.buffer)
        a.buffer = &buffers.at(b++);
  }
};

/// Builds inputs from `kernel.launch` (seeded, so identical on every machine).
/// Returns false with `error` set if the kernel has no launch spec or it is unusable.
bool makeLaunchData(const Function &kernel, LaunchData &out, std::string &error);

/// One line per writable buffer parameter: name, type, count, min, max, sum (in fp64; for
/// floats over finite values, with NaN and inf counts), and an FNV-1a hash of the bytes.
/// Deterministic.
std::string digestOutputs(const Function &kernel, const LaunchData &data);

} // namespace tessera::ir
