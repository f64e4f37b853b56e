// Small IR rewriting utilities shared by the passes: replacing uses, erasing and moving ops,
// turning an op into a constant, and cloning ops with their regions or whole modules.
//
// These helpers keep the ownership tree and the parent links consistent (the verifier checks
// them); they never check that a rewrite preserves meaning — that is each pass's job.
#pragma once

#include "ir/core/ir.h"

#include <memory>
#include <unordered_map>

namespace tessera::ir {

/// Maps values of the original IR to their replacements while cloning.
using ValueMap = std::unordered_map<const Value *, Value *>;

/// Replaces every use of `from` by `to` in the operands of every op nested in `scope`
/// (nested regions included). `scope` is normally a function body.
void replaceAllUsesWith(Block &scope, const Value *from, Value *to);

/// Number of uses of every used value, over every op nested in `scope`.
std::unordered_map<const Value *, unsigned> countUses(Block &scope);

/// Erases the op at `index` of `b`. Its results must have no uses left.
void eraseOp(Block &b, size_t index);

/// Moves every op of `from` except its terminator into `to` before position `pos` and returns
/// how many were moved. The terminator stays in `from`.
size_t moveOpsBefore(Block &from, Block &to, size_t pos);

/// Turns `op` in place into `const lit` of its (single) result type. The result value is
/// kept, so its uses stay valid. Only the literal field of the type's kind is kept.
void makeConst(Op &op, const Literal &lit);

/// Deep copy of `op` and its regions. Operands found in `map` are remapped (others are kept:
/// they are defined outside the cloned IR); the clone's results and region arguments are
/// added to `map`. The clone has no parent until it is inserted.
std::unique_ptr<Op> cloneOp(const Op &op, ValueMap &map);

/// Inserts `op` into `b` at position `pos` and sets its parent. Returns it.
Op *insertOp(Block &b, size_t pos, std::unique_ptr<Op> op);

/// Deep copy of a whole module (functions, launch specs, locations, value names): codegens
/// take `const Module &` and run their IR-to-IR passes (math decompositions) on a copy.
Module cloneModule(const Module &m);

} // namespace tessera::ir
