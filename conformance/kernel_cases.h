// Kernel-level conformance cases: every kernel with a launch spec in a folder of .tir files
// (by default ir/examples: reductions with shared memory and barriers, subgroup reductions
// and shuffles, a scan, softmax, layernorm, a tiled matmul, atomics, conversions with
// saturation, divergent control flow), run on a device and judged against the interpreter.
#pragma once

#include "conformance/runner.h"

#include <string>
#include <vector>

namespace tessera::conform {

/// The .tir files of each folder of `dirs` (a ':'-separated list), sorted within a folder,
/// folders in the order given (deterministic case order). Unreadable folders add nothing.
std::vector<std::string> kernelCaseFiles(const std::string &dirs);

/// The case ids `kernel/<file stem>/<kernel name>` of `files` (files that fail to parse
/// contribute `kernel/<stem>/parse`).
std::vector<std::string> kernelCaseIds(const std::vector<std::string> &files);

/// Runs the kernels of `files` whose id matches one of `filters` (all if empty) on `dev`.
/// Judging: runtime's checkKernel under the device's profile (dev.profile): each output within
/// the budget of the ops that reach it (output_budget.h), with the interpreter emulating the
/// subgroup size the device's codegen chose. A pass that needed the normwise arm says so in
/// its message.
void runKernelCases(const std::vector<std::string> &files, const std::vector<std::string> &filters,
                    DeviceRun &dev, RunReport &report, const ProgressFn &progress);

} // namespace tessera::conform
