// The canonicalize pass: constant folding and exact algebraic identities, to a fixpoint.
//
// Folding goes through numerics::evalScalar (the interpreter's semantics), so a folded kernel
// computes bit-identical results. It must never fold an op whose result a backend may compute
// within a ULP budget (transcendental math, float div and sqrt: any op with a non-zero budget
// in ops.def), never fold undefined behaviour (evalScalar reports an error), never fold an
// integer division fault (x / 0, MIN / -1: defined, but checked mode must still see it), and
// never apply an identity that is not exact for every input (NaN and -0 included), and never
// fold to a NaN (the text format cannot spell its sign or payload).
#include "ir/interp/numerics.h"
#include "ir/transforms/pass.h"
#include "ir/transforms/rewrite.h"

#include <cmath>
#include <vector>

namespace tessera::ir {
namespace {

const Op *constOf(const Value *v) {
  return v->def && v->def->kind == OpKind::Const ? v->def : nullptr;
}

bool isIntConst(const Value *v, uint64_t bits) {
  const Op *c = constOf(v);
  return c && v->type.isInt() && c->literal.i == numerics::truncInt(bits, v->type.elem);
}

bool isAllOnes(const Value *v) { return isIntConst(v, ~0ull); }

/// A float constant equal to `x` with the same sign (so -0.0 and +0.0 differ).
bool isFloatConst(const Value *v, double x) {
  const Op *c = constOf(v);
  return c && v->type.isFloat() && c->literal.f == x &&
         std::signbit(c->literal.f) == std::signbit(x);
}

/// Whether the op may be folded when all its operands are constants.
bool isFoldable(const Op &op) {
  // Constants are already folded.
  if (op.info().form == OpForm::Const || !isScalarForm(op.info().form))
    return false;
  if (op.results.size() != 1 || op.operands.empty())
    return false;
  bool floats = op.result(0)->type.isFloat();
  for (const Value *v : op.operands)
    floats |= v->type.isFloat();
  if (!floats)
    return true;
  // Budgeted float ops (div, sqrt, exp, ...) are computed differently by each backend.
  for (double ulp : op.info().ulp)
    if (ulp > 0)
      return false;
  return true;
}

// An integer div/rem by 0, or signed MIN by -1: its result is defined (docs/ir.md, "Faults"),
// but a kernel compiled in checked mode reports it, so the op stays.
bool isDivisionFault(const Op &op, const std::vector<Literal> &lits) {
  if ((op.kind != OpKind::Div && op.kind != OpKind::Rem) || !op.result(0)->type.isInt())
    return false;
  Scalar t = op.result(0)->type.elem;
  uint64_t d = numerics::truncInt(lits[1].i, t);
  if (d == 0)
    return true;
  return !op.mods.isUnsigned && numerics::signExtend(d, t) == -1 &&
         numerics::truncInt(lits[0].i, t) ==
             numerics::truncInt(uint64_t(1) << (bitWidth(t) - 1), t);
}

bool tryFold(Op &op) {
  if (!isFoldable(op))
    return false;
  std::vector<Literal> lits;
  for (const Value *v : op.operands) {
    const Op *c = constOf(v);
    if (!c)
      return false;
    lits.push_back(c->literal);
  }
  if (isDivisionFault(op, lits))
    return false;
  std::optional<numerics::EvalResult> r = numerics::evalScalar(op, lits);
  if (!r || !r->error.empty())
    return false;
  // The text format spells one NaN: a folded NaN's sign and payload would not survive
  // printing, so a printed-and-reparsed kernel could store different bytes.
  if (op.result(0)->type.isFloat() && std::isnan(r->value.f))
    return false;
  makeConst(op, r->value);
  return true;
}

/// What an identity rewrites an op to.
struct Simplified {
  Value *value = nullptr; // replace all uses by this value
  bool zero = false;      // or turn the op into the constant 0 of its type
};

Simplified simplifyBinary(const Op &op) {
  Value *a = op.operands[0];
  Value *b = op.operands[1];
  bool isInt = op.result(0)->type.isInt();
  switch (op.kind) {
  case OpKind::Add:
    if (isInt && isIntConst(b, 0))
      return {a};
    if (isInt && isIntConst(a, 0))
      return {b};
    if (isFloatConst(b, -0.0)) // x + -0 == x for every x, +0 included
      return {a};
    if (isFloatConst(a, -0.0))
      return {b};
    return {};
  case OpKind::Sub:
    if (isInt && isIntConst(b, 0))
      return {a};
    if (isInt && a == b)
      return {nullptr, true};
    if (isFloatConst(b, 0.0)) // x - +0 == x for every x, -0 included
      return {a};
    return {};
  case OpKind::Mul:
    if (isInt && (isIntConst(a, 0) || isIntConst(b, 0)))
      return {nullptr, true};
    if ((isInt && isIntConst(b, 1)) || isFloatConst(b, 1.0))
      return {a};
    if ((isInt && isIntConst(a, 1)) || isFloatConst(a, 1.0))
      return {b};
    return {};
  case OpKind::And:
    if (a == b)
      return {a};
    if (isIntConst(a, 0) || isIntConst(b, 0))
      return {nullptr, true};
    if (isAllOnes(b))
      return {a};
    if (isAllOnes(a))
      return {b};
    return {};
  case OpKind::Or:
    if (a == b || isIntConst(b, 0))
      return {a};
    if (isIntConst(a, 0))
      return {b};
    return {};
  case OpKind::Xor:
    if (a == b)
      return {nullptr, true};
    if (isIntConst(b, 0))
      return {a};
    if (isIntConst(a, 0))
      return {b};
    return {};
  case OpKind::Shl:
  case OpKind::Shr:
    if (isIntConst(b, 0))
      return {a};
    return {};
  default:
    return {};
  }
}

Simplified simplify(const Op &op) {
  if (op.results.size() != 1)
    return {};
  switch (op.info().form) {
  case OpForm::Binary:
    return simplifyBinary(op);
  case OpForm::Unary: {
    // neg(neg(x)) and not(not(x)) are exact (neg only flips the sign bit of a float).
    if (op.kind != OpKind::Neg && op.kind != OpKind::Not)
      return {};
    const Op *inner = op.operands[0]->def;
    if (inner && inner->kind == op.kind)
      return {inner->operands[0]};
    return {};
  }
  case OpForm::Select:
    if (const Op *c = constOf(op.operands[0]))
      return {op.operands[(c->literal.i & 1) ? 1 : 2]};
    if (op.operands[1] == op.operands[2])
      return {op.operands[1]};
    return {};
  default:
    return {};
  }
}

class Canonicalizer {
public:
  explicit Canonicalizer(Function &f) : body_(*f.body) {}

  bool run() {
    bool changed = false;
    while (block(body_))
      changed = true;
    return changed;
  }

private:
  /// One sweep over `b` (and nested regions). Returns whether anything changed.
  bool block(Block &b) {
    bool changed = false;
    for (size_t i = 0; i < b.ops.size();) {
      Op &op = *b.ops[i];
      if ((op.kind == OpKind::If && foldIf(b, i)) || (op.kind == OpKind::For && foldFor(b, i))) {
        changed = true;
        continue; // the ops now at `i` are new to this sweep
      }
      for (auto &region : op.regions)
        changed |= block(*region);
      if (tryFold(op)) {
        changed = true;
        ++i;
        continue;
      }
      Simplified s = simplify(op);
      if (s.zero) {
        makeConst(op, Literal{});
        changed = true;
      } else if (s.value) {
        replaceAllUsesWith(body_, op.result(0), s.value);
        eraseOp(b, i);
        changed = true;
        continue;
      }
      ++i;
    }
    return changed;
  }

  /// `if` on a constant condition: the taken region replaces the op.
  bool foldIf(Block &b, size_t i) {
    Op &op = *b.ops[i];
    const Op *c = op.operands.empty() ? nullptr : constOf(op.operands[0]);
    if (!c)
      return false;
    bool taken = c->literal.i & 1;
    if (!taken && op.regions.size() < 2) {
      if (!op.results.empty())
        return false; // invalid IR: leave it to the verifier
      eraseOp(b, i);
      return true;
    }
    Block &region = op.region(taken ? 0 : 1);
    Op *term = region.terminator();
    if (!term || term->operands.size() != op.results.size())
      return false;
    std::vector<Value *> yielded = term->operands;
    size_t moved = moveOpsBefore(region, b, i);
    for (size_t k = 0; k < yielded.size(); ++k)
      replaceAllUsesWith(body_, op.result(static_cast<unsigned>(k)), yielded[k]);
    eraseOp(b, i + moved);
    return true;
  }

  /// `for` whose constant bounds give zero iterations: its results are its inits.
  bool foldFor(Block &b, size_t i) {
    Op &op = *b.ops[i];
    if (op.operands.size() < 3 || op.operands.size() - 3 != op.results.size())
      return false;
    const Op *lb = constOf(op.operands[0]);
    const Op *ub = constOf(op.operands[1]);
    const Type &t = op.operands[0]->type;
    if (!lb || !ub || !t.isInt())
      return false;
    if (numerics::signExtend(lb->literal.i, t.elem) < numerics::signExtend(ub->literal.i, t.elem))
      return false;
    for (size_t k = 0; k < op.results.size(); ++k)
      replaceAllUsesWith(body_, op.result(static_cast<unsigned>(k)), op.operands[3 + k]);
    eraseOp(b, i);
    return true;
  }

  Block &body_;
};

} // namespace

bool canonicalize(Module &m) {
  bool changed = false;
  for (auto &f : m.functions)
    changed |= Canonicalizer(*f).run();
  return changed;
}

} // namespace tessera::ir
