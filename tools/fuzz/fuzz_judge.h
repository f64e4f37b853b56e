// Judging one kernel module on one device for `tessera fuzz`, exactly as `tessera run --check`
// does (device_run.h: runOnDevice; output_check.h: checkKernel under the device's declared
// profile), so improvements to that judge apply here too.
#pragma once

#include "backends/kernel_faults.h"
#include "tessera/hal.h"

#include <cstdint>
#include <string>

namespace tessera::fuzz {

enum class Outcome {
  Pass,
  Mismatch,    // the device's outputs differ from the interpreter's beyond the budget
  DeviceError, // the device failed to compile, load or run a kernel the interpreter ran
  Invalid,     // the verifier or the interpreter rejects the kernel (a generator bug)
  Undefined,   // hostile mode: the interpreter reports undefined behaviour; the device ran it
               // (to check that it returns, with a status, instead of crashing the process)
};

const char *outcomeName(Outcome o);

struct Verdict {
  Outcome outcome = Outcome::Pass;
  std::string detail;      // what failed, one line
  std::string buffer = {}; // Mismatch: the first output that differs (a shrink keeps it failing)
};

struct FuzzDevice {
  std::string name;
  tsr_device_t device = nullptr; // owned by the caller
  uint64_t features = 0;         // TSR_FEATURE_*
  uint32_t subgroupSize = 0;     // the advertised width (0: unknown)
  /// The backend declares the full profile (conformance::declaredProfile): it promises the
  /// op table's budgets per element, so the judge may also check elementwise (see judgeText).
  bool fullProfile = true;
};

/// Test-only fault injection: when the kernel uses an op named `plantOp`, the judge corrupts
/// element 0 of the first writable buffer before comparing, so that the shrinker has a known
/// failure to minimise. Empty: off.
struct JudgeHooks {
  std::string plantOp;
  /// After the `run --check` comparison passes, also compare every float element by ULPs
  /// alone (no normwise arm) on full-profile devices. Sound for generated kernels: an
  /// approximate result never reaches further arithmetic and float subgroup sums are exact
  /// (kernel_gen.h), so there is no cancellation for the normwise arm to excuse,
  /// while that arm, measured against the buffer's largest value, lets any error on small
  /// elements pass once a buffer also holds a huge one (as `special` inputs produce).
  bool elementwise = true;
  /// Run a kernel the interpreter rejects as undefined on the device anyway (hostile mode):
  /// the process must survive it (#10). Its outputs are not judged.
  bool runUndefined = false;
  /// The bounds mode kernels are compiled with (docs/ir.md, "Faults"). With runUndefined and
  /// `checked`, a fault the device reports counts as survived, not as a device error.
  tsr_bounds_mode bounds = TSR_BOUNDS_ROBUST;
};

/// Parses and verifies `text`, runs its kernel (the first with a launch spec) on the
/// interpreter and on `dev`, and compares (checkOutputs, then elementwise per `hooks`).
Verdict judgeText(const FuzzDevice &dev, const std::string &text, const JudgeHooks &hooks = {});

} // namespace tessera::fuzz
