// The IR that every backend compiles under the strict profile (docs/ir.md, "Strict profile"):
// the module with every decomposable math op rewritten into basic ops by the one shared
// decomposition (math_decompose.h with NativeMathSet::none()), so that no backend's own
// exp, sin or erf (libm, libdevice, ocml, GLSL.std.450) decides a result bit.
//
// Must never depend on the target other than through `int64` (whether f64 expansions may use
// 64-bit integers): two backends given the same module must receive the same basic ops.
#pragma once

#include "ir/core/ir.h"

#include <memory>
#include <string>
#include <vector>

namespace tessera::ir {

/// A copy of `m` (through the text form: print -> parse is the identity) with every
/// decomposable math op decomposed. Null with `*error` set when the copy does not parse or
/// verify (a module that verified before always does) or an op is left undecomposed: strict
/// compilation then fails rather than fall back to a backend's native math.
std::unique_ptr<Module> strictMathCopy(const Module &m, bool int64, std::string *error);

/// The decomposable math ops (as "op:type", sorted) still in `m`: after strictMathCopy's
/// decomposition, the ones with no shared expansion.
std::vector<std::string> undecomposedMath(const Module &m);

} // namespace tessera::ir
