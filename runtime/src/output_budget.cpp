// Per-output error budgets by data flow (see output_budget.h and docs/conformance.md).
//
// The analysis is a may-reach fixpoint over the structured IR: every SSA value carries the
// set of float ops whose error can reach it; memory (each buffer parameter, each shared_alloc)
// carries the union of everything ever stored into it, flow-insensitively, so that what goes
// through memory, loops, atomics and calls is over- rather than under-approximated. Control
// dependence (a store under an `if` on a float compare) is not tracked: only data reaches.
#include "tessera/output_budget.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace tessera {
namespace {

using ir::OpKind;
using ir::Scalar;

// What can reach one value: contributing op instances, and whether an error has passed
// through an addition (where cancellation can make a small result's relative error total).
struct Flow {
  std::set<const ir::Op *> ops;
  bool cancel = false;

  bool merge(const Flow &o) {
    size_t before = ops.size();
    ops.insert(o.ops.begin(), o.ops.end());
    bool grew = ops.size() != before || (o.cancel && !cancel);
    cancel |= o.cancel;
    return grew;
  }
};

bool isFloatSum(const ir::Op &op) {
  return (op.kind == OpKind::SubgroupAdd || op.kind == OpKind::AtomicAdd) && !op.results.empty() &&
         ir::isFloatScalar(op.results[0]->type.elem);
}

/// A matrix_mad with float accumulators: a sum of K + 1 terms in the target's order, judged by
/// the precision contract of docs/ir.md ("Matrix ops") through the magnitude run.
bool isFloatMad(const ir::Op &op) {
  return op.kind == OpKind::MatrixMad && !op.results.empty() &&
         ir::isFloatScalar(op.results[0]->type.elem);
}

bool isAdditive(OpKind k) {
  return k == OpKind::Add || k == OpKind::Sub || k == OpKind::Fma || k == OpKind::SubgroupAdd ||
         k == OpKind::AtomicAdd || k == OpKind::MatrixMad;
}

class Analysis {
public:
  Analysis(const ir::Module &m, PrecisionProfile p) : m_(m), profile_(p) {}

  // The kernel's buffer parameters become memory objects 0..B-1 (in parameter order).
  void run(const ir::Function &kernel) {
    for (const ir::Value *p : kernel.params())
      if (p->type.kind == ir::Type::Kind::Buffer)
        kernelEnv_[p] = newMemory();
    // Sets only grow and are bounded by the ops of the module: this terminates; the cap is a
    // guard against a bug, not a limit real kernels reach.
    for (int iter = 0; iter < 1000; ++iter) {
      changed_ = false;
      Flow ret;
      walkBlock(*kernel.body, kernelEnv_, ret, 0);
      if (!changed_)
        break;
    }
  }
  const Flow &memory(const ir::Value *bufferParam) { return mem_[kernelEnv_.at(bufferParam)]; }

private:
  using Env = std::map<const ir::Value *, int>; // buffer / shared values -> memory object

  int newMemory() {
    mem_.emplace_back();
    return static_cast<int>(mem_.size() - 1);
  }
  // -1: a memory value the analysis cannot name (reads and writes then touch all memory).
  int memoryOf(const ir::Value *v, const Env &env) {
    if (auto it = env.find(v); it != env.end())
      return it->second;
    if (v->def && v->def->kind == OpKind::SharedAlloc) {
      auto [it, fresh] = shared_.try_emplace(v->def, -1);
      if (fresh)
        it->second = newMemory();
      return it->second;
    }
    return -1;
  }
  Flow readMemory(int id) {
    if (id >= 0)
      return mem_[id];
    Flow all;
    for (const Flow &f : mem_)
      all.merge(f);
    return all;
  }
  void writeMemory(int id, const Flow &f) {
    for (size_t i = 0; i < mem_.size(); ++i)
      if (id < 0 || static_cast<int>(i) == id)
        changed_ |= mem_[i].merge(f);
  }
  void setResult(const ir::Op &op, const Flow &f) {
    for (const auto &r : op.results)
      changed_ |= values_[r.get()].merge(f);
  }
  static bool isMemory(const ir::Value *v) { return v->type.isMemory(); }

  // The op's own contribution: a nonzero budget at its result type, or a reordered sum.
  bool contributes(const ir::Op &op) const {
    if (isFloatSum(op) || isFloatMad(op))
      return true;
    if (op.results.size() != 1 || !op.results[0]->type.isFloat())
      return false;
    return opUlpBudget(op.kind, op.results[0]->type.elem, profile_) > 0;
  }

  Flow yields(const ir::Op &op) {
    Flow y;
    for (const auto &r : op.regions)
      if (const ir::Op *t = r->terminator())
        for (const ir::Value *v : t->operands)
          y.merge(values_[v]);
    return y;
  }

  void walkCall(const ir::Op &op, const Env &env, const Flow &in, int depth) {
    const ir::Function *callee = m_.lookup(op.callee);
    if (!callee || depth > 32) { // unknown or too deep: everything may reach everything
      Flow all = in;
      all.merge(readMemory(-1));
      writeMemory(-1, all);
      setResult(op, all);
      return;
    }
    Env inner;
    std::vector<ir::Value *> params = callee->params();
    for (size_t i = 0; i < params.size() && i < op.operands.size(); ++i) {
      if (isMemory(params[i]))
        inner[params[i]] = memoryOf(op.operands[i], env);
      else
        changed_ |= values_[params[i]].merge(values_[op.operands[i]]);
    }
    Flow ret;
    walkBlock(*callee->body, inner, ret, depth + 1);
    setResult(op, ret);
  }

  void walkOp(const ir::Op &op, const Env &env, Flow &ret, int depth) {
    Flow in;
    bool errorIn = false;
    for (const ir::Value *v : op.operands)
      if (!isMemory(v)) {
        const Flow &f = values_[v];
        errorIn |= !f.ops.empty();
        in.merge(f);
      }
    if (contributes(op))
      in.ops.insert(&op);
    if (isAdditive(op.kind) && errorIn)
      in.cancel = true;
    switch (op.info().form) {
    case ir::OpForm::Load:
    case ir::OpForm::MatrixLoad:
      in.merge(readMemory(memoryOf(op.operands[0], env)));
      return setResult(op, in);
    case ir::OpForm::Store:
    case ir::OpForm::MatrixStore:
      return writeMemory(memoryOf(op.operands[1], env), in);
    case ir::OpForm::Atomic:
    case ir::OpForm::AtomicCas: {
      int id = memoryOf(op.operands[0], env);
      in.merge(readMemory(id)); // the old value takes part in the new one
      writeMemory(id, in);
      return setResult(op, in);
    }
    case ir::OpForm::SharedAlloc:
      memoryOf(op.results[0].get(), env);
      return;
    case ir::OpForm::Call:
      return walkCall(op, env, in, depth);
    case ir::OpForm::Terminator:
      if (op.kind == OpKind::Return)
        ret.merge(in);
      return;
    default:
      break;
    }
    if (op.regions.empty())
      return setResult(op, in);
    // for / if / while: region arguments see the operands and every value yielded back
    // (loop-carried); results see the operands and every yield.
    Flow carried = in;
    carried.merge(yields(op));
    for (const auto &r : op.regions) {
      for (const auto &a : r->args)
        changed_ |= values_[a.get()].merge(carried);
      walkBlock(*r, env, ret, depth);
    }
    carried.merge(yields(op));
    setResult(op, carried);
  }

  void walkBlock(const ir::Block &b, const Env &env, Flow &ret, int depth) {
    for (const auto &op : b.ops)
      walkOp(*op, env, ret, depth);
  }

  const ir::Module &m_;
  PrecisionProfile profile_;
  std::map<const ir::Value *, Flow> values_;
  std::vector<Flow> mem_;
  std::map<const ir::Op *, int> shared_;
  Env kernelEnv_;
  bool changed_ = false;
};

} // namespace

PrecisionProfile declaredProfile(const std::string &backend) {
  const Target *t = defaultTargets().forBackend(backend);
  return t ? t->declaredProfile() : PrecisionProfile::Full;
}

PrecisionProfile profileForDevice(const std::string &deviceName) {
  return declaredProfile(deviceName.substr(0, deviceName.find(':')));
}

double opUlpBudget(ir::OpKind k, ir::Scalar t, PrecisionProfile p) {
  double full = ir::opInfo(k).ulpBudget(t).value_or(0);
  if (p == PrecisionProfile::Full || (t != Scalar::F16 && t != Scalar::F32))
    return full;
  // Largest |x| with a finite result: exp (ln of the type's max) and exp2 (its max exponent).
  double xExp = t == Scalar::F32 ? 88.8 : 11.1, xExp2 = t == Scalar::F32 ? 128 : 16;
  double exp = 3 + 2 * xExp, exp2 = 3 + 2 * xExp2;
  switch (k) {
  case OpKind::Exp:
    return std::max(full, exp);
  case OpKind::Exp2:
    return std::max(full, exp2);
  case OpKind::Pow: // exp2(y log2 x): log2's 3 ULP scaled by |y log2 x| <= xExp2, through exp2
    return std::max(full, exp2 + 3 * std::log(2.0) * xExp2);
  case OpKind::Tanh:
  case OpKind::Sigmoid: // one exp, then an add and a division
    return std::max(full, exp + 2);
  default:
    return full;
  }
}

std::vector<OutputBudget> outputBudgets(const ir::Module &m, const ir::Function &kernel,
                                        uint32_t subgroupSize, uint64_t workItems,
                                        PrecisionProfile profile) {
  Analysis a(m, profile);
  a.run(kernel);
  std::vector<OutputBudget> out;
  size_t bi = 0;
  for (const ir::Value *p : kernel.params()) {
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    size_t idx = bi++;
    if (p->type.access == ir::Access::ReadOnly)
      continue;
    OutputBudget b;
    b.param = p->name;
    b.bufferIndex = idx;
    b.elem = p->type.elem;
    const Flow &f = a.memory(p);
    b.mayCancel = f.cancel;
    std::vector<const ir::Op *> ops(f.ops.begin(), f.ops.end());
    std::sort(ops.begin(), ops.end(), [](const ir::Op *x, const ir::Op *y) {
      return std::tie(x->loc.line, x->loc.col, x->kind) <
             std::tie(y->loc.line, y->loc.col, y->kind);
    });
    for (const ir::Op *op : ops) {
      Scalar t = op->results[0]->type.elem;
      if (isFloatMad(*op)) {
        // The magnitude run stores (K+1) S + (K+1) 2^-102 for such an element (K: every
        // product summed into it, S = |c| + sum |a b|), so u times it is the contract's
        // (K+1) u S + (K+1) 2^-126 with u = 2^-24 for f32 accumulators.
        b.sumFactor = std::max(b.sumFactor, std::ldexp(1.0, -ir::mantissaBits(t)));
      } else if (isFloatSum(*op)) {
        double n = op->kind == OpKind::SubgroupAdd ? std::max<uint32_t>(subgroupSize, 1)
                                                   : std::max<uint64_t>(workItems, 1);
        double k = op->kind == OpKind::SubgroupAdd ? 1 : 2;
        b.sumFactor = std::max(b.sumFactor, k * (n - 1) * std::ldexp(1.0, -ir::mantissaBits(t)));
      } else if (ir::isFloatScalar(b.elem)) {
        b.ulp += opUlpBudget(op->kind, t, profile) *
                 std::ldexp(1.0, ir::mantissaBits(b.elem) - ir::mantissaBits(t));
      }
      b.contributors.push_back(
          std::string(op->info().name) + "." + std::string(ir::scalarName(t)) +
          (op->loc.line ? " (line " + std::to_string(op->loc.line) + ")" : ""));
    }
    out.push_back(std::move(b));
  }
  return out;
}

} // namespace tessera
