// Typing and shape rules of the subgroup-scope matrix ops (docs/ir.md "Matrix ops"):
// matrix_load, matrix_store, matrix_fill, matrix_mad and matrix_map (its region's terminator
// and contents; verifier.cpp walks the region). The subgroup-uniformity rules live in
// verify_uniform.cpp. Never modifies the IR; never dereferences an operand before the
// caller has established that it is valid.
#include "ir/verify/verifier_impl.h"

namespace tessera::ir::verify_detail {
namespace {

std::string str(const Type &t) { return toString(t); }

/// Reports `what` (e.g. "result") of `op` unless `t` is a valid matrix type.
bool expectMatrix(Reporter &r, const Op &op, const Type &t, const std::string &what) {
  if (!t.isMatrix()) {
    r.error(op.loc, quoted(op) + " " + what + " must be a matrix, got " + str(t));
    return false;
  }
  if (std::string why = matrixTypeError(t); !why.empty()) {
    r.error(op.loc, quoted(op) + " " + what + " has invalid type " + str(t) + ": " + why);
    return false;
  }
  return true;
}

/// off, ld, rows, cols: integer scalars other than i1 (read signed, widened to i64).
void expectIntegerOperand(Reporter &r, const Op &op, size_t i, const char *what) {
  const Type &t = op.operands[i]->type;
  if (t.isInt() && !t.isBool())
    return;
  r.error(op.loc, quoted(op) + " " + what + nameSuffix(*op.operands[i]) +
                      " must be an integer (i8, i16, i32 or i64), got " + str(t));
}

/// The memory, offset, stride and bounds operands from index `mem` on, against matrix `m`.
void verifyAccess(Reporter &r, const Op &op, size_t mem, const Type &m, bool isStore) {
  static const char *kNames[] = {"offset", "stride", "bounds rows", "bounds cols"};
  for (size_t i = mem + 1; i < op.operands.size(); ++i)
    expectIntegerOperand(r, op, i, kNames[i - mem - 1]);
  const Type &t = op.operands[mem]->type;
  if (!t.isMemory()) {
    r.error(op.loc, quoted(op) + " expects a buffer or shared array, got " + str(t));
    return;
  }
  if (isStore && t.access == Access::ReadOnly)
    r.error(op.loc, quoted(op) + " to a readonly buffer" + nameSuffix(*op.operands[mem]));
  if (!isStore && t.access == Access::WriteOnly)
    r.error(op.loc, quoted(op) + " from a writeonly buffer" + nameSuffix(*op.operands[mem]));
  if (m.isMatrix() && t.elem != m.elem)
    r.error(op.loc, quoted(op) + " of " + str(m) + " needs memory of element type " +
                        std::string(scalarName(m.elem)) + ", got " + str(t) +
                        nameSuffix(*op.operands[mem]));
}

bool expectArity(Reporter &r, const Op &op, size_t lo, size_t hi, size_t results, size_t regions) {
  bool ok = true;
  if (op.operands.size() != lo && op.operands.size() != hi) {
    r.error(op.loc, quoted(op) + " expects " + std::to_string(lo) +
                        (lo == hi ? "" : " or " + std::to_string(hi)) + " operand(s), got " +
                        std::to_string(op.operands.size()));
    ok = false;
  }
  if (op.results.size() != results) {
    r.error(op.loc, quoted(op) + " must have " + std::to_string(results) + " result(s), got " +
                        std::to_string(op.results.size()));
    ok = false;
  }
  if (op.regions.size() != regions) {
    r.error(op.loc, quoted(op) + " must have " + std::to_string(regions) + " region(s), got " +
                        std::to_string(op.regions.size()));
    ok = false;
  }
  return ok;
}

void verifyMad(Reporter &r, const Op &op) {
  const Type &a = op.operands[0]->type, &b = op.operands[1]->type, &c = op.operands[2]->type;
  bool okA = expectMatrix(r, op, a, "operand a"); // report all three, then stop
  bool okB = expectMatrix(r, op, b, "operand b");
  bool okC = expectMatrix(r, op, c, "operand c");
  if (!okA || !okB || !okC)
    return;
  std::string types = " (" + str(a) + ", " + str(b) + ", " + str(c) + ")";
  if (a.use != MatrixUse::A || b.use != MatrixUse::B || c.use != MatrixUse::Acc) {
    r.error(op.loc, quoted(op) + " operands must have uses a, b, acc" + types);
    return;
  }
  if (a.cols != b.rows || a.rows != c.rows || b.cols != c.cols)
    r.error(op.loc, quoted(op) + " shapes do not agree: a is M x K, b K x N, c M x N" + types);
  bool floatPair = (a.elem == Scalar::F16 || a.elem == Scalar::BF16 || a.elem == Scalar::F32) &&
                   c.elem == Scalar::F32;
  bool intPair = a.elem == Scalar::I8 && c.elem == Scalar::I32;
  if (a.elem != b.elem || !(floatPair || intPair))
    r.error(op.loc, quoted(op) +
                        " element types must be f16/bf16/f32 x same -> f32 or i8 x "
                        "i8 -> i32" +
                        types);
  if (op.result(0)->type != c)
    r.error(op.loc, quoted(op) + " result has type " + str(op.result(0)->type) + ", expected " +
                        str(c) + " (the type of c)");
}

void verifyMap(Reporter &r, const Op &op) {
  const Type &res = op.result(0)->type;
  if (!expectMatrix(r, op, res, "result"))
    return;
  if (res.use != MatrixUse::Acc)
    r.error(op.loc, quoted(op) + " result must be an acc matrix, got " + str(res));
  if (op.operands.empty())
    r.error(op.loc, quoted(op) + " needs at least one matrix operand (use matrix_fill for a "
                                 "constant)");
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Type &t = op.operands[i]->type;
    std::string what = "operand " + std::to_string(i + 1) + nameSuffix(*op.operands[i]);
    if (!expectMatrix(r, op, t, what))
      continue;
    if (t.use != MatrixUse::Acc || t.rows != res.rows || t.cols != res.cols)
      r.error(op.loc, quoted(op) + " " + what + " has type " + str(t) +
                          "; every operand must be an acc matrix of the result's shape " +
                          std::to_string(res.rows) + " x " + std::to_string(res.cols));
  }
  const Block &body = op.region(0);
  if (body.args.size() != op.operands.size()) {
    r.error(op.loc, quoted(op) + " region has " + std::to_string(body.args.size()) +
                        " argument(s), expected " + std::to_string(op.operands.size()) +
                        " (one per operand)");
  } else {
    for (size_t i = 0; i < body.args.size(); ++i) {
      Type want = Type::scalar(op.operands[i]->type.elem);
      if (body.args[i]->type != want)
        r.error(op.loc, quoted(op) + " region argument " + std::to_string(i + 1) + " has type " +
                            str(body.args[i]->type) + ", expected " + str(want) +
                            " (the element type of operand " + std::to_string(i + 1) + ")");
    }
  }
  // Only pure scalar ops: the region runs once per element, in any order, on every target.
  for (const auto &inner : body.ops) {
    OpForm f = inner->info().form;
    if (isScalarForm(f) || f == OpForm::Terminator)
      continue;
    r.error(inner->loc, quoted(*inner) + " is not allowed in a 'matrix_map' region (only pure "
                                         "scalar ops: arithmetic, math, compare, select, "
                                         "convert, bitcast, const)");
  }
}

} // namespace

void verifyMatrixOp(Reporter &r, const Op &op) {
  switch (op.info().form) {
  case OpForm::MatrixLoad:
    if (!expectArity(r, op, 3, 5, 1, 0))
      return;
    if (expectMatrix(r, op, op.result(0)->type, "result"))
      verifyAccess(r, op, 0, op.result(0)->type, false);
    return;
  case OpForm::MatrixStore:
    if (!expectArity(r, op, 4, 6, 0, 0))
      return;
    if (expectMatrix(r, op, op.operands[0]->type, "value"))
      verifyAccess(r, op, 1, op.operands[0]->type, true);
    return;
  case OpForm::MatrixFill: {
    if (!expectArity(r, op, 1, 1, 1, 0) || !expectMatrix(r, op, op.result(0)->type, "result"))
      return;
    Type want = Type::scalar(op.result(0)->type.elem);
    if (op.operands[0]->type != want)
      r.error(op.loc, quoted(op) + " value has type " + str(op.operands[0]->type) + ", expected " +
                          str(want) + " (the element type of " + str(op.result(0)->type) + ")");
    return;
  }
  case OpForm::MatrixMad:
    if (expectArity(r, op, 3, 3, 1, 0))
      verifyMad(r, op);
    return;
  case OpForm::MatrixMap:
    if (op.results.size() != 1 || op.regions.size() != 1) {
      expectArity(r, op, op.operands.size(), op.operands.size(), 1, 1);
      return;
    }
    verifyMap(r, op);
    return;
  default:
    return;
  }
}

} // namespace tessera::ir::verify_detail
