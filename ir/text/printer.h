// Canonical printer of the kernel IR text format (docs/ir.md).
//
// Output is deterministic and canonical: print(parse(print(m))) == print(m). Value names come
// from the name hints when they are valid and unique in their function, else `%N`.
#pragma once

#include "ir/core/ir.h"

#include <string>

namespace tessera::ir {

std::string printModule(const Module &m);
std::string printFunction(const Function &f);
/// Formats a literal of scalar type `t` as the parser reads it (shortest exact form).
std::string printLiteral(const Literal &lit, Scalar t);

} // namespace tessera::ir
