// Subgroup-uniformity analysis of matrix ops (see verify_uniform.h). Placeholder: accepts
// every kernel until the uniformity analysis lands (branch mx-interp replaces this file).
#include "ir/verify/verify_uniform.h"

namespace tessera::ir::verify_detail {

void verifyMatrixUniformity(Reporter &, const Function &) {}

} // namespace tessera::ir::verify_detail
