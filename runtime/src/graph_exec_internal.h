// Shared by graph_exec.cpp and graph_gemm.cpp only: a plan's scalar argument as a HAL one.
#pragma once

#include "ir/graph/lower.h"
#include "tessera/hal.h"

namespace tessera::detail {

/// The value of a scalar PlanArg (a buffer argument is bound by the caller: i64 0 here).
tsr_arg_t planScalarArg(const graph::PlanArg &a);

} // namespace tessera::detail
