// Judging one kernel module on one device for `tessera fuzz`, exactly as `tessera run --check`
// does (device_run.h: runOnDevice; output_check.h: checkKernel under the device's declared
// profile), so improvements to that judge apply here too.
#pragma once

#include "tessera/hal.h"

#include <cstdint>
#include <string>

namespace tessera::fuzz {

enum class Outcome {
  Pass,
  Mismatch,    // the device's outputs differ from the interpreter's beyond the budget
  DeviceError, // the device failed to compile, load or run a kernel the interpreter ran
  Invalid,     // the verifier or the interpreter rejects the kernel (a generator bug)
};

const char *outcomeName(Outcome o);

struct Verdict {
  Outcome outcome = Outcome::Pass;
  std::string detail; // what failed, one line
};

struct FuzzDevice {
  std::string name;
  tsr_device_t device = nullptr; // owned by the caller
  uint64_t features = 0;         // TSR_FEATURE_*
  uint32_t subgroupSize = 0;     // the advertised width (0: unknown)
};

/// Test-only fault injection: when the kernel uses an op named `plantOp`, the judge corrupts
/// element 0 of the first writable buffer before comparing, so that the shrinker has a known
/// failure to minimise. Empty: off.
struct JudgeHooks {
  std::string plantOp;
};

/// Parses and verifies `text`, runs its kernel (the first with a launch spec) on the
/// interpreter and on `dev`, and compares.
Verdict judgeText(const FuzzDevice &dev, const std::string &text, const JudgeHooks &hooks = {});

} // namespace tessera::fuzz
