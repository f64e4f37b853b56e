// The fuzzer's judge: the `tessera run --check` sequence over the device_run API, returning a
// verdict instead of printing. The interpreter runs first (it is cheaper than a compile and
// rejects invalid shrinking candidates early).
#include "tools/fuzz/fuzz_judge.h"

#include "ir/interp/interpreter.h"
#include "ir/interp/launch.h"
#include "ir/interp/numerics.h"
#include "ir/text/parser.h"
#include "tessera/device_run.h"
#include "tessera/output_check.h"
#include "tessera/program.h"

#include <cmath>
#include <cstdio>

namespace tessera::fuzz {
namespace {

constexpr uint64_t kMaxInterpSteps = 200'000'000;

bool usesOp(const ir::Module &m, const std::string &name) {
  for (const auto &f : m.functions) {
    bool found = false;
    ir::walk(*f->body, [&](ir::Op &op) { found |= op.info().name == name; });
    if (found)
      return true;
  }
  return false;
}

// Flips a bit of element 0 that no budget forgives: the lowest bit of an integer (i1
// included), the top exponent bit of a float (finite <-> huge, NaN/inf -> finite).
void corruptFirstWritable(const ir::Function &k, std::vector<ir::HostBuffer> &outputs) {
  size_t bi = 0;
  for (const ir::Value *p : k.params()) {
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    ir::HostBuffer &hb = outputs.at(bi++);
    if (p->type.access == ir::Access::ReadOnly || hb.bytes.empty())
      continue;
    int size = ir::byteSize(hb.elem);
    if (ir::isFloatScalar(hb.elem))
      hb.bytes[size - 1] ^= 0x40;
    else
      hb.bytes[0] ^= 0x01;
    return;
  }
}

// The first float element whose ULP error exceeds `budget` (NaN matches NaN), as a verdict
// detail (and its buffer in `*buffer`); empty when every element is within it.
std::string elementwiseMismatch(const ir::Function &k, const ir::LaunchData &reference,
                                const std::vector<ir::HostBuffer> &got,
                                const std::vector<double> &budgets, std::string *buffer) {
  size_t bi = 0;
  for (const ir::Value *p : k.params()) {
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    size_t idx = bi++;
    const ir::HostBuffer &want = reference.buffers.at(idx);
    if (p->type.access == ir::Access::ReadOnly || !ir::isFloatScalar(want.elem))
      continue;
    const double budget = budgets.at(idx);
    for (int64_t i = 0; i < want.size(); ++i) {
      double w = want.get(i).f, g = got.at(idx).get(i).f;
      if (std::isnan(w) && std::isnan(g))
        continue;
      double ulp =
          std::isnan(w) || std::isnan(g) ? INFINITY : ir::numerics::ulpError(g, w, want.elem);
      if (ulp <= budget)
        continue;
      *buffer = p->name;
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "%%%s index %lld: got %.9g, want %.9g (%.3g ulp elementwise, budget %.3g)",
                    p->name.c_str(), (long long)i, g, w, ulp, budget);
      return buf;
    }
  }
  return "";
}

} // namespace

const char *outcomeName(Outcome o) {
  switch (o) {
  case Outcome::Pass:
    return "pass";
  case Outcome::Mismatch:
    return "mismatch";
  case Outcome::DeviceError:
    return "device error";
  case Outcome::Invalid:
    return "invalid kernel";
  case Outcome::Undefined:
    return "undefined (not judged)";
  }
  return "?";
}

Verdict judgeText(const FuzzDevice &dev, const std::string &text, const JudgeHooks &hooks) {
  ir::ParseResult r = ir::parseModule(text, "fuzz.tir", /*verify=*/true);
  if (!r.ok())
    return {Outcome::Invalid,
            "verifier: " + (r.diags.empty() ? std::string("?") : r.diags[0].str())};
  const ir::Module &m = *r.module;
  const ir::Function *k = nullptr;
  for (const auto &f : m.functions)
    if (f->isKernel && f->launch)
      k = f.get();
  if (!k)
    return {Outcome::Invalid, "no kernel with a launch spec"};
  ir::LaunchData data;
  std::string err;
  if (!ir::makeLaunchData(*k, data, err))
    return {Outcome::Invalid, "launch spec: " + err};

  // The interpreter emulates the subgroup width the device's codegen chose; it runs before
  // the (costlier) compile with the device's advertised width, again if the codegen chose
  // another.
  auto interpretAt = [&](uint32_t sg, ir::LaunchData &ref) {
    ref = data;
    ir::InterpOptions io;
    io.subgroupSize = sg;
    // Generated loops are bounded (a few thousand op-lanes per work-item at most): a kernel
    // past this limit does not terminate (hostile step <= 0 loops), and is not run.
    io.maxSteps = kMaxInterpSteps;
    return ir::interpret(m, *k, ref.dims, ref.args, io);
  };
  ir::LaunchData reference;
  uint32_t sg = dev.subgroupSize ? dev.subgroupSize : 16;
  ir::InterpResult first = interpretAt(sg, reference);
  bool endless = !first.ok && first.error.find("step limit exceeded") != std::string::npos;
  if (!first.ok && (!hooks.runUndefined || endless))
    return {Outcome::Invalid, "interpreter: " + first.error};
  std::string compileErr;
  ProgramOptions popts;
  popts.bounds = hooks.bounds;
  // Generated kernels are in bounds unless hostile: a backend without the mode runs unchecked.
  if (!hooks.runUndefined)
    popts = withSupportedBounds(dev.device, popts);
  auto program = Program::create(dev.device, m, nullptr, popts, &compileErr);
  if (!program)
    return {Outcome::DeviceError, "compile: " + compileErr};
  const ProgramKernel *pk = program->kernel(k->name);
  if (!pk)
    return {Outcome::DeviceError, "compile: kernel @" + k->name + " missing"};
  if (first.ok && pk->subgroupSize != sg)
    first = interpretAt(pk->subgroupSize, reference);
  if (!first.ok && !hooks.runUndefined)
    return {Outcome::Invalid, "interpreter: " + first.error};

  ir::LaunchData inputs = data; // the inputs, before the device writes anything
  std::vector<ir::HostBuffer> outputs;
  bool ran = runOnDevice(dev.device, *pk, data, outputs, nullptr, &err);
  if (!first.ok) // nothing to compare with; what matters is that we got here
    return {Outcome::Undefined, "interpreter: " + first.error + "; device: " + (ran ? "ran" : err)};
  // Checked mode reports a defined fault (division by zero, a step <= 0) as the launch's
  // status, in the message format of docs/ir.md, and leaves no outputs to compare.
  if (!ran && hooks.bounds == TSR_BOUNDS_CHECKED && hooks.runUndefined &&
      err.find("kernel @" + k->name + ": ") != std::string::npos)
    return {Outcome::Undefined, "fault reported: " + err};
  if (!ran)
    return {Outcome::DeviceError, "run: " + err};
  if (!hooks.plantOp.empty() && usesOp(m, hooks.plantOp))
    corruptFirstWritable(*k, outputs);
  KernelCheck kc =
      checkKernel(m, *k, inputs, outputs, pk->subgroupSize, profileForDevice(dev.name));
  if (!kc.ok)
    return {Outcome::Invalid, "interpreter: " + kc.error};
  for (const OutputCheck &c : kc.outputs)
    if (!c.passed) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " (max_ulp=%.3g, budget %.3g ulp)", c.maxUlp, c.budget.ulp);
      return {Outcome::Mismatch, "%" + c.budget.param + " " + c.detail + buf, c.budget.param};
    }
  if (hooks.elementwise && dev.fullProfile) {
    // Each output's own data-flow budget, element by element (no normwise arm at all).
    std::vector<double> budgets(reference.buffers.size(), 0);
    for (const OutputCheck &c : kc.outputs)
      budgets.at(c.budget.bufferIndex) = c.budget.ulp;
    if (std::string buffer, d = elementwiseMismatch(*k, reference, outputs, budgets, &buffer);
        !d.empty())
      return {Outcome::Mismatch, d, buffer};
  }
  return {Outcome::Pass, ""};
}

} // namespace tessera::fuzz
