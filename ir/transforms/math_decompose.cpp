// The math decomposition pass (math_decompose.h): walks every function, and replaces each
// decomposable math op that the target does not implement natively by the expansion of
// math_f32.cpp / math_f64.cpp, built in a scratch block and moved in front of the op.
// Expansions may themselves use math ops (sigmoid uses exp): the inserted ops are walked
// again, so those are native or decomposed in turn.
#include "ir/transforms/math_decompose.h"

#include "ir/transforms/math_expansions.h"
#include "ir/transforms/rewrite.h"

#include <algorithm>
#include <cassert>

namespace tessera::ir {

namespace {

constexpr OpKind kDecomposable[] = {
    OpKind::Exp,  OpKind::Exp2, OpKind::Expm1, OpKind::Log,  OpKind::Log2,
    OpKind::Log1p, OpKind::Pow, OpKind::Sin,   OpKind::Cos,  OpKind::Tan,
    OpKind::Tanh, OpKind::Sigmoid, OpKind::Erf, OpKind::Rsqrt,
};

constexpr Scalar kFloatTypes[] = {Scalar::F16, Scalar::BF16, Scalar::F32, Scalar::F64};

math::Expansion findExpansion(OpKind k, Scalar t) {
  std::span<const math::ExpansionEntry> table;
  if (t == Scalar::F32)
    table = math::f32Expansions();
  else if (t == Scalar::F64)
    table = math::f64Expansions();
  for (const auto &e : table)
    if (e.op == k)
      return e.fn;
  return nullptr;
}

struct Decomposer {
  const MathDecomposeOptions &opts;
  Block &body; // the function body: the scope of replaceAllUsesWith
  bool changed = false;

  /// The replacement of `op` (operands `args`, already of type `t`) built with `b`, or null
  /// when `op` at `t` has neither a native form nor an expansion.
  Value *expand(Builder &b, const Op &op, Scalar t, std::span<Value *const> args) {
    if (opts.native.contains(op.kind, t)) {
      Type rt = Type::scalar(t);
      return b.create(op.kind, args, std::span<const Type>(&rt, 1), op.mods)->result(0);
    }
    math::Expansion fn = findExpansion(op.kind, t);
    if (!fn)
      return nullptr;
    math::MathBuilder mb{b, t, opts.int64, opts.fusedFma};
    return fn(mb, args);
  }

  /// Rewrites `block.ops[i]` when it is a non-native decomposable op; returns whether it did.
  bool rewrite(Block &block, size_t i) {
    Op &op = *block.ops[i];
    if (!isDecomposableMathOp(op.kind) || op.results.size() != 1)
      return false;
    Scalar t = op.results[0]->type.elem;
    if (!isFloatScalar(t) || opts.native.contains(op.kind, t))
      return false;
    Block scratch;
    Builder b(scratch, op.loc);
    Value *r = nullptr;
    if (t == Scalar::F16 || t == Scalar::BF16) {
      if (!opts.native.contains(op.kind, Scalar::F32) && !findExpansion(op.kind, Scalar::F32))
        return false;
      std::vector<Value *> wide;
      for (Value *a : op.operands)
        wide.push_back(b.convert(a, Scalar::F32));
      r = b.convert(expand(b, op, Scalar::F32, wide), t); // one rounding to the narrow type
    } else {
      r = expand(b, op, t, op.operands);
    }
    if (!r)
      return false;
#ifndef NDEBUG
    for (const auto &made : scratch.ops) // else the walk would expand it forever
      assert(!(made->kind == op.kind && made->results.size() == 1 &&
               made->results[0]->type.elem == t && !opts.native.contains(op.kind, t)) &&
             "an expansion must not emit the op it expands");
#endif
    Value *old = op.results[0].get();
    size_t n = moveOpsBefore(scratch, block, i);
    replaceAllUsesWith(body, old, r);
    eraseOp(block, i + n);
    return true;
  }

  void run(Block &block) {
    for (size_t i = 0; i < block.ops.size();) {
      if (rewrite(block, i)) {
        changed = true;
        continue; // walk the inserted ops (they may hold math ops of their own)
      }
      for (auto &region : block.ops[i]->regions)
        run(*region);
      ++i;
    }
  }
};

} // namespace

std::span<const OpKind> decomposableMathOps() { return kDecomposable; }

bool isDecomposableMathOp(OpKind k) {
  return std::find(std::begin(kDecomposable), std::end(kDecomposable), k) !=
         std::end(kDecomposable);
}

size_t NativeMathSet::bit(OpKind k, Scalar t) {
  size_t ti = size_t(std::find(std::begin(kFloatTypes), std::end(kFloatTypes), t) -
                     std::begin(kFloatTypes));
  assert(ti < std::size(kFloatTypes) && "NativeMathSet holds float types only");
  size_t b = size_t(k) * std::size(kFloatTypes) + ti;
  assert(b < 512 && "NativeMathSet: op table outgrew the bit set");
  return b;
}

NativeMathSet NativeMathSet::all() {
  NativeMathSet s;
  for (OpKind k : kDecomposable)
    s.addAllTypes(k);
  return s;
}

NativeMathSet &NativeMathSet::add(OpKind k, Scalar t) {
  bits_.set(bit(k, t));
  return *this;
}

NativeMathSet &NativeMathSet::addAllTypes(OpKind k) {
  for (Scalar t : kFloatTypes)
    add(k, t);
  return *this;
}

bool NativeMathSet::contains(OpKind k, Scalar t) const {
  if (std::find(std::begin(kFloatTypes), std::end(kFloatTypes), t) == std::end(kFloatTypes))
    return false;
  return bits_.test(bit(k, t));
}

std::string NativeMathSet::describe() const {
  std::string out;
  for (OpKind k : kDecomposable)
    for (Scalar t : kFloatTypes)
      if (contains(k, t)) {
        if (!out.empty())
          out += ' ';
        out += std::string(opInfo(k).name) + ":" + std::string(scalarName(t));
      }
  return out.empty() ? "none" : out;
}

bool decomposeMath(Module &m, const MathDecomposeOptions &opts) {
  bool changed = false;
  for (auto &f : m.functions) {
    Decomposer d{opts, *f->body};
    d.run(*f->body);
    changed |= d.changed;
  }
  return changed;
}

namespace math {

Value *MathBuilder::horner(Value *x, std::initializer_list<double> coeffs) const {
  assert(coeffs.size() > 0 && "horner needs at least one coefficient");
  const double *cs = coeffs.begin();
  Value *r = c(cs[coeffs.size() - 1]);
  for (size_t i = coeffs.size() - 1; i-- > 0;)
    r = fma(r, x, c(cs[i]));
  return r;
}

} // namespace math
} // namespace tessera::ir
