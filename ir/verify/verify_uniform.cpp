// Subgroup-uniformity of matrix ops (docs/ir.md, "Matrix ops", rule of spec section 3): every
// matrix op must run in subgroup-uniform control flow, and its scalar and matrix operands (and
// the outer values a matrix_map region reads) must be subgroup-uniform.
//
// A forward may-analysis over the structured IR: each value is uniform until shown otherwise,
// and remembers the op that first made it non-uniform (its "source", named in the message).
// Sources only ever get set, so iterating to a fixed point over loops terminates. Never
// modifies the IR; runs only on a kernel the structural verifier found sound (every operand a
// visible value), so it dereferences operands freely.
#include "ir/verify/verify_uniform.h"
#include "ir/core/limits.h"
#include "ir/verify/verifier.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace tessera::ir::verify_detail {
namespace {

bool isMatrixOp(const Op &op) { return isMatrixForm(op.info().form); }

std::string at(const Op &op) {
  if (op.loc.line == 0)
    return std::string(op.info().name);
  return std::string(op.info().name) + " at " + std::to_string(op.loc.line) + ":" +
         std::to_string(op.loc.col);
}

/// Results of these are the same in every lane of a subgroup (and, but for subgroup_id, in
/// every work-item of a workgroup) by definition.
bool uniformQuery(OpKind k, bool workgroup) {
  return k == OpKind::GroupId || k == OpKind::NumGroups || k == OpKind::LocalSize ||
         k == OpKind::SubgroupSize || (k == OpKind::SubgroupId && !workgroup);
}

class Uniformity {
public:
  /// `workgroup`: uniform means the same in every work-item of a workgroup (else: of a
  /// subgroup, where subgroup ids, broadcasts and matrices are uniform too).
  Uniformity(const Function &k, bool workgroup) : k_(k), workgroup_(workgroup) {}

  void run() {
    // Sources only grow and there are finitely many values: this ends; the cap guards a bug.
    for (int i = 0; i < 10000; ++i) {
      changed_ = false;
      walk(*k_.body);
      if (!changed_)
        return;
    }
  }

  /// The op that makes `v` non-uniform, or null when it is subgroup-uniform.
  const Op *source(const Value *v) const {
    auto it = src_.find(v);
    return it == src_.end() ? nullptr : it->second;
  }

  /// Reports every matrix op in divergent control flow or with a non-uniform operand.
  void report(Reporter &r) { check(r, *k_.body, nullptr, nullptr); }

  /// The op that makes control op `op`'s decision (an `if` condition, a `for`'s bounds, a
  /// `while` condition) non-uniform, or null when it is uniform.
  const Op *decisionSource(const Op &op) const {
    switch (op.info().form) {
    case OpForm::If:
      return source(op.operands[0]);
    case OpForm::For:
      return firstSource({source(op.operands[0]), source(op.operands[1]), source(op.operands[2])});
    case OpForm::While:
      if (const Op *t = op.region(0).terminator(); t && !t->operands.empty())
        return source(t->operands[0]);
      return nullptr;
    default:
      return nullptr;
    }
  }

  /// Every control op of `b` (nested included) whose decision is uniform.
  void uniformDecisions(const Block &b, std::unordered_set<const Op *> &out) const {
    for (const auto &op : b.ops) {
      OpForm f = op->info().form;
      if ((f == OpForm::If || f == OpForm::For || f == OpForm::While) && !decisionSource(*op))
        out.insert(op.get());
      for (const auto &region : op->regions)
        uniformDecisions(*region, out);
    }
  }

private:
  void mark(const Value *v, const Op *src) {
    if (!src)
      return;
    const Op *&s = src_[v];
    if (!s) {
      s = src;
      changed_ = true;
    }
  }
  static const Op *firstSource(std::initializer_list<const Op *> srcs) {
    for (const Op *s : srcs)
      if (s)
        return s;
    return nullptr;
  }
  const Op *yielded(const Block &b, size_t i) {
    const Op *t = b.terminator();
    return t && i < t->operands.size() ? source(t->operands[i]) : nullptr;
  }
  const Op *anyOperand(const Op &op, bool matricesOnly) {
    for (const Value *v : op.operands)
      if (!matricesOnly || v->type.isMatrix())
        if (const Op *s = source(v))
          return s;
    return nullptr;
  }

  void walk(const Block &b) {
    for (const auto &op : b.ops)
      walkOp(*op);
  }

  void walkOp(const Op &op) {
    switch (op.info().form) {
    case OpForm::WorkItem:
      if (!uniformQuery(op.kind, workgroup_))
        mark(op.result(0), &op);
      return;
    case OpForm::Load:
    case OpForm::Atomic:
    case OpForm::AtomicCas:
    case OpForm::Call:
      for (const auto &res : op.results)
        mark(res.get(), &op);
      return;
    case OpForm::Shuffle:
      if (op.kind != OpKind::Broadcast || workgroup_)
        mark(op.result(0), &op);
      return;
    case OpForm::SubgroupReduce: // the same in a subgroup; subgroups of a workgroup differ
      if (workgroup_)
        mark(op.result(0), &op);
      return;
    case OpForm::If:
      return walkIf(op);
    case OpForm::For:
      return walkFor(op);
    case OpForm::While:
      return walkWhile(op);
    default:
      break;
    }
    if (isMatrixOp(op) && workgroup_) { // each subgroup holds matrices of its own
      for (const auto &res : op.results)
        mark(res.get(), &op);
      for (const auto &region : op.regions)
        walk(*region);
      return;
    }
    if (isMatrixOp(op)) {
      // A matrix result is the subgroup's: it differs between lanes only if a matrix it is
      // made from does (a bad scalar operand is reported on the op itself, not again later).
      for (const auto &res : op.results)
        mark(res.get(), anyOperand(op, /*matricesOnly=*/true));
      for (const auto &region : op.regions)
        walk(*region);
      return;
    }
    for (const auto &res : op.results) // pure scalar ops
      mark(res.get(), anyOperand(op, /*matricesOnly=*/false));
  }

  void walkIf(const Op &op) {
    const Op *cond = source(op.operands[0]);
    for (const auto &region : op.regions)
      walk(*region);
    for (size_t i = 0; i < op.results.size(); ++i) {
      const Op *s = cond;
      for (const auto &region : op.regions)
        s = firstSource({s, yielded(*region, i)});
      mark(op.result(i), s);
    }
  }

  void walkFor(const Op &op) {
    const Block &body = op.region(0);
    const Op *bounds = decisionSource(op);
    mark(body.args[0].get(), bounds);
    for (size_t i = 0; i + 3 < op.operands.size(); ++i) {
      const Op *s = firstSource({bounds, source(op.operands[3 + i]), yielded(body, i)});
      mark(body.args[1 + i].get(), s);
      mark(op.result(i), s);
    }
    walk(body);
  }

  void walkWhile(const Op &op) {
    const Block &before = op.region(0), &after = op.region(1);
    const Op *term = before.terminator();
    const Op *cond = term && !term->operands.empty() ? source(term->operands[0]) : nullptr;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Op *s = firstSource({cond, source(op.operands[i]), yielded(after, i)});
      mark(before.args[i].get(), s);
      mark(after.args[i].get(), s);
      mark(op.result(i), s);
    }
    walk(before);
    walk(after);
  }

  /// `cf` / `cfSrc`: the innermost op whose non-uniform decision encloses this block, and why.
  void check(Reporter &r, const Block &b, const Op *cf, const Op *cfSrc) {
    for (const auto &op : b.ops) {
      if (isMatrixOp(*op))
        checkMatrixOp(r, *op, cf, cfSrc);
      const Op *decides = decisionSource(*op);
      for (const auto &region : op->regions)
        check(r, *region, decides ? op.get() : cf, decides ? decides : cfSrc);
    }
  }

  void checkMatrixOp(Reporter &r, const Op &op, const Op *cf, const Op *cfSrc) {
    std::string name(op.info().name);
    if (cf)
      r.error(op.loc, name + ": not in subgroup-uniform control flow (the " + at(*cf) +
                          " depends on " + at(*cfSrc) + ")");
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Value *v = op.operands[i];
      const Op *s = v->type.isMemory() ? nullptr : source(v);
      bool seen = std::find(op.operands.begin(), op.operands.begin() + i, v) !=
                  op.operands.begin() + i; // a value used twice is reported once
      if (!s || seen)
        continue;
      std::string which =
          v->name.empty() ? "operand " + std::to_string(i + 1) : "operand %" + v->name;
      r.error(op.loc,
              name + ": " + which + " is not subgroup-uniform (it depends on " + at(*s) + ")");
    }
    if (op.kind != OpKind::MatrixMap || op.regions.empty())
      return;
    // Scalars a map region reads from outside it: defined by no op of the region.
    const Block &region = op.region(0);
    for (const auto &inner : region.ops)
      for (const Value *v : inner->operands) {
        bool local = v->owner == &region || (v->def && v->def->parent == &region);
        const Op *s = local ? nullptr : source(v);
        if (!s || !reported_.insert({&op, v}).second)
          continue;
        std::string which = v->name.empty() ? "a value" : "value %" + v->name;
        r.error(inner->loc, name + ": " + which + " used in its region is not " +
                                "subgroup-uniform (it depends on " + at(*s) + ")");
      }
  }

  const Function &k_;
  bool workgroup_;
  std::unordered_map<const Value *, const Op *> src_;
  struct PairHash {
    size_t operator()(const std::pair<const Op *, const Value *> &p) const {
      return std::hash<const void *>()(p.first) ^ (std::hash<const void *>()(p.second) << 1);
    }
  };
  std::unordered_set<std::pair<const Op *, const Value *>, PairHash> reported_;
  bool changed_ = false;
};

} // namespace

void verifyMatrixUniformity(Reporter &r, const Function &kernel) {
  Uniformity u(kernel, /*workgroup=*/false);
  u.run();
  u.report(r);
}

} // namespace tessera::ir::verify_detail

namespace tessera::ir {

std::unordered_set<const Op *> workgroupUniformDecisions(const Function &kernel) {
  verify_detail::Uniformity u(kernel, /*workgroup=*/true);
  u.run();
  std::unordered_set<const Op *> out;
  u.uniformDecisions(*kernel.body, out);
  return out;
}

namespace {

// Calls nest at most ir/core/limits.h's depth; the verifier refuses recursion.
constexpr int kCallDepth = kMaxCallDepth;

bool containsBarrierAt(const Module &m, const Block &b, int depth) {
  if (depth > kCallDepth)
    return false;
  for (const auto &op : b.ops) {
    if (op->kind == OpKind::Barrier)
      return true;
    if (op->kind == OpKind::Call)
      if (const Function *f = m.lookup(op->callee); f && containsBarrierAt(m, *f->body, depth + 1))
        return true;
    for (const auto &r : op->regions)
      if (containsBarrierAt(m, *r, depth))
        return true;
  }
  return false;
}

bool isConstantValue(const Value *v) { return v->def && v->def->kind == OpKind::Const; }

bool containsLoopAt(const Module &m, const Block &b, bool dynamicOnly, int depth) {
  if (depth > kCallDepth)
    return false;
  for (const auto &op : b.ops) {
    if (op->kind == OpKind::While)
      return true;
    if (op->kind == OpKind::For &&
        !(dynamicOnly && isConstantValue(op->operands[0]) && isConstantValue(op->operands[1]) &&
          isConstantValue(op->operands[2])))
      return true;
    if (op->kind == OpKind::Call)
      if (const Function *f = m.lookup(op->callee);
          f && containsLoopAt(m, *f->body, dynamicOnly, depth + 1))
        return true;
    for (const auto &r : op->regions)
      if (containsLoopAt(m, *r, dynamicOnly, depth))
        return true;
  }
  return false;
}

bool anyBarrierVoteAt(const Module &m, const std::unordered_set<const Op *> &uniform,
                      const Block &b, int depth) {
  if (depth > kCallDepth)
    return false;
  for (const auto &op : b.ops) {
    if (needsBarrierVote(m, uniform, *op))
      return true;
    if (op->kind == OpKind::Call)
      if (const Function *f = m.lookup(op->callee);
          f && anyBarrierVoteAt(m, uniform, *f->body, depth + 1))
        return true;
    for (const auto &r : op->regions)
      if (anyBarrierVoteAt(m, uniform, *r, depth))
        return true;
  }
  return false;
}

} // namespace

bool containsBarrier(const Module &m, const Block &b) { return containsBarrierAt(m, b, 0); }

bool containsLoop(const Module &m, const Block &b, bool dynamicOnly) {
  return containsLoopAt(m, b, dynamicOnly, 0);
}

bool needsBarrierVote(const Module &m, const std::unordered_set<const Op *> &uniform,
                      const Op &op) {
  if (op.kind != OpKind::If && op.kind != OpKind::For && op.kind != OpKind::While)
    return false;
  if (uniform.count(&op))
    return false;
  for (const auto &r : op.regions)
    if (containsBarrier(m, *r))
      return true;
  return false;
}

bool anyBarrierVote(const Module &m, const std::unordered_set<const Op *> &uniform,
                    const Block &b) {
  return anyBarrierVoteAt(m, uniform, b, 0);
}

} // namespace tessera::ir
