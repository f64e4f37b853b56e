// The size limits of a kernel IR module: the one place the lexer, the parser, the verifier
// and Program read them from (docs/ir.md, "Rules the parser and verifier enforce").
//
// Why they exist: every target must be able to encode what the verifier accepts (a SPIR-V
// string is at most 65535 words, so a 1 MB name produced invalid SPIR-V), and a module the
// verifier accepts must compile in reasonable time and memory (compile time grows faster
// than linearly with the size of a function on the CPU backend). Changing a value here
// changes the documented rule: update docs/ir.md with it.
#pragma once

#include "ir/core/ops.h"

#include <cstddef>

namespace tessera::ir {

/// Bytes of a value, parameter or function name, without its sigil (`%`, `@`).
inline constexpr size_t kMaxNameBytes = 1024;
/// Ops in one function or kernel, nested regions included; terminators (yield, condition,
/// return) do not count, so the parser (which sees them written or not) and the verifier
/// (which sees every one) count the same ops.
inline constexpr size_t kMaxOpsPerFunction = 1 << 15;
/// Ops in a whole module.
inline constexpr size_t kMaxOpsPerModule = 1 << 16;
/// Regions nested inside one another (also bounds the parser's recursion).
inline constexpr int kMaxRegionDepth = 256;

/// Bytes of a file the parsers read (kernel IR, graph IR): a module within the op and name
/// limits needs far less, and reading stops here, so /dev/zero or a multi-gigabyte file is
/// an error naming the file instead of unbounded memory.
inline constexpr size_t kMaxFileBytes = size_t(256) << 20;
/// Calls nested inside one another (f calls g calls h ...: 2 for f); the interpreter and
/// the lowerings recurse once per level, and SPIR-V / OpenCL C inline every call.
inline constexpr int kMaxCallDepth = 64;

/// Whether an op of kind `k` counts towards kMaxOpsPerFunction and kMaxOpsPerModule.
inline bool countsTowardsOpLimits(OpKind k) { return opInfo(k).form != OpForm::Terminator; }

} // namespace tessera::ir
