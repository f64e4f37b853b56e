// The null target: the compiler half of the porting skeleton (backends/null/README.md). Its
// name, backend and format are placeholders a port renames; compile and deviceOptions answer
// "null target: <entry> not implemented (<what to do>)". Never give it real behaviour.
#pragma once

#include "backends/target.h"

#include <memory>

namespace tessera::null {

/// A new null target (name and backend "null", format "null-object").
std::unique_ptr<Target> makeTarget();

} // namespace tessera::null
