// Structural verifier of the kernel IR: functions and their signatures, regions and their
// terminators and arguments, visibility (dominance) of operands, shared_alloc placement and
// budget, calls and the absence of recursion. Per-op typing lives in verify_ops.cpp, launch
// specs in verify_launch.cpp. Never modifies the IR; reports every problem (in source order)
// but never dereferences an operand it could not prove to be a visible value.
#include "ir/verify/verifier.h"

#include "ir/core/limits.h"
#include "ir/verify/verifier_impl.h"
#include "ir/verify/verify_uniform.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace tessera::ir {
namespace {

using verify_detail::nameSuffix;
using verify_detail::quoted;
using verify_detail::Reporter;

constexpr int64_t kMaxSharedBytes = 64 * 1024;

/// What must end a region, and with which operand types.
struct RegionSpec {
  OpKind term = OpKind::Yield; // Yield, Condition or Return
  std::vector<Type> types;     // operand types of the terminator
  std::string where;           // "'for'", or "@f" for a function body
  Loc loc;                     // where to report a missing terminator
  bool kernelBody = false;
};

std::vector<Type> resultTypes(const Op &op) {
  std::vector<Type> out;
  for (auto &r : op.results)
    out.push_back(r->type);
  return out;
}

std::string count(size_t n) { return std::to_string(n); }

int64_t signExtendConst(const Op &c, Scalar t) {
  int w = bitWidth(t);
  uint64_t bits = c.literal.i;
  if (w < 64 && (bits >> (w - 1)) & 1)
    bits |= ~0ull << w;
  return static_cast<int64_t>(bits);
}

class FunctionVerifier {
public:
  FunctionVerifier(Reporter &r, const Function &f) : r_(r), m_(r.module()), f_(f) {}

  void run() {
    checkSignature();
    RegionSpec spec;
    spec.term = OpKind::Return;
    spec.where = "@" + f_.name;
    spec.loc = f_.loc;
    spec.kernelBody = f_.isKernel;
    if (!f_.isKernel)
      spec.types = f_.resultTypes;
    if (f_.body->parentOp)
      r_.error(f_.loc, "body of @" + f_.name + " has a parent op (IR construction bug)");
    size_t errorsBefore = r_.errorCount();
    verifyBlock(*f_.body, spec, /*checkTerminator=*/true);
    // The uniformity analysis assumes well-formed IR, so it runs only on a kernel that
    // passed every other check (matrix ops elsewhere are already reported).
    if (f_.isKernel && r_.errorCount() == errorsBefore && usesMatrixOps(f_))
      verify_detail::verifyMatrixUniformity(r_, f_);
    if (f_.isKernel)
      verify_detail::verifyLaunch(r_, f_);
  }

private:
  void checkSignature() {
    std::string who = (f_.isKernel ? "kernel @" : "function @") + f_.name;
    if (f_.isKernel && !f_.resultTypes.empty())
      r_.error(f_.loc, "kernel must not return values (@" + f_.name + " declares " +
                           count(f_.resultTypes.size()) + " result(s))");
    if (!f_.isKernel && f_.launch)
      r_.error(f_.loc, "device function @" + f_.name + " cannot have a launch spec");
    for (size_t i = 0; i < f_.body->args.size(); ++i) {
      const Value &p = *f_.body->args[i];
      std::string what = who + " parameter " + count(i + 1) + nameSuffix(p);
      if (p.type.isNone())
        r_.error(f_.loc, what + " has no type");
      else if (p.type.isMatrix())
        r_.error(f_.loc, what + " has type " + toString(p.type) +
                             "; matrices are values of matrix ops, never parameters");
      else if (f_.isKernel && p.type.kind == Type::Kind::Shared)
        r_.error(f_.loc, what + " has type " + toString(p.type) +
                             "; kernels take scalars and buffers (shared arrays come from "
                             "'shared_alloc')");
    }
    if (f_.isKernel)
      return;
    for (size_t i = 0; i < f_.resultTypes.size(); ++i)
      if (!f_.resultTypes[i].isScalar())
        r_.error(f_.loc, who + " result " + count(i + 1) + " has type " +
                             toString(f_.resultTypes[i]) + "; results must be scalars");
  }

  void verifyBlock(const Block &b, const RegionSpec &spec, bool checkTerminator) {
    std::vector<const Value *> scope;
    for (size_t i = 0; i < b.args.size(); ++i) {
      const Value *a = b.args[i].get();
      if (a->owner != &b || a->index != i || a->def)
        r_.error(spec.loc, "argument " + count(i + 1) + " of a region of " + spec.where +
                               " has broken owner links (IR construction bug)");
      visible_.insert(a);
      scope.push_back(a);
    }
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Op &op = *b.ops[i];
      bool isTerm = op.info().form == OpForm::Terminator;
      bool last = i + 1 == b.ops.size();
      if (isTerm && !last)
        r_.error(op.loc, quoted(op) + " must be the last op of its block");
      bool operandsOk = verifyOp(op, b);
      if (isTerm && last)
        verifyTerminator(op, spec, operandsOk);
      for (auto &res : op.results) {
        visible_.insert(res.get());
        scope.push_back(res.get());
      }
    }
    if (checkTerminator && !b.terminator()) {
      if (spec.term == OpKind::Return)
        r_.error(spec.loc, "body of " + spec.where + " must end with 'return'");
      else
        r_.error(spec.loc, "region of " + spec.where + " must end with '" +
                               std::string(opInfo(spec.term).name) + "'");
    }
    for (const Value *v : scope)
      visible_.erase(v);
  }

  /// Checks that every operand is a non-null value visible at `op`.
  bool checkOperands(const Op &op) {
    bool ok = true;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Value *v = op.operands[i];
      std::string which = quoted(op) + " operand " + count(i + 1);
      bool seen = std::find(op.operands.begin(), op.operands.begin() + i, v) !=
                  op.operands.begin() + i; // report a value used twice only once
      if (!v) {
        r_.error(op.loc, which + " is null");
        ok = false;
      } else if (!visible_.count(v)) {
        ok = false;
        if (seen)
          continue;
        // Do not dereference: the value may belong to an erased op.
        r_.error(op.loc, which + " is not visible here (it must be defined earlier in this "
                                 "region or in an enclosing one)");
      }
    }
    return ok;
  }

  void checkLinks(const Op &op, const Block &b) {
    bool broken = op.parent != &b;
    for (size_t i = 0; i < op.results.size(); ++i)
      broken |=
          op.results[i]->def != &op || op.results[i]->index != i || op.results[i]->owner != nullptr;
    for (auto &region : op.regions)
      broken |= !region || region->parentOp != &op;
    if (broken)
      r_.error(op.loc, quoted(op) + " has broken parent/result links (IR construction bug)");
  }

  /// Verifies one op (and its regions). Returns whether its operands are valid.
  bool verifyOp(const Op &op, const Block &b) {
    checkLinks(op, b);
    bool ok = checkOperands(op);
    if (ok)
      verify_detail::verifyMods(r_, op);
    OpForm form = op.info().form;
    if (verify_detail::hasFixedSignature(form) && ok)
      verify_detail::verifyFixedOp(r_, op);
    switch (form) {
    case OpForm::SharedAlloc:
      verifySharedAlloc(op, b);
      break;
    case OpForm::For:
      verifyFor(op, ok);
      break;
    case OpForm::If:
      verifyIf(op, ok);
      break;
    case OpForm::While:
      verifyWhile(op, ok);
      break;
    case OpForm::Call:
      if (ok)
        verifyCall(op);
      break;
    case OpForm::Terminator:
      if (!op.results.empty() || !op.regions.empty())
        r_.error(op.loc, quoted(op) + " must not have results or regions");
      break;
    case OpForm::MatrixLoad:
    case OpForm::MatrixStore:
    case OpForm::MatrixFill:
    case OpForm::MatrixMad:
    case OpForm::MatrixMap:
      verifyMatrix(op, ok);
      break;
    default:
      break;
    }
    return ok;
  }

  void verifyMatrix(const Op &op, bool ok) {
    if (!f_.isKernel)
      r_.error(op.loc,
               quoted(op) + " is only allowed in kernels (@" + f_.name + " is a device function)");
    if (ok)
      verify_detail::verifyMatrixOp(r_, op);
    if (op.kind != OpKind::MatrixMap || op.regions.size() != 1 || op.results.size() != 1)
      return;
    Type elem = Type::scalar(op.result(0)->type.elem);
    verifyBlock(op.region(0), yieldSpec(op, OpKind::Yield, {elem}), true);
  }

  void verifyTerminator(const Op &t, const RegionSpec &spec, bool operandsOk) {
    std::string tname = std::string(t.info().name);
    std::string expected = std::string(opInfo(spec.term).name);
    if (t.kind != spec.term) {
      r_.error(t.loc, quoted(t) + " cannot end " +
                          (spec.term == OpKind::Return ? "the body of " : "a region of ") +
                          spec.where + " (expected '" + expected + "')");
      return;
    }
    if (!operandsOk)
      return;
    if (t.kind == OpKind::Condition) {
      if (t.operands.size() != 1)
        r_.error(t.loc, "'condition' in " + spec.where + " takes one i1 operand, got " +
                            count(t.operands.size()));
      else if (!t.operands[0]->type.isBool())
        r_.error(t.loc, "'condition' operand must be i1, got " + toString(t.operands[0]->type));
      return;
    }
    if (spec.kernelBody && !t.operands.empty()) {
      r_.error(t.loc, "'return' in kernel " + spec.where + ": kernel must not return values");
      return;
    }
    std::string prefix = quoted(t) + " in " + spec.where;
    if (t.operands.size() != spec.types.size()) {
      r_.error(t.loc, prefix + (t.kind == OpKind::Return ? " returns " : " yields ") +
                          count(t.operands.size()) + " value(s), expected " +
                          count(spec.types.size()));
      return;
    }
    for (size_t i = 0; i < spec.types.size(); ++i)
      if (t.operands[i]->type != spec.types[i])
        r_.error(t.loc, prefix + " value " + count(i + 1) + " has type " +
                            toString(t.operands[i]->type) + ", expected " +
                            toString(spec.types[i]));
  }

  RegionSpec yieldSpec(const Op &op, OpKind term, std::vector<Type> types) const {
    RegionSpec s;
    s.term = term;
    s.types = std::move(types);
    s.where = quoted(op);
    s.loc = op.loc;
    return s;
  }

  /// Checks region arguments against `types` (the for's iv comes first, then iter values).
  void checkRegionArgs(const Op &op, const Block &region, const std::vector<Type> &types,
                       bool hasIv) {
    if (region.args.size() != types.size()) {
      r_.error(op.loc, quoted(op) + " region has " + count(region.args.size()) +
                           " argument(s), expected " + count(types.size()));
      return;
    }
    for (size_t i = 0; i < types.size(); ++i) {
      if (region.args[i]->type == types[i])
        continue;
      std::string what =
          hasIv && i == 0 ? " induction variable" : " iter arg " + count(i + (hasIv ? 0 : 1));
      r_.error(op.loc, quoted(op) + what + " has type " + toString(region.args[i]->type) +
                           ", expected " + toString(types[i]));
    }
  }

  /// Results of a loop must match its initial values, which must be scalars.
  void checkLoopResults(const Op &op, std::span<Value *const> inits) {
    if (op.results.size() != inits.size()) {
      r_.error(op.loc, quoted(op) + " has " + count(op.results.size()) + " result(s), expected " +
                           count(inits.size()) + " (one per iter value)");
      return;
    }
    for (size_t i = 0; i < inits.size(); ++i) {
      if (!inits[i]->type.isScalar() && !inits[i]->type.isMatrix())
        r_.error(op.loc, quoted(op) + " iter value " + count(i + 1) + " has type " +
                             toString(inits[i]->type) +
                             "; loop-carried values must be scalars or matrices");
      else if (op.results[i]->type != inits[i]->type)
        r_.error(op.loc, quoted(op) + " result " + count(i + 1) + " has type " +
                             toString(op.results[i]->type) + ", expected " +
                             toString(inits[i]->type) + " (the type of its init)");
    }
  }

  void checkRegionCount(const Op &op, size_t lo, size_t hi) {
    if (op.regions.size() >= lo && op.regions.size() <= hi)
      return;
    r_.error(op.loc, quoted(op) + " must have " + count(lo) + (lo == hi ? "" : " or " + count(hi)) +
                         " region(s), got " + count(op.regions.size()));
  }

  void verifyFor(const Op &op, bool ok) {
    checkRegionCount(op, 1, 1);
    if (op.operands.size() < 3) {
      r_.error(op.loc, "'for' expects lb, ub, step and iter values, got " +
                           count(op.operands.size()) + " operand(s)");
      ok = false;
    }
    if (ok) {
      const Type &lb = op.operands[0]->type;
      if (!lb.isInt() || lb.isBool()) // i1 bounds: no order (true is -1 signed, 1 unsigned)
        r_.error(op.loc,
                 "'for' bounds must be integers (i8, i16, i32 or i64), got " + toString(lb));
      static const char *kNames[] = {"lb", "ub", "step"};
      for (int i = 1; i < 3; ++i)
        if (op.operands[i]->type != lb)
          r_.error(op.loc, std::string("'for' ") + kNames[i] + " has type " +
                               toString(op.operands[i]->type) + ", expected " + toString(lb) +
                               " (the type of lb)");
      const Op *step = op.operands[2]->def;
      if (step && step->kind == OpKind::Const && op.operands[2]->type.isInt() &&
          signExtendConst(*step, op.operands[2]->type.elem) <= 0)
        r_.error(op.loc, "'for' step must be positive, got " +
                             std::to_string(signExtendConst(*step, op.operands[2]->type.elem)));
      std::span<Value *const> inits(op.operands.data() + 3, op.operands.size() - 3);
      checkLoopResults(op, inits);
      if (op.regions.size() == 1) {
        std::vector<Type> args{lb};
        for (Value *v : inits)
          args.push_back(v->type);
        checkRegionArgs(op, op.region(0), args, /*hasIv=*/true);
      }
    }
    for (auto &region : op.regions)
      verifyBlock(*region, yieldSpec(op, OpKind::Yield, resultTypes(op)), true);
  }

  void verifyIf(const Op &op, bool ok) {
    checkRegionCount(op, 1, 2);
    if (op.operands.size() != 1)
      r_.error(op.loc, "'if' expects 1 operand, got " + count(op.operands.size()));
    else if (ok && !op.operands[0]->type.isBool())
      r_.error(op.loc, "'if' condition must be i1, got " + toString(op.operands[0]->type));
    for (size_t i = 0; i < op.results.size(); ++i)
      if (!op.results[i]->type.isScalar() && !op.results[i]->type.isMatrix())
        r_.error(op.loc, "'if' result " + count(i + 1) + " has type " +
                             toString(op.results[i]->type) +
                             "; results must be scalars or matrices");
    bool missingElse = !op.results.empty() && (op.regions.size() < 2 || op.region(1).ops.empty());
    if (missingElse)
      r_.error(op.loc, "'if' with results needs an else region");
    for (size_t i = 0; i < op.regions.size(); ++i) {
      const Block &region = *op.regions[i];
      if (!region.args.empty())
        r_.error(op.loc, "'if' region must not have arguments");
      bool isMissingElse = missingElse && i == 1;
      verifyBlock(region, yieldSpec(op, OpKind::Yield, resultTypes(op)), !isMissingElse);
    }
  }

  void verifyWhile(const Op &op, bool ok) {
    checkRegionCount(op, 2, 2);
    if (ok) {
      checkLoopResults(op, op.operands);
      std::vector<Type> inits;
      for (Value *v : op.operands)
        inits.push_back(v->type);
      for (auto &region : op.regions)
        checkRegionArgs(op, *region, inits, /*hasIv=*/false);
    }
    for (size_t i = 0; i < op.regions.size(); ++i) {
      RegionSpec spec = i == 0 ? yieldSpec(op, OpKind::Condition, {Type::scalar(Scalar::I1)})
                               : yieldSpec(op, OpKind::Yield, resultTypes(op));
      verifyBlock(*op.regions[i], spec, true);
    }
  }

  void verifyCall(const Op &op) {
    if (!op.regions.empty())
      r_.error(op.loc, "'call' must not have regions");
    const Function *callee = m_.lookup(op.callee);
    if (!callee) {
      r_.error(op.loc, "call to undefined function @" + op.callee);
      return;
    }
    std::string who = "call to @" + op.callee;
    if (callee->isKernel) {
      r_.error(op.loc, who + ": only device functions ('func') can be called, @" + op.callee +
                           " is a kernel");
      return;
    }
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (op.operands[i]->type.isMatrix())
        r_.error(op.loc, who + " argument " + count(i + 1) + " is a matrix (" +
                             toString(op.operands[i]->type) + "); matrices cannot be passed");
    const auto &params = callee->body->args;
    if (op.operands.size() != params.size()) {
      r_.error(op.loc, who + " passes " + count(op.operands.size()) + " argument(s), expected " +
                           count(params.size()));
    } else {
      for (size_t i = 0; i < params.size(); ++i)
        if (op.operands[i]->type != params[i]->type)
          r_.error(op.loc, who + " argument " + count(i + 1) + " has type " +
                               toString(op.operands[i]->type) + ", expected " +
                               toString(params[i]->type));
    }
    if (op.results.size() != callee->resultTypes.size()) {
      r_.error(op.loc, who + " has " + count(op.results.size()) + " result(s), expected " +
                           count(callee->resultTypes.size()));
      return;
    }
    for (size_t i = 0; i < op.results.size(); ++i)
      if (op.results[i]->type != callee->resultTypes[i])
        r_.error(op.loc, who + " result " + count(i + 1) + " has type " +
                             toString(op.results[i]->type) + ", expected " +
                             toString(callee->resultTypes[i]));
  }

  void verifySharedAlloc(const Op &op, const Block &b) {
    if (!f_.isKernel || &b != f_.body.get()) {
      r_.error(op.loc, "'shared_alloc' is only allowed in a kernel's top-level block");
      return;
    }
    if (op.results.size() != 1 || op.result(0)->type.kind != Type::Kind::Shared ||
        op.result(0)->type.count <= 0)
      return; // reported by verifyFixedOp
    const Type &t = op.result(0)->type;
    int64_t n = std::min<int64_t>(t.count, kMaxSharedBytes + 1);
    sharedBytes_ += n * byteSize(t.elem);
    if (sharedBytes_ > kMaxSharedBytes && !sharedReported_) {
      sharedReported_ = true;
      r_.error(op.loc, "kernel @" + f_.name + " uses more than " + std::to_string(kMaxSharedBytes) +
                           " bytes (64 KiB) of shared memory (at least " +
                           std::to_string(sharedBytes_) + " at this 'shared_alloc')");
    }
  }

  Reporter &r_;
  const Module &m_;
  const Function &f_;
  std::unordered_set<const Value *> visible_;
  int64_t sharedBytes_ = 0;
  bool sharedReported_ = false;
};

/// Reports every call edge that closes a cycle of device functions, and calls nested deeper
/// than kMaxCallDepth (a function calling one that calls one ... : the interpreter and the
/// lowerings recurse once per level). Iterative: a chain of 100000 calls is refused here,
/// not by a stack overflow.
class CallGraphChecker {
public:
  CallGraphChecker(Reporter &r, const Module &m) : r_(r), m_(m) {}

  void run() {
    for (auto &f : m_.functions)
      walk(*f->body, [&](Op &op) {
        if (op.kind != OpKind::Call)
          return;
        const Function *callee = m_.lookup(op.callee);
        if (callee && !callee->isKernel)
          edges_[f.get()].push_back({callee, &op});
      });
    for (auto &f : m_.functions)
      visit(f.get());
    // The deepest chain, reported once at its first call.
    const Function *deepest = nullptr;
    for (auto &f : m_.functions)
      if (height_[f.get()] > kMaxCallDepth && (!deepest || height_[f.get()] > height_[deepest]))
        deepest = f.get();
    if (!deepest)
      return;
    for (auto &[callee, op] : edges_[deepest])
      if (height_[callee] + 1 == height_[deepest]) {
        r_.error(op->loc, "calls nest " + std::to_string(height_[deepest]) + " deep from @" +
                              deepest->name + " (at most " + std::to_string(kMaxCallDepth) + ")");
        return;
      }
  }

private:
  /// Depth-first from `root` with an explicit stack; height_ = the longest call chain below.
  void visit(const Function *root) {
    if (color_[root] != 0)
      return;
    struct Frame {
      const Function *f;
      size_t next;
    };
    std::vector<Frame> stack = {{root, 0}};
    color_[root] = 1;
    while (!stack.empty()) {
      Frame &top = stack.back();
      auto &out = edges_[top.f];
      if (top.next == out.size()) {
        color_[top.f] = 2;
        const Function *done = top.f;
        stack.pop_back();
        if (!stack.empty())
          height_[stack.back().f] = std::max(height_[stack.back().f], height_[done] + 1);
        continue;
      }
      auto [callee, op] = out[top.next++];
      int &c = color_[callee];
      if (c == 1) {
        r_.error(op->loc, "recursive call cycle through @" + callee->name);
      } else if (c == 2) {
        height_[top.f] = std::max(height_[top.f], height_[callee] + 1);
      } else {
        c = 1;
        stack.push_back({callee, 0}); // `top` is not used past this point
      }
    }
  }

  Reporter &r_;
  const Module &m_;
  std::unordered_map<const Function *, std::vector<std::pair<const Function *, const Op *>>> edges_;
  std::unordered_map<const Function *, int> color_; // 0 new, 1 on the stack, 2 done
  std::unordered_map<const Function *, int> height_; // calls nested below (0: calls nothing)
};

} // namespace

Diagnostics verifyModule(const Module &m) {
  if (Diagnostics limits = checkLimits(m); !limits.empty())
    return limits;
  Diagnostics diags;
  Reporter r(m, diags);
  std::unordered_set<std::string> names;
  for (auto &f : m.functions) {
    if (!names.insert(f->name).second)
      r.error(f->loc, "redefinition of @" + f->name);
    FunctionVerifier(r, *f).run();
  }
  CallGraphChecker(r, m).run();
  // Source order; ties keep discovery order (std::stable_sort trips a libstdc++ deprecation).
  std::vector<size_t> order(diags.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Loc &la = diags[a].loc, &lb = diags[b].loc;
    if (la.line != lb.line)
      return la.line < lb.line;
    return la.col != lb.col ? la.col < lb.col : a < b;
  });
  Diagnostics sorted;
  sorted.reserve(diags.size());
  for (size_t i : order)
    sorted.push_back(std::move(diags[i]));
  return sorted;
}

} // namespace tessera::ir
