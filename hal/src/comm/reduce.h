// The one reduction every collective path uses (in-process, shared memory, MPI, staging),
// so that the fixed order of hal.h "Determinism" holds everywhere: element i of the result
// folds ALL ranks' element i in rank order, in the accumulation type, rounded once.
//
// Must never fold a subset of the ranks and fold again later (a ring or a tree would round
// f16/bf16 twice and change the order): callers pass every rank's source at once.
#pragma once

#include "tessera/hal.h"

#include <cstddef>
#include <cstdint>

namespace tessera::hal::comm {

bool isFloatType(tsr_type_t type);

/// NULL when `op` is valid for `type` (UMIN/UMAX only for integers); else INVALID_ARGUMENT
/// prefixed with `call`.
tsr_status_t checkReduceOp(const char *call, tsr_type_t type, tsr_reduce_op_t op);

/// dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[n-1][i] (left to right) for i < count;
/// AVG divides the sum by n. f16/bf16 accumulate in f32, f32 in f32, f64 in f64, integers in
/// their own width with wrap-around. dst may be one of the sources (each element is read
/// from every source before it is written). n >= 1; unaligned pointers are fine.
/// Requires a valid (type, op) pair (checkReduceOp).
void reduce(void *dst, const void *const *srcs, uint32_t n, size_t count, tsr_type_t type,
            tsr_reduce_op_t op);

} // namespace tessera::hal::comm
