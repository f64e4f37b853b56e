// The compiler targets built into this binary, registered by one explicit call (no static
// constructors), beside the built-in drivers (builtin_drivers.h).
#pragma once

#include "backends/target.h"

namespace tessera {

/// Adds every built-in target to `registry`, in the order of TSR_BUILTIN_TARGETS.
void registerBuiltinTargets(TargetRegistry &registry);

} // namespace tessera
