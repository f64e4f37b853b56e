// Random well-typed kernels for differential fuzzing (`tessera fuzz`, issue #11).
//
// A generated module holds one kernel with a launch spec and up to two device functions. It
// exercises structured control flow (if / for / while with carried values), every op family
// and scalar type the devices support, calls, shared memory with barriers, subgroup
// reductions / shuffles / broadcasts, atomics, multi-dimensional and partial workgroups.
//
// Every kernel is meant to be *defined* and *deterministic*: indices are masked into range,
// divisors kept nonzero and away from MIN / -1, loops bounded, barriers uniform, shuffles only
// where every lane is active, atomics arranged so that their final values do not depend on
// the order of the work-items (one atomic kind per accumulator, returned old values unused,
// float atomic adds and subgroup sums of small integers), and values that a device may
// legitimately compute differently (the result of an approximate op like exp) only reach a
// store through ops that cannot amplify their error. A device result that differs from the
// interpreter's beyond the judge's budget is therefore a finding, not noise. The generator
// must never produce a kernel the verifier rejects or the interpreter reports as undefined;
// `tessera fuzz` counts such kernels as generator bugs.
#pragma once

#include "ir/core/ir.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace tessera::fuzz {

struct GenOptions {
  uint64_t seed = 1;
  /// Scalar types the kernel may use (the intersection of the devices' features).
  std::vector<ir::Scalar> types{ir::Scalar::I1,   ir::Scalar::I8,  ir::Scalar::I16,
                                ir::Scalar::I32,  ir::Scalar::I64, ir::Scalar::F16,
                                ir::Scalar::BF16, ir::Scalar::F32, ir::Scalar::F64};
  bool floatAtomics = true; // float atomic_add on buffers and shared memory
  bool subgroups = true;
  /// Budget of generated ops (roughly: the kernel size).
  int maxOps = 60;
  /// Hostile variants for the defined-faults semantics (branch faults-cpu): unmasked
  /// (possibly out-of-range) indices, unguarded divisors (0, MIN / -1) and non-positive loop
  /// steps. Off until every device and the interpreter define those cases.
  bool hostile = false;
  /// Keep sin / cos / tan arguments in [-pi, pi]: a relaxed-profile (Vulkan) device is
  /// judged there only.
  bool boundTrigArgs = false;
  /// (op, result type) pairs never generated as scalar ops, e.g. a known backend bug that
  /// would otherwise dominate a long run (`tessera fuzz --exclude fma:bf16`).
  std::vector<std::pair<ir::OpKind, ir::Scalar>> exclude;
};

/// Builds one module (kernel `@fuzz` with its launch spec, device functions `@fn0`...).
/// Deterministic: the same options give the same module on every machine.
std::unique_ptr<ir::Module> generateModule(const GenOptions &opts);

/// splitmix64: the generator's only source of randomness (std distributions differ between
/// standard libraries, which would break --seed reproducibility).
class Rng {
public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) (n > 0; the modulo bias is irrelevant here).
  uint64_t below(uint64_t n) { return next() % n; }
  int range(int lo, int hi) {
    return lo + static_cast<int>(below(static_cast<uint64_t>(hi - lo + 1)));
  }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }
  template <typename T> const T &pick(const std::vector<T> &v) { return v[below(v.size())]; }

private:
  uint64_t s_;
};

} // namespace tessera::fuzz
