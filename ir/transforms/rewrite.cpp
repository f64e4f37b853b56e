// IR rewriting utilities shared by the passes (see rewrite.h). Keeps ownership and parent
// links consistent; never decides whether a rewrite is legal.
#include "ir/transforms/rewrite.h"

#include <cassert>

namespace tessera::ir {

void replaceAllUsesWith(Block &scope, const Value *from, Value *to) {
  assert(from != to && "replacing a value by itself");
  walk(scope, [&](Op &op) {
    for (Value *&v : op.operands)
      if (v == from)
        v = to;
  });
}

std::unordered_map<const Value *, unsigned> countUses(Block &scope) {
  std::unordered_map<const Value *, unsigned> uses;
  walk(scope, [&](Op &op) {
    for (Value *v : op.operands)
      ++uses[v];
  });
  return uses;
}

void eraseOp(Block &b, size_t index) {
  assert(index < b.ops.size() && "erasing past the end of a block");
  b.ops.erase(b.ops.begin() + static_cast<std::ptrdiff_t>(index));
}

size_t moveOpsBefore(Block &from, Block &to, size_t pos) {
  assert(&from != &to && "moving ops within one block");
  size_t n = from.ops.size();
  if (from.terminator())
    --n;
  for (size_t i = 0; i < n; ++i) {
    from.ops[i]->parent = &to;
    to.ops.insert(to.ops.begin() + static_cast<std::ptrdiff_t>(pos + i), std::move(from.ops[i]));
  }
  from.ops.erase(from.ops.begin(), from.ops.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}

void makeConst(Op &op, const Literal &lit) {
  assert(op.results.size() == 1 && op.regions.empty() && "makeConst needs a single-result op");
  const Type &t = op.result(0)->type;
  assert(t.isScalar() && "constants are scalars");
  op.kind = OpKind::Const;
  op.mods = {};
  op.operands.clear();
  op.callee.clear();
  op.literal = {};
  if (t.isFloat())
    op.literal.f = lit.f;
  else
    op.literal.i = lit.i;
}

std::unique_ptr<Op> cloneOp(const Op &op, ValueMap &map) {
  auto c = std::make_unique<Op>(op.kind, op.loc);
  c->mods = op.mods;
  c->literal = op.literal;
  c->callee = op.callee;
  for (Value *v : op.operands) {
    auto it = map.find(v);
    c->operands.push_back(it == map.end() ? v : it->second);
  }
  for (auto &r : op.results)
    map[r.get()] = c->addResult(r->type, r->name);
  for (auto &region : op.regions) {
    auto blk = std::make_unique<Block>();
    blk->parentOp = c.get();
    for (auto &a : region->args)
      map[a.get()] = blk->addArg(a->type, a->name);
    for (auto &inner : region->ops)
      blk->append(cloneOp(*inner, map));
    c->regions.push_back(std::move(blk));
  }
  return c;
}

Op *insertOp(Block &b, size_t pos, std::unique_ptr<Op> op) {
  assert(pos <= b.ops.size() && "inserting past the end of a block");
  op->parent = &b;
  for (auto &r : op->regions)
    r->parentOp = op.get();
  Op *raw = op.get();
  b.ops.insert(b.ops.begin() + static_cast<std::ptrdiff_t>(pos), std::move(op));
  return raw;
}

Module cloneModule(const Module &m) {
  Module out;
  out.filename = m.filename;
  for (const auto &f : m.functions) {
    Function *c = out.addFunction(f->isKernel, f->name);
    c->resultTypes = f->resultTypes;
    c->launch = f->launch;
    c->loc = f->loc;
    ValueMap map;
    for (const auto &a : f->body->args)
      map[a.get()] = c->body->addArg(a->type, a->name);
    for (const auto &op : f->body->ops)
      c->body->append(cloneOp(*op, map));
  }
  return out;
}

} // namespace tessera::ir
