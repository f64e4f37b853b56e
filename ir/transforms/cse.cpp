// The cse pass: common subexpression elimination of pure, region-free ops.
//
// Scoped by region nesting: an op is replaced only by an equivalent op that dominates it
// (earlier in the same block, or in an enclosing block), never by one in a sibling region.
// Must never touch an op with side effects or regions (OpInfo::pure is the only authority).
// Matrix ops (matrix_fill, matrix_mad) are merged only with an equivalent op of the same
// block: one in an enclosing block may sit on the other side of subgroup-uniform control
// flow, which matrix ops must never be moved across (docs/ir.md "Matrix ops"); matrix_map
// holds a region and is never merged.
#include "ir/transforms/pass.h"
#include "ir/transforms/rewrite.h"

#include <bit>
#include <functional>
#include <unordered_map>
#include <vector>

namespace tessera::ir {
namespace {

/// Everything that makes two pure ops compute the same value.
struct Key {
  OpKind kind;
  Mods mods;
  uint64_t literal; // exact bits of the literal (const only): -0.0 and +0.0 differ
  std::vector<const Value *> operands;
  std::vector<Type> types;
  const Block *scope = nullptr; // matrix ops: the block they are in; null for others

  friend bool operator==(const Key &, const Key &) = default;
};

void combine(size_t &h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); }

struct KeyHash {
  size_t operator()(const Key &k) const {
    size_t h = static_cast<size_t>(k.kind);
    combine(h, k.mods.isUnsigned | k.mods.sat << 1 | static_cast<size_t>(k.mods.round) << 2 |
                   static_cast<size_t>(k.mods.pred) << 5 | static_cast<size_t>(k.mods.dim) << 10 |
                   static_cast<size_t>(k.mods.colMajor) << 12);
    combine(h, std::hash<const Block *>()(k.scope));
    combine(h, std::hash<uint64_t>()(k.literal));
    for (const Value *v : k.operands)
      combine(h, std::hash<const Value *>()(v));
    for (const Type &t : k.types)
      combine(h, static_cast<size_t>(t.kind) << 8 | static_cast<size_t>(t.elem) |
                     size_t{t.rows} << 16 | size_t{t.cols} << 32 |
                     static_cast<size_t>(t.use) << 48);
    return h;
  }
};

bool isCandidate(const Op &op) {
  return op.info().pure && op.regions.empty() && !op.results.empty();
}

Key keyOf(const Op &op) {
  Key k{op.kind, op.mods, 0, {}, {}, isMatrixForm(op.info().form) ? op.parent : nullptr};
  if (op.kind == OpKind::Const) {
    const Type &t = op.result(0)->type;
    k.literal = t.isFloat() ? std::bit_cast<uint64_t>(op.literal.f) : op.literal.i;
  }
  k.operands.assign(op.operands.begin(), op.operands.end());
  for (auto &r : op.results)
    k.types.push_back(r->type);
  return k;
}

class Cse {
public:
  bool run(Block &body) {
    block(body);
    return changed_;
  }

private:
  void block(Block &b) {
    std::vector<Key> inserted; // keys this scope added, removed when it closes
    for (size_t i = 0; i < b.ops.size();) {
      Op &op = *b.ops[i];
      for (Value *&v : op.operands) {
        auto it = replaced_.find(v);
        if (it != replaced_.end())
          v = it->second;
      }
      if (isCandidate(op)) {
        Key k = keyOf(op);
        auto it = available_.find(k);
        if (it != available_.end()) {
          for (size_t r = 0; r < op.results.size(); ++r)
            replaced_[op.results[r].get()] = it->second->results[r].get();
          eraseOp(b, i);
          changed_ = true;
          continue;
        }
        available_.emplace(k, &op);
        inserted.push_back(std::move(k));
      }
      for (auto &region : op.regions)
        block(*region);
      ++i;
    }
    for (const Key &k : inserted)
      available_.erase(k);
  }

  std::unordered_map<Key, Op *, KeyHash> available_;
  std::unordered_map<const Value *, Value *> replaced_;
  bool changed_ = false;
};

} // namespace

bool cse(Module &m) {
  bool changed = false;
  for (auto &f : m.functions)
    changed |= Cse().run(*f->body);
  return changed;
}

} // namespace tessera::ir
