// Launch-spec runs on a HAL device and their comparison with the reference interpreter.
#include "tessera/device_run.h"

#include "ir/interp/numerics.h"
#include "tessera/hal.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <set>

namespace tessera {
namespace {

std::string takeMessage(tsr_status_t st) { return hal::Status::fromC(st).message(); }

tsr_arg_t scalarArg(const ir::Type &t, const ir::Literal &lit) {
  switch (t.elem) {
  case ir::Scalar::I1:
  case ir::Scalar::I8:
    return tsr_arg_i8(static_cast<int8_t>(lit.i));
  case ir::Scalar::I16:
    return tsr_arg_i16(static_cast<int16_t>(lit.i));
  case ir::Scalar::I32:
    return tsr_arg_i32(static_cast<int32_t>(lit.i));
  case ir::Scalar::I64:
    return tsr_arg_i64(static_cast<int64_t>(lit.i));
  case ir::Scalar::F16:
    return tsr_arg_f16_bits(ir::numerics::toF16Bits(lit.f));
  case ir::Scalar::BF16:
    return tsr_arg_bf16_bits(ir::numerics::toBF16Bits(lit.f));
  case ir::Scalar::F32:
    return tsr_arg_f32(static_cast<float>(lit.f));
  case ir::Scalar::F64:
    return tsr_arg_f64(lit.f);
  }
  return tsr_arg_i32(0);
}

// Releases HAL handles on every exit path.
struct Handles {
  tsr_stream_t stream = nullptr;
  std::vector<tsr_buffer_t> buffers;
  ~Handles() {
    for (tsr_buffer_t b : buffers)
      tsr_buffer_release(b);
    if (stream)
      tsr_stream_release(stream);
  }
};

void collectFloatOps(const ir::Module &m, const ir::Function &f, std::set<ir::OpKind> &kinds,
                     std::set<const ir::Function *> &seen) {
  if (!seen.insert(&f).second)
    return;
  ir::walk(*f.body, [&](ir::Op &op) {
    if (op.kind == ir::OpKind::Call)
      if (const ir::Function *callee = m.lookup(op.callee))
        collectFloatOps(m, *callee, kinds, seen);
    if (!op.results.empty() && op.results[0]->type.isFloat())
      kinds.insert(op.kind);
  });
}

} // namespace

bool runOnDevice(tsr_device_t device, const ProgramKernel &kernel, const ir::LaunchData &data,
                 std::vector<ir::HostBuffer> &outputs, double *launchMs, std::string *error,
                 std::optional<uint64_t> timeoutNs) {
  auto fail = [&](const std::string &msg) {
    if (error)
      *error = msg;
    return false;
  };
  Handles h;
  if (tsr_status_t st = tsr_stream_create(device, &h.stream))
    return fail(takeMessage(st));
  if (timeoutNs)
    if (tsr_status_t st = tsr_stream_set_timeout(h.stream, *timeoutNs))
      return fail(takeMessage(st));
  for (const ir::HostBuffer &hb : data.buffers) {
    tsr_buffer_t b = nullptr;
    uint64_t size = std::max<uint64_t>(hb.bytes.size(), 1); // the HAL has no empty buffers
    if (tsr_status_t st = tsr_buffer_allocate(device, size, TSR_MEMORY_DEVICE_LOCAL, &b))
      return fail(takeMessage(st));
    h.buffers.push_back(b);
    if (tsr_status_t st = tsr_stream_copy_h2d(h.stream, hb.bytes.data(), b, 0, hb.bytes.size()))
      return fail(takeMessage(st));
  }
  std::vector<tsr_arg_t> args;
  size_t bi = 0;
  for (size_t i = 0; i < kernel.params.size() && i < data.args.size(); ++i) {
    if (kernel.params[i].kind == ir::Type::Kind::Buffer)
      args.push_back(tsr_arg_buffer(h.buffers.at(bi++), 0));
    else
      args.push_back(scalarArg(kernel.params[i], data.args[i].scalar));
  }
  if (tsr_status_t st = tsr_stream_synchronize(h.stream))
    return fail(takeMessage(st));
  auto t0 = std::chrono::steady_clock::now();
  if (tsr_status_t st = tsr_stream_launch(h.stream, kernel.kernel, data.dims.grid.data(),
                                          data.dims.workgroup.data(), args.data(),
                                          static_cast<uint32_t>(args.size())))
    return fail(takeMessage(st));
  if (tsr_status_t st = tsr_stream_synchronize(h.stream))
    return fail(takeMessage(st));
  if (launchMs)
    *launchMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  outputs.clear();
  for (size_t i = 0; i < data.buffers.size(); ++i) {
    ir::HostBuffer out = data.buffers[i];
    if (tsr_status_t st =
            tsr_stream_copy_d2h(h.stream, h.buffers[i], 0, out.bytes.data(), out.bytes.size()))
      return fail(takeMessage(st));
    outputs.push_back(std::move(out));
  }
  if (tsr_status_t st = tsr_stream_synchronize(h.stream))
    return fail(takeMessage(st));
  return true;
}

double kernelUlpBudget(const ir::Module &m, const ir::Function &kernel, uint32_t subgroupSize) {
  std::set<ir::OpKind> kinds;
  std::set<const ir::Function *> seen;
  collectFloatOps(m, kernel, kinds, seen);
  double budget = 1;
  // A device may add the lanes of a float subgroup_add in any order, with a rounding per
  // addition (the interpreter rounds the exact sum once): up to subgroupSize - 1 more ULPs.
  if (kinds.count(ir::OpKind::SubgroupAdd))
    budget += std::max<uint32_t>(subgroupSize, 1) - 1;
  for (ir::OpKind k : kinds) {
    // The worst budget over the float types, per op kind (f32 unless f16/f64 is worse).
    double worst = 0;
    for (ir::Scalar s : {ir::Scalar::F16, ir::Scalar::BF16, ir::Scalar::F32, ir::Scalar::F64})
      if (auto b = ir::opInfo(k).ulpBudget(s))
        worst = std::max(worst, *b);
    budget += worst;
  }
  return budget;
}

std::vector<BufferCheck> checkOutputs(const ir::Function &kernel, const ir::LaunchData &reference,
                                      const std::vector<ir::HostBuffer> &got, double ulpBudget) {
  std::vector<BufferCheck> checks;
  size_t bi = 0;
  for (const ir::Value *p : kernel.params()) {
    if (p->type.kind != ir::Type::Kind::Buffer)
      continue;
    size_t idx = bi++;
    if (p->type.access == ir::Access::ReadOnly)
      continue;
    const ir::HostBuffer &want = reference.buffers.at(idx);
    const ir::HostBuffer &have = got.at(idx);
    BufferCheck c;
    c.param = p->name;
    ir::Scalar t = want.elem;
    bool isFloat = ir::isFloatScalar(t);
    double scale = 0; // largest finite reference magnitude: the normwise yardstick
    if (isFloat)
      for (int64_t i = 0; i < want.size(); ++i)
        if (double w = want.get(i).f; std::isfinite(w))
          scale = std::max(scale, std::fabs(w));
    // One ULP of `scale` in type t: the spacing above it after rounding to t.
    double normTol = 0;
    if (isFloat) {
      int e = 0;
      std::frexp(scale == 0 ? 1.0 : scale, &e);
      normTol = ulpBudget * std::ldexp(1.0, e - ir::mantissaBits(t));
    }
    for (int64_t i = 0; i < want.size(); ++i) {
      ir::Literal w = want.get(i), g = have.get(i);
      bool ok;
      if (!isFloat) {
        ok = w.i == g.i;
        c.maxAbs = std::max(c.maxAbs, ok ? 0.0 : 1.0);
      } else if (std::isnan(w.f) || std::isnan(g.f)) {
        ok = std::isnan(w.f) && std::isnan(g.f);
      } else {
        double ulp = ir::numerics::ulpError(g.f, w.f, t);
        double abs = std::fabs(g.f - w.f);
        if (std::isfinite(ulp))
          c.maxUlp = std::max(c.maxUlp, ulp);
        if (std::isfinite(abs))
          c.maxAbs = std::max(c.maxAbs, abs);
        ok = ulp <= ulpBudget || (std::isfinite(abs) && abs <= normTol);
      }
      if (ok || !c.passed)
        continue;
      c.passed = false;
      c.firstBad = i;
      char buf[160];
      if (isFloat)
        std::snprintf(buf, sizeof buf, "index %lld: got %.9g, want %.9g", (long long)i, g.f, w.f);
      else
        std::snprintf(buf, sizeof buf, "index %lld: got %lld, want %lld", (long long)i,
                      (long long)ir::numerics::signExtend(g.i, t),
                      (long long)ir::numerics::signExtend(w.i, t));
      c.detail = buf;
    }
    checks.push_back(std::move(c));
  }
  return checks;
}

} // namespace tessera
