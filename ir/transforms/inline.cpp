// The inline pass: replaces every call to a device function by a copy of its body.
//
// The callee's ops (minus its `return`) are cloned before the call with parameters mapped to
// the arguments, and the call's results are replaced by the returned values. Repeats until
// no call is left. Functions stay in the module. Must never loop forever on invalid
// (recursive) IR: rounds are bounded by the number of functions, and a function is never
// inlined into itself.
#include "ir/transforms/pass.h"
#include "ir/transforms/rewrite.h"

namespace tessera::ir {
namespace {

class Inliner {
public:
  Inliner(Module &m, Function &f) : m_(m), f_(f) {}

  bool run() { return block(*f_.body); }

private:
  bool block(Block &b) {
    bool changed = false;
    for (size_t i = 0; i < b.ops.size();) {
      Op &op = *b.ops[i];
      if (op.kind == OpKind::Call) {
        if (size_t n = inlineCall(b, i)) {
          changed = true;
          i += n - 1; // the cloned ops are inlined in the next round
          continue;
        }
      }
      for (auto &region : op.regions)
        changed |= block(*region);
      ++i;
    }
    return changed;
  }

  /// Inlines the call at `b.ops[i]`. Returns 0 if it could not, else 1 + the number of
  /// cloned ops (which now sit at i...).
  size_t inlineCall(Block &b, size_t i) {
    Op &call = *b.ops[i];
    Function *callee = m_.lookup(call.callee);
    if (!callee || callee->isKernel || callee == &f_)
      return 0;
    Block &body = *callee->body;
    Op *ret = body.terminator();
    if (!ret || ret->kind != OpKind::Return || ret->operands.size() != call.results.size() ||
        body.args.size() != call.operands.size())
      return 0;
    ValueMap map;
    for (size_t k = 0; k < body.args.size(); ++k)
      map[body.args[k].get()] = call.operands[k];
    size_t n = 0;
    for (size_t k = 0; k + 1 < body.ops.size(); ++k)
      insertOp(b, i + n++, cloneOp(*body.ops[k], map));
    for (size_t k = 0; k < call.results.size(); ++k) {
      auto it = map.find(ret->operands[k]);
      Value *v = it == map.end() ? ret->operands[k] : it->second;
      replaceAllUsesWith(*f_.body, call.result(static_cast<unsigned>(k)), v);
    }
    eraseOp(b, i + n);
    return n + 1;
  }

  Module &m_;
  Function &f_;
};

} // namespace

bool inlineCalls(Module &m) {
  bool changed = false;
  // In an acyclic call graph every call chain is shorter than the number of functions.
  for (size_t round = 0; round <= m.functions.size(); ++round) {
    bool any = false;
    for (auto &f : m.functions)
      any |= Inliner(m, *f).run();
    if (!any)
      break;
    changed = true;
  }
  return changed;
}

} // namespace tessera::ir
