// The size limits of ir/core/limits.h, checked on a module however it was made (the parser
// already stops at them; modules built in C++ are checked here): name lengths, ops per
// function and per module, region nesting. Iterative, so that a module nested past the
// limit cannot overflow the stack while it is being refused; linear in the module's size.
#include "ir/core/limits.h"
#include "ir/verify/verifier.h"
#include "ir/verify/verifier_impl.h"

#include <string>
#include <utility>
#include <vector>

namespace tessera::ir {
namespace {

std::string shortened(const std::string &name) {
  return name.size() <= 32 ? name : name.substr(0, 16) + "...";
}

class LimitChecker {
public:
  LimitChecker(verify_detail::Reporter &r, const Function &f) : r_(r), f_(f) {}

  /// Checks `f`; returns the ops it counted.
  size_t run() {
    checkName(f_.loc, "function", "@", f_.name);
    std::vector<std::pair<const Block *, int>> stack = {{f_.body.get(), 1}};
    size_t ops = 0;
    bool depthReported = false;
    while (!stack.empty()) {
      auto [block, depth] = stack.back();
      stack.pop_back();
      for (const auto &arg : block->args)
        checkName(block->parentOp ? block->parentOp->loc : f_.loc, "value", "%", arg->name);
      for (const auto &op : block->ops) {
        ops += countsTowardsOpLimits(op->kind);
        for (const auto &res : op->results)
          checkName(op->loc, "value", "%", res->name);
        if (op->kind == OpKind::Call)
          checkName(op->loc, "callee", "@", op->callee);
        if (op->regions.empty())
          continue;
        if (depth >= kMaxRegionDepth) {
          if (!depthReported)
            r_.error(op->loc, "regions nested too deeply (the limit is " +
                                  std::to_string(kMaxRegionDepth) + ")");
          depthReported = true;
          continue;
        }
        for (const auto &region : op->regions)
          stack.push_back({region.get(), depth + 1});
      }
    }
    if (ops > kMaxOpsPerFunction)
      r_.error(f_.loc, "@" + shortened(f_.name) + " has " + std::to_string(ops) +
                           " ops, more than the limit of " + std::to_string(kMaxOpsPerFunction) +
                           " per function");
    return ops;
  }

private:
  void checkName(Loc loc, const char *what, const char *sigil, const std::string &name) {
    if (name.size() <= kMaxNameBytes)
      return;
    r_.error(loc, std::string(what) + " name '" + sigil + shortened(name) + "' is " +
                      std::to_string(name.size()) + " bytes long; the limit is " +
                      std::to_string(kMaxNameBytes));
  }

  verify_detail::Reporter &r_;
  const Function &f_;
};

} // namespace

Diagnostics checkLimits(const Module &m) {
  Diagnostics diags;
  verify_detail::Reporter r(m, diags);
  size_t ops = 0;
  for (const auto &f : m.functions)
    ops += LimitChecker(r, *f).run();
  if (ops > kMaxOpsPerModule)
    r.error({}, "the module has " + std::to_string(ops) + " ops, more than the limit of " +
                    std::to_string(kMaxOpsPerModule));
  return diags;
}

} // namespace tessera::ir
