// The kernel structure of the OpenCL C codegen: the entry point in the ABI of
// backends/opencl/opencl_abi.h, blocks and op dispatch, structured control flow (`if` and
// `while` as C ifs and loops with their iteration values as variables; `for` in oc_for.cpp),
// inlined calls and the deadline polls.
//
// Must never change the meaning of the IR's `for` rules (docs/ir.md "Faults": a step <= 0
// runs nothing, the loop ends when iv + step would wrap) or poll the cancel flag outside a
// loop that can run unboundedly.
#include "backends/opencl/codegen/oc_emitter.h"
#include "backends/opencl/opencl_abi.h"
#include "ir/core/limits.h"
#include "ir/verify/verifier.h"

#include <cstdio>

namespace tessera::opencl {
namespace detail {

using ir::OpForm;
using ir::OpKind;
using ir::Scalar;

bool Emitter::fail(const std::string &msg) {
  if (err_.empty()) {
    std::string where = module_.filename.empty() ? "<module>" : module_.filename;
    if (curOp_)
      where += ":" + loc();
    err_ = where +
           ": error: " + (curOp_ ? "'" + std::string(curOp_->info().name) + "': " : std::string()) +
           msg;
  }
  return false;
}

void Emitter::line(const std::string &s) {
  maxIndent_ = std::max(maxIndent_, indent_);
  body_.append(padding(), ' ');
  body_ += s;
  body_ += '\n';
}

std::string Emitter::fresh() { return "v" + std::to_string(next_++); }

std::string Emitter::def(const ir::Value *v, const std::string &expr) {
  std::string n = fresh();
  line(regType(v->type.elem) + " " + n + " = " + expr + ";");
  vals_[v] = n;
  return n;
}

std::string Emitter::val(const ir::Value *v) {
  auto it = vals_.find(v);
  if (it != vals_.end())
    return it->second;
  fail("internal error: value %" + v->name + " used before it is defined");
  return "0";
}

void Emitter::need(const std::string &helper) {
  if (!helpers_.insert(helper).second)
    return;
  for (const Helper &h : helperTable()) {
    if (h.name != helper)
      continue;
    std::string deps = h.deps;
    for (size_t p = 0; p < deps.size();) {
      size_t e = deps.find(' ', p);
      if (e == std::string::npos)
        e = deps.size();
      if (e > p)
        need(deps.substr(p, e - p));
      p = e + 1;
    }
  }
}

uint32_t Emitter::locLine() const { return curOp_ ? curOp_->loc.line : 0; }
uint32_t Emitter::locCol() const { return curOp_ ? curOp_->loc.col : 0; }
std::string Emitter::loc() const {
  return std::to_string(locLine()) + ":" + std::to_string(locCol());
}

std::string Emitter::faultCall(const std::string &kind, uint32_t param, const std::string &index,
                               const std::string &count) const {
  return "tsr_fault(control, " + kind + ", " + std::to_string(locLine()) + "u, " +
         std::to_string(locCol()) + "u, " +
         (param == UINT32_MAX ? std::string("0xFFFFFFFFu") : std::to_string(param) + "u") +
         ", (long)(" + index + "), (long)(" + count + "));";
}

std::string Emitter::regType(Scalar s) {
  switch (s) {
  case Scalar::I1:
    return "bool";
  case Scalar::I8:
    return "char";
  case Scalar::I16:
    return "short";
  case Scalar::I32:
    return "int";
  case Scalar::I64:
    return "long";
  case Scalar::F16:
  case Scalar::BF16:
  case Scalar::F32:
    return "float";
  case Scalar::F64:
    return "double";
  }
  return "int";
}

std::string Emitter::storeType(Scalar s) {
  switch (s) {
  case Scalar::I1:
    return "uchar";
  case Scalar::F16:
  case Scalar::BF16:
    return "ushort";
  default:
    return regType(s);
  }
}

std::string Emitter::unsignedType(Scalar s) {
  switch (s) {
  case Scalar::I1:
  case Scalar::I8:
    return "uchar";
  case Scalar::I16:
    return "ushort";
  case Scalar::I32:
    return "uint";
  default:
    return "ulong";
  }
}

// ------------------------------------------------------------------ blocks and ops

bool Emitter::emitBlock(const ir::Block &b, std::vector<std::string> *yields) {
  for (const auto &op : b.ops) {
    curOp_ = op.get();
    if (op->info().form == OpForm::Terminator) {
      if (yields)
        for (const ir::Value *v : op->operands)
          yields->push_back(v->type.isMatrix() ? vals_[v] : val(v));
      continue;
    }
    if (!emitOp(*op))
      return false;
  }
  return err_.empty();
}

bool Emitter::emitOp(const ir::Op &op) {
  if (ir::isMatrixForm(op.info().form))
    return emitMatrix(op);
  switch (op.info().form) {
  case OpForm::Convert:
    return emitConvert(op);
  case OpForm::Bitcast:
    return emitBitcast(op);
  case OpForm::Load:
    return emitLoad(op);
  case OpForm::Store:
    return emitStore(op);
  case OpForm::SharedAlloc:
    return emitSharedAlloc(op);
  case OpForm::Atomic:
  case OpForm::AtomicCas:
    return emitAtomic(op);
  case OpForm::WorkItem:
    return emitWorkItem(op);
  case OpForm::Barrier: // a helper per site: see Emitter::finish (opencl_codegen.cpp)
    barrierSite(" // " + loc() + " barrier");
    return true;
  case OpForm::SubgroupReduce:
  case OpForm::Shuffle:
    return emitSubgroup(op);
  case OpForm::If:
    return emitIf(op);
  case OpForm::For:
    return emitFor(op);
  case OpForm::While:
    return emitWhile(op);
  case OpForm::Call:
    return emitCall(op);
  default:
    if (ir::isScalarForm(op.info().form))
      return emitScalar(op);
    return fail("not supported by the OpenCL backend");
  }
}

// ------------------------------------------------------------------ control flow

std::string Emitter::declareVar(const ir::Type &t, const std::string &init) {
  if (t.isMatrix()) {
    std::string n;
    line(declareMatrix(t, &n));
    if (!init.empty())
      line(copyMatrix(t, n, init));
    return n;
  }
  std::string n = fresh();
  line(regType(t.elem) + " " + n + (init.empty() ? "" : " = " + init) + ";");
  return n;
}

void Emitter::assignVars(const std::vector<std::string> &dst, const std::vector<std::string> &src,
                         const std::vector<ir::Type> &types) {
  // A yield may name another variable of the same set (a swap): copy through temporaries
  // whenever a source is one of the destinations.
  std::set<std::string> targets(dst.begin(), dst.end());
  std::vector<std::string> from = src;
  for (size_t k = 0; k < dst.size(); ++k)
    if (src[k] != dst[k] && targets.count(src[k]))
      from[k] = declareVar(types[k], src[k]);
  for (size_t k = 0; k < dst.size(); ++k) {
    if (from[k] == dst[k])
      continue;
    line(types[k].isMatrix() ? copyMatrix(types[k], dst[k], from[k])
                             : dst[k] + " = " + from[k] + ";");
  }
}

std::vector<ir::Type> typesOf(const std::vector<std::unique_ptr<ir::Value>> &vs, size_t from) {
  std::vector<ir::Type> t;
  for (size_t k = from; k < vs.size(); ++k)
    t.push_back(vs[k]->type);
  return t;
}

bool Emitter::emitIf(const ir::Op &op) {
  std::vector<std::string> vars;
  for (const auto &r : op.results)
    vars.push_back(declareVar(r->type, ""));
  std::vector<ir::Type> types = typesOf(op.results);
  std::string cond = val(op.operands[0]);
  if (needsVote(op))
    cond = emitVote(cond);
  line("if (" + cond + ") { // " + loc() + " if");
  ++indent_;
  std::vector<std::string> ys;
  if (!emitBlock(op.region(0), &ys))
    return false;
  curOp_ = &op;
  if (ys.size() < vars.size())
    return fail("internal error: 'if' results without yields in both regions");
  assignVars(vars, ys, types);
  --indent_;
  // An else without ops and results is left out.
  if (op.regions.size() > 1 && (!vars.empty() || op.region(1).ops.size() > 1 ||
                                (op.region(1).ops.size() == 1 && !op.region(1).terminator()))) {
    line("} else {");
    ++indent_;
    ys.clear();
    if (!emitBlock(op.region(1), &ys))
      return false;
    curOp_ = &op;
    if (ys.size() < vars.size())
      return fail("internal error: 'if' results without yields in both regions");
    assignVars(vars, ys, types);
    --indent_;
  }
  line("}");
  for (size_t k = 0; k < vars.size(); ++k)
    vals_[op.result(k)] = vars[k];
  return true;
}

bool Emitter::containsBarrier(const ir::Block &b) const { return ir::containsBarrier(module_, b); }

bool Emitter::needsVote(const ir::Op &op) const {
  return ir::needsBarrierVote(module_, uniformDecisions_, op);
}

std::string Emitter::emitVote(const std::string &decision) {
  // Every work-item counts its decision into tsr_vote (false, true) between barriers that all
  // of them reach (the enclosing decisions were voted too); all then read the same counts, and
  // when they disagree work-item 0 records the fault and every work-item goes the false way. Each
  // barrier is a site of its own (finish()).
  need("tsr_fault");
  std::string cond = fresh();
  line("bool " + cond + " = " + decision + ";");
  line("// " + loc() + ": a barrier inside; the work-items must agree on " + cond);
  line(std::string("if (") + kFirstWorkItem + ") {");
  line("  tsr_vote[0] = 0u;");
  line("  tsr_vote[1] = 0u;");
  line("}");
  barrierSite();
  line("atomic_inc(&tsr_vote[" + cond + " ? 1 : 0]);");
  barrierSite();
  std::string yes = fresh(), no = fresh();
  line("uint " + yes + " = tsr_vote[1], " + no + " = tsr_vote[0];");
  barrierSite();
  // From here the decision is made of the counts alone: PoCL evaluates a branch around a
  // barrier once per workgroup, so it must not read what each work-item decided.
  line("if (" + yes + " != 0u && " + no + " != 0u && " + kFirstWorkItem + ")");
  line("  " + faultCall("11u /* TSR_FAULT_DIVERGENT_BARRIER */", UINT32_MAX, yes,
                        "(long)" + yes + " + (long)" + no));
  line(cond + " = " + yes + " != 0u && " + no + " == 0u;");
  return cond;
}

void Emitter::barrierSite(const std::string &comment) {
  line("tsr_barrier_" + std::to_string(barrierSites_++) + "();" + comment);
}

void Emitter::emitPoll(const std::string &counter) {
  // Deadlines: the host sets word 0 of the control buffer; the work-item claims the record
  // with TSR_FAULT_DEADLINE and leaves (the kernel, or with barriers only its loops).
  line("if (++" + counter + " == " + std::to_string(kPollInterval) + "u) {");
  ++indent_;
  line(counter + " = 0u;");
  emitCancelExit();
  --indent_;
  line("}");
}

void Emitter::emitUniformPoll(const std::string &counter) {
  // A loop around a barrier: every work-item runs the same iterations (its decisions are
  // uniform, proved or voted), so the counter is uniform too, and so is the flag once
  // work-item 0 has read it into local memory between barriers (work-items reading the
  // global flag a moment apart could disagree and part at the next barrier). On a cancel all
  // leave the loop together, and every enclosing loop around a barrier at its next poll
  // (tsr_ustop, uniform); the kernel then runs to its end with partial results.
  need("tsr_fault");
  need("tsr_cancelled");
  line("if (tsr_ustop || ++" + counter + " == " + std::to_string(kPollInterval) + "u) {");
  ++indent_;
  line(counter + " = 0u;");
  line("if (!tsr_ustop) {");
  ++indent_;
  barrierSite();
  line(std::string("if (") + kFirstWorkItem + ")");
  line("  tsr_poll[0] = tsr_cancelled(control) ? 1u : 0u;");
  barrierSite();
  line("tsr_ustop = tsr_poll[0] != 0u;");
  barrierSite();
  line("if (tsr_ustop) {");
  line("  " + faultCall("8u /* TSR_FAULT_DEADLINE */", UINT32_MAX, "0", "0"));
  line("  tsr_stop = true;");
  line("}");
  --indent_;
  line("}");
  line("if (tsr_ustop)");
  line("  break;");
  --indent_;
  line("}");
}

void Emitter::emitCancelExit() {
  need("tsr_fault");
  need("tsr_cancelled");
  line("if (tsr_cancelled(control)) {");
  ++indent_;
  line(faultCall("8u /* TSR_FAULT_DEADLINE */", UINT32_MAX, "0", "0"));
  line(hasBarrier_ ? "tsr_stop = true;" : "return;");
  --indent_;
  line("}");
}

bool Emitter::emitWhile(const ir::Op &op) {
  const ir::Block &before = op.region(0), &after = op.region(1);
  std::vector<std::string> iters;
  std::vector<ir::Type> types = typesOf(before.args);
  for (size_t k = 0; k < before.args.size(); ++k) {
    const ir::Value *init = op.operands[k];
    iters.push_back(declareVar(init->type, init->type.isMatrix() ? vals_[init] : val(init)));
    vals_[before.args[k].get()] = iters[k];
    vals_[after.args[k].get()] = iters[k]; // the do region sees what the first region saw
  }
  bool cancellable = !containsBarrier(before) && !containsBarrier(after);
  std::string counter = fresh();
  line("uint " + counter + " = 0u;");
  line(std::string(hasBarrier_ && cancellable ? "while (!tsr_stop)" : "for (;;)") + " { // " +
       loc() + " while");
  ++indent_;
  std::vector<std::string> cond;
  if (!emitBlock(before, &cond))
    return false;
  curOp_ = &op;
  if (cond.empty())
    return fail("internal error: the first region of 'while' ends without 'condition'");
  if (needsVote(op))
    cond[0] = emitVote(cond[0]);
  line("if (!" + cond[0] + ")");
  line("  break;");
  std::vector<std::string> ys;
  if (!emitBlock(after, &ys))
    return false;
  curOp_ = &op;
  if (ys.size() < iters.size())
    return fail("internal error: 'while' body yields too few values");
  assignVars(iters, ys, types);
  if (cancellable)
    emitPoll(counter);
  else
    emitUniformPoll(counter);
  --indent_;
  line("}");
  for (size_t k = 0; k < iters.size(); ++k)
    vals_[op.result(k)] = iters[k];
  return true;
}

bool Emitter::emitCall(const ir::Op &op) {
  const ir::Function *callee = module_.lookup(op.callee);
  if (!callee || callee->isKernel)
    return fail("call of unknown device function @" + op.callee);
  if (callDepth_ >= ir::kMaxCallDepth) // the verifier refuses deeper
    return fail("calls nest deeper than 64 (recursion is not allowed)");
  std::vector<ir::Value *> params = callee->params();
  if (params.size() != op.operands.size())
    return fail("call of @" + op.callee + " with the wrong number of arguments");
  std::vector<std::string> results;
  for (const auto &r : op.results)
    results.push_back(declareVar(r->type, ""));
  line("{ // " + loc() + " call @" + op.callee + " (inlined)");
  ++indent_;
  for (size_t k = 0; k < params.size(); ++k) {
    const ir::Value *arg = op.operands[k];
    if (arg->type.isMemory()) {
      MemRef *m = mem(arg);
      if (!m)
        return false;
      mems_[params[k]] = *m;
    } else {
      vals_[params[k]] = val(arg);
    }
  }
  ++callDepth_;
  std::vector<std::string> ret;
  bool ok = emitBlock(*callee->body, &ret);
  --callDepth_;
  curOp_ = &op;
  if (!ok)
    return false;
  if (ret.size() < results.size())
    return fail("@" + op.callee + " returns too few values");
  assignVars(results, std::vector<std::string>(ret.begin(), ret.begin() + results.size()),
             typesOf(op.results));
  --indent_;
  line("}");
  for (size_t k = 0; k < results.size(); ++k)
    vals_[op.result(k)] = results[k];
  return true;
}

// ------------------------------------------------------------------ the entry point

bool Emitter::kernel(const ir::Function &f, OpenCLKernelInfo &info) {
  info.name = f.name;
  info.symbol = symbol(f.name);
  vals_.clear();
  mems_.clear();
  next_ = 0;
  matrixBytes_ = 0;
  curOp_ = nullptr;
  std::vector<std::string> args, prologue;
  std::set<std::string> used; // the parameters' C name stems
  std::vector<ir::Value *> params = f.params();
  for (size_t k = 0; k < params.size(); ++k) {
    const ir::Value *p = params[k];
    info.params.push_back(p->type);
    // The C names are the IR name plus a suffix (_base / _offset / _bytes, _arg), which no
    // keyword, builtin or local of the emitter has. An IR name may start with a digit (`%0`):
    // then "_" goes in front, and if that meets another parameter's (`%_0`), the index too.
    std::string n = p->name.empty() ? "arg" + std::to_string(k) : p->name;
    if (n[0] >= '0' && n[0] <= '9')
      n = "_" + n;
    while (!used.insert(n).second)
      n = "_" + std::to_string(k) + n;
    Scalar e = p->type.elem;
    if (p->type.kind == ir::Type::Kind::Buffer) {
      args.push_back("__global uchar *" + n + "_base");
      args.push_back("ulong " + n + "_offset");
      args.push_back("ulong " + n + "_bytes");
      MemRef m;
      m.ptr = "p" + std::to_string(k);
      m.count = "n" + std::to_string(k);
      m.space = "__global";
      m.elem = e;
      m.param = static_cast<uint32_t>(k);
      prologue.push_back("__global " + storeType(e) + " *" + m.ptr + " = (__global " +
                         storeType(e) + " *)(" + n + "_base + " + n + "_offset);");
      prologue.push_back("const ulong " + m.count + " = " + n + "_bytes / " +
                         std::to_string(ir::byteSize(e)) + "ul;");
      mems_[p] = m;
      continue;
    }
    if (!p->type.isScalar())
      return fail("kernel @" + f.name + ": parameter %" + p->name + " of type " +
                  ir::toString(p->type) + " is not supported");
    std::string a = n + "_arg";
    args.push_back(storeType(e == Scalar::I1 ? Scalar::I1 : e) + " " + a);
    if (e == Scalar::I1) {
      vals_[p] = "(" + a + " != 0)";
    } else if (e == Scalar::F16) {
      need("tsr_f16_from_bits");
      vals_[p] = "tsr_f16_from_bits(" + a + ")";
    } else if (e == Scalar::BF16) {
      vals_[p] = "as_float((uint)" + a + " << 16)";
    } else {
      vals_[p] = a;
    }
  }
  args.push_back("__global uint *control");
  line("// kernel @" + f.name);
  std::string reqd = opts_.sized() ? "__attribute__((reqd_work_group_size(" +
                                         std::to_string(opts_.workgroupSize[0]) + ", " +
                                         std::to_string(opts_.workgroupSize[1]) + ", " +
                                         std::to_string(opts_.workgroupSize[2]) + ")))"
                                   : "TSR_OPENCL_REQD_WORKGROUP";
  std::string sig = "__kernel " + reqd + " void " + info.symbol + "(";
  for (size_t k = 0; k < args.size(); ++k)
    sig += (k ? ", " : "") + args[k];
  line(sig + ") {");
  ++indent_;
  for (const std::string &s : prologue)
    line(s);
  hasBarrier_ = containsBarrier(*f.body);
  uniformDecisions_ = ir::workgroupUniformDecisions(f);
  if (hasBarrier_ && ir::anyBarrierVote(module_, uniformDecisions_, *f.body))
    line("__local volatile uint tsr_vote[2]; // see emitVote");
  ranges_.run(*f.body);
  if (hasBarrier_) {
    line("bool tsr_stop = false; // set when the launch is cancelled (see emitPoll)");
    if (ir::containsLoop(module_, *f.body)) { // loops around barriers poll (emitUniformPoll)
      line("__local volatile uint tsr_poll[1];");
      line("bool tsr_ustop = false;");
    }
  } else { // a kernel without loops on a huge grid ends too: each work-item reads the flag first
    curOp_ = nullptr; // (not with barriers: work-items that read it apart would diverge there)
    emitCancelExit();
  }
  maxIndent_ = 0;
  if (!emitBlock(*f.body, nullptr))
    return false;
  if (maxIndent_ > kMaxBlockNesting) {
    curOp_ = nullptr;
    return fail("kernel @" + f.name + " nests " + std::to_string(maxIndent_) +
                " blocks in its OpenCL C (each `for` and `while` one or two); PoCL's compiler "
                "accepts at most 256 nested brackets, so opencl:0 runs at most " +
                std::to_string(kMaxBlockNesting) + " (nest fewer loops and ifs)");
  }
  --indent_;
  line("}");
  if (matrixBytes_ > 0) // read by the driver (opencl_abi.h, "Private bytes")
    line("// tsr_private_bytes " + info.symbol + " " + std::to_string(matrixBytes_));
  line("");
  for (const auto &op : f.body->ops)
    if (op->kind == OpKind::SharedAlloc) {
      const ir::Type &t = op->result()->type;
      info.sharedBytes += static_cast<uint64_t>(t.count) * ir::byteSize(t.elem);
    }
  if (info.sharedBytes > opts_.caps.localMemBytes) {
    curOp_ = nullptr;
    return fail("kernel @" + f.name + " uses " + std::to_string(info.sharedBytes) +
                " bytes of shared memory; the device has " +
                std::to_string(opts_.caps.localMemBytes) + " (opencl.localMemBytes)");
  }
  return true;
}

} // namespace detail

} // namespace tessera::opencl
