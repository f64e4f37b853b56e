// The dce pass: removes ops whose results are unused and whose execution has no effect.
//
// Removable: pure ops (OpInfo::pure) without regions, and `for`/`if`/`matrix_map` ops whose
// results are unused and whose regions hold only removable ops and terminators. Never removes an op
// with side effects, a call, or a `while` (which might not terminate: removing it would change what
// the kernel does).
#include "ir/transforms/pass.h"
#include "ir/transforms/rewrite.h"

#include <unordered_map>

namespace tessera::ir {
namespace {

using UseCounts = std::unordered_map<const Value *, unsigned>;

bool hasNoEffect(const Op &op) {
  if (op.info().form == OpForm::Terminator)
    return true;
  if (op.regions.empty())
    return op.info().pure;
  if (op.kind != OpKind::For && op.kind != OpKind::If && op.kind != OpKind::MatrixMap)
    return false;
  for (auto &region : op.regions)
    for (auto &inner : region->ops)
      if (!hasNoEffect(*inner))
        return false;
  return true;
}

class Dce {
public:
  explicit Dce(Block &body) : uses_(countUses(body)), body_(body) {}

  bool run() {
    bool changed = false;
    while (sweep(body_))
      changed = true;
    return changed;
  }

private:
  bool unused(const Op &op) const {
    for (auto &r : op.results) {
      auto it = uses_.find(r.get());
      if (it != uses_.end() && it->second > 0)
        return false;
    }
    return true;
  }

  void dropUses(Op &op) {
    walkOp(op, [&](Op &o) {
      for (Value *v : o.operands)
        --uses_[v];
    });
  }

  template <typename F> static void walkOp(Op &op, F &&fn) {
    fn(op);
    for (auto &region : op.regions)
      walk(*region, fn);
  }

  /// One backward sweep over `b` (inner regions first). Returns whether anything was removed.
  bool sweep(Block &b) {
    bool changed = false;
    for (size_t i = b.ops.size(); i-- > 0;) {
      Op &op = *b.ops[i];
      for (auto &region : op.regions)
        changed |= sweep(*region);
      if (op.info().form == OpForm::Terminator || !unused(op) || !hasNoEffect(op))
        continue;
      dropUses(op);
      eraseOp(b, i);
      changed = true;
    }
    return changed;
  }

  UseCounts uses_;
  Block &body_;
};

} // namespace

bool dce(Module &m) {
  bool changed = false;
  for (auto &f : m.functions)
    changed |= Dce(*f->body).run();
  return changed;
}

} // namespace tessera::ir
