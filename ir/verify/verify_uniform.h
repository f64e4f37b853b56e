// The subgroup-uniformity rule of matrix ops (docs/ir.md "Matrix ops", spec section 3): a
// matrix op must sit in subgroup-uniform control flow and its scalar operands (off, ld,
// bounds, fill value, outer values used in a matrix_map region) must be subgroup-uniform.
// Declared here so that the structural verifier can call it; implemented in
// verify_uniform.cpp. Must never modify the IR. Included only inside ir/verify/.
#pragma once

#include "ir/verify/verifier_impl.h"

namespace tessera::ir::verify_detail {

/// Reports every uniformity violation of matrix ops in `kernel`, e.g.
/// `matrix_load: operand %off is not subgroup-uniform (it depends on local_id at 5:8)`.
/// Called by verifyModule only for a kernel that uses matrix ops and passed every other
/// check (so its operands are non-null, visible and well typed).
void verifyMatrixUniformity(Reporter &r, const Function &kernel);

} // namespace tessera::ir::verify_detail
