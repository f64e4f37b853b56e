// The strict profile's math (docs/ir.md, "Strict profile"): under strict every codegen
// decomposes with an empty native set (its nativeMath(options) returns NativeMathSet::none()),
// so that no backend's own exp, sin or erf (libm, libmvec, libdevice, ocml, GLSL.std.450)
// decides a result bit, and refuses a module in which a decomposable op survives (no shared
// expansion at its type yet) rather than fall back to native math without saying so.
//
// Must never depend on the target other than through `int64` (whether f64 expansions may use
// 64-bit integers; both forms give the same bits): two backends given the same module must
// compute the same basic ops.
#pragma once

#include "ir/core/ir.h"

#include <memory>
#include <string>
#include <vector>

namespace tessera::ir {

/// The decomposable math ops (as "op:type", sorted) still in `m`.
std::vector<std::string> undecomposedMath(const Module &m);

/// For a module decomposed with NativeMathSet::none(): empty when no decomposable op is left,
/// else the compile error naming them ("strict: no shared decomposition yet for tanh:f64 ...").
std::string strictMathError(const Module &decomposed);

/// A copy of `m` decomposed as a strict compile decomposes it (for tools that inspect the IR a
/// strict compile lowers, e.g. the conformance runner). Null with `*error` set
/// (strictMathError) when an op is left.
std::unique_ptr<Module> strictMathCopy(const Module &m, bool int64, std::string *error);

} // namespace tessera::ir
