// The fp64 reference interpreter: setup, the per-workgroup loop, op dispatch, pure scalar ops
// and work-item queries. Control flow and memory live in interp_exec.cpp, barriers and
// subgroups in interp_simt.cpp.
//
// It executes every work-item of a workgroup in lock-step with an active mask, so barriers
// and subgroup ops have exact semantics. Scalar semantics come only from numerics.cpp. It
// must never share code with a backend, and never crash on a verified module: anything it
// cannot run is reported as an error.
#include "ir/interp/interpreter.h"

#include "ir/core/diagnostic.h"
#include "ir/interp/interp_internal.h"
#include "ir/interp/numerics.h"

#include <cassert>
#include <unordered_map>

namespace tessera::ir {

Literal HostBuffer::get(int64_t i) const {
  assert(i >= 0 && i < size() && "HostBuffer::get out of range");
  return numerics::loadElement(bytes.data(), i, elem);
}

void HostBuffer::set(int64_t i, const Literal &v) {
  assert(i >= 0 && i < size() && "HostBuffer::set out of range");
  numerics::storeElement(bytes.data(), i, elem, v);
}

namespace interp {
namespace {

constexpr uint64_t kMaxLanes = uint64_t{1} << 20;

using SlotMap = std::unordered_map<const Value *, uint32_t>;

bool compileBlock(const Module &m, const Block &b, CBlock &out, SlotMap &slots, uint32_t &next,
                  std::string &err, const Op *&errOp, bool &hasMatrix) {
  for (const auto &a : b.args) {
    hasMatrix |= a->type.isMatrix();
    slots[a.get()] = next;
    out.args.push_back(next++);
  }
  out.ops.reserve(b.ops.size());
  for (const auto &op : b.ops) {
    COp c;
    c.op = op.get();
    for (const Value *v : op->operands) {
      auto it = slots.find(v);
      if (it == slots.end()) {
        err = "operand " + std::to_string(c.operands.size()) + " of '" +
              std::string(op->info().name) + "' is not defined before its use in this function";
        errOp = op.get();
        return false;
      }
      c.operands.push_back(it->second);
    }
    for (const auto &r : op->results) {
      hasMatrix |= r->type.isMatrix();
      slots[r.get()] = next;
      c.results.push_back(next++);
    }
    if (op->kind == OpKind::Call)
      c.callee = m.lookup(op->callee);
    c.regions.resize(op->regions.size());
    for (size_t i = 0; i < op->regions.size(); ++i)
      if (!compileBlock(m, *op->regions[i], c.regions[i], slots, next, err, errOp, hasMatrix))
        return false;
    out.ops.push_back(std::move(c));
  }
  out.hasTerm = b.terminator() != nullptr;
  return true;
}

} // namespace

Machine::Machine(const Module &m, const LaunchDims &dims, const InterpOptions &opts)
    : module_(m), dims_(dims), opts_(opts) {}

bool Machine::failNoOp(const std::string &msg) {
  Diagnostic d{module_.filename.empty() ? "<input>" : module_.filename, Loc{}, msg};
  error_ = d.str();
  return false;
}

bool Machine::fail(const Op &op, uint32_t lane, const std::string &msg) {
  std::string where;
  if (lane != kNoLane) {
    auto l = localId(lane);
    where = " (work-item local (" + std::to_string(l[0]) + ", " + std::to_string(l[1]) + ", " +
            std::to_string(l[2]) + ")";
  } else {
    where = " (";
  }
  where += (lane != kNoLane ? " of " : "") + std::string("workgroup (") +
           std::to_string(group_[0]) + ", " + std::to_string(group_[1]) + ", " +
           std::to_string(group_[2]) + "))";
  Diagnostic d{module_.filename.empty() ? "<input>" : module_.filename, op.loc,
               std::string(op.info().name) + ": " + msg + where};
  error_ = d.str();
  return false;
}

bool Machine::countSteps(const Op &op, uint64_t n) {
  steps_ += n;
  if (steps_ <= opts_.maxSteps)
    return true;
  return fail(op, kNoLane,
              "step limit exceeded (more than " + std::to_string(opts_.maxSteps) +
                  " op executions); the kernel may not terminate");
}

CFunc *Machine::compile(const Function &fn) {
  auto it = compiled_.find(&fn);
  if (it != compiled_.end())
    return it->second.get();
  auto cf = std::make_unique<CFunc>();
  cf->fn = &fn;
  SlotMap slots;
  uint32_t next = 0;
  std::string err;
  const Op *errOp = nullptr;
  if (!compileBlock(module_, *fn.body, cf->body, slots, next, err, errOp, cf->hasMatrix)) {
    if (errOp)
      fail(*errOp, kNoLane, err);
    else
      failNoOp(err);
    return nullptr;
  }
  cf->numSlots = next;
  CFunc *raw = cf.get();
  compiled_[&fn] = std::move(cf);
  return raw;
}

Frame *Machine::frameFor(const CFunc &cf) {
  auto &slot = frames_[&cf];
  if (!slot) {
    slot = std::make_unique<Frame>();
    slot->fn = &cf;
    slot->vals.resize(static_cast<size_t>(cf.numSlots) * lanes_);
    slot->mem.assign(cf.numSlots, nullptr);
    if (cf.hasMatrix)
      slot->mats.resize(static_cast<size_t>(cf.numSlots) * lanes_);
  }
  return slot.get();
}

bool Machine::execBlock(Frame &f, const CBlock &b, const Lanes &mask) {
  size_t n = b.bodySize();
  for (size_t i = 0; i < n; ++i) {
    const COp &c = b.ops[i];
    if (!countSteps(*c.op, mask.size()) || !execOp(f, c, mask))
      return false;
  }
  return true;
}

bool Machine::execOp(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (isScalarForm(op.info().form))
    return execPure(f, c, mask);
  switch (op.info().form) {
  case OpForm::WorkItem: return execWorkItem(f, c, mask);
  case OpForm::Load:
  case OpForm::Store: return execLoadStore(f, c, mask);
  case OpForm::SharedAlloc: return execSharedAlloc(f, c, mask);
  case OpForm::Atomic:
  case OpForm::AtomicCas: return execAtomic(f, c, mask);
  case OpForm::Barrier: return execBarrier(f, c, mask);
  case OpForm::SubgroupReduce: return execSubgroupReduce(f, c, mask);
  case OpForm::Shuffle: return execShuffle(f, c, mask);
  case OpForm::For: return execFor(f, c, mask);
  case OpForm::If: return execIf(f, c, mask);
  case OpForm::While: return execWhile(f, c, mask);
  case OpForm::Call: return execCall(f, c, mask);
  case OpForm::MatrixLoad:
  case OpForm::MatrixStore:
  case OpForm::MatrixFill:
  case OpForm::MatrixMad:
  case OpForm::MatrixMap: return execMatrix(f, c, mask);
  case OpForm::Terminator: return fail(op, kNoLane, "terminator in the middle of a block");
  default: break; // scalar forms are handled above
  }
  return fail(op, kNoLane, "unsupported op");
}

bool Machine::execPure(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (c.results.size() != 1 || c.operands.size() > 3)
    return fail(op, kNoLane, "malformed op (expected one result and at most three operands)");
  if (mask.empty())
    return true;
  uint32_t res = c.results[0];
  size_t n = c.operands.size();
  Literal in[3];
  if (op.kind == OpKind::Const) { // lane-invariant: evaluate once
    auto r = numerics::evalScalar(op, {});
    if (!r || !r->error.empty())
      return fail(op, kNoLane, r ? r->error : "cannot evaluate");
    for (uint32_t lane : mask)
      val(f, res, lane) = r->value;
    return true;
  }
  for (uint32_t lane : mask) {
    for (size_t k = 0; k < n; ++k)
      in[k] = val(f, c.operands[k], lane);
    auto r = numerics::evalScalar(op, std::span<const Literal>(in, n));
    if (!r)
      return fail(op, lane, "not a scalar op");
    if (!r->error.empty())
      return fail(op, lane, r->error);
    val(f, res, lane) = r->value;
  }
  return true;
}

bool Machine::execWorkItem(Frame &f, const COp &c, const Lanes &mask) {
  const Op &op = *c.op;
  if (c.results.size() != 1 || !op.results[0]->type.isInt())
    return fail(op, kNoLane, "work-item query must have one integer result");
  Scalar t = op.results[0]->type.elem;
  unsigned d = op.mods.dim;
  bool usesDim = op.info().mods == ModSet::Dim;
  if (usesDim && d > 2)
    return fail(op, kNoLane, "dimension must be x, y or z");
  uint32_t sg = opts_.subgroupSize;
  for (uint32_t lane : mask) {
    uint64_t v = 0;
    switch (op.kind) {
    case OpKind::GlobalId: v = uint64_t{group_[d]} * dims_.workgroup[d] + localId(lane)[d]; break;
    case OpKind::LocalId: v = localId(lane)[d]; break;
    case OpKind::GroupId: v = group_[d]; break;
    case OpKind::LocalSize: v = dims_.workgroup[d]; break;
    case OpKind::NumGroups: v = dims_.grid[d]; break;
    case OpKind::SubgroupSize: v = sg; break;
    case OpKind::SubgroupId: v = lane / sg; break;
    case OpKind::SubgroupLocalId: v = lane % sg; break;
    default: return fail(op, kNoLane, "unknown work-item query");
    }
    val(f, c.results[0], lane).i = numerics::truncInt(v, t);
  }
  return true;
}

InterpResult Machine::run(const Function &kernel, std::span<KernelArg> args) {
  auto result = [&](bool ok) { return InterpResult{ok, ok ? std::string() : error_}; };
  uint64_t total = uint64_t{dims_.workgroup[0]} * dims_.workgroup[1] * dims_.workgroup[2];
  if (!kernel.isKernel)
    return result(failNoOp("@" + kernel.name + " is not a kernel"));
  if (total == 0 || total > kMaxLanes)
    return result(failNoOp("workgroup size " + std::to_string(total) + " is out of range (1 to " +
                           std::to_string(kMaxLanes) + ")"));
  if (dims_.grid[0] == 0 || dims_.grid[1] == 0 || dims_.grid[2] == 0)
    return result(true); // an empty grid runs nothing
  if (opts_.subgroupSize == 0)
    return result(failNoOp("subgroup size must be positive"));
  lanes_ = static_cast<uint32_t>(total);
  if (!checkMatrixLaunch(kernel))
    return result(false);
  CFunc *cf = compile(kernel);
  if (!cf)
    return result(false);
  Frame &f = *frameFor(*cf);
  std::vector<Value *> params = kernel.params();
  if (args.size() != params.size())
    return result(failNoOp("@" + kernel.name + " takes " + std::to_string(params.size()) +
                           " arguments, got " + std::to_string(args.size())));
  params_.assign(params.size(), MemRef{});
  for (size_t i = 0; i < params.size(); ++i) {
    const Type &t = params[i]->type;
    uint32_t slot = cf->body.args[i];
    std::string what = "argument %" + params[i]->name + " of @" + kernel.name;
    if (t.kind == Type::Kind::Buffer) {
      HostBuffer *b = args[i].buffer;
      if (!b)
        return result(failNoOp(what + " needs a buffer"));
      if (b->elem != t.elem)
        return result(failNoOp(what + " is a buffer of " + std::string(scalarName(b->elem)) +
                               ", expected " + std::string(scalarName(t.elem))));
      params_[i] = MemRef{b->bytes.data(), b->size(), b->elem};
      f.mem[slot] = &params_[i];
      continue;
    }
    if (!t.isScalar())
      return result(failNoOp(what + " has unsupported type " + toString(t)));
    Literal v = args[i].scalar;
    if (t.isFloat())
      v.f = numerics::roundToFloat(v.f, t.elem);
    else
      v.i = numerics::truncInt(v.i, t.elem);
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      val(f, slot, lane) = v;
  }
  Lanes all(lanes_);
  for (uint32_t i = 0; i < lanes_; ++i)
    all[i] = i;
  f.active = true;
  for (uint32_t z = 0; z < dims_.grid[2]; ++z)
    for (uint32_t y = 0; y < dims_.grid[1]; ++y)
      for (uint32_t x = 0; x < dims_.grid[0]; ++x) {
        group_ = {x, y, z};
        if (!execBlock(f, cf->body, all))
          return result(false);
      }
  return result(true);
}

} // namespace interp

InterpResult interpret(const Module &m, const Function &kernel, const LaunchDims &dims,
                       std::span<KernelArg> args, const InterpOptions &opts) {
  interp::Machine machine(m, dims, opts);
  return machine.run(kernel, args);
}

} // namespace tessera::ir
