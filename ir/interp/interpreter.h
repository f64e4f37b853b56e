// The fp64 reference interpreter: runs a kernel over a full grid.
//
// All work-items of a workgroup execute in lock-step with an active mask, so `barrier`,
// shared memory and subgroup operations have exact semantics; workgroups run one after the
// other in linear order (atomics are therefore deterministic). Undefined behaviour that the
// IR defines as such (out-of-range index, divergent barrier, reading an inactive lane) stops
// the run with an error naming the op and its location; integer division by zero and a
// `for` step <= 0 have defined results (docs/ir.md, "Faults"); a kernel that does not end
// stops at InterpOptions::maxSteps.
#pragma once

#include "ir/core/ir.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tessera::ir {

/// A host-side buffer in the element type's real storage format (f16 as binary16 ...).
struct HostBuffer {
  Scalar elem = Scalar::F32;
  std::vector<uint8_t> bytes;

  HostBuffer() = default;
  HostBuffer(Scalar e, int64_t count) : elem(e), bytes(static_cast<size_t>(count) * byteSize(e)) {}
  int64_t size() const { return static_cast<int64_t>(bytes.size()) / byteSize(elem); }
  Literal get(int64_t i) const;
  void set(int64_t i, const Literal &v);
};

/// One kernel argument: a buffer (non-owning) or a scalar literal.
struct KernelArg {
  HostBuffer *buffer = nullptr; // set for buffer parameters
  Literal scalar;               // scalar parameters
};

struct LaunchDims {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> workgroup{1, 1, 1};
};

struct InterpOptions {
  uint32_t subgroupSize = 32;
  /// Abort after this many executed op-lanes (guards against non-terminating kernels).
  uint64_t maxSteps = 4'000'000'000ull;
  /// Magnitude mode: float subgroup_add sums |x_i| and float atomic_add stores |old| + |v|,
  /// so an output that is such a sum holds sum |x_i|, the scale of the error a device may
  /// make by adding in another order (the conformance judge's summation allowance).
  bool magnitudeSums = false;
};

struct InterpResult {
  bool ok = true;
  std::string error; // "file:line:col: error: ..." when !ok
};

/// Runs `kernel` (a kernel of `m`) over `dims` with `args` (one per parameter).
InterpResult interpret(const Module &m, const Function &kernel, const LaunchDims &dims,
                       std::span<KernelArg> args, const InterpOptions &opts = {});

} // namespace tessera::ir
