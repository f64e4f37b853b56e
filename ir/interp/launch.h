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
};

/// Builds inputs from `kernel.launch` (seeded, so identical on every machine).
/// Returns false with `error` set if the kernel has no launch spec or it is unusable.
bool makeLaunchData(const Function &kernel, LaunchData &out, std::string &error);

/// One line per writable buffer parameter: name, type, count, min, max, sum (in fp64; for
/// floats over finite values, with NaN and inf counts), and an FNV-1a hash of the bytes.
/// Deterministic.
std::string digestOutputs(const Function &kernel, const LaunchData &data);

} // namespace tessera::ir
