// Judging a kernel's outputs against the interpreter under per-output budgets (see
// output_check.h for the rules and docs/conformance.md for why they are what they are).
#include "tessera/output_check.h"

#include "ir/interp/interpreter.h"
#include "ir/interp/numerics.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace tessera {
namespace {

// The spacing of type t at |x| (the unit of its ULPs), 0 for x = 0 (never used as an
// allowance then: the ULP arm judges zeros).
double spacingAt(double x, ir::Scalar t) {
  if (x == 0 || !std::isfinite(x))
    return 0;
  int e = 0;
  std::frexp(std::fabs(x), &e);
  return std::ldexp(1.0, e - ir::mantissaBits(t));
}

// Rule (5): a reordered float sum reaches element i and the magnitude run's weight there
// (sum |x_i|, or (K + 1) S for a matrix_mad) is past the largest finite value of the output's
// type (stored as infinity, or larger): partial sums in some order may overflow, so an
// infinity or NaN is what a correct device may answer (3e38 added to -3e38 k by k is 0; the
// positive products first give inf - inf = NaN). Never the infinity opposite to an infinite
// reference (no order turns +inf into -inf). Not for f16 outputs: their weight overflows f16
// long before an f32 sum could (the rule would pass infinities no order makes). Where the
// weight is infinite because an input is, a NaN passes even if no finite terms could overflow:
// the magnitude run cannot tell the two apart.
bool sumMayOverflow(const OutputBudget &b, const ir::HostBuffer *mag, int64_t i, ir::Scalar t) {
  if (b.sumFactor <= 0 || !mag || t == ir::Scalar::F16)
    return false;
  double weight = std::fabs(mag->get(i).f);
  double largest = t == ir::Scalar::F64 ? std::numeric_limits<double>::max()
                                        : double(std::numeric_limits<float>::max());
  return !(weight <= largest); // infinite, or past it (bf16 stores up to ~f32's largest)
}

OutputCheck judgeOne(const OutputBudget &b, const ir::HostBuffer &want, const ir::HostBuffer &got,
                     const ir::HostBuffer *mag) {
  OutputCheck c;
  c.budget = b;
  ir::Scalar t = want.elem;
  bool isFloat = ir::isFloatScalar(t);
  if (got.elem != t || got.size() != want.size() || (mag && mag->size() != want.size())) {
    c.passed = false;
    c.badCount = 1;
    c.detail = "the device buffer has " + std::to_string(got.size()) + " elements, the reference " +
               std::to_string(want.size());
    return c;
  }
  double scale = 0; // largest finite reference magnitude: the normwise yardstick
  if (isFloat && b.mayCancel)
    for (int64_t i = 0; i < want.size(); ++i)
      if (double w = want.get(i).f; std::isfinite(w))
        scale = std::max(scale, std::fabs(w));
  double normTol = b.ulp * spacingAt(scale == 0 ? 1.0 : scale, t);
  for (int64_t i = 0; i < want.size(); ++i) {
    ir::Literal w = want.get(i), g = got.get(i);
    bool ok;
    if (!isFloat) {
      ok = w.i == g.i; // exact; maxAbs: the largest difference of the signed readings
      double d = std::fabs(static_cast<double>(ir::numerics::signExtend(g.i, t)) -
                           static_cast<double>(ir::numerics::signExtend(w.i, t)));
      c.maxAbs = std::max(c.maxAbs, d);
    } else if (!std::isfinite(g.f) && g.f != w.f && !(std::isnan(g.f) && std::isnan(w.f)) &&
               !(std::isinf(w.f) && g.f == -w.f) && sumMayOverflow(b, mag, i, t)) {
      ok = true; // (5): some summation order overflows here; counted (matches are not)
      ++c.overflowOrder;
    } else if (std::isnan(w.f) || std::isnan(g.f)) {
      ok = std::isnan(w.f) && std::isnan(g.f);
      if (!ok) // a NaN against a number: no finite error says it (the line read max_ulp=0)
        c.maxUlp = c.maxAbs = INFINITY;
    } else if (b.flushOk && g.f == 0 && ir::numerics::isSubnormal(w.f, t) &&
               ir::numerics::ulpError(g.f, w.f, t) > b.ulp) {
      ok = true; // the relaxed rule: counted, and kept out of the error maxima
      ++c.flushed;
    } else {
      double ulp = ir::numerics::ulpError(g.f, w.f, t);
      double abs = std::fabs(g.f - w.f);
      ok = ulp <= b.ulp;
      // An infinity against a finite value (or the other infinity) is an infinite error.
      if (std::isfinite(ulp) || !ok)
        c.maxUlp = std::max(c.maxUlp, ulp);
      if (std::isfinite(abs) || !ok)
        c.maxAbs = std::max(c.maxAbs, abs);
      if (!ok && b.sumFactor > 0 && mag && std::isfinite(abs)) {
        double allowance = b.sumFactor * std::fabs(mag->get(i).f) + b.ulp * spacingAt(w.f, t);
        ok = abs <= allowance;
        c.sumAllowanceOnly += ok;
      }
      if (!ok && b.mayCancel && std::isfinite(abs)) {
        ok = abs <= normTol;
        c.normwiseOnly += ok;
      }
    }
    if (ok)
      continue;
    ++c.badCount;
    if (!c.passed)
      continue;
    c.passed = false;
    c.firstBad = i;
    c.detail = "index " + std::to_string(i) + ": got " + formatElement(g, t) + ", want " +
               formatElement(w, t);
  }
  return c;
}

} // namespace

std::string formatElement(const ir::Literal &l, ir::Scalar t) {
  char buf[96];
  uint64_t bits = ir::numerics::storageBits(l, t);
  if (!ir::isFloatScalar(t)) {
    // IR integers are signless: the signed reading, and the bits when they read otherwise
    // unsigned (-1 (0xffffffff) for i32; 0x8000000000000000 is no small negative number).
    int64_t s = ir::numerics::signExtend(l.i, t);
    if (s < 0)
      std::snprintf(buf, sizeof buf, "%" PRId64 " (0x%" PRIx64 ")", s, bits);
    else
      std::snprintf(buf, sizeof buf, "%" PRId64, s);
    return buf;
  }
  // Digits that tell any two values of the type apart: f64 17, f32 9, f16 / bf16 5. The
  // bits are the stored ones: a NaN's payload and quiet bit show as the device wrote them.
  int digits = t == ir::Scalar::F64 ? 17 : t == ir::Scalar::F32 ? 9 : 5;
  std::snprintf(buf, sizeof buf, "%.*g (0x%" PRIx64 ")", digits, l.f, bits);
  return buf;
}

std::vector<OutputCheck> judgeOutputs(const std::vector<OutputBudget> &budgets,
                                      const std::vector<ir::HostBuffer> &want,
                                      const std::vector<ir::HostBuffer> &got,
                                      const std::vector<ir::HostBuffer> *magnitudes) {
  std::vector<OutputCheck> out;
  for (const OutputBudget &b : budgets) {
    size_t i = b.bufferIndex;
    if (i >= want.size() || i >= got.size()) {
      OutputCheck c;
      c.budget = b;
      c.passed = false;
      c.badCount = 1;
      c.detail = "no device output for this buffer";
      out.push_back(std::move(c));
      continue;
    }
    const ir::HostBuffer *mag = magnitudes && i < magnitudes->size() ? &(*magnitudes)[i] : nullptr;
    out.push_back(judgeOne(b, want[i], got[i], mag));
  }
  return out;
}

bool KernelCheck::passed() const {
  return ok &&
         std::all_of(outputs.begin(), outputs.end(), [](const OutputCheck &c) { return c.passed; });
}

int64_t KernelCheck::normwiseOnly() const {
  int64_t n = 0;
  for (const OutputCheck &c : outputs)
    n += c.normwiseOnly;
  return n;
}

KernelCheck checkKernel(const ir::Module &m, const ir::Function &kernel,
                        const ir::LaunchData &inputs,
                        const std::vector<ir::HostBuffer> &deviceOutputs, uint32_t subgroupSize,
                        PrecisionProfile profile) {
  KernelCheck k;
  k.profile = profile;
  ir::InterpOptions io;
  io.subgroupSize = subgroupSize;
  ir::LaunchData reference = inputs; // owns its buffers: the interpreter writes into them
  ir::InterpResult res = ir::interpret(m, kernel, reference.dims, reference.args, io);
  if (!res.ok) {
    k.ok = false;
    k.error = "the reference interpreter failed: " + res.error;
    return k;
  }
  uint64_t workItems = 1;
  for (int d = 0; d < 3; ++d)
    workItems *= uint64_t{inputs.dims.grid[d]} * inputs.dims.workgroup[d];
  std::vector<OutputBudget> budgets = outputBudgets(m, kernel, subgroupSize, workItems, profile);
  for (OutputBudget &b : budgets) // the relaxed subnormal rule; f64 has no relaxed rules
    b.flushOk = profile == PrecisionProfile::Relaxed && ir::isFloatScalar(b.elem) &&
                b.elem != ir::Scalar::F64;
  bool anySum = std::any_of(budgets.begin(), budgets.end(),
                            [](const OutputBudget &b) { return b.sumFactor > 0; });
  ir::LaunchData magnitudes;
  if (anySum) { // the same launch with every reordered sum adding magnitudes
    magnitudes = inputs;
    io.magnitudeSums = true;
    if (!ir::interpret(m, kernel, magnitudes.dims, magnitudes.args, io).ok)
      magnitudes.buffers.clear(); // no allowance rather than a wrong one
  }
  k.outputs = judgeOutputs(budgets, reference.buffers, deviceOutputs,
                           anySum && !magnitudes.buffers.empty() ? &magnitudes.buffers : nullptr);
  return k;
}

} // namespace tessera
