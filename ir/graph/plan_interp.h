// Runs a lowered Plan (lower.h) on the kernel-IR reference interpreter (ir/interp/): the
// oracle path for lowering tests. Buffers are allocated per PlanBuffer, inputs copied in
// through their strides, every launch interpreted in order, outputs read through their views.
// Never used to run models: it is slow by design (fp64, one work-item at a time).
#pragma once

#include "ir/core/types.h"
#include "ir/graph/eval.h"
#include "ir/graph/lower.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::graph {

/// The kernel-IR scalar a plan buffer of dtype `t` holds (bool is stored as i8, lower_internal.h
/// storageType): what host buffers for the interpreter or a device are allocated as.
ir::Scalar storageScalar(DType t);

struct PlanInterpOptions {
  uint32_t subgroupSize = 32; // the interpreter's subgroup size (kernels must not assume one)
};

/// `inputs`: one per graph parameter, contiguous values in row-major order of its shape
/// (HostTensor, eval.h). False with *err naming the launch and the interpreter's error.
bool runPlanOnInterpreter(const Plan &plan, const Graph &g, const std::vector<HostTensor> &inputs,
                          std::vector<HostTensor> *outputs, std::string *err,
                          const PlanInterpOptions &opts = {});

} // namespace tessera::graph
