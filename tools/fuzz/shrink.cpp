// Greedy delta-debugging over kernel modules (see shrink.h). Candidates are tried from the
// coarsest (whole passes, outer ops first in pre-order) to the finest; every accepted one
// restarts the scan at the same position, so the result is a fixed point: no single listed
// simplification keeps the failure.
#include "tools/fuzz/shrink.h"

#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/transforms/pass.h"
#include "ir/transforms/rewrite.h"

#include <chrono>
#include <optional>
#include <set>

namespace tessera::fuzz {
namespace {

using ir::Op;
using ir::OpKind;

enum class Mut {
  Dce,         // the dce pass
  Fold,        // canonicalize + dce
  Inline,      // inline every call + dce
  DropFunc,    // a device function nothing calls
  DropParam,   // an unused kernel parameter (and its initialiser)
  Grid,        // halve grid[arg]
  Workgroup,   // halve workgroup[arg]
  BufferCount, // halve the element count of launch arg `arg`
  BufferFill,  // initialise launch arg `arg` with fill(0)
  Erase,       // erase op (its results unused, or replaced by zero constants)
  Constify,    // replace op's results by constants `arg` (0 or 1)
  Forward,     // replace op's result by its operand `arg`
  Hoist,       // replace an if / for / while by one run of its region `arg`
};

struct Mutation {
  Mut kind;
  size_t op = 0; // pre-order index over every function's ops
  int arg = 0;
};

std::vector<Op *> preorder(ir::Module &m) {
  std::vector<Op *> ops;
  for (auto &f : m.functions)
    ir::walk(*f->body, [&](Op &op) { ops.push_back(&op); });
  return ops;
}

ir::Function *owningFunction(ir::Module &m, Op &op) {
  ir::Block *b = op.parent;
  while (b && b->parentOp)
    b = b->parentOp->parent;
  for (auto &f : m.functions)
    if (f->body.get() == b)
      return f.get();
  return nullptr;
}

size_t positionIn(const ir::Block &b, const Op &op) {
  for (size_t i = 0; i < b.ops.size(); ++i)
    if (b.ops[i].get() == &op)
      return i;
  return b.ops.size();
}

ir::Function *kernelOf(ir::Module &m) {
  for (auto &f : m.functions)
    if (f->isKernel && f->launch)
      return f.get();
  return nullptr;
}

// The ops computing a store's index, transitively. The shrinker leaves them alone: turning
// a per-work-item index (the linear global id) into a constant or a single dimension makes
// work-items write one element in a race, a "failure" of the shrunk kernel that the original
// did not have. (A shrunk kernel with one work-item is free of races: then they may go.)
std::set<const Op *> storeIndexSlice(ir::Module &m) {
  std::vector<const ir::Value *> work;
  for (Op *op : preorder(m))
    if (op->kind == OpKind::Store)
      work.push_back(op->operands.at(2));
  std::set<const Op *> slice;
  while (!work.empty()) {
    const ir::Value *v = work.back();
    work.pop_back();
    if (!v->def || !slice.insert(v->def).second)
      continue;
    for (const ir::Value *o : v->def->operands)
      work.push_back(o);
  }
  return slice;
}

std::vector<Mutation> listMutations(ir::Module &m) {
  std::vector<Mutation> out{{Mut::Dce}, {Mut::Fold}, {Mut::Inline}};
  for (size_t i = 0; i < m.functions.size(); ++i)
    if (!m.functions[i]->isKernel)
      out.push_back({Mut::DropFunc, 0, static_cast<int>(i)});
  if (ir::Function *k = kernelOf(m)) {
    for (size_t i = 0; i < k->body->args.size(); ++i)
      out.push_back({Mut::DropParam, 0, static_cast<int>(i)});
    for (int d = 0; d < 3; ++d) {
      out.push_back({Mut::Grid, 0, d});
      out.push_back({Mut::Workgroup, 0, d});
    }
    for (size_t i = 0; i < k->launch->args.size(); ++i) {
      out.push_back({Mut::BufferCount, 0, static_cast<int>(i)});
      out.push_back({Mut::BufferFill, 0, static_cast<int>(i)});
    }
  }
  std::vector<Op *> ops = preorder(m);
  // One work-item cannot race with another: then the indices may go too.
  ir::Function *k = kernelOf(m);
  bool single = k && k->launch->grid == std::array<uint32_t, 3>{1, 1, 1} &&
                k->launch->workgroup == std::array<uint32_t, 3>{1, 1, 1};
  std::set<const Op *> keep = single ? std::set<const Op *>() : storeIndexSlice(m);
  for (size_t i = 0; i < ops.size(); ++i) {
    Op &op = *ops[i];
    if (op.info().form == ir::OpForm::Terminator || keep.count(&op))
      continue;
    out.push_back({Mut::Erase, i});
    for (size_t r = 0; r < op.regions.size(); ++r)
      out.push_back({Mut::Hoist, i, static_cast<int>(r)});
    if (op.results.empty() || op.kind == OpKind::Const)
      continue;
    out.push_back({Mut::Constify, i, 0});
    out.push_back({Mut::Constify, i, 1});
    for (size_t j = 0; j < op.operands.size(); ++j)
      if (op.results.size() == 1 && op.operands[j]->type == op.result(0)->type)
        out.push_back({Mut::Forward, i, static_cast<int>(j)});
  }
  return out;
}

// Replaces the uses of each of op's results by a new constant `value` inserted before it.
bool constifyResults(ir::Function &f, Op &op, int value) {
  for (auto &r : op.results)
    if (!r->type.isScalar())
      return false;
  ir::Block &b = *op.parent;
  for (auto &r : op.results) {
    auto c = std::make_unique<Op>(OpKind::Const, op.loc);
    ir::Value *cv = c->addResult(r->type);
    if (r->type.isFloat())
      c->literal.f = value;
    else
      c->literal.i = static_cast<uint64_t>(value);
    ir::insertOp(b, positionIn(b, op), std::move(c));
    ir::replaceAllUsesWith(*f.body, r.get(), cv);
  }
  return true;
}

bool apply(ir::Module &m, const Mutation &mu) {
  ir::Function *k = kernelOf(m);
  switch (mu.kind) {
  case Mut::Dce:
    return ir::dce(m);
  case Mut::Fold: { // both always run
    bool folded = ir::canonicalize(m);
    return ir::dce(m) || folded;
  }
  case Mut::Inline:
    return ir::inlineCalls(m) && (ir::dce(m), true);
  case Mut::DropFunc: {
    const std::string &name = m.functions[mu.arg]->name;
    for (Op *op : preorder(m))
      if (op->kind == OpKind::Call && op->callee == name)
        return false;
    m.functions.erase(m.functions.begin() + mu.arg);
    return true;
  }
  case Mut::DropParam: {
    ir::Value *p = k->body->args[mu.arg].get();
    if (ir::countUses(*k->body).count(p))
      return false;
    if (size_t(mu.arg) < k->launch->args.size()) // in parameter order (a name may be empty)
      k->launch->args.erase(k->launch->args.begin() + mu.arg);
    k->body->args.erase(k->body->args.begin() + mu.arg);
    for (size_t i = 0; i < k->body->args.size(); ++i)
      k->body->args[i]->index = static_cast<unsigned>(i);
    return true;
  }
  case Mut::Grid:
  case Mut::Workgroup: {
    uint32_t &d = (mu.kind == Mut::Grid ? k->launch->grid : k->launch->workgroup)[mu.arg];
    if (d <= 1)
      return false;
    d /= 2;
    return true;
  }
  case Mut::BufferCount:
  case Mut::BufferFill: {
    ir::ArgInit &a = k->launch->args[mu.arg];
    if (a.kind == ir::ArgInit::Kind::Scalar)
      return false;
    if (mu.kind == Mut::BufferCount) {
      if (a.count <= 1)
        return false;
      a.count /= 2;
      return true;
    }
    if (a.kind == ir::ArgInit::Kind::Fill && a.a == 0)
      return false;
    a.kind = ir::ArgInit::Kind::Fill;
    a.a = a.b = 0;
    return true;
  }
  default:
    break;
  }
  std::vector<Op *> ops = preorder(m);
  if (mu.op >= ops.size())
    return false;
  Op &op = *ops[mu.op];
  ir::Function *f = owningFunction(m, op);
  ir::Block &b = *op.parent;
  switch (mu.kind) {
  case Mut::Erase: {
    auto uses = ir::countUses(*f->body);
    for (auto &r : op.results)
      if (uses.count(r.get()) && !constifyResults(*f, op, 0))
        return false;
    ir::eraseOp(b, positionIn(b, op));
    return true;
  }
  case Mut::Constify:
    if (!constifyResults(*f, op, mu.arg))
      return false;
    ir::eraseOp(b, positionIn(b, op));
    return true;
  case Mut::Forward:
    ir::replaceAllUsesWith(*f->body, op.result(0), op.operands[mu.arg]);
    ir::eraseOp(b, positionIn(b, op));
    return true;
  case Mut::Hoist: {
    // Runs region `arg` once in place of the op: region arguments become the op's initial
    // values, results become what the region yields (a while's first region passes its
    // arguments through, ending in `condition`).
    if (static_cast<size_t>(mu.arg) >= op.regions.size())
      return false;
    ir::Block &region = op.region(mu.arg);
    size_t firstInit = op.kind == OpKind::For ? 3 : 0;
    for (size_t i = 0; i < region.args.size(); ++i) {
      size_t operand = op.kind == OpKind::For ? (i == 0 ? 0 : firstInit + i - 1) : i;
      if (operand >= op.operands.size())
        return false;
      ir::replaceAllUsesWith(*f->body, region.args[i].get(), op.operands[operand]);
    }
    Op *term = region.terminator();
    std::vector<ir::Value *> yielded;
    if (term && term->kind == OpKind::Condition)
      yielded.assign(op.operands.begin(), op.operands.end());
    else if (term)
      yielded = term->operands;
    if (yielded.size() != op.results.size())
      return false;
    ir::moveOpsBefore(region, b, positionIn(b, op));
    for (size_t i = 0; i < yielded.size(); ++i)
      ir::replaceAllUsesWith(*f->body, op.result(static_cast<unsigned>(i)), yielded[i]);
    ir::eraseOp(b, positionIn(b, op));
    return true;
  }
  default:
    return false;
  }
}

} // namespace

int countOps(const std::string &text) {
  ir::ParseResult r = ir::parseModule(text, "count.tir", /*verify=*/false);
  if (!r.module)
    return -1;
  return static_cast<int>(preorder(*r.module).size());
}

std::string shrinkModule(const std::string &text, const StillFails &stillFails, double seconds,
                         ShrinkStats *stats) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(seconds));
  ShrinkStats local;
  ShrinkStats &st = stats ? *stats : local;
  std::string best = text;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t i = 0;; ++i) {
      if (Clock::now() > deadline) {
        st.timedOut = true;
        return best;
      }
      ir::ParseResult r = ir::parseModule(best, "shrink.tir", /*verify=*/false);
      if (!r.module)
        return best; // cannot happen: `best` always parsed once
      std::vector<Mutation> muts = listMutations(*r.module);
      if (i >= muts.size())
        break;
      if (!apply(*r.module, muts[i]))
        continue;
      std::string cand = ir::printModule(*r.module);
      if (cand == best)
        continue;
      ++st.attempts;
      if (!stillFails(cand))
        continue;
      ++st.accepted;
      best = std::move(cand);
      progress = true;
      --i; // the same position now names the next candidate
    }
  }
  return best;
}

} // namespace tessera::fuzz
